//! The `--junit` report: one `<testsuite>` per test file, one `<testcase>`
//! per test, a `<failure>` holding the failure text.

use std::fmt::Write as _;

use super::{Case, Outcome};

/// Text with XML's five special characters escaped.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The report's XML.
pub fn report(cases: &[Case], outcomes: &[Outcome]) -> String {
    let failures = outcomes.iter().filter(|o| o.failure.is_some()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"function-starlark\" tests=\"{}\" failures=\"{failures}\">",
        cases.len()
    );
    let mut i = 0;
    while i < cases.len() {
        let file = &cases[i].file;
        let end = cases[i..]
            .iter()
            .position(|c| &c.file != file)
            .map_or(cases.len(), |n| i + n);
        let group = &outcomes[i..end];
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">",
            escape(&file.display().to_string()),
            end - i,
            group.iter().filter(|o| o.failure.is_some()).count()
        );
        for (case, outcome) in cases[i..end].iter().zip(group) {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                escape(&file.display().to_string()),
                escape(&case.name),
                outcome.seconds
            );
            match &outcome.failure {
                None => out.push_str("/>\n"),
                Some(why) => {
                    let error = why.lines().last().unwrap_or_default();
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        escape(error),
                        escape(why)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
        i = end;
    }
    out.push_str("</testsuites>\n");
    out
}
