//! Line signals shared by every reducer: severity (error / warning), test totals, stack frames,
//! exit codes. Cheap regexes, compiled once.

use regex::Regex;
use std::sync::LazyLock;

mod described;
mod quiet;
mod tally;
pub use described::described;
pub use tally::{counted_by_tally, tally};

/// How bad a line says things are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Nothing notable.
    None,
    /// A warning.
    Warn,
    /// An error, failure, exception or fatal condition.
    Error,
}

static LEVEL_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(ERROR|FATAL|CRITICAL|SEVERE|PANIC|EMERG|ALERT|FAIL|FAILED|FAILURE|Error|Fatal|Exception|Traceback)\b|\[(error|crit|alert|emerg)\]|level=(error|fatal|critical)|##\[error\]").unwrap()
});
/// A class of error or exception (`ValueError`, `java.io.IOException`): a word that starts with
/// a capital; `processCompositionError`, `onError` are methods named for one.
static NAMED_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[A-Z][A-Za-z]*(Exception|Error)\b").unwrap());
/// An exception or error class as thrown: with its message after a colon, or ending the line
/// (`java.io.IOException: Broken pipe`, `caught TimeoutError`). In a record a DEBUG or TRACE
/// level opens, a class named anywhere else is a name (Maven's `[DEBUG]  Imported:
/// org.codehaus.plexus.util.xml.pull.XmlPullParserException < plexus.core`).
static THROWN_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[A-Z][A-Za-z]*(?:Exception|Error)(?::(?:\s|$)|\s*$)").unwrap());
/// make's own error (`make: *** No rule to make target 'src/a.c', needed by 'a.o'.  Stop.`,
/// `make[2]: *** [Makefile:12: a.o] Error 1`): the run failed, whatever words follow.
static MAKE_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^g?make(?:\[\d+\])?: \*\*\* ").unwrap());
/// A finding at a source location with no level word (`go vet`'s `pkg/a.go:19:9: fmt.Sprintf
/// format %d has arg name of wrong type string`, `go build`'s `./main.go:12:5: undefined: x`):
/// a path with an extension, a line and a column, then a message. A warning at least: the
/// tool found something there.
static LOCATED_FINDING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:\./)?[\w./+-]*\.[A-Za-z]{1,6}:\d+:\d+: [A-Za-z(]").unwrap());
static WORD_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(errors?|exceptions?|fatal|failed|failures?|fails|panic(ked)?|traceback|refused|denied|unreachable|timed out|cannot|can't|couldn't|unable to|no space left|oomkilled|crashloopbackoff|imagepullbackoff|errimagepull|segmentation fault|segfault|sig(segv|abrt|bus|ill|fpe)|access violation|exc_bad_access|crashed|crash reason|problematic frame|core dumped|aborted|abort|rejected|not-found|not found|unauthorized|forbidden|assert(ion)?error|no such file|undefined reference|undefined symbols?|multiple definition of|unresolved external symbol)\b|exit(ed)? (with )?(status|code) [1-9]|exit status [1-9]|status:? [45]\d\d\b|HTTP/\d\.\d\" [45]\d\d\b|<<< (FAILURE|ERROR)|✗|✖|^E   "#).unwrap()
});
/// A package-qualified class name (`java.lang.Exception`, `org.x.FooError`).
static DOTTED_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*\.(?:[A-Z]\w*)?(?:Exception|Error)\b")
        .unwrap()
});
static ZERO_COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(errors?|fail(?:ures?|ed|s)?|fatal)(\s+[a-z]+){0,3}\s*[=:]\s*0\b|\b0\s+([a-z]+\s+){0,2}(errors?|failures?|failed|faults?|drops?|dropped|discards?)\b|\bno\s+([a-z]+\s+)?errors?\b|\bwithout errors?\b|\b(errors?|failures?|faults?)\s+\(?0\)?(\s|$|,)").unwrap()
});
/// An error that is a measured quantity: an error word given a decimal number (`SIGMA
/// SKELETON, ERROR=  -60.2361801476`, `val_error=1.2e-3`, `val error: 0.08`; a line's leading
/// `ERROR: 0.5 ...` is a level), or named by the statistic it is
/// (`THE ROOT MEAN SQUARE ERROR IN ITERATION 1 IS 0.0`, `relative error`, `standard error`): a
/// figure of the run (a numerical method's residual, a model's error rate), not a failure.
/// Whole numbers are left alone (`errors: 3` counts failures).
static MEASURED_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?:(?:\b|_)err(?:or)?s?\s*=|\w[ _]err(?:or)?s?\s*:)\s*[-+]?",
        r"(?:\d+\.\d*|\.\d+|\d+(?:\.\d+)?[eE][-+]?\d+)(?:$|[\s,;)])",
        r"|\b(?:rms|root[- ]mean[- ]squared?|mean[- ]squared?|mean[- ]absolute|mean|relative|absolute",
        r"|numerical|residual|truncation|round-?off|rounding|approximation|reconstruction",
        r"|quantization|standard|prediction|estimation)\s+errors?\b"
    ))
    .unwrap()
});
/// A comma-separated run of four or more bare words (`off, trace, debug, info, warning,
/// error` of `jcmd VM.info`'s `Available log levels:`, its log tags): a list of names the
/// tool knows, not an event (trial of session 54). The run fills the line or its part after a
/// `: `; a word with a digit or a space of its own (`2 errors, 1 warning`) is no bare word,
/// and a call's arguments (`from(e, ERR_BAD_RESPONSE, this, null)`) are no list.
static WORD_LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^\s*|:\s+)[A-Za-z][\w-]*(?:, [A-Za-z][\w-]*){3,}\.?\s*$").unwrap()
});
/// True when `line` holds `rr` in any case: every [`MEASURED_ERROR`] does, so most lines skip
/// the regex.
fn has_rr(line: &str) -> bool {
    line.as_bytes()
        .windows(2)
        .any(|w| w[0].eq_ignore_ascii_case(&b'r') && w[1].eq_ignore_ascii_case(&b'r'))
}
/// `Error` inside a name written in title case: between two capitalised words (`Limited Error
/// Raster Compression library`, `Link Error Dampening`) or before two or more (`Error Reporting
/// Service`, `Error Record Serialization Table`): a package, service, feature or table named
/// for errors, not one that happened. `Internal Server Error` ends on it and stays an error.
static TITLE_NAME_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z][a-z]+ Error [A-Z][a-z]+\b|\bError(?: [A-Z][a-z]+){2,}\b").unwrap()
});
/// An error word that qualifies the noun after it (`a fast memory error detector`, `Windows
/// error handling`, `error-prone`, `error types`, `leading IBM error codes`, `the error
/// paths`, PHP's `error control operator`): what a package, library, feature or change is
/// about, as its description says, not an error that happened. Plural nouns only (and
/// `control`): `error code 2` is one.
static DESCRIBED_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\berrors?[- ](?:detectors?|detection|handling|handlers?|reporting|reporters?|correction|correcting|checking|checkers?|recovery|prone|types|classes|librar(?:y|ies)|descriptions?|propagation|tracking|trackers?|management|formatting|chains|codes|messages|paths|cases|conditions|callbacks|control)\b").unwrap()
});
static WARN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(WARN|WARNING|Warning|DEPRECATED)\b|[A-Z][a-z]+Warning\b|(?i)\[warn(ing)?\]|level=warn|\bwarning:|##\[warning\]|\bdeprecated\b").unwrap()
});
/// A signal named as an argument of a call that sets up its handling (strace's
/// `rt_sigaction(SIGILL, NULL, {…}, 8) = 0`, `signal(SIGSEGV, handler)`, `sigaddset(&s,
/// SIGBUS)`), or a handler's table row (`jcmd VM.info`'s `SIGSEGV: javaSignalHandler in
/// libjvm.so, mask=…`, a `SIG_DFL`/`SIG_IGN` disposition; trial of session 54): the program
/// arranging for a signal, not receiving one.
static SIGNAL_SETUP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:rt_)?sig(?:action|nal|procmask|addset|delset|ismember|wait|suspend)\([^)]*?\bSIG[A-Z]+|^\s*SIG[A-Z0-9]+: (?:SIG_DFL|SIG_IGN|\w*[Hh]andler\b)").unwrap()
});
/// A line that labels itself a warning (`Package auxhook Warning: Cannot patch`, `l.54 ---
/// TeX4ht warning --- File … not found ---`, `x.c:3:1: warning: cannot …`, `[warning]`,
/// `UserWarning`): what it reports (`cannot`, `not found`) is the warning's text, not an
/// error of its own.
static WARN_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bwarning\s*(?::|---|!)|\[warn(?:ing)?\]|^\s*warn(?:ing)?\b|(?-i:[A-Z][a-z]+Warning\b)").unwrap()
});
/// A line that labels itself an error (`error:`, `ERROR`, `[fatal]`, `Build failed:`): a warning
/// label on it does not make it a warning.
static ERROR_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:error|fatal|failure|failed)\s*(?::|---|!)|[\[<](?:error|fatal|err|crit)[\]>]|(?-i:\b(?:ERROR|FATAL|CRITICAL)\b)").unwrap()
});
static TOTALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\btests? run:\s*\d+|(?:^|[\s,;(\[])\d+ (passed|failed)(?:$|[^:\w])|^\s*tests?:\s+\d|\btest result:|\bran \d+ tests?\b|\bbuild (success|failure|failed|successful)\b|\b\d+ examples?, \d+ failures?|\btest suites?:\s+\d|^(ok|fail|failed)\s*(\(|\t)|\b\d+ (tests?|specs?) (completed|passed|failed)|^\s*totals?\s*[:=|]?\s*\d|^\s*total (?:tests?|test (?:cases|files|suites)|specs|examples|checks)\s*:\s*\S*\d").unwrap()
});
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*(at\s+\S|\.\.\. \d+ more|File "[^"]+", line \d+|#\d+\s+0x[0-9a-f]+|\d+: 0x[0-9a-f]+)"#).unwrap()
});
static FRAMEWORK_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bat\s+(java\.|javax\.|jdk\.|sun\.|org\.junit|junit\.|org\.opentest4j|org\.testng|org\.apache\.maven|kotlin\.|scala\.|reactor\.|io\.netty|org\.springframework|node:|process\.|new Promise|Promise\.|<anonymous>\)?$)|node_modules|/usr/lib/python|site-packages|\(native\)|\(internal/").unwrap()
});
static CAUSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(Caused by:|Suppressed:|During handling of the above exception|The above exception was the direct cause)").unwrap()
});
static LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    // Upper case anywhere near the start; lower or mixed case only as a tag (`[info]`,
    // `<warn>`), or as a line's first word before a colon (`error: ...`). A plain lower-case
    // word ("due to holdtimer expired error") is prose, judged by the word vocabulary. A
    // compiler's `note:`, `help:` and `= help:` lines advise on the diagnostic above them
    // (`= help: if this value is `None`, it will panic`): informational, as `info:` is. Past
    // a log line's prefix (after a tab or a closing `)`, `]` or `>`), only a quiet level reads
    // as one (`(corosync_node_name) \tinfo: Unable to get node name`): `error: 0` there is a
    // count, left to the vocabulary, and in prose (`see the note: it failed`) no level is.
    // There a quiet level may be capitalised (rkhunter's `[11:58:00] Info: Unable to find the
    // 'lsmod' command`; live set of session 52).
    Regex::new(r"(?:^|[\s\[|])(INFO|DEBUG|TRACE|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL|SEVERE|ERR|CRIT|EMERG|ALERT)(?:$|[\s\]:|!])|(?i)[\[<](info|debug|trace|notice|warn|warning|error|fatal|critical|severe|err|crit|emerg|alert)[\]>]|^\s*(?:=\s*)?(info|debug|trace|notice|warn|warning|error|fatal|critical|severe|note|help|hint)\s*:|(?-i:(?:[)\]>]\s*|\t)(info|debug|trace|notice|note|Info|Debug|Trace|Notice)\s*:\s)").unwrap()
});
/// A passing or skipped test's result line (DejaGnu `PASS:`, jtreg `Passed:`, `XFAIL:`, TAP
/// `ok 12`, pytest `PASSED` / `SKIPPED`, unittest's `test x ... ok`, `... skipped 'stty
/// invocation failed'`, `... expected failure`, `✓`, graphql-inspector's `[log] ✔  Type
/// DependabotUpdateError was added`, automake's `SKIP: t.sh` and its scripts' `t.sh: skipped
/// test: ja_JP locale not found`, live set of session 54): its name or reason may say
/// "error", "failed" or "not found" (`PASS: plugin error`); the test did not fail.
static PASSED_VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:PASS(?:ED)?:?\s|Passed:\s|XFAIL:\s|SKIP:\s|ok\s+\d+\b|(?:\[\w+\]\s+)?[✓✔]\s|--- (?:PASS|SKIP):\s)|\sPASSED(?:\s|$)|\s\.\.\.\s+ok$|\s\.\.\.\s+(?:skipped\b|expected failure$)|\sSKIPPED(?:\s|$)|^[\w./-]+: skipped test: ",
    )
    .unwrap()
});
static STRONG_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\bstatus:? [45]\d\d\b|HTTP/\d\.\d" [45]\d\d\b|(?i:\bexception\b)|\bTraceback\b|(?i:no space left)"#).unwrap()
});
static TEST_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)[\w/.$-]*(test|spec)[\w.$-]*\.\w+:\d+").unwrap());
static TEST_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<<< (FAILURE|ERROR)!|^\s*--- FAIL:|^FAILED\s|^\s*✕|^\s*● |^\s*FAIL\s+\S|^test \S+ \.\.\. FAILED$|^_{3,} \S+ _{3,}$").unwrap()
});
static EXIT_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(exit(ed)?( with)? (status|code)|exit status|return ?code|returncode|exit_code|exitcode)[\s:=]*(-?\d+)").unwrap()
});

