//! Compiling one rule the way apiextensions `schema/cel/compilation.go` `compileRule` does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use crate::cel::ast::ExprId;
use crate::cel::checker::CheckedExpr;
use crate::cel::cost::{AstNode, Size, by_either_algorithm, estimate};
use crate::cel::env::{CheckerPanic, CompileError, Env};
use crate::cel::k8s_cost::{KubernetesEstimator, SizeSource};
use crate::cel::types::Type;
use crate::schema::ValidationRule;
use crate::schema::decltype::{DeclType, DeclTypeProvider, RuleSizes};

/// A rule compile error (`apiservercel.Error`).
#[derive(Clone, Debug, PartialEq)]
pub struct CelError {
    pub required: bool,
    pub detail: String,
}

/// What the API server's `CompilationResult` holds, plus what drove the size estimates.
#[derive(Clone, Debug, Default)]
pub struct RuleCompilation {
    pub max_cost: u64,
    pub error: Option<CelError>,
    pub uses_old_self: bool,
    pub message_expression_cost: Option<u64>,
    pub message_error: Option<String>,
    /// Schema paths below the rule node (relative, display form) whose size came from the
    /// request-size estimate.
    pub unbounded_fields: Vec<String>,
    /// The API server panics compiling the rule or its messageExpression (which it compiles
    /// when it gets there): the request fails as a whole.
    pub panic: Option<CheckerPanic>,
}

/// Records the unbounded schema nodes whose size a cost read: asked by a call's cost (cel-go
/// before v0.23), or sized ahead and read later (v0.23+, which sizes every node it walks; a size
/// no cost reads drives nothing). Those are the candidates; which of them *change* the cost is
/// measured by estimating again with each sized 0 ([`cost_and_drivers`]).
struct Recording<'a> {
    inner: &'a RuleSizes,
    seen: RefCell<Vec<String>>,
    /// Unbounded nodes sized ahead, by expression, until a cost reads them.
    probed: RefCell<HashMap<ExprId, String>>,
    /// The unbounded node (relative, display form) sized 0 in this estimate.
    capped: Option<&'a str>,
}

impl Recording<'_> {
    fn record(&self, rel: String) {
        let mut seen = self.seen.borrow_mut();
        if !seen.contains(&rel) {
            seen.push(rel);
        }
    }

    /// The size, and the path (relative, display form) of an unbounded node.
    fn resolve(&self, node: &AstNode<'_>) -> Option<(Size, Option<String>)> {
        let path = node.path_elems();
        let t = self.inner.resolve(&path)?;
        if t.minor_rules != 0 {
            crate::cel::version::consulted::note(t.minor_rules);
        }
        let rel = t
            .is_unbounded_sized()
            .then(|| crate::schema::decltype::display_path(&path[1..]));
        if self.capped.is_some() && rel.as_deref() == self.capped {
            return Some((Size::new(0, 0), None));
        }
        Some((Size::new(0, t.max_elements as u64), rel))
    }
}

impl SizeSource for Recording<'_> {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size> {
        let (size, rel) = self.resolve(node)?;
        if let Some(rel) = rel {
            self.record(rel);
        }
        Some(size)
    }

    fn probe_size(&self, node: &AstNode<'_>) -> Option<Size> {
        let (size, rel) = self.resolve(node)?;
        match (rel, node.expr) {
            (Some(rel), Some(e)) => {
                self.probed.borrow_mut().insert(e.id, rel);
            }
            (Some(rel), None) => self.record(rel),
            (None, _) => {}
        }
        Some(size)
    }

    fn size_consumed(&self, origin: ExprId) {
        let rel = self.probed.borrow().get(&origin).cloned();
        if let Some(rel) = rel {
            self.record(rel);
        }
    }
}

/// `rule` as `minor` reads it: without its `optionalOldSelf` where the minor drops it
/// ([`crate::cel::minor::Minor::optional_old_self`]).
fn honoured(rule: &ValidationRule, minor: &crate::cel::minor::Minor) -> ValidationRule {
    ValidationRule {
        optional_old_self: rule.optional_old_self.filter(|_| minor.optional_old_self),
        ..rule.clone()
    }
}

