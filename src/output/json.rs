//! `--output json`: reports as JSON lines, one object per line (the report model as is).

use crate::report::ObjectReport;

/// Renders reports as JSON lines.
pub fn render_json(reports: &[ObjectReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&serde_json::to_string(r).unwrap_or_default());
        out.push('\n');
    }
    out
}