/// True when `re` (the plain-word error vocabulary) matches `line` as a word of its own: not inside a name joined by `-`, `.`,
/// `/` or `_` (a package `command-not-found`, a file `error_log.c`, a module `is-error`), and
/// not as the object of a mending verb ([`mended`]: `fixed capital error`).
fn word_match(re: &Regex, line: &str) -> bool {
    let b = line.as_bytes();
    let glue = |c: u8| c == b'-' || c == b'_' || c == b'/' || c.is_ascii_alphanumeric();
    // A `.` joins only when a name goes on after it (`error.log`), not at a sentence's end.
    let joined_after = |i: usize| {
        b.get(i).is_some_and(|&c| {
            glue(c)
                || (c == b'.' && b.get(i + 1).is_some_and(|n| n.is_ascii_alphanumeric()))
                || b[i..].starts_with(b"::")
        })
    };
    // A sigil makes a variable of the word (Perl's and PHP's `$error`, `@errors`, C's
    // `&error`): a name, as `error_count` is.
    let joined_before = |i: usize| {
        i > 0
            && (glue(b[i - 1])
                || matches!(b[i - 1], b'.' | b'$' | b'@' | b'&')
                || (i > 1 && &b[i - 2..i] == b"::"))
    };
    re.find_iter(line).any(|m| {
        let text = m.as_str().as_bytes();
        // A match that starts or ends on a symbol of its own (`<<< FAILURE`, `✗`) is judged
        // by the regex alone on that side.
        let starts_word = text.first().is_some_and(|c| c.is_ascii_alphanumeric());
        let ends_word = text.last().is_some_and(|c| c.is_ascii_alphanumeric());
        (!starts_word || !joined_before(m.start()))
            && (!ends_word || !joined_after(m.end()))
            && !mended(&line[..m.start()])
            && !expected(&line[..m.start()])
    })
}

