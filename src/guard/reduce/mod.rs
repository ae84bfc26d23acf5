//! Structure-aware, deterministic reduction of a cleaned tool output.
//!
//! [`detect`] sniffs the kind (JSON, NDJSON, `go test -json`, JUnit XML, test report text, logs,
//! tables, `ls -l` listings, `kubectl describe` pages, HTML, SQL dumps, diffs, stack traces,
//! CSV, plain lines) and
//! [`reduce`] turns the text into a [`Reduction`]: ranked [`Item`]s for the Key facts, Evidence
//! and Errors sections, each verbatim line anchored by its 1-based line number in the text (which
//! is also its line number in the saved file), plus a Status and a Next relevant action written
//! by rule. The summarizer packs the items into its token budget by priority.

pub mod describe;
pub mod diff;
pub mod html;
pub mod intent;
pub mod json;
pub mod junit;
pub mod rank;
pub mod select;
pub mod signal;
pub mod signals;
pub mod sql;
pub mod table;
pub mod text;
pub mod truncated;
pub mod units;
mod xmlunits;

use rank::Query;

/// The kind of content, found by cheap sniffing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One JSON document.
    Json,
    /// Newline-delimited JSON objects.
    Ndjson,
    /// `go test -json` event stream.
    GoTestJson,
    /// JUnit / TestNG XML report.
    JunitXml,
    /// Plain-text test runner report (pytest, jest, cargo test, mocha).
    TestReport,
    /// Timestamped or levelled log lines (CI logs included).
    Log,
    /// A whitespace-aligned table with a header (ps, kubectl get, dpkg -l, systemctl, df).
    Table,
    /// `ls -l` / `ls -alR` output.
    Listing,
    /// An HTML page.
    Html,
    /// An SQL dump or script.
    Sql,
    /// A unified diff.
    Diff,
    /// A stack trace.
    StackTrace,
    /// Comma-separated values with a header.
    Csv,
    /// A `kubectl describe` page (`Key:  value` lines, conditions, events).
    Describe,
    /// Anything else: plain lines.
    Lines,
}

impl Kind {
    /// True for a format whose reducer knows where its answers are (failing tests, a dump's
    /// definitions, a listing's entries), beyond the errors any reducer finds.
    pub fn is_specific(self) -> bool {
        matches!(
            self,
            Kind::GoTestJson
                | Kind::JunitXml
                | Kind::TestReport
                | Kind::Listing
                | Kind::Sql
                | Kind::Diff
                | Kind::StackTrace
                | Kind::Describe
        )
    }

    /// True for a kind whose lines may sit in indented blocks whose first line names the
    /// record ([`select::Headers`]): plain lines, logs, stack traces, test reports, describe
    /// pages. JSON units carry their own paths; tables, CSV, SQL, diffs and HTML have their
    /// own structure.
    pub fn has_blocks(self) -> bool {
        matches!(
            self,
            Kind::Lines | Kind::Log | Kind::StackTrace | Kind::TestReport | Kind::Describe
        )
    }

    /// Stable name used in reports and the Key facts section.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Json => "json",
            Kind::Ndjson => "ndjson",
            Kind::GoTestJson => "go_test_json",
            Kind::JunitXml => "junit_xml",
            Kind::TestReport => "test_report",
            Kind::Log => "log",
            Kind::Table => "table",
            Kind::Listing => "ls_listing",
            Kind::Html => "html",
            Kind::Sql => "sql",
            Kind::Diff => "diff",
            Kind::StackTrace => "stack_trace",
            Kind::Csv => "csv",
            Kind::Describe => "kubectl_describe",
            Kind::Lines => "lines",
        }
    }
}

/// The section of the summary an [`Item`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// Counts, totals, exit codes, schema: facts computed from the whole input.
    KeyFacts,
    /// Verbatim lines that answer the intent.
    Evidence,
    /// Verbatim error lines and messages.
    Errors,
}

/// Priority of facts that must always be shown (kind, size, totals, exit codes).
pub const MUST: f64 = 1e9;

/// One candidate line of the summary.
#[derive(Debug, Clone)]
pub struct Item {
    /// Section it is rendered in.
    pub section: Section,
    /// Sort key inside the section: the line number for anchored lines, a sequence otherwise.
    pub order: usize,
    /// 1-based line number in the text (and the saved file) when the item quotes a line.
    pub line: Option<usize>,
    /// The rendered text (verbatim line, or a fact), without the `L<n>:` anchor.
    pub text: String,
    /// Higher is packed first; [`MUST`] for facts that are always kept.
    pub prio: f64,
}

