//! Unified diffs (`diff -u`, three lines of context) of a file before and after the fix: the
//! lines are compared with Myers' algorithm, O((N + M) · D) for D changed lines (a fix changes a
//! few; past [`MAX_CHANGES`] the whole file is one hunk).

/// Changed lines past which the diff is not searched (the file is shown replaced whole).
const MAX_CHANGES: usize = 20_000;
const CONTEXT: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Same(usize, usize),
    Del(usize),
    Add(usize),
}

/// Splits a text into lines, each with its line break.
fn lines(t: &str) -> Vec<&str> {
    t.split_inclusive('\n').collect()
}

/// The shortest edit script from `a` to `b`, or `None` past [`MAX_CHANGES`].
fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = ((n + m) as usize).min(MAX_CHANGES) as isize;
    let off = max + 1;
    let mut v = vec![0isize; 2 * off as usize + 1];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut found = None;
    for d in 0..=max {
        trace.push(v.clone());
        let mut k = -d;
        while k <= d {
            let i = (k + off) as usize;
            let mut x = if k == -d || (k != d && v[i - 1] < v[i + 1]) {
                v[i + 1]
            } else {
                v[i - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n && y >= m {
                found = Some(d);
                break;
            }
            k += 2;
        }
        if found.is_some() {
            break;
        }
    }
    let d_end = found?;
    // Walk back through the trace.
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=d_end).rev() {
        let v = &trace[d as usize];
        let k = x - y;
        let i = (k + off) as usize;
        let prev_k = if k == -d || (k != d && v[i - 1] < v[i + 1]) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = v[(prev_k + off) as usize];
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            ops.push(Op::Same(x as usize, y as usize));
        }
        if x == prev_x {
            y -= 1;
            ops.push(Op::Add(y as usize));
        } else {
            x -= 1;
            ops.push(Op::Del(x as usize));
        }
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        ops.push(Op::Same(x as usize, y as usize));
    }
    ops.reverse();
    Some(ops)
}

fn push_line(out: &mut String, sign: char, line: &str) {
    out.push(sign);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// The unified diff of `before` and `after` of the file `name` (`a/name`, `b/name`); empty
/// when they are the same.
pub fn unified(name: &str, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    let (a, b) = (lines(before), lines(after));
    let ops = myers(&a, &b).unwrap_or_else(|| {
        (0..a.len())
            .map(Op::Del)
            .chain((0..b.len()).map(Op::Add))
            .collect()
    });
    let mut out = format!("--- a/{name}\n+++ b/{name}\n");
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let mut h = 0;
    while h < changed.len() {
        // A hunk: changes whose contexts touch.
        let start = changed[h].saturating_sub(CONTEXT);
        let mut end = changed[h];
        while h < changed.len() && changed[h] <= end + 2 * CONTEXT + 1 {
            end = changed[h];
            h += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        // Line numbers: where the hunk starts in each file.
        let (mut a0, mut b0) = (None, None);
        let (mut na, mut nb) = (0, 0);
        for o in hunk {
            match *o {
                Op::Same(i, j) => {
                    a0.get_or_insert(i);
                    b0.get_or_insert(j);
                    na += 1;
                    nb += 1;
                }
                Op::Del(i) => {
                    a0.get_or_insert(i);
                    na += 1;
                }
                Op::Add(j) => {
                    b0.get_or_insert(j);
                    nb += 1;
                }
            }
        }
        // A side with no line in the hunk starts after the lines before it.
        let before_in = |side_a: bool| {
            ops[..start]
                .iter()
                .filter(|o| match o {
                    Op::Same(..) => true,
                    Op::Del(_) => side_a,
                    Op::Add(_) => !side_a,
                })
                .count()
        };
        let a_start = if na == 0 {
            before_in(true)
        } else {
            a0.unwrap_or(0) + 1
        };
        let b_start = if nb == 0 {
            before_in(false)
        } else {
            b0.unwrap_or(0) + 1
        };
        out.push_str(&format!("@@ -{a_start},{na} +{b_start},{nb} @@\n"));
        for o in hunk {
            match *o {
                Op::Same(i, _) => push_line(&mut out, ' ', a[i]),
                Op::Del(i) => push_line(&mut out, '-', a[i]),
                Op::Add(j) => push_line(&mut out, '+', b[j]),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insertions_and_changes_with_context() {
        let before: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let after = before
            .replace("l5\n", "l5\nnew\n")
            .replace("l18\n", "L18\n");
        let d = unified("f", &before, &after);
        assert_eq!(
            d,
            "--- a/f\n+++ b/f\n@@ -3,6 +3,7 @@\n l3\n l4\n l5\n+new\n l6\n l7\n l8\n@@ -15,6 +16,6 @@\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n"
        );
        assert_eq!(unified("f", "a\n", "a\n"), "");
        assert_eq!(
            unified("f", "", "x\n"),
            "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+x\n"
        );
    }
}
