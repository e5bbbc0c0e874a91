//! Paths to schema nodes: the steps down a schema (`properties[name]`, `items`,
//! `additionalProperties`), read from a `nodeFieldPath` below its root
//! (`.properties[a].items`), written as one ([`FieldPath`]) or as rule paths name nodes
//! ([`rule_path`], `^.spec.tags[*]`), and walked over a typed [`Schema`] or a raw JSON schema.

use std::fmt;

use serde_json::Value;

use super::{AdditionalProperties, Schema};
use crate::budget;

/// One step down a schema.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// `properties[name]`.
    Prop(String),
    /// `items`.
    Items,
    /// `additionalProperties`.
    Values,
}

/// A schema node that steps can walk: the typed [`Schema`] or a raw JSON schema.
pub trait Node: Sized {
    /// The child one step down, if the node has it.
    fn child(&self, step: &Step) -> Option<&Self>;
    /// The child one step down, if the node has it.
    fn child_mut(&mut self, step: &Step) -> Option<&mut Self>;
    /// The names of the node's properties (`None` if it has none to name).
    fn property_names(&self) -> Option<Vec<&String>>;
    /// Called for each step [`parse`] reads and each walk takes: the typed schema charges the
    /// work budget, as the estimator's walks do.
    fn charge(_steps: u64) {}
}

impl Node for Schema {
    fn child(&self, step: &Step) -> Option<&Schema> {
        match step {
            Step::Prop(n) => self.properties.get(n),
            Step::Items => self.items.as_deref(),
            Step::Values => self.additional_properties_schema(),
        }
    }

    fn child_mut(&mut self, step: &Step) -> Option<&mut Schema> {
        match step {
            Step::Prop(n) => self.properties.get_mut(n),
            Step::Items => self.items.as_deref_mut(),
            Step::Values => match &mut self.additional_properties {
                Some(AdditionalProperties::Schema(b)) => Some(b),
                _ => None,
            },
        }
    }

    fn property_names(&self) -> Option<Vec<&String>> {
        Some(self.properties.keys().collect())
    }

    fn charge(steps: u64) {
        budget::charge(steps);
    }
}

impl Node for Value {
    fn child(&self, step: &Step) -> Option<&Value> {
        match step {
            Step::Prop(n) => self.get("properties")?.get(n),
            Step::Items => self.get("items"),
            Step::Values => self.get("additionalProperties"),
        }
    }

    fn child_mut(&mut self, step: &Step) -> Option<&mut Value> {
        match step {
            Step::Prop(n) => self.get_mut("properties")?.get_mut(n),
            Step::Items => self.get_mut("items"),
            Step::Values => self.get_mut("additionalProperties"),
        }
    }

    fn property_names(&self) -> Option<Vec<&String>> {
        Some(self.get("properties")?.as_object()?.keys().collect())
    }
}

/// The node `steps` below `root`.
pub fn walk<'n, N: Node>(root: &'n N, steps: &[Step]) -> Option<&'n N> {
    N::charge(steps.len() as u64);
    steps.iter().try_fold(root, N::child)
}

/// The node `steps` below `root`.
pub fn walk_mut<'n, N: Node>(root: &'n mut N, steps: &[Step]) -> Option<&'n mut N> {
    N::charge(steps.len() as u64);
    steps.iter().try_fold(root, |n, s| n.child_mut(s))
}

/// Whether `r` ends a step: the end of the path or the next step.
fn ends(r: &str) -> bool {
    r.is_empty() || r.starts_with('.')
}

/// The steps of a `nodeFieldPath` below a schema root (`.properties[a].items`), property names
/// matched against the schema (they may hold `.` or `]`; the longest that fits wins).
pub fn parse<N: Node>(root: &N, mut rest: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut cur = root;
    while !rest.is_empty() {
        N::charge(1);
        let (step, after) = if let Some(r) = rest.strip_prefix(".items").filter(|r| ends(r)) {
            (Step::Items, r)
        } else if let Some(r) = rest
            .strip_prefix(".additionalProperties")
            .filter(|r| ends(r))
        {
            (Step::Values, r)
        } else {
            let r = rest.strip_prefix(".properties[")?;
            let name = cur
                .property_names()?
                .into_iter()
                .filter(|p| {
                    r.strip_prefix(p.as_str())
                        .and_then(|t| t.strip_prefix(']'))
                        .is_some_and(ends)
                })
                .max_by_key(|p| p.len())?
                .clone();
            let after = &r[name.len() + 1..];
            (Step::Prop(name), after)
        };
        cur = cur.child(&step)?;
        steps.push(step);
        rest = after;
    }
    Some(steps)
}