/// [`rule_variables`] of `rule` as `minor` reads it ([`honoured`]).
fn variables_as_read(
    rule: &ValidationRule,
    decl: &DeclType,
    minor: &crate::cel::minor::Minor,
) -> Vec<(String, Type)> {
    if rule.optional_old_self.is_some() {
        rule_variables(&honoured(rule, minor), decl)
    } else {
        rule_variables(rule, decl)
    }
}

/// A rule's variables: `self` of the node's type, `oldSelf` the same (optional with
/// `optionalOldSelf`).
pub fn rule_variables(rule: &ValidationRule, decl: &DeclType) -> Vec<(String, Type)> {
    let self_type = decl.cel.clone();
    let old_self = if rule.optional_old_self == Some(true) {
        Type::optional(self_type.clone())
    } else {
        self_type.clone()
    };
    vec![
        ("self".to_string(), self_type),
        ("oldSelf".to_string(), old_self),
    ]
}

/// Compiles a rule (and its messageExpression) against the node's DeclType.
pub fn compile_rule(
    env: &Env,
    rule: &ValidationRule,
    decl: &Arc<DeclType>,
    provider: &DeclTypeProvider,
) -> RuleCompilation {
    compile_rule_in(env, env, rule, decl, provider)
}

/// As [`compile_rule`], the rule in `env` and its messageExpression in `message_env` (the
/// `EnvLoader` of `compileRule`: on update, each in the stored-expressions environment when the
/// stored object has it, else in the new-expressions one).
pub fn compile_rule_in(
    env: &Env,
    message_env: &Env,
    rule: &ValidationRule,
    decl: &Arc<DeclType>,
    provider: &DeclTypeProvider,
) -> RuleCompilation {
    compile_rule_at(env, message_env, rule, decl, provider, None)
}

/// [`compile_rule_in`] of a rule of the schema node at field path `node` (when given): its
/// compiles are kept for the next estimate of a copy of the object that differs only by bounds,
/// where [`with_compiles_kept`] says so.
pub(crate) fn compile_rule_at(
    env: &Env,
    message_env: &Env,
    rule: &ValidationRule,
    decl: &Arc<DeclType>,
    provider: &DeclTypeProvider,
    node: Option<&str>,
) -> RuleCompilation {
    let across = node
        .filter(|_| std::ptr::eq(env, message_env))
        .and_then(|node| {
            let minor = ACROSS.with(|a| a.borrow().as_ref().and_then(|a| a.minor_of(env)))?;
            Some((minor, node))
        });
    let vars = variables_as_read(rule, decl, env.minor);
    let Some((minor, node)) = across else {
        return compile_rule_fresh((env, message_env), rule, (decl, provider), &vars, node);
    };
    let key = RuleKey::of(node, rule);
    let hit = ACROSS.with(|a| a.borrow().as_ref()?.kept.get(&key)?.take(minor, &vars));
    if let Some(result) = hit {
        ACROSS.with(|a| {
            if let Some(a) = a.borrow_mut().as_mut() {
                a.taken.compilations += 1;
            }
        });
        return result;
    }
    let ((result, consulted), steps) = crate::budget::counted(|| {
        crate::cel::version::consulted::tracking_all(|| {
            compile_rule_fresh(
                (env, message_env),
                rule,
                (decl, provider),
                &vars,
                Some(node),
            )
        })
    });
    let clean = result.error.is_none() && result.message_error.is_none() && result.panic.is_none();
    ACROSS.with(|a| {
        if let Some(a) = a.borrow_mut().as_mut()
            && clean
            && a.entries < MAX_ACROSS_MINORS
        {
            a.entries += 1;
            let made = MadeOn {
                minor,
                usable_at: None,
                vars,
                result: result.clone(),
                steps,
                consulted,
            };
            keep_made(&mut a.kept, key, made);
        }
    });
    result
}

/// A rule of an object as [`with_rules_across_minors`] keeps its compilations: its node, its
/// texts and its `optionalOldSelf`.
#[derive(PartialEq, Eq, Hash)]
struct RuleKey {
    node: Box<str>,
    rule: Box<str>,
    message_expression: Box<str>,
    optional_old_self: Option<bool>,
}

impl RuleKey {
    fn of(node: &str, rule: &ValidationRule) -> RuleKey {
        RuleKey {
            node: node.into(),
            rule: rule.rule.as_str().into(),
            message_expression: rule.message_expression.as_str().into(),
            optional_old_self: rule.optional_old_self,
        }
    }
}

