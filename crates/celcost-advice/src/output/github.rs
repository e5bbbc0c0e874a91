//! `--output github`: the findings of a run ([`super::findings`]) as GitHub Actions workflow
//! commands, annotations on a pull request's diff.

use super::findings::{ci_path, findings};
use celcost_core::report::ObjectReport;

/// Escapes a workflow command's message (`%`, CR, LF).
pub fn github_escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow command's property value (the message's escapes, and `:` and `,`).
pub fn github_escape_property(s: &str) -> String {
    github_escape_data(s)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// The run as GitHub workflow commands, one line per finding:
/// `::error file=…,line=…,col=…,title=…::message` (`warning`, `notice`).
pub fn render_github(reports: &[ObjectReport], near_percent: f64) -> String {
    let mut out = String::new();
    for f in findings(reports, near_percent) {
        let mut props = Vec::new();
        if let Some(file) = &f.file {
            props.push(format!("file={}", github_escape_property(&ci_path(file))));
        }
        if let Some(l) = &f.location {
            props.push(format!("line={}", l.line));
            props.push(format!("col={}", l.column));
        }
        props.push(format!("title={}", github_escape_property(&f.title)));
        out.push_str(&format!(
            "::{} {}::{}\n",
            f.level.github(),
            props.join(","),
            github_escape_data(&f.message)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(github_escape_data("a%b\r\nc: d, e"), "a%25b%0D%0Ac: d, e");
        assert_eq!(
            github_escape_property("a%b\r\nc: d, e"),
            "a%25b%0D%0Ac%3A d%2C e"
        );
    }
}
