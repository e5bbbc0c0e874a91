//! The static cost estimator: cel-go `checker/cost.go` semantics, restated, including the
//! quirks that decide real numbers (size lookup order, Go slice aliasing of field paths,
//! ceiling arithmetic, saturation). See `shared/docs/cel-cost-model.md` §2–§5.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use super::ast::{Expr, ExprId, ExprKind, Literal};
use super::checker::CheckedExpr;
use super::minor::CostAlgorithm;
use super::types::{Kind, Type};
use super::version::consulted;

// cel-go `common/cost.go`.
pub const SELECT_AND_IDENT_COST: u64 = 1;
pub const CONST_COST: u64 = 0;
pub const LIST_CREATE_BASE_COST: u64 = 10;
pub const MAP_CREATE_BASE_COST: u64 = 30;
pub const STRUCT_CREATE_BASE_COST: u64 = 40;
pub const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
pub const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;

/// A `[min, max]` estimate (cel-go's `SizeEstimate` and `CostEstimate` have the same
/// arithmetic).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Estimate {
    pub min: u64,
    pub max: u64,
}

pub type Size = Estimate;
pub type Cost = Estimate;

pub const UNKNOWN: Estimate = Estimate {
    min: 0,
    max: u64::MAX,
};

#[allow(clippy::should_implement_trait)]
impl Estimate {
    pub const fn fixed(v: u64) -> Self {
        Estimate { min: v, max: v }
    }
    pub const fn new(min: u64, max: u64) -> Self {
        Estimate { min, max }
    }
    pub fn add(self, o: Estimate) -> Estimate {
        Estimate {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }
    pub fn mul(self, o: Estimate) -> Estimate {
        Estimate {
            min: mul_sat(self.min, o.min),
            max: mul_sat(self.max, o.max),
        }
    }
    /// `MultiplyByCostFactor`.
    pub fn factor(self, k: f64) -> Estimate {
        Estimate {
            min: multiply_by_cost_factor(self.min, k),
            max: multiply_by_cost_factor(self.max, k),
        }
    }
    pub fn union(self, o: Estimate) -> Estimate {
        Estimate {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

/// cel-go `multiplyUint64NoOverflow`.
pub fn mul_sat(x: u64, y: u64) -> u64 {
    if y != 0 && x > u64::MAX / y {
        u64::MAX
    } else {
        x.wrapping_mul(y)
    }
}

/// cel-go `multiplyByCostFactor`: f64 conversion (round to nearest), a pre-check against
/// 2^64 / k, one multiply, ceil, clamp at 2^64 (v0.17; v0.16 converts a ceiling of 2^64 or
/// more unchecked, which Go on amd64 makes 2^63: [`CostOptions::cost_factor_clamped`]).
pub fn multiply_by_cost_factor(x: u64, k: f64) -> u64 {
    const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;
    let xf = x as f64;
    if xf > 0.0 && k > 0.0 && xf > TWO_TO_64 / k {
        return u64::MAX;
    }
    let c = (xf * k).ceil();
    if c >= TWO_TO_64 {
        consulted::note(consulted::COST_FACTOR_CLAMP);
        if COST_FACTOR_CLAMPED.with(Cell::get) {
            u64::MAX
        } else {
            1 << 63
        }
    } else {
        c as u64
    }
}

// ---------------------------------------------------------------------------------------------
// Field paths with Go slice semantics (§4.9).

#[derive(Debug, Default)]
struct PathBuf {
    items: Vec<Rc<str>>,
    cap: usize,
}

/// A Go `[]string`: a shared backing array and a length. `append` writes in place when the
/// backing array has room, exactly as Go does, so paths can alias.
#[derive(Clone, Debug, Default)]
pub struct Path {
    buf: Option<Rc<RefCell<PathBuf>>>,
    len: usize,
}

impl Path {
    fn single(name: &str) -> Path {
        Path {
            buf: Some(Rc::new(RefCell::new(PathBuf {
                items: vec![name.into()],
                cap: 1,
            }))),
            len: 1,
        }
    }

    fn append(&self, elem: &str) -> Path {
        let elem: Rc<str> = elem.into();
        if let Some(b) = &self.buf {
            let mut bb = b.borrow_mut();
            if self.len < bb.cap {
                if bb.items.len() > self.len {
                    bb.items[self.len] = elem;
                } else {
                    bb.items.push(elem);
                }
                return Path {
                    buf: Some(b.clone()),
                    len: self.len + 1,
                };
            }
        }
        let old_cap = self.buf.as_ref().map(|b| b.borrow().cap).unwrap_or(0);
        let new_len = self.len + 1;
        let mut cap = go_next_cap(new_len, old_cap);
        cap = go_roundup_cap(cap);
        let mut items: Vec<Rc<str>> = match &self.buf {
            Some(b) => b.borrow().items[..self.len].to_vec(),
            None => Vec::new(),
        };
        items.push(elem);
        Path {
            buf: Some(Rc::new(RefCell::new(PathBuf { items, cap }))),
            len: new_len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements as they are now (a later in-place append may change them).
    pub fn read(&self) -> Vec<Rc<str>> {
        match &self.buf {
            Some(b) => b.borrow().items[..self.len].to_vec(),
            None => Vec::new(),
        }
    }

    fn first_is(&self, f: impl Fn(&str) -> bool) -> bool {
        match &self.buf {
            Some(b) if self.len > 0 => f(&b.borrow().items[0]),
            _ => false,
        }
    }
}

/// Go's `nextslicecap` for one appended element.
fn go_next_cap(new_len: usize, old_cap: usize) -> usize {
    let double = old_cap + old_cap;
    if new_len > double {
        return new_len;
    }
    if old_cap < 256 {
        return double;
    }
    let mut c = old_cap;
    while c < new_len {
        c += (c + 3 * 256) >> 2;
    }
    c
}

/// Go's `roundupsize` for 16-byte elements (string headers), within the small size classes.
fn go_roundup_cap(cap: usize) -> usize {
    const CLASSES: &[usize] = &[
        16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352,
        384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
        2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728,
        10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672,
        32768,
    ];
    let bytes = cap * 16;
    for &c in CLASSES {
        if c >= bytes {
            return c / 16;
        }
    }
    cap
}

// ---------------------------------------------------------------------------------------------

/// What estimators see of an argument or target (cel-go `checker.AstNode`).
#[derive(Clone, Debug)]
pub struct AstNode<'a> {
    pub path: Path,
    pub ty: Type,
    pub expr: Option<&'a Expr>,
    pub computed_size: Option<Size>,
    /// [`CostAlgorithm::ScopedLocals`]: the expression whose embedder size `computed_size` is
    /// (itself, or what a variable stands for), told the embedder when a cost reads it
    /// ([`CostEmbedder::size_consumed`]).
    pub size_origin: Option<ExprId>,
}

impl AstNode<'_> {
    /// A synthetic node (no expression), e.g. a list's element.
    pub fn synthetic(path: Path, ty: Type) -> AstNode<'static> {
        AstNode {
            path,
            ty,
            expr: None,
            computed_size: None,
            size_origin: None,
        }
    }

    pub fn path_elems(&self) -> Vec<Rc<str>> {
        self.path.read()
    }

    /// `path + [elem]` as a fresh path (Kubernetes' `listElementNode` copies).
    pub fn child_path(&self, elem: &str) -> Option<Path> {
        if self.path.is_empty() {
            return None;
        }
        let mut items = self.path.read();
        items.push(elem.into());
        let cap = items.len();
        Some(Path {
            buf: Some(Rc::new(RefCell::new(PathBuf { items, cap }))),
            len: cap,
        })
    }

    /// The literal int value of the node, if it is an int literal.
    pub fn int_literal(&self) -> Option<i64> {
        match self.expr.map(|e| &e.kind) {
            Some(ExprKind::Literal(Literal::Int(i))) => Some(*i),
            _ => None,
        }
    }
}

/// What a call is made on: its target and arguments as the estimators see them, their costs,
/// and the arguments' expressions.
#[derive(Clone, Copy)]
struct Operands<'n, 'a> {
    target: Option<&'n AstNode<'a>>,
    args: &'n [AstNode<'a>],
    costs: &'n [Cost],
    exprs: &'a [Expr],
}

/// A call estimate: cost and, optionally, the size of the result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CallEstimate {
    pub cost: Cost,
    pub result_size: Option<Size>,
}

impl CallEstimate {
    pub fn cost(cost: Cost) -> Self {
        CallEstimate {
            cost,
            result_size: None,
        }
    }
}

/// The embedder's two hooks (cel-go `checker.CostEstimator`): Kubernetes answers sizes from
/// the schema and call costs from its libraries.
pub trait CostEmbedder {
    /// The size a cost needs: asked where a call's or a comprehension's cost reads it.
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size>;
    /// The size of a node asked ahead of any cost that reads it (cel-go v0.23+ sizes every
    /// node it walks): [`CostEmbedder::size_consumed`] tells when a cost reads it.
    fn probe_size(&self, node: &AstNode<'_>) -> Option<Size> {
        self.estimate_size(node)
    }
    /// A cost read the size [`CostEmbedder::probe_size`] gave for expression `origin`.
    fn size_consumed(&self, _origin: ExprId) {}
    fn estimate_call_cost(
        &self,
        function: &str,
        overload_id: &str,
        target: Option<&AstNode<'_>>,
        args: &[AstNode<'_>],
    ) -> Option<CallEstimate>;
}

/// `ComputedSize`, else the embedder's size, else unknown (cel-go ext `estimateSize`,
/// Kubernetes `sizeEstimate`).
pub fn node_size(embedder: &dyn CostEmbedder, n: &AstNode<'_>) -> Size {
    computed_size(embedder, n)
        .or_else(|| embedder.estimate_size(n))
        .unwrap_or(UNKNOWN)
}

/// The node's `ComputedSize`, read by a cost (the embedder is told where it came from).
pub fn computed_size(embedder: &dyn CostEmbedder, n: &AstNode<'_>) -> Option<Size> {
    if n.computed_size.is_some()
        && let Some(o) = n.size_origin
    {
        embedder.size_consumed(o);
    }
    n.computed_size
}

#[derive(Clone, Copy, Debug)]
struct EntrySize {
    container: Kind,
    key: Size,
    val: Size,
}

fn union_entry(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(EntrySize {
            container: a.container,
            key: a.key.union(b.key),
            val: a.val.union(b.val),
        }),
        _ => None,
    }
}

#[derive(Clone, Debug)]
struct LocalVar {
    path: Path,
    size: Option<Size>,
    /// Where `size` came from ([`AstNode::size_origin`]).
    origin: Option<ExprId>,
    entry: Option<EntrySize>,
    /// [`CostAlgorithm::IterRanges`]: an iteration variable's path is `path` (the range's) plus
    /// this element, appended at every reference; `None`: no path (a range neither list nor map).
    reference_appends: Option<&'static str>,
}

/// Options of the estimator.
#[derive(Clone, Copy, Debug)]
pub struct CostOptions {
    /// Cost of `has()`: 0 in Kubernetes since 1.29 (`PresenceTestHasCost(false)`,
    /// [`super::minor::Minor::presence_test_cost`]).
    pub presence_test_cost: u64,
    /// The cel-go estimator the API server links.
    pub algorithm: CostAlgorithm,
    /// The global `matches(s, re)` is costed as `s.matches(re)`
    /// ([`super::minor::Minor::global_matches_cost`], cel-go v0.29).
    pub global_matches: bool,
    /// [`CostAlgorithm::IterRanges`]: a comprehension's result has the range's size
    /// ([`super::minor::Minor::comprehension_result_size`], cel-go v0.17.8).
    pub comprehension_result_size: bool,
    /// `multiplyByCostFactor` clamps a product of 2^64 or more at 2^64 − 1
    /// ([`super::minor::Minor::cost_factor_clamped`], cel-go v0.17).
    pub cost_factor_clamped: bool,
}

impl Default for CostOptions {
    fn default() -> Self {
        CostOptions {
            presence_test_cost: 0,
            algorithm: CostAlgorithm::ScopedLocals,
            global_matches: false,
            comprehension_result_size: true,
            cost_factor_clamped: true,
        }
    }
}

/// Estimates the cost of a checked expression. Notes that the estimate under way consulted the
/// cost algorithm ([`consulted::COST_ALGORITHM`]), unless [`by_either_algorithm`] finds the
/// other one agrees.
pub fn estimate(checked: &CheckedExpr, embedder: &dyn CostEmbedder, opts: CostOptions) -> Cost {
    consulted::note(consulted::COST_ALGORITHM);
    let n = checked.parsed.max_id as usize + 1;
    let mut c = Coster {
        checked,
        embedder,
        paths: vec![None; n],
        sizes: vec![None; n],
        origins: vec![None; n],
        entries: vec![None; n],
        locals: HashMap::new(),
        presence_cost: Cost::fixed(opts.presence_test_cost),
        iter_ranges: opts.algorithm == CostAlgorithm::IterRanges,
        global_matches: opts.global_matches,
        comprehension_result_size: opts.comprehension_result_size,
    };
    // Kept for the estimate's factors (its own and the Kubernetes estimator's), put back after
    // it, also when it unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            COST_FACTOR_CLAMPED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(COST_FACTOR_CLAMPED.with(|c| c.replace(opts.cost_factor_clamped)));
    c.cost(checked.expr())
}

thread_local! {
    /// [`CostOptions::cost_factor_clamped`] of the estimate under way (clamped outside one).
    static COST_FACTOR_CLAMPED: Cell<bool> = const { Cell::new(true) };
    /// Whether [`by_either_algorithm`] compares its costs with the other algorithm's.
    static COMPARING_ALGORITHMS: Cell<bool> = const { Cell::new(false) };
}

/// `f`'s result, with [`by_either_algorithm`] comparing every cost `f` makes with the other cost
/// algorithm's: a range asks it of an estimate it may share across the algorithm change
/// (Kubernetes 1.33), which it does where they agree.
pub fn comparing_algorithms<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            COMPARING_ALGORITHMS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(COMPARING_ALGORITHMS.with(|c| c.replace(true)));
    f()
}

