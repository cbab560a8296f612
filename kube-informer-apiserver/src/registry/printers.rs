//! The columns kube-apiserver's built-in printers (`pkg/printers/internalversion`) give the kinds the server
//! serves by default, as computed [`PrinterColumn`]s. The server makes every column (wide ones included) and clients
//! choose by priority, as kube-apiserver's table convertor does.

use std::collections::BTreeSet;
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::registry::printer_column::{ColumnType, PrinterColumn, ago, since};
use kube_informer::object::time::{format_rfc3339, parse_rfc3339};
use kube_informer::selector::{LabelSelector, Selector};

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn items<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn len_of(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer)
        .and_then(Value::as_object)
        .map_or(0, |m| i64::try_from(m.len()).unwrap_or(i64::MAX))
}

/// `text`, or `<none>` when empty.
fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".to_owned()
    } else {
        s.to_owned()
    }
}

fn string(name: &str, cell: crate::registry::printer_column::CellFn) -> PrinterColumn {
    PrinterColumn::computed(name, ColumnType::String, cell)
}

/// Labels as `k=v` pairs sorted by key, `<none>` when there are none (apimachinery's `labels.FormatLabels`).
fn format_labels(v: Option<&Value>) -> String {
    let pairs: Vec<String> = v
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        "<none>".to_owned()
    } else {
        pairs.join(",")
    }
}

/// Container names and images of a pod spec, comma-separated.
fn containers(spec: &Value) -> (String, String) {
    let list = items(spec, "/containers");
    let names: Vec<&str> = list.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = list.iter().map(|c| text(c, "/image")).collect();
    (names.join(","), images.join(","))
}

// ----- config maps, secrets, namespaces, leases -----

/// NAME, DATA (entries of `data` and `binaryData`), AGE.
pub(crate) fn config_maps() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Data", |o, _| json!(len_of(o, "/data") + len_of(o, "/binaryData")))
            .description("The number of entries in data and binaryData."),
        PrinterColumn::age(),
    ]
}

/// NAME, TYPE, DATA, AGE.
pub(crate) fn secrets() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Type", |o, _| json!(text(o, "/type"))).description("The secret's type."),
        string("Data", |o, _| json!(len_of(o, "/data"))).description("The number of entries in data."),
        PrinterColumn::age(),
    ]
}

/// NAME, STATUS (the phase), AGE.
pub(crate) fn namespaces() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Status", |o, _| json!(text(o, "/status/phase"))).description("The namespace's phase."),
        PrinterColumn::age(),
    ]
}

/// NAME, HOLDER, AGE.
pub(crate) fn leases() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Holder", |o, _| json!(text(o, "/spec/holderIdentity"))).description("Who holds the lease."),
        PrinterColumn::age(),
    ]
}

/// `printComponentStatus`: the `Healthy` condition's status word, message and error.
pub(crate) fn component_statuses() -> Vec<PrinterColumn> {
    fn healthy(o: &Value) -> Option<&Value> {
        o.pointer("/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| text(c, "/type") == "Healthy"))
    }
    vec![
        PrinterColumn::name(),
        string("Status", |o, _| {
            json!(match healthy(o) {
                Some(c) if text(c, "/status") == "True" => "Healthy",
                _ => "Unhealthy",
            })
        }),
        string("Message", |o, _| json!(healthy(o).map_or("", |c| text(c, "/message")))),
        string("Error", |o, _| json!(healthy(o).map_or("", |c| text(c, "/error")))),
    ]
}

// ----- pods -----

/// What the pod printer works out from a pod's status: ready containers of all, the status word, restarts.
struct PodSummary {
    ready: i64,
    total: i64,
    reason: String,
    restarts: i64,
    last_restart: Option<SystemTime>,
}

fn restartable(init: &Value) -> bool {
    text(init, "/restartPolicy") == "Always"
}

fn finished_at(status: &Value) -> Option<SystemTime> {
    status
        .pointer("/lastState/terminated/finishedAt")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339)
}

fn has_condition(pod: &Value, kind: &str) -> bool {
    items(pod, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == kind && text(c, "/status") == "True")
}