/// What minors of a range made of one rule (its compilation) or one text at one node (its
/// type check), oldest first.
struct MadeAcross<T> {
    /// Its number among those kept alike (for [`mark_rules_usable`]'s callers).
    id: usize,
    entries: Vec<MadeOn<T>>,
}

/// A result that one minor made (without errors: their words may be a minor's own), with what
/// it took and consulted.
struct MadeOn<T> {
    /// The minor (by index in [`with_rules_across_minors`]'s environments) that made it.
    minor: usize,
    /// The minor whose estimate under way may take it, where the range found that minor makes
    /// it as `minor` does ([`mark_rules_usable`]).
    usable_at: Option<usize>,
    vars: Vec<(String, Type)>,
    result: T,
    steps: u64,
    consulted: (u64, u64),
}

impl<T: Clone> MadeAcross<T> {
    /// The result minor `minor` may take, its steps taken and what it consulted noted, as made
    /// again (`None` where fewer steps are left: made again, to stop where it would).
    fn take(&self, minor: usize, vars: &[(String, Type)]) -> Option<T> {
        let k = self.entries.iter().find(|k| k.usable_at == Some(minor))?;
        if k.vars != vars || !crate::budget::spend_again(k.steps) {
            return None;
        }
        crate::cel::version::consulted::note(k.consulted.0);
        crate::cel::version::consulted::note_libraries(k.consulted.1);
        Some(k.result.clone())
    }

    /// Marks for minor `to` the newest result of an earlier minor that `alike` (the minor that
    /// made it, the rules it consulted) says `to` makes alike.
    fn mark(&mut self, to: usize, mut alike: impl FnMut(usize, u64) -> bool) {
        let mut found = false;
        for k in self.entries.iter_mut().rev() {
            k.usable_at = None;
            if !found && k.minor < to && alike(k.minor, k.consulted.0) {
                k.usable_at = Some(to);
                found = true;
            }
        }
    }
}

/// Keeps `made` in `kept` under `key` (numbered in the order first kept).
fn keep_made<K: std::hash::Hash + Eq, T>(
    kept: &mut HashMap<K, MadeAcross<T>>,
    key: K,
    made: MadeOn<T>,
) {
    let next = kept.len();
    (kept.entry(key).or_insert_with(|| MadeAcross {
        id: next,
        entries: Vec::new(),
    }))
    .entries
    .push(made);
}

/// The rule compilations kept while a range estimates one object on its minors
/// ([`with_rules_across_minors`]).
struct AcrossMinors {
    /// The address of each minor's environment (for new expressions), by index.
    envs: Vec<usize>,
    kept: HashMap<RuleKey, MadeAcross<RuleCompilation>>,
    /// Type checks by node and text ([`compile_kept`]), for a minor that compiles a rule again
    /// only because it costs it otherwise.
    checks: HashMap<(Box<str>, Box<str>), MadeAcross<CheckedExpr>>,
    entries: usize,
    taken: Taken,
}

/// What the minors of a range took of each other's work on one object instead of making it
/// again ([`with_rules_across_minors`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Whole rule compilations (their type checks and costs).
    pub compilations: usize,
    /// Type checks of a rule or messageExpression whose costs the minor estimated anew.
    pub checks: usize,
}

impl AcrossMinors {
    /// The index of the minor whose environment `env` is.
    fn minor_of(&self, env: &Env) -> Option<usize> {
        self.envs
            .iter()
            .position(|&e| e == env as *const Env as usize)
    }
}

/// Rule compilations [`with_rules_across_minors`] keeps at most (the public corpus's largest
/// CRD has fewer than 400 rules, on each of ten minors).
const MAX_ACROSS_MINORS: usize = 8192;

thread_local! {
    static ACROSS: RefCell<Option<AcrossMinors>> = const { RefCell::new(None) };
}