/// `costs(opts)`: what the cost estimates of one expression (or rule) come to with `opts`,
/// everything an estimate keeps of them (costs, the sizes they read). Within
/// [`comparing_algorithms`], also `costs` with the other algorithm ([`comparing_with`]),
/// beside the work budget: the algorithm is noted as consulted only where the two differ (or
/// the other could not finish). `costs` makes its own embedder each call: what one records must
/// not reach the other.
pub fn by_either_algorithm<T: PartialEq>(opts: CostOptions, costs: impl Fn(CostOptions) -> T) -> T {
    let Some(other) = comparing_with(opts) else {
        return costs(opts);
    };
    let (mine, _) = consulted::holding_back(consulted::COST_ALGORITHM, || costs(opts));
    let theirs = aside(|| costs(other));
    algorithms_agree(theirs.as_ref() == Some(&mine));
    mine
}

/// Within [`comparing_algorithms`], while no cost of the estimate has been found to differ:
/// the options of the other cost algorithm, for the caller to cost with beside `opts`
/// ([`aside`]), its own costs made without noting the algorithm
/// ([`consulted::holding_back`]), and to say what it found with [`algorithms_agree`].
pub fn comparing_with(opts: CostOptions) -> Option<CostOptions> {
    // Once one cost differs, the estimate has consulted the algorithm: no more to compare.
    if !COMPARING_ALGORITHMS.with(Cell::get) || consulted::noted(consulted::COST_ALGORITHM) {
        return None;
    }
    Some(CostOptions {
        algorithm: match opts.algorithm {
            CostAlgorithm::IterRanges => CostAlgorithm::ScopedLocals,
            CostAlgorithm::ScopedLocals => CostAlgorithm::IterRanges,
        },
        ..opts
    })
}

