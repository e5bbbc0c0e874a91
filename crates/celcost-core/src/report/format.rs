//! How reports write their numbers for people, in every output and in the advice's texts:
//! thousands separators, percent of a limit, texts cut to a length. The `CostReport` status's
//! texts use these too ([`PercentStyle::STATUS`], [`thousands`]).

/// How [`percent_in`] writes a share of a limit: up to which percent it writes the number (past
/// it, `>{cap}%`), and from which percent on without a decimal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PercentStyle {
    pub cap: u32,
    /// `None`: one decimal throughout.
    pub whole_from: Option<u32>,
}

impl PercentStyle {
    /// The command line's outputs and the advice's texts: `85.0%`, `120.0%`, `>999%` past 999 %.
    pub const REPORT: PercentStyle = PercentStyle {
        cap: 999,
        whole_from: None,
    };
    /// A `CostReport`'s status and the texts made from it (a column of `kubectl get`): `85.0%`,
    /// `1250%` from 100 %, `>99999%` from 100,000 % (the exact number is in the cost field).
    pub const STATUS: PercentStyle = PercentStyle {
        cap: 99_999,
        whole_from: Some(100),
    };
}

/// `cost` as a percent of `limit` in the outputs' style ([`PercentStyle::REPORT`]).
pub fn percent(cost: u64, limit: u64) -> String {
    percent_in(cost, limit, PercentStyle::REPORT)
}

/// `cost` as a percent of `limit`, for people, as `style` writes it; `unbounded` for a
/// saturated estimate (`u64::MAX`). A zero limit counts as 1.
pub fn percent_in(cost: u64, limit: u64, style: PercentStyle) -> String {
    if cost == u64::MAX {
        return "unbounded".into();
    }
    let p = cost as f64 * 100.0 / limit.max(1) as f64;
    let cap = f64::from(style.cap);
    match style.whole_from {
        // Whole percents: the number up to the cap as written (`99999%` below 100,000 %).
        Some(whole) if p >= f64::from(whole) => {
            if p < cap + 1.0 {
                format!("{p:.0}%")
            } else {
                format!(">{}%", style.cap)
            }
        }
        _ if p > cap => format!(">{}%", style.cap),
        _ => format!("{p:.1}%"),
    }
}

/// The factor by which a cost exceeds its limit, as the API server words it in its budget errors
/// (apiextensions `getCostErrorMessage`): `4.0x`, `1.000020x` below 1.5, `more than 100x`.
pub fn budget_factor(cost: u64, limit: u64) -> String {
    let x = cost as f64 / limit as f64;
    if x > 100.0 {
        "more than 100x".to_string()
    } else if x < 1.5 {
        format!("{x:.6}x")
    } else {
        format!("{x:.1}x")
    }
}

/// Thousands separators, as the outputs write a cost: `12,345,678`; a saturated cost
/// (`u64::MAX`) as `2^64-1`.
pub fn num(n: u64) -> String {
    if n == u64::MAX {
        return "2^64-1".into();
    }
    thousands(n)
}

/// Thousands separators on every number, `u64::MAX` too (`18,446,744,073,709,551,615`): the
/// `CostReport` status's texts, which say `unbounded` next to it themselves.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Cuts `s` to at most `max` bytes on a char boundary, ending with `…` when cut; and whether it
/// was cut.
pub fn truncate(s: &str, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s.to_string(), false);
    }
    let ell = '…';
    let mut end = max.saturating_sub(ell.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = s[..end].to_string();
    out.push(ell);
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_as_the_api_server_words_them() {
        // The gateway CRDs: 2,516,585 per call under lists of 16 and 64.
        assert_eq!(budget_factor(2_516_585 * 16, 10_000_000), "4.0x");
        assert_eq!(budget_factor(2_516_585 * 64, 10_000_000), "16.1x");
        assert_eq!(budget_factor(10_000_200, 10_000_000), "1.000020x");
        assert_eq!(budget_factor(u64::MAX, 10_000_000), "more than 100x");
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(num(10_000_000), "10,000,000");
        assert_eq!(num(999), "999");
        assert_eq!(num(u64::MAX), "2^64-1");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn percents_in_both_styles() {
        use crate::report::PER_RULE_COST_LIMIT;
        let report = |c, l| percent(c, l);
        assert_eq!(report(8_000_000, 10_000_000), "80.0%");
        assert_eq!(report(12_000_000, 10_000_000), "120.0%");
        assert_eq!(report(99_900_000, 10_000_000), "999.0%");
        assert_eq!(report(99_900_001, 10_000_000), ">999%");
        assert_eq!(report(u64::MAX, 10), "unbounded");
        let status = |c, l| percent_in(c, l, PercentStyle::STATUS);
        assert_eq!(status(0, 10), "0.0%");
        assert_eq!(status(8_240_002, PER_RULE_COST_LIMIT), "82.4%");
        assert_eq!(status(12_000_000, PER_RULE_COST_LIMIT), "120%");
        assert_eq!(status(9_999_940_000, 10_000_000), "99999%");
        assert_eq!(status(9_999_960_000, 10_000_000), "100000%");
        assert_eq!(status(10_000_000_000, 10_000_000), ">99999%");
        assert_eq!(status(u64::MAX - 1, PER_RULE_COST_LIMIT), ">99999%");
        assert_eq!(status(u64::MAX, PER_RULE_COST_LIMIT), "unbounded");
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("abc", 3), ("abc".to_string(), false));
        let (t, cut) = truncate("ééééé", 6);
        assert!(cut);
        assert!(t.len() <= 6 && t.ends_with('…'), "{t}");
    }
}