/// The steps of a `nodeFieldPath` below a schema root without the schema: a property's name
/// ends at the first `]` followed by the next step or the end.
pub fn parse_unchecked(mut rest: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(".items") {
            steps.push(Step::Items);
            rest = r;
        } else if let Some(r) = rest.strip_prefix(".additionalProperties") {
            steps.push(Step::Values);
            rest = r;
        } else if let Some(r) = rest.strip_prefix(".properties[") {
            let end = r.match_indices(']').map(|(i, _)| i).find(|&i| {
                let after = &r[i + 1..];
                after.is_empty()
                    || after.starts_with(".properties[")
                    || after.starts_with(".items")
                    || after.starts_with(".additionalProperties")
            })?;
            steps.push(Step::Prop(r[..end].to_string()));
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// Steps written as a `nodeFieldPath` below its root: `.properties[spec].items`.
pub struct FieldPath<'a>(pub &'a [Step]);

impl fmt::Display for FieldPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for step in self.0 {
            match step {
                Step::Prop(n) => write!(f, ".properties[{n}]")?,
                Step::Items => f.write_str(".items")?,
                Step::Values => f.write_str(".additionalProperties")?,
            }
        }
        Ok(())
    }
}

/// `<root>.properties[spec].items`, as `nodeFieldPath`.
pub fn field_path(root: &str, steps: &[Step]) -> String {
    format!("{root}{}", FieldPath(steps))
}

/// `^.spec.tags[*]`, as rule paths name nodes.
pub fn rule_path(steps: &[Step]) -> String {
    let mut s = "^".to_string();
    for step in steps {
        match step {
            Step::Prop(n) => {
                s.push('.');
                s.push_str(n);
            }
            Step::Items | Step::Values => s.push_str("[*]"),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn prop(n: &str) -> Step {
        Step::Prop(n.into())
    }

    fn raw() -> Value {
        json!({"properties": {
            "spec": {"properties": {
                "a.b]": {"type": "array", "items": {"type": "string"}},
                "a": {"type": "object", "additionalProperties": {"type": "integer"}},
            }},
        }})
    }

    #[test]
    fn round_trip_over_json_and_typed_schemas() {
        let root = raw();
        let typed = Schema::from_json(&root, "r").unwrap();
        for steps in [
            vec![],
            vec![prop("spec")],
            vec![prop("spec"), prop("a.b]"), Step::Items],
            vec![prop("spec"), prop("a"), Step::Values],
        ] {
            let text = FieldPath(&steps).to_string();
            assert_eq!(parse(&root, &text), Some(steps.clone()), "{text}");
            assert_eq!(parse(&typed, &text), Some(steps.clone()), "{text}");
            assert!(walk(&root, &steps).is_some());
            assert!(walk(&typed, &steps).is_some());
        }
        assert_eq!(parse(&root, ".properties[nope]"), None);
        assert_eq!(parse(&root, ".properties[spec].items"), None);
        assert_eq!(parse(&root, ".bogus"), None);
    }

    #[test]
    fn parse_without_a_schema() {
        let steps = vec![prop("spec"), prop("x]y"), Step::Items, Step::Values];
        let text = FieldPath(&steps).to_string();
        assert_eq!(
            text,
            ".properties[spec].properties[x]y].items.additionalProperties"
        );
        assert_eq!(parse_unchecked(&text), Some(steps));
        assert_eq!(parse_unchecked(".nope"), None);
    }

    #[test]
    fn walk_reaches_the_node() {
        let mut root = raw();
        let steps = [prop("spec"), prop("a"), Step::Values];
        assert_eq!(walk(&root, &steps), Some(&json!({"type": "integer"})));
        walk_mut(&mut root, &steps).unwrap()["maximum"] = json!(3);
        assert_eq!(
            root.pointer("/properties/spec/properties/a/additionalProperties/maximum"),
            Some(&json!(3))
        );
        assert_eq!(walk(&root, &[prop("spec"), Step::Items]), None);
    }

    #[test]
    fn written_paths() {
        let steps = [prop("spec"), prop("tags"), Step::Items];
        assert_eq!(rule_path(&steps), "^.spec.tags[*]");
        assert_eq!(
            field_path("r", &steps),
            "r.properties[spec].properties[tags].items"
        );
    }
}
