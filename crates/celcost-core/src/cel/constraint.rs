//! Version constraints as Helm's `kubeVersion` writes them (`">= 1.29.0-0"`, `">=1.30 <1.37"`,
//! `"~1.33"`, `"^1.30 || 1.28.x"`), read as Masterminds/semver v3 reads them (the library Helm
//! checks `kubeVersion` with): `||` between alternatives, constraints joined by spaces or commas
//! (all must hold), the operators `= != > < >= => <= =< ~ ~> ^` (none is `=`), `A - B` for
//! `>= A, <= B`, partial versions and `x`, `X`, `*` wildcards with Masterminds' meaning of each
//! operator over them ("dirty" versions: `>1.29` is a minor above 29, `<=1.36` takes every
//! 1.36 patch), a pre-release (`-0`) and build metadata.
//!
//! A minor `1.N` meets a constraint when some release `1.N.p` of it does (clusters run
//! releases; the `-0` of `>= 1.29.0-0` lets pre-release builds such as `v1.29.3-gke.1` in, and
//! every release of 1.29 passes it too).

use super::version::Version;

/// A comparison operator of a constraint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// `=` or none: equal, or a tilde range over a partial version.
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    Tilde,
    Caret,
}

/// The operators, longest first (so that `>=` is not read as `>`).
const OPS: [(&str, Op); 11] = [
    ("!=", Op::Ne),
    (">=", Op::Ge),
    ("=>", Op::Ge),
    ("<=", Op::Le),
    ("=<", Op::Le),
    ("~>", Op::Tilde),
    ("=", Op::Eq),
    (">", Op::Gt),
    ("<", Op::Lt),
    ("~", Op::Tilde),
    ("^", Op::Caret),
];

/// A version of a constraint: its numbers (0 where missing or a wildcard), whether it has a
/// pre-release, and which part is the first missing or wildcard one.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bound {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Option<String>,
    /// Major or minor missing or a wildcard (`1`, `1.x`, `*`).
    minor_dirty: bool,
    /// Patch missing or a wildcard (`1.30`, `1.30.x`).
    patch_dirty: bool,
    /// Any part missing or a wildcard.
    dirty: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Constraint {
    op: Op,
    bound: Bound,
}

/// A release version `major.minor.patch` (no pre-release).
type Release = (u64, u64, u64);

impl Constraint {
    /// Whether the release `v` meets the constraint (Masterminds/semver v3 `constraint.check`
    /// for a version without a pre-release, which no operator refuses for that).
    fn check(&self, v: Release) -> bool {
        let b = &self.bound;
        let cmp = compare(v, b);
        match self.op {
            Op::Eq if b.dirty => self.tilde(v),
            Op::Eq => cmp.is_eq(),
            Op::Ne if b.dirty => {
                if v.0 != b.major {
                    true
                } else if b.minor_dirty {
                    false
                } else if v.1 != b.minor {
                    true
                } else if b.patch_dirty {
                    // Equal but for the patch; a release differs from a pre-release.
                    b.pre.is_some()
                } else {
                    v.2 != b.patch || b.pre.is_some()
                }
            }
            Op::Ne => !cmp.is_eq(),
            Op::Gt if b.dirty => {
                if v.0 != b.major {
                    v.0 > b.major
                } else if b.minor_dirty {
                    false
                } else if b.patch_dirty {
                    v.1 > b.minor
                } else {
                    cmp.is_gt()
                }
            }
            Op::Gt => cmp.is_gt(),
            Op::Lt => cmp.is_lt(),
            Op::Ge => cmp.is_ge(),
            Op::Le if b.dirty => {
                !(v.0 > b.major || v.0 == b.major && v.1 > b.minor && !b.minor_dirty)
            }
            Op::Le => cmp.is_le(),
            Op::Tilde => self.tilde(v),
            Op::Caret => {
                if cmp.is_lt() {
                    false
                } else if b.major > 0 || b.minor_dirty {
                    v.0 == b.major
                } else if v.0 > 0 {
                    false
                } else if b.minor > 0 || b.patch_dirty {
                    v.1 == b.minor
                } else {
                    v.1 == b.minor && v.2 == b.patch
                }
            }
        }
    }

