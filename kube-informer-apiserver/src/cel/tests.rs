//! Cases from cel-go's and k8s.io/apiserver's CEL library tests (`pkg/cel/library/*_test.go`), evaluated with no
//! variables.
use super::*;

fn run(src: &str) -> Result<Value, String> {
    let p = compile(src, &[])?;
    p.eval(&[], PER_CALL_LIMIT).0.map_err(|e| e.to_string())
}

fn yes(src: &str) {
    match run(src) {
        Ok(Value::Bool(true)) => {}
        other => panic!("{src}: {other:?}"),
    }
}

fn error(src: &str) -> String {
    match run(src) {
        Err(e) => e,
        Ok(v) => panic!("{src}: expected an error, got {v:?}"),
    }
}

#[test]
fn standard_semantics() {
    for s in [
        "1 + 2 == 3",
        "'a' + 'b' == 'ab'",
        "[1, 2] + [3] == [1, 2, 3]",
        "size('héllo') == 5",
        "'hello'.startsWith('he') && 'hello'.endsWith('lo') && 'hello'.contains('ell')",
        "'abc123'.matches('^[a-z]+[0-9]+$')",
        "1 == 1.0 && 1u == 1",
        "[1, 2, 3].all(x, x > 0) && [1, 2, 3].exists(x, x == 2) && [1, 2, 3].exists_one(x, x == 2)",
        "[1, 2, 3].map(x, x * 2) == [2, 4, 6] && [1, 2, 3].filter(x, x > 1) == [2, 3]",
        "{'a': 1}.a == 1 && has({'a': 1}.a) && !has({'a': 1}.b)",
        "'a' in {'a': 1} && 2 in [1, 2]",
        "(1 / 0 > 0) || true",
        "true || (1 / 0 > 0)",
        "[1, 0].exists(x, 1 / x == 1)",
        "duration('1h') > duration('30m') && duration('1h30m') == duration('90m')",
        "timestamp('2023-01-01T00:00:00Z') + duration('24h') == timestamp('2023-01-02T00:00:00Z')",
        "int('42') == 42 && string(42) == '42' && double('1.5') == 1.5 && string(1.5) == '1.5'",
        "type(1) == int && type('a') == string",
        "optional.of(1).hasValue() && !optional.none().hasValue() && optional.none().orValue(2) == 2",
        "{'a': 1}[?'b'].orValue(5) == 5 && {'a': {'b': 2}}.?a.?b.value() == 2",
        "[1, ?optional.none(), ?optional.of(2)] == [1, 2]",
        "'a,b,c'.split(',') == ['a', 'b', 'c'] && ['a', 'b'].join('-') == 'a-b'",
        "'Hello'.lowerAscii() == 'hello' && '  x '.trim() == 'x' && 'abc'.substring(1) == 'bc'",
        "'hello'.indexOf('l') == 2 && 'hello'.lastIndexOf('l') == 3 && 'abc'.charAt(1) == 'b'",
        "'aaa'.replace('a', 'b', 2) == 'bba'",
        "sets.contains([1, 2, 3], [2]) && sets.intersects([1], [1, 2]) && sets.equivalent([1, 2], [2, 1])",
    ] {
        yes(s);
    }
    assert_eq!(error("1 / 0 == 1"), "division by zero");
    assert_eq!(error("{'a': 1}.b == 1"), "no such key: b");
    assert_eq!(error("[1][3] == 1"), "index out of bounds: 3");
    assert_eq!(error("9223372036854775807 + 1 > 0"), "integer overflow");
    assert_eq!(error("dyn(1) < 'a'"), "no such overload");
}