/// The pod printer's reasoning: the phase (or status reason), overridden by a scheduling gate, the first
/// unfinished init container, then the containers' waiting or terminated reasons (read last to first), and a
/// deletion.
fn pod_summary(pod: &Value) -> PodSummary {
    let inits = items(pod, "/spec/initContainers");
    let is_restartable = |name: &str| inits.iter().any(|c| text(c, "/name") == name && restartable(c));
    let mut s = PodSummary {
        ready: 0,
        total: i64::try_from(items(pod, "/spec/containers").len()).unwrap_or(0)
            + i64::try_from(inits.iter().filter(|c| restartable(c)).count()).unwrap_or(0),
        reason: text(pod, "/status/phase").to_owned(),
        restarts: 0,
        last_restart: None,
    };
    let phase = text(pod, "/status/phase");
    if !text(pod, "/status/reason").is_empty() {
        s.reason = text(pod, "/status/reason").to_owned();
    }
    if items(pod, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated")
    {
        s.reason = "SchedulingGated".to_owned();
    }
    let later = |a: Option<SystemTime>, b: Option<SystemTime>| a.max(b);
    let mut sidecar_restarts = 0;
    let mut sidecar_last = None;
    let mut initializing = false;
    let init_statuses = items(pod, "/status/initContainerStatuses");
    for (i, c) in init_statuses.iter().enumerate() {
        let name = text(c, "/name");
        s.restarts += int(c, "/restartCount");
        s.last_restart = later(s.last_restart, finished_at(c));
        if is_restartable(name) {
            sidecar_restarts += int(c, "/restartCount");
            sidecar_last = later(sidecar_last, finished_at(c));
        }
        let terminated = c.pointer("/state/terminated");
        let waiting_reason = text(c, "/state/waiting/reason");
        if terminated.is_some() && int(c, "/state/terminated/exitCode") == 0 {
            continue;
        }
        if is_restartable(name) && c.get("started") == Some(&Value::Bool(true)) {
            if c.get("ready") == Some(&Value::Bool(true)) {
                s.ready += 1;
            }
            continue;
        }
        s.reason = if let Some(t) = terminated {
            match text(t, "/reason") {
                "" if int(t, "/signal") != 0 => format!("Init:Signal:{}", int(t, "/signal")),
                "" => format!("Init:ExitCode:{}", int(t, "/exitCode")),
                r => format!("Init:{r}"),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", inits.len())
        };
        initializing = true;
        break;
    }
    if !initializing || has_condition(pod, "Initialized") {
        s.restarts = sidecar_restarts;
        s.last_restart = sidecar_last;
        let mut has_running = false;
        for c in items(pod, "/status/containerStatuses").iter().rev() {
            s.restarts += int(c, "/restartCount");
            s.last_restart = later(s.last_restart, finished_at(c));
            let waiting = text(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                s.reason = waiting.to_owned();
            } else if let Some(t) = terminated {
                s.reason = match text(t, "/reason") {
                    "" if int(t, "/signal") != 0 => format!("Signal:{}", int(t, "/signal")),
                    "" => format!("ExitCode:{}", int(t, "/exitCode")),
                    r => r.to_owned(),
                };
            } else if c.get("ready") == Some(&Value::Bool(true)) && c.pointer("/state/running").is_some() {
                has_running = true;
                s.ready += 1;
            }
        }
        if s.reason == "Completed" && has_running {
            s.reason = if has_condition(pod, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .to_owned();
        }
    }
    if pod.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null()) {
        if text(pod, "/status/reason") == "NodeLost" {
            s.reason = "Unknown".to_owned();
        } else if phase != "Succeeded" && phase != "Failed" {
            s.reason = "Terminating".to_owned();
        }
    }
    s
}

/// NAME, READY, STATUS, RESTARTS, AGE; wide: IP, NODE, NOMINATED NODE, READINESS GATES.
pub(crate) fn pods() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Ready", |o, _| {
            let s = pod_summary(o);
            json!(format!("{}/{}", s.ready, s.total))
        })
        .description("Ready containers of all the pod's containers."),
        string("Status", |o, _| json!(pod_summary(o).reason)).description("The pod's status in one word."),
        string("Restarts", |o, now| {
            let s = pod_summary(o);
            json!(match s.last_restart {
                Some(t) if s.restarts != 0 => format!("{} ({} ago)", s.restarts, ago(t, now)),
                _ => s.restarts.to_string(),
            })
        })
        .description("Container restarts, and how long ago the last one was."),
        PrinterColumn::age(),
        string("IP", |o, _| {
            json!(or_none(
                items(o, "/status/podIPs").first().map_or("", |ip| text(ip, "/ip"))
            ))
        })
        .priority(1)
        .description("The pod's first IP address."),
        string("Node", |o, _| json!(or_none(text(o, "/spec/nodeName"))))
            .priority(1)
            .description("The node the pod is bound to."),
        string("Nominated Node", |o, _| {
            json!(or_none(text(o, "/status/nominatedNodeName")))
        })
        .priority(1)
        .description("The node the scheduler nominated for the pod."),
        string("Readiness Gates", |o, _| {
            let gates = items(o, "/spec/readinessGates");
            if gates.is_empty() {
                return json!("<none>");
            }
            let conditions = items(o, "/status/conditions");
            let met = gates
                .iter()
                .filter(|g| {
                    conditions
                        .iter()
                        .find(|c| text(c, "/type") == text(g, "/conditionType"))
                        .is_some_and(|c| text(c, "/status") == "True")
                })
                .count();
            json!(format!("{met}/{}", gates.len()))
        })
        .priority(1)
        .description("Readiness gates met of all the pod's gates."),
    ]
}

