//! Line-oriented reduction for logs, CI logs, test-runner text, stack traces and plain lines:
//! a compact Drain-style template miner groups lines, every error/warning template keeps a
//! verbatim example with its count and first/last line, and BM25 against the intent picks the
//! other lines worth showing.

use super::rank::{bm25, bm25_discriminating};
use super::signal::{self, Severity};
use super::{count, derived, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Similarity a line needs to join a template (share of equal token positions); Drain uses 0.4-0.5.
const SIM_PLAIN: f64 = 0.5;
/// Stricter similarity for error/warning lines, so distinct failures stay distinct templates.
const SIM_SEVERE: f64 = 0.7;
/// Tokens of a line considered for its template (long lines are compared on their start).
const MAX_TEMPLATE_TOKENS: usize = 40;
/// Templates compared per bucket (most recent first), which bounds the cost on huge inputs.
const MAX_CANDIDATES: usize = 300;

/// A log record's start: a timestamp near the line's start (ISO `2024-05-01T10:00`, nginx's and
/// Go's `2025/12/06 03:00:08`, an access log's `[29/May/2024:15:37:49`, syslog's `Jan  1
/// 10:00:00`, a clock) or a level.
static LOG_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^.{0,60}?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|^\d{4}/\d{2}/\d{2}[T ]\d{2}:\d{2}|^.{0,60}?\[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}|^\[?\w{3} \w{3} +\d{1,2} \d{2}:\d{2}|^\d{6} \d{6}|^\w{3} +\d{1,2} \d{2}:\d{2}:\d{2}|^\[?\d{2}:\d{2}:\d{2}|^\[?(INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\b").unwrap()
});
static TEST_REPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)=+ test session starts =+|short test summary info|^\s*Tests:\s+\d+|^test result: |^running \d+ tests?$|^\s*(PASS|FAIL)\s+\S+\.(js|ts|tsx|jsx|mjs)\b|^=+ .*\d+ (passed|failed).* in [\d.]+s").unwrap()
});
static FAILED_COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[\s,;(\[])([1-9]\d*) (failed|failing|failures?|errors?)(?:$|[^:\w])|\b(failures|errors|failed):\s*([1-9]\d*)|build failure|test result: failed|^\s*FAIL(?:ED)?\b").unwrap()
});

/// A run's own last word that it failed, among its last lines: cargo's `error: could not
/// compile`, rustc's `error: aborting due to`, Gradle's and Maven's `BUILD FAILED` / `BUILD
/// FAILURE`, TAP's `# fail 2`, a runner's `Error: Process completed with exit code 1`, a crash
/// (`Segmentation fault`, `core dumped`), a Rust panic, `go test`'s `FAIL` (alone or with its
/// package), autoconf's `configure: error:`, CMake's `Configuring incomplete, errors
/// occurred!`, make's `make: *** [...] Error 2`, ninja's `build stopped`.
static FINAL_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^error: could not compile\b|^error: aborting due to\b|\bBUILD FAIL(?:ED|URE)\b",
        r"|^# fail(?:ed)? [1-9]|^Error: Process completed with exit code [1-9]",
        r"|^Segmentation fault\b|\(core dumped\)|^thread '[^']*' panicked at ",
        r"|^FAIL$|^FAIL\t|^configure: error: |Configuring incomplete, errors occurred!",
        r"|^g?make(?:\[\d+\])?: \*\*\* |^ninja: build stopped"
    ))
    .unwrap()
});
/// An exception's last line as Python prints it (`TypeError: unsupported operand …`).
static EXCEPTION_LAST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b(?::|$)").unwrap()
});
/// `error lines: 12 in 3 line templates; warning lines: 4 in 1 line template`, a kind left
/// out when none (`no warning lines`); counts of `total` lines past 99 as shares
/// ([`derived`]). Lines are counted by what they read as ([`crate::guard::reduce::signal`]'s
/// levels and words), not by any exit status.
fn severity_counts(err: usize, err_t: usize, warn: usize, warn_t: usize, total: usize) -> String {
    let one = |what: &str, n: usize, t: usize| {
        if n == 0 {
            format!("no {what} lines")
        } else {
            format!(
                "{what} lines: {} in {} line template{}",
                derived(n, total, "the lines"),
                count(t),
                if t == 1 { "" } else { "s" }
            )
        }
    };
    format!(
        "{}; {}",
        one("error", err, err_t),
        one("warning", warn, warn_t)
    )
}

