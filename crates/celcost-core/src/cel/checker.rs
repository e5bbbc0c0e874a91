//! The type checker: cel-go `checker/checker.go` and `checker/types.go`, restated.
//!
//! It records a type for every expression and the overload ids every call resolved to (all of
//! them when several match, as with `dyn` operands), rewrites qualified identifiers and
//! namespaced calls the way cel-go does, and reports cel-go's error messages.

use std::collections::HashMap;
use std::sync::Arc;

use super::ast::{Expr, ExprId, ExprKind, Literal, ParsedExpr};
use super::decls::{Declarations, Function};
use super::types::{Kind, Type, format_signature};
use super::version::consulted;

/// Object types the checker can select fields from (schema objects, Kubernetes request
/// objects). The field type is `None` when the field does not exist.
pub trait TypeProvider {
    fn has_struct_type(&self, name: &str) -> bool;
    fn field_type(&self, struct_name: &str, field: &str) -> Option<Type>;
}

/// A provider without object types.
pub struct NoTypes;
impl TypeProvider for NoTypes {
    fn has_struct_type(&self, _: &str) -> bool {
        false
    }
    fn field_type(&self, _: &str, _: &str) -> Option<Type> {
        None
    }
}

/// What an identifier or call resolved to.
#[derive(Clone, Debug, PartialEq)]
pub enum Reference {
    Ident(String),
    Overloads(Vec<Arc<str>>),
}

/// A checked expression: the (rewritten) AST with a type and a reference per node id.
#[derive(Clone, Debug)]
pub struct CheckedExpr {
    pub parsed: ParsedExpr,
    pub types: Vec<Option<Type>>,
    pub refs: Vec<Option<Reference>>,
}

impl CheckedExpr {
    pub fn expr(&self) -> &Expr {
        &self.parsed.expr
    }
    pub fn type_of(&self, id: ExprId) -> &Type {
        static DYN: Type = Type::Dyn;
        self.types
            .get(id as usize)
            .and_then(|t| t.as_ref())
            .unwrap_or(&DYN)
    }
    pub fn output_type(&self) -> &Type {
        self.type_of(self.parsed.expr.id)
    }
    pub fn overload_ids(&self, id: ExprId) -> &[Arc<str>] {
        match self.refs.get(id as usize) {
            Some(Some(Reference::Overloads(o))) => o,
            _ => &[],
        }
    }
    /// Whether an identifier with this name is referenced (cel-go's reference map).
    pub fn references_ident(&self, name: &str) -> bool {
        self.refs
            .iter()
            .any(|r| matches!(r, Some(Reference::Ident(n)) if n == name))
    }
}

/// A check error with its location.
#[derive(Clone, Debug)]
pub struct CheckError {
    pub id: ExprId,
    pub message: String,
}

/// The environment the checker resolves names in.
pub struct CheckEnv<'a> {
    pub decls: &'a Declarations,
    /// Variables declared for this compile (`self`, `oldSelf`, `object`, ...).
    pub vars: &'a [(String, Type)],
    pub provider: &'a dyn TypeProvider,
    /// `HomogeneousAggregateLiterals` (always on in Kubernetes).
    pub homogeneous_literals: bool,
    /// cel-go v0.16's checker ([`super::minor::Minor::untyped_undeclared_member_calls`]): a
    /// call of an undeclared member function gets no type (`<nil>` where it is an argument, and
    /// no overload takes it), and `_&&_` / `_||_` are resolved as any other overload.
    pub untyped_undeclared_member_calls: bool,
}

/// Type-parameter substitutions, with an undo log: cel-go copies its mapping for every
/// assignability check (and keeps the copy on success), which is quadratic in the number of
/// calls with type parameters (every `==`, `+`, ...); here a failed check undoes its own
/// insertions instead, in time proportional to what it changed.
#[derive(Default)]
struct Mapping {
    map: HashMap<Arc<str>, Type>,
    /// (parameter, previous substitution) of every insertion since the last `mark`.
    undo: Vec<(Arc<str>, Option<Type>)>,
}