// ----- deployments -----

/// NAME, READY (ready/desired), UP-TO-DATE, AVAILABLE, AGE; wide: CONTAINERS, IMAGES, SELECTOR.
pub(crate) fn deployments() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Ready", |o, _| {
            json!(format!(
                "{}/{}",
                int(o, "/status/readyReplicas"),
                int(o, "/spec/replicas")
            ))
        })
        .description("Ready replicas of the desired replicas."),
        string("Up-to-date", |o, _| json!(int(o, "/status/updatedReplicas")))
            .description("Replicas running the current template."),
        string("Available", |o, _| json!(int(o, "/status/availableReplicas")))
            .description("Replicas available to serve."),
        PrinterColumn::age(),
        string("Containers", |o, _| {
            json!(containers(o.pointer("/spec/template/spec").unwrap_or(&Value::Null)).0)
        })
        .priority(1)
        .description("The template's container names."),
        string("Images", |o, _| {
            json!(containers(o.pointer("/spec/template/spec").unwrap_or(&Value::Null)).1)
        })
        .priority(1)
        .description("The template's container images."),
        string("Selector", |o, _| {
            let ls = o.pointer("/spec/selector").filter(|v| !v.is_null());
            json!(match ls {
                None => String::new(),
                Some(v) => serde_json::from_value::<LabelSelector>(v.clone())
                    .ok()
                    .and_then(|ls| Selector::from_label_selector(&ls).ok())
                    .map_or_else(|| "<invalid>".to_owned(), |s| s.to_string()),
            })
        })
        .priority(1)
        .description("The label selector of the deployment's pods."),
    ]
}

// ----- services -----

fn load_balancer_ingress(svc: &Value) -> Vec<String> {
    let set: BTreeSet<&str> = items(svc, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| match (text(i, "/ip"), text(i, "/hostname")) {
            ("", "") => None,
            ("", host) => Some(host),
            (ip, _) => Some(ip),
        })
        .collect();
    set.into_iter().map(str::to_owned).collect()
}

fn external_ip(svc: &Value) -> String {
    let external: Vec<&str> = items(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match text(svc, "/spec/type") {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut all = load_balancer_ingress(svc);
            all.extend(external.iter().map(|s| (*s).to_owned()));
            if all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(svc, "/spec/externalName").to_owned(),
        _ => "<unknown>".to_owned(),
    }
}

fn ports(svc: &Value) -> String {
    let pieces: Vec<String> = items(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = text(p, "/protocol");
            match int(p, "/nodePort") {
                n if n > 0 => format!("{}:{n}/{protocol}", int(p, "/port")),
                _ => format!("{}/{protocol}", int(p, "/port")),
            }
        })
        .collect();
    if pieces.is_empty() {
        "<none>".to_owned()
    } else {
        pieces.join(",")
    }
}

/// NAME, TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE; wide: SELECTOR.
pub(crate) fn services() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Type", |o, _| json!(text(o, "/spec/type"))).description("How the service is exposed."),
        string("Cluster-IP", |o, _| {
            json!(or_none(
                items(o, "/spec/clusterIPs")
                    .first()
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ))
        })
        .description("The service's first cluster IP."),
        string("External-IP", |o, _| json!(external_ip(o))).description("Addresses reaching the service from outside."),
        string("Port(s)", |o, _| json!(ports(o))).description("The service's ports."),
        PrinterColumn::age(),
        string("Selector", |o, _| json!(format_labels(o.pointer("/spec/selector"))))
            .priority(1)
            .description("The labels of the pods the service routes to."),
    ]
}

