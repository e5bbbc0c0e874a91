//! `--output json`: reports as JSON lines, one object per line (the report model as is); `celcost
//! diff`'s objects alike.

use serde::Serialize;

/// Renders values (reports, an object's diff) as JSON lines.
pub fn render_json<T: Serialize>(values: &[T]) -> String {
    let mut out = String::new();
    for v in values {
        out.push_str(&serde_json::to_string(v).unwrap_or_default());
        out.push('\n');
    }
    out
}