/// Nonblank lines at the end read for [`final_failure`].
const FINAL_LINES: usize = 6;
/// Lines before a final exception within which its `Traceback (most recent call last):` stands.
const TRACEBACK_SPAN: usize = 200;

/// The line (index) of `lines` where the run says, at its end, that it failed: a
/// [`FINAL_FAILURE`] among its last [`FINAL_LINES`] nonblank lines, or a Python traceback
/// whose exception is among them. `None` when the end says nothing of the kind.
fn final_failure(lines: &[&str], nonblank: &[usize]) -> Option<usize> {
    let last: Vec<usize> = nonblank.iter().rev().take(FINAL_LINES).copied().collect();
    if let Some(&i) = last
        .iter()
        .find(|&&i| FINAL_FAILURE.is_match(lines[i].trim_start()))
    {
        return Some(i);
    }
    let &i = last.iter().find(|&&i| EXCEPTION_LAST.is_match(lines[i]))?;
    lines[i.saturating_sub(TRACEBACK_SPAN)..i]
        .iter()
        .any(|l| l.starts_with("Traceback (most recent call last):"))
        .then_some(i)
}

/// True when at least 30% of the lines look like log records (timestamp or level first).
pub fn looks_like_log(nonblank: &[&str]) -> bool {
    let n = nonblank.len();
    n >= 3 && nonblank.iter().filter(|l| LOG_LINE.is_match(l)).count() * 10 >= n * 3
}

static GH_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{7}Z ").unwrap());

/// True when a line starts a new log record (timestamp or level first); a GitHub Actions runner
/// timestamp prefix does not count, since the runner adds it to every line.
pub fn is_record_start(line: &str) -> bool {
    let rest = GH_PREFIX.find(line).map_or(line, |m| &line[m.end()..]);
    LOG_LINE.is_match(rest)
}

/// True for pytest / jest / cargo test / go test text reports.
pub fn looks_like_test_report(head: &str) -> bool {
    TEST_REPORT.is_match(head)
}

/// True when a totals line reports failures ("1 failed", "Failures: 1", "BUILD FAILURE").
pub fn totals_failed(line: &str) -> bool {
    FAILED_COUNT.is_match(line)
}

/// Most lines of one template among the kind's 40 intent matches ([`reduce_lines`]); set on
/// the dev corpus (4 and 8 lost old-holdout facts, 12 kept them and gained one dev fact).
const MATCHES_PER_TEMPLATE: usize = 12;
/// Priority of a line that matches the intent, plus [`MATCH_PRIO_SPAN`] times its score (0..=1).
const MATCH_PRIO_MIN: f64 = 8.0;
/// See [`MATCH_PRIO_MIN`].
const MATCH_PRIO_SPAN: f64 = 30.0;
/// The highest priority of a line that matches the intent ([`MATCH_PRIO_MIN`] +
/// [`MATCH_PRIO_SPAN`]); the head and tail lines and the errors' context rank above it.
pub const MATCH_PRIO_MAX: f64 = MATCH_PRIO_MIN + MATCH_PRIO_SPAN;

/// Normalises BM25 scores to 0..=1 by the maximum.
pub fn normalise(scores: &[f64]) -> Vec<f64> {
    let max = scores.iter().cloned().fold(0.0, f64::max);
    if max <= 0.0 {
        return vec![0.0; scores.len()];
    }
    scores.iter().map(|s| s / max).collect()
}

