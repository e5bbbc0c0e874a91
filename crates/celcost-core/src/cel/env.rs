//! A compile environment for one Kubernetes version: which libraries, macros and parser
//! options exist (k8s.io/apiserver pkg/cel/environment/base.go), and `compile` = parse, check,
//! AST validators, as cel-go's `Env.Compile` does.

use super::ast::{Expr, ExprKind, Literal};
use super::checker::{CheckEnv, CheckedExpr, TypeProvider, check};
use super::cost::CostOptions;
use super::decls::{Declarations, Version};
use super::minor::{Distribution, Minor};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::ast::ParsedExpr;
use super::parse::{
    ParserOptions, SyntaxErrors, display_error, parse_noting_gated_macros, parse_uncharged,
};
use super::types::{Kind, Type};
use super::version::consulted;

/// The environment of one Kubernetes version. `compatibility` is the CEL compatibility version
/// (the API server's minor − 1), which decides what new expressions may use.
pub struct Env {
    /// The rules of the API server minor being followed.
    pub minor: &'static Minor,
    pub kubernetes: Version,
    pub compatibility: Version,
    pub decls: Declarations,
    /// `decls` with the libraries of the MutatingAdmissionPolicy mutation environments
    /// (`HasPatchTypes`: `jsonpatch.escapeKey`), made when first needed.
    patch_decls: OnceLock<Declarations>,
    pub parser: ParserOptions,
}

/// Entries kept in the parse cache before it is cleared.
const PARSE_CACHE_LIMIT: usize = 16_384;

/// Parsed expressions by source, for every environment of the process: real manifests repeat
/// rules (per-version schemas, shared idioms such as `self == oldSelf`), every minor of a range
/// compiles the same texts, and parsing is the dearest step of a compile. A parse depends on
/// the text and the parser options only, and most texts parse the same with every options of
/// the same `optional_syntax` ([`parse_noting_gated_macros`]): those are kept once for all.
struct ParseCache {
    /// Without and with `optional_syntax`.
    entries: [HashMap<String, Parses>; 2],
}

impl ParseCache {
    /// Keeps `result` as `source`'s parse with `opts`, or with every options (`None`).
    fn keep(
        &mut self,
        source: &str,
        optional_syntax: bool,
        opts: Option<ParserOptions>,
        result: &Result<ParsedExpr, SyntaxErrors>,
    ) {
        if self.entries[0].len() + self.entries[1].len() >= PARSE_CACHE_LIMIT {
            self.entries = [HashMap::new(), HashMap::new()];
        }
        let table = &mut self.entries[usize::from(optional_syntax)];
        let Some(opts) = opts else {
            table.insert(source.to_string(), Parses::Any(result.clone()));
            return;
        };
        if let Parses::ByOptions(v) = table
            .entry(source.to_string())
            .or_insert_with(|| Parses::ByOptions(Vec::new()))
            && !v.iter().any(|(o, _)| *o == opts)
        {
            v.push((opts, result.clone()));
        }
    }
}

/// The parses of one text (with one `optional_syntax`).
enum Parses {
    /// The same with every parser options.
    Any(Result<ParsedExpr, SyntaxErrors>),
    /// The text calls a macro some options do not have: a parse per options.
    ByOptions(Vec<(ParserOptions, Result<ParsedExpr, SyntaxErrors>)>),
}

fn parse_cache() -> &'static Mutex<ParseCache> {
    static CACHE: OnceLock<Mutex<ParseCache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(ParseCache {
            entries: [HashMap::new(), HashMap::new()],
        })
    })
}

/// Empties the parse cache: measurements of an estimate's work (the scaling test and benchmark)
/// start from it, so that what they count does not depend on what was parsed before.
pub fn clear_parse_cache() {
    parse_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entries = [HashMap::new(), HashMap::new()];
    super::eval::clear_prepared_cache();
}

/// A compile failure, formatted like cel-go's `Issues.String()`; or, with a [`CheckerPanic`],
/// an expression the API server's own compiler panics on (the text then says so).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError(pub String, pub Option<CheckerPanic>);

/// An expression that makes cel-go panic while the API server compiles it. The panic unwinds
/// the whole request: the handler chain's panic filter (`WithPanicRecovery`, `HandleCrash`)
/// logs it and panics again, so net/http aborts the response (HTTP/2: the stream is reset with
/// `INTERNAL_ERROR`; HTTP/1.1: the connection closes with no reply); no field errors are
/// returned and nothing is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckerPanic {
    /// Go's panic value.
    pub value: &'static str,
    /// Where in cel-go it panics.
    pub site: &'static str,
}

impl CheckerPanic {
    /// cel-go's `homogeneousAggregateLiteralValidator` (every cel-go of Kubernetes 1.29-1.37:
    /// v0.17.8 to v0.29.2; v0.31.0's is the same) takes `Parameters()[0]` of the type of each optional entry of a
    /// list or map literal, which the checker lets be `dyn` (`{?'k': dyn(v)}`,
    /// `[?object.x[?0]]`): Go's index out of range.
    pub const HOMOGENEOUS_OPTIONAL_DYN: CheckerPanic = CheckerPanic {
        value: "runtime error: index out of range [0] with length 0",
        site: "cel-go homogeneousAggregateLiteralValidator, on an optional entry of type dyn",
    };

    /// How celcost words it.
    pub fn message(&self) -> String {
        format!(
            "the API server panics compiling this expression ({}: {}); the request is aborted with no response and nothing is stored",
            self.site, self.value
        )
    }
}