impl Item {
    /// A fact for the Key facts section.
    pub fn fact(seq: usize, text: impl Into<String>, prio: f64) -> Self {
        Item {
            section: Section::KeyFacts,
            order: seq,
            line: None,
            text: text.into(),
            prio,
        }
    }

    /// A verbatim, anchored line for the Evidence or Errors section.
    pub fn line(section: Section, line: usize, text: impl Into<String>, prio: f64) -> Self {
        Item {
            section,
            order: line,
            line: Some(line),
            text: text.into(),
            prio,
        }
    }

    /// The item as printed: `L<n>: text` for anchored lines, `- text` for facts.
    pub fn render(&self) -> String {
        match self.line {
            Some(n) if self.section != Section::KeyFacts => format!("L{n}: {}", self.text),
            Some(n) => format!("- {} (L{n})", self.text),
            None => format!("- {}", self.text),
        }
    }
}

/// The outcome of a reduction.
#[derive(Debug, Clone)]
pub struct Reduction {
    /// Detected kind.
    pub kind: Kind,
    /// Candidate items of all sections, unsorted.
    pub items: Vec<Item>,
    /// Status written by rule (one sentence).
    pub status: String,
    /// `Some(true)` when the input shows a failure, `Some(false)` when it shows success, `None` if unknown.
    pub failed: Option<bool>,
    /// Next relevant action written by rule.
    pub next_action: String,
}

/// What a reducer needs besides the text.
pub struct Ctx<'a> {
    /// The caller's intent plus the tool arguments, as a BM25 query.
    pub query: &'a Query,
    /// Exit code passed in the tool arguments, if any.
    pub exit_code: Option<i64>,
    /// Size of the saved file (the tool output as received), which is what the summary states
    /// as the input's size: the cleaned text can be shorter (ANSI escapes, `\r\n`). 0 when
    /// unknown (unit tests), which [`Ctx::size`] replaces by the text's own length.
    pub bytes: usize,
}

impl Ctx<'_> {
    /// The input's size in bytes as the summary states it: [`Ctx::bytes`], or `text.len()`
    /// when that is unknown.
    pub fn size(&self, text: &str) -> usize {
        if self.bytes > 0 {
            self.bytes
        } else {
            text.len()
        }
    }
}

/// Sniffs the kind of `text` from its first bytes and line shapes.
pub fn detect(text: &str) -> Kind {
    let head = clip_str(text, 64 * 1024);
    let trimmed = head.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if serde_json::from_str::<serde_json::Value>(text).is_ok() {
            return Kind::Json;
        }
        let lines: Vec<&str> = head
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(50)
            .collect();
        let ok = lines
            .iter()
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v.is_object()))
            .count();
        if !lines.is_empty() && ok * 10 >= lines.len() * 8 {
            if head.contains("\"Action\"") && head.contains("\"Package\"") {
                return Kind::GoTestJson;
            }
            return Kind::Ndjson;
        }
    }
    // A document that is one JSON string (a log serialised as a string): its text, decoded.
    if trimmed.starts_with('"')
        && text.trim_end().ends_with('"')
        && serde_json::from_str::<String>(text).is_ok()
    {
        return Kind::Json;
    }
    let lower_head = clip_str(trimmed, 4096).to_ascii_lowercase();
    if (lower_head.starts_with("<?xml") || lower_head.starts_with("<testsuite"))
        && head.contains("<testcase")
    {
        return Kind::JunitXml;
    }
    // A page: a line of its head that is markup opens the document (`<!doctype html`, `<html`,
    // `<!-- saved from … --><html>`). Markup quoted inside other lines (a `curl --trace-ascii`
    // dump's `0000: <!DOCTYPE HTML>.<html…`) is the data of another kind of output.
    if lower_head.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("<!doctype html") || l.starts_with('<') && l.contains("<html")
    }) {
        return Kind::Html;
    }
    let lines: Vec<&str> = head.lines().take(400).collect();
    let nonblank: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let n = nonblank.len().max(1);
    let diffish = nonblank
        .iter()
        .filter(|l| {
            l.starts_with(['+', '-', ' ', '@']) || l.starts_with("diff ") || l.starts_with("index ")
        })
        .count();
    let first = nonblank.first().copied().unwrap_or("");
    let starts_as_diff = ["diff ", "--- ", "Index: ", "From ", "commit "]
        .iter()
        .any(|p| first.starts_with(p));
    if starts_as_diff
        && diffish * 10 >= n * 6
        && (lines.iter().any(|l| l.starts_with("diff --git"))
            || (lines.iter().any(|l| l.starts_with("--- "))
                && lines.iter().any(|l| l.starts_with("+++ "))
                && lines.iter().any(|l| l.starts_with("@@ "))))
    {
        return Kind::Diff;
    }
    if diff::looks_like_git_log(&nonblank) {
        return Kind::Diff;
    }
    if describe::looks_like_describe(&nonblank) {
        return Kind::Describe;
    }
    if sql::looks_like_sql(&nonblank) {
        return Kind::Sql;
    }
    if table::looks_like_listing(&nonblank) {
        return Kind::Listing;
    }
    if text::looks_like_test_report(head) {
        return Kind::TestReport;
    }
    if table::find_header(&lines).is_some()
        && !table::several_tables(&lines[..lines.len().min(table::SERIES_PROBE_LINES)])
    {
        return Kind::Table;
    }
    if first.starts_with("Traceback (most recent call last)")
        || (nonblank.iter().filter(|l| signal::is_frame(l)).count() * 10 >= n * 3)
    {
        return Kind::StackTrace;
    }
    if text::looks_like_log(&nonblank) {
        return Kind::Log;
    }
    if table::looks_like_csv(&nonblank) {
        return Kind::Csv;
    }
    Kind::Lines
}