#[test]
fn kubernetes_libraries() {
    for s in [
        // lists
        "[1, 2, 3].isSorted() && !['b', 'a'].isSorted() && [1, 2, 3].sum() == 6 && [1.5, 2.0].sum() == 3.5",
        "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2",
        // regex
        "'abc 123'.find('[0-9]+') == '123' && 'a1b2c3'.findAll('[0-9]') == ['1', '2', '3'] && 'a1b2'.findAll('[0-9]', 1) == ['1']",
        // urls
        "url('https://example.com:80/path?query=val').getScheme() == 'https'",
        "url('https://example.com:80/path').getHost() == 'example.com:80' && url('https://example.com:80/path').getHostname() == 'example.com'",
        "url('https://example.com:80/path').getPort() == '80' && url('https://[::1]:80/').getHostname() == '::1'",
        "url('https://example.com/path').getEscapedPath() == '/path' && url('/abs/path').getScheme() == ''",
        "url('https://example.com/?a=1&a=2&b=3').getQuery() == {'a': ['1', '2'], 'b': ['3']}",
        "isURL('https://example.com') && !isURL('not a url') && !isURL('relative/path')",
        // quantity
        "quantity('1Gi').isGreaterThan(quantity('1Mi')) && quantity('500m').isLessThan(quantity('1'))",
        "quantity('1').compareTo(quantity('1000m')) == 0 && quantity('1k').asInteger() == 1000",
        "quantity('1.5').isInteger() == false && quantity('1.5').asApproximateFloat() == 1.5",
        "quantity('1').add(quantity('500m')) == quantity('1500m') && quantity('1').sub(1) == quantity('0')",
        "quantity('-1').sign() == -1 && isQuantity('20M') && !isQuantity('20MB')",
        // ip and cidr
        "ip('192.168.0.1').family() == 4 && ip('::1').family() == 6 && ip('127.0.0.1').isLoopback()",
        "isIP('1.2.3.4') && !isIP('1.2.3') && ip.isCanonical('127.0.0.1') && !ip.isCanonical('2001:DB8::1')",
        "ip('fe80::1').isLinkLocalUnicast() && ip('8.8.8.8').isGlobalUnicast() && ip('0.0.0.0').isUnspecified()",
        "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1')) && cidr('192.168.0.0/24').containsIP('192.168.0.255')",
        "!cidr('192.168.0.0/24').containsIP('192.168.1.1') && cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
        "cidr('192.168.0.10/24').masked() == cidr('192.168.0.0/24') && cidr('10.0.0.0/8').prefixLength() == 8",
        "string(cidr('10.0.0.0/8').ip()) == '10.0.0.0' && isCIDR('::1/128') && !isCIDR('10.0.0.0/33')",
        // format
        "!format.dns1123Label().validate('my-name').hasValue() && format.dns1123Label().validate('MyName').hasValue()",
        "format.named('dns1035Label').hasValue() && !format.named('nope').hasValue()",
        "format.dns1123Subdomain().validate('a.b.c').hasValue() == false && format.uuid().validate('x').hasValue()",
        // semver
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('1.2.3').isLessThan(semver('1.10.0')) && semver('2.0.0').compareTo(semver('1.0.0')) == 1",
        "isSemver('1.0.0') && !isSemver('v1.0.0') && isSemver('v1.0', true)",
    ] {
        yes(s);
    }
    assert!(error("quantity('x') == quantity('1')").starts_with("quantities must match"));
    // A pattern known only when evaluated fails then; a constant one fails to compile (ValidateRegexLiterals).
    assert!(error("'a'.find(dyn('(')) == ''").starts_with("error parsing regexp"));
    assert!(
        compile("'a'.find('(') == ''", &[])
            .map(|_| ())
            .unwrap_err()
            .contains("invalid matches argument: error parsing regexp")
    );
}

#[test]
fn compile_errors_are_worded_as_cel_go_words_them() {
    let e = compile("foo == 1", &[]).unwrap_err();
    assert_eq!(
        e,
        "ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^"
    );
    let o = types::of_schema(
        &serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
        false,
    )
    .unwrap();
    let vars = vec![("self".to_owned(), o)];
    let e = compile("self.b == 1", &vars).unwrap_err();
    assert_eq!(e, "ERROR: <input>:1:5: undefined field 'b'\n | self.b == 1\n | ....^");
    let e = compile("self.a + 'x' == 1", &vars).unwrap_err();
    assert!(
        e.contains("found no matching overload for '_+_' applied to '(int, string)'"),
        "{e}"
    );
    let e = compile("self.a ==", &vars).unwrap_err();
    assert!(e.starts_with("ERROR: <input>:1:"), "{e}");
    assert!(compile("self.a > 1", &vars).unwrap().uses("self"));
}

#[test]
fn runtime_cost_stops_at_the_limit() {
    let p = compile("[1, 2, 3].all(x, x > 0)", &[]).unwrap();
    let (r, cost) = p.eval(&[], PER_CALL_LIMIT);
    assert!(matches!(r, Ok(Value::Bool(true))));
    assert!(cost > 3, "{cost}");
    let (r, _) = p.eval(&[], 2);
    assert!(matches!(r, Err(EvalError::Cancelled)));
    assert!(p.max_cost >= cost);
}

