//! OpenAPI v3 schemas as CRDs carry them (`JSONSchemaProps`), read from JSON values, and their
//! CEL types (`DeclType`, k8s.io/apiserver pkg/cel/common/schemas.go `SchemaDeclType`).

pub mod catalog;
pub mod decltype;
pub mod path;

use indexmap::IndexMap;
use serde_json::Value;

/// One `x-kubernetes-validations` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValidationRule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

/// `additionalProperties`: a boolean or a schema.
#[derive(Clone, Debug, PartialEq)]
pub enum AdditionalProperties {
    Bool(bool),
    Schema(Box<Schema>),
}

/// `dependencies` values: a schema or a list of property names.
#[derive(Clone, Debug, PartialEq)]
pub enum Dependency {
    Schema(Box<Schema>),
    Properties(Vec<String>),
}

/// The JSON-schema keywords a CRD schema may not use (`id`, `$schema`, `$ref`,
/// `patternProperties`, `dependencies`, `additionalItems`, `definitions`). They are rare, so they
/// live behind one pointer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unsupported {
    pub id: String,
    pub schema: String,
    pub ref_: Option<String>,
    pub pattern_properties: IndexMap<String, Schema>,
    /// `None` when absent or null; `Some` (maybe empty) when given.
    pub dependencies: Option<IndexMap<String, Dependency>>,
    pub additional_items: Option<AdditionalProperties>,
    pub definitions: IndexMap<String, Schema>,
}

/// A JSON schema node with the fields that CEL typing, cardinality and validation read.
///
/// Collections that Go keeps as "non-nil but empty" when given as `[]`/`{}` (which matters for
/// the API server's `reflect.DeepEqual` checks) have a `*_set` flag.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    pub type_: String,
    pub format: String,
    /// `description` is non-empty (its text is never needed).
    pub has_description: bool,
    /// `title` is non-empty.
    pub has_title: bool,
    pub pattern: String,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub min_length: Option<i64>,
    pub min_items: Option<i64>,
    pub min_properties: Option<i64>,
    /// `externalDocs` is given (not null).
    pub external_docs: bool,
    /// `example` is given (not null).
    pub example: bool,
    pub required_set: bool,
    pub properties_set: bool,
    pub x_list_map_keys_set: bool,
    pub x_validations_set: bool,
    pub unsupported: Option<Box<Unsupported>>,
    pub properties: IndexMap<String, Schema>,
    pub items: Option<Box<Schema>>,
    /// `items` given as an array of schemas (not structural).
    pub items_array: Vec<Schema>,
    /// `items` as given when it is an array (even empty), for errors that render it.
    pub items_array_raw: Option<Box<Value>>,
    pub additional_properties: Option<AdditionalProperties>,
    pub required: Vec<String>,
    pub max_length: Option<i64>,
    pub max_items: Option<i64>,
    pub max_properties: Option<i64>,
    pub enum_values: Vec<Value>,
    pub default: Option<Value>,
    pub nullable: bool,
    pub unique_items: bool,
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    pub x_embedded_resource: bool,
    pub x_int_or_string: bool,
    pub x_preserve_unknown_fields: Option<bool>,
    pub x_list_type: Option<String>,
    pub x_list_map_keys: Vec<String>,
    pub x_map_type: Option<String>,
    pub x_validations: Vec<ValidationRule>,
}

/// A problem reading a schema: the JSON path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaReadError {
    pub path: String,
    pub message: String,
}

/// Nesting beyond this is refused (the API server would refuse the request size long before).
pub const MAX_SCHEMA_DEPTH: usize = 1000;

impl Schema {
    /// Reads a schema from JSON. Unknown keys are ignored; values of the wrong JSON type are
    /// errors naming the field path.
    pub fn from_json(v: &Value, path: &str) -> Result<Schema, SchemaReadError> {
        Self::read(v, &LazyPath::root(path), 0)
    }