/// `f` beside the estimate: not charged to its work budget ([`crate::budget::aside`]), what it
/// consults not noted; `None` where it could not finish.
pub fn aside<T>(f: impl FnOnce() -> T) -> Option<T> {
    crate::budget::aside(|| consulted::ignoring(f)).ok()
}

/// What a comparison of [`comparing_with`] found: the algorithm is noted as consulted unless
/// both costed alike.
pub fn algorithms_agree(agree: bool) {
    if !agree {
        consulted::note(consulted::COST_ALGORITHM);
    }
}

struct Coster<'a> {
    checked: &'a CheckedExpr,
    embedder: &'a dyn CostEmbedder,
    paths: Vec<Option<Path>>,
    sizes: Vec<Option<Size>>,
    /// [`AstNode::size_origin`] of each expression's size.
    origins: Vec<Option<ExprId>>,
    entries: Vec<Option<EntrySize>>,
    locals: HashMap<String, Vec<LocalVar>>,
    presence_cost: Cost,
    /// cel-go before v0.23 ([`CostAlgorithm::IterRanges`]).
    iter_ranges: bool,
    /// cel-go v0.29 and later ([`CostOptions::global_matches`]).
    global_matches: bool,
    /// cel-go v0.17.8 and later ([`CostOptions::comprehension_result_size`]).
    comprehension_result_size: bool,
}