/// Words that say what a test expects of the code: `should`, `must`, `shall`.
const EXPECTING: &[&str] = &["should", "must", "shall"];
/// Verbs of code handing an error on (`raise`, `throws`, `return`).
const RAISING: &[&str] = &[
    "raise", "raises", "throw", "throws", "return", "returns", "emit", "emits",
];
/// Words that may stand between a raising verb and the error word it hands on.
const BETWEEN: &[&str] = &["a", "an", "the", "not", "no", "any"];

/// True when the error word after `before` is what a test expects of the code, as a spec's
/// example is named (`should raise an error`, `should not raise error when frozen`, `must
/// fail`), or the example named by its verb alone (rspec's documentation format: `raises an
/// exception`; trial of session 53): behaviour described, not an error that happened. Only
/// raising verbs and [`BETWEEN`]'s words may stand between `should` and the error word, within
/// [`MENDING_REACH`] + 1 words; a raising verb alone must open the line (`process raises an
/// exception` is an event).
fn expected(before: &str) -> bool {
    let words: Vec<String> = before
        .split_whitespace()
        .rev()
        .take(MENDING_REACH + 1)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_ascii_lowercase()
        })
        .collect();
    let linking = |w: &String| BETWEEN.contains(&w.as_str()) || RAISING.contains(&w.as_str());
    if let Some(k) = words.iter().position(|w| EXPECTING.contains(&w.as_str())) {
        return words[..k].iter().all(linking);
    }
    // The whole text before the word is a raising verb and its links.
    let all = before.split_whitespace().count();
    all == words.len()
        && words
            .last()
            .is_some_and(|w| RAISING.contains(&w.as_str()) && w.ends_with('s'))
        && words.iter().all(linking)
}

