//! The API server's field errors (k8s.io/apimachinery pkg/util/validation/field), formatted the
//! way `field.Error.Error()` formats them.

use std::fmt;

use crate::schema::ValidationRule;

#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// Not shown (Required, Forbidden, Internal).
    Omit,
    Str(String),
    Bool(bool),
    Int(i64),
    Null,
    /// A raw JSON rendering.
    Json(String),
    /// An `x-kubernetes-validations` entry, rendered as the internal Go struct's JSON.
    Rule(ValidationRule),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ErrorType {
    Invalid,
    Required,
    Forbidden,
    Internal,
    NotSupported(Vec<String>),
    Duplicate,
    TooLong,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub kind: ErrorType,
    pub value: BadValue,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(field: &str, value: BadValue, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Invalid,
            value,
            detail: detail.into(),
        }
    }
    pub fn required(field: &str, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Required,
            value: BadValue::Omit,
            detail: detail.into(),
        }
    }
    pub fn forbidden(field: &str, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Forbidden,
            value: BadValue::Omit,
            detail: detail.into(),
        }
    }
    pub fn internal(field: &str, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Internal,
            value: BadValue::Omit,
            detail: detail.into(),
        }
    }
    pub fn not_supported(field: &str, value: BadValue, valid: &[&str]) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::NotSupported(valid.iter().map(|s| s.to_string()).collect()),
            value,
            detail: String::new(),
        }
    }
}

/// Go `%q` of a string (strconv.Quote).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go `encoding/json` string encoding (HTML-escaped `<`, `>`, `&`).
pub fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn rule_json(r: &ValidationRule) -> String {
    let opt = |v: &Option<String>| {
        v.as_ref()
            .map(|s| go_json_string(s))
            .unwrap_or_else(|| "null".into())
    };
    format!(
        "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{},\"FieldPath\":{},\"OptionalOldSelf\":{}}}",
        go_json_string(&r.rule),
        go_json_string(&r.message),
        go_json_string(&r.message_expression),
        opt(&r.reason),
        go_json_string(&r.field_path),
        r.optional_old_self
            .map(|b| b.to_string())
            .unwrap_or_else(|| "null".into())
    )
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let type_str = match &self.kind {
            ErrorType::Invalid => "Invalid value",
            ErrorType::Required => "Required value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Internal => "Internal error",
            ErrorType::NotSupported(_) => "Unsupported value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::TooLong => "Too long",
        };
        let mut body = match (&self.kind, &self.value) {
            (
                ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::Internal
                | ErrorType::TooLong,
                _,
            )
            | (_, BadValue::Omit) => type_str.to_string(),
            (_, BadValue::Str(s)) => format!("{type_str}: {}", go_quote(s)),
            (_, BadValue::Bool(b)) => format!("{type_str}: {b}"),
            (_, BadValue::Int(i)) => format!("{type_str}: {i}"),
            (_, BadValue::Null) => format!("{type_str}: null"),
            (_, BadValue::Json(j)) => format!("{type_str}: {j}"),
            (_, BadValue::Rule(r)) => format!("{type_str}: {}", rule_json(r)),
        };
        if let ErrorType::NotSupported(valid) = &self.kind
            && !valid.is_empty()
        {
            let q: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            body.push_str(&format!(": supported values: {}", q.join(", ")));
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        write!(f, "{}: {}", self.field, body)
    }
}