const ACCUMULATORS: [&str; 2] = ["__result__", "@result"];

impl<'a> Coster<'a> {
    /// [`CostOptions::global_matches`], noted as consulted.
    fn global_matches(&self) -> bool {
        consulted::note(consulted::GLOBAL_MATCHES);
        self.global_matches
    }

    fn ty(&self, e: &Expr) -> Type {
        self.checked.type_of(e.id).clone()
    }

    fn peek(&self, name: &str) -> Option<&LocalVar> {
        self.locals.get(name).and_then(|v| v.last())
    }

    fn push(&mut self, name: &str, v: LocalVar) {
        self.locals.entry(name.to_string()).or_default().push(v);
    }

    fn pop(&mut self, name: &str) {
        if let Some(v) = self.locals.get_mut(name) {
            v.pop();
        }
    }

    fn get_path(&self, e: &Expr) -> Path {
        if !self.iter_ranges
            && let ExprKind::Ident(n) = &e.kind
            && let Some(v) = self.peek(n)
        {
            return v.path.clone();
        }
        self.paths[e.id as usize].clone().unwrap_or_default()
    }

    fn set_path(&mut self, id: ExprId, p: Path) {
        self.paths[id as usize] = Some(p);
    }

    fn set_size(&mut self, id: ExprId, s: Option<Size>) {
        if let Some(s) = s {
            self.sizes[id as usize] = Some(s);
        }
    }

    fn set_entry(&mut self, id: ExprId, s: Option<EntrySize>) {
        if let Some(s) = s {
            self.entries[id as usize] = Some(s);
        }
    }

    fn entry_size(&self, e: &Expr) -> Option<EntrySize> {
        if let Some(s) = self.entries[e.id as usize] {
            return Some(s);
        }
        if let ExprKind::Ident(n) = &e.kind
            && let Some(v) = self.peek(n)
        {
            return v.entry;
        }
        None
    }

    fn compute_size(&mut self, e: &Expr) -> Option<Size> {
        if self.iter_ranges {
            return Some(self.size_estimate(e));
        }
        if let Some(s) = self.sizes[e.id as usize] {
            return Some(s);
        }
        if let Some(s) = expr_size(e) {
            return Some(s);
        }
        let node = AstNode {
            path: self.get_path(e),
            ty: self.ty(e),
            expr: Some(e),
            computed_size: None,
            size_origin: None,
        };
        if let Some(s) = self.embedder.probe_size(&node) {
            self.sizes[e.id as usize] = Some(s);
            self.origins[e.id as usize] = Some(e.id);
            return Some(s);
        }
        if is_scalar(&node.ty) {
            return Some(Size::fixed(1));
        }
        if let ExprKind::Ident(n) = &e.kind
            && let Some(v) = self.peek(n)
            && v.size.is_some()
        {
            let (size, origin) = (v.size, v.origin);
            self.origins[e.id as usize] = origin;
            return size;
        }
        None
    }

    /// Where the size of `e` came from, if from the embedder.
    fn origin(&self, e: &Expr) -> Option<ExprId> {
        self.origins[e.id as usize]
    }

    /// `e`'s size is `from`'s.
    fn set_size_of(&mut self, e: ExprId, from: &Expr, s: Option<Size>) {
        if s.is_some() {
            self.origins[e as usize] = self.origin(from);
        }
        self.set_size(e, s);
    }

    /// [`CostAlgorithm::IterRanges`]: `ComputedSize()` of the node handed to estimators: the
    /// size computed for a call or comprehension, else a literal's.
    fn derived_size(&self, e: &Expr) -> Option<Size> {
        self.sizes[e.id as usize].or_else(|| expr_size(e))
    }

    /// [`CostAlgorithm::IterRanges`]: cel-go's `sizeEstimate`: the node's computed size, else
    /// the embedder's, else 1 for scalars, else unknown.
    fn size_estimate(&self, e: &Expr) -> Size {
        let node = self.legacy_node(e);
        legacy_node_size(self.embedder, &node)
    }

