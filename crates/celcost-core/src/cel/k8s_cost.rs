//! Kubernetes' call-cost estimator, `k8s.io/apiserver/pkg/cel/library/cost.go`
//! (`CostEstimator.EstimateCallCost`), keyed by function name, restated.

use super::ast::ExprId;
use super::cost::{
    AstNode, CallEstimate, Cost, CostEmbedder, REGEX_STRING_LENGTH_COST_FACTOR,
    STRING_TRAVERSAL_COST_FACTOR, Size, computed_size, node_size,
};
use super::minor::Minor;
use super::types::{Kind, Type};
use super::version::consulted;

/// `MaxNameFormatRegexSize` (k8s.io/apiserver pkg/cel/limits.go).
pub const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;
/// `MaxFormatSize`.
pub const MAX_FORMAT_SIZE: u64 = 64;

/// Sizes of schema-backed nodes: the CRD size estimator answers from the rule's DeclType;
/// policies (upstream) have none.
pub trait SizeSource {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size>;
    /// [`CostEmbedder::probe_size`].
    fn probe_size(&self, node: &AstNode<'_>) -> Option<Size> {
        self.estimate_size(node)
    }
    /// [`CostEmbedder::size_consumed`].
    fn size_consumed(&self, _origin: ExprId) {}
}

/// `library.CostEstimator{SizeEstimator: …}`.
pub struct KubernetesEstimator<'s> {
    pub sizes: Option<&'s dyn SizeSource>,
    /// The minor whose `cost.go` is followed.
    pub minor: &'static Minor,
}

