//! The OpenAPI value validator the API server runs on default values (k8s.io/kube-openapi
//! pkg/validation/validate, reached through `NewSchemaValidatorFromOpenAPI(s.ToKubeOpenAPI())`
//! and `ValidateCustomResource`), with its error texts and its conversion to field errors
//! (`kubeOpenAPIResultToFieldErrors`).
//!
//! Values are decoded JSON as Go holds them: integers that fit are `int64`, every other number is
//! a `float64` ([`Num`]). The schema is the structural schema converted with `ToKubeOpenAPI`:
//! `type` is a one-element list (int-or-string nodes have none), and the members of
//! `allOf`/`anyOf`/`oneOf`/`not` ("nested") carry no `additionalProperties`.

use serde_json::{Number, Value};

use super::{formats, goregexp};
use crate::crd::fielderr::{BadValue, FieldError, go_float, go_int, go_quote};
use crate::schema::{AdditionalProperties, Schema};

/// A Go number: `int64` or `float64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(super) fn of(n: &Number) -> Num {
        match go_int(n) {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(0.0)),
        }
    }
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
    /// Go's `%v`.
    fn go(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(f) => go_float(f),
        }
    }
    fn value(self) -> BadValue {
        match self {
            Num::Int(i) => BadValue::Int(i),
            Num::Float(f) => BadValue::Float(f),
        }
    }
}

/// Go's `int64(f)` on amd64: truncation, and the "integer indefinite" value for NaN and values
/// out of range.
pub(super) fn go_f64_to_i64(f: f64) -> i64 {
    if f.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// The error codes of `*errors.Validation` that the conversion to field errors distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    Enum,
    MaxItems,
    TooManyProperties,
    /// Every other code: reported as `Invalid` with the error's message.
    Other,
}

/// A kube-openapi validation error.
#[derive(Clone, Debug)]
enum OpenAPIError {
    /// `*errors.Validation`.
    Validation {
        code: Code,
        name: String,
        /// `Value` (`None` is Go's nil).
        value: Option<BadValue>,
        /// `Valid` when it is an integer limit.
        valid: Option<i64>,
        /// `Values` (the enum).
        values: Vec<Value>,
        message: String,
    },
    /// Any other error (`errors.New`, `fmt.Errorf`): reported at the default itself.
    Plain(String),
}

impl OpenAPIError {
    fn message(&self) -> &str {
        match self {
            OpenAPIError::Validation { message, .. } | OpenAPIError::Plain(message) => message,
        }
    }
    fn validation(code: Code, name: &str, value: Option<BadValue>, message: String) -> Self {
        OpenAPIError::Validation {
            code,
            name: name.to_string(),
            value,
            valid: None,
            values: Vec::new(),
            message,
        }
    }
    /// `errors.InvalidType` with a string value (`typeFailWithData`).
    fn invalid_type(name: &str, type_name: &str, value: &str) -> Self {
        Self::validation(
            Code::InvalidType,
            name,
            Some(BadValue::Str(value.to_string())),
            format!(
                "{name} in body must be of type {type_name}: {}",
                go_quote(value)
            ),
        )
    }
}

/// `validate.Result`.
#[derive(Clone, Debug, Default)]
struct Outcome {
    errors: Vec<OpenAPIError>,
    match_count: i64,
}

impl Outcome {
    fn err(e: OpenAPIError) -> Self {
        Outcome {
            errors: vec![e],
            match_count: 0,
        }
    }
    fn add(&mut self, e: OpenAPIError) {
        if !self.errors.iter().any(|x| x.message() == e.message()) {
            self.errors.push(e);
        }
    }
    fn merge(&mut self, other: Outcome) {
        for e in other.errors {
            self.add(e);
        }
        self.match_count += other.match_count;
    }
    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
    fn inc(&mut self) {
        self.match_count += 1;
    }
}

/// `ValidateCustomResource(fld, value, NewSchemaValidatorFromOpenAPI(s.ToKubeOpenAPI()))`.
pub(super) fn validate_value(fld: &str, s: &Schema, value: &Value) -> Vec<FieldError> {
    let outcome = SchemaValidator {
        schema: s,
        nested: false,
        path: "",
    }
    .validate(value);
    outcome
        .errors
        .into_iter()
        .map(|e| to_field_error(fld, e))
        .collect()
}