/// `f`, with every rule compilation the schema walk of a CRD makes in one of the environments
/// `envs` (a range's minors, by index) kept until it returns, for the next minors' estimates of
/// the same object: a minor estimating it takes a kept compilation where the range said it may
/// ([`mark_rules_usable`]), charges the steps it took and notes what it consulted, as made
/// again. Only compilations without errors are kept (a minor may word errors its own way).
/// A minor that compiles a rule again because it costs it otherwise takes the type checks of
/// its texts where they are alike ([`compile_kept`]). Returns `f`'s result and what was taken.
pub(crate) fn with_rules_across_minors<R>(envs: Vec<usize>, f: impl FnOnce() -> R) -> (R, Taken) {
    let put_back = PutBackAcross(ACROSS.with(|a| {
        a.borrow_mut().replace(AcrossMinors {
            envs,
            kept: HashMap::new(),
            checks: HashMap::new(),
            entries: 0,
            taken: Taken::default(),
        })
    }));
    let r = f();
    let taken = ACROSS.with(|a| a.borrow().as_ref().map_or_else(Taken::default, |a| a.taken));
    drop(put_back);
    (r, taken)
}

/// Before minor `to`'s estimate (inside [`with_rules_across_minors`]): for each rule kept, the
/// newest compilation by an earlier minor that `alike` says `to` makes alike, marked for `to` to
/// take. `alike` gets the rule's number, its texts (the rule and its messageExpression), whether
/// it has `optionalOldSelf`, the minor that made the compilation and the rules it consulted.
/// The same for each type check kept, by `checks_alike` (the text's number, the text, the minor
/// that checked it and the rules that consulted): where `to` compiles a rule again (it costs
/// it otherwise), it takes the check of each text that it checks alike.
pub(crate) fn mark_rules_usable(
    to: usize,
    mut alike: impl FnMut(usize, [&str; 2], bool, usize, u64) -> bool,
    mut checks_alike: impl FnMut(usize, &str, usize, u64) -> bool,
) {
    ACROSS.with(|a| {
        let mut a = a.borrow_mut();
        let Some(a) = a.as_mut() else { return };
        for ((_, text), kept) in a.checks.iter_mut() {
            let id = kept.id;
            kept.mark(to, |from, consulted| {
                checks_alike(id, text, from, consulted)
            });
        }
        for (key, kept) in a.kept.iter_mut() {
            let texts = [&*key.rule, &*key.message_expression];
            let old_self = key.optional_old_self.is_some();
            let id = kept.id;
            kept.mark(to, |from, consulted| {
                alike(id, texts, old_self, from, consulted)
            });
        }
    });
}

/// The body of [`compile_rule_at`]: `rule` compiled in the environments for it and for its
/// messageExpression, against the node's type and its provider, with its variables as the
/// minor reads them (`vars`, [`variables_as_read`]).
fn compile_rule_fresh(
    (env, message_env): (&Env, &Env),
    rule: &ValidationRule,
    (decl, provider): (&Arc<DeclType>, &DeclTypeProvider),
    vars: &[(String, Type)],
    node: Option<&str>,
) -> RuleCompilation {
    let mut out = RuleCompilation::default();
    if rule.rule.trim().is_empty() {
        return out;
    }
    if decl.minor_rules != 0 {
        crate::cel::version::consulted::note(decl.minor_rules);
    }
    if rule.optional_old_self.is_some() {
        crate::cel::version::consulted::note(crate::cel::version::consulted::OPTIONAL_OLD_SELF);
    }
    let checked = match compile_kept(env, node, &rule.rule, vars, provider) {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(CelError {
                required: false,
                detail: if e.1.is_some() {
                    e.0
                } else {
                    format!("compilation failed: {}", e.0)
                },
            });
            out.panic = e.1;
            return out;
        }
    };
    if *checked.output_type() != Type::Bool {
        out.error = Some(CelError {
            required: false,
            detail: "cel expression must evaluate to a bool".into(),
        });
        return out;
    }
    out.uses_old_self = checked.references_ident("oldSelf");
    if let Some(e) = env.program_error(&checked) {
        out.error = Some(CelError {
            required: false,
            detail: format!("program instantiation failed: {e}"),
        });
        return out;
    }
    let sizes = RuleSizes { root: decl.clone() };
    let (max_cost, mut drivers) = cost_and_drivers(env, &checked, &sizes);
    out.max_cost = max_cost;
    if !rule.message_expression.is_empty() {
        let env = message_env;
        match compile_kept(env, node, &rule.message_expression, vars, provider) {
            Err(e) => {
                out.message_error = Some(if e.1.is_some() {
                    e.0
                } else {
                    format!("messageExpression compilation failed: {}", e.0)
                });
                out.panic = e.1;
            }
            Ok(mc) if *mc.output_type() != Type::String => {
                out.message_error = Some("messageExpression must evaluate to a string".into());
            }
            Ok(mc) if env.program_error(&mc).is_some() => {
                let e = env.program_error(&mc).unwrap_or_default();
                out.message_error = Some(format!("messageExpression instantiation failed: {e}"));
            }
            Ok(mc) => {
                let (max_cost, more) = cost_and_drivers(env, &mc, &sizes);
                out.message_expression_cost = Some(max_cost);
                for d in more {
                    if !drivers.contains(&d) {
                        drivers.push(d);
                    }
                }
            }
        }
    }
    out.unbounded_fields = drivers;
    out
}

