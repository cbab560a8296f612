//! Kubernetes' own CEL cases through the surface a user touches (feature `cel`): expressions → value, compile
//! error or runtime error, ported from k8s.io/apiserver's library tests (lists, regex, URLs, quantity, IP, CIDR,
//! format, semver), cel-go's extension tests for the libraries 1.34's base environment enables (strings at version
//! 2 with `format` and `quote`, sets, optionals with `optMap`/`optFlatMap`, two-variable comprehensions) and the
//! base environment's refusals (`base64`, `math`, `cel.bind`, strings version 3, mixed literals, literal
//! validators). Each value case runs as a CRD rule `(<expr>) == (<expected>)` on an object's create and as a
//! ValidatingAdmissionPolicy validation (Warn) on a ConfigMap's; each compile error refuses the CRD and the policy
//! at write, on the rule's field; each runtime error denies the object with `… evaluating rule: …`.
//!
//! `cargo test -p kube-informer-apiserver --test cel_conformance -- --nocapture` prints the counts.
#![cfg(feature = "cel")]

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

/// Expression, and the CEL literal it evaluates to.
const VALUES: &[(&str, &str)] = &[
    // Optional types (cel.OptionalTypes, 1.28), their macros included.
    ("optional.of(1).optMap(o, o + 1)", "optional.of(2)"),
    ("optional.none().optMap(o, o + 1)", "optional.none()"),
    ("optional.of(1).optFlatMap(o, optional.of(o * 3))", "optional.of(3)"),
    ("optional.of(1).optFlatMap(o, optional.none())", "optional.none()"),
    ("{'a': 1}.?a.orValue(0)", "1"),
    ("{'a': 1}.?b.orValue(5)", "5"),
    ("[1, 2][?5].hasValue()", "false"),
    ("[?optional.none(), ?optional.of(2)]", "[2]"),
    ("{?'a': optional.none(), 'b': 1}", "{'b': 1}"),
    ("optional.none().or(optional.of(3)).value()", "3"),
    ("optional.ofNonZeroValue(0).hasValue()", "false"),
    // Two-variable comprehensions (ext.TwoVarComprehensions, 1.32).
    ("[1, 2, 3].all(i, v, i < v)", "true"),
    ("[1, 2, 3].exists(i, v, i == 1 && v == 2)", "true"),
    ("{'a': 1, 'b': 2}.all(k, v, k.size() == 1 && v > 0)", "true"),
    ("[1, 2, 3].existsOne(i, v, i > 1 && v > 2)", "true"),
    ("[1, 2, 3].exists_one(i, v, v > 1)", "false"),
    ("[1, 2, 3].transformList(i, v, i * v)", "[0, 2, 6]"),
    ("[1, 2, 3].transformList(i, v, i > 0, v * 2)", "[4, 6]"),
    ("{'a': 1, 'b': 2}.transformList(k, v, k + string(v))", "['a1', 'b2']"),
    ("[10, 20].transformMap(i, v, v / 10)", "{0: 1, 1: 2}"),
    ("{'a': 1, 'b': 2}.transformMap(k, v, v + 1)", "{'a': 2, 'b': 3}"),
    ("{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v)", "{'b': 2}"),
    (
        "{'a': 'x', 'b': 'y'}.transformMapEntry(k, v, {v: k})",
        "{'x': 'a', 'y': 'b'}",
    ),
    // Strings (ext.Strings version 2).
    ("'hello'.charAt(4)", "'o'"),
    ("'hello'.charAt(5)", "''"),
    ("'hello mellow'.indexOf('ello', 2)", "7"),
    ("'hello mellow'.lastIndexOf('ello', 6)", "1"),
    ("'hello mellow'.lastIndexOf('')", "12"),
    ("'TacoCat'.lowerAscii()", "'tacocat'"),
    ("'TacoCat'.upperAscii()", "'TACOCAT'"),
    ("'hello hello'.replace('he', 'we', 1)", "'wello hello'"),
    ("'hello hello hello'.split(' ', 2)", "['hello', 'hello hello']"),
    ("'tacocat'.substring(0, 4)", "'taco'"),
    (r"'  \ttrim\n    '.trim()", "'trim'"),
    ("['hello', 'mellow'].join(' ')", "'hello mellow'"),
    ("[].join()", "''"),
    (
        r#"strings.quote("two escape sequences \a\n")"#,
        r#"'"two escape sequences \\a\\n"'"#,
    ),
    (r"strings.quote('\b\f\v')", r#"'"\\b\\f\\v"'"#),
    (
        r#"strings.quote('single-quote with "double quote"')"#,
        r#"'"single-quote with \\"double quote\\""'"#,
    ),
    ("\"%o\".format([11])", "'13'"),
    ("\"%x\".format([\"Hello world!\"])", "'48656c6c6f20776f726c6421'"),
    ("\"%X\".format([30])", "'1E'"),
    ("\"%.3f\".format([1.2345])", "'1.234'"),
    ("\"%.6e\".format([1052.032911275])", "'1.052033e+03'"),
    ("\"%e\".format([2.71828])", "'2.718280e+00'"),
    ("\"this is 5 in binary: %b\".format([5])", "'this is 5 in binary: 101'"),
    ("\"%d\".format([uint(64)])", "'64'"),
    ("\"%%%s%%\".format([\"text\"])", "'%text%'"),
    ("\"%s\".format([null])", "'null'"),
    ("\"%s\".format([duration(\"1h45m47s\")])", "'6347s'"),
    ("\"%s\".format([[1, 2, 3]])", "'[1, 2, 3]'"),
    ("\"%s, %s\".format([true, false])", "'true, false'"),
    ("\"%d %s\".format([dyn(1), 'a'])", "'1 a'"),
    // Sets (ext.Sets, 1.29).
    ("sets.contains([1, 2, 3], [2, 3])", "true"),
    ("sets.equivalent([1, 2], [2, 1, 1])", "true"),
    ("sets.intersects([1], [2])", "false"),
    // Kubernetes' lists library.
    ("[1, 2, 3].isSorted()", "true"),
    ("['a', 'c', 'b'].isSorted()", "false"),
    ("[1, 2, 3].sum()", "6"),
    ("[1.5, 2.5].sum()", "4.0"),
    ("[duration('1s'), duration('2s')].sum()", "duration('3s')"),
    ("[duration('1s')].filter(d, false).sum()", "duration('0')"),
    ("type([1.0].filter(x, false).sum())", "double"),
    ("[].sum()", "0"),
    ("[3, 1, 2].min()", "1"),
    ("[3, 1, 2].max()", "3"),
    ("['b', 'a'].min()", "'a'"),
    ("[1, 2, 2, 3].indexOf(2)", "1"),
    ("[1, 2, 2, 3].lastIndexOf(2)", "2"),
    ("[1].indexOf(5)", "-1"),
    // Regex.
    ("'abc 123'.find('[0-9]+')", "'123'"),
    ("'abc 123'.find('xyz')", "''"),
    ("'123 abc 456'.findAll('[0-9]+')", "['123', '456']"),
    ("'123 abc 456'.findAll('[0-9]+', 1)", "['123']"),
    // URLs: Go's url.ParseRequestURI.
    ("url('https://example.com:80/').getHost()", "'example.com:80'"),
    ("url('https://example.com:80/').getHostname()", "'example.com'"),
    ("url('https://example.com:80/').getPort()", "'80'"),
    ("url('https://[::1]:80/').getHostname()", "'::1'"),
    ("url('https://example.com/a b').getEscapedPath()", "'/a%20b'"),
    (
        "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()",
        "{'k1': ['a'], 'k2': ['b', 'c']}",
    ),
    ("url('/absolute-path').getScheme()", "''"),
    ("isURL('https:://kubernetes.io/')", "true"),
    ("url('https:://kubernetes.io/').getHost()", "''"),
    ("isURL('https://a:b:c/')", "false"),
    ("isURL('../relative-path')", "false"),
    ("isURL('/absolute-path')", "true"),
    ("isURL('https://kubernetes.io/a b?c d')", "true"),
    // Quantity.
    ("quantity('50M').isLessThan(quantity('100M'))", "true"),
    ("quantity('50.5').isInteger()", "false"),
    ("quantity('50').asInteger()", "50"),
    ("quantity('1.5').asApproximateFloat()", "1.5"),
    ("quantity('-1').sign()", "-1"),
    ("quantity('50k').add(quantity('20k')) == quantity('70k')", "true"),
    ("quantity('50k').sub(20000) == quantity('30k')", "true"),
    ("quantity('200M').compareTo(quantity('0.2G'))", "0"),
    ("isQuantity('20')", "true"),
    ("isQuantity('20x')", "false"),
    // IP.
    ("ip('192.168.0.1').family()", "4"),
    ("ip('::1').family()", "6"),
    ("isIP('192.168.0.1')", "true"),
    ("isIP('192.168.0.1/24')", "false"),
    ("isIP('::ffff:192.168.0.1')", "false"),
    ("ip.isCanonical('2001:db8::1')", "true"),
    ("ip.isCanonical('2001:DB8::1')", "false"),
    ("ip('127.0.0.1').isLoopback()", "true"),
    ("ip('0.0.0.0').isUnspecified()", "true"),
    ("ip('169.254.1.1').isLinkLocalUnicast()", "true"),
    ("ip('192.168.0.1').isGlobalUnicast()", "true"),
    ("type(ip('1.2.3.4')) == net.IP", "true"),
    ("string(ip('192.168.0.1'))", "'192.168.0.1'"),
    // CIDR.
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", "true"),
    ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", "false"),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')", "true"),
    ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", "true"),
    ("cidr('192.168.0.0/24').prefixLength()", "24"),
    ("cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", "true"),
    ("isCIDR('192.168.0.0')", "false"),
    ("type(cidr('10.0.0.0/8')) == net.CIDR", "true"),
    ("string(cidr('192.168.0.0/24'))", "'192.168.0.0/24'"),
    // Format.
    ("format.dns1123Label().validate('my-label-name')", "optional.none()"),
    (
        "format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-')",
        "optional.none()",
    ),
    (
        "format.dns1123LabelPrefix().validate('my-label-prefix-')",
        "optional.none()",
    ),
    ("format.uri().validate('http://example.com')", "optional.none()"),
    (
        "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000')",
        "optional.none()",
    ),
    ("format.byte().validate('aGVsbG8=')", "optional.none()"),
    ("format.byte().validate('aGVsbG8')", "optional.of(['invalid base64'])"),
    ("format.date().validate('2020-01-32')", "optional.of(['invalid date'])"),
    ("format.datetime().validate('2020-01-01T00:00:00Z')", "optional.none()"),
    ("format.named('unknown').hasValue()", "false"),
    ("format.named('dns1123Label').value() == format.dns1123Label()", "true"),
    ("format.uri() == format.uuid()", "false"),
    // Semver.
    ("semver('1.2.3').major()", "1"),
    ("semver('1.2.3').isLessThan(semver('1.10.0'))", "true"),
    ("isSemver('v1.0.0')", "false"),
    ("isSemver('v1.0', true)", "true"),
    ("semver('1.0.0-alpha').compareTo(semver('1.0.0'))", "-1"),
];

