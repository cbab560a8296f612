//! The command line's tests: the flags parsed, refused, and the usage made from their declarations.

use std::collections::BTreeSet;

use super::*;

fn run_opts(args: &[&str]) -> Result<Options, String> {
    match parse(args.iter().map(OsString::from))? {
        Command::Run(o) => Ok(*o),
        other => panic!("{other:?}"),
    }
}

#[test]
fn parses_every_flag() {
    let o = run_opts(&[
        "--address=0.0.0.0",
        "--port",
        "6443",
        "--https",
        "--kubeconfig-out",
        "/tmp/k",
        "--token",
        "alice=s3cret=x",
        "--client-cert",
        "bob",
        "--allow",
        "viewer:get,list:configmaps,pods/status",
        "--admin",
        "alice",
        "--load",
        "a.yaml",
        "--load",
        "dir",
        "--bookmark-interval",
        "2s",
        "--compaction-interval",
        "off",
        "--history-size",
        "50",
        "--initial-revision",
        "1000",
        "--no-watch-list",
        "-v",
    ])
    .unwrap();
    assert_eq!(o.address, "0.0.0.0".parse::<IpAddr>().unwrap());
    assert_eq!(o.port, 6443);
    assert!(o.https && o.verbose && !o.watch_list && o.admin_api);
    assert_eq!(o.tokens, [("alice".to_owned(), "s3cret=x".to_owned())]);
    assert_eq!(o.client_certs, ["bob"]);
    assert_eq!(o.admins, ["alice"]);
    assert_eq!(o.loads, [PathBuf::from("a.yaml"), PathBuf::from("dir")]);
    assert_eq!(o.bookmark_interval, Some(Duration::from_secs(2)));
    assert_eq!(o.compaction_interval, Some(None));
    assert_eq!((o.history_size, o.initial_revision), (Some(50), Some(1000)));
    assert_eq!(
        o.rules,
        [AccessRule::user("viewer")
            .verbs(&["get", "list"])
            .resources(&["configmaps", "pods/status"])]
    );
    assert_eq!(
        run_opts(&["--compaction-interval", "30s"]).unwrap().compaction_interval,
        Some(Some(Duration::from_secs(30)))
    );
    let r = run_opts(&[
        "--authorization-mode",
        "RBAC",
        "--anonymous-auth",
        "false",
        "--groups",
        "alice=dev,ops",
        "--insecure-allow-unauthenticated-remote-access",
    ])
    .unwrap();
    assert!(r.rbac && r.insecure_remote && r.authenticated());
    assert_eq!(r.anonymous_auth, Some(false));
    assert_eq!(
        r.groups,
        [("alice".to_owned(), vec!["dev".to_owned(), "ops".to_owned()])]
    );
    assert!(!run_opts(&[]).unwrap().sharded_list_and_watch);
    let g = run_opts(&["--feature-gates", "ShardedListAndWatch=true, WatchList=false"]).unwrap();
    assert!(g.sharded_list_and_watch && !g.watch_list);
    let g = run_opts(&[
        "--feature-gates=ShardedListAndWatch=true",
        "--feature-gates=ShardedListAndWatch=0",
    ])
    .unwrap();
    assert!(!g.sharded_list_and_watch);
    let l = run_opts(&[
        "--read-header-timeout",
        "2s",
        "--idle-timeout=500ms",
        "--max-connections",
        "10",
        "--max-requests-inflight",
        "0",
    ])
    .unwrap();
    assert_eq!(
        l.limits,
        [
            ("--read-header-timeout".to_owned(), Limit::Wait(Duration::from_secs(2))),
            ("--idle-timeout".to_owned(), Limit::Wait(Duration::from_millis(500))),
            ("--max-connections".to_owned(), Limit::Count(10)),
            ("--max-requests-inflight".to_owned(), Limit::Count(0)),
        ]
    );
    assert!(matches!(parse(["-h".into()]), Ok(Command::Help)));
    assert!(matches!(parse(["--version".into()]), Ok(Command::Version)));
}

/// The `--names` `text` mentions.
fn mentioned(text: &str) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let name = &rest[at + 2..];
        let end = name
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(name.len());
        out.insert(&name[..end]);
        rest = &name[end..];
    }
    out
}

