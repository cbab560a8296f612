//! `Widget`: a custom resource declared the way a user would (no `apiVersion`/`kind` fields), served by the
//! embedded server from a `ResourceSpec` with a status subresource.

use kube_informer::object::{ObjectMeta, Resource};
use kube_informer_apiserver::ResourceSpec;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WidgetSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WidgetStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WidgetSpec {
    #[serde(default)]
    pub color: String,
    #[serde(default)]
    pub size: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

kube_informer::object!(Widget, group: "example.com", version: "v1", kind: "Widget", plural: "widgets",
                       namespaced: true);

/// How the embedded server serves widgets.
pub fn widget_spec() -> ResourceSpec {
    ResourceSpec::new(Widget::api_resource()).with_status_subresource()
}

/// A widget to create.
pub fn widget(ns: &str, name: &str, color: &str) -> Widget {
    Widget {
        metadata: ObjectMeta::namespaced(ns, name),
        spec: WidgetSpec {
            color: color.into(),
            size: 1,
        },
        status: None,
    }
}