/// Expression (a bool), and a fragment of the compile error kube-apiserver refuses it with.
const COMPILE_ERRORS: &[(&str, &str)] = &[
    // Not in 1.34's base environment.
    ("base64.encode(b'hello') == 'aGVsbG8='", "undeclared reference"),
    ("'abc'.reverse() == 'cba'", "undeclared reference to 'reverse'"),
    ("math.greatest(1, 2) == 2", "undeclared reference to 'math'"),
    ("cel.bind(x, 1, x + 1) == 2", "undeclared reference"),
    // Argument types.
    ("isQuantity([1, 2, 3])", "found no matching overload for 'isQuantity'"),
    (
        "cidr(192168).prefixLength() == 1",
        "found no matching overload for 'cidr'",
    ),
    ("isIP(cidr('192.168.0.0/24'))", "found no matching overload for 'isIP'"),
    ("ip(1).family() == 4", "found no matching overload for 'ip'"),
    ("['a', 'b'].sum() == 'ab'", "found no matching overload for 'sum'"),
    ("[[1], [2]].min() == [1]", "found no matching overload for 'min'"),
    // Literal validators.
    ("'abc'.matches(')')", "invalid matches argument"),
    ("'abc'.find(')') == ''", "invalid matches argument"),
    ("'abc'.findAll(')').size() == 0", "invalid matches argument"),
    ("duration('1x') > duration('1s')", "invalid duration argument"),
    (
        "timestamp('bad') > timestamp('2020-01-01T00:00:00Z')",
        "invalid timestamp argument",
    ),
    // HomogeneousAggregateLiterals.
    ("[1, 'a'].size() == 2", "expected type 'int' but found 'string'"),
    (
        "{'a': 1, 'b': 'c'}.size() == 2",
        "expected type 'int' but found 'string'",
    ),
    (
        "'%d %s'.format([1, 'a']) == '1 a'",
        "expected type 'int' but found 'string'",
    ),
    // Macros.
    ("[1].all(i, i, i > 0)", "duplicate variable name"),
    (
        "optional.of(1).optMap(1, 2).hasValue()",
        "argument must be a simple name",
    ),
];