#[test]
fn the_usage_lists_every_declared_flag_and_nothing_else() {
    let usage = usage();
    let (mut longs, mut shorts) = (BTreeSet::new(), BTreeSet::new());
    for f in flags() {
        assert!(longs.insert(f.long), "--{} declared twice", f.long);
        if let Some(c) = f.short {
            assert!(shorts.insert(c), "-{c} declared twice");
        }
    }
    // The usage's flag lines (descriptions run at column 33) are the declarations, in order, with their values.
    let lines: Vec<&str> = usage
        .lines()
        .filter(|l| l.starts_with("  -") || l.starts_with("      --"))
        .collect();
    assert_eq!(lines.len(), flags().count(), "{usage}");
    for (line, f) in lines.iter().zip(flags()) {
        let mut words = line.split_whitespace();
        if let Some(c) = f.short {
            assert_eq!(words.next(), Some(format!("-{c},").as_str()), "{line}");
        }
        assert_eq!(words.next(), Some(format!("--{}", f.long).as_str()), "{line}");
        if let Some(v) = f.value {
            assert_eq!(words.next(), Some(v), "{line}");
        }
        let described = words.next().unwrap_or_else(|| {
            let next = usage.lines().skip_while(|l| l != line).nth(1).unwrap();
            next.split_whitespace().next().unwrap()
        });
        assert!(f.help.starts_with(described), "{line}: its description");
    }
    // Nothing else is named as a flag, in the flag lines or the prose.
    let undeclared: Vec<&str> = mentioned(&usage).into_iter().filter(|m| !longs.contains(m)).collect();
    assert!(
        undeclared.is_empty(),
        "the usage names undeclared flags: {undeclared:?}"
    );
    for line in usage.lines() {
        assert!(line.len() <= USAGE_WIDTH, "too wide: {line}");
    }
}

#[test]
fn every_declared_flag_is_parsed_and_no_other() {
    for f in flags() {
        let mut args = vec![format!("--{}", f.long)];
        if f.value.is_some() {
            args.push("1".to_owned());
        }
        if let Err(e) = parse(args.iter().map(OsString::from)) {
            assert!(!e.contains("unknown option"), "{args:?}: {e}");
        }
        if let Some(c) = f.short {
            assert!(parse([OsString::from(format!("-{c}"))]).is_ok(), "-{c}");
        }
    }
    for (given, want) in [
        ("--frobnicate", "unknown option --frobnicate"),
        ("--helpme", "unknown option --helpme"),
        ("-x", "unknown option -x"),
        ("--Port", "unknown option --Port"),
    ] {
        assert_eq!(parse([OsString::from(given)]).unwrap_err(), want);
    }
}

#[test]
fn refuses_bad_arguments_without_repeating_secrets() {
    let cases: &[(&[&str], &str)] = &[
        (&["--port", "x"], "--port: \"x\" is not a valid number"),
        (&["--port", "70000"], "not a valid number"),
        (&["--address", "localhost"], "not an IP address"),
        (&["--bookmark-interval", "10"], "missing unit"),
        (&["--bookmark-interval", "0s"], "more than 0"),
        (&["--allow", ":get"], "names no user"),
        (&["--allow", "u:fetch"], "unknown verb \"fetch\""),
        (&["--allow", "u:get,:pods"], "empty item"),
        (&["--client-cert", "bob"], "needs --https"),
        (&["--admin", "a", "--no-admin-api"], "contradict"),
        (&["--authorization-mode", "ABAC"], "not a mode"),
        (&["--anonymous-auth", "yes"], "not true or false"),
        (&["--groups", "alice"], "USER=GROUP"),
        (&["--idle-timeout", "0s"], "every wait has a deadline"),
        (&["--read-header-timeout", "5"], "missing unit"),
        (&["--max-connections", "0"], "must be more than 0"),
        (&["--frobnicate"], "--frobnicate"),
        (&["stray"], "unexpected argument"),
        (&["--port"], "missing argument"),
        (
            &["--feature-gates", "Sharded=true"],
            "unrecognized feature gate: Sharded",
        ),
        (
            &["--feature-gates", "ShardedListAndWatch"],
            "missing bool value for ShardedListAndWatch",
        ),
        (
            &["--feature-gates", "ShardedListAndWatch=yes"],
            "invalid value of ShardedListAndWatch=yes",
        ),
    ];
    for (args, want) in cases {
        let err = run_opts(args).unwrap_err();
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let err = run_opts(&["--token", "hunter2"]).unwrap_err();
    assert!(err.contains("USER=TOKEN") && !err.contains("hunter2"), "{err}");
}
