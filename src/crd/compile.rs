//! Compiling one rule the way apiextensions `schema/cel/compilation.go` `compileRule` does.

use std::cell::RefCell;
use std::sync::Arc;

use crate::cel::cost::{AstNode, Size, estimate};
use crate::cel::env::{CheckerPanic, Env};
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

/// Records the unbounded schema nodes the estimator asked about.
struct Recording<'a> {
    inner: &'a RuleSizes,
    seen: RefCell<Vec<String>>,
}

impl SizeSource for Recording<'_> {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size> {
        let path = node.path_elems();
        let t = self.inner.resolve(&path)?;
        if t.is_unbounded_sized() {
            let rel = crate::schema::decltype::display_path(&path[1..]);
            let mut seen = self.seen.borrow_mut();
            if !seen.contains(&rel) {
                seen.push(rel);
            }
        }
        Some(Size::new(0, t.max_elements as u64))
    }
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
    let mut out = RuleCompilation::default();
    if rule.rule.trim().is_empty() {
        return out;
    }
    let self_type = decl.cel.clone();
    let old_self = if rule.optional_old_self == Some(true) {
        Type::optional(self_type.clone())
    } else {
        self_type.clone()
    };
    let vars = vec![
        ("self".to_string(), self_type),
        ("oldSelf".to_string(), old_self),
    ];
    let checked = match env.compile(&rule.rule, &vars, provider) {
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
    let recording = Recording {
        inner: &sizes,
        seen: RefCell::new(Vec::new()),
    };
    let embedder = KubernetesEstimator {
        minor: env.minor,
        sizes: Some(&recording),
    };
    out.max_cost = estimate(&checked, &embedder, env.cost_options()).max;
    if !rule.message_expression.is_empty() {
        let env = message_env;
        match env.compile(&rule.message_expression, &vars, provider) {
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
                out.message_expression_cost =
                    Some(estimate(&mc, &embedder, env.cost_options()).max);
            }
        }
    }
    out.unbounded_fields = recording.seen.into_inner();
    out
}