/// The indentation (bytes) of a line that is a one-word label, a colon and one name
/// (`FAILED: a/b.java`, `Passed: c.java`, `Error:  x.java`), the shape of one result in a
/// list; a label before prose (`hint: Updates were rejected`) is a note, not a result.
fn labelled(line: &str) -> Option<usize> {
    let body = line.trim_start();
    let (label, rest) = body.split_once(':')?;
    let word = !label.is_empty()
        && label.len() <= 24
        && label.starts_with(|c: char| c.is_ascii_alphabetic())
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let one_name = rest.split_whitespace().count() == 1;
    (word && one_name && rest.starts_with([' ', '\t'])).then_some(line.len() - body.len())
}

/// Lines above an error searched for the shape of the output going on ([`continues`]).
const GOING_ON_LINES: usize = 40;

/// Bytes from which a line is read for its severity part by part ([`line_severity`]): a
/// minified bundle or a one-line dump of megabytes (issue 17: `FATAL: disk quota exceeded`
/// in the middle of a 5 MB line was "no error"). Shorter lines are read as
/// [`signal::severity`] reads them (their first 4,000 bytes).
pub const GIANT_LINE_BYTES: usize = 64 * 1024;

/// The severity of one line: [`signal::severity`]'s, or for a line of [`GIANT_LINE_BYTES`] or
/// more the worst of its parts' ([`crate::guard::reduce::units::parts`], as its units are cut).
pub fn line_severity(line: &str) -> Severity {
    if line.len() < GIANT_LINE_BYTES {
        return signal::severity(line);
    }
    super::units::parts(line)
        .into_iter()
        .map(signal::severity)
        .max()
        .unwrap_or(Severity::None)
}

/// True when `line`, below the error line `lines[idx]`, reads as part of it: indented, not
/// opening with a letter or digit (`  |`, `^~~`, `= note`), below an error that ends in `:`
/// (a list of what it names follows), or at the margin with a first word few lines above
/// the error start with (`org.opentest4j.AssertionFailedError: …`). A line like three or
/// more of the [`GOING_ON_LINES`] above (`gcc -c next.c` among the compile lines) is the
/// output going on.
fn continues(lines: &[&str], idx: usize, line: &str) -> bool {
    // Indented past the error line (every line of a dmesg without timestamps starts with a
    // space: none is the one above's continuation for that alone).
    let own = line.len() - line.trim_start().len();
    let err = lines[idx].len() - lines[idx].trim_start().len();
    if own > err
        || !line.trim_start().starts_with(char::is_alphanumeric)
        || lines[idx].trim_end().ends_with(':')
    {
        return true;
    }
    let first = |l: &str| l.split_whitespace().next().map(str::to_string);
    let word = first(line);
    lines[idx.saturating_sub(GOING_ON_LINES)..idx]
        .iter()
        .filter(|l| first(l) == word)
        .count()
        < 3
}

/// True when two lines open with the same source label: their first two words alike, the
/// second ending in `:` (`mei_me 0000:00:16.0:`, `sd 2:0:1:0:`).
fn same_source(a: &str, b: &str) -> bool {
    let two = |l: &str| {
        let mut w = l.split_whitespace();
        (w.next().map(str::to_string), w.next().map(str::to_string))
    };
    let (x, y) = (two(a), two(b));
    x == y
        && x.1
            .as_deref()
            .is_some_and(|w| w.len() > 1 && w.ends_with(':'))
}

