//! Cases after apimachinery's and apiserver's `pkg/sharding` tests (parse, round trip, hash), plus splits.

use super::*;
use crate::object::ObjectMeta;

const HALF: &str = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";

fn parse(s: &str) -> Result<ShardSelector, String> {
    s.parse::<ShardSelector>().map_err(|e| match e {
        Error::InvalidInput(m) => m,
        other => panic!("not InvalidInput: {other:?}"),
    })
}

fn ranges(s: &ShardSelector) -> Vec<(u64, u128)> {
    s.ranges().iter().map(|r| (r.start(), r.end())).collect()
}

/// (input, field, ranges).
type Accepted<'a> = (&'a str, ShardField, &'a [(u64, u128)]);

#[test]
fn parses_what_kube_apiserver_accepts() {
    let cases: &[Accepted<'_>] = &[
        (HALF, ShardField::Uid, &[(0, 0x8000_0000_0000_0000)]),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
            ShardField::Uid,
            &[(0, HASH_SPACE_END)],
        ),
        (
            "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')",
            ShardField::Namespace,
            &[(0xaa, 0xff)],
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
            ShardField::Uid,
            &[(0, 0x8000_0000_0000_0000), (0x8000_0000_0000_0000, HASH_SPACE_END)],
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000000f')",
            ShardField::Uid,
            &[(0, 5), (5, 10), (10, 15)],
        ),
        (
            "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')",
            ShardField::Uid,
            &[(0, 0x8000_0000_0000_0000)],
        ),
        (
            "  shardRange( object.metadata.uid ,  '0x0000000000000000' ,  '0x8000000000000000' )  ",
            ShardField::Uid,
            &[(0, 0x8000_0000_0000_0000)],
        ),
        // CEL: double quotes and parentheses are the same expression.
        (
            "(shardRange(object.metadata.uid, \"0x0000000000000000\", '0x8000000000000000'))",
            ShardField::Uid,
            &[(0, 0x8000_0000_0000_0000)],
        ),
    ];
    for (input, field, want) in cases {
        let sel = parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(sel.field(), *field, "{input}");
        assert_eq!(ranges(&sel), want.to_vec(), "{input}");
    }
}

#[test]
fn refuses_what_kube_apiserver_refuses_with_its_words() {
    let cases: &[(&str, &str)] = &[
        (
            "",
            "empty shard selector is not allowed; omit the parameter for unfiltered lists",
        ),
        (
            "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
            "hexStart must have '0x' prefix, got \"0000000000000000\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '8000000000000000')",
            "hexEnd must have '0x' prefix, got \"8000000000000000\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x', '0x8000000000000000')",
            "hexStart: hex value is required after '0x'",
        ),
        (
            "shardRange(object.metadata.name, '0x00', '0x80')",
            "unsupported field path \"object.metadata.name\"; supported: object.metadata.uid, object.metadata.namespace",
        ),
        (
            "shardRange(object.metadata.labels, '0x00', '0x80')",
            "unsupported field path \"object.metadata.labels\"; supported: object.metadata.uid, object.metadata.namespace",
        ),
        (
            "invalidFunc(object.metadata.uid, '0x00', '0x80')",
            "unsupported function \"invalidFunc\"; only shardRange() and || are allowed",
        ),
        (
            "shardRange(object.metadata.uid, '0x000000000000000000', '0x80')",
            "hexStart: hex value too long (18 chars, max 17): \"000000000000000000\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x0g', '0x80')",
            "hexStart: invalid hex character \"g\" in \"0x0g\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x0', '0x8') && shardRange(object.metadata.uid, '0x8', '0xf')",
            "unsupported function \"_&&_\"; only shardRange() and || are allowed",
        ),
        (
            "shardRange(object.metadata.uid, 0, 8)",
            "hexStart must be a string literal, got int64",
        ),
        (
            "object.metadata.uid > '0x0'",
            "unsupported function \"_>_\"; only shardRange() and || are allowed",
        ),
        (
            "shardRange(object.metadata.uid, '0x0')",
            "shardRange() requires exactly 3 arguments, got 2",
        ),
        (
            "shardRange(object.metadata.uid, hex(0), '0x8')",
            "hexStart must be a string literal (e.g. '0xff'), got expression kind CallKind",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
            "all shard ranges must use the same field, got \"object.metadata.uid\" and \"object.metadata.namespace\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            "hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean \"0x0000000000000000\"?)",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0xff')",
            "hexEnd must be a 0x-prefixed 16-digit hex value, got \"0xff\" (did you mean \"0x00000000000000ff\"?)",
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
            "shard range start 0x8000000000000000 must be less than end 0x8000000000000000",
        ),
        (
            "shardRange(object.metadata.uid, '0xffffffffffffffff', '0x0000000000000000')",
            "shard range start 0xffffffffffffffff must be less than end 0x0000000000000000",
        ),
        (
            "shardRange(object.metadata.uid, '0x10000000000000001', '0x8000000000000000')",
            "hexStart: 17-digit hex value must be '0x10000000000000000' (2^64), got \"0x10000000000000001\"",
        ),
        (
            "shardRange(object.metadata.uid, '0xABCDEF0000000000', '0xffffffffffffffff')",
            "hexStart: invalid hex character \"A\" in \"0xABCDEF0000000000\"",
        ),
        (
            "object.metadata.uid",
            "unexpected expression kind SelectKind; expected shardRange() call or || operator",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parse(input).unwrap_err(), *want, "{input}");
    }
    // Broken syntax is a parse error, never a panic or a partial selector.
    for garbage in [
        "shardRange(",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')) ",
        "shardRange(object.metadata.uid, '0x00000000",
        "|| shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') # x",
        "shardRange(object., '0x0000000000000000', '0x8000000000000000')",
        "é",
    ] {
        let e = parse(garbage).unwrap_err();
        assert!(e.starts_with("CEL parse error: "), "{garbage}: {e}");
    }
}

