//! CEL types as the cel-go checker sees them (`common/types/types.go`), with the same names and
//! the same formatting (`checker/format.go` `FormatCELType`) so that error messages match.

use std::fmt;
use std::sync::Arc;

/// A checked CEL type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    Dyn,
    Any,
    Bool,
    Bytes,
    Double,
    Duration,
    Error,
    Int,
    Null,
    String,
    Timestamp,
    Uint,
    List(Arc<Type>),
    Map(Arc<Type>, Arc<Type>),
    /// Abstract types: `optional_type(T)`, `net.IP`, and the checker's `function(R, A...)`.
    Opaque(Arc<str>, Arc<[Type]>),
    /// Object (message) types: schema objects, `kubernetes.URL`, ...
    Struct(Arc<str>),
    /// `type` (no parameter) or `type(T)`.
    TypeOf(Option<Arc<Type>>),
    TypeParam(Arc<str>),
    /// cel-go's nil `*types.Type` (`UnspecifiedKind`): the type of a field a type provider
    /// declares without one (every field name of the mutation type `JSONPatch` but `op`,
    /// `from`, `path` and `value`). Formats as `''`, is assignable from `dyn` only.
    Unspecified,
}

/// The kinds of cel-go's `types.Kind` that the checker and the estimator branch on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Dyn,
    Any,
    Bool,
    Bytes,
    Double,
    Duration,
    Error,
    Int,
    List,
    Map,
    Null,
    Opaque,
    String,
    Struct,
    Timestamp,
    Type,
    TypeParam,
    Uint,
    Unspecified,
}

pub const OPTIONAL_TYPE: &str = "optional_type";

impl Type {
    pub fn list(elem: Type) -> Type {
        Type::List(Arc::new(elem))
    }
    pub fn map(key: Type, val: Type) -> Type {
        Type::Map(Arc::new(key), Arc::new(val))
    }
    pub fn optional(t: Type) -> Type {
        Type::Opaque(OPTIONAL_TYPE.into(), Arc::from(vec![t]))
    }
    pub fn opaque(name: &str, params: Vec<Type>) -> Type {
        Type::Opaque(name.into(), Arc::from(params))
    }
    pub fn type_of(t: Type) -> Type {
        Type::TypeOf(Some(Arc::new(t)))
    }
    pub fn param(name: &str) -> Type {
        Type::TypeParam(name.into())
    }
    pub fn object(name: &str) -> Type {
        Type::Struct(name.into())
    }

    pub fn kind(&self) -> Kind {
        match self {
            Type::Dyn => Kind::Dyn,
            Type::Any => Kind::Any,
            Type::Bool => Kind::Bool,
            Type::Bytes => Kind::Bytes,
            Type::Double => Kind::Double,
            Type::Duration => Kind::Duration,
            Type::Error => Kind::Error,
            Type::Int => Kind::Int,
            Type::Null => Kind::Null,
            Type::String => Kind::String,
            Type::Timestamp => Kind::Timestamp,
            Type::Uint => Kind::Uint,
            Type::List(_) => Kind::List,
            Type::Map(..) => Kind::Map,
            Type::Opaque(..) => Kind::Opaque,
            Type::Struct(_) => Kind::Struct,
            Type::TypeOf(_) => Kind::Type,
            Type::TypeParam(_) => Kind::TypeParam,
            Type::Unspecified => Kind::Unspecified,
        }
    }

    /// cel-go `Type.TypeName()`.
    pub fn type_name(&self) -> &str {
        match self {
            Type::Dyn => "dyn",
            Type::Any => "google.protobuf.Any",
            Type::Bool => "bool",
            Type::Bytes => "bytes",
            Type::Double => "double",
            Type::Duration => "google.protobuf.Duration",
            Type::Error => "error",
            Type::Int => "int",
            Type::Null => "null_type",
            Type::String => "string",
            Type::Timestamp => "google.protobuf.Timestamp",
            Type::Uint => "uint",
            Type::List(_) => "list",
            Type::Map(..) => "map",
            Type::Opaque(n, _) | Type::Struct(n) | Type::TypeParam(n) => n,
            Type::TypeOf(_) => "type",
            Type::Unspecified => "",
        }
    }

    /// cel-go `Type.Parameters()`.
    pub fn parameters(&self) -> Vec<Type> {
        match self {
            Type::List(e) => vec![(**e).clone()],
            Type::Map(k, v) => vec![(**k).clone(), (**v).clone()],
            Type::Opaque(_, p) => p.to_vec(),
            Type::TypeOf(Some(t)) => vec![(**t).clone()],
            _ => Vec::new(),
        }
    }

    pub fn param_count(&self) -> usize {
        match self {
            Type::List(_) | Type::TypeOf(Some(_)) => 1,
            Type::Map(..) => 2,
            Type::Opaque(_, p) => p.len(),
            _ => 0,
        }
    }