    /// `~`: at least the bound, within its major (and its minor unless that is missing);
    /// `~0.0.0` (and `~*`) anything.
    fn tilde(&self, v: Release) -> bool {
        let b = &self.bound;
        if compare(v, b).is_lt() {
            return false;
        }
        if (b.major, b.minor, b.patch) == (0, 0, 0) && !b.minor_dirty && !b.patch_dirty {
            return true;
        }
        v.0 == b.major && (b.minor_dirty || v.1 == b.minor)
    }
}

/// SemVer precedence of a release against a bound: a release is above a pre-release of the
/// same numbers.
fn compare(v: Release, b: &Bound) -> std::cmp::Ordering {
    v.cmp(&(b.major, b.minor, b.patch))
        .then(if b.pre.is_some() {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        })
}

/// A parsed constraint: alternatives of constraints that must all hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraints {
    any_of: Vec<Vec<Constraint>>,
}

impl Constraints {
    /// Parses a constraint as Masterminds/semver v3 `NewConstraint` does.
    pub fn parse(s: &str) -> Result<Constraints, String> {
        let bad = |why: &str| format!("invalid version constraint {s:?}: {why}");
        let any_of = s
            .split("||")
            .map(|alt| parse_all_of(&rewrite_hyphen(alt)).map_err(|why| bad(&why)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Constraints { any_of })
    }

    /// Whether some release `1.minor.p` meets the constraint.
    pub fn admits_minor(&self, minor: u64) -> bool {
        self.any_of.iter().any(|all| {
            // Each constraint is constant between the patches it names: trying 0, each named
            // patch and its neighbours, and a patch above them all finds one if any exists.
            let mut patches = vec![0, u64::MAX / 2];
            for c in all {
                let p = c.bound.patch;
                patches.extend([p.saturating_sub(1), p, p.saturating_add(1)]);
            }
            patches
                .iter()
                .any(|&p| all.iter().all(|c| c.check((1, minor, p))))
        })
    }

    /// The largest minor a constraint names (to know where to stop looking above).
    fn largest_minor(&self) -> u64 {
        self.any_of
            .iter()
            .flatten()
            .map(|c| c.bound.minor)
            .max()
            .unwrap_or(0)
    }
}

/// `A - B` (spaces around the hyphen) as `>= A, <= B`, as Masterminds rewrites ranges first.
fn rewrite_hyphen(alt: &str) -> String {
    let words: Vec<&str> = alt.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if i + 2 < words.len()
            && words[i + 1] == "-"
            && starts_version(words[i])
            && starts_version(words[i + 2])
        {
            out.push(format!(">= {}, <= {}", words[i], words[i + 2]));
            i += 3;
        } else {
            out.push(words[i].to_string());
            i += 1;
        }
    }
    out.join(" ")
}

fn starts_version(w: &str) -> bool {
    w.trim_start_matches('v')
        .starts_with(|c: char| c.is_ascii_digit() || matches!(c, 'x' | 'X' | '*'))
}

/// The constraints of one alternative: each an operator and a version, separated by spaces or
/// a comma.
fn parse_all_of(alt: &str) -> Result<Vec<Constraint>, String> {
    let mut rest = alt.trim_start();
    let mut out = Vec::new();
    loop {
        let op = OPS.iter().find(|(t, _)| rest.starts_with(t));
        if let Some((t, _)) = op {
            rest = rest[t.len()..].trim_start();
        }
        let (bound, after) = parse_bound(rest)?;
        out.push(Constraint {
            op: op.map_or(Op::Eq, |(_, o)| *o),
            bound,
        });
        let trimmed = after.trim_start();
        let trimmed = trimmed.strip_prefix(',').map_or(trimmed, str::trim_start);
        if trimmed.is_empty() {
            return Ok(out);
        }
        if trimmed.len() == after.len() {
            return Err(format!(
                "{after:?} follows a version without a space or comma"
            ));
        }
        rest = trimmed;
    }
}