/// Reduces `text` of kind `kind`; never fails (an unparsable document falls back to lines).
pub fn reduce(text: &str, kind: Kind, ctx: &Ctx<'_>) -> Reduction {
    let r = match kind {
        Kind::Json | Kind::Ndjson | Kind::GoTestJson => json::reduce(text, kind, ctx),
        Kind::JunitXml => junit::reduce(text, ctx),
        Kind::Table | Kind::Csv | Kind::Listing => table::reduce(text, kind, ctx),
        Kind::Html => Some(html::reduce(text, ctx)),
        Kind::Sql => Some(sql::reduce(text, ctx)),
        Kind::Diff => Some(diff::reduce(text, ctx)),
        Kind::Describe => describe::reduce(text, ctx),
        _ => None,
    };
    r.unwrap_or_else(|| {
        let lines: Vec<&str> = text.split('\n').collect();
        let k = if matches!(
            kind,
            Kind::Json
                | Kind::Ndjson
                | Kind::GoTestJson
                | Kind::JunitXml
                | Kind::Table
                | Kind::Csv
                | Kind::Listing
                | Kind::Describe
        ) {
            Kind::Lines
        } else {
            kind
        };
        text::reduce_lines(&lines, k, ctx)
    })
}

/// Indentation width of a line: spaces count 1, a tab 4, and so does a tree's drawing before
/// a node ([`TREE_PREFIX`]: `│   ├── zip v9.8.2` is 8 deep, under `├── candle-core …` at 0).
/// Shared by the block headers shown with a line ([`select::Headers`]) and the openers it is
/// scored with.
pub(crate) fn indent(line: &str) -> usize {
    let width = |t: &str| -> usize { t.chars().map(|c| if c == '\t' { 4 } else { 1 }).sum() };
    if let Some(m) = TREE_PREFIX.find(clip_str(line, 400)) {
        return width(m.as_str());
    }
    width(
        line.split(|c: char| c != ' ' && c != '\t')
            .next()
            .unwrap_or(""),
    )
}

/// True for a line that is a node of a drawn tree ([`TREE_PREFIX`]).
pub(crate) fn tree_node(line: &str) -> bool {
    TREE_PREFIX.is_match(clip_str(line, 400))
}

/// The drawing before a tree's node (`cargo tree`, `npm ls`, `tree`, `pstree`): bars of the
/// levels above (`│   `), then a branch (`├── `, `└── `, or ASCII `|-- `, `` `-- ``).
static TREE_PREFIX: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"^[ \t]*(?:[│┃|][ \t]+)*(?:[├└┣┗][─━]{1,3}|[|`]--)[ \t]?")
        .expect("tree prefix pattern")
});

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn clip_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Longest line shown in the summary, in bytes (a long line keeps its start and its end).
pub const MAX_LINE_BYTES: usize = 320;

