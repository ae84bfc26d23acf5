//! Shapes of lines whose error words report nothing that went wrong: a probe that found
//! nothing, a compiler's remark, source code and its comments, a listing's entry, an option's
//! help, a setting, a counter at zero, a scan's `[ Not found ]`. [`quiet`] is true for any of
//! them; [`super::severity`] reads such a line as no event, whatever words it holds.

use regex::Regex;
use std::sync::LazyLock;

/// True for a line of one of this module's shapes: no error and no warning, whatever its words.
pub(super) fn quiet(line: &str) -> bool {
    LOCATED_REMARK.is_match(line)
        || DIRECTIVE.is_match(line)
        || ASSEMBLY.is_match(line)
        || LS_ENTRY.is_match(line)
        || column_header(line)
        || line.len() <= 120 && SETTING.is_match(line)
        || SOURCE_ECHO.is_match(line)
            && line.matches(" | ").count() + line.matches(" │ ").count() + line.matches('┆').count()
                == 1
        || DEBUGGER_NO_SOURCE.is_match(line)
        || option_help(line)
        || DECLARATION.is_match(line)
        || PY_VERBOSE.is_match(line)
        || PROBE.is_match(line)
        || LISTED_NAME.is_match(line)
        || LISTED_CLASS.is_match(line)
        || ZERO_ROW.is_match(line)
        || FOUND_NOTHING.is_match(line)
        || NO_ERROR_FIELD.is_match(line)
        || GETTEXT_ENTRY.is_match(line)
        || CODE_COMMENT.is_match(line)
        || XTRACE.is_match(line)
}

/// A probe's result line: autoconf's `checking for abort... yes`, CMake's `-- Looking for
/// error.h - not found` / `-- Performing Test HAVE_X - Failed`. A probe that finds nothing is
/// what configuring is for, not an error (the run's own `configure: error:` is one).
static PROBE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:checking [^\n]{1,200}?\.\.\.(?:\s|$)|-- (?:Looking for|Performing Test|Check(?:ing)? (?:for|if|whether|size|that)) [^\n]{1,200} - )").unwrap()
});

/// A compiler's remark at a source location (`kern.c:3:6: note: vectorized 1 loops`, gcc
/// `-fopt-info`'s `optimized:` and `missed:`, clang's `remark:`): what the compiler noticed or
/// did, not a failure, whatever its words (`Analysis failed with vector mode V4SF`).
static LOCATED_REMARK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[^\s:]+:\d+(?::\d+)?:\s*(?:note|remark|optimized|missed|info|help|hint)\s*:")
        .unwrap()
});

/// A C preprocessor directive (`#define SIGSEGV 11`, `#include <errno.h>`, `#ifdef
/// HAVE_ERROR_H`): source code, as `gcc -dM -E` dumps it; its names are no event. `#if`,
/// `#else` and `#include` only written tight: `# if the build fails` is a comment.
static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:#\s*(?:define|undef|ifdef|ifndef|elif|endif|pragma)|#(?:if|else|include))\b",
    )
    .unwrap()
});

/// An assembler's data directive or a compiler's source echo in assembly (`gcc -S
/// -fverbose-asm`): `.string "function `%s' not defined"`, `.section .rodata`, and
/// `# interpret.h:1304:   fatal(_("…"));`, the C line the instructions below it came from.
/// The program's strings and code, not what the compiler reported (trial of session 51: 2% of
/// an assembly listing's lines read as errors).
static ASSEMBLY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*\.(?:string|ascii|asciz|section|ident|file|stabs)\s|^#\s?[\w./+-]+\.[A-Za-z]{1,6}:\d+:\s").unwrap()
});

/// A line that is one quoted name and its comma: an entry of a list of names (`"errors",` among
/// a Go package's `Imports`, an enum's `"error",`).
static LISTED_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*"[\w./@:+-]{1,100}",?\s*$"#).unwrap());

/// A numbered list's item that is one class's dotted name and nothing said of it: `jcmd
/// VM.metaspace show-classes`'s `  199:  java.lang.ClassFormatError` and `1398: s
/// [Ljava.lang.Error;`, a class histogram's `  12:  100  2400  java.lang.Error (java.base@17)`.
/// A class loaded or counted, not thrown (trial of session 54: 91 loaded classes called error
/// lines). A thrown one says more (`Caused by:`, `: message`) or stands without an index.
static LISTED_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*\d+[:.)]\s+(?:\d+\s+)*(?:[a-z]{1,2}\s+)?\[*L?[A-Za-z_$][\w$]*",
        r"(?:[./][A-Za-z_$][\w$]*)+;?(?:\s+\([\w.@/-]+\))?\s*$"
    ))
    .unwrap()
});