impl Env {
    /// The environment of a Kubernetes minor version (`NewExpressions`: the compatibility
    /// version is one minor lower).
    /// Outside the supported minors, the nearest one's rules are used (callers that take a
    /// version from users check it with [`super::minor::parse_supported`] first).
    pub fn for_kubernetes(kubernetes: Version) -> Env {
        Env::for_minor(Minor::nearest(kubernetes, Distribution::Kubernetes))
    }

    /// The environment new expressions are compiled in by the API server of `minor`.
    pub fn for_minor(minor: &'static Minor) -> Env {
        Env {
            minor,
            kubernetes: minor.kubernetes,
            compatibility: minor.compatibility,
            decls: Declarations::for_minor(minor, false),
            patch_decls: OnceLock::new(),
            parser: ParserOptions::for_minor(minor, minor.compatibility),
        }
    }

    /// The environment stored expressions are compiled in by the API server of `minor`
    /// (`StoredExpressionsEnv`: `filterAndBuildOpts` at the largest compatibility version, so
    /// every library and option of its `base.go`, each introduced at or before `minor`): the
    /// one `cel.NewValidator` compiles the rules it evaluates in (`StoredExpressionsEnvLoader`),
    /// on defaults among others.
    pub fn stored_for_minor(minor: &'static Minor) -> Env {
        Env {
            minor,
            kubernetes: minor.kubernetes,
            compatibility: minor.kubernetes,
            decls: Declarations::for_minor_stored(minor),
            patch_decls: OnceLock::new(),
            parser: ParserOptions::for_minor(minor, minor.kubernetes),
        }
    }

    /// The cost estimator's options in this environment.
    pub fn cost_options(&self) -> CostOptions {
        CostOptions {
            presence_test_cost: self.minor.presence_test_cost,
            algorithm: self.minor.cost_algorithm,
            global_matches: self.minor.global_matches_cost,
            comprehension_result_size: self.minor.comprehension_result_size,
            cost_factor_clamped: self.minor.cost_factor_clamped,
        }
    }

    /// Parses through the cache. Every call is charged as one parse, found or done, so that an
    /// estimate's work (and where its budget stops it) does not depend on what was parsed
    /// before it, by this object or any other.
    /// A parse that depends on the parser options is noted ([`consulted::PARSER_OPTIONS`]): a
    /// range shares the estimate between minors whose options differ only where none does.
    pub(crate) fn parse_cached(&self, source: &str) -> Result<ParsedExpr, SyntaxErrors> {
        crate::budget::charge(source.len() as u64);
        let opts = self.parser;
        let cache = || parse_cache().lock().unwrap_or_else(|p| p.into_inner());
        let known = {
            let cache = cache();
            match cache.entries[usize::from(opts.optional_syntax)].get(source) {
                Some(Parses::Any(r)) => return r.clone(),
                Some(Parses::ByOptions(v)) => match v.iter().find(|(o, _)| *o == opts) {
                    Some((_, r)) => {
                        consulted::note(consulted::PARSER_OPTIONS);
                        return r.clone();
                    }
                    None => true,
                },
                // A text that does not use the optional syntax parses alike with it on and off
                // (1.28's environment has it off, the later minors' on).
                None => match cache.entries[usize::from(!opts.optional_syntax)].get(source) {
                    Some(Parses::Any(r @ Ok(_)))
                        if !super::parse::may_use_optional_syntax(
                            source,
                            super::parse::code_outside_literals(source).as_deref(),
                        ) =>
                    {
                        return r.clone();
                    }
                    _ => false,
                },
            }
        };
        // A new text is parsed with every gated macro on: a parse that meets none of them
        // holds for every options.
        if !known {
            let widest = opts.with_every_macro();
            let (result, any) = parse_noting_gated_macros(source, widest);
            let for_opts = (!any).then_some(widest);
            cache().keep(source, opts.optional_syntax, for_opts, &result);
            if !any {
                consulted::note(consulted::PARSER_OPTIONS);
            }
            if any || opts == widest {
                return result;
            }
        }
        consulted::note(consulted::PARSER_OPTIONS);
        let result = parse_uncharged(source, opts);
        cache().keep(source, opts.optional_syntax, Some(opts), &result);
        result
    }

    /// Why building the program of a checked expression fails, as the API server reports it:
    /// regex literals the Kubernetes regex library compiles when the program is built (`find`,
    /// `findAll`: `error parsing regexp: ...`), and identifiers naming a type the runtime type
    /// registry does not know (the mutation patch types `Object`, `Object.<field>...` and
    /// `JSONPatch` are only known to the checker: `reference to undefined type: Object`).
    pub fn program_error(&self, checked: &CheckedExpr) -> Option<String> {
        // cel-go's optimizer evaluates each conversion of a constant (`int('x')`) when it plans
        // the program, and a failure is the program's error.
        if let Some(e) = super::runtime_cost::constant_conversion_error(
            checked.expr(),
            super::runtime_cost::Rules::of(self.minor),
        ) {
            return Some(e);
        }
        let mut err = None;
        checked.expr().walk(&mut |e| {
            if err.is_some() {
                return;
            }
            if let ExprKind::Ident(name) = &e.kind
                && let Type::TypeOf(Some(t)) = checked.type_of(e.id)
                && let Type::Struct(s) = &**t
                && **s == **name
                && is_patch_type(name)
            {
                err = Some(format!("reference to undefined type: {name}"));
                return;
            }
            if let ExprKind::Call {
                function,
                target: Some(_),
                args,
            } = &e.kind
                && (function == "find" || function == "findAll")
                && let Some(ExprKind::Literal(Literal::String(re))) = args.first().map(|a| &a.kind)
                && let Err(g) = crate::goregexp::check(re)
            {
                err = Some(g.to_string());
            }
        });
        err
    }