/// Expression (a bool), and a fragment of its runtime error.
const RUNTIME_ERRORS: &[(&str, &str)] = &[
    ("[1, 2][5] == 1", "index out of bounds"),
    ("{'a': 1}['b'] == 1", "no such key"),
    ("url('../relative').getScheme() == ''", "URL parse error"),
    ("'tacocat'.charAt(30) == ''", "index out of range: 30"),
    ("'%d %d %d'.format([0, 1]) == ''", "index 2 out of range"),
    (
        "'%d'.format([duration('30m2s')]) == ''",
        "decimal clause can only be used on integers, was given google.protobuf.Duration",
    ),
    (
        "{'a': 'x', 'b': 'x'}.transformMapEntry(k, v, {v: k}).size() == 1",
        "insert failed: key x already exists",
    ),
    ("quantity('abc').isInteger()", "quantities must match"),
    ("1 / 0 == 1", "division by zero"),
];

fn value_rule(expr: &str, expected: &str) -> String {
    format!("({expr}) == ({expected})")
}

fn crd(plural: &str, kind: &str, rules: &[String]) -> Value {
    let rules: Vec<Value> = rules.iter().map(|r| json!({"rule": r})).collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-validations": rules,
                "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}}}}]}})
}

fn object(kind: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "x"}, "spec": {"n": 1}})
}