/// A version at the start of `s` (`v1.30.2-0+b`, `1.30`, `1.x`, `*`), and what follows it.
fn parse_bound(s: &str) -> Result<(Bound, &str), String> {
    let mut rest = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<Option<u64>> = Vec::new();
    while parts.len() < 3 {
        if !parts.is_empty() {
            match rest.strip_prefix('.') {
                Some(r) if r.starts_with(is_part_char) => rest = r,
                _ => break,
            }
        }
        let end = rest.find(|c: char| !is_part_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        if word.is_empty() {
            return Err(if s.is_empty() {
                "a version is missing".to_string()
            } else {
                format!("{s:?} is not a version")
            });
        }
        parts.push(if matches!(word, "x" | "X" | "*") {
            None
        } else {
            Some(
                word.parse()
                    .map_err(|_| format!("{word:?} is not a number"))?,
            )
        });
        rest = &rest[end..];
    }
    let tag = |mark: char, rest: &mut &str| -> Result<Option<String>, String> {
        let Some(r) = rest.strip_prefix(mark) else {
            return Ok(None);
        };
        let end = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
            .unwrap_or(r.len());
        let t = &r[..end];
        if t.is_empty() || t.split('.').any(str::is_empty) {
            return Err(format!("{mark}{t:?} is not a pre-release or build"));
        }
        *rest = &r[end..];
        Ok(Some(t.to_string()))
    };
    let pre = tag('-', &mut rest)?;
    tag('+', &mut rest)?;
    let part = |i: usize| parts.get(i).copied().flatten();
    let missing = |i: usize| part(i).is_none();
    let (minor_dirty, patch_dirty) = if missing(0) {
        (false, false)
    } else if missing(1) {
        (true, false)
    } else {
        (false, missing(2))
    };
    let dirty = missing(0) || missing(1) || missing(2);
    let number = |i: usize| {
        // Masterminds zeroes every part after the first missing one.
        if (0..=i).any(missing) {
            0
        } else {
            part(i).unwrap_or(0)
        }
    };
    Ok((
        Bound {
            major: number(0),
            minor: number(1),
            patch: number(2),
            pre,
            minor_dirty,
            patch_dirty,
            dirty,
        },
        rest,
    ))
}

fn is_part_char(c: char) -> bool {
    c.is_ascii_digit() || matches!(c, 'x' | 'X' | '*')
}

/// What a constraint means among the minors celcost knows (`known`, oldest first): the minors
/// it admits, and whether it admits others too (then it was clipped to them).
pub fn minors_meeting(
    s: &str,
    known: &[Version],
) -> Result<(Vec<Version>, Option<String>), String> {
    let c = Constraints::parse(s)?;
    let admitted: Vec<Version> = known
        .iter()
        .copied()
        .filter(|v| v.major == 1 && c.admits_minor(u64::from(v.minor)))
        .collect();
    let (Some(oldest), Some(newest)) = (known.first(), known.last()) else {
        return Err("no minors known".to_string());
    };
    let above =
        (u64::from(newest.minor) + 1)..=(c.largest_minor().max(u64::from(newest.minor)) + 1);
    let beyond = (0..u64::from(oldest.minor))
        .chain(above)
        .any(|m| c.admits_minor(m));
    if admitted.is_empty() {
        return Err(format!(
            "no Kubernetes minor celcost knows ({oldest} to {newest}) meets {s:?}"
        ));
    }
    let range = match (admitted.first(), admitted.last()) {
        (Some(a), Some(b)) if a != b => format!("{a}..{b}"),
        (Some(a), _) => a.to_string(),
        _ => String::new(),
    };
    let note = beyond.then(|| {
        format!(
            "Kubernetes version constraint {s:?} admits minors celcost does not know (it knows \
             {oldest} to {newest}): judged against {range}"
        )
    });
    Ok((admitted, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(m: u32) -> Version {
        Version::new(1, m)
    }

    const KNOWN: [u32; 10] = [28, 29, 30, 31, 32, 33, 34, 35, 36, 37];

    fn minors(s: &str) -> Vec<u32> {
        let known: Vec<Version> = KNOWN.iter().map(|&m| v(m)).collect();
        minors_meeting(s, &known)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .0
            .iter()
            .map(|v| v.minor)
            .collect()
    }

    fn clipped(s: &str) -> bool {
        let known: Vec<Version> = KNOWN.iter().map(|&m| v(m)).collect();
        minors_meeting(s, &known).unwrap().1.is_some()
    }

    #[test]
    fn constraints_as_helm_charts_write_them() {
        let table: &[(&str, &[u32])] = &[
            (">= 1.29.0-0", &[29, 30, 31, 32, 33, 34, 35, 36, 37]),
            (">=1.30 <1.37", &[30, 31, 32, 33, 34, 35, 36]),
            (">=1.30, <1.37", &[30, 31, 32, 33, 34, 35, 36]),
            (">= 1.30.0, < 1.37.0-0", &[30, 31, 32, 33, 34, 35, 36]),
            ("~1.33", &[33]),
            ("~1.33.4", &[33]),
            ("~> 1.33", &[33]),
            ("^1.30", &[30, 31, 32, 33, 34, 35, 36, 37]),
            ("1.29", &[29]),
            ("=1.29.x", &[29]),
            ("1.28.x || 1.36", &[28, 36]),
            (">1.34", &[35, 36, 37]),
            (">1.34.2", &[34, 35, 36, 37]),
            ("<=1.30", &[28, 29, 30]),
            ("<=1.30.5", &[28, 29, 30]),
            ("<1.30", &[28, 29]),
            ("!=1.33", &[28, 29, 30, 31, 32, 34, 35, 36, 37]),
            ("!=1.33.2", &KNOWN),
            ("1.29 - 1.31", &[29, 30, 31]),
            ("1.x", &KNOWN),
            ("*", &KNOWN),
            ("v1.32", &[32]),
            (">=1.31.0-0 <1.32.0-0 || >= 1.35", &[31, 35, 36, 37]),
            ("1.29.3+build.1", &[29]),
            (">=1.29.2 <1.29.5", &[29]),
        ];
        for (s, want) in table {
            assert_eq!(minors(s), *want, "{s}");
        }
    }

    #[test]
    fn clipping_is_told() {
        assert!(clipped(">= 1.29.0-0"));
        assert!(clipped("<1.30"));
        assert!(clipped(">1.34"));
        assert!(!clipped(">=1.30 <1.37"));
        assert!(!clipped("~1.33"));
        assert!(!clipped("1.28 - 1.37"));
        let known: Vec<Version> = KNOWN.iter().map(|&m| v(m)).collect();
        let note = minors_meeting(">= 1.29.0-0", &known).unwrap().1.unwrap();
        assert!(note.contains("judged against 1.29..1.37"), "{note}");
        assert!(note.contains("1.28 to 1.37"), "{note}");
    }

    #[test]
    fn bad_constraints_are_refused_by_name() {
        let known: Vec<Version> = KNOWN.iter().map(|&m| v(m)).collect();
        for bad in [
            "",
            ">=",
            ">= a.b",
            ">=1.30<1.37",
            "1.30 ||",
            "~~1.2",
            "1.2.3-",
            ">=1.30 &&",
        ] {
            let e = minors_meeting(bad, &known).unwrap_err();
            assert!(e.contains("invalid version constraint"), "{bad}: {e}");
        }
        let e = minors_meeting(">= 1.40", &known).unwrap_err();
        assert!(e.contains("no Kubernetes minor celcost knows"), "{e}");
    }
}
