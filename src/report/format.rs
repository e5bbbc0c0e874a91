//! How reports write their numbers for people, in every output and in the advice's texts:
//! thousands separators, percent of a limit.

/// Percent of a limit, for people: one decimal, `>999%` past that, `∞` when unbounded.
pub fn percent(cost: u64, limit: u64) -> String {
    if cost == u64::MAX {
        return "unbounded".into();
    }
    let p = cost as f64 * 100.0 / limit as f64;
    if p > 999.0 {
        ">999%".into()
    } else {
        format!("{p:.1}%")
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

/// Thousands separators.
pub fn num(n: u64) -> String {
    if n == u64::MAX {
        return "2^64-1".into();
    }
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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
        assert_eq!(percent(8_000_000, 10_000_000), "80.0%");
        assert_eq!(percent(u64::MAX, 10), "unbounded");
    }
}