/// The indexes of the rules a CRD refusal names, with its messages.
fn refused_rules(err: &str, count: usize) -> Vec<(usize, String)> {
    (0..count)
        .filter_map(|i| {
            let at = format!("x-kubernetes-validations[{i}].rule");
            err.find(&at).map(|p| (i, err[p..].chars().take(400).collect()))
        })
        .collect()
}

fn causes(st: &Value) -> Vec<String> {
    st["details"]["causes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c["message"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn value_cases_hold_as_crd_rules() {
    let server = ApiServer::start().unwrap();
    let rules: Vec<String> = VALUES.iter().map(|(e, v)| value_rule(e, v)).collect();
    let mut failures = Vec::new();
    let mut kept: Vec<String> = rules.clone();
    if let Err(e) = server.install_crd(&crd("values", "Values", &kept).to_string()) {
        let e = e.to_string();
        let bad = refused_rules(&e, kept.len());
        assert!(!bad.is_empty(), "{e}");
        for (i, m) in bad.iter().rev() {
            failures.push(format!("does not compile: {}: {m}", kept[*i]));
            kept.remove(*i);
        }
        server.install_crd(&crd("values", "Values", &kept).to_string()).unwrap();
    }
    let url = format!("{}/apis/example.com/v1/namespaces/default/values", server.url());
    let (code, st) = post(&url, &object("Values"));
    if code != 201 {
        failures.extend(causes(&st));
    }
    println!(
        "CRD rules: {} of {} value cases pass",
        VALUES.len() - failures.len(),
        VALUES.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn compile_errors_are_refused_when_the_crd_is_written() {
    let server = ApiServer::start().unwrap();
    let rules: Vec<String> = COMPILE_ERRORS.iter().map(|(e, _)| (*e).to_owned()).collect();
    let e = server
        .install_crd(&crd("broken", "Broken", &rules).to_string())
        .unwrap_err()
        .to_string();
    let refused = refused_rules(&e, rules.len());
    let mut failures = Vec::new();
    for (i, (expr, fragment)) in COMPILE_ERRORS.iter().enumerate() {
        match refused.iter().find(|(j, _)| *j == i) {
            Some((_, m)) if m.contains(fragment) => {}
            Some((_, m)) => failures.push(format!("{expr}: refused without {fragment:?}: {m}")),
            None => failures.push(format!("{expr}: accepted")),
        }
    }
    // One at a time as well: each alone is refused (422) through the API.
    for (i, (expr, _)) in COMPILE_ERRORS.iter().enumerate() {
        let body = crd(&format!("b{i}s"), &format!("B{i}"), &[(*expr).to_owned()]);
        let (code, st) = post(
            &format!(
                "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                server.url()
            ),
            &body,
        );
        if code != 422 {
            failures.push(format!("{expr}: answered {code}"));
        } else if causes(&st).iter().all(|c| !c.contains("compilation failed")) {
            failures.push(format!("{expr}: {st}"));
        }
    }
    println!(
        "CRD rules: {} of {} compile-error cases refused at write",
        COMPILE_ERRORS.len() - failures.len().min(COMPILE_ERRORS.len()),
        COMPILE_ERRORS.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn runtime_errors_deny_the_object() {
    let server = ApiServer::start().unwrap();
    let rules: Vec<String> = RUNTIME_ERRORS.iter().map(|(e, _)| (*e).to_owned()).collect();
    server.install_crd(&crd("faults", "Fault", &rules).to_string()).unwrap();
    let url = format!("{}/apis/example.com/v1/namespaces/default/faults", server.url());
    let (code, st) = post(&url, &object("Fault"));
    assert_eq!(code, 422, "{st}");
    let causes = causes(&st);
    let mut failures = Vec::new();
    for (expr, fragment) in RUNTIME_ERRORS {
        let tail = format!("evaluating rule: {expr}");
        if !causes.iter().any(|c| c.ends_with(&tail) && c.contains(fragment)) {
            failures.push(format!("{expr}: no cause with {fragment:?}"));
        }
    }
    println!(
        "CRD rules: {} of {} runtime-error cases",
        RUNTIME_ERRORS.len() - failures.len(),
        RUNTIME_ERRORS.len()
    );
    assert!(failures.is_empty(), "{}\n{causes:#?}", failures.join("\n"));
}

#[test]
fn kube_rs_optional_old_self_example_compiles_and_holds() {
    let server = ApiServer::start().unwrap();
    let mut body = crd("immutables", "Immutable", &[]);
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = json!([
        {"rule": "oldSelf.optMap(o, o == self).orValue(true)", "optionalOldSelf": true, "message": "spec is immutable"}
    ]);
    server.install_crd(&body.to_string()).unwrap();
    let url = format!("{}/apis/example.com/v1/namespaces/default/immutables", server.url());
    let (code, created) = post(&url, &object("Immutable"));
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["spec"]["n"] = json!(2);
    let (code, st) = put(&format!("{url}/x"), &changed);
    assert_eq!(code, 422, "{st}");
    let causes = causes(&st);
    assert!(causes.len() == 1 && causes[0].ends_with("spec is immutable"), "{st}");
}

const ADM: &str = "apis/admissionregistration.k8s.io/v1";

fn vap(validations: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "conformance"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": validations}})
}

#[test]
fn value_cases_hold_as_policy_validations() {
    let server = ApiServer::start().unwrap();
    let validations: Vec<Value> = VALUES
        .iter()
        .enumerate()
        .map(|(i, (e, v))| json!({"expression": value_rule(e, v), "message": format!("case {i}")}))
        .collect();
    let (code, st) = post(
        &format!("{}/{ADM}/validatingadmissionpolicies", server.url()),
        &vap(validations),
    );
    assert_eq!(code, 201, "{st}");
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "conformance"},
        "spec": {"policyName": "conformance", "validationActions": ["Warn"]}});
    let (code, st) = post(
        &format!("{}/{ADM}/validatingadmissionpolicybindings", server.url()),
        &binding,
    );
    assert_eq!(code, 201, "{st}");
    let r = agent()
        .post(&cms(&server, "default"))
        .header("Content-Type", "application/json")
        .send(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).to_string())
        .unwrap();
    let warnings: Vec<String> = r
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| h.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(r.status().as_u16(), 201);
    let failures: Vec<String> = VALUES
        .iter()
        .enumerate()
        .filter(|(i, _)| warnings.iter().any(|w| w.ends_with(&format!(": case {i}"))))
        .map(|(_, (e, v))| value_rule(e, v))
        .collect();
    println!(
        "Policies: {} of {} value cases pass",
        VALUES.len() - failures.len(),
        VALUES.len()
    );
    assert!(failures.is_empty(), "{}\n{warnings:#?}", failures.join("\n"));
}

#[test]
fn compile_errors_are_refused_when_the_policy_is_written() {
    let server = ApiServer::start().unwrap();
    let validations: Vec<Value> = COMPILE_ERRORS.iter().map(|(e, _)| json!({"expression": e})).collect();
    let (code, st) = post(
        &format!("{}/{ADM}/validatingadmissionpolicies", server.url()),
        &vap(validations),
    );
    assert_eq!(code, 422, "{st}");
    let fields: Vec<(String, String)> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let mut failures = Vec::new();
    for (i, (expr, fragment)) in COMPILE_ERRORS.iter().enumerate() {
        let field = format!("spec.validations[{i}].expression");
        if !fields.iter().any(|(f, m)| *f == field && m.contains(fragment)) {
            failures.push(format!("{expr}: not refused on {field} with {fragment:?}"));
        }
    }
    println!(
        "Policies: {} of {} compile-error cases refused at write",
        COMPILE_ERRORS.len() - failures.len(),
        COMPILE_ERRORS.len()
    );
    assert!(failures.is_empty(), "{}\n{fields:#?}", failures.join("\n"));
}