    fn legacy_node<'e>(&self, e: &'e Expr) -> AstNode<'e> {
        let mut path = self.paths[e.id as usize].clone().unwrap_or_default();
        if path.first_is(|f| ACCUMULATORS.contains(&f)) {
            path = Path::default();
        }
        AstNode {
            path,
            ty: self.ty(e),
            expr: Some(e),
            computed_size: self.derived_size(e),
            size_origin: None,
        }
    }

    fn size_or_unknown(&mut self, e: &Expr) -> Size {
        self.compute_size(e).unwrap_or(UNKNOWN)
    }

    fn new_node(&mut self, e: &'a Expr) -> AstNode<'a> {
        if self.iter_ranges {
            return self.legacy_node(e);
        }
        let mut path = self.get_path(e);
        if path.first_is(|f| ACCUMULATORS.contains(&f)) {
            path = Path::default();
        }
        let size = self.compute_size(e);
        AstNode {
            path,
            ty: self.ty(e),
            expr: Some(e),
            computed_size: size,
            size_origin: self.origin(e),
        }
    }

    fn cost(&mut self, e: &'a Expr) -> Cost {
        crate::budget::charge(1);
        if match &e.kind {
            ExprKind::Comprehension(_) => true,
            ExprKind::List { elements, .. } => !elements.is_empty(),
            ExprKind::Map { entries } => !entries.is_empty(),
            ExprKind::Ident(name) => name == "variables" || self.peek(name).is_some(),
            ExprKind::Call { function, .. } => {
                function == "dyn"
                    || function.contains("optional")
                    || function.contains('?')
                    || matches!(function.as_str(), "or" | "orValue" | "hasValue" | "value")
            }
            _ => false,
        } {
            consulted::note(consulted::ALGORITHM_PATHS);
        }
        match &e.kind {
            ExprKind::Literal(_) => Cost::fixed(CONST_COST),
            ExprKind::Ident(name) => {
                let p = match self.peek(name) {
                    Some(v) if self.iter_ranges => {
                        v.reference_appends.map(|sub| v.path.append(sub))
                    }
                    Some(v) => Some(v.path.clone()),
                    None => Some(Path::single(name)),
                };
                if let Some(p) = p {
                    self.set_path(e.id, p);
                }
                Cost::fixed(SELECT_AND_IDENT_COST)
            }
            ExprKind::Select {
                operand,
                field,
                test_only,
            } => {
                if *test_only {
                    consulted::note(consulted::PRESENCE_TEST_COST);
                    return self.presence_cost.add(self.cost(operand));
                }
                let mut sum = self.cost(operand);
                if matches!(
                    self.ty(operand).kind(),
                    Kind::Map | Kind::Struct | Kind::TypeParam
                ) {
                    sum = sum.add(Cost::fixed(SELECT_AND_IDENT_COST));
                }
                let p = self.get_path(operand).append(field);
                self.set_path(e.id, p);
                sum
            }
            ExprKind::Call { .. } => self.cost_call(e),
            ExprKind::List { elements, .. } => {
                let mut sum = Cost::default();
                let mut item = Size::new(u64::MAX, 0);
                if elements.is_empty() {
                    item.min = 0;
                }
                for el in elements {
                    sum = sum.add(self.cost(el));
                    if !self.iter_ranges {
                        let s = self.size_or_unknown(el);
                        item = item.union(s);
                    }
                }
                if self.iter_ranges {
                    return sum.add(Cost::fixed(LIST_CREATE_BASE_COST));
                }
                self.set_entry(
                    e.id,
                    Some(EntrySize {
                        container: Kind::List,
                        key: Size::fixed(1),
                        val: item,
                    }),
                );
                sum.add(Cost::fixed(LIST_CREATE_BASE_COST))
            }
            ExprKind::Map { entries } => {
                let mut sum = Cost::default();
                let mut ks = Size::new(u64::MAX, 0);
                let mut vs = Size::new(u64::MAX, 0);
                if entries.is_empty() {
                    ks.min = 0;
                    vs.min = 0;
                }
                for en in entries {
                    sum = sum.add(self.cost(&en.key));
                    sum = sum.add(self.cost(&en.value));
                    if self.iter_ranges {
                        continue;
                    }
                    let k = self.size_or_unknown(&en.key);
                    ks = ks.union(k);
                    let v = self.size_or_unknown(&en.value);
                    vs = vs.union(v);
                }
                if !self.iter_ranges {
                    self.set_entry(
                        e.id,
                        Some(EntrySize {
                            container: Kind::Map,
                            key: ks,
                            val: vs,
                        }),
                    );
                }
                sum.add(Cost::fixed(MAP_CREATE_BASE_COST))
            }
            ExprKind::Struct { fields, .. } => {
                let mut sum = Cost::default();
                for f in fields {
                    sum = sum.add(self.cost(&f.value));
                }
                sum.add(Cost::fixed(STRUCT_CREATE_BASE_COST))
            }
            ExprKind::Comprehension(c) if self.iter_ranges => {
                // cel-go before v0.23: binds are comprehensions, the accumulator is not a
                // scoped variable, only the first iteration variable is tracked, and every
                // comprehension's result has the range's size.
                let mut sum = self.cost(&c.iter_range);
                sum = sum.add(self.cost(&c.accu_init));
                let appends = match self.ty(&c.iter_range).kind() {
                    Kind::List => Some("@items"),
                    Kind::Map => Some("@keys"),
                    _ => None,
                };
                let range_path = self.paths[c.iter_range.id as usize]
                    .clone()
                    .unwrap_or_default();
                self.push(
                    &c.iter_var,
                    LocalVar {
                        path: range_path,
                        size: None,
                        origin: None,
                        entry: None,
                        reference_appends: appends,
                    },
                );
                let loop_cost = self.cost(&c.loop_cond);
                let step_cost = self.cost(&c.loop_step);
                self.pop(&c.iter_var);
                sum = sum.add(self.cost(&c.result));
                let range_cnt = self.size_estimate(&c.iter_range);
                consulted::note(consulted::COMPREHENSION_RESULT_SIZE);
                if self.comprehension_result_size {
                    self.sizes[e.id as usize] = Some(range_cnt);
                }
                sum.add(range_cnt.mul(step_cost.add(loop_cost)))
            }
            ExprKind::Comprehension(c) => {
                let is_bind = matches!(&c.iter_range.kind, ExprKind::List { elements, .. } if elements.is_empty())
                    && matches!(c.loop_cond.kind, ExprKind::Literal(Literal::Bool(false)))
                    && c.accu_var != "__result__";
                if is_bind {
                    let mut sum = self.cost(&c.iter_range);
                    sum = sum.add(self.cost(&c.accu_init));
                    self.push_local(&c.accu_var, &c.accu_init);
                    sum = sum.add(self.cost(&c.result));
                    self.pop(&c.accu_var);
                    let s = self.compute_size(&c.result);
                    self.set_size_of(e.id, &c.result, s);
                    let en = self.entry_size(&c.result);
                    self.set_entry(e.id, en);
                    return sum;
                }
                let mut sum = self.cost(&c.iter_range);
                sum = sum.add(self.cost(&c.accu_init));
                self.push_local(&c.accu_var, &c.accu_init);
                if let Some(v2) = &c.iter_var2 {
                    self.push_iter(&c.iter_var, &c.iter_range, IterRole::Key);
                    self.push_iter(v2, &c.iter_range, IterRole::Value);
                } else {
                    self.push_iter(&c.iter_var, &c.iter_range, IterRole::Single);
                }
                let loop_cost = self.cost(&c.loop_cond);
                let step_cost = self.cost(&c.loop_step);
                self.pop(&c.iter_var);
                if let Some(v2) = &c.iter_var2 {
                    self.pop(v2);
                }
                sum = sum.add(self.cost(&c.result));
                self.pop(&c.accu_var);
                let range_cnt = self.size_or_unknown(&c.iter_range);
                if let Some(o) = self.origin(&c.iter_range) {
                    self.embedder.size_consumed(o);
                }
                sum = sum.add(range_cnt.mul(step_cost.add(loop_cost)));
                match &c.accu_init.kind {
                    ExprKind::Literal(_) => {
                        let s = self.compute_size(&c.accu_init);
                        self.set_size(e.id, s);
                    }
                    ExprKind::List { .. } | ExprKind::Map { .. } => {
                        self.set_size(e.id, Some(range_cnt));
                        let en = self.entry_size(&c.loop_step);
                        self.set_entry(e.id, en);
                    }
                    _ => {}
                }
                sum
            }
        }
    }

    fn push_local(&mut self, name: &str, e: &Expr) {
        let path = self.get_path(e);
        let entry = self.entry_size(e);
        let size = self.compute_size(e);
        self.push(
            name,
            LocalVar {
                path,
                size,
                origin: self.origin(e),
                entry,
                reference_appends: None,
            },
        );
    }

    fn push_iter(&mut self, name: &str, range: &Expr, role: IterRole) {
        let entry = self.entry_size(range);
        let container = match entry {
            Some(en) => en.container,
            None => self.ty(range).kind(),
        };
        let is_list = container == Kind::List;
        let (size, sub) = match role {
            IterRole::Single => {
                if is_list {
                    (entry.map(|x| x.val), "@items")
                } else {
                    (entry.map(|x| x.key), "@keys")
                }
            }
            IterRole::Key => (
                entry.map(|x| x.key),
                if is_list { "@indices" } else { "@keys" },
            ),
            IterRole::Value => (
                entry.map(|x| x.val),
                if is_list { "@items" } else { "@values" },
            ),
        };
        let path = self.get_path(range).append(sub);
        self.push(
            name,
            LocalVar {
                path,
                size,
                origin: None,
                entry: None,
                reference_appends: None,
            },
        );
    }

    fn cost_call(&mut self, e: &'a Expr) -> Cost {
        let Some((function, target, args)) = e.as_call() else {
            unreachable!()
        };
        if function == "dyn" && args.len() == 1 && !self.iter_ranges {
            let c = self.cost(&args[0]);
            let s = self.compute_size(&args[0]);
            self.set_size_of(e.id, &args[0], s);
            let en = self.entry_size(&args[0]);
            self.set_entry(e.id, en);
            return Cost::fixed(1).add(c);
        }
        let mut arg_nodes = Vec::with_capacity(args.len());
        let mut arg_costs = Vec::with_capacity(args.len());
        for a in args {
            arg_costs.push(self.cost(a));
            let n = self.new_node(a);
            arg_nodes.push(n);
        }
        let overloads = self.checked.overload_ids(e.id);
        if overloads.is_empty() {
            return Cost::default();
        }
        let mut sum = Cost::default();
        let mut target_node = None;
        if let Some(t) = target {
            sum = sum.add(self.cost(t));
            target_node = Some(self.new_node(t));
        }
        let mut fn_cost = Cost::new(u64::MAX, 0);
        let mut result_size: Option<Size> = None;
        for o in overloads {
            let operands = Operands {
                target: target_node.as_ref(),
                args: &arg_nodes,
                costs: &arg_costs,
                exprs: args,
            };
            let est = self.function_cost(e, function, o, operands);
            fn_cost = fn_cost.union(est.cost);
            if let Some(rs) = est.result_size {
                result_size = Some(match result_size {
                    None => rs,
                    Some(prev) => prev.union(rs),
                });
            }
            match &**o {
                "index_list" | "index_map" if self.iter_ranges && !args.is_empty() => {
                    let sub = if &**o == "index_list" {
                        "@items"
                    } else {
                        "@values"
                    };
                    let p = self.get_path(&args[0]).append(sub);
                    self.set_path(e.id, p);
                }
                "index_list" if !args.is_empty() => {
                    result_size = self.entry_size(&args[0]).map(|x| x.val);
                    let p = self.get_path(&args[0]).append("@items");
                    self.set_path(e.id, p);
                }
                "index_map" if !args.is_empty() => {
                    result_size = self.entry_size(&args[0]).map(|x| x.val);
                    let p = self.get_path(&args[0]).append("@values");
                    self.set_path(e.id, p);
                }
                _ => {}
            }
            if result_size.is_none() && !self.iter_ranges {
                result_size = self.compute_size(e);
            }
        }
        self.set_size(e.id, result_size);
        sum.add(fn_cost)
    }

    fn function_cost(
        &mut self,
        e: &Expr,
        function: &str,
        overload: &str,
        operands: Operands<'_, 'a>,
    ) -> CallEstimate {
        let Operands {
            target,
            args,
            costs: arg_costs,
            exprs: arg_exprs,
        } = operands;
        let arg_sum = || arg_costs.iter().fold(Cost::default(), |s, c| s.add(*c));
        if let Some(est) = overload_estimate(self.embedder, overload, target, args) {
            return CallEstimate {
                cost: est.cost.add(arg_sum()),
                result_size: est.result_size,
            };
        }
        if let Some(est) = self
            .embedder
            .estimate_call_cost(function, overload, target, args)
        {
            return CallEstimate {
                cost: est.cost.add(arg_sum()),
                result_size: est.result_size,
            };
        }
        let embedder = self.embedder;
        let iter_ranges = self.iter_ranges;
        let sz = |n: &AstNode| {
            if iter_ranges {
                legacy_node_size(embedder, n)
            } else {
                computed_size(embedder, n).unwrap_or(UNKNOWN)
            }
        };
        match overload {
            "string_format" => {
                if let Some(t) = target {
                    return CallEstimate::cost(
                        sz(t).factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum()),
                    );
                }
            }
            "string_to_bytes" if args.len() == 1 => {
                let s = sz(&args[0]);
                return CallEstimate {
                    cost: s.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum()),
                    result_size: Some(Size::new(s.min, s.max.wrapping_mul(4))),
                };
            }
            "bytes_to_string" if args.len() == 1 => {
                let s = sz(&args[0]);
                return CallEstimate {
                    cost: s.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum()),
                    result_size: Some(Size::new(s.min / 4, s.max)),
                };
            }
            "strings_quote" if args.len() == 1 => {
                let s = sz(&args[0]);
                return CallEstimate {
                    cost: s.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum()),
                    result_size: Some(Size::new(
                        s.min.wrapping_add(2),
                        s.max.wrapping_mul(2).wrapping_add(2),
                    )),
                };
            }
            "starts_with_string" | "ends_with_string" if args.len() == 1 => {
                return CallEstimate::cost(
                    sz(&args[0])
                        .factor(STRING_TRAVERSAL_COST_FACTOR)
                        .add(arg_sum()),
                );
            }
            "in_list" if args.len() == 2 => {
                return CallEstimate::cost(sz(&args[1]).factor(1.0).add(arg_sum()));
            }
            // The string and the regex: the receiver and the argument of `s.matches(re)`; from
            // cel-go v0.29 also the two arguments of the global `matches(s, re)`, which before
            // cost 1 like any call (cel-expr/cel-go#1350).
            "matches_string" | "matches" => {
                let operands = match (overload, target, args) {
                    ("matches_string", Some(t), [re]) => Some((t, re)),
                    ("matches", None, [s, re]) if self.global_matches() => Some((s, re)),
                    _ => None,
                };
                if let Some((s, re)) = operands {
                    let str_cost = sz(s)
                        .add(Size::fixed(1))
                        .factor(STRING_TRAVERSAL_COST_FACTOR);
                    let re_cost = sz(re).factor(REGEX_STRING_LENGTH_COST_FACTOR);
                    return CallEstimate::cost(str_cost.mul(re_cost).add(arg_sum()));
                }
            }
            "contains_string" => {
                if let (Some(t), 1) = (target, args.len()) {
                    let a = sz(t).factor(STRING_TRAVERSAL_COST_FACTOR);
                    let b = sz(&args[0]).factor(STRING_TRAVERSAL_COST_FACTOR);
                    return CallEstimate::cost(a.mul(b).add(arg_sum()));
                }
            }
            "logical_or" | "logical_and" => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                return CallEstimate::cost(Cost::new(l.min, l.add(r).max));
            }
            "conditional" => {
                let size = sz(&args[1]).union(sz(&args[2]));
                let en = union_entry(
                    self.entry_size(&arg_exprs[1]),
                    self.entry_size(&arg_exprs[2]),
                );
                self.set_entry(e.id, en);
                let c = arg_costs[0].add(arg_costs[1].union(arg_costs[2]));
                return CallEstimate {
                    cost: c,
                    result_size: Some(size),
                };
            }
            "add_string" | "add_bytes" | "add_list" if args.len() == 2 => {
                let rs = sz(&args[0]).add(sz(&args[1]));
                let en = union_entry(
                    self.entry_size(&arg_exprs[0]),
                    self.entry_size(&arg_exprs[1]),
                );
                if en.is_some() {
                    self.set_entry(e.id, en);
                }
                if overload == "add_list" {
                    return CallEstimate {
                        cost: Cost::fixed(1).add(arg_sum()),
                        result_size: Some(rs),
                    };
                }
                return CallEstimate {
                    cost: rs.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum()),
                    result_size: Some(rs),
                };
            }
            "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals" => {
                let m = sz(&args[0]).max.min(sz(&args[1]).max);
                let c =
                    Cost::new(if m > 0 { 1 } else { 0 }, m).factor(STRING_TRAVERSAL_COST_FACTOR);
                return CallEstimate::cost(c.add(arg_sum()));
            }
            _ => {}
        }
        CallEstimate::cost(Cost::fixed(1).add(arg_sum()))
    }
}