    /// cel-go `IsExactType`.
    pub fn is_exact(&self, other: &Type) -> bool {
        // A nil `*Type` is exactly nothing, not even another nil.
        self == other && *self != Type::Unspecified
    }

    pub fn is_dyn_or_any(&self) -> bool {
        matches!(self, Type::Dyn | Type::Any)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Type::Error)
    }

    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Opaque(n, p) if &**n == OPTIONAL_TYPE && p.len() == 1)
    }

    /// The `T` of `optional_type(T)`, with whether it was optional.
    pub fn unwrap_optional(&self) -> (&Type, bool) {
        match self {
            Type::Opaque(n, p) if &**n == OPTIONAL_TYPE && p.len() == 1 => (&p[0], true),
            _ => (self, false),
        }
    }

    /// cel-go `Type.IsAssignableType` with the default rule (no wrapper types exist here).
    pub fn is_assignable_type(&self, from: &Type) -> bool {
        if *self == Type::Unspecified {
            return false;
        }
        if self == from || matches!(self, Type::Dyn | Type::Any | Type::TypeParam(_)) {
            return true;
        }
        if self.kind() != from.kind()
            || self.type_name() != from.type_name()
            || self.param_count() != from.param_count()
        {
            return false;
        }
        self.parameters()
            .iter()
            .zip(from.parameters().iter())
            .all(|(a, b)| a.is_assignable_type(b))
    }

    /// Whether the type contains a type parameter anywhere.
    pub fn has_type_params(&self) -> bool {
        match self {
            Type::TypeParam(_) => true,
            Type::List(e) => e.has_type_params(),
            Type::Map(k, v) => k.has_type_params() || v.has_type_params(),
            Type::Opaque(_, p) => p.iter().any(Type::has_type_params),
            Type::TypeOf(Some(t)) => t.has_type_params(),
            _ => false,
        }
    }

    /// Names of the type parameters in the type, in first-seen order.
    pub fn collect_type_params(&self, out: &mut Vec<Arc<str>>) {
        match self {
            Type::TypeParam(n) if !out.contains(n) => out.push(n.clone()),
            Type::List(e) => e.collect_type_params(out),
            Type::Map(k, v) => {
                k.collect_type_params(out);
                v.collect_type_params(out)
            }
            Type::Opaque(_, p) => p.iter().for_each(|t| t.collect_type_params(out)),
            Type::TypeOf(Some(t)) => t.collect_type_params(out),
            _ => {}
        }
    }
}

/// cel-go `checker.FormatCELType`.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => return f.write_str("any"),
            Type::Duration => return f.write_str("duration"),
            Type::Error => return f.write_str("!error!"),
            Type::Null => return f.write_str("null"),
            Type::Timestamp => return f.write_str("timestamp"),
            Type::TypeParam(n) => return f.write_str(n),
            Type::Opaque(n, p) if &**n == "function" && !p.is_empty() => {
                return format_function(f, Some(&p[0]), &p[1..], false);
            }
            _ => {}
        }
        let params = self.parameters();
        if params.is_empty() {
            return f.write_str(self.type_name());
        }
        write!(f, "{}(", self.type_name())?;
        for (i, p) in params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}")?;
        }
        f.write_str(")")
    }
}

/// cel-go `formatFunctionDeclType`: `(int, string) -> bool`, `string.(int)`.
pub fn format_function(
    f: &mut dyn fmt::Write,
    result: Option<&Type>,
    args: &[Type],
    is_instance: bool,
) -> fmt::Result {
    let mut args = args;
    if is_instance && !args.is_empty() {
        write!(f, "{}.", args[0])?;
        args = &args[1..];
    }
    f.write_str("(")?;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{a}")?;
    }
    f.write_str(")")?;
    if let Some(r) = result {
        write!(f, " -> {r}")?;
    }
    Ok(())
}

pub fn format_signature(args: &[Type], is_instance: bool) -> String {
    let mut s = String::new();
    let _ = format_function(&mut s, None, args, is_instance);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_cel_go() {
        assert_eq!(Type::list(Type::Int).to_string(), "list(int)");
        assert_eq!(
            Type::map(Type::String, Type::Dyn).to_string(),
            "map(string, dyn)"
        );
        assert_eq!(
            Type::optional(Type::Timestamp).to_string(),
            "optional_type(timestamp)"
        );
        assert_eq!(Type::type_of(Type::Int).to_string(), "type(int)");
        assert_eq!(Type::TypeOf(None).to_string(), "type");
        assert_eq!(Type::Null.to_string(), "null");
        assert_eq!(
            format_signature(&[Type::String, Type::Int], true),
            "string.(int)"
        );
        assert_eq!(
            format_signature(&[Type::Int, Type::String], false),
            "(int, string)"
        );
    }
}