/// `kubeOpenAPIResultToFieldErrors` for one error.
fn to_field_error(fld: &str, e: OpenAPIError) -> FieldError {
    let OpenAPIError::Validation {
        code,
        name,
        value,
        valid,
        values,
        message,
    } = e
    else {
        return FieldError::invalid(fld, BadValue::Str(String::new()), e.message());
    };
    let path = if name.is_empty() || name == "." {
        fld.to_string()
    } else {
        format!("{fld}.{}", name.strip_prefix('.').unwrap_or(&name))
    };
    let value_or_empty = || value.clone().unwrap_or(BadValue::Str(String::new()));
    match code {
        Code::Required => FieldError::required(&path, ""),
        Code::Enum => {
            let supported: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    v => crate::crd::fielderr::go_json(v),
                })
                .collect();
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            FieldError::not_supported(
                &path,
                value.unwrap_or(BadValue::any(Value::Null)),
                &supported,
            )
        }
        Code::TooLong => FieldError::too_long(&path, valid.unwrap_or(-1)),
        Code::MaxItems | Code::TooManyProperties => {
            let actual = match value {
                Some(BadValue::Int(i)) => i,
                _ => -1,
            };
            FieldError::too_many(&path, actual, valid.unwrap_or(-1))
        }
        Code::InvalidType | Code::Other => FieldError::invalid(&path, value_or_empty(), &message),
    }
}

/// `validate.SchemaValidator`: one schema at one path.
struct SchemaValidator<'a> {
    schema: &'a Schema,
    /// Converted from a `NestedValueValidation` (no `additionalProperties`).
    nested: bool,
    path: &'a str,
}

