//! Tests of line severity and the line signals.

use super::*;

#[test]
fn npm_errors_and_python_warning_classes() {
    assert_eq!(severity("npm ERR! code ELSPROBLEMS"), Severity::Error);
    assert_eq!(
        severity("npm ERR! invalid: react@17.0.2 /app/node_modules/react"),
        Severity::Error
    );
    assert_eq!(
        severity("tests/test_a.py:12: RuntimeWarning: coroutine 'f' was never awaited"),
        Severity::Warn
    );
    assert_eq!(
        severity("  /venv/x.py:3: DeprecationWarning: the imp module is deprecated"),
        Severity::Warn
    );
    // A class name that only ends in the word is none.
    assert_eq!(severity("import forewarning_lib"), Severity::None);
}

/// An error or exception class starts with a capital (`IOError`,
/// `java.lang.IllegalStateException`); a method whose name ends in the word
/// (`processCompositionError`, `onError`: an R8 mapping's members) names no error.
#[test]
fn a_compilers_quote_of_the_source_is_no_error() {
    for l in [
        " 1594 |     _mi_os_reset(decommit_start, decommit_size);   // note: cannot use segment_decommit",
        "  331 | #define mi_assert(expr)     ((expr) ? (void)0 : _mi_assert_fail(#expr,__FILE__))",
        "12 |     panic!(\"failed to open\");",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    assert_eq!(severity("  42 | failed | 3"), Severity::Error);
}

/// A program setting up its signal handlers names the signals; it received none.
#[test]
fn a_signal_handlers_setup_is_no_error() {
    for l in [
        "01:10:58.562538 rt_sigaction(SIGILL, NULL, {sa_handler=SIG_DFL, sa_mask=[], sa_flags=0}, 8) = 0",
        "signal(SIGSEGV, on_crash);",
        "sigaddset(&set, SIGBUS)",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    for l in [
        "--- SIGSEGV {si_signo=SIGSEGV, si_code=SEGV_MAPERR, si_addr=NULL} ---",
        "Program received signal SIGSEGV, Segmentation fault.",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

/// gdb printing a frame whose sources it lacks: its note is no error of the program's; a
/// tool's own message about a missing file is.
#[test]
fn a_debuggers_missing_source_is_no_error() {
    assert_eq!(
        severity("57\t./nptl/futex-internal.c: No such file or directory."),
        Severity::None
    );
    assert_eq!(
        severity("cat: /etc/inventoryd/config.yaml: No such file or directory"),
        Severity::Error
    );
}

#[test]
fn a_line_that_labels_itself_a_warning_is_a_warning() {
    for l in [
        "Package auxhook Warning: Cannot patch \\document,",
        "l.54 --- TeX4ht warning --- File `\"images//LMB.xbb\"' not found ---",
        "src/a.c:3:1: warning: cannot inline 'f'",
        "[warning] unable to reach the mirror, using the cache",
    ] {
        assert_eq!(severity(l), Severity::Warn, "{l}");
    }
    for l in [
        "src/a.c:9:2: error: cannot find 'g' (warning: treated as error)",
        "Package foo Warning: retrying; ERROR: connection refused",
        "Build failed: warning: 3 tests skipped",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn a_method_named_for_an_error_is_no_error() {
    assert_eq!(
        severity("  244:246:void a.Recomposer.processCompositionError$default(a.B,int):764 -> i"),
        Severity::None
    );
    assert_eq!(
        severity("    void onError(java.lang.Throwable) -> b"),
        Severity::None
    );
    assert_eq!(
        severity("java.lang.IllegalStateException: no looper"),
        Severity::Error
    );
    assert_eq!(severity("raised IOError on read"), Severity::Error);
}

/// A setting whose name holds an error word reports configuration, not an event; the same
/// words after a colon are an error.
#[test]
fn a_setting_named_by_an_error_word_is_no_error() {
    for l in [
        "  IP access violation accounting is disabled",
        "Error reporting is enabled.",
        "  ICMP unreachables are always sent",
        "Crash dumps are not configured",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    for l in [
        "error: feature `nightly` is disabled",
        "Access violation, logging is disabled",
        "ERROR [db] replication is disabled",
        "c0000005 Access violation reading location 0x00000000",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

/// A file named for an error (a `find` listing) is no error; a level before a path is.
#[test]
fn a_file_named_for_an_error_is_no_error() {
    for l in [
        "  1234   8 -rw-r--r--   1 root root  2871 Mar  1 /usr/share/perl5/Test2/Event/Exception.pm",
        "/usr/share/perl/5.36/Fatal.pm",
        "drwxr-xr-x 2 root root 4096 logs/ERROR.log",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    for l in [
        "ERROR /usr/lib/x.so: cannot open",
        "Fatal: /etc/app.conf missing",
        "Exception. Stopping.",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

/// A package, service or table whose title-case name holds `Error` is no error; a title-case
/// error that ends on it, or a level before such a name, is.
#[test]
fn a_title_case_name_holding_error_is_no_error() {
    for l in [
        "ii  liblerc4:amd64  4.0.0+ds-2  amd64  Limited Error Raster Compression library",
        "ERST: Error Record Serialization Table (ERST) support is initialized.",
        "1.3.6.1.4.1.77.1.2.3.1.1.23|4|Error Reporting Service",
        "  Link Error Dampening: Disabled",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    for l in [
        "HTTP/1.1 500 Internal Server Error",
        "Error Reporting Service failed to start",
        "ERROR Windows Error Reporting Service is stopped",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

/// What a package or library is for (`memory error detector`, `error handling`) and an
/// `ls -l` entry named for errors are no errors; an error of those words is.
#[test]
fn a_described_error_or_a_listed_file_is_no_error() {
    for l in [
        "ii  libasan8:amd64  12.2.0-14  amd64  AddressSanitizer -- a fast memory error detector",
        "ii  libcom-err2:amd64  1.47.0-2  amd64  common error description library",
        "windows-result 0.4.1: Windows error handling",
        "ii  liberror-prone-java  2.18.0-1  all  Java compile-time static analysis (error-prone)",
        "drwxr-xr-x  2 root root 4096 Jun 24  2025 error",
        "  1835009      4 -rw-r--r--   1 root     root         1403 Mar  2 10:01 /var/log/app/failed.log",
        "\tto remove leading IBM error codes.  This might one day make more of the",
        "\tbig -> big_flag, bigbig -> bigbig_flag.  Solves compilation errors",
        "0x00007ff720940810 (+0x00008810)  runtime stub  delayed StackOverflowError throw_exception",
        "/usr/share/php/Symfony/Component/Config/FileLocator.php:36   ErrorControlOperator   Remove error control operator '@' on line 60.",
        "/usr/share/php/Symfony/Component/Config/Exception/LoaderLoadException.php:31   StaticAccess   Avoid using static access to class '\\Exception' in method '__construct'.",
        "No syntax errors detected in ./PHPUnit/Framework/Error/Warning.php",
        "No syntax errors detected in ./PHPUnit/Framework/Error/Deprecated.php",
        "[log] ✔  Type DependabotUpdateError was added",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A class a finding at a source location names is the code's; a lint finding is a warning.
    assert_eq!(
        severity("/usr/share/php/Symfony/Component/Config/Exception/FileLoaderImportCircularReferenceException.php:19  LongClassName  Avoid excessively long class names like FileLoaderImportCircularReferenceException. Keep class name length under 40."),
        Severity::None
    );
    for l in [
        "error: the error handling module failed to load",
        "0x00007f3a12345678 java.lang.OutOfMemoryError: Java heap space",
        "make: *** [Makefile:12: a.o] Error code 2",
        "tests/test_a.py:42: AssertionError",
        "20261207 NullPointerException in handler",
        "[log] ✖  Type EnterpriseUserAccountConnection was removed",
        "thread 'main' panicked at src/error.rs:12:5",
        "ls: cannot access '/srv/error': No such file or directory",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

/// An error word given a decimal number is a measured figure; a whole number still counts
/// failures, and a level or a message stays an error.
#[test]
fn an_error_that_is_a_measured_figure_is_no_error() {
    for l in [
        "          SIGMA SKELETON, ERROR=  -60.2361801476  0.0000000000",
        "epoch 12: train_loss 0.412, val error: 0.0831",
        "step 400 val_error=1.2e-3",
        "RMS error = 1.2e-05 after 40 iterations",
        "   THE ROOT MEAN SQUARE ERROR IN ITERATION  1 IS  0.00000000",
        "coef 0.42 (standard error 0.031)",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    for l in [
        "errors: 3, warnings: 0",
        "ERROR: 0.5 is not a valid ratio",
        "error: cannot open 1.2.3/lib.so",
        "SIGMA SKELETON, ERROR=  -60.2 and the job failed",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn a_mended_error_is_no_error() {
    // Commit messages and changelog entries describe errors fixed or handled.
    assert_eq!(
        severity("8d0aa1e 8e0e315 Sebastian <s@x> 1290280591 +0100\tcommit: submodule: Fixed capital error when handling the branch"),
        Severity::None
    );
    assert_eq!(
        severity("* handle timeouts and errors in the poller"),
        Severity::None
    );
    // Further on, or another error word not mended, the line stays an error.
    assert_eq!(
        severity("fixed the config; the next build failed again"),
        Severity::Error
    );
    assert_eq!(
        severity("error: could not fix the lockfile"),
        Severity::Error
    );
}

#[test]
fn a_specs_expected_error_is_no_error() {
    // rspec's documentation format names each example (trial of session 53).
    for l in [
        "    should raise an error",
        "      raises an exception",
        "    should not raise error when frozen",
        "  it must fail",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // What happened stays an error: a verb past the start with more before it, a level.
    for l in [
        "Server returns an error: 500",
        "process raises an exception",
        "ERROR: should raise",
        "failed due to error",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn compiler_notes_and_help_are_no_errors() {
    assert_eq!(
        severity("    = help: if this value is `None`, it will panic"),
        Severity::None
    );
    assert_eq!(
        severity("note: the lint level is defined here: panic"),
        Severity::None
    );
    assert_eq!(
        severity("help: a ValueError is raised when x fails"),
        Severity::Error
    );
    assert_eq!(severity("error: linking failed"), Severity::Error);
    // A quiet level past a log line's prefix decides; an error level there is left to
    // the vocabulary, and a count of none stays clean.
    assert_eq!(
        severity("Apr 03 11:01:18 n1 fenced [1944] (corosync_node_name) \tinfo: Unable to get node name for nodeid 1"),
        Severity::None
    );
    assert_eq!(
        severity("Apr 03 11:01:41 n1 schedulerd[1947] (unpack) \terror: NOTE: Clusters with shared data need STONITH"),
        Severity::Error
    );
    assert_eq!(
        severity("requests: 100 error: 0 elapsed: 3s"),
        Severity::None
    );
    // In prose a quiet word before a colon is no level.
    assert_eq!(
        severity("see the build note: linking failed"),
        Severity::Error
    );
}

#[test]
fn severity_levels() {
    assert_eq!(severity("2015 - ERROR [x] - boom"), Severity::Error);
    assert_eq!(
        severity("[Sun Dec 04] [error] mod_jk child"),
        Severity::Error
    );
    assert_eq!(
        severity("DONE processed=1000 errors=0 elapsed=12.84s"),
        Severity::None
    );
    assert_eq!(
        severity("2017 INFO x \"GET /a HTTP/1.1\" status: 404 len: 1"),
        Severity::Error
    );
    assert_eq!(
        severity("2017 INFO x \"GET /a HTTP/1.1\" status: 200 len: 1"),
        Severity::None
    );
    assert_eq!(severity("WARN dfs.DataNode: slow"), Severity::Warn);
    assert_eq!(
        severity("● ntpd.service not-found inactive dead"),
        Severity::Error
    );
    assert_eq!(severity("compiling error_log.c"), Severity::None);
    // A passing test's name may say error; a failing one is an error.
    for passed in [
        "PASS: Error when using --keep-global-symbol with --globalize-symbol",
        "ok 12 - reports the parse error",
        "tests/test_io.py::test_read_error PASSED                [ 40%]",
        "test parser::rejects_bad_error_code ... ok",
        "  ✓ throws an Error on bad input (3 ms)",
    ] {
        assert_eq!(severity(passed), Severity::None, "{passed}");
    }
    assert_eq!(
        severity("FAIL: gas/all/err-1.s  (test for errors, line 3)"),
        Severity::Error
    );
    assert_eq!(
        severity("not ok 13 - reports the parse error"),
        Severity::Error
    );
    assert_eq!(
        severity("ii  command-not-found  18.04.5  all  Suggest installation"),
        Severity::None
    );
    assert_eq!(severity("+-- is-error@2.2.2"), Severity::None);
    assert_eq!(
        severity(" 11  crash-client!std::panic::catch_unwind [panic.rs : 137]"),
        Severity::None
    );
    assert_eq!(severity("Error: not found."), Severity::Error);
    // A header row naming an `errors` column is no error; prose with the word is.
    assert_eq!(
        severity("    RX: bytes  packets  errors  dropped missed  mcast"),
        Severity::None
    );
    assert_eq!(
        severity("Tests Passed Failed Errors Skipped"),
        Severity::None
    );
    assert_eq!(severity("there were errors in the build"), Severity::Error);
    // A crash says so in the words of its platform: a signal, an access violation, a
    // thread marked crashed, a JVM's problematic frame.
    for l in [
        "Crash reason: EXC_BAD_ACCESS / KERN_INVALID_ADDRESS",
        "Thread 0 main (crashed) - tid: 4611",
        "#  SIGSEGV (0xb) at pc=0x00007f3c, pid=4242, tid=4243",
        "# Problematic frame:",
        "c0000005 Access violation reading location 0x00000000",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
    // A class of error is an error; a file or path named after one is not.
    assert_eq!(severity("raise ValueError(\"bad\")"), Severity::Error);
    assert_eq!(
        severity("Caused by: java.io.IOException: closed"),
        Severity::Error
    );
    assert_eq!(severity("Running CheckError.java"), Severity::None);
    assert_eq!(
        severity("Compiling java/lang/AssertionError/Cause.java"),
        Severity::None
    );
    assert_eq!(
        severity("Passed: java/io/PrintStream/CheckError.java"),
        Severity::None
    );
    assert_eq!(
        severity("FAILED: java/net/MulticastSocket/Test.java"),
        Severity::Error
    );
    // Zero counts with words between, and a counter named before its zero.
    assert_eq!(
        severity("  0 input errors, 0 CRC, 0 frame, 0 ignored"),
        Severity::None
    );
    assert_eq!(
        severity("  0 output errors, 136 collisions"),
        Severity::None
    );
    assert_eq!(
        severity("  4 input errors, 0 CRC, 0 frame, 0 ignored"),
        Severity::Error
    );
    assert_eq!(
        severity("  Last reset by us never, due to No error"),
        Severity::None
    );
    assert_eq!(severity("rx errors 0 dropped 0 overruns 0"), Severity::None);
    assert_eq!(severity("rx errors 12 dropped 0"), Severity::Error);
    assert_eq!(
        severity("2015 - WARN  [x] - Connection broken for id 1, error = "),
        Severity::Warn
    );
    assert_eq!(
        severity("2017 INFO nova.api HTTP exception thrown: No instances"),
        Severity::Error
    );
    assert_eq!(
        severity("[Sun Dec 04 04:51:08 2005] [notice] jk2_init() Found child 6725"),
        Severity::None
    );
}

#[test]
fn an_options_help_states_no_exit_status() {
    assert_eq!(
        exit_code(
            "  --exit-on-contradictory-flags (Exit with return code 0 on contradictory flags.)"
        ),
        None
    );
    assert_eq!(
        exit_code("  -q, --quiet   exit code 0 even on errors"),
        None
    );
    assert_eq!(
        severity("  --abort-on-uncaught-exception (abort on an uncaught error)"),
        Severity::None
    );
    // A shell's own error names the shell after its dash: no option.
    assert_eq!(
        severity("-bash: line 1: deploy: command not found"),
        Severity::Error
    );
    assert_eq!(exit_code("Process finished with exit code 1"), Some(1));
    assert_eq!(exit_code("error: command failed, exit status 2"), Some(2));
}

#[test]
fn a_build_tools_failure_states_its_exit_status() {
    assert_eq!(exit_code("make: *** [Makefile:42: all] Error 2"), Some(2));
    assert_eq!(
        exit_code("make[1]: *** [Makefile:88: build/kvd] Error 1"),
        Some(1)
    );
    assert_eq!(
        exit_code("collect2: error: ld returned 1 exit status"),
        Some(1)
    );
    assert_eq!(exit_code("make: Nothing to be done for 'all'."), None);
    assert_eq!(exit_code("Error 2 in the report"), None);
    // A script's last word on how it ended.
    assert_eq!(exit_code("configure: exit 0"), Some(0));
    assert_eq!(exit_code("config.status: exit 0"), Some(0));
    assert_eq!(exit_code("+ exit 3"), Some(3));
    assert_eq!(exit_code("| exit 0"), None);
    assert_eq!(exit_code("configure: exit 0 when done, else 1"), None);
}

#[test]
fn a_linker_error_is_an_error() {
    for l in [
        "/home/ci/kvd/src/store/segment_writer.c:214: undefined reference to `crc32c_update'",
        "ld.lld: error: undefined symbol: foo",
        "Undefined symbols for architecture arm64:",
        "seg.o: multiple definition of `crc_table'; first defined here",
        "main.obj : LNK2019: unresolved external symbol _foo referenced in function _main",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn totals_and_frames() {
    assert!(is_totals(
        "[ERROR] Tests run: 7147, Failures: 1, Errors: 0, Skipped: 7"
    ));
    assert!(is_totals("==== 2 failed, 7 passed in 0.22s ===="));
    assert!(is_totals("Tests:       1 failed, 41 passed, 42 total"));
    assert!(!is_totals("hello world"));
    // CPython regrtest's closing totals (trial of session 56).
    assert!(is_totals("Total tests: run=1,724 skipped=48"));
    assert!(!is_totals("Total tests to come later"));
    // A number that ends an address or a label's value is no count of failures.
    assert!(!is_totals(
        "ioapic: probe of 0000:80:05.4 failed with error -22"
    ));
    assert!(!is_totals(
        "sas: --- Exit sas_scsi_recover_host: busy: 0 failed: 0 tries: 1"
    ));
    assert!(crate::guard::reduce::text::totals_failed(
        "Tests: (2 failed)"
    ));
    assert!(!crate::guard::reduce::text::totals_failed(
        "ioapic: probe of 0000:80:05.4 failed with error -22"
    ));
    // rspec's totals, one failure in the singular (trial of session 53: "Completed").
    assert!(crate::guard::reduce::text::totals_failed(
        "1433 examples, 1 failure, 5 pending"
    ));
    assert!(!crate::guard::reduce::text::totals_failed(
        "1433 examples, 0 failures, 5 pending"
    ));
    assert!(is_frame("\tat org.apache.Foo.bar(Foo.java:84)"));
    assert!(is_framework_frame(
        "\tat java.base/java.lang.Thread.run(Thread.java:829)"
    ));
    assert!(!is_framework_frame(
        "\tat org.apache.commons.lang3.Foo.bar(Foo.java:84)"
    ));
    assert_eq!(exit_code("Error: codex exited with status 1"), Some(1));
    assert!(is_test_frame(
        "\tat a.b.FooTest.lambda$x$1(FooTest.java:84)"
    ));
    assert!(!is_test_frame("\tat a.b.Foo.bar(Foo.java:84)"));
    assert!(is_test_failure(
        "[ERROR] a.FooTest.testX  Time elapsed: 0.003 s  <<< FAILURE!"
    ));
    assert!(is_test_failure("    --- FAIL: TestX (0.00s)"));
    assert_eq!(exit_code("Process completed with exit code 2."), Some(2));
}

#[test]
fn a_skipped_test_is_no_error() {
    for l in [
        "Check if stty returns the same results ... skipped 'stty invocation failed'",
        "test_x (m.T.test_x) ... expected failure",
        "tests/a.py::test_b SKIPPED (needs a failed mount)",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    assert_eq!(
        severity("test_x (m.T.test_x) ... FAIL: skipped cleanup failed"),
        Severity::Error
    );
}

#[test]
fn a_class_nested_in_an_error_class_is_a_name() {
    // `jimage list` (trial of session 53): class files, no event.
    for l in [
        "    com/sun/tools/javac/comp/Resolve$InapplicableSymbolsError$1.class",
        "    com/sun/tools/javac/comp/Resolve$InapplicableSymbolsError$MostSpecificMap.class",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A nested exception thrown is one.
    assert_eq!(
        severity("com.foo.Outer$ParseException: bad token at 3"),
        Severity::Error
    );
}

#[test]
fn a_setting_named_for_an_error_is_a_name() {
    // `java -XX:+PrintFlagsFinal` (live set of session 48): flags given values, no event.
    for l in [
        "     bool HeapDumpOnOutOfMemoryError               = false                                  {manageable} {default}",
        "ccstrlist OnError                                  =                                           {product} {default}",
        "    ccstr AbortVMOnException                       =                                        {diagnostic} {default}",
        "ShowMessageBoxOnError=true",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // Thrown, compared, or with an error word of its own, the line is still an error.
    for l in [
        "java.lang.OutOfMemoryError: Java heap space",
        "if (x == ValueError) raise",
        "FooBarError = failed to open /etc/x",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn a_symbol_edge_or_a_one_name_heading_is_no_error() {
    // `go build -ldflags=-dumpdep` and `go build`'s package headings (trial of session 55).
    for l in [
        r#"runtime.throw.func1 -> go.string."fatal error: ""#,
        "runtime.getitab -> type.runtime.TypeAssertionError",
        " -> go.info.*runtime.TypeAssertionError",
        "# errors",
        "## Failures",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // What follows an edge still decides (jdeps' missing package), as does a heading's text.
    for l in [
        "   org.apache.maven.lifecycle -> org.codehaus.plexus.logging          not found",
        "# runtime error: index out of range",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}

#[test]
fn dumped_bytes_and_a_lone_word_are_no_error() {
    // A hexdump's text column, an Erlang crash dump's heap term and atom table (live set of
    // session 55), `tcpdump -X`.
    for l in [
        "  0010: 65 72 72 6F 72 20 66 61  69 6C 65 64 0A 00 00 00  error failed....",
        "00000120: 34 30 34 20 4e 6f 74 20 46 6f 75 6e 64 3c 2f 68 404 Not Found</h",
        "\t0x0000:  4500 003c 1c46 4000 4006 b1e6 c0a8 0001  error...",
        "7FACBCE54CB8:t2:A5:error,A7:running",
        "sigsegv",
        "  abort",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A warning word alone stays one; so do a sentence and a capitalised verdict.
    assert_eq!(severity("deprecated"), Severity::Warn);
    assert_eq!(severity("abort: no repository found"), Severity::Error);
    assert_eq!(severity("0010: error reading block 4"), Severity::Error);
}

#[test]
fn profiled_classes_handlers_and_traced_data_are_no_error() {
    // cProfile's `file:line(function)` rows, Python's `trace --trackcalls` edges, a linter's
    // quoted `except`/`catch` lines, strace's read buffers (trial of session 56).
    for l in [
        "        1    0.000    0.000    0.000    0.000 __init__.py:1179(ExtractionError)",
        "    calendar.<module> -> calendar.IllegalMonthError",
        "        except KeyError:",
        "    except (OSError, ValueError) as e:",
        "      \"code\": \"29     with pytest.raises(ValueError):\\n\",",
        "    } catch (IOException e) {",
        r#"21330 23:24:22.531031 read(3, "//! Failing records of a JSON document: how many fail"..., 2883) = 2883 <0.000092>"#,
        "21330 23:24:22.6 connect(3, {sa_family=AF_INET}, 16) = -1 EINPROGRESS (Operation now in progress)",
    ] {
        assert_eq!(severity(l), Severity::None, "{l}");
    }
    // A call that failed is an error whatever its message says; the program's own message to
    // standard error stays one; a thrown class is still thrown.
    for l in [
        "21330 23:24:22.505641 ioctl(2, TCGETS, 0x7ffe980a3270) = -1 ENOTTY (Inappropriate ioctl for device) <0.000010>",
        "readlink(\".git/index\", 0x55b4, 32) = -1 EINVAL (Invalid argument)",
        r#"write(2, "fatal: not a git repository"..., 40) = 40"#,
        "requests.exceptions.ConnectionError: (MaxRetryError)",
        "ValueError: bad value (see above)",
        "connection reset (ConnectionResetError)",
        "except for the build, which failed:",
    ] {
        assert_eq!(severity(l), Severity::Error, "{l}");
    }
}