impl CostEmbedder for KubernetesEstimator<'_> {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size> {
        self.sizes.and_then(|s| s.estimate_size(node))
    }

    fn probe_size(&self, node: &AstNode<'_>) -> Option<Size> {
        self.sizes.and_then(|s| s.probe_size(node))
    }

    fn size_consumed(&self, origin: ExprId) {
        if let Some(s) = self.sizes {
            s.size_consumed(origin);
        }
    }

    fn estimate_call_cost(
        &self,
        function: &str,
        overload_id: &str,
        target: Option<&AstNode<'_>>,
        args: &[AstNode<'_>],
    ) -> Option<CallEstimate> {
        let size = |n: &AstNode| node_size(self, n);
        let one = || Some(CallEstimate::cost(Cost::fixed(1)));
        match function {
            "check" => Some(CallEstimate::cost(Cost::fixed(350_000))),
            "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace"
            | "name" | "allowed" | "reason" | "error" | "errored" => one(),
            "fieldSelector" | "labelSelector" if args.len() == 1 => {
                Some(CallEstimate::cost(selector_cost(size(&args[0]))))
            }
            // `includes` (lists library version 1, Kubernetes 1.37) is only declared from 1.37:
            // no earlier environment has a function of that name.
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes" => {
                let t = target?;
                if let Some(el) = list_element_node(t) {
                    let mut el_cost = Cost::fixed(1);
                    if matches!(el.ty.kind(), Kind::String | Kind::Bytes) {
                        el_cost = el_cost.add(size(&el).factor(STRING_TRAVERSAL_COST_FACTOR));
                    }
                    Some(CallEstimate::cost(size(t).mul(el_cost)))
                } else if function == "includes" {
                    // The receiver may be a list under `dyn`: a comparison of 1 per element.
                    Some(CallEstimate::cost(size(t).mul(Cost::fixed(1))))
                } else {
                    Some(CallEstimate::cost(
                        size(t).factor(STRING_TRAVERSAL_COST_FACTOR),
                    ))
                }
            }
            "url" | "jsonpatch.escapeKey" if args.len() == 1 => {
                let sz = size(&args[0]);
                if function == "url" {
                    consulted::note(consulted::URL_RESULT_SIZE);
                }
                Some(CallEstimate {
                    cost: sz.factor(STRING_TRAVERSAL_COST_FACTOR),
                    result_size: (function != "url" || self.minor.url_result_size).then_some(sz),
                })
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = size(target?);
                Some(CallEstimate {
                    cost: sz.factor(STRING_TRAVERSAL_COST_FACTOR),
                    result_size: Some(sz),
                })
            }
            "replace" if target.is_some() && args.len() >= 2 => {
                let sz = size(target?);
                let to_replace = size(&args[0]);
                let with = size(&args[1]);
                let (count_max, retained_max) =
                    replace_bound(sz.max, to_replace.min, with.max <= to_replace.min);
                let (count_min, retained_min) =
                    replace_bound(sz.min, to_replace.max, to_replace.max <= with.min);
                let count = Size::new(count_min, count_max);
                let retained = Size::new(retained_min, retained_max);
                let result = count.mul(with).add(retained);
                Some(CallEstimate {
                    cost: sz.factor(2.0 * STRING_TRAVERSAL_COST_FACTOR),
                    result_size: Some(result),
                })
            }
            "split" => {
                let sz = size(target?);
                let mut max = sz.max;
                if args.len() > 1
                    && let Some(i) = args[1].int_literal()
                {
                    max = i as u64;
                }
                Some(CallEstimate {
                    cost: sz.factor(2.0 * STRING_TRAVERSAL_COST_FACTOR),
                    result_size: Some(Size::new(0, max)),
                })
            }
            "join" => {
                let t = target?;
                let list_size = size(t);
                let mut sz = Size::default();
                if let Some(el) = list_element_node(t) {
                    sz = list_size.mul(size(&el));
                }
                if !args.is_empty() {
                    let sep = size(&args[0]);
                    let seps = Size::new(
                        list_size.min.saturating_sub(1),
                        list_size.max.saturating_sub(1),
                    );
                    sz = sz.add(sep.mul(seps));
                }
                Some(CallEstimate {
                    cost: sz.factor(STRING_TRAVERSAL_COST_FACTOR),
                    result_size: Some(sz),
                })
            }
            "find" | "findAll" if target.is_some() && !args.is_empty() => {
                let sz = size(target?);
                let str_cost = sz.add(Size::fixed(1)).factor(STRING_TRAVERSAL_COST_FACTOR);
                let re_cost = size(&args[0]).factor(REGEX_STRING_LENGTH_COST_FACTOR);
                Some(CallEstimate {
                    cost: str_cost.mul(re_cost),
                    result_size: Some(Size::new(0, sz.max)),
                })
            }
            "cidr" | "isIP" | "isCIDR" if !args.is_empty() => Some(CallEstimate::cost(
                size(&args[0]).factor(STRING_TRAVERSAL_COST_FACTOR),
            )),
            "ip" => {
                if overload_id == "cidr_ip" {
                    return one();
                }
                if !args.is_empty() {
                    return Some(CallEstimate::cost(
                        size(&args[0]).factor(STRING_TRAVERSAL_COST_FACTOR),
                    ));
                }
                None
            }
            "ip.isCanonical" if !args.is_empty() => Some(CallEstimate::cost(
                size(&args[0]).factor(2.0 * STRING_TRAVERSAL_COST_FACTOR),
            )),
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => one(),
            "containsIP" if !args.is_empty() => {
                let sz = Size::new(4, 16);
                let mut c = sz.add(sz).factor(STRING_TRAVERSAL_COST_FACTOR);
                if overload_id == "cidr_contains_ip_string" {
                    c = c.add(size(&args[0]).factor(STRING_TRAVERSAL_COST_FACTOR));
                }
                Some(CallEstimate::cost(c))
            }
            "containsCIDR" if !args.is_empty() => {
                let sz = Size::new(4, 16);
                let mut c = sz.add(sz).factor(STRING_TRAVERSAL_COST_FACTOR);
                c = c.add(sz.factor(STRING_TRAVERSAL_COST_FACTOR));
                c = c.add(Cost::fixed(1));
                if overload_id == "cidr_contains_cidr_string" {
                    c = c.add(size(&args[0]).factor(STRING_TRAVERSAL_COST_FACTOR));
                }
                Some(CallEstimate::cost(c))
            }
            "quantity" | "isQuantity" if !args.is_empty() => {
                consulted::note(consulted::QUANTITY_PARSE_COST);
                self.minor.quantity_parse_cost.then(|| {
                    CallEstimate::cost(size(&args[0]).factor(STRING_TRAVERSAL_COST_FACTOR))
                })
            }
            "semver" | "isSemver" if !args.is_empty() => Some(CallEstimate::cost(
                size(&args[0]).factor(STRING_TRAVERSAL_COST_FACTOR),
            )),
            "validate" if !args.is_empty() => Some(CallEstimate::cost(
                size(&args[0])
                    .factor(STRING_TRAVERSAL_COST_FACTOR)
                    .factor(MAX_NAME_FORMAT_REGEX_SIZE * REGEX_STRING_LENGTH_COST_FACTOR),
            )),
            "format.named" => one(),
            "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan"
            | "isLessThan" | "compareTo" | "add" | "sub" | "major" | "minor" | "patch" => one(),
            "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath" | "getQuery" => {
                one()
            }
            "_==_" if args.len() == 2 && self.minor.kubernetes_type_equality => {
                let (lhs, rhs) = (&args[0], &args[1]);
                // cel-go `Type.Equal` compares type names only.
                if lhs.ty.type_name() != rhs.ty.type_name() {
                    return None;
                }
                if matches!(&lhs.ty, Type::Opaque(n, _) if n.starts_with("net."))
                    || matches!(&lhs.ty, Type::Struct(n) if n.starts_with("kubernetes."))
                {
                    consulted::note(consulted::KUBERNETES_TYPE_EQUALITY);
                }
                match &lhs.ty {
                    Type::Opaque(n, _) if &**n == "net.IP" || &**n == "net.CIDR" => one(),
                    Type::Struct(n) => match &**n {
                        "kubernetes.Quantity"
                        | "kubernetes.authorization.Authorizer"
                        | "kubernetes.authorization.PathCheck"
                        | "kubernetes.authorization.GroupCheck"
                        | "kubernetes.authorization.ResourceCheck"
                        | "kubernetes.authorization.Decision"
                        | "kubernetes.Semver" => one(),
                        "kubernetes.NamedFormat" => Some(CallEstimate::cost(
                            Cost::new(1, MAX_FORMAT_SIZE).factor(STRING_TRAVERSAL_COST_FACTOR),
                        )),
                        "kubernetes.URL" => {
                            // Upstream reads the right-hand side's size twice.
                            let size = match computed_size(self, rhs) {
                                Some(r) => r.union(r),
                                None => Size::fixed(1),
                            };
                            Some(CallEstimate::cost(
                                Cost::new(1, size.max).factor(STRING_TRAVERSAL_COST_FACTOR),
                            ))
                        }
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// `selectorCostEstimate`: base 10, one traversal, and 50 per requirement (length × 0.5).
fn selector_cost(sz: Size) -> Cost {
    let cost = Cost::fixed(10).add(sz.factor(STRING_TRAVERSAL_COST_FACTOR));
    let requirements = sz.factor(0.5);
    cost.add(requirements.factor(50.0))
}

/// Kubernetes `listElementNode`: a synthetic node of the list's element type, at
/// `path + @items` when the list has a path.
fn list_element_node(list: &AstNode<'_>) -> Option<AstNode<'static>> {
    let elem = match &list.ty {
        Type::List(e) => (**e).clone(),
        Type::Map(k, _) => (**k).clone(),
        Type::Opaque(_, p) if !p.is_empty() => p[0].clone(),
        Type::TypeOf(Some(t)) => (**t).clone(),
        _ => return None,
    };
    let path = list.child_path("@items").unwrap_or_default();
    Some(AstNode::synthetic(path, elem))
}

/// Go's float64 → uint64 conversion for the values `replace` produces (non-negative, finite
/// or +Inf; amd64 yields 2^63 for out-of-range values).
fn go_f64_to_u64(f: f64) -> u64 {
    if f.is_nan() {
        return 1 << 63;
    }
    if f >= 18_446_744_073_709_551_616.0 {
        return 1 << 63;
    }
    f as u64
}

/// One bound (lowest or highest) of `replace`'s match count and retained length, from the
/// string's bound `len`, the pattern's opposite bound `pattern`, and whether a replacement can
/// not make the string longer (Kubernetes `library/cost.go`): an empty pattern matches between
/// every two characters; no growth keeps the bound; else a match per `pattern` characters.
fn replace_bound(len: u64, pattern: u64, no_growth: bool) -> (u64, u64) {
    if pattern == 0 {
        (len.saturating_add(1), len)
    } else if no_growth {
        (0, len)
    } else {
        (go_f64_to_u64((len as f64 / pattern as f64).ceil()), 0)
    }
}