impl<'a> SchemaValidator<'a> {
    fn child(&self, schema: &'a Schema, path: &'a str) -> SchemaValidator<'a> {
        SchemaValidator {
            schema,
            nested: self.nested,
            path,
        }
    }

    fn types(&self) -> &[String] {
        std::slice::from_ref(&self.schema.type_)
            .split_at(usize::from(!self.schema.type_.is_empty()))
            .0
    }

    fn has_type(&self, t: &str) -> bool {
        self.schema.type_ == t
    }

    /// `SchemaValidator.Validate`.
    fn validate(&self, data: &Value) -> Outcome {
        crate::budget::charge(1);
        let mut result = Outcome::default();
        if data.is_null() {
            // Only the type and enum validators run on null.
            result.merge(self.validate_type(data));
            if let Some(e) = self.validate_enum(data) {
                result.add(e);
            }
            return result;
        }
        let s = self.schema;
        // typeValidator
        if !s.type_.is_empty() || !s.format.is_empty() {
            result.merge(self.validate_type(data));
            result.inc();
        }
        // schemaPropsValidator
        result.merge(self.validate_schema_props(data));
        result.inc();
        if let Value::String(text) = data {
            // stringValidator
            if let Some(e) = self.validate_string(text) {
                result.add(e);
            }
            result.inc();
            // formatValidator
            if formats::is_known(&s.format) {
                if !formats::validates(&s.format, text) {
                    result.add(OpenAPIError::invalid_type(self.path, &s.format, text));
                }
                result.inc();
            }
        }
        if let Value::Number(n) = data {
            result.merge(self.validate_number(Num::of(n)));
            result.inc();
        }
        if let Value::Array(items) = data {
            result.merge(self.validate_slice(items));
            result.inc();
        }
        // commonValidator
        if let Some(e) = self.validate_enum(data) {
            result.add(e);
        }
        result.inc();
        if let Value::Object(map) = data {
            result.merge(self.validate_object(map));
            result.inc();
        }
        result.inc();
        result
    }

    /// `typeValidator.Validate`.
    fn validate_type(&self, data: &Value) -> Outcome {
        let s = self.schema;
        let types = self.types().join(",");
        let ok = Outcome {
            errors: vec![],
            match_count: 1,
        };
        let (sch_type, format) = match data {
            Value::Null => {
                if !self.types().is_empty() && !self.has_type("null") && !s.nullable {
                    return Outcome::err(OpenAPIError::invalid_type(self.path, &types, "null"));
                }
                return ok;
            }
            Value::Bool(_) => ("boolean", ""),
            Value::String(_) => ("string", ""),
            Value::Number(n) => match Num::of(n) {
                Num::Int(_) => ("integer", "int64"),
                Num::Float(_) => ("number", "float64"),
            },
            Value::Array(_) => ("array", ""),
            Value::Object(_) => ("object", ""),
        };
        let is_float_int = sch_type == "number"
            && data.as_f64().is_some_and(is_float64_a_json_integer)
            && self.has_type("integer");
        let is_int_float = sch_type == "integer" && self.has_type("number");
        let stringish = matches!(data, Value::String(_) | Value::Array(_));
        let type_matches = self.has_type(sch_type) || is_float_int || is_int_float;
        if !stringish && !s.format.is_empty() && !type_matches && format != s.format {
            return Outcome::err(OpenAPIError::invalid_type(self.path, &s.format, format));
        }
        let numeric = self.has_type("number") || self.has_type("integer");
        if !numeric && !s.format.is_empty() && stringish {
            return ok;
        }
        if !type_matches {
            return Outcome::err(OpenAPIError::invalid_type(self.path, &types, sch_type));
        }
        ok
    }

    /// `basicCommonValidator.Validate`: the enum.
    fn validate_enum(&self, data: &Value) -> Option<OpenAPIError> {
        let values = &self.schema.enum_values;
        crate::budget::charge(1 + values.len() as u64);
        if values.is_empty() {
            return None;
        }
        if !data.is_null() && values.iter().any(|e| enum_matches(data, e)) {
            return None;
        }
        Some(OpenAPIError::Validation {
            code: Code::Enum,
            name: self.path.to_string(),
            value: Some(BadValue::any(data.clone())),
            valid: None,
            values: values.clone(),
            message: format!(
                "{} in body should be one of {}",
                self.path,
                crate::crd::fielderr::go_json(&Value::Array(values.clone()))
            ),
        })
    }

    /// `stringValidator.Validate`: the first failing of maxLength, minLength, pattern.
    fn validate_string(&self, data: &str) -> Option<OpenAPIError> {
        let s = self.schema;
        let len = data.chars().count() as i64;
        let path = self.path;
        if let Some(max) = s.max_length
            && len > max
        {
            return Some(OpenAPIError::Validation {
                code: Code::TooLong,
                name: path.to_string(),
                value: Some(BadValue::Str(data.to_string())),
                valid: Some(max),
                values: vec![],
                message: format!("{path} in body should be at most {max} chars long"),
            });
        }
        if let Some(min) = s.min_length
            && len < min
        {
            return Some(OpenAPIError::validation(
                Code::Other,
                path,
                Some(BadValue::Str(data.to_string())),
                format!("{path} in body should be at least {min} chars long"),
            ));
        }
        if !s.pattern.is_empty() {
            let failed = match goregexp::is_match(&s.pattern, data) {
                Ok(true) => None,
                Ok(false) => Some(s.pattern.clone()),
                Err(e) => Some(format!("{}, but pattern is invalid: {e}", s.pattern)),
            };
            if let Some(p) = failed {
                return Some(OpenAPIError::validation(
                    Code::Other,
                    path,
                    Some(BadValue::Str(data.to_string())),
                    format!("{path} in body should match '{p}'"),
                ));
            }
        }
        None
    }

    /// `numberValidator.Validate`.
    fn validate_number(&self, val: Num) -> Outcome {
        let s = self.schema;
        let (type_name, format) = match s.type_.as_str() {
            "integer" => (
                "integer",
                if matches!(s.format.as_str(), "int32" | "int64") {
                    s.format.as_str()
                } else {
                    ""
                },
            ),
            "number" => (
                "number",
                if matches!(s.format.as_str(), "float" | "double") {
                    s.format.as_str()
                } else {
                    ""
                },
            ),
            _ => ("", ""),
        };
        let path = self.path;
        let in_range = |n: Num, prefix: &str| value_in_range(n, type_name, format, prefix, path);
        let mut res = Outcome::default();
        if let Some(e) = in_range(val, "Checked") {
            res.add(e);
        }
        let mut multiple = Outcome::default();
        if let Some(factor) = s.multiple_of {
            match in_range(Num::Float(factor), "MultipleOf") {
                None => {
                    if let Some(e) = multiple_of_native(path, val, factor) {
                        multiple.add(e);
                    }
                }
                Some(e) => {
                    multiple.add(e);
                    if let Some(e) = multiple_of_float(path, val.as_f64(), factor) {
                        multiple.add(e);
                    }
                }
            }
        }
        // The maximum and the minimum alike: a boundary within the type's range is checked
        // natively, one out of it (that error besides) as a general number.
        let boundary = |limit: Option<f64>, excl: bool, b: Bound, prefix: &str| {
            let mut result = Outcome::default();
            let Some(limit) = limit else {
                return result;
            };
            match in_range(Num::Float(limit), prefix) {
                None => {
                    if let Some(e) = bound_native(path, val, limit, excl, b) {
                        result.add(e);
                    }
                }
                Some(e) => {
                    result.add(e);
                    let data = Num::Float(val.as_f64());
                    if let Some(e) = bound(path, data, Num::Float(limit), excl, b) {
                        result.add(e);
                    }
                }
            }
            result
        };
        let maximum = boundary(
            s.maximum,
            s.exclusive_maximum,
            Bound::Max,
            "Maximum boundary",
        );
        let minimum = boundary(
            s.minimum,
            s.exclusive_minimum,
            Bound::Min,
            "Minimum boundary",
        );
        res.merge(multiple);
        res.merge(minimum);
        res.merge(maximum);
        res.inc();
        res
    }

    /// `schemaSliceValidator.Validate`.
    fn validate_slice(&self, items: &[Value]) -> Outcome {
        let s = self.schema;
        let path = self.path;
        let mut result = Outcome::default();
        if let Some(item_schema) = &s.items {
            for (i, v) in items.iter().enumerate() {
                let p = format!("{path}[{i}]");
                result.merge(self.child(item_schema, &p).validate(v));
            }
        }
        let size = items.len() as i64;
        let bounds = (s.min_items, s.max_items);
        add_count_errors(&mut result, path, size, bounds, "items", Code::MaxItems);
        if s.unique_items
            && items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].iter().any(|b| go_deep_equal(a, b)))
        {
            result.add(OpenAPIError::validation(
                Code::Other,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
        result.inc();
        result
    }

    /// `objectValidator.Validate`.
    fn validate_object(&self, map: &serde_json::Map<String, Value>) -> Outcome {
        let s = self.schema;
        let path = self.path;
        let mut res = Outcome::default();
        let num_keys = map.len() as i64;
        let bounds = (s.min_properties, s.max_properties);
        add_count_errors(
            &mut res,
            path,
            num_keys,
            bounds,
            "properties",
            Code::TooManyProperties,
        );
        let additional = if self.nested {
            None
        } else {
            s.additional_properties.as_ref()
        };
        match additional {
            Some(AdditionalProperties::Bool(false)) => {
                for k in map.keys() {
                    if !s.properties.contains_key(k) {
                        res.add(OpenAPIError::validation(
                            Code::Other,
                            path,
                            Some(BadValue::Str(k.clone())),
                            format!("{path}.{k} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Some(AdditionalProperties::Schema(ap)) => {
                for (k, v) in map {
                    if !s.properties.contains_key(k) {
                        let p = format!("{path}.{k}");
                        res.merge(self.child(ap, &p).validate(v));
                    }
                }
            }
            _ => {}
        }
        for (name, prop) in &s.properties {
            if let Some(v) = map.get(name) {
                let p = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                res.merge(self.child(prop, &p).validate(v));
            }
        }
        for k in &s.required {
            if !map.contains_key(k) {
                let name = format!("{path}.{k}");
                let message = format!("{name} in body is required");
                res.add(OpenAPIError::validation(
                    Code::Required,
                    &name,
                    None,
                    message,
                ));
            }
        }
        res
    }

    /// `schemaPropsValidator.Validate`: allOf, anyOf, oneOf, not.
    fn validate_schema_props(&self, data: &Value) -> Outcome {
        let s = self.schema;
        let path = self.path;
        let nested = |schema: &'a Schema| SchemaValidator {
            schema,
            nested: true,
            path,
        };
        let mut main = Outcome::default();
        if !s.any_of.is_empty() {
            let mut best_failures: Option<Outcome> = None;
            let mut first_success: Option<Outcome> = None;
            for a in &s.any_of {
                let result = nested(a).validate(data);
                if result.is_valid() {
                    best_failures = None;
                    first_success = Some(result);
                    break;
                }
                if best_failures
                    .as_ref()
                    .is_none_or(|b| result.match_count > b.match_count)
                {
                    best_failures = Some(result);
                }
            }
            if first_success.is_none() {
                main.add(OpenAPIError::Plain(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                )));
            }
            if let Some(b) = best_failures {
                main.merge(b);
            } else if let Some(f) = first_success {
                main.merge(f);
            }
        }
        if !s.one_of.is_empty() {
            let mut best_failures: Option<Outcome> = None;
            let mut first_success: Option<Outcome> = None;
            let mut validated = 0;
            for a in &s.one_of {
                let result = nested(a).validate(data);
                if result.is_valid() {
                    validated += 1;
                    best_failures = None;
                    if first_success.is_none() {
                        first_success = Some(result);
                    }
                    continue;
                }
                if validated == 0
                    && best_failures
                        .as_ref()
                        .is_none_or(|b| result.match_count > b.match_count)
                {
                    best_failures = Some(result);
                }
            }
            if validated != 1 {
                let additional = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                main.add(OpenAPIError::Plain(format!(
                    "{} must validate one and only one schema (oneOf). {additional}",
                    go_quote(path)
                )));
                if let Some(b) = best_failures {
                    main.merge(b);
                }
            } else if let Some(f) = first_success {
                main.merge(f);
            }
        }
        if !s.all_of.is_empty() {
            let mut validated = 0;
            for a in &s.all_of {
                let result = nested(a).validate(data);
                if result.is_valid() {
                    validated += 1;
                }
                main.merge(result);
            }
            if validated != s.all_of.len() {
                let additional = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                main.add(OpenAPIError::Plain(format!(
                    "{} must validate all the schemas (allOf){additional}",
                    go_quote(path)
                )));
            }
        }
        if let Some(n) = &s.not
            && nested(n).validate(data).is_valid()
        {
            main.add(OpenAPIError::Plain(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
        main.inc();
        main
    }
}

/// `swag.IsFloat64AJSONInteger`.
pub(super) fn is_float64_a_json_integer(f: f64) -> bool {
    const MAX_JSON_FLOAT: f64 = 9007199254740991.0;
    if f.is_nan() || f.is_infinite() || !(-MAX_JSON_FLOAT..=MAX_JSON_FLOAT).contains(&f) {
        return false;
    }
    let rounded = f.round();
    if f == rounded {
        return true;
    }
    if rounded == 0.0 {
        return false;
    }
    let diff = (f - rounded).abs();
    diff == 0.0 || diff < 1e-9 * rounded.abs()
}

/// `IsValueValidAgainstRange`: whether a number (the value or a schema bound) is representable
/// in the schema's type and format; the error is a plain one.
fn value_in_range(
    val: Num,
    type_name: &str,
    format: &str,
    prefix: &str,
    path: &str,
) -> Option<OpenAPIError> {
    let rep = match val {
        Num::Int(i) => i.to_string(),
        // strconv.FormatFloat(f, 'f', -1, 64): Rust's Display is the same shortest fixed form.
        Num::Float(f) => format!("{f}"),
    };
    let ok = match (type_name, format) {
        ("integer", "int32") => rep.parse::<i32>().is_ok(),
        ("integer", _) => rep.parse::<i64>().is_ok(),
        (_, "float") => rep
            .parse::<f64>()
            .is_ok_and(|f| f.abs() <= f32::MAX as f64 * (1.0 + f64::EPSILON) || round_f32_ok(f)),
        _ => true,
    };
    if ok {
        return None;
    }
    let msg = if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    };
    Some(OpenAPIError::Plain(msg))
}

/// `strconv.ParseFloat(s, 32)` succeeds: the value rounds to a finite float32.
fn round_f32_ok(f: f64) -> bool {
    (f as f32).is_finite()
}

/// `MultipleOfNativeType`.
fn multiple_of_native(path: &str, val: Num, factor: f64) -> Option<OpenAPIError> {
    match val {
        Num::Int(data) => {
            let factor = go_f64_to_i64(factor);
            if factor <= 0 {
                return Some(must_be_positive(path, Num::Int(factor)));
            }
            if (data / factor) * factor != data {
                return Some(not_multiple_of(path, Num::Int(factor), val));
            }
            None
        }
        Num::Float(f) => multiple_of_float(path, f, factor),
    }
}

/// `MultipleOf` on float64s.
fn multiple_of_float(path: &str, data: f64, factor: f64) -> Option<OpenAPIError> {
    if factor <= 0.0 {
        return Some(must_be_positive(path, Num::Float(factor)));
    }
    let mult = if factor < 1.0 {
        1.0 / factor * data
    } else {
        data / factor
    };
    (!is_float64_a_json_integer(mult))
        .then(|| not_multiple_of(path, Num::Float(factor), Num::Float(data)))
}

fn must_be_positive(path: &str, factor: Num) -> OpenAPIError {
    OpenAPIError::validation(
        Code::Other,
        path,
        Some(factor.value()),
        format!(
            "factor MultipleOf declared for {path} must be positive: {}",
            factor.go()
        ),
    )
}

fn not_multiple_of(path: &str, factor: Num, data: Num) -> OpenAPIError {
    OpenAPIError::validation(
        Code::Other,
        path,
        Some(data.value()),
        format!("{path} in body should be a multiple of {}", factor.go()),
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Max,
    Min,
}

/// `MaximumNativeType` / `MinimumNativeType`.
fn bound_native(
    path: &str,
    val: Num,
    limit: f64,
    exclusive: bool,
    b: Bound,
) -> Option<OpenAPIError> {
    match val {
        Num::Int(_) => bound(path, val, Num::Int(go_f64_to_i64(limit)), exclusive, b),
        Num::Float(_) => bound(path, val, Num::Float(limit), exclusive, b),
    }
}

/// `Maximum(Int)` / `Minimum(Int)`: compares in the limit's type.
fn bound(path: &str, data: Num, limit: Num, exclusive: bool, b: Bound) -> Option<OpenAPIError> {
    let ord = match (data, limit) {
        (Num::Int(d), Num::Int(l)) => d.partial_cmp(&l),
        _ => data.as_f64().partial_cmp(&limit.as_f64()),
    }?;
    use std::cmp::Ordering::*;
    let fails = match (b, exclusive) {
        (Bound::Max, false) => ord == Greater,
        (Bound::Max, true) => ord != Less,
        (Bound::Min, false) => ord == Less,
        (Bound::Min, true) => ord != Greater,
    };
    if !fails {
        return None;
    }
    let relation = match (b, exclusive) {
        (Bound::Max, false) => "less than or equal to",
        (Bound::Max, true) => "less than",
        (Bound::Min, false) => "greater than or equal to",
        (Bound::Min, true) => "greater than",
    };
    Some(OpenAPIError::validation(
        Code::Other,
        path,
        Some(data.value()),
        format!("{path} in body should be {relation} {}", limit.go()),
    ))
}

/// Whether `data` equals the enum member `e` after Go's `reflect.Value.Convert` to `e`'s type
/// (numbers convert to each other, integers to strings as code points; a null member matches
/// nothing).
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (_, Value::Null) => false,
        (Value::Number(d), Value::Number(n)) => {
            let converted = match (Num::of(d), Num::of(n)) {
                (Num::Int(i), Num::Float(_)) => Num::Float(i as f64),
                (Num::Float(f), Num::Int(_)) => Num::Int(go_f64_to_i64(f)),
                (x, _) => x,
            };
            converted == Num::of(n)
        }
        (Value::Number(d), Value::String(s)) => match Num::of(d) {
            Num::Int(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                s.chars().eq(std::iter::once(c))
            }
            Num::Float(_) => false,
        },
        (Value::String(_), Value::String(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Array(_), Value::Array(_))
        | (Value::Object(_), Value::Object(_)) => go_deep_equal(data, e),
        _ => false,
    }
}

/// `reflect.DeepEqual` on decoded JSON: `int64` and `float64` are different types.
pub(super) fn go_deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (Num::of(x), Num::of(y)) {
            (Num::Int(x), Num::Int(y)) => x == y,
            (Num::Float(x), Num::Float(y)) => x == y,
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| go_deep_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| go_deep_equal(v, w)))
        }
        _ => a == b,
    }
}

/// go-openapi's errors for a count of `noun` (`items`, `properties`) outside the schema's
/// `(min, max)`: `MinItems`/`MaxItems`, `MinProperties`/`MaxProperties`.
fn add_count_errors(
    out: &mut Outcome,
    path: &str,
    count: i64,
    (min, max): (Option<i64>, Option<i64>),
    noun: &str,
    max_code: Code,
) {
    if let Some(min) = min
        && count < min
    {
        out.add(OpenAPIError::validation(
            Code::Other,
            path,
            Some(BadValue::Int(count)),
            format!("{path} in body should have at least {min} {noun}"),
        ));
    }
    if let Some(max) = max
        && count > max
    {
        out.add(OpenAPIError::Validation {
            code: max_code,
            name: path.to_string(),
            value: Some(BadValue::Int(count)),
            valid: Some(max),
            values: vec![],
            message: format!("{path} in body should have at most {max} {noun}"),
        });
    }
}