    /// A checker or validator message with the types named as this minor's cel-go names them
    /// (messages print types as `name(params)`; only the optional type's name changed).
    fn type_names(&self, message: String) -> String {
        if message.contains(&format!("{}(", super::types::OPTIONAL_TYPE)) {
            consulted::note(consulted::OPTIONAL_TYPE_NAME);
        }
        if self.minor.optional_type_name == super::types::OPTIONAL_TYPE {
            return message;
        }
        message.replace(
            &format!("{}(", super::types::OPTIONAL_TYPE),
            &format!("{}(", self.minor.optional_type_name),
        )
    }

    /// Parses, type-checks and validates `source` with the given variables.
    pub fn compile(
        &self,
        source: &str,
        vars: &[(String, Type)],
        provider: &dyn TypeProvider,
    ) -> Result<CheckedExpr, CompileError> {
        self.compile_in(source, vars, provider, false)
    }

    /// [`Env::compile`], in the environment of MutatingAdmissionPolicy mutations when
    /// `patch_types` (`HasPatchTypes`: `jsonpatch.escapeKey`, and the `Object` and `JSONPatch`
    /// types, which `provider` must resolve: see [`PatchTypes`]).
    pub fn compile_in(
        &self,
        source: &str,
        vars: &[(String, Type)],
        provider: &dyn TypeProvider,
        patch_types: bool,
    ) -> Result<CheckedExpr, CompileError> {
        let parsed = self
            .parse_cached(source)
            .map_err(|e| CompileError(e.0, None))?;
        let env = CheckEnv {
            decls: if patch_types {
                self.patch_decls
                    .get_or_init(|| Declarations::for_minor(self.minor, true))
            } else {
                &self.decls
            },
            vars,
            provider,
            homogeneous_literals: false,
            untyped_undeclared_member_calls: self.minor.untyped_undeclared_member_calls,
        };
        let checked = match check(parsed, &env) {
            Ok(c) => c,
            Err(failed) => {
                let (parsed, errors) = *failed;
                note_library_names(&parsed.expr);
                let mut located: Vec<(usize, usize, String)> = errors
                    .into_iter()
                    .map(|e| {
                        let (l, c) = parsed.location(e.id);
                        (l, c, self.type_names(e.message))
                    })
                    .collect();
                return Err(CompileError(
                    format_issues(&parsed.source, &mut located),
                    None,
                ));
            }
        };
        note_library_references(&checked);
        {
            let mut issues = Vec::new();
            // `HomogeneousAggregateLiterals` (always on); `ext.Strings` v1+ (1.29) exempts the
            // list literal of `format` calls.
            let exempt: &[&str] = if self.compatibility >= Version::new(1, 29) {
                &["format"]
            } else {
                &[]
            };
            let mut panics = false;
            let exempt = Exemption {
                functions: exempt,
                through_literals_only: self.minor.homogeneous_exemption_through_literals_only(),
            };
            validate_homogeneous(
                &checked,
                checked.expr(),
                &exempt,
                false,
                &mut issues,
                &mut panics,
            );
            if !issues.is_empty() || panics {
                consulted::note(consulted::HOMOGENEOUS_LITERALS);
            }
            // The validator is one of the AST validators Kubernetes adds at 1.29.
            if panics && self.compatibility >= Version::new(1, 29) {
                let p = CheckerPanic::HOMOGENEOUS_OPTIONAL_DYN;
                return Err(CompileError(p.message(), Some(p)));
            }
            if !self.minor.optional_macros_copy_their_receiver {
                let before = issues.len();
                shared_receiver_errors(&checked, &mut issues);
                if issues.len() > before {
                    consulted::note(consulted::OPTIONAL_MACROS_SHARED_RECEIVER);
                }
            }
            if self.compatibility >= Version::new(1, 29) {
                if self.minor.format_string_validator {
                    let before = issues.len();
                    validate_format_calls(&checked, &mut issues);
                    if issues.len() > before {
                        consulted::note(consulted::FORMAT_STRING_VALIDATOR);
                    }
                }
                validate_literals(&checked, checked.expr(), &mut issues);
            }
            if !issues.is_empty() {
                let mut located: Vec<(usize, usize, String)> = issues
                    .into_iter()
                    .map(|(id, m)| {
                        let (l, c) = checked.parsed.location(id);
                        (l, c, self.type_names(m))
                    })
                    .collect();
                return Err(CompileError(
                    format_issues(&checked.parsed.source, &mut located),
                    None,
                ));
            }
        }
        Ok(checked)
    }
}

/// Notes the library sections a checked expression's names resolved in
/// ([`consulted::note_libraries`]): where a compile that fails in another minor's environment
/// found what it needs, or one that succeeds there found what this one lacks.
fn note_library_references(checked: &CheckedExpr) {
    use super::checker::Reference;
    let mut overloads: Vec<&str> = Vec::new();
    let mut idents: Vec<&str> = Vec::new();
    for r in checked.refs.iter().flatten() {
        match r {
            Reference::Overloads(ids) => overloads.extend(ids.iter().map(|i| &**i)),
            Reference::Ident(n) => idents.push(n),
        }
    }
    consulted::note_libraries(super::decls::sections_of_references(overloads, idents));
}

