//! Candidate values of a bound: the 1-2-5 series, and the binary search for the largest
//! candidate that fits.

/// The 1-2-5 series within `i64`: 1, 2, 5, 10, 20, 50, …, 5·10^18.
pub fn series_125() -> Vec<i64> {
    let mut out = Vec::new();
    let mut p: i64 = 1;
    loop {
        for m in [1, 2, 5] {
            match p.checked_mul(m) {
                Some(v) => out.push(v),
                None => return out,
            }
        }
        match p.checked_mul(10) {
            Some(n) => p = n,
            None => return out,
        }
    }
}

/// The largest 1-2-5 value at most `n`; `None` below 1.
pub fn round_down_125(n: i64) -> Option<i64> {
    series_125().into_iter().take_while(|&v| v <= n).last()
}

/// The largest of the ascending `candidates` for which `fits` holds, assuming `fits` holds up
/// to some candidate and not after it (the cost is monotone in the bound); `None` when it holds
/// for none. Probes `fits` about log2(len) times.
pub fn largest_fitting<E>(
    candidates: &[i64],
    mut fits: impl FnMut(i64) -> Result<bool, E>,
) -> Result<Option<i64>, E> {
    // Invariant: every candidate below `lo` fits, none from `hi` on does.
    let (mut lo, mut hi) = (0usize, candidates.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(candidates[mid])? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo.checked_sub(1).map(|i| candidates[i]))
}

/// Candidates from `lo` (included) to `below` (excluded; `None`: no end): `lo` and the 1-2-5
/// values between.
pub(super) fn candidates(lo: i64, below: Option<i64>) -> Vec<i64> {
    let mut out = vec![lo];
    out.extend(
        series_125()
            .into_iter()
            .filter(|&v| v > lo && below.is_none_or(|b| v < b)),
    );
    if below.is_some_and(|b| lo >= b) {
        out.clear();
    }
    out
}