#[test]
fn prints_the_canonical_form_and_round_trips() {
    for input in [
        HALF,
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
        "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
    ] {
        let sel = parse(input).unwrap();
        assert_eq!(sel.to_string(), input);
        assert_eq!(parse(&sel.to_string()).unwrap(), sel);
    }
    let loose = parse("( shardRange(object.metadata.uid,\"0x0000000000000000\",'0x8000000000000000') )").unwrap();
    assert_eq!(loose.to_string(), HALF);
}

#[test]
fn hashes_with_64_bit_fnv_1a() {
    // The published FNV-1a 64 test vectors.
    assert_eq!(ShardSelector::hash(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(ShardSelector::hash("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(ShardSelector::hash("foobar"), 0x8594_4171_f739_67e8);
    assert_ne!(ShardSelector::hash("test"), ShardSelector::hash("different"));
}

#[test]
fn ranges_are_half_open() {
    let sel = parse("shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a')").unwrap();
    assert!(!sel.contains(4) && sel.contains(5) && sel.contains(9) && !sel.contains(10));
    let all = parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')").unwrap();
    assert!(all.contains(0) && all.contains(u64::MAX));
    let two = parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000002') || shardRange(object.metadata.uid, '0xfffffffffffffffe', '0x10000000000000000')").unwrap();
    assert!(two.contains(1) && !two.contains(2) && two.contains(u64::MAX) && !two.contains(1 << 40));
}

#[test]
fn splits_partition_the_hash_space() {
    for n in [1u32, 2, 3, 5, 7, 32, 1000] {
        let parts: Vec<ShardSelector> = (0..n)
            .map(|i| ShardSelector::split(ShardField::Uid, n, i).unwrap())
            .collect();
        assert_eq!(parts[0].ranges()[0].start(), 0);
        assert_eq!(parts[n as usize - 1].ranges()[0].end(), HASH_SPACE_END);
        for w in parts.windows(2) {
            assert_eq!(u128::from(w[1].ranges()[0].start()), w[0].ranges()[0].end(), "n={n}");
        }
        for probe in [
            0u64,
            1,
            0x5555_5555_5555_5555,
            0x8000_0000_0000_0000,
            u64::MAX,
            ShardSelector::hash("x"),
        ] {
            assert_eq!(
                parts.iter().filter(|p| p.contains(probe)).count(),
                1,
                "n={n} probe={probe:#x}"
            );
        }
    }
    assert_eq!(
        ShardSelector::split(ShardField::Uid, 4, 3).unwrap().to_string(),
        "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
    );
    assert!(ShardSelector::split(ShardField::Uid, 0, 0).is_err());
    assert!(ShardSelector::split(ShardField::Uid, 4, 4).is_err());
}

#[test]
fn slot_of_names_the_split_that_contains_a_hash() {
    for n in [1u32, 2, 3, 7, 32, 1000] {
        let parts: Vec<ShardSelector> = (0..n)
            .map(|i| ShardSelector::split(ShardField::Uid, n, i).unwrap())
            .collect();
        let mut probes = vec![0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63];
        probes.extend(parts.iter().flat_map(|p| {
            let s = p.ranges()[0].start();
            [s, s.wrapping_sub(1), s.saturating_add(1)]
        }));
        probes.extend((0..200).map(|i| ShardSelector::hash(&format!("uid-{i}"))));
        for h in probes {
            let slot = ShardSelector::slot_of(h, n).unwrap();
            assert!(parts[slot as usize].contains(h), "n={n} h={h:#x} slot={slot}");
        }
    }
    assert_eq!(ShardSelector::slot_of(5, 0), None);
}

#[test]
fn slots_merge_adjacent_parts() {
    let sel = ShardSelector::slots(ShardField::Uid, 4, [3, 0, 1, 1]).unwrap();
    assert_eq!(
        sel.to_string(),
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
    );
    assert_eq!(
        ShardSelector::slots(ShardField::Uid, 4, 0..4).unwrap().ranges(),
        &[ShardRange::everything()]
    );
    assert!(ShardSelector::slots(ShardField::Uid, 4, []).is_err());
    assert!(ShardSelector::slots(ShardField::Uid, 4, [4]).is_err());
}

#[test]
fn matches_objects_by_their_field() {
    let meta = ObjectMeta {
        uid: Some("a".into()),
        namespace: Some("foobar".into()),
        ..Default::default()
    };
    let uid_hash = ShardSelector::hash("a");
    let ns_hash = ShardSelector::hash("foobar");
    let around =
        |field, h: u64| ShardSelector::new(field, vec![ShardRange::new(h, u128::from(h) + 1).unwrap()]).unwrap();
    assert!(around(ShardField::Uid, uid_hash).matches(&meta));
    assert!(!around(ShardField::Uid, ns_hash).matches(&meta));
    assert!(around(ShardField::Namespace, ns_hash).matches(&meta));
    // An unset field hashes as "".
    assert!(around(ShardField::Uid, ShardSelector::hash("")).matches(&ObjectMeta::default()));
    assert!(ShardRange::new(5, 5).is_err() && ShardRange::new(0, HASH_SPACE_END + 1).is_err());
    assert!(ShardSelector::new(ShardField::Uid, vec![]).is_err());
}

#[test]
fn random_input_is_an_error_or_a_selector_that_round_trips_never_a_panic() {
    const PIECES: [&str; 24] = [
        "shardRange",
        "(",
        ")",
        ",",
        " ",
        "||",
        "&&",
        "object",
        ".",
        "metadata",
        "uid",
        "namespace",
        "'0x0000000000000000'",
        "'0x8000000000000000'",
        "'0x10000000000000000'",
        "'0xffffffffffffffff'",
        "'0x'",
        "\"",
        "'",
        "0",
        "[",
        "]",
        "é",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut parsed = 0;
    for _ in 0..20_000 {
        let len = (next() % 14) as usize;
        let input: String = (0..len)
            .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
            .collect();
        if let Ok(sel) = input.parse::<ShardSelector>() {
            parsed += 1;
            assert_eq!(sel.to_string().parse::<ShardSelector>().unwrap(), sel, "{input}");
        }
    }
    assert!(parsed > 0, "some random inputs are selectors");
}

#[test]
fn selectors_of_any_depth_are_parsed_without_unbounded_recursion() {
    let range = HALF;
    let n = 2_500;
    let cases = [
        format!("{}{range}{}", "(".repeat(n), ")".repeat(n)),
        format!("{}{range}", "!".repeat(2 * n)),
        vec![range; n].join(" || "),
        format!("{} == 1", vec!["1"; n].join(" - ")),
        format!("{}1{} == 1", "f(".repeat(n), ")".repeat(n)),
    ];
    // On a quarter of the 2 MiB a thread gets by default (and the embedded server's connection threads have).
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            assert_eq!(
                parse(&cases[0]).unwrap_err(),
                "CEL parse error: expression recursion limit exceeded: 250"
            );
            // An even number of `!` cancels out, as cel-go reads it.
            assert!(parse(&cases[1]).is_ok());
            // `||` nests nothing: any number of ranges.
            assert!(parse(&cases[2]).is_ok());
            assert_eq!(
                parse(&cases[3]).unwrap_err(),
                "CEL parse error: max recursion depth exceeded"
            );
            assert!(parse(&cases[4]).unwrap_err().contains("recursion limit exceeded"));
        })
        .unwrap()
        .join()
        .unwrap();
    let at_limit = format!("{}{range}{}", "(".repeat(249), ")".repeat(249));
    assert!(parse(&at_limit).is_ok());
}
