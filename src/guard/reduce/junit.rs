//! JUnit / TestNG XML reports: the root totals tag verbatim, then every failing or erroring
//! testcase with its message and the first project stack frames (`file:line`), anchored to lines.

use super::json::{line_of, line_starts};
use super::signal;
use super::{
    derived, fmt_num, show_line, show_line_max, Ctx, Item, Kind, Reduction, Section, MUST,
};
use regex::Regex;
use std::sync::LazyLock;

static ATTR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"([\w:-]+)\s*=\s*"([^"]*)""#).unwrap());

/// Failing testcases listed at most (the totals give the count).
const MAX_FAILURES: usize = 25;

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    ATTR.captures_iter(tag)
        .find(|c| &c[1] == name)
        .map(|c| c.get(2).map_or("", |m| m.as_str()))
}

/// Reduces a JUnit-style XML report; `None` when no `<testcase` is found.
pub fn reduce(text: &str, ctx: &Ctx<'_>) -> Option<Reduction> {
    let starts = line_starts(text);
    let b = text.as_bytes();
    let mut items = Vec::new();
    let mut seq = 0;
    let mut root: Option<(usize, String)> = None;
    let mut cases = 0usize;
    let mut current_case: Option<(usize, String)> = None;
    let mut failures: Vec<(usize, String, String, usize, usize)> = Vec::new(); // (case line, case tag, failure tag, body start, body end)
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'<', &b[i..]) {
        let s = i + p;
        let Some(q) = memchr::memchr(b'>', &b[s..]) else {
            break;
        };
        let e = s + q;
        let tag = &text[s..=e];
        i = e + 1;
        let name: String = tag[1..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '/' || *c == '-' || *c == '_')
            .collect();
        match name.as_str() {
            "testsuites" | "testsuite" if root.is_none() => root = Some((s, tag.to_string())),
            "testcase" => {
                cases += 1;
                current_case = Some((s, tag.to_string()));
            }
            "failure" | "error" => {
                let close = format!("</{name}>");
                let body_end = if tag.ends_with("/>") {
                    e
                } else {
                    text[e..].find(&close).map(|x| e + x).unwrap_or(e)
                };
                let (cl, ct) = current_case.clone().unwrap_or((s, String::new()));
                failures.push((cl, ct, tag.to_string(), e + 1, body_end));
                i = body_end.max(e + 1);
            }
            _ => {}
        }
    }
    if cases == 0 {
        return None;
    }
    seq += 1;
    items.push(Item::fact(
        seq,
        format!(
            "kind: junit xml; {} bytes, {} lines, {} testcases",
            fmt_num(ctx.size(text)),
            fmt_num(starts.len()),
            super::count(cases)
        ),
        MUST,
    ));
    let mut totals = String::new();
    if let Some((off, tag)) = &root {
        totals = show_line_max(tag, 300);
        items.push(Item {
            section: Section::KeyFacts,
            order: 2,
            line: Some(line_of(&starts, *off)),
            text: format!("root: {totals}"),
            prio: MUST,
        });
    }
    let names: Vec<String> = failures
        .iter()
        .map(|(_, ct, _, _, _)| {
            let n = attr(ct, "name").unwrap_or("?");
            match attr(ct, "classname") {
                Some(c) if !c.is_empty() => format!("{c}.{n}"),
                _ => n.to_string(),
            }
        })
        .collect();
    seq += 1;
    items.push(Item::fact(
        seq,
        format!(
            "failing testcases: {}",
            derived(failures.len(), cases, "the testcases")
        ),
        MUST,
    ));
    if !names.is_empty() {
        seq += 1;
        let mut list = names
            .iter()
            .take(MAX_FAILURES)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        if names.len() > MAX_FAILURES {
            list.push_str(&format!("; …{} more", names.len() - MAX_FAILURES));
        }
        items.push(Item::fact(seq, format!("failed: {list}"), MUST / 10.0));
    }
    for (k, (cl, ct, ft, bs, be)) in failures.iter().take(MAX_FAILURES).enumerate() {
        let prio = 150.0 - k as f64;
        let case_line = line_of(&starts, *cl);
        items.push(Item::line(
            Section::Errors,
            case_line,
            show_line(ct.trim()),
            prio,
        ));
        let fl = line_of(&starts, bs.saturating_sub(1));
        items.push(Item::line(
            Section::Errors,
            fl,
            show_line(ft.trim()),
            prio - 0.5,
        ));
        // Body: first message lines, then the first project frames.
        let body = &text[*bs..*be];
        let first_line = line_of(&starts, *bs);
        let mut plain = 0;
        let mut frames = 0;
        for (j, l) in body.split('\n').enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let is_frame = signal::is_frame(l);
            let keep = if is_frame {
                (!signal::is_framework_frame(l) && frames < 2)
                    || (signal::is_test_frame(l) && frames < 4)
            } else {
                plain < 3 || signal::is_caused_by(l)
            };
            if keep {
                if is_frame {
                    frames += 1;
                } else {
                    plain += 1;
                }
                items.push(Item::line(
                    Section::Errors,
                    first_line + j,
                    show_line(l.trim()),
                    prio - 1.0 - j as f64 * 0.01,
                ));
            }
            if frames >= 4 && plain >= 3 {
                break;
            }
        }
    }
    let n_fail = failures.len();
    let status = if n_fail > 0 {
        // The report's own totals (the root tag) rather than a count of ours next to them.
        format!(
            "Test report: {} testcases failed or errored ({}).",
            derived(n_fail, cases, "the testcases"),
            show_line_max(&totals, 160)
        )
    } else {
        format!(
            "Test report: all {} testcases passed or were skipped.",
            super::count(cases)
        )
    };
    let next_action = match failures.first() {
        Some((cl, ..)) => {
            let l = line_of(&starts, *cl);
            format!(
                "Read L{}-L{} of the saved file (first failing testcase).",
                l,
                l + 30
            )
        }
        None => "Nothing failed; open the saved file only for timings.".to_string(),
    };
    Some(Reduction {
        kind: Kind::JunitXml,
        items,
        status,
        failed: Some(n_fail > 0),
        next_action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::rank::Query;

    #[test]
    fn finds_failures() {
        let x = "<?xml version=\"1.0\"?>\n<testsuites tests=\"3\" failures=\"1\">\n<testsuite name=\"s\">\n<testcase name=\"ok\"/>\n<testcase name=\"bad\" classname=\"C\">\n<failure message=\"expected 1\">AssertionError: expected 1\n    at C.bad(C.java:12)\n</failure>\n</testcase>\n</testsuite>\n</testsuites>\n";
        let q = Query::new("which tests failed");
        let r = reduce(
            x,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        )
        .unwrap();
        assert_eq!(r.failed, Some(true));
        assert!(r
            .items
            .iter()
            .any(|i| i.text.contains("tests=\"3\" failures=\"1\"")));
        assert!(r
            .items
            .iter()
            .any(|i| i.text.contains("C.java:12") && i.line == Some(7)));
        assert!(r
            .items
            .iter()
            .any(|i| i.text.contains("name=\"bad\"") && i.line == Some(5)));
    }
}
