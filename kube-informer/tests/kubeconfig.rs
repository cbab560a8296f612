//! kubeconfig loading: real-world shapes (kind, EKS, GKE, on-prem client certificates, JSON), kubectl's merge of
//! several files, and readable errors for broken files.

use std::path::PathBuf;

use kube_informer::Error;
use kube_informer::client::{Client, Config, Kubeconfig};
use kube_informer_test_support::fixture_in;

/// A kubeconfig under `tests/fixtures/kubeconfig/`.
fn fixture(name: &str) -> PathBuf {
    fixture_in(env!("CARGO_MANIFEST_DIR"), &format!("kubeconfig/{name}"))
}

fn load(name: &str) -> Config {
    Config::from_kubeconfig_file(fixture(name), None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn kind_config_with_inline_client_certificate() {
    let c = load("kind.yaml");
    assert_eq!(c.cluster_url(), "https://127.0.0.1:40919");
    assert_eq!((c.context(), c.namespace()), (Some("kind-kind"), "default"));
    let dbg = format!("{c:?}");
    assert!(dbg.contains("client_certificate: Some(\"<key redacted>\")"), "{dbg}");
    assert!(dbg.contains("clusters[kind-kind].certificate-authority-data"), "{dbg}");
    // The RSA key (PKCS#1) matches its certificate: the client builds.
    Client::new(c).unwrap();
}

#[test]
fn eks_config_runs_aws_as_a_v1beta1_exec_plugin() {
    let c = load("eks.yaml");
    assert_eq!(
        c.cluster_url(),
        "https://0123456789ABCDEF0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"
    );
    assert_eq!(c.context(), Some("arn:aws:eks:eu-west-1:123456789012:cluster/prod"));
    let dbg = format!("{c:?}");
    assert!(dbg.contains(r#"exec plugin "aws""#), "{dbg}");
    // Building the client does not run the plugin.
    Client::new(c).unwrap();
}

#[test]
fn gke_config_runs_the_gke_plugin_with_cluster_info() {
    let c = load("gke.yaml");
    assert_eq!((c.cluster_url(), c.namespace()), ("https://34.77.100.1", "payments"));
    assert!(format!("{c:?}").contains(r#"exec plugin "gke-gcloud-auth-plugin""#));
    Client::new(c).unwrap();
}

#[test]
fn on_prem_config_reads_certificates_relative_to_the_file() {
    let c = load("client-cert.yaml");
    assert_eq!(
        (c.cluster_url(), c.namespace()),
        ("https://k8s.corp.example:6443", "kube-system")
    );
    let dbg = format!("{c:?}");
    assert!(
        dbg.contains("tls_server_name: Some(\"kubernetes.default.svc\")"),
        "{dbg}"
    );
    assert!(dbg.contains("client-ca.pem"), "the CA file is named: {dbg}");
    // The EC (SEC1) key matches its certificate.
    Client::new(c).unwrap();
}

#[test]
fn json_kubeconfig_loads() {
    let c = load("kubeconfig.json");
    assert_eq!((c.cluster_url(), c.namespace()), ("https://localhost:6443", "dev"));
    assert!(c.is_insecure());
    assert!(format!("{c:?}").contains("bearer token"));
    assert!(!format!("{c:?}").contains("json-token"));
}

#[test]
fn kubectl_null_lists_read_as_empty() {
    let kc = Kubeconfig::read(&fixture("empty-lists.yaml")).unwrap();
    assert!(kc.is_empty());
    assert_eq!(kc.current_context(), None);
    let err = kc.to_config(None).unwrap_err().to_string();
    assert!(err.contains("no current-context is set"), "{err}");
}

#[test]
fn explicit_context_overrides_the_current_one() {
    let kc = Kubeconfig::read_all(&[fixture("merge-a.yaml"), fixture("merge-b.yaml")]).unwrap();
    let c = kc.to_config(Some("a")).unwrap();
    assert_eq!((c.context(), c.namespace()), (Some("a"), "from-a"));
    let err = kc.to_config(Some("zzz")).unwrap_err().to_string();
    assert!(
        err.contains("context \"zzz\" not found (contexts: a, b)") && err.contains("at context"),
        "{err}"
    );
}

/// `KUBECONFIG=merge-a.yaml:missing.yaml:merge-b.yaml:merge-c.yaml`, resolved as kubectl does.
#[test]
fn merged_kubeconfig_resolves_as_kubectl_does() {
    let kc = Kubeconfig::read_all(&[
        fixture("merge-a.yaml"),
        fixture("does-not-exist.yaml"),
        fixture("merge-b.yaml"),
        fixture("merge-c.yaml"),
    ])
    .unwrap();
    // merge-a sets no current-context; merge-b is the first that does (merge-c's is ignored).
    assert_eq!(kc.current_context(), Some("b"));
    assert_eq!(kc.context_names(), vec!["a", "b", "c"]);
    assert_eq!(kc.files().len(), 3, "the missing file is skipped");
    // Context "b" (from merge-b) uses cluster "shared", which merge-a defined first: merge-a's server wins.
    let b = kc.to_config(None).unwrap();
    assert_eq!((b.cluster_url(), b.namespace()), ("https://from-a:6443", "default"));
    // Context "a" is merge-a's, not merge-b's.
    let a = kc.to_config(Some("a")).unwrap();
    assert_eq!((a.cluster_url(), a.namespace()), ("https://from-a:6443", "from-a"));
    // Context "c" (merge-c) refers to a cluster only merge-b defines.
    assert_eq!(kc.to_config(Some("c")).unwrap().cluster_url(), "https://only-b:6443");
    // The order of the list matters: the other way round, merge-b's definitions win.
    let reversed = Kubeconfig::read_all(&[fixture("merge-b.yaml"), fixture("merge-a.yaml")]).unwrap();
    assert_eq!(reversed.to_config(Some("a")).unwrap().namespace(), "from-b");
    assert_eq!(
        reversed.to_config(Some("b")).unwrap().cluster_url(),
        "https://from-b:6443"
    );
}

/// Each broken kubeconfig gives its own readable error naming the file, the context and the field.
#[test]
fn broken_kubeconfigs_give_distinct_located_errors() {
    // (file, context, field, message fragment)
    let cases: &[(&str, Option<&str>, Option<&str>, &str)] = &[
        (
            "invalid-yaml.yaml",
            None,
            None,
            "not a valid kubeconfig (YAML): line 6 column",
        ),
        (
            "invalid-json.json",
            None,
            None,
            "not a valid kubeconfig (JSON): expected value at line 1 column 33",
        ),
        ("wrong-type.yaml", None, None, "line 9 column 60: invalid boolean"),
        (
            "missing-context.yaml",
            None,
            Some("current-context"),
            "context \"nope\" not found (contexts: ctx)",
        ),
        (
            "no-current-context.yaml",
            None,
            None,
            "no current-context is set and no context was given (contexts: ctx)",
        ),
        (
            "missing-cluster.yaml",
            Some("ctx"),
            Some("contexts[ctx].cluster"),
            "cluster \"c\" not found (clusters: other)",
        ),
        (
            "missing-user.yaml",
            Some("ctx"),
            Some("contexts[ctx].user"),
            "user \"u\" not found (users: someone-else)",
        ),
        (
            "no-server.yaml",
            Some("ctx"),
            Some("clusters[c].server"),
            "no server URL",
        ),
        (
            "bad-scheme.yaml",
            Some("ctx"),
            Some("clusters[c].server"),
            "has scheme \"ftp\"",
        ),
        (
            "bad-ca-base64.yaml",
            Some("ctx"),
            Some("clusters[c].certificate-authority-data"),
            "not valid base64",
        ),
        (
            "ca-file-missing.yaml",
            Some("ctx"),
            Some("clusters[c].certificate-authority"),
            "does-not-exist.crt",
        ),
        (
            "ca-not-pem.yaml",
            Some("ctx"),
            Some("clusters[c].certificate-authority-data"),
            "no PEM certificate found",
        ),
        (
            "cert-without-key.yaml",
            Some("ctx"),
            Some("users[u].client-key-data"),
            "no client key",
        ),
        (
            "key-mismatch.yaml",
            Some("ctx"),
            Some("users[u].client-key-data"),
            "do not match",
        ),
        (
            "key-garbage.yaml",
            Some("ctx"),
            Some("users[u].client-key-data"),
            "unreadable private key",
        ),
        (
            "exec-bad-api-version.yaml",
            Some("ctx"),
            Some("users[u].exec.apiVersion"),
            "v1alpha1\" is not supported",
        ),
        (
            "exec-no-interactive-mode.yaml",
            Some("ctx"),
            Some("users[u].exec.interactiveMode"),
            "must be specified",
        ),
        (
            "exec-always.yaml",
            Some("ctx"),
            Some("users[u].exec"),
            "interactiveMode: Always",
        ),
        (
            "token-and-basic.yaml",
            Some("ctx"),
            Some("users[u].username"),
            "more than one authentication method",
        ),
        (
            "insecure-with-ca.yaml",
            Some("ctx"),
            Some("clusters[c].insecure-skip-tls-verify"),
            "together with a certificate authority",
        ),
        (
            "duplicate-names.yaml",
            None,
            Some("users"),
            "the name \"u\" appears twice",
        ),
        (
            "token-file-missing.yaml",
            Some("ctx"),
            Some("users[u].tokenFile"),
            "cannot read token file /nonexistent/kube-informer/token",
        ),
        (
            "auth-provider-gcp.yaml",
            Some("ctx"),
            Some("users[u].auth-provider.name"),
            "auth-provider \"gcp\" is not supported",
        ),
        (
            "bad-proxy.yaml",
            Some("ctx"),
            Some("clusters[c].proxy-url"),
            "not a usable proxy URL",
        ),
    ];
    let mut messages = Vec::new();
    for (file, context, field, fragment) in cases {
        let path = fixture(&format!("broken/{file}"));
        let err = match Config::from_kubeconfig_file(&path, None) {
            Ok(c) => panic!("{file} loaded: {c:?}"),
            Err(Error::Config(e)) => e,
            Err(other) => panic!("{file}: not a config error: {other}"),
        };
        let text = err.to_string();
        assert_eq!(err.file.as_deref(), Some(path.as_path()), "{file}: {text}");
        assert_eq!(err.context.as_deref(), *context, "{file}: {text}");
        assert_eq!(
            err.field.as_deref().map(|f| f.split(" (").next().unwrap()),
            *field,
            "{file}: {text}"
        );
        assert!(err.message.contains(fragment), "{file}: {text}");
        assert!(text.contains(&path.display().to_string()), "{file}: {text}");
        for secret in ["t0ken", "hunter2", "secret-key-material", "ya29.secret", "s3cret-value"] {
            assert!(!text.contains(secret), "{file} leaks {secret}: {text}");
        }
        messages.push(err.message);
    }
    let mut unique = messages.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        messages.len(),
        "every broken file has its own message: {messages:#?}"
    );
}

#[test]
fn debug_of_configs_and_clients_shows_no_secret() {
    let secrets = ["json-token", "token-from-a"];
    for name in ["kubeconfig.json", "merge-a.yaml"] {
        let kc = Kubeconfig::read(&fixture(name)).unwrap();
        let config = kc.to_config(kc.current_context().or(Some("a"))).unwrap();
        let client = Client::new(config.clone()).unwrap();
        for text in [format!("{kc:?}"), format!("{config:?}"), format!("{client:?}")] {
            for s in secrets {
                assert!(!text.contains(s), "{name}: {s} in {text}");
            }
        }
    }
    // The RSA key of the kind fixture.
    let kind = load("kind.yaml");
    let key = std::fs::read_to_string(fixture_in(env!("CARGO_MANIFEST_DIR"), "tls/rsa-client.key")).unwrap();
    let key_line = key.lines().nth(1).unwrap();
    for text in [format!("{kind:?}"), format!("{:?}", Client::new(kind.clone()).unwrap())] {
        assert!(!text.contains(key_line), "key material in {text}");
    }
}

/// Runs `Config::infer` in a child process (this test binary) with a controlled environment; returns what it
/// printed: the server URL and namespace, or the error.
fn infer_in_child(env: &[(&str, String)]) -> String {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "infer_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("HOME", "/nonexistent/kube-informer-home")
        .env("KUBE_INFORMER_INFER_CHILD", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.split_once("INFER: ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no result from the child: {stdout}"))
        .to_owned()
}

/// The child side of `infer_in_child` (ignored in a normal run; the parent runs it with `--ignored`).
#[test]
#[ignore = "the child side of infer_in_child, run by it"]
fn infer_child() {
    assert!(
        std::env::var_os("KUBE_INFORMER_INFER_CHILD").is_some(),
        "run by infer_in_child, in an environment it prepared"
    );
    let config = if std::env::var_os("KUBE_INFORMER_FROM_KUBECONFIG").is_some() {
        Config::from_kubeconfig(None)
    } else {
        Config::infer()
    };
    match config {
        Ok(c) => println!("INFER: {} {}", c.cluster_url(), c.namespace()),
        Err(e) => println!("INFER: error: {e}"),
    }
}

#[test]
fn infer_follows_kubeconfig_then_home_then_in_cluster() {
    let list = std::env::join_paths([
        fixture("missing.yaml"),
        fixture("merge-b.yaml"),
        fixture("merge-a.yaml"),
    ])
    .unwrap()
    .into_string()
    .unwrap();
    // KUBECONFIG is a merged list.
    assert_eq!(infer_in_child(&[("KUBECONFIG", list)]), "https://from-b:6443 default");
    // ~/.kube/config when KUBECONFIG is unset.
    let home = std::env::temp_dir().join(format!("kube-informer-home-{}", std::process::id()));
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    std::fs::copy(fixture("kubeconfig.json"), home.join(".kube/config")).unwrap();
    assert_eq!(
        infer_in_child(&[("HOME", home.display().to_string())]),
        "https://localhost:6443 dev"
    );
    std::fs::remove_dir_all(&home).unwrap();
    // Neither: the in-cluster configuration, when the pod environment is there.
    let out = infer_in_child(&[
        ("KUBERNETES_SERVICE_HOST", "10.96.0.1".into()),
        ("KUBERNETES_SERVICE_PORT", "443".into()),
    ]);
    assert!(
        out.contains("/var/run/secrets/kubernetes.io/serviceaccount/token"),
        "{out}"
    );
    // Nothing at all.
    let out = infer_in_child(&[]);
    assert!(out.contains("no configuration found"), "{out}");
    // KUBECONFIG naming only missing files: nothing either (kubectl would fall back to in-cluster too), and the
    // message says the file named by the variable does not exist.
    let missing = fixture("missing.yaml").display().to_string();
    let out = infer_in_child(&[("KUBECONFIG", missing.clone())]);
    assert_eq!(
        out,
        format!(
            "error: config error: no configuration found: KUBECONFIG names {missing}, which does not exist, and this \
             is not a pod (KUBERNETES_SERVICE_HOST is unset)"
        )
    );
    let out = infer_in_child(&[
        ("KUBECONFIG", missing.clone()),
        ("KUBE_INFORMER_FROM_KUBECONFIG", "1".into()),
    ]);
    assert_eq!(
        out,
        format!("error: config error: no kubeconfig: KUBECONFIG names {missing}, which does not exist")
    );
}

#[test]
fn a_kubeconfig_file_that_does_not_exist_is_named_as_missing() {
    let err = Config::from_kubeconfig_file("/nope/config", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "config error in /nope/config: the kubeconfig file does not exist"
    );
}