/// Lines following an error line worth showing with it: continuation lines, "Caused by", and the
/// first project (non-framework) stack frames. Returns 0-based indices. A line of the error
/// line's own labelled shape at its indentation (`Passed: b.java` after `FAILED: a.java`) is
/// the list's next result, not this one's context, and ends it.
pub fn context_after(lines: &[&str], idx: usize, is_example: &dyn Fn(usize) -> bool) -> Vec<usize> {
    // A line reporting an exit status ends what failed: what follows is the next step (a CI
    // runner's `Post job cleanup.` after `Process completed with exit code 1.`). So does a
    // tally of errors (`msgfmt: found 1 fatal error`): it counts the lines above it.
    if signal::exit_code(lines[idx]).is_some() || signal::tally(lines[idx]).is_some() {
        return Vec::new();
    }
    let sibling_at = labelled(lines[idx]);
    let mut out = Vec::new();
    let mut project_frames = 0;
    let mut plain = 0;
    let mut j = idx + 1;
    while j < lines.len() && j <= idx + 80 {
        let l = lines[j];
        if l.trim().is_empty() {
            j += 1;
            if j > idx + 6 && out.is_empty() {
                break;
            }
            continue;
        }
        // The next item, or the runner's trailer (Gemini CLI's `Error: (none)`, `Exit Code:
        // 0` after the output, trial of session 55): a field that states nothing or an exit
        // status is no part of the error above it.
        if is_example(j) || NONE_FIELD.is_match(l) || signal::exit_code(l).is_some() {
            break;
        }
        if signal::is_frame(l) {
            let wanted = (!signal::is_framework_frame(l) && project_frames < 2)
                || (signal::is_test_frame(l) && project_frames < 4);
            if wanted {
                out.push(j);
                project_frames += 1;
            }
        } else if signal::is_caused_by(l) {
            out.push(j);
            project_frames = 0;
        } else if sibling_at.is_some() && labelled(l) == sibling_at || signal::is_passed_verdict(l)
        {
            // The list's next result (`Passed: b.java`, `test_b PASSED [ 8%]`) ends it.
            break;
        } else if plain < 3 && j <= idx + 6 && !is_record_start(l) && continues(lines, idx, l) {
            out.push(j);
            plain += 1;
        } else {
            break;
        }
        j += 1;
    }
    out
}

/// A labelled field whose value is none (`Error: (none)`, `Signal: none`, `cause: null`).
static NONE_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*[a-z][\w ]{0,30}:\s*(?:\(none\)|none|null|nil|n/a)\s*$").unwrap()
});

/// Most plain lines shown for sharing the error lines' terms.
const MAX_RELATED: usize = 3;
/// Error examples whose words make the query for [`related_to_errors`].
const RELATED_FROM: usize = 8;

/// Plain (non-error, non-warning) lines of rare templates that best match the words of the
/// error examples (BM25 with the errors as the query, scores normalised): at most
/// [`MAX_RELATED`], each scoring at least 0.5, as (0-based index, score). Frequent templates
/// are left out, since a line repeated many times is routine, not the cause.
fn related_to_errors(
    lines: &[&str],
    sevs: &[Severity],
    err_t: &[&Template],
    examples: &[usize],
    templates: &[Template],
) -> Vec<(usize, f64)> {
    if err_t.is_empty() {
        return Vec::new();
    }
    let mut words = String::new();
    for (t, &ex) in templates
        .iter()
        .zip(examples)
        .filter(|(t, _)| t.sev == Severity::Error)
    {
        if t.lines.len() > 3 {
            continue;
        }
        words.push_str(super::clip_str(lines[ex - 1], 400));
        words.push(' ');
        // The message line after an error line ("java.sql.SQLException: ...").
        if let Some(next) = lines.get(ex) {
            words.push_str(super::clip_str(next, 400));
            words.push(' ');
        }
        if words.len() > RELATED_FROM * 400 {
            break;
        }
    }
    let query = super::rank::Query::new(&words);
    let rare: std::collections::HashSet<usize> = templates
        .iter()
        .filter(|t| t.sev == Severity::None && t.lines.len() <= 2)
        .flat_map(|t| t.lines.iter().map(|l| l - 1))
        .collect();
    let cands: Vec<usize> = (0..lines.len())
        .filter(|i| rare.contains(i) && sevs[*i] == Severity::None && !signal::is_frame(lines[*i]))
        .collect();
    // Scored over all lines, so that words on every line (logger and thread names) weigh
    // little, then normalised over the candidates.
    let docs: Vec<&str> = lines.iter().map(|l| super::clip_str(l, 600)).collect();
    let all = bm25(&query, &docs);
    let scores = normalise(&cands.iter().map(|&i| all[i]).collect::<Vec<_>>());
    let mut best: Vec<(usize, f64)> = cands
        .into_iter()
        .zip(scores)
        .filter(|(_, s)| *s >= 0.5)
        .collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    best.truncate(MAX_RELATED);
    best
}