/// Compiles kept while copies of one object that differ from it only by bounds are estimated
/// ([`with_compiles_kept`]), by environment, node and text: a bound changes no CEL type, so an
/// expression at the same node compiles as it did (its sizes, so its cost, are estimated again
/// every time). An environment is told by its address: the searches that keep compiles
/// estimate creates, whose rules compile in their estimators' environments, which outlive the
/// scope.
#[derive(Default)]
struct KeptCompiles {
    done: HashMap<(usize, Box<str>, Box<str>), Vec<Kept>>,
    entries: usize,
}

/// A compile kept: its variables' types, its outcome, the steps it took and what it consulted.
struct Kept {
    vars: Vec<(String, Type)>,
    result: Result<CheckedExpr, CompileError>,
    steps: u64,
    consulted: (u64, u64),
}

/// Compiles [`with_compiles_kept`] keeps at most (the rules of one object on each minor; the
/// public corpus's largest CRD has fewer than 400).
const MAX_KEPT_COMPILES: usize = 4096;

thread_local! {
    static KEPT: RefCell<Option<KeptCompiles>> = const { RefCell::new(None) };
}

/// `f`, with the compiles the schema walk makes of each node's rules and messageExpressions
/// kept until it returns, for estimates of copies of one object that differ from it only by
/// bounds (`maxItems`, `maxProperties`, `maxLength`): the estimates a search for bounds
/// verifies them with. A compile found kept charges the steps it took and notes what it
/// consulted, as made again, so a budget stops where it would without it. A type checked was
/// most of a verification's CEL work.
pub fn with_compiles_kept<R>(f: impl FnOnce() -> R) -> R {
    struct PutBack(Option<KeptCompiles>);
    impl Drop for PutBack {
        fn drop(&mut self) {
            let outer = self.0.take();
            KEPT.with(|k| *k.borrow_mut() = outer);
        }
    }
    let _put_back = PutBack(KEPT.with(|k| k.borrow_mut().replace(KeptCompiles::default())));
    // The copies are not the object a range keeps compilations of.
    let _apart = PutBackAcross(ACROSS.with(|a| a.borrow_mut().take()));
    f()
}

/// Puts back the compilations a range keeps ([`with_rules_across_minors`]) on drop.
struct PutBackAcross(Option<AcrossMinors>);

impl Drop for PutBackAcross {
    fn drop(&mut self) {
        let outer = self.0.take();
        ACROSS.with(|a| *a.borrow_mut() = outer);
    }
}