#[derive(Clone, Copy)]
enum IterRole {
    Single,
    Key,
    Value,
}

/// cel-go's `sizeEstimate` before v0.23: the node's `ComputedSize()`, else the embedder's, else
/// 1 for scalars, else unknown.
fn legacy_node_size(embedder: &dyn CostEmbedder, n: &AstNode<'_>) -> Size {
    n.computed_size
        .or_else(|| embedder.estimate_size(n))
        .or_else(|| {
            // `isScalar` before v0.23: no optional of a scalar.
            matches!(
                n.ty,
                Type::Bool
                    | Type::Double
                    | Type::Duration
                    | Type::Int
                    | Type::Timestamp
                    | Type::Uint
            )
            .then_some(Size::fixed(1))
        })
        .unwrap_or(UNKNOWN)
}

/// Literal and aggregate sizes (cel-go `computeExprSize`).
fn expr_size(e: &Expr) -> Option<Size> {
    let v = match &e.kind {
        ExprKind::Literal(l) => match l {
            Literal::String(s) => s.chars().count() as u64,
            Literal::Bytes(b) => b.len() as u64,
            _ => 1,
        },
        ExprKind::List { elements, .. } => elements.len() as u64,
        ExprKind::Map { entries } => entries.len() as u64,
        _ => return None,
    };
    Some(Size::fixed(v))
}