/// Expressions of the worst shapes at cel-go's limits (`n` levels of each).
fn worst_shapes(n: usize) -> Vec<String> {
    let terms = |n: usize| vec!["1"; n].join(" + ");
    vec![
        format!("{}1{} > 0", "(".repeat(n - 1), ")".repeat(n - 1)),
        format!("size({}1{}) > 0", "[".repeat(n - 2), "]".repeat(n - 2)),
        format!("{}1{} > 0", "int(".repeat(n - 1), ")".repeat(n - 1)),
        format!("{}1{} != null", "{'a': ".repeat(n - 1), "}".repeat(n - 1)),
        format!("{}true{}", "[1].all(x, ".repeat(n - 1), ")".repeat(n - 1)),
        format!("{} > 0", terms(n)),
        // Type checked as dyn; evaluated, the second selection is an error (on an int).
        format!("dyn({{'a': 1}}){} == 1", ".a".repeat(n - 1)),
        format!("dyn([1]){} == 1", "[0]".repeat(n - 1)),
        format!("{}true", "true ? true : ".repeat(n - 1)),
        format!("{}1{} > 0", "(1 + ".repeat(n / 2 - 1), ")".repeat(n / 2 - 1)),
        format!("{}1 > 0", "-".repeat(10 * n)),
    ]
}

#[test]
fn expressions_at_the_limits_compile_and_run_whatever_the_callers_stack() {
    let shapes = worst_shapes(limits::MAX_RECURSION_DEPTH as usize);
    // A caller with a small stack: deep work goes to a thread of its own.
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            for s in &shapes {
                let p = compile(s, &[]).unwrap_or_else(|e| panic!("{}: {e}", &s[..30]));
                let r = p.eval(&[], PER_CALL_LIMIT).0;
                assert!(
                    matches!(r, Ok(Value::Bool(true))) || s.starts_with("dyn"),
                    "{}: {r:?}",
                    &s[..30]
                );
                drop(p);
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn the_deep_stack_holds_the_worst_shapes_four_times_over() {
    // What a deep compilation and evaluation needs, on a quarter of the stack it is given.
    let shapes = worst_shapes(limits::MAX_RECURSION_DEPTH as usize);
    std::thread::Builder::new()
        .stack_size(stack::DEEP_STACK / 4)
        .spawn(move || {
            for s in &shapes {
                let p = compile_measured(s, &[]).unwrap_or_else(|e| panic!("{}: {e}", &s[..30]));
                let e = p.expr.as_ref().unwrap();
                let r = interpreter::eval(e, &[], PER_CALL_LIMIT).0;
                assert!(
                    matches!(r, Ok(Value::Bool(true))) || s.starts_with("dyn"),
                    "{}: {r:?}",
                    &s[..30]
                );
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn expressions_past_the_limits_are_refused_with_cel_go_messages() {
    let n = 10 * limits::MAX_RECURSION_DEPTH as usize;
    let nested = format!("{}1{} > 0", "(".repeat(n), ")".repeat(n));
    let chained = format!("{} > 0", vec!["1"; 3_400].join(" + "));
    let selected = format!("self{} == 1", ".a".repeat(n));
    let huge = format!("'{}' == ''", "x".repeat(limits::EXPRESSION_SIZE_CODE_POINT_LIMIT));
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let err = |s: &str| compile(s, &[]).map(|_| ()).unwrap_err();
            assert_eq!(
                err(&nested),
                "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"
            );
            assert_eq!(err(&chained), "ERROR: <input>:-1:0: max recursion depth exceeded");
            assert_eq!(err(&selected), "ERROR: <input>:-1:0: max recursion depth exceeded");
            assert_eq!(
                err(&huge),
                "ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100008, limit 100000"
            );
            // One level within the limit compiles.
            let within = format!("{} > 0", vec!["1"; 250].join(" + "));
            assert!(compile(&within, &[]).is_ok());
            let past = format!("{} > 0", vec!["1"; 251].join(" + "));
            assert!(compile(&past, &[]).is_err());
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn issues_past_a_hundred_are_counted_not_rendered() {
    // 300 calls no overload accepts, on one long line: cel-go renders 100 of them (each with the line).
    let src = vec!["1.size() > 0"; 300].join(" && ");
    let e = compile(&src, &[]).map(|_| ()).unwrap_err();
    assert_eq!(e.matches("found no matching overload").count(), 100);
    assert!(
        e.ends_with("\n200 more errors were truncated"),
        "{}",
        &e[e.len() - 60..]
    );
}
