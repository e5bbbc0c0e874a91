//! The longest string a Go regular expression can accept, as `regexp.MatchString` (a search:
//! the expression may match anywhere in the string) decides: what a schema's `pattern`, or a
//! rule's `self.matches(RE)`, implies for the length of the value.
//!
//! Computed on the parsed expression (the translation [`super::Parser`] makes, read by
//! `regex-syntax`), never by matching: every way through the expression is summarised by
//! whether it asserts the start of the text (`^` without `(?m)`, `\A`) before its first
//! character, whether it asserts the end (`$` without `(?m)`, `\z`) after its last, whether it
//! consumes anything, and the most characters it consumes. A string longer than the longest
//! match can only be accepted through a way that is not anchored at both ends (it may then be
//! surrounded by anything): if there is one, no length is implied.
//!
//! Sound, not complete: a way the other assertions (`\b`, `(?m)^`) make impossible still counts,
//! so the answer is never below the true longest match, and at worst "unbounded" where a
//! finer reading would find a bound.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Characters, saturating at [`INF`] (no bound).
type Len = u64;
const INF: Len = u64::MAX;

/// The ways through an expression, by class: the longest of each (`None`: no way of that
/// class). Class bits: 1 = asserts the start before its first character (or anywhere, for a
/// way that consumes nothing), 2 = asserts the end after its last, 4 = consumes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ways([Option<Len>; 8]);

const START: usize = 1;
const END: usize = 2;
const EMPTY: usize = 4;

impl Ways {
    const NONE: Ways = Ways([None; 8]);

    fn one(class: usize, len: Len) -> Ways {
        let mut w = Ways::NONE;
        w.0[class] = Some(len);
        w
    }

    /// The way that consumes nothing and asserts nothing.
    fn epsilon() -> Ways {
        Ways::one(EMPTY, 0)
    }

    fn union(&self, other: &Ways) -> Ways {
        let mut out = *self;
        for (o, x) in out.0.iter_mut().zip(other.0) {
            *o = match (*o, x) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        out
    }

    /// `self` followed by `other`. A start assertion after a character, or an end assertion
    /// before one, cannot hold: such ways are dropped.
    fn then(&self, other: &Ways) -> Ways {
        let mut out = Ways::NONE;
        for (a, la) in self.0.iter().enumerate() {
            let Some(la) = la else { continue };
            for (b, lb) in other.0.iter().enumerate() {
                let Some(lb) = lb else { continue };
                let (a_empty, b_empty) = (a & EMPTY != 0, b & EMPTY != 0);
                let class = match (a_empty, b_empty) {
                    (true, true) => (a | b) & (START | END) | EMPTY,
                    (true, false) => {
                        if a & END != 0 {
                            continue;
                        }
                        (a & START) | b
                    }
                    (false, true) => {
                        if b & START != 0 {
                            continue;
                        }
                        a | (b & END)
                    }
                    (false, false) => {
                        if a & END != 0 || b & START != 0 {
                            continue;
                        }
                        (a & START) | (b & END)
                    }
                };
                let len = la.saturating_add(*lb);
                let slot = &mut out.0[class];
                *slot = Some(slot.map_or(len, |x| x.max(len)));
            }
        }
        out
    }

    /// Whether every way of `other` is a way of `self` at most as long.
    fn covers(&self, other: &Ways) -> bool {
        self.0.iter().zip(other.0).all(|(a, b)| match (a, b) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => *a >= b,
        })
    }
}

/// Repetitions a loop follows before it calls a still-growing way unbounded.
const GROWTH_STEPS: u32 = 16;

/// `sub{min,max}` (`max` `None`: unbounded).
fn repeat(sub: &Ways, min: u32, max: Option<u32>) -> Ways {
    // sub^min, exactly.
    let mut power = Ways::epsilon();
    for _ in 0..min {
        power = power.then(sub);
        if power == Ways::NONE {
            return Ways::NONE;
        }
    }
    let mut acc = power;
    let mut extra = 0u32;
    let mut growing = 0u32;
    loop {
        if max.is_some_and(|m| min + extra >= m) {
            return acc;
        }
        let next = power.then(sub);
        // Once a power adds nothing, no later one does: concatenation is monotone, so
        // power·sub ≤ acc implies (acc ∪ power)·sub ≤ acc.
        if acc.covers(&next) {
            return acc;
        }
        let grown = acc.union(&next);
        extra += 1;
        growing += 1;
        if max.is_none() && growing > GROWTH_STEPS {
            // Still growing: what grew in this step grows without end.
            let mut marked = grown;
            for (m, (was, is)) in marked.0.iter_mut().zip(acc.0.iter().zip(grown.0)) {
                if is.is_some() && *was != is {
                    *m = Some(INF);
                }
            }
            acc = marked;
            power = next.union(&marked);
            growing = 0;
            continue;
        }
        acc = grown;
        power = next;
    }
}