impl Mapping {
    fn get(&self, name: &str) -> Option<&Type> {
        self.map.get(name)
    }

    fn insert(&mut self, name: Arc<str>, t: Type) {
        let prev = self.map.insert(name.clone(), t);
        self.undo.push((name, prev));
    }

    /// Runs `f`, keeping its insertions when it returns true and undoing them otherwise.
    fn transaction(&mut self, f: impl FnOnce(&mut Mapping) -> bool) -> bool {
        let mark = self.undo.len();
        let ok = f(self);
        if !ok {
            while self.undo.len() > mark {
                let (name, prev) = self.undo.pop().expect("an entry above the mark");
                match prev {
                    Some(t) => self.map.insert(name, t),
                    None => self.map.remove(&name),
                };
            }
        } else if mark == 0 {
            // Committed at the outermost level: nothing left to undo.
            self.undo.clear();
        }
        ok
    }
}

struct Checker<'a> {
    env: &'a CheckEnv<'a>,
    scopes: Vec<(String, Type)>,
    types: Vec<Option<Type>>,
    refs: Vec<Option<Reference>>,
    errors: Vec<CheckError>,
    mapping: Mapping,
    free_type_vars: usize,
}

/// Type-checks `parsed` in `env`. Errors are returned in report order (unsorted).
pub fn check(
    parsed: ParsedExpr,
    env: &CheckEnv<'_>,
) -> Result<CheckedExpr, Box<(ParsedExpr, Vec<CheckError>)>> {
    let n = parsed.max_id as usize + 1;
    let mut c = Checker {
        env,
        scopes: Vec::new(),
        types: vec![None; n],
        refs: vec![None; n],
        errors: Vec::new(),
        mapping: Mapping::default(),
        free_type_vars: 0,
    };
    let mut parsed = parsed;
    c.check(&mut parsed.expr);
    for t in c.types.iter_mut().flatten() {
        *t = substitute(&c.mapping, t, true);
    }
    if !c.errors.is_empty() {
        return Err(Box::new((parsed, c.errors)));
    }
    Ok(CheckedExpr {
        parsed,
        types: c.types,
        refs: c.refs,
    })
}