    fn read(v: &Value, path: &LazyPath<'_>, depth: usize) -> Result<Schema, SchemaReadError> {
        crate::budget::charge(1);
        let err = |p: String, m: &str| SchemaReadError {
            path: p,
            message: m.to_string(),
        };
        if depth > MAX_SCHEMA_DEPTH {
            return Err(err(path.to_string(), "schema nesting is too deep"));
        }
        let obj = match v {
            Value::Object(o) => o,
            Value::Null => return Ok(Schema::default()),
            _ => return Err(err(path.to_string(), "must be an object")),
        };
        let mut s = Schema::default();
        for (k, val) in obj {
            let p = || format!("{path}.{k}");
            let string = || str_of(val).ok_or_else(|| err(p(), "must be a string"));
            let number = || float_of(val).ok_or_else(|| err(p(), "must be a number"));
            let integer = || int_of(val).ok_or_else(|| err(p(), "must be an integer"));
            let strings = || str_list(val).ok_or_else(|| err(p(), "must be a list of strings"));
            // An object (of schemas, or dependencies) or null.
            let object = || match val {
                Value::Object(o) => Ok(Some(o)),
                Value::Null => Ok(None),
                _ => Err(err(p(), "must be an object")),
            };
            // The schemas below this key: `.k`, `.k[name]`, `.k[i]`.
            let child = || Self::read(val, &path.field(k), depth + 1);
            let keyed = |name: &str, v: &Value| Self::read(v, &path.keyed(k, name), depth + 1);
            let indexed = |i: usize, v: &Value| Self::read(v, &path.indexed(k, i), depth + 1);
            let additional = || {
                Ok(match val {
                    Value::Null => None,
                    Value::Bool(b) => Some(AdditionalProperties::Bool(*b)),
                    _ => Some(AdditionalProperties::Schema(Box::new(child()?))),
                })
            };
            match k.as_str() {
                "type" => s.type_ = string()?,
                "format" => s.format = string()?,
                "description" | "title" => {
                    let non_empty = match val {
                        Value::String(t) => !t.is_empty(),
                        Value::Null => false,
                        _ => return Err(err(p(), "must be a string")),
                    };
                    if k == "description" {
                        s.has_description = non_empty;
                    } else {
                        s.has_title = non_empty;
                    }
                }
                "pattern" => s.pattern = string()?,
                "maximum" => s.maximum = number()?,
                "minimum" => s.minimum = number()?,
                "multipleOf" => s.multiple_of = number()?,
                "exclusiveMaximum" => s.exclusive_maximum = val.as_bool().unwrap_or(false),
                "exclusiveMinimum" => s.exclusive_minimum = val.as_bool().unwrap_or(false),
                "minLength" => s.min_length = integer()?,
                "minItems" => s.min_items = integer()?,
                "minProperties" => s.min_properties = integer()?,
                "externalDocs" => s.external_docs = !val.is_null(),
                "example" => s.example = !val.is_null(),
                "id" | "$schema" => {
                    let v = string()?;
                    let u = s.unsupported.get_or_insert_default();
                    if k == "id" {
                        u.id = v;
                    } else {
                        u.schema = v;
                    }
                }
                "$ref" if !val.is_null() => {
                    s.unsupported.get_or_insert_default().ref_ = Some(string()?);
                }
                "patternProperties" | "definitions" => {
                    let Some(props) = object()? else {
                        continue;
                    };
                    let mut map = IndexMap::new();
                    for (name, ps) in props {
                        map.insert(name.clone(), keyed(name, ps)?);
                    }
                    let u = s.unsupported.get_or_insert_default();
                    if k == "definitions" {
                        u.definitions = map;
                    } else {
                        u.pattern_properties = map;
                    }
                }
                "dependencies" => {
                    let Some(deps) = object()? else {
                        continue;
                    };
                    let mut map = IndexMap::new();
                    for (name, d) in deps {
                        let dep = match d {
                            Value::Array(_) => Dependency::Properties(
                                str_list(d).ok_or_else(|| err(p(), "must be a list of strings"))?,
                            ),
                            _ => Dependency::Schema(Box::new(keyed(name, d)?)),
                        };
                        map.insert(name.clone(), dep);
                    }
                    s.unsupported.get_or_insert_default().dependencies = Some(map);
                }
                "additionalItems" => {
                    if let Some(a) = additional()? {
                        s.unsupported.get_or_insert_default().additional_items = Some(a);
                    }
                }
                "properties" => {
                    let Some(props) = object()? else {
                        continue;
                    };
                    s.properties_set = true;
                    // Sized once: a schema is hundreds of bytes, and growing the map by
                    // doubling copies every property read so far (a third of the CLI's page
                    // faults on the corpus).
                    s.properties.reserve_exact(props.len());
                    for (name, ps) in props {
                        s.properties.insert(name.clone(), keyed(name, ps)?);
                    }
                }
                "items" => match val {
                    Value::Array(a) => {
                        s.items_array_raw = Some(Box::new(val.clone()));
                        for (i, it) in a.iter().enumerate() {
                            s.items_array.push(indexed(i, it)?);
                        }
                    }
                    Value::Null => {}
                    _ => s.items = Some(Box::new(child()?)),
                },
                "additionalProperties" => s.additional_properties = additional()?,
                "required" => {
                    s.required = strings()?;
                    s.required_set = !val.is_null();
                }
                "maxLength" => s.max_length = integer()?,
                "maxItems" => s.max_items = integer()?,
                "maxProperties" => s.max_properties = integer()?,
                "enum" => {
                    if let Value::Array(a) = val {
                        s.enum_values = a.clone();
                    }
                }
                "default" => {
                    s.default = if val.is_null() {
                        None
                    } else {
                        Some(val.clone())
                    }
                }
                "nullable" => s.nullable = val.as_bool().unwrap_or(false),
                "uniqueItems" => s.unique_items = val.as_bool().unwrap_or(false),
                "allOf" | "anyOf" | "oneOf" => {
                    let mut list = Vec::new();
                    if let Value::Array(a) = val {
                        for (i, it) in a.iter().enumerate() {
                            list.push(indexed(i, it)?);
                        }
                    }
                    match k.as_str() {
                        "allOf" => s.all_of = list,
                        "anyOf" => s.any_of = list,
                        _ => s.one_of = list,
                    }
                }
                "not" => s.not = Some(Box::new(child()?)),
                "x-kubernetes-embedded-resource" => {
                    s.x_embedded_resource = val.as_bool().unwrap_or(false)
                }
                "x-kubernetes-int-or-string" => s.x_int_or_string = val.as_bool().unwrap_or(false),
                "x-kubernetes-preserve-unknown-fields" => {
                    s.x_preserve_unknown_fields = val.as_bool()
                }
                "x-kubernetes-list-type" => s.x_list_type = val.as_str().map(str::to_string),
                "x-kubernetes-map-type" => s.x_map_type = val.as_str().map(str::to_string),
                "x-kubernetes-list-map-keys" => {
                    s.x_list_map_keys = str_list(val).unwrap_or_default();
                    s.x_list_map_keys_set = val.is_array();
                }
                "x-kubernetes-validations" => {
                    let Value::Array(a) = val else {
                        if val.is_null() {
                            continue;
                        }
                        return Err(err(p(), "must be a list"));
                    };
                    s.x_validations_set = true;
                    for (i, r) in a.iter().enumerate() {
                        let Value::Object(ro) = r else {
                            return Err(err(
                                format!("{path}.x-kubernetes-validations[{i}]"),
                                "must be an object",
                            ));
                        };
                        let get = |key: &str| ro.get(key).and_then(str_of).unwrap_or_default();
                        s.x_validations.push(ValidationRule {
                            rule: get("rule"),
                            message: get("message"),
                            message_expression: get("messageExpression"),
                            reason: ro.get("reason").and_then(str_of),
                            field_path: get("fieldPath"),
                            optional_old_self: ro.get("optionalOldSelf").and_then(Value::as_bool),
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(s)
    }

    pub fn additional_properties_schema(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// Whether the schema or any schema below it has `x-kubernetes-validations`.
    pub fn has_validations(&self) -> bool {
        !self.x_validations.is_empty()
            || self.properties.values().any(Schema::has_validations)
            || self.items.as_ref().is_some_and(|i| i.has_validations())
            || self
                .additional_properties_schema()
                .is_some_and(Schema::has_validations)
    }
}

fn str_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => Some(String::new()),
        _ => None,
    }
}

fn str_list(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Array(a) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
        Value::Null => Some(vec![]),
        _ => None,
    }
}

fn float_of(v: &Value) -> Option<Option<f64>> {
    match v {
        Value::Null => Some(None),
        Value::Number(n) => n.as_f64().map(Some),
        _ => None,
    }
}

fn int_of(v: &Value) -> Option<Option<i64>> {
    match v {
        Value::Null => Some(None),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(Some(i))
            } else if n.as_u64().is_some() {
                Some(Some(i64::MAX))
            } else {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| Some(f as i64))
            }
        }
        _ => None,
    }
}

/// A field path built as the walk goes down, rendered only for an error message: a schema `d`
/// levels deep holds `d` small steps, not `d` paths of up to `d` steps each.
pub(crate) struct LazyPath<'a> {
    parent: Option<&'a LazyPath<'a>>,
    step: PathStep<'a>,
}