/// Characters in a literal (its UTF-8 bytes).
fn chars(bytes: &[u8]) -> Len {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count() as Len
}

fn ways(h: &Hir) -> Ways {
    // Deep expressions are rare (regex-syntax limits nesting to 250); the stack of a schema
    // walk is large.
    match h.kind() {
        HirKind::Empty => Ways::epsilon(),
        HirKind::Literal(l) => match chars(&l.0) {
            0 => Ways::epsilon(),
            n => Ways::one(0, n),
        },
        HirKind::Class(c) => {
            let empty = match c {
                Class::Unicode(u) => u.ranges().is_empty(),
                Class::Bytes(b) => b.ranges().is_empty(),
            };
            if empty { Ways::NONE } else { Ways::one(0, 1) }
        }
        HirKind::Look(l) => match l {
            Look::Start => Ways::one(START | EMPTY, 0),
            Look::End => Ways::one(END | EMPTY, 0),
            _ => Ways::epsilon(),
        },
        HirKind::Repetition(r) => repeat(&ways(&r.sub), r.min, r.max),
        HirKind::Capture(c) => ways(&c.sub),
        HirKind::Concat(hs) => hs.iter().fold(Ways::epsilon(), |acc, h| acc.then(&ways(h))),
        HirKind::Alternation(hs) => hs.iter().fold(Ways::NONE, |acc, h| acc.union(&ways(h))),
    }
}

/// The most characters a string `pattern` accepts can have, when that is finite: every way
/// through the expression asserts the start and the end of the text. `None` when the pattern
/// is not valid Go, accepts strings of any length, or accepts nothing.
pub fn longest_match(pattern: &str) -> Option<u64> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        /// The same patterns come back for every finding that reads their node.
        static MEMO: RefCell<HashMap<String, Option<u64>>> = RefCell::new(HashMap::new());
    }
    if let Some(hit) = MEMO.with(|m| m.borrow().get(pattern).copied()) {
        return hit;
    }
    let answer = compute(pattern);
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= 1024 {
            m.clear();
        }
        m.insert(pattern.to_string(), answer);
    });
    answer
}

