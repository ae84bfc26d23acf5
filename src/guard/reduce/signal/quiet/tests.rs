//! Tests of the lines whose error words report nothing that went wrong ([`super::quiet`]),
//! read through [`super::super::severity`].

use super::super::*;

#[test]
fn a_quoted_source_line_is_what_the_file_says_not_what_happened() {
    // grep -n, git blame and python -m trace list files' lines: no error, exit code or totals.
    for l in [
        "./test/test_embed.py:84:            timeout=None, returncode=0, input=None,",
        "./subprocess.py:168:    cmd, output, stdout, stderr, timeout",
        "enum.py(1104):  except KeyError:",
        "c8cd1d62e8 (Seed maintainers 2026-12-01 21:24:06 +0000 129) [ERROR] After correcting the problems",
        "440e3d146e (Seed 0334b9f3 2026-12-01 21:24:06 +0000 130) [WARNING] Tests run: 42, Failures: 0, Errors: 0, Skipped: 1",
    ] {
        assert!(quoted_source(l), "{l}");
        assert_eq!(severity(l), Severity::None, "{l}");
        assert_eq!(exit_code(l), None, "{l}");
        assert!(!is_totals(l), "{l}");
    }
    // Diagnostics name a column or a level after the line; a log grepped keeps its levels.
    for l in [
        "src/main.rs:12:5: error: mismatched types",
        "app.py:12: error: Incompatible types in assignment",
        "app.log:12: ERROR payment declined",
    ] {
        assert!(!quoted_source(l), "{l}");
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
    assert!(!quoted_source(
        "docutils/io.py:88:4: E0601: Using variable 'x' before assignment"
    ));
}

#[test]
fn a_diagnostic_in_any_case_is_no_quoted_line() {
    for l in [
        "docs/index.rst:12: WARNING: undefined label: 'install'",
        "docs/api.rst:40: (ERROR/3) Unknown interpreted text role \"foo\".",
        "lib/app.js:7: Deprecated: use fetch() instead",
        "pkg/mod.py:3: E501 line too long",
    ] {
        assert!(!quoted_source(l), "{l}");
    }
}

#[test]
fn probes_listed_names_and_debug_class_names_are_no_errors() {
    // Session 43's trial: configure's and CMake's probes, Go's import lists, Maven's debug
    // class imports were "error lines".
    for line in [
        "checking for abort... yes",
        "checking whether error is declared... no",
        "-- Looking for error.h - not found",
        "-- Performing Test HAVE_STRERROR - Failed",
        "\t\t\"errors\",",
        "    \"error\"",
        "[DEBUG]  Imported: org.codehaus.plexus.util.xml.pull.XmlPullParserException < plexus.core",
        "[DEBUG]  Imported: org.apache.maven.exception < plexus.core",
        "    --- PASS: TestAllowMatrix/burst=1/rate=1 (0.00s)",
    ] {
        assert_eq!(severity(line), Severity::None, "{line}");
    }
    // The run's own verdicts stay errors.
    for line in [
        "configure: error: libzstd >= 1.4.0 is required for the segment codec",
        "[DEBUG] request failed: java.io.IOException: Broken pipe",
        "DEBUG worker stopped after TimeoutError",
        "\"status\": \"error\",",
        "--- FAIL: TestAllowMatrix (1.31s)",
        "[DEBUG] request failed with an exception, retrying",
    ] {
        assert_eq!(severity(line), Severity::Error, "{line}");
    }
}

#[test]
fn makes_own_error_compiler_remarks_directives_and_located_findings() {
    // make's fatal line names no error word, and is the run's failure.
    assert_eq!(
        severity(
            "make: *** No rule to make target 'src/mod000.c', needed by 'build/mod000.o'.  Stop."
        ),
        Severity::Error
    );
    assert_eq!(
        severity("make[2]: *** [Makefile:12: a.o] Error 1"),
        Severity::Error
    );
    // gcc -fopt-info's remarks: what the compiler did or tried, whatever their words.
    for l in [
        "kern.c:3:6: note: ***** Analysis failed with vector mode V4SF",
        "kern.c:4:91: optimized: loop vectorized using 16 byte vectors",
        "kern.c:9:3: missed: couldn't vectorize loop",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A preprocessor dump's macros name signals and errors; they are code.
    for l in [
        "#define SIGSEGV 11",
        "#define EFAULT 14",
        "# define __ERROR_H 1",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A comment that opens with `if` is no directive: its error words still count.
    assert_eq!(
        severity("# if the build failed, see above"),
        Severity::Error
    );
    // A finding at a file, line and column with no level word is a warning at least.
    assert_eq!(
        severity(
            "pkg37/pkg37.go:126:17: Snapshot passes lock by value: pkg37.Store contains sync.Mutex"
        ),
        Severity::Warn
    );
    assert_eq!(severity("./main.go:12:5: undefined: x"), Severity::Warn);
    // A stated level still decides.
    assert_eq!(
        severity("src/a.c:3:1: error: expected ';'"),
        Severity::Error
    );
    // A method of an exception class is a name (a JIT log's `<init>`), not an exception.
    assert_eq!(
        severity(
            "  @ 63   java.lang.InternalError::<init> (6 bytes)   callee's klass not linked yet"
        ),
        Severity::None
    );
}

#[test]
fn declarations_imports_and_option_help_name_errors_without_one_happening() {
    for l in [
        "func Serve(l net.Listener, handler Handler) error",
        "func (t *Transport) RoundTrip(req *Request) (*Response, error)",
        "    def on_error(self, exc):",
        "pub fn fail(&self) -> Result<(), Error> {",
        "import 'traceback' # <_frozen_importlib_external.SourceFileLoader object at 0x7f2e049fb710>",
        "# destroy traceback",
        "# cleanup[2] removing traceback",
        "  mean_err          <boolean>    ..FV....... compute and print mean error (default false)",
        "     erri                         ...V....B.. Error with inserted code, No concealment",
        "var ErrHandlerTimeout = errors.New(\"http: Handler timeout\")",
        "\tProxy func(*Request) (*url.URL, error)",
        "\t// If it returns an error, the Transport's RoundTrip fails with",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A traceback that happened, a failed call and a statistic's neighbour stay what they are.
    assert_eq!(
        severity("Traceback (most recent call last):"),
        Severity::Error
    );
    assert_eq!(
        severity("functional test failed: connection refused"),
        Severity::Error
    );
    assert_eq!(severity("error: mean value out of range"), Severity::Error);
    // An 11-letter word in capitals in a row's second column is no flags.
    assert_eq!(
        severity("  job-17   FAILEDTESTS  3 of 9 failed"),
        Severity::Error
    );
}

#[test]
fn an_error_counter_at_zero_and_a_loaded_class_are_no_errors() {
    for l in [
        "18:43:59  ERR  0.00  0.00  0.00",
        "Average:        ERR      0.00",
        "[0.017s][info][class,load] java.lang.Exception source: jrt:/java.base",
        "[0.017s][info][class,load] java.lang.Error source: jrt:/java.base",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A counter above zero, and an exception thrown in an info record, are.
    assert_eq!(severity("18:43:59  ERR  3.00  0.00"), Severity::Error);
    assert_eq!(
        severity("[0.2s][info][app] caught java.io.IOException: Broken pipe"),
        Severity::Error
    );
}

#[test]
fn names_and_catalogue_messages_are_not_errors() {
    // Trial of session 47: a module path named, not thrown, and a gettext catalogue's entries.
    for l in [
        "missing module named multiprocessing.TimeoutError - imported by multiprocessing.synchronize (top-level)",
        "msgid \"Forbidden\"",
        "msgstr[1] \"Erreur de connexion\"",
        "#~ msgid \"Permission denied\"",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // Thrown, with no level before it, a dotted class is still an error; so is a bare one.
    for l in [
        "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://x",
        "java.lang.NullPointerException",
        "raised ValueError in handler",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn code_and_names_that_carry_error_words_are_no_errors() {
    // A block comment's line, a comment after code, a traced command, a nested class.
    for l in [
        " * If input pointer is NULL, xxHash default behavior is to dereference it, triggering a segfault.",
        "  return 0;  /* unreachable, but some compilers complain without it */",
        "/* abort on failure */",
        "+++ [[ --abort-after <n>  Abort after encountering <n> errors. == *([[:blank:]])-* ]]",
        "   85:  213  6816  com.sun.tools.javac.util.JCDiagnostic$Error (jdk.compiler@17.0.15)",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // What a traced script prints, a bullet at the margin and a thrown nested class still are
    // (a trace's `+ exit 1` is read as an exit status, not here).
    for l in [
        "ERROR: cannot open /etc/x",
        "* ERROR: the build failed",
        "com.acme.Parser$SyntaxException: unexpected token at 3:4",
    ] {
        assert_ne!(severity(l), Severity::None, "{l}");
    }
}

#[test]
fn a_line_opening_with_total_and_a_figure_is_a_totals_line() {
    assert!(is_totals(
        " TOTAL                              :   1.22          1.06          2.38           61M"
    ));
    assert!(is_totals("Total        872192       33054344"));
    assert!(is_totals("total: 42"));
    // A word starting with total, or total mid-line, is not.
    assert!(!is_totals("totally 3 lines"));
    assert!(!is_totals("the total was 3"));
}

#[test]
fn a_label_saying_there_was_no_error_is_no_error() {
    // Gemini CLI's shell result: `Error: (none)` after the output.
    for l in [
        "Error: (none)",
        "stderr: <empty>",
        "errors = null",
        "Errors: none",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    for l in [
        "Error: (none of the files matched)",
        "Error: ENOENT",
        "error: none found",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn a_numbered_things_outcome_is_no_totals_line() {
    assert!(!is_totals(
        "[W 2026-12-07 03:09:04,967] Trial 573 failed with value None."
    ));
    assert!(!is_totals("Job 12 passed in 3.1s"));
    assert!(is_totals("=== 3 failed, 120 passed in 4.2s ==="));
    assert!(is_totals("Trial 7 failed; totals: 3 failed, 9 passed"));
}

#[test]
fn marks_quoted_names_and_sigils() {
    // miette's marks (oxlint, trial of session 50): the mark is the level.
    assert_eq!(
        severity("  ! eslint(no-unused-vars): Parameter 'error' is declared but never used."),
        Severity::Warn
    );
    assert_eq!(
        severity("  x eslint(no-undef): 'foo' is not defined."),
        Severity::Error
    );
    assert_eq!(severity("  × Expected a semicolon"), Severity::Error);
    assert_eq!(
        severity("! [rejected]        main -> main (fetch first)"),
        Severity::Error
    );
    // A quoted name is mentioned, not raised; a key and its quoted value still count.
    assert_eq!(
        severity("    :  `-- 'error' is declared here"),
        Severity::None
    );
    assert_eq!(
        severity("'UnicodeDecodeError' member requires 2.3, 3.0"),
        Severity::None
    );
    assert_eq!(
        severity(r#"{"error": "connection refused"}"#),
        Severity::Error
    );
    assert_eq!(severity("job status: 'failed'"), Severity::Error);
    // A sigil makes a variable of the word (perl -MO=Xref).
    assert_eq!(severity("      $error            i14, 16"), Severity::None);
}

#[test]
fn box_drawn_gutters_and_declared_types_are_no_errors() {
    assert_eq!(
        severity("  > 338 │ throw new Error( msg );"),
        Severity::None
    );
    assert_eq!(severity("    715 │ // error in IE"), Severity::None);
    assert_eq!(
        severity("  class Gem::MissingSpecError # is documented"),
        Severity::None
    );
    assert_eq!(severity("class ParseError(Exception):"), Severity::None);
    // A table row with more bars, and a thrown class, still count.
    assert_eq!(severity("  42 │ failed │ 3"), Severity::Error);
    assert_eq!(
        severity("Gem::MissingSpecError: could not find gem"),
        Severity::Error
    );
}

#[test]
fn an_assembly_listings_strings_and_source_echoes_are_no_errors() {
    for l in [
        "\t.string\t\"function `%s' not defined\"",
        "\t.section\t.rodata.str1.8,\"aMS\",@progbits,1",
        "# interpret.h:1304: \t\t\t\t\tfatal(_(\"function `%s' not defined\"), pc->func_name);",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A diagnostic about the listing is still one.
    assert_eq!(
        severity("eval.s:12: Error: no such instruction: `movx %eax'"),
        Severity::Error
    );
}

#[test]
fn a_scan_that_found_nothing_is_no_error() {
    // rkhunter's check column (live set of session 52).
    for l in [
        "[12:07:27]   Checking for Apache backdoor                    [ Not found ]",
        "[12:07:25]   Checking for suspicious directories             [ None found ]",
        "  Checking for presence of X                                [ NOT FOUND ]",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // Its warnings stay warnings; a file not found outside a check column is an error.
    assert_eq!(
        severity("[12:07:27]     Checking loaded kernel modules                [ Warning ]"),
        Severity::Warn
    );
    assert_eq!(
        severity("cp: config.yml: not found [ignored]"),
        Severity::Error
    );
    assert_eq!(
        severity("error: file not found [ Not found ] at build"),
        Severity::Error
    );
}

#[test]
fn a_capitalised_info_level_after_a_stamp_is_a_level() {
    assert_eq!(
        severity("[11:58:00] Info: Unable to find the 'lsmod' command"),
        Severity::None
    );
    assert_eq!(
        severity("[11:58:00] Warning: Unable to find the 'lsmod' command"),
        Severity::Warn
    );
    // Without a stamp before it, a capitalised word in prose is no level.
    assert_eq!(
        severity("Info about it: unable to connect"),
        Severity::Error
    );
}

#[test]
fn semgreps_dashed_gutter_quotes_source() {
    // Trial of session 53: the matched code of a finding is the file's, not an event.
    for l in [
        "          336┆ except ValueError:  # invalid literal for int()",
        "           96┆ return HttpResponseServerError(",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A table of dashed columns is no gutter.
    assert_eq!(severity("  42 ┆ failed ┆ 3 errors"), Severity::Error);
}

#[test]
fn listed_classes_vocabularies_and_handler_tables_are_no_errors() {
    // Trial of session 54 (jcmd VM.metaspace, VM.info): loaded classes, the log levels a JVM
    // knows and its signal handlers were called errors.
    for l in [
        "  199:  java.lang.ClassFormatError",
        "  1398: s  [Ljava.lang.Error;",
        "   12:   100   2400  java.lang.NoClassDefFoundError (java.base@17.0.9)",
        "Available log levels: off, trace, debug, info, warning, error",
        "   SIGSEGV: javaSignalHandler in libjvm.so, mask=11100100010111111101111111111110",
        "    SIGPIPE: SIG_IGN, mask=00000000000000000000000000000000, flags=none",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A thrown class says more, or stands without an index; counts are no bare words; a
    // signal received is no table row.
    for l in [
        "java.lang.NoClassDefFoundError",
        "  1) java.lang.AssertionError: expected 3 but was 4",
        "Caused by: java.lang.ClassNotFoundException: org.x.Y",
        "error: cannot find symbols a, b, c, d",
        "Totals: 2 errors, 1 warning, 0 notes, 5 infos",
        "Fatal signal SIGSEGV: segmentation violation",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn a_skipped_test_and_a_count_of_none_are_no_errors() {
    // Live set of session 54 (`make check` of GNU sed): automake's skips and its summary.
    for l in [
        "mb-bad-delim.sh: skipped test: en_US.UTF-8 locale not found",
        "SKIP: testsuite/mb-bad-delim.sh",
        "# ERROR: 0",
        "# FAIL:  0",
        "fails: 0",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    for l in [
        "# FAIL:  1",
        "FAIL: testsuite/panic-tests.sh",
        "# ERROR: 0 of 3 failed",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}