impl Checker<'_> {
    fn set_type(&mut self, id: ExprId, t: Type) {
        let slot = &mut self.types[id as usize];
        if let Some(old) = slot
            && *old != t
        {
            self.errors.push(CheckError {
                id,
                message: format!(
                    "incompatible type already exists for expression: old:{old}, new:{t}"
                ),
            });
            return;
        }
        *slot = Some(t);
    }

    fn get_type(&self, id: ExprId) -> Type {
        self.types[id as usize].clone().unwrap_or(Type::Error)
    }

    fn error(&mut self, id: ExprId, message: String) {
        self.errors.push(CheckError { id, message });
    }

    fn lookup_ident(&self, name: &str) -> Option<Type> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        if let Some((_, t)) = self.env.vars.iter().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        if let Some(t) = self.env.decls.idents.get(name) {
            return Some(t.clone());
        }
        if self.env.provider.has_struct_type(name) {
            return Some(Type::type_of(Type::object(name)));
        }
        None
    }

    fn lookup_function(&self, name: &str) -> Option<&Function> {
        self.env.decls.functions.get(name)
    }

    fn undeclared(&mut self, id: ExprId, name: &str) {
        self.error(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
    }

    fn check(&mut self, e: &mut Expr) {
        crate::budget::charge(1);
        let id = e.id;
        match &mut e.kind {
            ExprKind::Literal(l) => {
                let t = match l {
                    Literal::Bool(_) => Type::Bool,
                    Literal::Int(_) => Type::Int,
                    Literal::Uint(_) => Type::Uint,
                    Literal::Double(_) => Type::Double,
                    Literal::String(_) => Type::String,
                    Literal::Bytes(_) => Type::Bytes,
                    Literal::Null => Type::Null,
                };
                self.set_type(id, t);
            }
            ExprKind::Ident(name) => {
                let name = name.clone();
                match self.lookup_ident(&name) {
                    Some(t) => {
                        self.set_type(id, t);
                        self.refs[id as usize] = Some(Reference::Ident(name));
                    }
                    None => {
                        self.set_type(id, Type::Error);
                        self.undeclared(id, &name);
                    }
                }
            }
            ExprKind::Select { .. } => self.check_select(e),
            ExprKind::Call { .. } => self.check_call(e),
            ExprKind::List { .. } => self.check_list(e),
            ExprKind::Map { .. } => self.check_map(e),
            ExprKind::Struct { .. } => self.check_struct(e),
            ExprKind::Comprehension(_) => self.check_comprehension(e),
        }
    }

    fn check_select(&mut self, e: &mut Expr) {
        let id = e.id;
        if let Some(qname) = e.qualified_name()
            && let Some(t) = self.lookup_ident(&qname)
        {
            self.set_type(id, t);
            self.refs[id as usize] = Some(Reference::Ident(qname.clone()));
            e.kind = ExprKind::Ident(qname);
            return;
        }
        let ExprKind::Select {
            operand,
            field,
            test_only,
        } = &mut e.kind
        else {
            unreachable!()
        };
        let field = field.clone();
        let test_only = *test_only;
        let mut result = self.check_select_field(id, operand, &field, false);
        if test_only {
            result = Type::Bool;
        }
        let t = substitute(&self.mapping, &result, false);
        self.set_type(id, t);
    }

    fn check_select_field(
        &mut self,
        id: ExprId,
        operand: &mut Expr,
        field: &str,
        optional: bool,
    ) -> Type {
        self.check(operand);
        let operand_type = substitute(&self.mapping, &self.get_type(operand.id), false);
        let (target, is_opt) = operand_type.unwrap_optional();
        let target = target.clone();
        let result = match target.kind() {
            Kind::Map => target.parameters()[1].clone(),
            Kind::Struct => {
                let name = target.type_name().to_string();
                self.lookup_field_type(id, &name, field)
                    .unwrap_or(Type::Error)
            }
            Kind::TypeParam => {
                self.is_assignable(&Type::Dyn, &target);
                Type::Dyn
            }
            _ => {
                if !matches!(target.kind(), Kind::Dyn | Kind::Any | Kind::Error) {
                    self.error(
                        id,
                        format!("type '{target}' does not support field selection"),
                    );
                }
                Type::Dyn
            }
        };
        if is_opt || optional {
            Type::optional(result)
        } else {
            result
        }
    }

    fn lookup_field_type(&mut self, id: ExprId, struct_name: &str, field: &str) -> Option<Type> {
        if !self.env.provider.has_struct_type(struct_name) {
            self.error(
                id,
                format!("unexpected failed resolution of '{struct_name}'"),
            );
            return None;
        }
        match self.env.provider.field_type(struct_name, field) {
            Some(t) => Some(t),
            None => {
                self.error(id, format!("undefined field '{field}'"));
                None
            }
        }
    }

    fn check_opt_select(&mut self, e: &mut Expr) {
        let id = e.id;
        let ExprKind::Call { target, args, .. } = &mut e.kind else {
            unreachable!()
        };
        if args.len() != 2 || target.is_some() {
            let t = if target.is_some() {
                " member call with"
            } else {
                ""
            };
            let msg = format!(
                "unsupported optional field selection: incorrect signature.{t} argument count: {}",
                args.len()
            );
            self.error(id, msg);
            return;
        }
        let field_name = match &args[1].kind {
            ExprKind::Literal(Literal::String(s)) => s.clone(),
            _ => {
                let fid = args[1].id;
                self.error(fid, "unsupported optional field selection".to_string());
                return;
            }
        };
        let result = self.check_select_field(id, &mut args[0], &field_name, true);
        let t = substitute(&self.mapping, &result, false);
        self.set_type(id, t);
        self.refs[id as usize] = Some(Reference::Overloads(vec!["select_optional_field".into()]));
    }

    fn check_call(&mut self, e: &mut Expr) {
        let id = e.id;
        let fn_name = match &e.kind {
            ExprKind::Call { function, .. } => function.clone(),
            _ => unreachable!(),
        };
        if fn_name == "_?._" {
            self.check_opt_select(e);
            return;
        }
        let ExprKind::Call {
            function,
            target,
            args,
        } = &mut e.kind
        else {
            unreachable!()
        };
        for a in args.iter_mut() {
            self.check(a);
        }
        let Some(tgt) = target else {
            let Some(f) = self.lookup_function(&fn_name).cloned() else {
                self.undeclared(id, &fn_name);
                self.set_type(id, Type::Error);
                return;
            };
            self.resolve_overload_or_error(id, &f, None, args);
            return;
        };
        // A target may be a namespace: `optional.of(x)`, `format.named(x)`.
        if let Some(q) = tgt.qualified_name() {
            let qualified = format!("{q}.{fn_name}");
            if let Some(f) = self.lookup_function(&qualified).cloned() {
                *function = qualified;
                *target = None;
                self.resolve_overload_or_error(id, &f, None, args);
                return;
            }
        }
        self.check(tgt);
        match self.lookup_function(&fn_name).cloned() {
            Some(f) => {
                let tgt: &Expr = tgt;
                self.resolve_overload_or_error(id, &f, Some(tgt), args)
            }
            None => {
                consulted::note(consulted::UNTYPED_MEMBER_CALLS);
                if !self.env.untyped_undeclared_member_calls {
                    self.set_type(id, Type::Error);
                }
                self.undeclared(id, &fn_name);
            }
        }
    }

    fn resolve_overload_or_error(
        &mut self,
        id: ExprId,
        f: &Function,
        target: Option<&Expr>,
        args: &[Expr],
    ) {
        match self.resolve_overload(id, f, target, args) {
            Some((t, overloads)) => {
                self.set_type(id, t);
                self.refs[id as usize] = Some(Reference::Overloads(overloads));
            }
            None => self.set_type(id, Type::Error),
        }
    }

    /// Notes which overloads that one minor declares and another does not an operator's
    /// arguments (`types`, substituted) could match (the guards of `estimate::range`): where
    /// none could, both minors resolve the call alike.
    fn note_overload_guards(types: &[Type]) {
        let unknown = |t: &Type| {
            matches!(
                t,
                Type::Dyn | Type::Any | Type::Error | Type::TypeParam(_) | Type::Unspecified
            )
        };
        let numeric = |t: &Type| matches!(t, Type::Int | Type::Uint | Type::Double) || unknown(t);
        if let [x, y] = types
            && numeric(x)
            && numeric(y)
            && (x != y || unknown(x))
        {
            consulted::note(consulted::CROSS_NUMERIC_OVERLOADS);
        }
        if types.first().is_some_and(|t| unknown(t) || t.is_optional()) {
            consulted::note(consulted::OPTIONAL_ARGUMENT_OVERLOADS);
        }
    }

    fn new_type_var(&mut self) -> Type {
        let n = self.free_type_vars;
        self.free_type_vars += 1;
        Type::param(&format!("_var{n}"))
    }

    fn resolve_overload(
        &mut self,
        id: ExprId,
        f: &Function,
        target: Option<&Expr>,
        args: &[Expr],
    ) -> Option<(Type, Vec<Arc<str>>)> {
        let mut arg_types: Vec<Type> = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            arg_types.push(self.get_type(t.id));
        }
        for a in args {
            arg_types.push(self.get_type(a.id));
        }
        // cel-go v0.16: an argument without a type (an undeclared member call) matches no
        // overload, and is shown as `<nil>`.
        let untyped: Vec<bool> = if self.env.untyped_undeclared_member_calls {
            target
                .into_iter()
                .chain(args)
                .map(|a| self.types[a.id as usize].is_none())
                .collect()
        } else {
            Vec::new()
        };
        if untyped.contains(&true) {
            consulted::note(consulted::UNTYPED_MEMBER_CALLS);
            let shown: Vec<String> = arg_types
                .iter()
                .zip(&untyped)
                .map(|(t, &u)| {
                    if u {
                        "<nil>".to_string()
                    } else {
                        substitute(&self.mapping, t, true).to_string()
                    }
                })
                .collect();
            let sig = match (target.is_some(), shown.split_first()) {
                (true, Some((t, rest))) => format!("{t}.({})", rest.join(", ")),
                _ => format!("({})", shown.join(", ")),
            };
            self.error(
                id,
                format!(
                    "found no matching overload for '{}' applied to '{sig}'",
                    f.name
                ),
            );
            return None;
        }
        let logical = &*f.name == "_&&_" || &*f.name == "_||_";
        if !f.name.starts_with(char::is_alphabetic) {
            let types: Vec<Type> = arg_types
                .iter()
                .map(|t| substitute(&self.mapping, t, false))
                .collect();
            Self::note_overload_guards(&types);
            // On every minor: cel-go v0.16 resolves a logical operator as any other overload,
            // later ones as below; they agree where every argument is a `bool`.
            if logical && !types.iter().all(|t| *t == Type::Bool) {
                consulted::note(consulted::UNTYPED_MEMBER_CALLS);
            }
        }
        let mut result: Option<Type> = None;
        let mut refs: Vec<Arc<str>> = Vec::new();
        for o in &f.overloads {
            if target.is_none() == o.member {
                continue;
            }
            if logical && !self.env.untyped_undeclared_member_calls {
                let mut failed = false;
                for (i, at) in arg_types.iter().enumerate() {
                    if !self.is_assignable(at, &Type::Bool) {
                        let aid = args[i].id;
                        self.error(
                            aid,
                            format!("expected type '{}' but found '{}'", Type::Bool, at),
                        );
                        failed = true;
                    }
                }
                if failed {
                    return None;
                }
                return Some((Type::Bool, vec![o.id.clone()]));
            }
            let (params, res) = if o.type_params.is_empty() {
                (o.args.clone(), o.result.clone())
            } else {
                let mut subs = Mapping::default();
                for tp in &o.type_params {
                    let v = self.new_type_var();
                    subs.insert(tp.clone(), v);
                }
                (
                    o.args
                        .iter()
                        .map(|a| substitute(&subs, a, false))
                        .collect::<Vec<_>>(),
                    substitute(&subs, &o.result, false),
                )
            };
            if self.is_assignable_list(&arg_types, &params) {
                refs.push(o.id.clone());
                let fn_result = substitute(&self.mapping, &res, false);
                result = Some(match result {
                    None => fn_result,
                    Some(r) if !r.is_dyn_or_any() && !fn_result.is_exact(&r) => Type::Dyn,
                    Some(r) => r,
                });
            }
        }
        match result {
            Some(r) => Some((r, refs)),
            None => {
                let shown: Vec<Type> = arg_types
                    .iter()
                    .map(|t| substitute(&self.mapping, t, true))
                    .collect();
                let sig = format_signature(&shown, target.is_some());
                self.error(
                    id,
                    format!(
                        "found no matching overload for '{}' applied to '{sig}'",
                        f.name
                    ),
                );
                None
            }
        }
    }

    fn check_list(&mut self, e: &mut Expr) {
        let id = e.id;
        let ExprKind::List {
            elements,
            optional_indices,
        } = &mut e.kind
        else {
            unreachable!()
        };
        let mut elems_type: Option<Type> = None;
        for (i, el) in elements.iter_mut().enumerate() {
            self.check(el);
            let mut et = self.get_type(el.id);
            if optional_indices.contains(&i) {
                et = self.optional_entry_type(el.id, &et);
            }
            elems_type = Some(self.join_types(el.id, elems_type, et));
        }
        let et = elems_type.unwrap_or_else(|| self.new_type_var());
        self.set_type(id, Type::list(et));
    }

    /// The type of an optional element's or entry's value (`?v`: cel-go's `maybeUnwrapOptional`
    /// and its type mismatch): the optional's value type, an error unless `t` is an optional or
    /// dyn.
    fn optional_entry_type(&mut self, id: ExprId, t: &Type) -> Type {
        let (inner, is_opt) = t.unwrap_optional();
        let inner = inner.clone();
        if !is_opt && !inner.is_dyn_or_any() {
            self.error(
                id,
                format!(
                    "expected type '{}' but found '{}'",
                    Type::optional(inner.clone()),
                    inner
                ),
            );
        }
        inner
    }

    fn check_map(&mut self, e: &mut Expr) {
        let id = e.id;
        let ExprKind::Map { entries } = &mut e.kind else {
            unreachable!()
        };
        let mut kt: Option<Type> = None;
        let mut vt: Option<Type> = None;
        for en in entries.iter_mut() {
            self.check(&mut en.key);
            let k = self.get_type(en.key.id);
            kt = Some(self.join_types(en.key.id, kt, k));
            self.check(&mut en.value);
            let mut v = self.get_type(en.value.id);
            if en.optional {
                v = self.optional_entry_type(en.value.id, &v);
            }
            vt = Some(self.join_types(en.value.id, vt, v));
        }
        let (k, v) = match (kt, vt) {
            (Some(k), Some(v)) => (k, v),
            _ => (self.new_type_var(), self.new_type_var()),
        };
        self.set_type(id, Type::map(k, v));
    }

    fn check_struct(&mut self, e: &mut Expr) {
        let id = e.id;
        let ExprKind::Struct { type_name, fields } = &mut e.kind else {
            unreachable!()
        };
        let name = type_name.clone();
        let Some(t) = self.lookup_ident(&name) else {
            self.undeclared(id, &name);
            self.set_type(id, Type::Error);
            return;
        };
        let mut result = Type::Error;
        match &t {
            Type::Error => {}
            Type::TypeOf(Some(inner)) if inner.kind() == Kind::Struct => result = (**inner).clone(),
            Type::TypeOf(Some(inner)) => {
                self.error(id, format!("'{inner}' is not a message type"));
            }
            other => self.error(id, format!("'{other}' is not a type")),
        }
        self.set_type(id, result.clone());
        let struct_name = result.type_name().to_string();
        for f in fields.iter_mut() {
            self.check(&mut f.value);
            let ft = if result.kind() == Kind::Struct {
                self.lookup_field_type(f.id, &struct_name, &f.name)
                    .unwrap_or(Type::Error)
            } else {
                Type::Error
            };
            let mut vt = self.get_type(f.value.id);
            if f.optional {
                vt = self.optional_entry_type(f.value.id, &vt);
            }
            if !self.is_assignable(&ft, &vt) {
                self.error(
                    f.id,
                    format!(
                        "expected type of field '{}' is '{ft}' but provided type is '{vt}'",
                        f.name
                    ),
                );
            }
        }
    }

    fn check_comprehension(&mut self, e: &mut Expr) {
        let id = e.id;
        let ExprKind::Comprehension(c) = &mut e.kind else {
            unreachable!()
        };
        self.check(&mut c.iter_range);
        self.check(&mut c.accu_init);
        let range_type = substitute(&self.mapping, &self.get_type(c.iter_range.id), false);
        let accu_type = self.get_type(c.accu_init.id);
        self.scopes.push((c.accu_var.clone(), accu_type.clone()));
        let two = c.iter_var2.is_some();
        let (var_type, var2_type) = match range_type.kind() {
            Kind::List => {
                let el = range_type.parameters()[0].clone();
                if two {
                    (Type::Int, Some(el))
                } else {
                    (el, None)
                }
            }
            Kind::Map => {
                let p = range_type.parameters();
                (p[0].clone(), if two { Some(p[1].clone()) } else { None })
            }
            Kind::Dyn | Kind::Error | Kind::TypeParam => {
                self.is_assignable(&Type::Dyn, &range_type);
                (Type::Dyn, if two { Some(Type::Dyn) } else { None })
            }
            _ => {
                let rid = c.iter_range.id;
                self.error(
                    rid,
                    format!("expression of type '{range_type}' cannot be range of a comprehension (must be list, map, or dynamic)"),
                );
                (Type::Error, if two { Some(Type::Error) } else { None })
            }
        };
        let mark = self.scopes.len();
        self.scopes.push((c.iter_var.clone(), var_type));
        if let (Some(v2), Some(t2)) = (&c.iter_var2, var2_type) {
            self.scopes.push((v2.clone(), t2));
        }
        self.check(&mut c.loop_cond);
        let lc = self.get_type(c.loop_cond.id);
        if !self.is_assignable(&Type::Bool, &lc) {
            let lid = c.loop_cond.id;
            self.error(
                lid,
                format!("expected type '{}' but found '{lc}'", Type::Bool),
            );
        }
        self.check(&mut c.loop_step);
        let ls = self.get_type(c.loop_step.id);
        if !self.is_assignable(&accu_type, &ls) {
            let sid = c.loop_step.id;
            self.error(sid, format!("expected type '{accu_type}' but found '{ls}'"));
        }
        self.scopes.truncate(mark);
        self.check(&mut c.result);
        self.scopes.pop();
        let rt = substitute(&self.mapping, &self.get_type(c.result.id), false);
        self.set_type(id, rt);
    }

    fn join_types(&mut self, id: ExprId, previous: Option<Type>, current: Type) -> Type {
        let Some(prev) = previous else { return current };
        if self.is_assignable(&prev, &current) {
            return most_general(&prev, &current);
        }
        if !self.env.homogeneous_literals {
            return Type::Dyn;
        }
        self.error(id, format!("expected type '{prev}' but found '{current}'"));
        Type::Error
    }

    fn is_assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        self.mapping
            .transaction(|m| internal_is_assignable(m, t1, t2))
    }

    fn is_assignable_list(&mut self, l1: &[Type], l2: &[Type]) -> bool {
        self.mapping
            .transaction(|m| internal_is_assignable_list(m, l1, l2))
    }
}