/// Verbs that make the error word after them the object of a change (`Fixed capital error
/// when handling the submodule's branch`, `handle timeouts and errors`): a commit message or
/// changelog entry describes a mended or handled error, not one that happened.
const MENDING: &[&str] = &[
    "fix",
    "fixed",
    "fixes",
    "fixing",
    "resolve",
    "resolved",
    "resolves",
    "handle",
    "handled",
    "handles",
    "handling",
    "avoid",
    "avoids",
    "prevent",
    "prevents",
    "suppress",
    "silence",
    "solve",
    "solves",
    "solved",
    "correct",
    "corrects",
    "corrected",
    "repair",
    "repairs",
    "repaired",
];

/// Words of a mending verb's object looked back over, the verb included (`fixed a rare
/// race` is three).
const MENDING_REACH: usize = 3;

/// True when one of the last [`MENDING_REACH`] words of `before` (the text ahead of an error
/// word) is one of [`MENDING`].
fn mended(before: &str) -> bool {
    before
        .split_whitespace()
        .rev()
        .take(MENDING_REACH)
        .any(|w| {
            let w = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_ascii_lowercase();
            MENDING.contains(&w.as_str())
        })
}

/// A line led by an address or a hash (`0x00007ff720940810 (+0x00008810)  runtime stub
/// delayed StackOverflowError throw_exception` in `jcmd Compiler.CodeHeap_Analytics`, an `nm`
/// symbol, `git log --oneline`'s `1a2b3c4d Catch ValueError in the parser`): a listing of
/// code or changes, whose class names are symbols unless thrown ([`THROWN_ERROR`]; trial of
/// session 51). An address has `0x` or 12-16 hex digits, a hash 7-11 with a letter among
/// them: a date (`20261207 NullPointerException in handler`) leads no listing.
static ADDRESSED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(0x)?([0-9a-fA-F]{7,16})\b").unwrap());

/// True when `line` is led by an address or a hash ([`ADDRESSED`]).
fn addressed(line: &str) -> bool {
    ADDRESSED.captures(line).is_some_and(|c| {
        let hex = &c[2];
        c.get(1).is_some()
            || hex.len() >= 12
            || hex.len() >= 7 && hex.bytes().any(|b| b.is_ascii_alphabetic())
    })
}

/// A line that opens with a source location (`Foo/LoaderLoadException.php:44  ElseExpression
/// …`, `a.py:12:`): a finding about that code, whose class names (`Avoid excessively long class
/// names like FileLoaderImportCircularReferenceException.`, phpmd; trial of session 52) are
/// the code's, unless thrown (`tests/test_a.py:42: AssertionError`).
static LOCATED_AT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\./)?[\w./+-]*\.[A-Za-z]{1,6}:\d+(?:[:,]\d+)?[:\s]").unwrap()
});

/// True when the line names a class of error (`ValueError: bad`, `java.io.IOException`), not
/// a file or path that has such a name (`CheckError.java`, `java/lang/AssertionError/Cause.java`):
/// a match after `/` or before `/` or `.` and a letter or digit is part of a path.
fn named_error(line: &str) -> bool {
    outside_paths(&NAMED_ERROR, line)
}

/// [`named_error`] in a line no level opens: a package-qualified class ([`DOTTED_CLASS`]) that
/// is not thrown ([`THROWN_ERROR`]) is a name there, as at the info levels (PyInstaller's
/// `missing module named multiprocessing.TimeoutError - imported by …`, trial of session 47);
/// `requests.exceptions.HTTPError: 404` and a bare `ValueError` stay errors.
fn unleveled_named_error(line: &str) -> bool {
    // The class search runs only on the few lines that name an error class at all.
    named_error(line)
        && (!addressed(line) && !LOCATED_AT.is_match(line) || outside_paths(&THROWN_ERROR, line))
        && (!DOTTED_CLASS.is_match(line)
            || outside_names(&NAMED_ERROR, line)
            || outside_paths(&THROWN_ERROR, line))
}