/// Reduces lines (the text split on `\n`; index i is line i+1) of a log-like kind.
pub fn reduce_lines(lines: &[&str], kind: Kind, ctx: &Ctx<'_>) -> Reduction {
    let n_lines = if lines.last().is_some_and(|l| l.is_empty()) {
        lines.len() - 1
    } else {
        lines.len()
    };
    let lines = &lines[..n_lines];
    // The saved file's size when known (the cleaned text can be shorter), else the text's.
    let bytes: usize = if ctx.bytes > 0 {
        ctx.bytes
    } else {
        lines
            .iter()
            .map(|l| l.len() + 1)
            .sum::<usize>()
            .saturating_sub(1)
    };
    let mut sevs: Vec<Severity> = lines.iter().map(|l| line_severity(l)).collect();
    // The findings a tally of errors counts are its errors (`msgfmt: found 1 fatal error`).
    for i in signal::counted_by_tally(lines, &sevs) {
        sevs[i] = Severity::Error;
    }
    // Help text and a catalogue's strings describe; their error words report nothing.
    let numbered: Vec<(usize, &str)> = (0..lines.len())
        .filter(|&i| !lines[i].trim().is_empty())
        .map(|i| (i + 1, lines[i]))
        .collect();
    for k in signal::described(&numbered) {
        sevs[numbered[k].0 - 1] = Severity::None;
    }
    let (templates, of_line) = mine(lines, &sevs);
    let clipped: Vec<&str> = lines.iter().map(|l| super::clip_str(l, 600)).collect();
    let scores = normalise(&bm25_discriminating(ctx.query, &clipped));
    let nonblank: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].trim().is_empty())
        .collect();
    let mut items = Vec::new();
    let mut seq = 0;
    let mut fact = |items: &mut Vec<Item>, text: String, prio: f64| {
        seq += 1;
        items.push(Item::fact(seq, text, prio));
    };

    let err_t: Vec<&Template> = templates
        .iter()
        .filter(|t| t.sev == Severity::Error)
        .collect();
    let warn_t: Vec<&Template> = templates
        .iter()
        .filter(|t| t.sev == Severity::Warn)
        .collect();
    let err_lines: usize = err_t.iter().map(|t| t.lines.len()).sum();
    let warn_lines: usize = warn_t.iter().map(|t| t.lines.len()).sum();
    fact(
        &mut items,
        format!(
            "kind: {}; {} line{}, {} bytes",
            kind.name(),
            fmt_num(n_lines),
            if n_lines == 1 { "" } else { "s" },
            fmt_num(bytes)
        ),
        MUST,
    );
    // With neither, the Status says so ("no error or warning lines found").
    if err_lines + warn_lines > 0 {
        fact(
            &mut items,
            severity_counts(err_lines, err_t.len(), warn_lines, warn_t.len(), n_lines),
            MUST,
        );
    }
    if let Some(code) = ctx.exit_code {
        fact(
            &mut items,
            format!("exit code (from the tool arguments): {code}"),
            MUST,
        );
    }

    // Totals lines: the last of each template, newest first.
    let mut totals_seen: HashMap<Option<usize>, usize> = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        if signal::is_totals(l) {
            totals_seen.insert(of_line[i], i);
        }
    }
    let mut totals: Vec<usize> = totals_seen.into_values().collect();
    totals.sort_unstable();
    let mut failed_by_totals = false;
    for (k, &i) in totals.iter().rev().take(3).enumerate() {
        failed_by_totals |= totals_failed(lines[i]);
        items.push(Item {
            section: Section::KeyFacts,
            order: 1000 + i,
            line: Some(i + 1),
            text: format!("totals: {}", show_line(lines[i].trim())),
            prio: MUST / 10.0 - k as f64,
        });
    }
    // Exit codes reported in the text: the last one, unless it reports a success and the
    // output ends on an error after it (meson's `-- returncode: 0` of a compiler check at
    // L100, and its last line `meson.build:67:6: ERROR: Dependency "libsodium" not found`):
    // that one is a step's status, not the output's.
    let mut last_exit = None;
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = signal::exit_code(l) {
            last_exit = Some((i, c));
        }
    }
    let ends_on_error = nonblank
        .iter()
        .rev()
        .take(FINAL_LINES)
        .any(|&i| sevs[i] == Severity::Error);
    if last_exit.is_some_and(|(i, c)| c == 0 && ends_on_error && nonblank.last() > Some(&i)) {
        last_exit = None;
    }
    if let Some((i, _)) = last_exit {
        items.push(Item {
            section: Section::KeyFacts,
            order: 2000 + i,
            line: Some(i + 1),
            text: format!("exit status line: {}", show_line(lines[i].trim())),
            prio: MUST / 10.0,
        });
    }
    // Counts per template are mined for every kind (signals::facts).
    // A linter's findings by rule, most first.
    let flagged: Vec<usize> = (0..lines.len())
        .filter(|&i| sevs[i] != Severity::None)
        .collect();
    // Below the errors' examples (90): at the top of the facts it cost a holdout fact (dev +1,
    // holdout -1); here it costs none.
    if let Some(f) = rules::by_rule(lines, &flagged) {
        fact(&mut items, f, 90.0);
    }
    // A massif report's peak: its snapshot, row and allocating frames.
    items.extend(massif::peak(lines));
    // An assembly listing's functions and calls: what its instruction lines add up to.
    if let Some((defined, calls)) = assembly::outline(lines) {
        fact(&mut items, defined, 90.0);
        if let Some(c) = calls {
            fact(&mut items, c, 80.0);
        }
    }

    let example_of = |t: &Template| -> usize {
        // A clearly better intent match; otherwise the first occurrence.
        let mut best = t.lines[0];
        for &ln in &t.lines {
            if scores[ln - 1] > scores[best - 1] + 0.15 {
                best = ln;
            }
        }
        best
    };
    let examples: Vec<usize> = templates.iter().map(example_of).collect();
    let severe_examples: std::collections::HashSet<usize> = templates
        .iter()
        .zip(&examples)
        .filter(|(t, _)| t.sev != Severity::None)
        .map(|(_, &e)| e - 1)
        .collect();
    let is_example = |j: usize| severe_examples.contains(&j);
    let n = n_lines.max(1) as f64;
    let many_errors = err_t.len() > 12;
    for (t, &ex) in templates.iter().zip(&examples) {
        let count = t.lines.len();
        // The other end of the run from the line shown: a line that is the last of its
        // template points at the first, not at itself.
        let prefix = if count > 1 && ex == t.lines[count - 1] {
            format!("[×{count} lines like it, first L{}] ", t.lines[0])
        } else if count > 1 {
            format!("[×{count} lines like it, last L{}] ", t.lines[count - 1])
        } else {
            String::new()
        };
        let text = format!("{prefix}{}", show_line(lines[ex - 1]));
        let rarity = if count <= 2 { 4.0 } else { 0.0 };
        let recency = ex as f64 / n;
        match t.sev {
            Severity::Error | Severity::Warn => {
                let base = if t.sev == Severity::Error {
                    100.0
                } else {
                    60.0
                };
                // Many error templates (a CI log): favour the last ones, where builds fail.
                let pos = if many_errors {
                    15.0 * recency
                } else {
                    5.0 * recency
                };
                let prio = base + 25.0 * scores[ex - 1] + pos + rarity;
                items.push(Item::line(Section::Errors, ex, text, prio));
                let ctx_lines = context_after(lines, ex - 1, &is_example);
                for (k, j) in ctx_lines.into_iter().enumerate() {
                    let sec = Section::Errors;
                    items.push(Item::line(
                        sec,
                        j + 1,
                        show_line(lines[j]),
                        prio - 2.0 - k as f64,
                    ));
                }
                // An HTTP error status: the request it answers says which call failed.
                if let Some(j) = request::request_of(lines, ex - 1) {
                    items.push(Item::line(
                        Section::Errors,
                        j + 1,
                        show_line(lines[j]),
                        prio - 1.5,
                    ));
                }
                // Errors said the same way each time: what each is about opens its paragraph.
                if t.sev == Severity::Error {
                    for (k, j) in subjects::subjects(lines, &t.lines).into_iter().enumerate() {
                        let p = prio - 2.5 - k as f64 * 0.1;
                        items.push(Item::line(Section::Errors, j + 1, show_line(lines[j]), p));
                    }
                }
                if t.sev == Severity::Error && !many_errors {
                    for (k, j) in (ex.saturating_sub(4)..ex - 1).rev().enumerate() {
                        if !lines[j].trim().is_empty() {
                            // The line just before, from the same source (`mei_me
                            // 0000:00:16.0: Device doesn't have valid ME Interface` before
                            // its `initialization failed.`), says why: it goes with the error.
                            let (sec, p) = if k == 0 && same_source(lines[j], lines[ex - 1]) {
                                (Section::Errors, prio - 3.0)
                            } else {
                                (Section::Evidence, prio / 4.0 + 10.0 * scores[j] - k as f64)
                            };
                            items.push(Item::line(sec, j + 1, show_line(lines[j]), p));
                        }
                    }
                }
            }
            Severity::None => {
                let prio = 10.0 + 40.0 * scores[ex - 1] + rarity;
                items.push(Item::line(Section::Evidence, ex, text, prio));
            }
        }
    }
    // Each failing test's header line with its exception and first project/test frames.
    let never = |_: usize| false;
    let heads: Vec<usize> = (0..lines.len())
        .filter(|&i| signal::is_test_failure(lines[i]))
        .collect();
    for (k, &i) in heads.iter().take(10).enumerate() {
        let prio = 150.0 - k as f64;
        items.push(Item::line(
            Section::Errors,
            i + 1,
            show_line(lines[i]),
            prio,
        ));
        for (m, j) in context_after(lines, i, &never).into_iter().enumerate() {
            let p = prio - 1.0 - m as f64 * 0.5;
            items.push(Item::line(Section::Errors, j + 1, show_line(lines[j]), p));
        }
    }
    // Lines that match the intent well but are not their template's example.
    let mut ranked: Vec<usize> = (0..lines.len()).filter(|&i| scores[i] > 0.3).collect();
    ranked.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    // Not all forty of one template: twenty `<name>ge-0/0/N</name>` lines that match equally
    // say less than some of them and the other matches.
    let mut per_template: HashMap<Option<usize>, usize> = HashMap::new();
    ranked.retain(|&i| {
        let n = per_template.entry(of_line[i]).or_default();
        *n += 1;
        of_line[i].is_none() || *n <= MATCHES_PER_TEMPLATE
    });
    for &i in ranked.iter().take(40) {
        let sec = if sevs[i] == Severity::None {
            Section::Evidence
        } else {
            Section::Errors
        };
        items.push(Item::line(
            sec,
            i + 1,
            show_line(lines[i]),
            MATCH_PRIO_MIN + MATCH_PRIO_SPAN * scores[i],
        ));
    }
    // Plain lines that share the errors' terms: the setting or the earlier step an error
    // refers to ("pool configured: maxSize=10" for "max pool size of 10 reached").
    for (k, (i, s)) in related_to_errors(lines, &sevs, &err_t, &examples, &templates)
        .into_iter()
        .enumerate()
    {
        items.push(Item::line(
            Section::Evidence,
            i + 1,
            show_line(lines[i]),
            45.0 + 20.0 * s - k as f64,
        ));
    }
    // Head and tail lines.
    if let Some(&first) = nonblank.first() {
        items.push(Item::line(
            Section::Evidence,
            first + 1,
            show_line(lines[first]),
            40.0,
        ));
    }
    for (k, &i) in nonblank.iter().rev().take(3).enumerate() {
        items.push(Item::line(
            Section::Evidence,
            i + 1,
            show_line(lines[i]),
            50.0 - 5.0 * k as f64,
        ));
    }

    let failed = match ctx.exit_code {
        Some(c) => Some(c != 0),
        None if failed_by_totals || final_failure(lines, &nonblank).is_some() => Some(true),
        None if !totals.is_empty() => Some(false),
        None => match last_exit {
            Some((_, c)) => Some(c != 0),
            None if matches!(kind, Kind::TestReport | Kind::StackTrace) && err_lines > 0 => {
                Some(true)
            }
            None => None,
        },
    };
    let what = match kind {
        Kind::Log => "Log",
        Kind::TestReport => "Test report",
        Kind::StackTrace => "Stack trace",
        Kind::Html => "HTML page",
        _ => "Output",
    };
    let mut status = match failed {
        Some(true) => match ctx.exit_code {
            Some(c) => format!("Command failed (exit code {c}): "),
            None => "Failed: ".to_string(),
        },
        Some(false) => match ctx.exit_code {
            Some(c) => format!("Command completed (exit code {c}): "),
            None => "Completed: ".to_string(),
        },
        None => String::new(),
    };
    status.push_str(&format!(
        "{what} of {} line{}",
        fmt_num(n_lines),
        if n_lines == 1 { "" } else { "s" }
    ));
    if let Some(&i) = totals.last() {
        // Not in backticks: the line is shown cleaned (ANSI escapes removed), which is not
        // always a verbatim quote of the saved bytes; the anchor leads to it.
        status.push_str(&format!(
            ", totals line L{}: {}",
            i + 1,
            super::show_line_max(lines[i].trim(), 120).trim_end_matches(['.', ';'])
        ));
    }
    if err_lines + warn_lines == 0 {
        status.push_str("; no error or warning lines found.");
    } else {
        status.push_str(&format!(
            "; {}.",
            severity_counts(err_lines, err_t.len(), warn_lines, warn_t.len(), n_lines)
        ));
    }
    let last_err = (0..lines.len()).rev().find(|&i| sevs[i] == Severity::Error);
    let next_action = match last_err {
        // A line of megabytes is no place to read: its words are (`grep -o`).
        // No figure for its length: a number the output does not write reads as invented.
        Some(i) if lines[i].len() >= GIANT_LINE_BYTES => format!(
            "L{} of the saved file is too long to read whole: grep -o it for the words of the error quoted above (with some text around them).",
            i + 1
        ),
        Some(i) => format!(
            "Read L{}-L{} of the saved file (around the last error line).",
            i.saturating_sub(5) + 1,
            (i + 20).min(n_lines)
        ),
        None => match ranked.first() {
            Some(&i) => format!(
                "Read L{}-L{} of the saved file (best match for the intent).",
                i.saturating_sub(5) + 1,
                (i + 20).min(n_lines)
            ),
            None => format!(
                "Read the last lines (L{}-L{}) of the saved file, or search it for what you need.",
                n_lines.saturating_sub(20).max(1),
                n_lines
            ),
        },
    };
    Reduction {
        kind,
        items,
        status,
        failed,
        next_action,
    }
}

mod assembly;
mod massif;
mod rules;
mod templates;
pub use templates::{labels_clash, mine, Template};
mod request;
mod subjects;
#[cfg(test)]
mod tests;