// ----- nodes -----

fn node_address(node: &Value, kind: &str) -> String {
    items(node, "/status/addresses")
        .iter()
        .find(|a| text(a, "/type") == kind)
        .map_or_else(|| "<none>".to_owned(), |a| text(a, "/address").to_owned())
}

fn or_unknown(s: &str) -> String {
    if s.is_empty() {
        "<unknown>".to_owned()
    } else {
        s.to_owned()
    }
}

/// NAME, STATUS, ROLES, AGE, VERSION; wide: INTERNAL-IP, EXTERNAL-IP, OS-IMAGE, KERNEL-VERSION, CONTAINER-RUNTIME.
pub(crate) fn nodes() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        string("Status", |o, _| {
            let ready = items(o, "/status/conditions")
                .iter()
                .rev()
                .find(|c| text(c, "/type") == "Ready");
            let mut status = vec![match ready {
                Some(c) if text(c, "/status") == "True" => "Ready",
                Some(_) => "NotReady",
                None => "Unknown",
            }];
            if o.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
                status.push("SchedulingDisabled");
            }
            json!(status.join(","))
        })
        .description("Whether the node is ready, and schedulable."),
        string("Roles", |o, _| {
            let mut roles = BTreeSet::new();
            for (k, v) in o
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if let Some(role) = k.strip_prefix("node-role.kubernetes.io/").filter(|r| !r.is_empty()) {
                    roles.insert(role.to_owned());
                } else if k == "kubernetes.io/role" && v.as_str().is_some_and(|v| !v.is_empty()) {
                    roles.insert(v.as_str().unwrap_or_default().to_owned());
                }
            }
            json!(or_none(&roles.into_iter().collect::<Vec<_>>().join(",")))
        })
        .description("The roles its labels give the node."),
        PrinterColumn::age(),
        string("Version", |o, _| json!(text(o, "/status/nodeInfo/kubeletVersion")))
            .description("The kubelet's version."),
        string("Internal-IP", |o, _| json!(node_address(o, "InternalIP")))
            .priority(1)
            .description("The node's first internal address."),
        string("External-IP", |o, _| json!(node_address(o, "ExternalIP")))
            .priority(1)
            .description("The node's first external address."),
        string("OS-Image", |o, _| {
            json!(or_unknown(text(o, "/status/nodeInfo/osImage")))
        })
        .priority(1)
        .description("The operating system image."),
        string("Kernel-Version", |o, _| {
            json!(or_unknown(text(o, "/status/nodeInfo/kernelVersion")))
        })
        .priority(1)
        .description("The kernel version."),
        string("Container-Runtime", |o, _| {
            json!(or_unknown(text(o, "/status/nodeInfo/containerRuntimeVersion")))
        })
        .priority(1)
        .description("The container runtime and its version."),
    ]
}

// ----- events -----

/// When an event was first seen: `firstTimestamp`, else `eventTime`.
fn first_seen(e: &Value, now: SystemTime) -> String {
    match e.pointer("/firstTimestamp").filter(|v| !v.is_null()) {
        Some(t) => since(Some(t), now),
        None => since(e.pointer("/eventTime"), now),
    }
}