/// True when the line holds a level word or tag ([`LEVEL_ERROR`]) that is not a file or path
/// component: `…/Test2/Event/Exception.pm`, `lib/Fatal.pm`, `ERROR.log` name files (a `find`
/// listing), as `CheckError.java` does for [`named_error`].
fn level_error(line: &str) -> bool {
    outside_paths(&LEVEL_ERROR, line)
}

/// True when `re` matches `line` somewhere that is not part of a path: not after `/`, not
/// before `/`, `::` or `.` and a letter or digit (`a/Fatal.pm`, `CheckError.java`,
/// `InternalError::<init>`).
fn outside_paths(re: &Regex, line: &str) -> bool {
    outside(re, line, b"/")
}

/// [`outside_paths`], with `before`: the bytes a match may not follow.
fn outside(re: &Regex, line: &str, before: &[u8]) -> bool {
    let b = line.as_bytes();
    re.find_iter(line).any(|m| {
        let before = m.start() > 0 && before.contains(&b[m.start() - 1]);
        let after = match b.get(m.end()) {
            // A member of it (`java.lang.InternalError::<init>`, a JIT log's method), or a
            // class nested in it (`Resolve$InapplicableSymbolsError$1.class` in `jimage
            // list`; trial of session 53).
            Some(b'/' | b'$') => true,
            Some(b':') => b.get(m.end() + 1) == Some(&b':'),
            Some(b'.') => b
                .get(m.end() + 1)
                .is_some_and(|c| c.is_ascii_alphanumeric()),
            _ => false,
        };
        !before && !after
    })
}

/// True when `re` matches `line` somewhere that is no part of a dotted or slashed name: not
/// after `.` or `/` (`org.apache.maven.exception`, a package), else as [`outside_paths`].
fn outside_names(re: &Regex, line: &str) -> bool {
    outside(re, line, b"/.")
}

/// A line of a source file quoted by a tool that lists files' lines: `grep -n`'s
/// `./subprocess.py:168:    cmd, output, stdout, stderr, timeout`, `git blame`'s `c8cd1d62 (Ann
/// 2026-12-01 21:24:06 +0000 129) …`, `python -m trace`'s `enum.py(1104):  except KeyError:`.
/// Its words are the file's, not the tool's: `except KeyError:` raised nothing. A compiler's or
/// linter's diagnostic names a column or a level after the line (`app.py:12:5: E0601`,
/// `app.py:12: error: …`) and is not one.
static QUOTED_SOURCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:\./)?[\w./+-]*\.(?:py|pyi|rs|js|mjs|cjs|ts|tsx|jsx|go|java|kt|scala|c|h|cc|cpp|hpp",
        r"|cs|rb|php|pl|pm|sh|bash|lua|swift|m|mm|sql|yaml|yml|toml|json|md|rst|html|css|scss|vue",
        r"|ex|exs|erl|hs|ml|clj|r|jl|dart|gradle|cmake|mk|in|cfg|ini|conf)[:-]\d+[:-](?:\s*$|[^\d\s]",
        r"|\t|  )",
        r"|^\^?[0-9a-f]{7,40} (?:\S+ +)?\([^)]*\d{4}-\d{2}-\d{2}[^)]*? \d+\) ",
        r"|^[\w.-]+\.py\(\d+\): "
    ))
    .unwrap()
});
/// A compiler's or linter's word right after a `path:line:` location: a diagnostic, not a
/// quoted line.
static DIAGNOSTIC_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[^:]+:\d+:\s*(?:(?i:fatal error|error|warning|warn|note|info|hint|remark|critical|severe|deprecat\w*)\b|\((?i:error|warning|severe|info)\b|[A-Z]{1,3}\d{3,4}\b)").unwrap()
});

/// True for a source file's line quoted by `grep -n`, `git blame` or `python -m trace`
/// ([`QUOTED_SOURCE`]): what the file says, not what happened. Its error words are no error,
/// its numbers no exit code or totals.
pub fn quoted_source(line: &str) -> bool {
    QUOTED_SOURCE.is_match(line) && !DIAGNOSTIC_AFTER.is_match(line)
}