/// `env.compile` of `text`, kept by [`with_compiles_kept`] for the node at `node`.
fn compile_kept(
    env: &Env,
    node: Option<&str>,
    text: &str,
    vars: &[(String, Type)],
    provider: &DeclTypeProvider,
) -> Result<CheckedExpr, CompileError> {
    use crate::cel::version::consulted;
    let Some(node) = node else {
        return env.compile(text, vars, provider);
    };
    let kept_here = KEPT.with(|k| k.borrow().is_some());
    let across = ACROSS.with(|a| a.borrow().as_ref().and_then(|a| a.minor_of(env)));
    if !kept_here && across.is_none() {
        return env.compile(text, vars, provider);
    }
    let check_key = across.map(|minor| (minor, (Box::<str>::from(node), Box::<str>::from(text))));
    if let Some((minor, key)) = &check_key {
        let hit = ACROSS.with(|a| a.borrow().as_ref()?.checks.get(key)?.take(*minor, vars));
        if let Some(result) = hit {
            ACROSS.with(|a| {
                if let Some(a) = a.borrow_mut().as_mut() {
                    a.taken.checks += 1;
                }
            });
            return Ok(result);
        }
    }
    if !kept_here {
        let ((result, consulted), steps) = crate::budget::counted(|| {
            consulted::tracking_all(|| env.compile(text, vars, provider))
        });
        if let (Some((minor, key)), Ok(checked)) = (check_key, &result) {
            keep_check(minor, key, vars, checked, steps, consulted);
        }
        return result;
    }
    let key = (env as *const Env as usize, Box::from(node), Box::from(text));
    let hit = KEPT.with(|k| {
        let k = k.borrow();
        let kept = k
            .as_ref()?
            .done
            .get(&key)?
            .iter()
            .find(|e| e.vars == vars)?;
        // Fewer steps left than it took: made again, to stop where it would.
        crate::budget::spend_again(kept.steps).then(|| (kept.result.clone(), kept.consulted))
    });
    if let Some((result, (rules, libraries))) = hit {
        consulted::note(rules);
        consulted::note_libraries(libraries);
        return result;
    }
    let ((result, consulted), steps) =
        crate::budget::counted(|| consulted::tracking_all(|| env.compile(text, vars, provider)));
    KEPT.with(|k| {
        if let Some(k) = k.borrow_mut().as_mut()
            && k.entries < MAX_KEPT_COMPILES
        {
            k.entries += 1;
            k.done.entry(key).or_default().push(Kept {
                vars: vars.to_vec(),
                result: result.clone(),
                steps,
                consulted,
            });
        }
    });
    result
}

/// Keeps minor `minor`'s type check of a text at a node (`key`) for the next minors of a range
/// ([`with_rules_across_minors`]).
fn keep_check(
    minor: usize,
    key: (Box<str>, Box<str>),
    vars: &[(String, Type)],
    checked: &CheckedExpr,
    steps: u64,
    consulted: (u64, u64),
) {
    ACROSS.with(|a| {
        let mut a = a.borrow_mut();
        let Some(a) = a.as_mut().filter(|a| a.entries < MAX_ACROSS_MINORS) else {
            return;
        };
        a.entries += 1;
        let made = MadeOn {
            minor,
            usable_at: None,
            vars: vars.to_vec(),
            result: checked.clone(),
            steps,
            consulted,
        };
        keep_made(&mut a.checks, key, made);
    });
}

/// How many unbounded nodes a cost read get their effect on it measured: the others are kept
/// as drivers unmeasured (a bounded number of estimates per expression).
const MEASURED_READS: usize = 32;

/// The maximum cost of `checked` in `env` and the unbounded nodes whose size changes it
/// (relative paths, in the order first read), by either cost algorithm where a range compares
/// them. A node a cost reads drives it when the cost with the node sized 0 is lower (beside the
/// work budget): what a bound on it would change, the same under both cost algorithms wherever
/// their costs agree (which nodes each *reads* differs: v0.23 sizes every node ahead). Where the
/// cost saturates and no node alone lowers it, every node read drives it.
fn cost_and_drivers(env: &Env, checked: &CheckedExpr, sizes: &RuleSizes) -> (u64, Vec<String>) {
    by_either_algorithm(env.cost_options(), |opts| {
        let run = |capped: Option<&str>| {
            let recording = Recording {
                inner: sizes,
                seen: RefCell::new(Vec::new()),
                probed: RefCell::new(HashMap::new()),
                capped,
            };
            let embedder = KubernetesEstimator {
                minor: env.minor,
                sizes: Some(&recording),
            };
            let max = estimate(checked, &embedder, opts).max;
            (max, recording.seen.into_inner())
        };
        let (max, read) = run(None);
        let driving: Vec<String> = read
            .iter()
            .enumerate()
            .filter(|(i, rel)| {
                *i >= MEASURED_READS
                    || crate::cel::cost::aside(|| run(Some(rel.as_str())).0)
                        .is_none_or(|capped| capped < max)
            })
            .map(|(_, rel)| rel.clone())
            .collect();
        if driving.is_empty() && max == u64::MAX {
            (max, read)
        } else {
            (max, driving)
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::cel::decls::Version;
    use crate::estimate::Estimator;

    /// The drivers of the one rule `rule` on `spec`, a string `s` and a list `l` of strings,
    /// none bounded, under minor 1.`minor`.
    fn drivers(minor: u32, rule: &str) -> (u64, Vec<String>) {
        let spec = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "l": {"type": "array", "items": {"type": "string"}},
            },
            "x-kubernetes-validations": [{"rule": rule}],
        });
        let crd = crate::fixtures::widgets(json!({"type": "object", "properties": {"spec": spec}}));
        let r = Estimator::new(Version::new(1, minor)).estimate_crd(&crd, "t");
        let rule = &r.schemas[0].rules[0];
        (rule.max_cost, rule.drivers.unbounded_fields.clone())
    }

    /// Drivers are the unbounded sizes a cost reads: the same before cel-go v0.23 (1.32, which
    /// asks sizes where a cost needs them) and after (1.33, which sizes every node first), and
    /// none where no cost depends on a size (`size()` is constant time).
    #[test]
    fn drivers_are_the_sizes_a_cost_reads_under_both_algorithms() {
        let cases: &[(&str, &[&str])] = &[
            ("size(self.s) > 0", &[]),
            ("self.s.size() < 10 && size(self.l) < 3", &[]),
            ("self.s.startsWith('a')", &[]),
            ("self.s.contains('a')", &["^.spec.s"]),
            (
                "self.s == 'x' || self.l[0].contains('y')",
                &["^.spec.s", "^.spec.l[*]"],
            ),
            ("self.s + 'x' != self.l[0]", &["^.spec.s", "^.spec.l[*]"]),
            ("'a' in self.l", &["^.spec.l"]),
            ("has(self.s) ? self.s.matches('^a+$') : true", &["^.spec.s"]),
        ];
        for (rule, want) in cases {
            let (old_cost, old) = drivers(32, rule);
            let (new_cost, new) = drivers(33, rule);
            assert_eq!(old_cost, new_cost, "{rule}: costs");
            let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            assert_eq!(old, want, "{rule} on 1.32");
            assert_eq!(new, want, "{rule} on 1.33");
        }
    }
}