/// Notes the library sections that declare a name a failed compile looked up (every function
/// called, as a member or globally, and every identifier read): another minor's environment may
/// declare it, or declare it otherwise, and fail with other words or not at all.
fn note_library_names(e: &super::ast::Expr) {
    use super::ast::ExprKind;
    use super::decls::LookedUp;
    let mut names: Vec<LookedUp<'_>> = Vec::new();
    let mut qualified: Vec<String> = Vec::new();
    e.walk(&mut |x| match &x.kind {
        ExprKind::Call {
            function,
            target: Some(t),
            ..
        } => {
            names.push(LookedUp::Member(function));
            if let Some(q) = t.qualified_name() {
                qualified.push(format!("{q}.{function}"));
            }
        }
        ExprKind::Call { function, .. } => names.push(LookedUp::Global(function)),
        ExprKind::Ident(n) => names.push(LookedUp::Ident(n)),
        _ => {}
    });
    names.extend(qualified.iter().map(|q| LookedUp::Global(q)));
    consulted::note_libraries(super::decls::sections_of_names(names));
}

/// The type names of the mutation environments' type resolver (k8s.io/apiserver pkg/cel/mutation
/// `DynamicTypeResolver`): `JSONPatch`, and `Object` with any `Object.`-prefixed name.
pub fn is_patch_type(name: &str) -> bool {
    name == JSONPATCH_TYPE || name == OBJECT_TYPE || name.starts_with("Object.")
}

/// `mutation.JSONPatchTypeName`.
pub const JSONPATCH_TYPE: &str = "JSONPatch";
/// `mutation.ObjectTypeName`.
pub const OBJECT_TYPE: &str = "Object";

/// The type provider of the MutatingAdmissionPolicy mutation environments
/// (`common.ResolverEnvOption(&mutation.DynamicTypeResolver{})`): the mutation types first, then
/// the environment's own (`inner`).
///
/// * `Object` and every `Object.<a>.<b>...` name are objects whose every field exists and is
///   `dyn` (apply configurations: `Object{spec: Object.spec{replicas: 3}}`).
/// * `JSONPatch` has `op`, `from` and `path` (`string`) and `value` (`dyn`); upstream also
///   accepts every other field name, with no type (`Unspecified`): assignable from `dyn` only.
pub struct PatchTypes<'a> {
    pub inner: &'a dyn TypeProvider,
}

impl TypeProvider for PatchTypes<'_> {
    fn has_struct_type(&self, name: &str) -> bool {
        is_patch_type(name) || self.inner.has_struct_type(name)
    }

    fn field_type(&self, struct_name: &str, field: &str) -> Option<Type> {
        if struct_name == JSONPATCH_TYPE {
            return Some(match field {
                "op" | "from" | "path" => Type::String,
                "value" => Type::Dyn,
                _ => Type::Unspecified,
            });
        }
        if is_patch_type(struct_name) {
            return Some(Type::Dyn);
        }
        self.inner.field_type(struct_name, field)
    }
}

/// cel-go `Errors.ToDisplayString`: sorted by location (stable), at most 100 shown.
fn format_issues(source: &str, errs: &mut [(usize, usize, String)]) -> String {
    errs.sort_by_key(|(l, c, _)| (*l, *c));
    let mut out: Vec<String> = errs
        .iter()
        .take(100)
        .map(|(l, c, m)| display_error(source, *l, *c, m))
        .collect();
    if errs.len() > 100 {
        out.push(format!("{} more errors were truncated", errs.len() - 100));
    }
    out.join("\n")
}