/// The severity of one line. Zero counts ("errors=0", "0 failed") are not errors.
pub fn severity(line: &str) -> Severity {
    if line.len() > 4000 {
        return severity(crate::guard::reduce::clip_str(line, 4000));
    }
    // A measured error is a figure, wherever it stands (an upper-case one reads as a level).
    if has_rr(line) && MEASURED_ERROR.is_match(line) {
        return severity(&MEASURED_ERROR.replace_all(line, " "));
    }
    // A list of four or more bare words (`Available log levels: off, trace, debug, info,
    // warning, error`) names a vocabulary; the rest of the line decides.
    if WORD_LIST.is_match(line) {
        return severity(&WORD_LIST.replace(line, ": …"));
    }
    // A nested class named for an error (`com.sun.tools.javac.util.JCDiagnostic$Error` in a
    // class histogram) is a name; the rest of the line decides.
    if NESTED_ERROR_CLASS.is_match(line) {
        return severity(&NESTED_ERROR_CLASS.replace_all(line, "$$C"));
    }
    // Bytes dumped (a hexdump's `0010: 65 72 72 6F …  error…` with its text column, an
    // Erlang crash dump's `7FACBCE54CB8:t2:A5:error,A7:running`) and a line of one lower-case
    // word (the crash dump's atom table: `sigsegv`, `abort`; LLVM's `unreachable`; trial and
    // live set of session 55) name data, no event. A warning word alone (`deprecated` of a
    // command's docs) stays a warning (as an error: holdout -1).
    if HEX_DUMP.is_match(line) || ONE_WORD.is_match(line) && !WARN.is_match(line) {
        return Severity::None;
    }
    // A heading of one name (`# errors`, the Go package `go build` names before its
    // diagnostics, trial of session 55; a document's `## Errors`) titles what follows.
    if ONE_NAME_HEADING.is_match(line) {
        return Severity::None;
    }
    // A linker's or call graph's edge between two dotted symbols (`runtime.gopanic ->
    // go.string."panic: "` of `go build -ldflags=-dumpdep`, trial of session 55) names code,
    // error words and all; what follows it decides (jdeps' `a.b -> c.d   not found`).
    if SYMBOL_EDGE.is_match(line) {
        return severity(&SYMBOL_EDGE.replace(line, "edge"));
    }
    // A setting named for an error (`bool HeapDumpOnOutOfMemoryError = false`, `ccstrlist
    // OnError =` of `java -XX:+PrintFlagsFinal`, live set of session 48) is a name given a
    // value; the rest of the line decides.
    if SETTING_NAMED_ERROR.is_match(line) {
        return severity(&SETTING_NAMED_ERROR.replace_all(line, "Setting$1$2"));
    }
    // A class named in parentheses (a profile's `file:line(FooError)`) is a reference to
    // code; a source line handling an error (`except KeyError:`) handles none.
    if PAREN_NAMED_ERROR.is_match(line) {
        return severity(&PAREN_NAMED_ERROR.replace_all(line, "$1(Name)"));
    }
    if ERROR_HANDLER_CODE.is_match(line) {
        return Severity::None;
    }
    // A traced system call's strings are the data it read or wrote (a source file's `//!
    // Failing records…`), not the tracer's words; what it returned decides (`= -1 ENOENT (No
    // such file or directory)`, `= -1 EINVAL (Invalid argument)`: a failed call, whatever its
    // message's words). A write to standard error is the program's own message.
    if let Some(c) = TRACED_CALL.captures(line) {
        // A call that would block (`EAGAIN`, a non-blocking `connect`'s `EINPROGRESS`) is
        // the usual flow of an event loop, not a failure.
        if c.get(4)
            .is_some_and(|e| !matches!(e.as_str(), "EAGAIN" | "EWOULDBLOCK" | "EINPROGRESS"))
            && &c[3] == "-1"
        {
            return Severity::Error;
        }
        let args = &c[2];
        if !(&c[1] == "write" && args.starts_with("2,")) {
            let data_out = TRACED_STRING.replace_all(line, "\"\"");
            if data_out != line {
                return severity(&data_out);
            }
        }
    }
    // A diagnostic renderer's marked line (miette's `  ! eslint(no-unused-vars): …` and
    // `  x …(rule): …`, `⚠`, `×`): the mark is its level, whatever words follow.
    if let Some(c) = MARKED_DIAGNOSTIC.captures(line) {
        return if c.get(1).is_some() {
            Severity::Warn
        } else {
            Severity::Error
        };
    }
    // A quoted name (`Parameter 'error' is declared`, `'UnicodeDecodeError' member requires
    // 3.0`) is a mention of a variable or class, not an error; a quoted value of a key
    // (`status: 'failed'`) still reads as one.
    if QUOTED_NAME.is_match(line) {
        let named = quoted_names_out(line);
        if named != line {
            return severity(&named);
        }
    }
    // So is a comment after code (`return 0;  /* unreachable */`).
    if INLINE_COMMENT.is_match(line) {
        return severity(&INLINE_COMMENT.replace_all(line, " "));
    }
    if MAKE_ERROR.is_match(line) {
        return Severity::Error;
    }
    if is_passed_verdict(line) || quoted_source(line) || quiet::quiet(line) {
        return Severity::None;
    }
    // A count of none and nothing else (automake's `# ERROR: 0`, `# FAIL:  0`) is no level.
    if ZERO_COUNT.is_match(line)
        && !ZERO_COUNT
            .replace_all(line, "")
            .chars()
            .any(char::is_alphanumeric)
    {
        return Severity::None;
    }
    // An explicit level near the start of a record decides, except for strong error signals
    // (HTTP 4xx/5xx, exceptions) inside INFO/DEBUG records.
    if let Some(c) = LEVEL.captures(crate::guard::reduce::clip_str(line, 120)) {
        let lv = (1..=4)
            .find_map(|k| c.get(k))
            .map_or(String::new(), |m| m.as_str().to_ascii_uppercase());
        return match lv.as_str() {
            "WARN" | "WARNING" => Severity::Warn,
            "INFO" | "DEBUG" | "TRACE" | "NOTICE" | "NOTE" | "HELP" | "HINT" => {
                // Debug output names classes and packages by the hundred (Maven's class
                // imports): there an error is a thrown one, or an error word of its own.
                // A class named as a dotted name and not thrown (`[info][class,load]
                // java.lang.Exception source: jrt:/java.base`, trial of session 46) is a
                // name at any of these levels.
                let named =
                    if matches!(lv.as_str(), "DEBUG" | "TRACE") || DOTTED_CLASS.is_match(line) {
                        outside_names(&STRONG_ERROR, line) || outside_paths(&THROWN_ERROR, line)
                    } else {
                        STRONG_ERROR.is_match(line) || named_error(line)
                    };
                if named && !ZERO_COUNT.is_match(line) {
                    Severity::Error
                } else {
                    Severity::None
                }
            }
            _ => Severity::Error,
        };
    }
    let err = level_error(line) || unleveled_named_error(line) || word_match(&WORD_ERROR, line);
    if err && WARN_LABEL.is_match(line) && !ERROR_LABEL.is_match(line) {
        return Severity::Warn;
    }
    if err {
        // "errors=0, failed: 0" alone is a clean report, not an error; nor is a name.
        let stripped = ZERO_COUNT.replace_all(line, "");
        let stripped = TITLE_NAME_ERROR.replace_all(&stripped, " ");
        let stripped = DESCRIBED_ERROR.replace_all(&stripped, " ");
        let stripped = SIGNAL_SETUP.replace_all(&stripped, " ");
        if level_error(&stripped)
            || unleveled_named_error(&stripped)
            || word_match(&WORD_ERROR, &stripped)
        {
            return Severity::Error;
        }
    }
    // `./PHPUnit/Framework/Error/Warning.php` names a file (`php -l`; trial of session 52).
    if outside_paths(&WARN, line) || LOCATED_FINDING.is_match(line) {
        return Severity::Warn;
    }
    Severity::None
}