#[cfg(test)]
mod kept_tests {
    use super::*;
    use crate::budget::{Limits, run_measured};
    use crate::estimate::Estimator;
    use serde_json::{Value, json};

    /// The number of compiles kept on this thread.
    fn kept() -> usize {
        KEPT.with(|k| k.borrow().as_ref().map_or(0, |k| k.entries))
    }

    /// An object's copies that differ only by a bound, each estimated with the compiles kept,
    /// get the reports, the rules consulted and the steps they get alone; every compile after
    /// the first copy's is found kept.
    #[test]
    fn copies_estimated_with_compiles_kept_are_as_estimated_alone() {
        let object = |max_items: u64| {
            crate::fixtures::widgets(json!({
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.items.all(i, i.name.startsWith('a'))",
                     "messageExpression": "'bad: ' + self.items.map(i, i.name).join(', ')"},
                    {"rule": "self.items.exists(i, i.nope == 1)"},
                    {"rule": "self.items.all(x, y, x < 5)"},
                ],
                "properties": {"items": {
                    "type": "array",
                    "maxItems": max_items,
                    "items": {
                        "type": "object",
                        "x-kubernetes-validations": [{"rule": "self.name.matches('^[a-z]+$')"}],
                        "properties": {"name": {"type": "string", "maxLength": 64}},
                    },
                }},
            }))
        };
        let estimator = Estimator::default();
        let measured = |v: &Value| {
            let (report, usage) = run_measured(Limits::default(), || {
                estimator.estimate_crd(v, "widgets.yaml")
            });
            let report = report.expect("not stopped");
            let consulted = (
                report.made_by.consulted.rules,
                report.made_by.consulted.libraries,
            );
            (
                serde_json::to_value(&report).unwrap(),
                consulted,
                usage.steps,
            )
        };
        let bounds = [3, 300, 30_000];
        let alone: Vec<_> = bounds.iter().map(|&n| measured(&object(n))).collect();
        let (with_kept, entries) = with_compiles_kept(|| {
            (bounds.iter())
                .map(|&n| (measured(&object(n)), kept()))
                .unzip::<_, _, Vec<_>, Vec<_>>()
        });
        assert_eq!(with_kept, alone);
        assert!(entries[0] >= 4, "{entries:?}");
        assert!(entries.iter().all(|&e| e == entries[0]), "{entries:?}");
        assert_eq!(kept(), 0, "dropped on return");
        // The costs do change with the bound (the compiles are kept, the estimates are not).
        assert_ne!(alone[0].0["schemas"], alone[2].0["schemas"]);
    }
}