fn compute(pattern: &str) -> Option<u64> {
    let translated = super::Parser::parse(pattern).ok()?;
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&translated)
        .ok()?;
    let w = ways(&hir);
    let mut longest: Option<Len> = None;
    for (class, len) in w.0.iter().enumerate() {
        let Some(len) = len else { continue };
        if class & START == 0 || class & END == 0 || *len == INF {
            return None;
        }
        longest = Some(longest.map_or(*len, |l| l.max(*len)));
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_duration_pattern_is_at_most_28_characters() {
        assert_eq!(longest_match("^([0-9]{1,5}(h|m|s|ms)){1,4}$"), Some(28));
    }

    #[test]
    fn anchors_decide_whether_a_length_is_implied() {
        let cases: &[(&str, Option<u64>)] = &[
            ("^abc$", Some(3)),
            ("abc", None),
            ("^abc", None),
            ("abc$", None),
            (r"\Aabc\z", Some(3)),
            ("^$", Some(0)),
            ("^a*$", None),
            ("^a+$", None),
            ("^a{2,}$", None),
            ("^a{2,7}$", Some(7)),
            ("^(a|bcd)$", Some(3)),
            ("^a$|^bb$", Some(2)),
            ("^a$|bb$", None),
            ("^a|b$", None),
            ("(?m)^a$", None),
            ("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", None),
            ("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", Some(63)),
            ("^é{2}$", Some(2)),
            ("^(?:x$)*$", Some(1)),
            (r"^\bab\b$", Some(2)),
            ("^(ab){3}c?$", Some(7)),
            ("^((a{1,3}){1,3}){1,2}$", Some(18)),
            ("a^b", None),
            ("[", None),
        ];
        for (p, want) in cases {
            assert_eq!(longest_match(p), *want, "{p}");
        }
        let uuid = "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
        assert_eq!(longest_match(uuid), Some(36));
    }

    /// Every string over `alphabet` of at most `n` characters.
    fn strings(alphabet: &[char], n: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..n {
            let mut next = Vec::new();
            for s in &last {
                for c in alphabet {
                    let mut t = s.clone();
                    t.push(*c);
                    next.push(t);
                }
            }
            all.extend(next.iter().cloned());
            last = next;
        }
        all
    }

    /// A random expression over `a`, `b`, anchors and the operators, from `seed`.
    fn random_pattern(rng: &mut fastrand::Rng, depth: u32) -> String {
        let leaf = |rng: &mut fastrand::Rng| -> String {
            match rng.u32(0..10) {
                0 => "^".into(),
                1 => "$".into(),
                2 => "[ab]".into(),
                3 => "b".into(),
                4 | 5 => "(?:)".into(),
                _ => "a".into(),
            }
        };
        if depth == 0 {
            return leaf(rng);
        }
        match rng.u32(0..9) {
            0 | 1 => format!(
                "{}{}",
                random_pattern(rng, depth - 1),
                random_pattern(rng, depth - 1)
            ),
            2 => format!(
                "(?:{}|{})",
                random_pattern(rng, depth - 1),
                random_pattern(rng, depth - 1)
            ),
            3 => format!("(?:{})?", random_pattern(rng, depth - 1)),
            4 => format!("(?:{})*", random_pattern(rng, depth - 1)),
            5 => {
                let lo = rng.u32(0..3);
                let hi = lo + rng.u32(0..3);
                format!("(?:{}){{{lo},{hi}}}", random_pattern(rng, depth - 1))
            }
            6 => format!(
                "^{}{}$",
                random_pattern(rng, depth - 1),
                random_pattern(rng, depth - 1)
            ),
            _ => leaf(rng),
        }
    }

    /// Against brute force: every string over {a, b, c} of up to 9 characters is matched; a
    /// finite answer must be the length of the longest match found, and no longer string may
    /// match; an unbounded answer must come with a match as long as the strings tried (or with
    /// no match at all, and then no way that is not impossible: the answer is sound either way,
    /// the test checks that it is also tight where the strings tried can tell).
    #[test]
    fn the_longest_match_agrees_with_brute_force() {
        const N: usize = 9;
        let all = strings(&['a', 'b', 'c'], N);
        let mut rng = fastrand::Rng::with_seed(37);
        let mut patterns: Vec<String> = [
            "^a?b?$",
            "^(a|bb){1,2}$",
            "^(ab)*$",
            "^[ab]{2}$",
            "(^a|b)$",
            "^(a$|b)",
            "^(?:a|b$)c?$",
            "^a{0,3}b{1,2}$|^c$",
            "^(?:(?:ab){1,2}|c{3})$",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for i in 0..500 {
            let p = random_pattern(&mut rng, 4);
            // Half of them anchored at both ends, where lengths are finite.
            patterns.push(if i % 2 == 0 { format!("^(?:{p})$") } else { p });
        }
        let mut finite = 0;
        for p in &patterns {
            let Ok(Some(re)) = crate::goregexp::compile(p) else {
                continue;
            };
            let longest_seen = all.iter().filter(|s| re.is_match(s)).map(|s| s.len()).max();
            match longest_match(p) {
                Some(n) => {
                    finite += 1;
                    // Sound: nothing longer matches.
                    assert!(
                        longest_seen.is_some_and(|l| l as u64 <= n),
                        "{p}: computed {n}, brute force {longest_seen:?}"
                    );
                    // Tight, where the strings tried reach it.
                    if n < N as u64 {
                        assert_eq!(longest_seen, Some(n as usize), "{p}");
                    }
                }
                None => {
                    // Unbounded: a match longer than every one tried, or no match at all. The
                    // longer match: one tried, padded (a way not anchored at an end) or
                    // repeated (a loop between the anchors).
                    let Some(l) = longest_seen else { continue };
                    let longer = all.iter().filter(|s| re.is_match(s)).any(|s| {
                        [format!("c{s}"), format!("{s}c"), s.repeat(2), s.repeat(3)]
                            .iter()
                            .any(|t| t.len() > l && re.is_match(t))
                    }) || strings(&['a', 'b', 'c'], N + 2)
                        .iter()
                        .any(|t| t.len() > l && re.is_match(t));
                    assert!(
                        longer,
                        "{p}: computed unbounded, brute force longest {l} and none longer"
                    );
                }
            }
        }
        assert!(
            finite >= 100,
            "too few finite cases ({finite}) to mean anything"
        );
    }
}