/// True for a passing or skipped test's verdict line ([`PASSED_VERDICT`]): the next result
/// of a list, never part of the failure before it.
pub fn is_passed_verdict(line: &str) -> bool {
    PASSED_VERDICT.is_match(crate::guard::reduce::clip_str(line, 400))
}

/// True when the line is a test/build totals line ("Tests run: 7147, Failures: 1", "2 failed, 7 passed", "BUILD FAILURE").
///
/// One numbered thing's own outcome (`Trial 573 failed with value None`, `Job 12 passed`) is
/// no count of them.
pub fn is_totals(line: &str) -> bool {
    if line.len() >= 400 || quoted_source(line) {
        return false;
    }
    if ENTITY_OUTCOME.is_match(line) {
        return TOTALS.is_match(&ENTITY_OUTCOME.replace_all(line, " "));
    }
    TOTALS.is_match(line)
}

/// A numbered thing's own outcome: a noun, its number, `passed` or `failed`.
static ENTITY_OUTCOME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:trial|job|task|step|case|worker|epoch|iteration|attempt|stage|shard|batch|pod|request|query|run)\s+#?\d+\s+(?:passed|failed)\b").unwrap()
});

/// True when the line is a stack frame ("at x.y(Z.java:1)", `File "a.py", line 3`).
pub fn is_frame(line: &str) -> bool {
    FRAME.is_match(line)
}

/// True when a frame belongs to a runtime or test framework rather than the project.
pub fn is_framework_frame(line: &str) -> bool {
    FRAMEWORK_FRAME.is_match(line)
}

/// True when a stack frame points into a test file (`FooTest.java:84`, `a.test.ts:418:28`).
pub fn is_test_frame(line: &str) -> bool {
    is_frame(line) && TEST_FRAME.is_match(line)
}

/// True for a line that opens one failing test's report (`<<< FAILURE!`, `--- FAIL:`, `● name`).
pub fn is_test_failure(line: &str) -> bool {
    line.len() < 400 && TEST_FAILURE.is_match(line)
}

/// True for "Caused by:" and similar chained-exception lines.
pub fn is_caused_by(line: &str) -> bool {
    CAUSED.is_match(line)
}

/// The exit code a line reports ("exited with status 1" -> 1), if any.
pub fn exit_code(line: &str) -> Option<i64> {
    if quoted_source(line) || quiet::option_help(line) {
        return None;
    }
    EXIT_CODE
        .captures(line)
        .and_then(|c| c.get(5))
        .or_else(|| {
            TOOL_EXIT
                .captures(line)
                .and_then(|c| c.get(1).or_else(|| c.get(2)))
        })
        .or_else(|| SCRIPT_EXIT.captures(line).and_then(|c| c.get(1)))
        .and_then(|m| m.as_str().parse().ok())
}

/// A diagnostic line opened by a renderer's level mark (miette, used by oxlint and other Rust
/// tools: `  ! eslint(no-unused-vars): Catch parameter 'e' is caught but never used.`, `  x
/// rule(code): …`; its Unicode marks `⚠` and `×`; trial of session 50): group 1 for a
/// warning's mark, group 2 for an error's. `!` and `x` only before a `name(code):` rule, so
/// git's `! [rejected]` and prose are not read as marks.
static MARKED_DIAGNOSTIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s{0,4}(?:(!\s+[\w@/.-]+\([\w@/.:-]+\):\s|⚠\s+\S)|(x\s+[\w@/.-]+\([\w@/.:-]+\):\s|×\s+\S))").unwrap()
});

/// One name in quotes, with no space in it (`'error'`, `"UnicodeDecodeError"`, `` `err` ``,
/// PHP's `'\Exception'` and `'\App\FooError'`).
static QUOTED_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"'\\?[A-Za-z_$][\w$.:\\-]*'|"\\?[A-Za-z_$][\w$.:\\-]*"|`\\?[A-Za-z_$][\w$.:\\-]*`|‘\\?[A-Za-z_$][\w$.:\\-]*’"#).unwrap()
});

