//! Which keyword bounds a schema node (its size, its number of children), and the smallest
//! value a person would accept for it.

use celcost_core::report::Keyword;
use celcost_core::schema::Schema;
use serde_json::Value;

/// The keyword that bounds the size of a node the estimator reads, if any.
pub(super) fn size_keyword(s: &Schema) -> Option<Keyword> {
    if s.x_int_or_string {
        return Some(Keyword::MaxLength);
    }
    match s.type_.as_str() {
        "array" => Some(Keyword::MaxItems),
        "object" if s.additional_properties_schema().is_some() => Some(Keyword::MaxProperties),
        "string" => match s.format.as_str() {
            "duration" | "date" | "date-time" => None,
            "byte" => Some(Keyword::MaxLength),
            // Without maxLength, an enum bounds the string (its longest value); a maxLength
            // would replace that bound with a larger one.
            _ if s.max_length.is_none() && !s.enum_values.is_empty() => None,
            _ => Some(Keyword::MaxLength),
        },
        _ => None,
    }
}

/// The keyword that bounds how many children a node has (`extractMaxElements`), if any.
pub(super) fn cardinality_keyword(s: &Schema) -> Option<Keyword> {
    match s.type_.as_str() {
        "array" => Some(Keyword::MaxItems),
        "object" if s.additional_properties.is_some() => Some(Keyword::MaxProperties),
        _ => None,
    }
}

/// The smallest value a person would accept for the bound: at least 1, its `min*`, its
/// default's size, and (maxLength) its longest enum value.
pub(super) fn smallest_sensible(s: &Schema, k: Keyword) -> i64 {
    let chars = |v: &Value| v.as_str().map(|t| t.chars().count() as i64).unwrap_or(0);
    let mut lo = 1i64;
    match k {
        Keyword::MaxItems => {
            lo = lo.max(s.min_items.unwrap_or(0));
            if let Some(Value::Array(a)) = &s.default {
                lo = lo.max(a.len() as i64);
            }
        }
        Keyword::MaxProperties => {
            lo = lo
                .max(s.min_properties.unwrap_or(0))
                .max(s.required.len() as i64);
            if let Some(Value::Object(o)) = &s.default {
                lo = lo.max(o.len() as i64);
            }
        }
        Keyword::MaxLength => {
            lo = lo.max(s.min_length.unwrap_or(0));
            if let Some(d) = &s.default {
                lo = lo.max(chars(d));
            }
            for e in &s.enum_values {
                lo = lo.max(chars(e));
            }
        }
    }
    lo
}