/// A gettext catalogue's entry (`msgid "Forbidden"`, `msgstr[1] "…"`, an obsolete `#~ msgid`):
/// a message the program may show, not one it showed (trial of session 47: a `.po` file with
/// no error read as 24 error lines).
pub(super) static GETTEXT_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^(?:#~\s*)?msg(?:id|id_plural|str|ctxt)(?:\[\d+\])?\s+""#).unwrap()
});

/// An error counter's row whose numbers are all zero, after at most a time or label column
/// (`sar -I`'s `18:43:59  ERR  0.00  0.00  0.00`, `Average:  ERR  0.00`; trial of session
/// 46): no error happened, whatever level the word reads as.
static ZERO_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:[\w:.-]+\s+){0,2}(?:err|errs|errors?|failures?|failed|faults?)(?:\s+0+(?:\.0+)?%?)+\s*$").unwrap()
});

/// A check's verdict column that found nothing (rkhunter's `Checking for Apache backdoor
/// [ Not found ]`, Lynis's `[ NONE FOUND ]`; live set of session 52): a scan that looked for
/// something and found none of it, the good outcome, not an error.
static FOUND_NOTHING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s\[\s*(?:not found|none found|not detected|nothing found)\s*\]\s*$").unwrap()
});

/// A label that says there was no error (`Error: (none)` in Gemini CLI's shell result,
/// `stderr: <empty>`, `errors = null`): no error of its own.
static NO_ERROR_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(?:std)?err(?:or)?s?\s*[:=]\s*[(<\[]?(?:none|null|nil|n/a|-|empty)[)>\]]?\s*$",
    )
    .unwrap()
});

/// A line of an `ls -l` (or `find -ls`) listing: a file's mode, links, owner… and its name. A
/// file named `error` or `core.fail` is an entry, not an error.
static LS_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:\d+\s+\d+\s+)?[-dlcbps][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s").unwrap()
});

/// A compiler's quote of the source line a diagnostic points at (gcc, clang, rustc: ` 1594 |
/// _mi_os_reset(p, n); // note: cannot use …`): code, whose words (`cannot`, `fail`) are no
/// error. One bar only: a table row (`  42 | failed | 3`) has more.
/// biome's box-drawn gutter reads the same (`  > 978 │ a.sourceIndex - b.sourceIndex;`, its
/// `>` marking the line pointed at; trial of session 50), and semgrep's dashed one, further in
/// and tight (`          336┆ except ValueError:  # invalid literal`; trial of session 53).
static SOURCE_ECHO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ {0,6}(?:> )?\d{1,6} [|│] |^ {0,16}\d{1,6} ?┆ ").unwrap());

/// gdb's note that it cannot show a frame's source line (`57\t./nptl/futex-internal.c: No such
/// file or directory.`): the line number, a tab, the source path. The debugger lacks the
/// sources; the program did not fail to open a file.
static DEBUGGER_NO_SOURCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d+\t[^\t]+: No such file or directory\.$").unwrap());

/// A line that states a setting (`IP access violation accounting is disabled`, `Error
/// reporting is enabled`): a feature's name, then its state, with no colon or comma between
/// (`error: feature foo is disabled` is an error). The name may hold an error word; the line
/// reports configuration, not an event.
static SETTING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*[a-z][a-z0-9 /().-]{0,80}\s(?:is|are)\s(?:now\s)?(?:enabled|disabled|not set|not enabled|not configured|not supported|turned on|turned off|on|off)\.?\s*$",
    )
    .unwrap()
});

/// Counters a table of counts names in its header row beside `errors` (`ip -s link`'s
/// `RX: bytes packets errors dropped missed mcast`, a test table's `Tests Passed Failed
/// Errors Skipped`).
const COUNTER_WORDS: &[&str] = &[
    "bytes",
    "packets",
    "dropped",
    "drops",
    "overrun",
    "overruns",
    "frame",
    "carrier",
    "collisions",
    "missed",
    "mcast",
    "warnings",
    "skipped",
    "passed",
    "total",
    "count",
    "tests",
];

