//! The object types of the policy compile environment: `request` (kubernetes.AdmissionRequest),
//! `namespaceObject` (kubernetes.Namespace) and `variables` (kubernetes.variables), as
//! k8s.io/apiserver pkg/admission/plugin/cel compile.go and composition.go declare them.

use std::collections::HashMap;

use crate::cel::checker::TypeProvider;
use crate::cel::types::Type;

pub(super) const VARIABLES_TYPE: &str = "kubernetes.variables";

/// Struct name → field name → type.
pub(super) struct PolicyTypes {
    structs: HashMap<&'static str, HashMap<String, Type>>,
}

impl PolicyTypes {
    pub(super) fn new() -> Self {
        let s = |n: &str| Type::object(n);
        let list_str = || Type::list(Type::String);
        let map_str = || Type::map(Type::String, Type::String);
        let structs = [
            (
                "kubernetes.GroupVersionKind",
                vec![
                    ("group", Type::String),
                    ("version", Type::String),
                    ("kind", Type::String),
                ],
            ),
            (
                "kubernetes.GroupVersionResource",
                vec![
                    ("group", Type::String),
                    ("version", Type::String),
                    ("resource", Type::String),
                ],
            ),
            (
                "kubernetes.UserInfo",
                vec![
                    ("username", Type::String),
                    ("uid", Type::String),
                    ("groups", list_str()),
                    ("extra", Type::map(Type::String, list_str())),
                ],
            ),
            (
                "kubernetes.AdmissionRequest",
                vec![
                    ("kind", s("kubernetes.GroupVersionKind")),
                    ("resource", s("kubernetes.GroupVersionResource")),
                    ("subResource", Type::String),
                    ("requestKind", s("kubernetes.GroupVersionKind")),
                    ("requestResource", s("kubernetes.GroupVersionResource")),
                    ("requestSubResource", Type::String),
                    ("name", Type::String),
                    ("namespace", Type::String),
                    ("operation", Type::String),
                    ("userInfo", s("kubernetes.UserInfo")),
                    ("dryRun", Type::Bool),
                    ("options", Type::Dyn),
                ],
            ),
            ("kubernetes.NamespaceSpec", vec![("finalizers", list_str())]),
            (
                "kubernetes.NamespaceCondition",
                vec![
                    ("status", Type::String),
                    ("type", Type::String),
                    ("lastTransitionTime", Type::Timestamp),
                    ("message", Type::String),
                    ("reason", Type::String),
                ],
            ),
            (
                "kubernetes.NamespaceStatus",
                vec![
                    ("conditions", Type::list(s("kubernetes.NamespaceCondition"))),
                    ("phase", Type::String),
                ],
            ),
            (
                "kubernetes.NamespaceMetadata",
                vec![
                    ("name", Type::String),
                    ("generateName", Type::String),
                    ("namespace", Type::String),
                    ("labels", map_str()),
                    ("annotations", map_str()),
                    ("UID", Type::String),
                    ("creationTimestamp", Type::Timestamp),
                    ("deletionGracePeriodSeconds", Type::Int),
                    ("deletionTimestamp", Type::Timestamp),
                    ("generation", Type::Int),
                    ("resourceVersion", Type::String),
                    ("finalizers", list_str()),
                ],
            ),
            (
                "kubernetes.Namespace",
                vec![
                    ("metadata", s("kubernetes.NamespaceMetadata")),
                    ("spec", s("kubernetes.NamespaceSpec")),
                    ("status", s("kubernetes.NamespaceStatus")),
                ],
            ),
            (VARIABLES_TYPE, vec![]),
        ];
        let structs = structs
            .into_iter()
            .map(|(name, fields)| {
                let fields = fields.into_iter().map(|(f, t)| (f.to_string(), t));
                (name, fields.collect())
            })
            .collect();
        PolicyTypes { structs }
    }

    /// Declares a compiled variable's field (composition.go `AddField` with
    /// `convertCelTypeToDeclType`): scalars keep their type, lists and maps are converted
    /// element-wise, anything else (objects, optionals, failed compiles) is `dyn`.
    pub(super) fn add_variable(&mut self, name: &str, output: Option<&Type>) {
        let t = output.map(convert).unwrap_or(Type::Dyn);
        self.structs
            .entry(VARIABLES_TYPE)
            .or_default()
            .insert(name.to_string(), t);
    }
}

impl Default for PolicyTypes {
    fn default() -> Self {
        Self::new()
    }
}

fn convert(t: &Type) -> Type {
    match t {
        Type::Any
        | Type::Bool
        | Type::Bytes
        | Type::Double
        | Type::Duration
        | Type::Int
        | Type::Null
        | Type::String
        | Type::Timestamp
        | Type::Uint => t.clone(),
        Type::List(e) => Type::list(convert(e)),
        Type::Map(k, v) => Type::map(convert(k), convert(v)),
        _ => Type::Dyn,
    }
}

impl TypeProvider for PolicyTypes {
    fn has_struct_type(&self, name: &str) -> bool {
        self.structs.contains_key(name)
    }

    fn field_type(&self, struct_name: &str, field: &str) -> Option<Type> {
        self.structs.get(struct_name)?.get(field).cloned()
    }
}