/// LAST SEEN, TYPE, REASON, OBJECT, MESSAGE; wide: SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME.
pub(crate) fn events() -> Vec<PrinterColumn> {
    vec![
        string("Last Seen", |o, now| {
            json!(if o.pointer("/series").is_some_and(|s| !s.is_null()) {
                since(o.pointer("/series/lastObservedTime"), now)
            } else if o.pointer("/lastTimestamp").is_some_and(|t| !t.is_null()) {
                since(o.pointer("/lastTimestamp"), now)
            } else {
                first_seen(o, now)
            })
        })
        .description("How long ago the event was last seen."),
        string("Type", |o, _| json!(text(o, "/type"))).description("Normal or Warning."),
        string("Reason", |o, _| json!(text(o, "/reason"))).description("Why the event happened, in one word."),
        string("Object", |o, _| {
            let kind = text(o, "/involvedObject/kind").to_ascii_lowercase();
            json!(match text(o, "/involvedObject/name") {
                "" => kind,
                name => format!("{kind}/{name}"),
            })
        })
        .description("The object the event is about."),
        string("Subobject", |o, _| json!(text(o, "/involvedObject/fieldPath")))
            .priority(1)
            .description("The part of the object the event is about."),
        string("Source", |o, _| {
            let pick = |a: &str, b: &str| {
                if a.is_empty() {
                    text(o, b).to_owned()
                } else {
                    a.to_owned()
                }
            };
            let component = pick(text(o, "/source/component"), "/reportingComponent");
            let instance = pick(text(o, "/source/host"), "/reportingInstance");
            json!(if instance.is_empty() {
                component
            } else {
                format!("{component}, {instance}")
            })
        })
        .priority(1)
        .description("The component that reported the event."),
        string("Message", |o, _| json!(text(o, "/message").trim())).description("What happened."),
        string("First Seen", |o, now| json!(first_seen(o, now)))
            .priority(1)
            .description("How long ago the event was first seen."),
        string("Count", |o, _| {
            json!(if o.pointer("/series").is_some_and(|s| !s.is_null()) {
                int(o, "/series/count")
            } else {
                match int(o, "/count") {
                    0 => 1,
                    n => n,
                }
            })
        })
        .priority(1)
        .description("How many times the event happened."),
        PrinterColumn::name().priority(1),
    ]
}

// ----- no printer -----

/// NAME, CREATED AT (a timestamp): kube-apiserver's default table convertor, for resources without a printer
/// (CustomResourceDefinitions).
pub(crate) fn default_convertor() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn::name(),
        PrinterColumn::computed("Created At", ColumnType::Date, |o, _| {
            json!(
                o.pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str)
                    .and_then(parse_rfc3339)
                    .map_or_else(|| "0001-01-01T00:00:00Z".to_owned(), format_rfc3339)
            )
        })
        .description("When the object was created."),
    ]
}