/// A line as shown: trailing space trimmed, runs of 3+ spaces shortened to 2, long lines cut in
/// the middle with the marker [`CUT_MARK`] (the `L<n>` anchor leads to the whole line).
pub fn show_line(line: &str) -> String {
    show_line_max(line, MAX_LINE_BYTES)
}

/// [`show_line`] with an explicit byte cap.
pub fn show_line_max(line: &str, max: usize) -> String {
    // GitHub Actions runner timestamps ("2022-03-15T21:06:26.2510560Z ") prefix every line of a
    // CI log and cost ~25 tokens each; the L<n> anchor keeps the way back to the full line.
    let line = match line.as_bytes() {
        [a, b, c, d, b'-', _, _, b'-', _, _, b'T', ..]
            if line.len() > 29
                && [a, b, c, d].iter().all(|x| x.is_ascii_digit())
                && line.as_bytes()[27] == b'Z'
                && line.as_bytes()[28] == b' ' =>
        {
            &line[29..]
        }
        _ => line,
    };
    let mut out = String::with_capacity(line.len().min(max + 16));
    let mut spaces = 0;
    for c in line.trim_end().chars() {
        if c == ' ' {
            spaces += 1;
            if spaces <= 2 {
                out.push(c);
            }
        } else {
            spaces = 0;
            out.push(c);
        }
    }
    if out.len() <= max {
        return out;
    }
    let mut head = clip_str(&out, max * 3 / 4);
    let mut tail_start = out.len() - max / 4;
    while !out.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    // A quote opened in the head and closed in the tail would read as one quoted string that
    // the input does not contain: cut before an unpaired quote in the head and after an
    // unpaired one in the tail.
    for q in ['"', '`'] {
        if head.matches(q).count() % 2 == 1 {
            if let Some(p) = head.rfind(q) {
                head = &head[..p];
            }
        }
        let tail = &out[tail_start..];
        if tail.matches(q).count() % 2 == 1 {
            if let Some(p) = tail.find(q) {
                tail_start += p + 1;
            }
        }
    }
    // Any other quoted string that would span the cut (a single-quoted one, or one the
    // parity rule missed): shorten the head to before it, as often as needed.
    let tail = out[tail_start..].trim_start();
    loop {
        let joined = format!("{} {CUT_MARK} {tail}", head.trim_end());
        let spanning = QUOTED
            .iter()
            .filter_map(|re| {
                re.find_iter(&joined)
                    .find(|m| m.as_str().contains(CUT_MARK))
            })
            .map(|m| m.start())
            .min();
        match spanning {
            Some(p) if p < head.len() && !head.is_empty() => head = clip_str(head, p),
            _ => return joined,
        }
    }
}