enum PathStep<'a> {
    Root(&'a str),
    /// `.field`
    Field(&'a str),
    /// `.field[key]`
    Keyed(&'a str, &'a str),
    /// `.field[i]`
    Indexed(&'a str, usize),
}

impl<'a> LazyPath<'a> {
    pub(crate) fn root(path: &'a str) -> Self {
        LazyPath {
            parent: None,
            step: PathStep::Root(path),
        }
    }

    fn field(&'a self, f: &'a str) -> Self {
        LazyPath {
            parent: Some(self),
            step: PathStep::Field(f),
        }
    }

    fn keyed(&'a self, f: &'a str, key: &'a str) -> Self {
        LazyPath {
            parent: Some(self),
            step: PathStep::Keyed(f, key),
        }
    }

    fn indexed(&'a self, f: &'a str, i: usize) -> Self {
        LazyPath {
            parent: Some(self),
            step: PathStep::Indexed(f, i),
        }
    }
}

impl std::fmt::Display for LazyPath<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut steps = Vec::new();
        let mut at = Some(self);
        while let Some(p) = at {
            steps.push(&p.step);
            at = p.parent;
        }
        for step in steps.into_iter().rev() {
            match step {
                PathStep::Root(r) => write!(out, "{r}")?,
                PathStep::Field(f) => write!(out, ".{f}")?,
                PathStep::Keyed(f, k) => write!(out, ".{f}[{k}]")?,
                PathStep::Indexed(f, i) => write!(out, ".{f}[{i}]")?,
            }
        }
        Ok(())
    }
}