/// cel-go before v0.22 (Kubernetes 1.30, 1.31): the receiver of `optMap`/`optFlatMap` is the
/// same nodes in `r.hasValue()` and `r.value()`, and the checker types them twice. A node whose
/// type gets a fresh type parameter each time — an empty list or map literal (also the `[]`
/// accumulator of `map`/`filter`), `optional.none()` — fails the second time. (Upstream's
/// message then prints the node and both types with checker-internal variable numbers; celcost
/// says which node.)
fn shared_receiver_errors(checked: &CheckedExpr, issues: &mut Vec<(u32, String)>) {
    /// The first node of `e` typed with a fresh type parameter: its id and what it is.
    fn fresh(e: &Expr) -> Option<(u32, &'static str)> {
        let mut found = None;
        e.walk(&mut |n| {
            if found.is_some() {
                return;
            }
            found = match &n.kind {
                ExprKind::List { elements, .. } if elements.is_empty() => Some((n.id, "[]")),
                ExprKind::Map { entries } if entries.is_empty() => Some((n.id, "{}")),
                ExprKind::Call {
                    function,
                    target: None,
                    args,
                } if function == "optional.none" && args.is_empty() => {
                    Some((n.id, "optional.none()"))
                }
                _ => None,
            };
        });
        found
    }
    checked.expr().walk(&mut |e| {
        let ExprKind::Call { function, args, .. } = &e.kind else {
            return;
        };
        if function != "_?_:_" || args.len() != 3 {
            return;
        }
        let bind = match &args[1].kind {
            ExprKind::Comprehension(c) => Some(c),
            ExprKind::Call { function, args, .. }
                if function == "optional.of" && args.len() == 1 =>
            {
                match &args[0].kind {
                    ExprKind::Comprehension(c) => Some(c),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some(c) = bind.filter(|c| c.iter_var == "#unused") else {
            return;
        };
        let ExprKind::Call {
            function,
            target: Some(receiver),
            ..
        } = &c.accu_init.kind
        else {
            return;
        };
        if function != "value" {
            return;
        }
        if let Some((id, what)) = fresh(receiver) {
            issues.push((
                id,
                format!("incompatible type already exists for expression: {what}"),
            ));
        }
    });
}

/// The calls whose literal arguments the homogeneous-literal validator skips.
struct Exemption<'a> {
    functions: &'a [&'a str],
    /// Only literals nested in literals of the call's arguments (cel-go v0.17, Kubernetes 1.30),
    /// not any descendant.
    through_literals_only: bool,
}

/// cel-go `homogeneousAggregateLiteralValidator`: the elements of a list literal, and the keys
/// and values of a map literal, must all have equivalent types (type parameters aside), except
/// inside calls of exempt functions. `panics` is set where upstream panics: an optional
/// element or value it looks at whose type has no parameter (see [`CheckerPanic`]); for a list
/// it looks at the elements up to the first mismatch, for a map at every entry.
fn validate_homogeneous(
    checked: &CheckedExpr,
    e: &Expr,
    exempt: &Exemption<'_>,
    in_exempt: bool,
    issues: &mut Vec<(u32, String)>,
    panics: &mut bool,
) {
    let exempt_call = matches!(&e.kind, ExprKind::Call { function, .. } if exempt.functions.contains(&function.as_str()));
    let in_exempt = in_exempt || exempt_call;
    // What the children inherit: cel-go v0.17 (`inExemptFunction`) climbs only through list and
    // map literals to the call; later versions through any ancestor.
    let child = if exempt.through_literals_only {
        exempt_call
            || (in_exempt && matches!(&e.kind, ExprKind::List { .. } | ExprKind::Map { .. }))
    } else {
        in_exempt
    };
    if !in_exempt {
        let mut elem_type = |id: u32, optional: bool| {
            let t = checked.type_of(id).clone();
            if optional {
                let inner = t.parameters().into_iter().next();
                *panics |= inner.is_none();
                inner.unwrap_or(Type::Dyn)
            } else {
                t
            }
        };
        match &e.kind {
            ExprKind::List {
                elements,
                optional_indices,
            } => {
                let mut first: Option<Type> = None;
                for (i, el) in elements.iter().enumerate() {
                    let et = elem_type(el.id, optional_indices.contains(&i));
                    match &first {
                        None => first = Some(et),
                        Some(f) if !equivalent(f, &et) => {
                            issues.push((el.id, format!("expected type '{f}' but found '{et}'")));
                            break;
                        }
                        _ => {}
                    }
                }
            }
            ExprKind::Map { entries } => {
                let mut first: Option<(Type, Type)> = None;
                for en in entries {
                    let kt = elem_type(en.key.id, false);
                    let vt = elem_type(en.value.id, en.optional);
                    match &first {
                        None => first = Some((kt, vt)),
                        Some((fk, fv)) => {
                            if !equivalent(fk, &kt) {
                                issues.push((
                                    en.key.id,
                                    format!("expected type '{fk}' but found '{kt}'"),
                                ));
                            }
                            if !equivalent(fv, &vt) {
                                issues.push((
                                    en.value.id,
                                    format!("expected type '{fv}' but found '{vt}'"),
                                ));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        ExprKind::Select { operand, .. } => {
            validate_homogeneous(checked, operand, exempt, child, issues, panics)
        }
        ExprKind::Call { target, args, .. } => {
            if let Some(t) = target {
                validate_homogeneous(checked, t, exempt, child, issues, panics);
            }
            for a in args {
                validate_homogeneous(checked, a, exempt, child, issues, panics);
            }
        }
        ExprKind::List { elements, .. } => elements
            .iter()
            .for_each(|x| validate_homogeneous(checked, x, exempt, child, issues, panics)),
        ExprKind::Map { entries } => entries.iter().for_each(|en| {
            validate_homogeneous(checked, &en.key, exempt, child, issues, panics);
            validate_homogeneous(checked, &en.value, exempt, child, issues, panics);
        }),
        ExprKind::Struct { fields, .. } => fields
            .iter()
            .for_each(|f| validate_homogeneous(checked, &f.value, exempt, child, issues, panics)),
        ExprKind::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                validate_homogeneous(checked, x, exempt, child, issues, panics);
            }
        }
    }
}

/// cel-go `IsEquivalentType`: exact, except that type parameter names do not matter.
fn equivalent(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (Type::TypeParam(_), Type::TypeParam(_)) => true,
        _ => {
            a.kind() == b.kind()
                && a.type_name() == b.type_name()
                && a.param_count() == b.param_count()
                && (a.kind() == crate::cel::types::Kind::TypeParam
                    || a.parameters()
                        .iter()
                        .zip(b.parameters().iter())
                        .all(|(x, y)| equivalent(x, y)))
        }
    }
}

/// The AST validators Kubernetes enables from 1.29 (cel-go `cel/validator.go`): literal
/// arguments of `duration`, `timestamp` and `matches` must be valid, aggregate literals
/// homogeneous (the checker already enforces the latter with `HomogeneousAggregateLiterals`).
fn validate_literals(checked: &CheckedExpr, e: &Expr, issues: &mut Vec<(u32, String)>) {
    e.walk(&mut |n| {
        if let ExprKind::Call { function, args, .. } = &n.kind {
            let Some(ExprKind::Literal(lit)) = args.first().map(|a| &a.kind) else {
                return;
            };
            let ok = match (function.as_str(), lit) {
                ("duration", Literal::String(s)) => parse_duration(s).is_some(),
                ("timestamp", Literal::String(s)) => valid_timestamp(s),
                ("timestamp", Literal::Int(_)) => true,
                ("matches", Literal::String(s)) => crate::goregexp::check(s).is_ok(),
                ("duration" | "timestamp" | "matches", _) => true,
                _ => return,
            };
            if !ok {
                issues.push((args[0].id, format!("invalid {function} argument")));
            }
        }
    });
    let _ = checked;
}

/// Go `time.ParseDuration` (as cel-go's `duration()` uses it): nanoseconds, or `None`.
pub fn parse_duration(s: &str) -> Option<i128> {
    let mut rest = s;
    let mut neg = false;
    if let Some(r) = rest.strip_prefix('-') {
        neg = true;
        rest = r;
    } else if let Some(r) = rest.strip_prefix('+') {
        rest = r;
    }
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let num: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let mult = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += num * mult;
    }
    if total > 9.223_372_036_854_776e18 {
        return None;
    }
    Some(if neg { -(total as i128) } else { total as i128 })
}

/// RFC 3339 timestamps as cel-go's `timestamp()` accepts them.
fn valid_timestamp(s: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

/// cel-go `ext` `stringFormatValidator` (strings library v1+, Kubernetes 1.29+): a `format`
/// call on a literal string with a list literal argument is checked statically: clauses must
/// parse, each argument must suit its clause, and no argument may be left over.
pub(crate) fn validate_format_calls(checked: &CheckedExpr, issues: &mut Vec<(u32, String)>) {
    checked.expr().walk(&mut |e| {
        let ExprKind::Call { function, target: Some(target), args } = &e.kind else { return };
        if function != "format" || args.len() != 1 {
            return;
        }
        let overloads = checked.overload_ids(e.id);
        if !overloads.is_empty() && !overloads.iter().any(|o| &**o == "string_format") {
            return;
        }
        let ExprKind::Literal(Literal::String(fmt)) = &target.kind else { return };
        let ExprKind::List { elements, .. } = &args[0].kind else { return };
        let mut requested = 0usize;
        match check_format(checked, fmt, elements, &mut requested) {
            Err((id, msg)) => issues.push((id.unwrap_or(e.id), msg)),
            Ok(()) => {
                if elements.len() > requested {
                    issues.push((
                        e.id,
                        format!(
                            "too many arguments supplied to string.format (expected {requested}, got {})",
                            elements.len()
                        ),
                    ));
                }
            }
        }
    });
}

/// `parseFormatString` with the static checker as the interpolator: `Err((expr id, message))`.
fn check_format(
    checked: &CheckedExpr,
    f: &str,
    args: &[Expr],
    requested: &mut usize,
) -> Result<(), (Option<u32>, String)> {
    let b = f.as_bytes();
    let mut i = 0;
    let mut arg_index = 0usize;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        if i + 1 < b.len() && b[i + 1] == b'%' {
            i += 2;
            continue;
        }
        *requested += 1;
        let current = arg_index;
        if i + 1 >= b.len() {
            return Err((None, "unexpected end of string".into()));
        }
        if arg_index >= args.len() {
            return Err((None, format!("index {arg_index} out of range")));
        }
        // The clause: an optional `.digits` precision, then one verb.
        let mut j = i + 1;
        if b[j] == b'.' {
            j += 1;
            loop {
                if j >= b.len() {
                    return Err((
                        None,
                        "could not parse formatting clause: error while parsing precision: could not find end of precision specifier"
                            .into(),
                    ));
                }
                if !b[j].is_ascii_digit() {
                    break;
                }
                j += 1;
            }
            if j == i + 2 {
                return Err((
                    None,
                    "could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing \"\": invalid syntax".into(),
                ));
            }
        }
        let verb = b[j];
        let id = args[current].id;
        let t = checked.type_of(id).clone();
        let kind_ok = |kinds: &[Kind]| t == Type::Dyn || kinds.contains(&t.kind());
        let clause_error = |what: &str| {
            Err((
                Some(id),
                format!(
                    "error during formatting: {what}, was given {}",
                    t.type_name()
                ),
            ))
        };
        match verb {
            b's' => {
                if let Some(bad) = unformattable(checked, &args[current]) {
                    let bt = checked.type_of(bad).type_name().to_string();
                    return Err((
                        Some(bad),
                        format!(
                            "error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {bt}"
                        ),
                    ));
                }
            }
            b'd' if !kind_ok(&[Kind::Int, Kind::Uint]) => {
                return clause_error("decimal clause can only be used on integers");
            }
            b'f' if !kind_ok(&[Kind::Double, Kind::String]) => {
                return clause_error("fixed-point clause can only be used on doubles");
            }
            b'e' if !kind_ok(&[Kind::Double, Kind::String]) => {
                return clause_error("scientific clause can only be used on doubles");
            }
            b'b' if !kind_ok(&[Kind::Int, Kind::Uint, Kind::Bool]) => {
                return clause_error("only integers and bools can be formatted as binary");
            }
            b'x' | b'X' if !kind_ok(&[Kind::Int, Kind::Uint, Kind::String, Kind::Bytes]) => {
                return clause_error(
                    "only integers, byte buffers, and strings can be formatted as hex",
                );
            }
            b'o' if !kind_ok(&[Kind::Int, Kind::Uint]) => {
                return clause_error("octal clause can only be used on integers");
            }
            b'd' | b'f' | b'e' | b'b' | b'x' | b'X' | b'o' => {}
            other => {
                let c = f[j..].chars().next().unwrap_or(other as char);
                return Err((
                    None,
                    format!(
                        "could not parse formatting clause: unrecognized formatting clause \"{c}\""
                    ),
                ));
            }
        }
        i = j + 1;
        arg_index += 1;
    }
    Ok(())
}

/// `verifyString`: the first (sub)expression whose type the `%s` clause cannot format.
fn unformattable(checked: &CheckedExpr, e: &Expr) -> Option<u32> {
    let t = checked.type_of(e.id);
    let ok = *t == Type::Dyn
        || matches!(
            t.kind(),
            Kind::List
                | Kind::Map
                | Kind::Int
                | Kind::Uint
                | Kind::Double
                | Kind::Bool
                | Kind::String
                | Kind::Timestamp
                | Kind::Bytes
                | Kind::Duration
                | Kind::Type
                | Kind::Null
        );
    if !ok {
        return Some(e.id);
    }
    match &e.kind {
        ExprKind::List { elements, .. } => elements.iter().find_map(|x| unformattable(checked, x)),
        ExprKind::Map { entries } => entries.iter().find_map(|en| {
            unformattable(checked, &en.key).or_else(|| unformattable(checked, &en.value))
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text parsed with the optional syntax off (1.28's environment) and then with it on: the
    /// second is the parse with it on, whether found (the text does not use the syntax) or made
    /// again (it may).
    #[test]
    fn a_parse_without_the_optional_syntax_serves_both() {
        use super::super::parse::{may_use_optional_syntax, parse_uncharged};
        let off = ParserOptions::for_version(Version::new(1, 27));
        let on = ParserOptions::for_version(Version::new(1, 30));
        assert!(!off.optional_syntax && on.optional_syntax);
        let texts = [
            ("self.a > 1 ? self.b : 'c?'", false),
            ("has(self.x) && self.x.all(i, i in ['?', 'b'])", false),
            ("self.?a.orValue(1) == 1", true),
            ("[1, ?self.b]", true),
            ("{?'k': self.v}", true),
        ];
        for (i, (text, optional)) in texts.into_iter().enumerate() {
            // A text of its own, not parsed by another test of this process.
            let text = format!("{text} || {i} == 1234567 + {i}");
            let code = super::super::parse::code_outside_literals(&text);
            assert_eq!(
                may_use_optional_syntax(&text, code.as_deref()),
                optional,
                "{text}"
            );
            let fresh = parse_uncharged(&text, on);
            let env = |opts| Env {
                parser: opts,
                ..Env::for_kubernetes(Version::new(1, 30))
            };
            let (first, second) = (env(off).parse_cached(&text), env(on).parse_cached(&text));
            // Parses compare by their every field, as printed.
            let fresh = format!("{fresh:?}");
            assert_eq!(format!("{second:?}"), fresh, "{text}");
            if !optional {
                assert_eq!(format!("{first:?}"), fresh, "{text}");
            }
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h"), Some(3_600_000_000_000));
        assert_eq!(parse_duration("1m30s"), Some(90_000_000_000));
        assert_eq!(parse_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_duration("0"), Some(0));
        assert_eq!(parse_duration("1"), None);
        assert_eq!(parse_duration("1d"), None);
        assert_eq!(parse_duration(""), None);
    }

    /// Checker messages name the optional type as each minor's cel-go does (`optional(dyn)` in
    /// 1.30's v0.17.8, `optional_type(dyn)` from 1.31's v0.20.1); errors in the copy of a
    /// macro's receiver point at the receiver (twice at 1:1 here), on every minor.
    #[test]
    fn error_texts_of_each_minor() {
        use super::super::checker::NoTypes;
        use super::super::minor::{KUBERNETES, Minor, OPENSHIFT};
        let vars = vec![("object".to_string(), Type::Dyn)];
        // 1.28's new expressions (compatibility 1.27) have no optional syntax.
        let optional = |m: &&Minor| m.compatibility >= Version::new(1, 28);
        for minor in KUBERNETES.iter().chain(OPENSHIFT.iter()).filter(optional) {
            let env = Env::for_minor(minor);
            let e = env
                .compile("object.?a + 1 == 2", &vars, &NoTypes)
                .unwrap_err();
            let name = if minor.kubernetes <= Version::new(1, 30) {
                "optional"
            } else {
                "optional_type"
            };
            assert!(
                e.0.starts_with(&format!(
                    "ERROR: <input>:1:11: found no matching overload for '_+_' applied to '({name}(dyn), int)'"
                )),
                "{}: {}",
                minor.label(),
                e.0
            );
            let e = env
                .compile(
                    "undefinedVar.?name.optMap(v, v.size()).orValue(0) <= 1000",
                    &vars,
                    &NoTypes,
                )
                .unwrap_err();
            let at: Vec<&str> = e.0.lines().filter(|l| l.starts_with("ERROR")).collect();
            assert_eq!(
                at,
                ["ERROR: <input>:1:1: undeclared reference to 'undefinedVar' (in container '')"; 2],
                "{}",
                minor.label()
            );
        }
    }

    /// The parse cache is shared by every environment, whatever its parser options: a text that
    /// calls a macro only some options have is parsed per options, whichever minor asks first;
    /// other texts once for all.
    #[test]
    fn parses_are_shared_only_where_options_cannot_tell() {
        use super::super::checker::NoTypes;
        use super::super::minor::KUBERNETES;
        use super::super::parse::parse_noting_gated_macros;
        let widest = ParserOptions::for_version(Version::new(1, 30)).with_every_macro();
        assert_eq!(
            widest,
            ParserOptions::for_minor(&KUBERNETES[2 + 7], Version::new(1, 36))
        );
        let gated = |s: &str| !parse_noting_gated_macros(s, widest).1;
        assert!(!gated("self.all(x, x > 0) && self.exists(x, x == 1)"));
        assert!(!gated("self.map(x, x + 1).filter(x, x > 2).size() == 0"));
        assert!(gated("self.all(i, x, x > i)"));
        assert!(gated("self.exists_one(i, x, x > i)"));
        assert!(gated("self.transformList(i, x, x + i) == []"));
        assert!(gated("self.sortBy(x, -x) == self"));
        // A gated macro the macro declines, or fails on, still counts.
        assert!(gated("self.all(1, x, x > 0)"));
        assert!(!gated("self.all(x, x > 0"));

        let vars = vec![(
            "self".to_string(),
            Type::List(std::sync::Arc::new(Type::Int)),
        )];
        let compiles = |minor: usize, source: &str| {
            Env::for_minor(&KUBERNETES[2 + minor])
                .compile(source, &vars, &NoTypes)
                .is_ok()
        };
        // 1.30-1.32 have no two-variable `all` (a call of an undeclared `all`), 1.33+ do; asked
        // in both orders, with texts no other test parses.
        let two_var = "self.all(i, x, x >= i + 17)";
        assert!(!compiles(0, two_var));
        assert!(compiles(3, two_var));
        assert!(!compiles(2, two_var));
        let two_var = "self.all(i, x, x >= i + 18)";
        assert!(compiles(6, two_var));
        assert!(!compiles(1, two_var));
        // `sortBy` from 1.35 (compatibility 1.34) only.
        let sort_by = "self.sortBy(x, x + 19) == self";
        assert!(compiles(5, sort_by));
        assert!(!compiles(4, sort_by));
        assert!(compiles(6, sort_by));
        // A backtick-quoted name: cel-go v0.28's parser (1.37) reads it, older ones refuse it;
        // asked in both orders.
        assert!(gated("self.`a-b` == 1"));
        let quoted = "self.all(x, x >= 21) || self.`size` == 21";
        assert!(!compiles(6, quoted));
        let quoted = "self.all(x, x >= 22) || self.`size` == 22";
        let v37 = Env::for_minor(&KUBERNETES[2 + 7]);
        let err = v37.compile(quoted, &vars, &NoTypes).unwrap_err().0;
        assert!(!err.contains("unsupported syntax"), "{err}");
        assert!(err.contains("does not support field selection"), "{err}");
        assert!(!compiles(6, quoted));
        // Everything else is one parse for every minor (indices from 1.30).
        for minor in 0..KUBERNETES.len() - 2 {
            assert!(compiles(minor, "self.all(x, x >= 20)"));
        }
    }

    /// A parse found in the cache is charged as a parse: an estimate's work does not depend on
    /// what was parsed before it (in this process, for any minor).
    #[test]
    fn a_cached_parse_is_charged_as_one() {
        use super::super::checker::NoTypes;
        use super::super::minor::KUBERNETES;
        use crate::budget::{Limits, run_measured};
        let vars = vec![(
            "self".to_string(),
            Type::List(std::sync::Arc::new(Type::Int)),
        )];
        let steps = |minor: usize, source: &str| {
            let env = Env::for_minor(&KUBERNETES[2 + minor]);
            let limits = Limits {
                steps: 1_000_000,
                bytes: usize::MAX,
            };
            let (r, usage) = run_measured(limits, || env.compile(source, &vars, &NoTypes));
            assert!(r.is_ok_and(|c| c.is_ok()), "{source}");
            usage.steps
        };
        for text in ["self.all(x, x > 22)", "self.all(i, x, x > i + 22)"] {
            // Parsed for 1.36, then found for 1.36; parsed again (the second text) or found
            // (the first) for 1.33.
            let first = steps(6, text);
            assert!(first >= text.len() as u64);
            assert_eq!(steps(6, text), first, "{text}");
            assert_eq!(steps(3, text), first, "{text}");
        }
    }

    /// Where cel-go's homogeneous-literal validator panics (checked against a v1.36.2 API
    /// server; the validator's code is the same in every cel-go of 1.30-1.36, both builds):
    /// an optional entry of type `dyn` it looks at. Not inside `format` (exempt), not after a
    /// list's first mismatch (it stops there), not for an optional-typed entry.
    #[test]
    fn checker_panics_on_optional_entries_of_type_dyn() {
        use super::super::checker::NoTypes;
        use super::super::minor::{KUBERNETES, Minor, OPENSHIFT};
        let cases: [(&str, Option<bool>); 9] = [
            ("{?'app': object.data[?'app']}.size() <= 1", Some(true)),
            ("[?object.data[?'a']].size() == 1", Some(true)),
            ("{?'a': object.x[?'a'], 'b': 1}.size() == 1", Some(true)),
            ("{'b': 1, ?'a': dyn(1)}.size() == 1", Some(true)),
            ("[?dyn(optional.of(1))].size() == 1", Some(true)),
            ("{?'a': optional.of(1)}.size() == 1", None),
            ("'%s'.format([[?object.x[?0]]]) == ''", None),
            // Not exempt on 1.30, where only literals inside literals of the call are.
            (
                "'%s'.format([[1].map(x, [?object.x[?0]])]) == ''",
                Some(true),
            ),
            // A compile error (the list's first mismatch), not a panic.
            ("[1, object.x, ?object.y[?0]].size() == 3", Some(false)),
        ];
        let vars = vec![("object".to_string(), Type::Dyn)];
        // New expressions of 1.28 and 1.29 (compatibility 1.27, 1.28) have no validators.
        let validated = |m: &&Minor| m.compatibility >= Version::new(1, 29);
        for minor in KUBERNETES.iter().chain(OPENSHIFT.iter()).filter(validated) {
            let env = Env::for_minor(minor);
            for (src, mut want) in cases {
                if src.contains(".map(") && !minor.homogeneous_exemption_through_literals_only() {
                    want = None;
                }
                let got = env.compile(src, &vars, &NoTypes);
                match want {
                    None => assert!(got.is_ok(), "{} {src}: {got:?}", minor.label()),
                    Some(panics) => {
                        let e = got.err().unwrap_or_else(|| panic!("{src} compiles"));
                        assert_eq!(
                            e.1,
                            panics.then_some(CheckerPanic::HOMOGENEOUS_OPTIONAL_DYN),
                            "{} {src}: {}",
                            minor.label(),
                            e.0
                        );
                    }
                }
            }
        }
    }
}