/// Quoted strings as a reader (and the benchmark's invented-fact check) finds them: double
/// quotes, backticks, and single quotes at word boundaries.
static QUOTED: std::sync::LazyLock<[regex::Regex; 3]> = std::sync::LazyLock::new(|| {
    [
        regex::Regex::new(r#""[^"\n]+""#).unwrap(),
        regex::Regex::new(r"`[^`\n]+`").unwrap(),
        regex::Regex::new(r"(?:^|[\s(\[{:=,])'[^'\n]{2,}'(?:$|[\s)\]},.;:!?])").unwrap(),
    ]
});

/// What [`show_line`] puts where it cut a long line. It states no size: a count of the bytes
/// left out would read as a figure of the input.
pub const CUT_MARK: &str = "…[cut]…";

/// A count toolsum derived from the input (not a figure the input shows), written so that it
/// cannot be mistaken for a quote of the input: exact below 100 (numbers that short are not
/// checkable claims: they occur everywhere); from 100 on, as a whole percentage of `total`, a
/// size the summary states itself (`of` names it: "the lines", "the rows"); "over 99" when
/// there is no total. Every 3+ digit number in a rule-written summary is then a figure quoted
/// from the input, the saved file's size, or a line reference.
pub fn derived(n: usize, total: usize, of: &str) -> String {
    if n < 100 {
        return n.to_string();
    }
    if total == 0 {
        return "over 99".to_string();
    }
    if n >= total {
        return format!("all of {of}");
    }
    let pct = ((n as f64 * 100.0 / total as f64).round() as usize).clamp(1, 99);
    format!("{pct}% of {of}")
}

/// A count toolsum made (records, keys, items): as it is under 100, else `×N`, toolsum's mark
/// for a count it derived, so that no figure of 3+ digits in a summary reads as quoted from
/// the input unless it is (see [`derived`] for shares).
pub fn count(n: usize) -> String {
    if n < 100 {
        n.to_string()
    } else {
        format!("×{n}")
    }
}

/// Formats an integer with thousands separators ("2,000"); see [`crate::guard::save::thousands`].
pub fn fmt_num(n: usize) -> String {
    crate::guard::save::thousands(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_node_is_as_deep_as_its_drawing() {
        assert_eq!(indent("├── candle-core feature \"default\""), 4);
        assert_eq!(indent("│   └── candle-core v0.11.1"), 8);
        assert_eq!(indent("│       ├── zip v9.8.2"), 12);
        assert_eq!(indent("|   `-- lodash@4.17.21"), 8);
        assert_eq!(indent("    plain = 1"), 4);
        assert_eq!(indent("\tx"), 4);
        // A table's rows and rules are no tree.
        assert_eq!(indent("| a | b |"), 0);
        assert_eq!(indent("│ 1  │ alice │"), 0);
    }

    #[test]
    fn detects_kinds() {
        assert_eq!(detect("{\"a\": 1}"), Kind::Json);
        assert_eq!(detect("{\"a\": 1}\n{\"a\": 2}\n"), Kind::Ndjson);
        assert_eq!(
            detect("<!DOCTYPE html><html><body>x</body></html>"),
            Kind::Html
        );
        // Headers before the page (`curl -i`) still make a page; markup quoted inside a
        // trace's lines does not.
        assert_eq!(
            detect("HTTP/1.1 200 OK\nContent-Type: text/html\n\n<html><body>x</body></html>"),
            Kind::Html
        );
        assert_eq!(
            detect("<!-- saved from url=(0014)about:internet --><html><body>x</body></html>"),
            Kind::Html
        );
        assert_eq!(
            detect(
                "23:19:16.912083 <= Recv data, 37594 bytes (0x92da)\n\
                 0000: <!DOCTYPE HTML>.<html lang=\"en\">.<head>.<meta charset=\"utf-8\">.<\n\
                 0040: title>Directory listing for /</title>.</head>.<body>.<h1>Directo\n"
            ),
            Kind::Log
        );
        assert_eq!(
            detect("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"),
            Kind::Diff
        );
        assert_eq!(
            detect("<?xml version=\"1.0\"?>\n<testsuites><testcase name=\"a\"/></testsuites>"),
            Kind::JunitXml
        );
        assert_eq!(detect("hello\nworld\n"), Kind::Lines);
    }

    #[test]
    fn show_line_shortens() {
        assert_eq!(show_line("a     b  c   "), "a  b  c");
        let long = "x".repeat(1000);
        let s = show_line(&long);
        assert!(s.len() < 400 && s.contains(CUT_MARK));
        // A quote cut open in the head is not closed by one in the tail.
        let q = format!("a \"{}\" b \"{}\" c", "y".repeat(500), "z".repeat(20));
        let s = show_line(&q);
        let (h, t) = s.split_once(CUT_MARK).unwrap();
        assert_eq!(h.matches('"').count() % 2, 0, "{s}");
        assert_eq!(t.matches('"').count() % 2, 0, "{s}");
        assert!(s.starts_with("a") && s.ends_with("c"), "{s}");
        // Nor is a single-quoted one.
        let q = format!(
            "[('x-expose', 'ETag, Link, {}, content-type')]",
            "X-Header, ".repeat(60)
        );
        let s = show_line(&q);
        assert!(!s.contains("'ETag"), "{s}");
        assert_eq!(fmt_num(2000), "2,000");
        assert_eq!(
            show_line("2022-05-07T08:49:38.2847211Z fatal: unsafe"),
            "fatal: unsafe"
        );
        assert_eq!(fmt_num(999), "999");
        assert_eq!(fmt_num(1234567), "1,234,567");
    }

    #[test]
    fn derived_counts_are_exact_when_short_else_shares() {
        assert_eq!(derived(87, 2000, "the lines"), "87");
        assert_eq!(derived(1318, 2000, "the lines"), "66% of the lines");
        assert_eq!(derived(2000, 2000, "the lines"), "all of the lines");
        assert_eq!(derived(100, 1_000_000, "x"), "1% of x");
        assert_eq!(derived(150, 0, "x"), "over 99");
    }
}