/// The cells `columns` make of `obj`.
#[cfg(test)]
fn cells(columns: &[PrinterColumn], obj: &Value, now: SystemTime) -> Vec<Value> {
    columns.iter().map(|c| c.cell(obj, now)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const T0: &str = "2023-11-14T22:13:20Z";

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + 3600)
    }

    fn row(columns: &[PrinterColumn], obj: Value) -> Vec<Value> {
        cells(columns, &obj, now())
    }

    #[test]
    fn config_maps_secrets_namespaces_leases() {
        let meta = json!({"name": "a", "creationTimestamp": T0});
        assert_eq!(
            row(
                &config_maps(),
                json!({"metadata": meta, "data": {"x": "1", "y": "2"}, "binaryData": {"z": ""}})
            ),
            [json!("a"), json!(3), json!("60m")]
        );
        assert_eq!(
            row(
                &secrets(),
                json!({"metadata": meta, "type": "Opaque", "data": {"x": "MQ=="}})
            ),
            [json!("a"), json!("Opaque"), json!(1), json!("60m")]
        );
        assert_eq!(
            row(&namespaces(), json!({"metadata": meta, "status": {"phase": "Active"}})),
            [json!("a"), json!("Active"), json!("60m")]
        );
        assert_eq!(
            row(&leases(), json!({"metadata": meta, "spec": {"holderIdentity": "me"}})),
            [json!("a"), json!("me"), json!("60m")]
        );
    }

    #[test]
    fn pods_summarise_their_containers() {
        let pod = json!({
            "metadata": {"name": "p", "creationTimestamp": T0},
            "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}],
                     "readinessGates": [{"conditionType": "x/ok"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
                       "conditions": [{"type": "x/ok", "status": "True"}],
                       "containerStatuses": [
                           {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                            "lastState": {"terminated": {"finishedAt": "2023-11-14T22:43:20Z", "exitCode": 1}}},
                           {"name": "b", "ready": false, "restartCount": 0,
                            "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
        });
        assert_eq!(
            row(&pods(), pod),
            [
                "p",
                "1/2",
                "CrashLoopBackOff",
                "2 (30m ago)",
                "60m",
                "10.0.0.5",
                "n1",
                "<none>",
                "1/1"
            ]
            .map(|s| json!(s))
        );
        let fresh = json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            row(&pods(), fresh),
            ["q", "0/1", "", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"].map(|s| json!(s))
        );
        let init = json!({
            "metadata": {"name": "i"},
            "spec": {"initContainers": [{"name": "setup"}, {"name": "side", "restartPolicy": "Always"}],
                     "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "setup", "state": {"waiting": {"reason": "PodInitializing"}}}]},
        });
        let cells = row(&pods(), init);
        assert_eq!((cells[1].clone(), cells[2].clone()), (json!("0/2"), json!("Init:0/2")));
        let deleting = json!({"metadata": {"name": "d", "deletionTimestamp": T0},
                              "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running"}});
        assert_eq!(row(&pods(), deleting)[2], json!("Terminating"));
        let done = json!({"metadata": {"name": "c"}, "spec": {"containers": [{"name": "a"}]},
                          "status": {"phase": "Succeeded", "containerStatuses": [
                              {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}});
        assert_eq!(row(&pods(), done)[2], json!("Completed"));
    }

    #[test]
    fn deployments_services_nodes() {
        let d = json!({
            "metadata": {"name": "web", "creationTimestamp": T0},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
        });
        assert_eq!(
            row(&deployments(), d),
            [
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("60m"),
                json!("a,b"),
                json!("nginx,busybox"),
                json!("app=web")
            ]
        );
        let svc = json!({
            "metadata": {"name": "s", "creationTimestamp": T0},
            "spec": {"type": "NodePort", "clusterIPs": ["10.0.0.10"],
                     "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}],
                     "selector": {"b": "2", "a": "1"}},
        });
        assert_eq!(
            row(&services(), svc),
            [
                "s",
                "NodePort",
                "10.0.0.10",
                "<none>",
                "80:30080/TCP,53/UDP",
                "60m",
                "a=1,b=2"
            ]
            .map(|s| json!(s))
        );
        let lb = json!({"metadata": {"name": "l"}, "spec": {"type": "LoadBalancer"},
                        "status": {"loadBalancer": {"ingress": [{"hostname": "h.example"}, {"ip": "1.2.3.4"}]}}});
        assert_eq!(row(&services(), lb)[3], json!("1.2.3.4,h.example"));
        let pending = json!({"metadata": {"name": "l"}, "spec": {"type": "LoadBalancer"}});
        assert_eq!(row(&services(), pending)[3], json!("<pending>"));
        let node = json!({
            "metadata": {"name": "n1", "creationTimestamp": T0,
                         "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "192.168.0.2"}],
                       "nodeInfo": {"kubeletVersion": "v1.34.0", "osImage": "Debian"}},
        });
        assert_eq!(
            row(&nodes(), node),
            [
                "n1",
                "Ready,SchedulingDisabled",
                "control-plane,edge",
                "60m",
                "v1.34.0",
                "192.168.0.2",
                "<none>",
                "Debian",
                "<unknown>",
                "<unknown>"
            ]
            .map(|s| json!(s))
        );
        assert_eq!(row(&nodes(), json!({"metadata": {"name": "x"}}))[1], json!("Unknown"));
    }

    #[test]
    fn events_and_the_default_convertor() {
        let e = json!({
            "metadata": {"name": "web.17a", "creationTimestamp": T0},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{a}"},
            "reason": "Pulled", "type": "Normal", "message": " pulled \n",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": T0, "lastTimestamp": "2023-11-14T22:43:20Z",
        });
        assert_eq!(
            row(&events(), e),
            [
                json!("30m"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/web"),
                json!("spec.containers{a}"),
                json!("kubelet, n1"),
                json!("pulled"),
                json!("60m"),
                json!(1),
                json!("web.17a")
            ]
        );
        let series = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
                            "eventTime": "2023-11-14T22:13:20.000001Z", "reportingComponent": "ctl",
                            "series": {"count": 4, "lastObservedTime": "2023-11-14T23:03:20.5Z"}});
        let cells = row(&events(), series);
        assert_eq!(
            (
                cells[0].clone(),
                cells[3].clone(),
                cells[5].clone(),
                cells[7].clone(),
                cells[8].clone()
            ),
            // Durations are cut to whole units, as Go's integer division does.
            (json!("9m59s"), json!("node"), json!("ctl"), json!("59m"), json!(4))
        );
        assert_eq!(
            row(
                &default_convertor(),
                json!({"metadata": {"name": "c", "creationTimestamp": "2023-11-14T23:13:20+01:00"}})
            ),
            [json!("c"), json!(T0)]
        );
    }
}