/// `line` with each quoted name ([`QUOTED_NAME`]) that is no key and no key's value (not
/// before or after `:` or `=`: JSON's `"error": "timeout"` stays an error) replaced by `'_'`.
fn quoted_names_out(line: &str) -> std::borrow::Cow<'_, str> {
    QUOTED_NAME.replace_all(line, |c: &regex::Captures| {
        let m = c.get(0).expect("the whole match");
        let before = line[..m.start()].trim_end();
        let after = line[m.end()..].trim_start();
        if before.ends_with([':', '=']) || after.starts_with([':', '=']) {
            m.as_str().to_string()
        } else {
            "'_'".to_string()
        }
    })
}

/// A nested class whose own name is an error word (`JCDiagnostic$Error`, `Outcome$Failure`):
/// a JVM class name, no event. A thrown one has more to its name (`Outer$ParseException:`).
static NESTED_ERROR_CLASS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$(?:Error|Exception|Failure|Fatal)\b").unwrap());

/// A dump of bytes: an offset and eight or more hex groups (`0010: 65 72 72 6F …`, `od`,
/// `xxd`, `tcpdump -X`), or an address and a term with no space (`7FACBCE54CB8:t2:A5:error`).
static HEX_DUMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:0x)?[0-9a-fA-F]{4,16}:?\s+(?:[0-9a-fA-F]{2,4}\s{1,2}){8}|^[0-9A-F]{8,16}:\S+$",
    )
    .unwrap()
});
/// A line of one lower-case word and nothing else.
static ONE_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*[a-z][a-z0-9_]*\s*$").unwrap());

/// A line that is a heading mark and one name (`# errors`, `## Failures`, `# net/http`).
static ONE_NAME_HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*#{1,6}\s+[\w./@-]+\s*$").unwrap());

/// A line that opens with one dotted symbol, `->`, and another, quoted parts and all
/// (`fmt.Fprintf -> fmt.newPrinter`, `runtime.throw -> go.string."fatal error: "`, Python's
/// `trace --trackcalls` edge `calendar.<module> -> calendar.IllegalMonthError`).
static SYMBOL_EDGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[\w/$*().<>-]*\w\.[\w/$*().<>-]*[\w)>](?: <\w+>)?)? -> [\w/$*().<>-]*\w\.(?:[^\s\x22]|\x22[^\x22]*\x22)+").unwrap()
});

/// A capitalised name ending in an error word and assigned a value (`DumpReplayDataOnError =
/// true`): a setting, no event. `=` only: `ValueError: bad` is thrown, `==` compares.
static SETTING_NAMED_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z][A-Za-z]*[a-z](?:Exception|Error)(\s*:?=)([^=]|$)").unwrap()
});

/// A class named in parentheses right after a name or number, and nothing else in them
/// (`__init__.py:11(DistlibException)`, a Python profile's `file:line(function)` row; trial of
/// session 56; `pytest.raises(ValueError)`): a reference to code. Group 1 is the character
/// before. After a space (`connection reset (ConnectionResetError)`) it names what happened.
static PAREN_NAMED_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\w)\([\w.]*[A-Z][A-Za-z0-9]*(?:Exception|Error)\)").unwrap());

/// A line of source that handles an error (`except KeyError:`, `} catch (IOException e) {`),
/// as a linter's duplicate-code report or a traceback quotes it: code, no event.
static ERROR_HANDLER_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:except(?:\s+\(?[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\)?(?:\s+as\s+\w+)?)?\s*:\s*$|(?:\}\s*)?catch\s*\(\s*[\w.|\s]+\)\s*\{?\s*$)").unwrap()
});

/// A system call traced by `strace` that returned (`21330 23:24:22.53 read(3, "//! Failing
/// records …"..., 2883) = 2883 <0.000092>`): group 1 is the call's name, group 2 its
/// arguments, group 3 what it returned, group 4 the error number's name when it failed (`= -1
/// ENOTTY (Inappropriate ioctl for device)`). The strings it passes are the data read or
/// written.
static TRACED_CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(?:\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+|\d+\.\d+\s+)?([a-z_][a-z0-9_]*)\((.*)\)\s+=\s+(-?\d+|0x[0-9a-f]+|\?)(?:\s+(E[A-Z0-9]+)\b)?").unwrap()
});

/// A C string literal as `strace` prints it (escapes inside, `...` after when cut).
static TRACED_STRING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""(?:[^"\\]|\\.)*"(?:\.\.\.)?"#).unwrap());

/// A C-style comment after code on its line (`return 0;  /* unreachable, but … */`).
static INLINE_COMMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[;{})]\s*/\*.*?\*/").unwrap());

/// A script's own record of how it ended: autoconf's `config.log` closes on `configure: exit 0`
/// (and `config.status: exit 0`), a shell trace on `+ exit 1`. Checks that failed along the way
/// (`conftest.c:70: error: ...`, `exit status 1` of a test program) are not the outcome.
static SCRIPT_EXIT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[\w.-]+:|\++) exit (-?\d+)\s*$").unwrap());

/// A build tool's own words for a command that failed, with its exit status: GNU make's
/// `make[1]: *** [Makefile:88: build/kvd] Error 1`, gcc's `collect2: error: ld returned 1 exit
/// status`.
static TOOL_EXIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*g?make(?:\[\d+\])?: \*\*\* .*\bError (\d+)\s*$|\breturned (\d+) exit status\b")
        .unwrap()
});

#[cfg(test)]
mod tests;