/// True for a table's header row: four words or more, no digit, each a bare word (a trailing
/// `:` allowed), two of them counters ([`COUNTER_WORDS`]). Its `errors` names a column.
fn column_header(line: &str) -> bool {
    let t = line.trim();
    if t.len() > 200 || t.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    words.len() >= 4
        && words.iter().all(|w| {
            let w = w.strip_suffix(':').unwrap_or(w);
            !w.is_empty() && w.chars().all(|c| c.is_alphabetic() || c == '_' || c == '-')
        })
        && words
            .iter()
            .filter(|w| COUNTER_WORDS.contains(&w.trim_end_matches(':').to_lowercase().as_str()))
            .count()
            >= 2
}

/// True for a command-line option's help line (`  --exit-on-contradictory-flags (Exit with
/// return code 0 on contradictory flags.)`, `  -q, --quiet  exit code 0 even on errors`): it
/// says what an exit code would be, not what one was. The option is a word of its own (space,
/// `,`, `=`, `[`, `<` or the end after it), so `-bash: x: command not found` is no option.
pub(super) fn option_help(line: &str) -> bool {
    let line = crate::guard::reduce::clip_str(line, 200);
    OPTION_HELP.is_match(line)
        || FLAG_COLUMNS
            .captures(line)
            .is_some_and(|c| c[1].matches('.').count() >= 2)
}

/// An option's or a constant's row with ffmpeg's 11 flag columns (`erri  ...V....B.. Error
/// with inserted code`): the flags hold dots where a flag is unset (2 at least, so an
/// 11-letter word in capitals, `FAILEDTESTS`, is no flags).
static FLAG_COLUMNS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+\S+\s+(?:<[\w ]+>\s+)?([.A-Z]{11})(?:\s|$)").unwrap());

/// An option at a line's start: `-q`, `--max-old-space-size=…`, `-o <file>`; or an option's
/// name and its value's type, indented (ffmpeg's AVOptions: `  mean_err  <boolean>
/// ..FV....... compute and print mean error (default false)`).
static OPTION_HELP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*--?[A-Za-z][\w-]*(?:[\s,=\[<]|$)|^\s+[A-Za-z][\w.:-]*\s+<[a-z][\w ]{0,20}>\s+\S",
    )
    .unwrap()
});

/// A function's declaration as code or API docs write it (`func Serve(l net.Listener, handler
/// Handler) error`, `def on_error(self, exc)`, `pub fn fail(&self) -> Error`): `error` there
/// is a type or a name, not something that happened.
///
/// Also a Go declaration of a value or a field of function type (`var ErrHandlerTimeout =
/// errors.New("http: Handler timeout")`, `Proxy func(*Request) (*url.URL, error)`) and a
/// code comment (`// If it returns an error, the Transport's RoundTrip fails`): code and
/// what it says it does.
static DECLARATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:func|fn|def)\s+(?:\([^)]*\)\s*)?[A-Za-z_]\w*\s*[(<\[]",
        r"|^\s*(?:var|const)\s+[A-Za-z_]\w*\s*=\s*\S",
        r"|^\s*[A-Za-z_]\w*\s+func\(",
        r"|^\s*//\s",
        // A type declared or listed by name (`class Gem::ConflictError # is documented` in
        // `rdoc -C`'s report, trial of session 50): a name, not a raised error.
        r"|^\s*(?:class|module|struct|enum|interface|trait)\s+[A-Z][\w:.]*(?:\s*(?:#.*|[:({<].*)?)$"
    ))
    .unwrap()
});

/// A line of a C-style block comment as source code prints it (` * If input is NULL, this
/// segfaults`, `/* unreachable */` at the start): what the code says, not what happened. Only
/// indented for ` * `, so a list's `* ERROR: …` bullet at the margin stays one.
static CODE_COMMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+\*(?:\s|$)|^\s*/\*").unwrap());

/// A command as `bash -x` / `set -x` traces it before running it (`+++ [[ --abort-after <n>
/// Abort after encountering <n> errors. == -* ]]`): the script's text, not its outcome; what
/// the command prints comes on lines of its own. The shell's `+ exit 1` is read by
/// [`exit_code`].
static XTRACE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\+{1,9} \S").unwrap());

/// `python -v`'s trace of its imports (`import 'traceback' # <…SourceFileLoader…>`, `# destroy
/// traceback`, `# cleanup[2] removing traceback`, `# code object from '…/traceback.cpython-311.pyc'`):
/// modules loaded and unloaded; a module named `traceback` or `errno` is no error.
static PY_VERBOSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:import '[\w.]+' # |# (?:destroy|cleanup\[\d+\] (?:removing|wiping)) [\w.]+\s*$|# code object from )")
        .unwrap()
});

#[cfg(test)]
mod tests;