fn is_equal_or_less_specific(t1: &Type, t2: &Type) -> bool {
    let (k1, k2) = (t1.kind(), t2.kind());
    if t1.is_dyn_or_any() || k1 == Kind::TypeParam {
        return true;
    }
    if t2.is_dyn_or_any() || k2 == Kind::TypeParam {
        return false;
    }
    if k1 != k2 {
        return false;
    }
    match k1 {
        Kind::Opaque => {
            if t1.type_name() != t2.type_name() || t1.param_count() != t2.param_count() {
                return false;
            }
            t1.parameters()
                .iter()
                .zip(t2.parameters().iter())
                .all(|(a, b)| is_equal_or_less_specific(a, b))
        }
        Kind::List => is_equal_or_less_specific(&t1.parameters()[0], &t2.parameters()[0]),
        Kind::Map => {
            let (p1, p2) = (t1.parameters(), t2.parameters());
            is_equal_or_less_specific(&p1[0], &p2[0]) && is_equal_or_less_specific(&p1[1], &p2[1])
        }
        Kind::Type => true,
        _ => t1.is_exact(t2),
    }
}

fn most_general(t1: &Type, t2: &Type) -> Type {
    if is_equal_or_less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

fn internal_is_assignable(m: &mut Mapping, t1: &Type, t2: &Type) -> bool {
    let (k1, k2) = (t1.kind(), t2.kind());
    if k2 == Kind::TypeParam {
        let (valid, t2_has_sub) = is_valid_type_substitution(m, t1, t2);
        if valid {
            return true;
        }
        if t2_has_sub {
            return false;
        }
    }
    if k1 == Kind::TypeParam {
        return is_valid_type_substitution(m, t2, t1).0;
    }
    if matches!(k1, Kind::Dyn | Kind::Any | Kind::Error)
        || matches!(k2, Kind::Dyn | Kind::Any | Kind::Error)
    {
        return true;
    }
    if k1 == Kind::Null {
        return is_assignable_null(t2);
    }
    if k2 == Kind::Null {
        return is_assignable_null(t1);
    }
    match k1 {
        Kind::Bool
        | Kind::Bytes
        | Kind::Double
        | Kind::Int
        | Kind::String
        | Kind::Uint
        | Kind::Any
        | Kind::Duration
        | Kind::Timestamp
        | Kind::Struct => t1.is_assignable_type(t2),
        Kind::Type => k2 == Kind::Type,
        Kind::Opaque | Kind::List | Kind::Map => {
            k1 == k2
                && t1.type_name() == t2.type_name()
                && internal_is_assignable_list(m, &t1.parameters(), &t2.parameters())
        }
        _ => false,
    }
}

fn is_valid_type_substitution(m: &mut Mapping, t1: &Type, t2: &Type) -> (bool, bool) {
    if t1.kind() == t2.kind() && t1.is_exact(t2) {
        return (true, true);
    }
    let Type::TypeParam(name) = t2 else {
        return (false, false);
    };
    if let Some(t2_sub) = m.get(name).cloned() {
        if t1.kind() == t2_sub.kind() && t1.is_exact(&t2_sub) {
            return (true, true);
        }
        if internal_is_assignable(m, t1, &t2_sub) {
            let t2_new = most_general(t1, &t2_sub);
            if not_referenced_in(m, t2, &t2_new) {
                m.insert(name.clone(), t2_new);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1) {
        m.insert(name.clone(), t1.clone());
        return (true, false);
    }
    (false, false)
}

fn internal_is_assignable_list(m: &mut Mapping, l1: &[Type], l2: &[Type]) -> bool {
    if l1.len() != l2.len() {
        return false;
    }
    l1.iter()
        .zip(l2.iter())
        .all(|(a, b)| internal_is_assignable(m, a, b))
}

fn is_assignable_null(t: &Type) -> bool {
    matches!(
        t.kind(),
        Kind::Opaque | Kind::Struct | Kind::Any | Kind::Duration | Kind::Timestamp
    ) || t.is_assignable_type(&Type::Null)
}

fn not_referenced_in(m: &Mapping, t: &Type, within: &Type) -> bool {
    if t.is_exact(within) {
        return false;
    }
    match within {
        Type::TypeParam(n) => match m.get(n) {
            None => true,
            Some(sub) => not_referenced_in(m, t, sub),
        },
        Type::Opaque(..) | Type::List(_) | Type::Map(..) | Type::TypeOf(_) => within
            .parameters()
            .iter()
            .all(|p| not_referenced_in(m, t, p)),
        _ => true,
    }
}

/// cel-go `substitute`: replaces bound type parameters, and unbound ones by `dyn` when asked.
fn substitute(m: &Mapping, t: &Type, type_param_to_dyn: bool) -> Type {
    if let Type::TypeParam(n) = t {
        if let Some(sub) = m.get(n) {
            return substitute(m, sub, type_param_to_dyn);
        }
        if type_param_to_dyn {
            return Type::Dyn;
        }
        return t.clone();
    }
    if !t.has_type_params() {
        return t.clone();
    }
    match t {
        Type::Opaque(n, p) => Type::Opaque(
            n.clone(),
            p.iter()
                .map(|x| substitute(m, x, type_param_to_dyn))
                .collect(),
        ),
        Type::List(e) => Type::list(substitute(m, e, type_param_to_dyn)),
        Type::Map(k, v) => Type::map(
            substitute(m, k, type_param_to_dyn),
            substitute(m, v, type_param_to_dyn),
        ),
        Type::TypeOf(Some(p)) => Type::type_of(substitute(m, p, type_param_to_dyn)),
        _ => t.clone(),
    }
}