/// cel-go `isScalar`.
fn is_scalar(t: &Type) -> bool {
    match t {
        Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => {
            true
        }
        Type::Opaque(n, p) if &**n == "optional_type" && p.len() == 1 => is_scalar(&p[0]),
        _ => false,
    }
}

/// Overload estimators registered by cel-go extension libraries (§5): `ext.Sets`, `ext.Lists`.
/// They only ever see overload ids of libraries that are in the environment.
fn overload_estimate(
    embedder: &dyn CostEmbedder,
    overload: &str,
    target: Option<&AstNode>,
    args: &[AstNode],
) -> Option<CallEstimate> {
    let size = |n: &AstNode| node_size(embedder, n);
    let list_call = |factor: f64, list: Size| CallEstimate {
        cost: list
            .factor(factor)
            .add(Cost::fixed(1))
            .add(Cost::fixed(LIST_CREATE_BASE_COST)),
        result_size: Some(list),
    };
    let int_or = |n: &AstNode, default: u64| match n.int_literal() {
        Some(i) if i < 0 => 0,
        Some(i) => i as u64,
        None => default,
    };
    match overload {
        "list_sets_contains_list" | "list_sets_intersects_list" | "list_sets_equivalent_list" => {
            if args.len() != 2 {
                return None;
            }
            let f = if overload == "list_sets_equivalent_list" {
                2.0
            } else {
                1.0
            };
            Some(CallEstimate::cost(
                size(&args[0])
                    .mul(size(&args[1]))
                    .factor(f)
                    .add(Cost::fixed(1)),
            ))
        }
        "list_slice" => {
            let t = target?;
            if args.len() != 2 {
                return None;
            }
            let sz = size(t);
            let start = int_or(&args[0], 0);
            let end = int_or(&args[1], sz.max);
            Some(list_call(1.0, Size::fixed(end.wrapping_sub(start))))
        }
        "lists_range" => {
            if target.is_some() || args.len() != 1 {
                return None;
            }
            Some(list_call(1.0, Size::fixed(int_or(&args[0], u64::MAX))))
        }
        "list_reverse" => {
            let t = target?;
            if !args.is_empty() {
                return None;
            }
            Some(list_call(1.0, size(t)))
        }
        "list_flatten" | "list_flatten_int" => {
            let t = target?;
            if args.len() > 1 {
                return None;
            }
            let depth = if args.len() == 1 {
                int_or(&args[0], u64::MAX)
            } else {
                1
            };
            Some(list_call(depth as f64, size(t)))
        }
        "list_distinct" => {
            let t = target?;
            if !args.is_empty() {
                return None;
            }
            let s = size(t);
            Some(list_call(2.0, s.mul(s)))
        }
        _ => {
            let (elem, by_keys) = if let Some(rest) = overload.strip_prefix("list_") {
                if let Some(t) = rest.strip_suffix("_sortByAssociatedKeys") {
                    (t, true)
                } else if let Some(t) = rest.strip_suffix("_sort") {
                    (t, false)
                } else {
                    return None;
                }
            } else {
                return None;
            };
            const COMPARABLE: [&str; 8] = [
                "int",
                "uint",
                "double",
                "bool",
                "google.protobuf.Duration",
                "google.protobuf.Timestamp",
                "string",
                "bytes",
            ];
            if !COMPARABLE.contains(&elem) {
                return None;
            }
            target?;
            let node = if by_keys {
                if args.len() != 1 {
                    return None;
                }
                &args[0]
            } else {
                if !args.is_empty() {
                    return None;
                }
                target.unwrap()
            };
            let s = size(node);
            let factor = if elem == "string" || elem == "bytes" {
                2.0 + STRING_TRAVERSAL_COST_FACTOR
            } else {
                2.0
            };
            Some(list_call(factor, s.mul(s)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_factor_matches_go() {
        assert_eq!(
            multiply_by_cost_factor(u64::MAX, 0.1),
            1_844_674_407_370_955_264
        );
        assert_eq!(multiply_by_cost_factor(u64::MAX, 1.0), u64::MAX);
        assert_eq!(multiply_by_cost_factor(3_145_726, 0.1), 314_573);
        assert_eq!(multiply_by_cost_factor(1025, 0.1), 103);
        assert_eq!(multiply_by_cost_factor(0, 0.1), 0);
    }

    #[test]
    fn go_slices_alias_on_append() {
        let base = Path::single("self").append("l"); // cap 2
        let item = base.append("@items"); // new buffer, cap 4
        let a = item.append("items"); // in place, slot 3
        assert_eq!(
            a.read().iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            ["self", "l", "@items", "items"]
        );
        let _b = item.append("name"); // overwrites slot 3
        assert_eq!(&*a.read()[3], "name");
    }

    #[test]
    fn go_capacity_growth() {
        assert_eq!(go_roundup_cap(go_next_cap(1, 0)), 1);
        assert_eq!(go_roundup_cap(go_next_cap(2, 1)), 2);
        assert_eq!(go_roundup_cap(go_next_cap(3, 2)), 4);
        assert_eq!(go_roundup_cap(go_next_cap(5, 4)), 8);
    }
}
