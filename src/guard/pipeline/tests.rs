//! Unit tests of the guard pipeline (a module of its own to keep pipeline.rs readable).
use super::*;
use crate::backend::{NarrateRequest, Narration, StopReason};
use crate::guard::binary::tests::png;
use base64::Engine as _;
use std::path::Path;

/// Test counter: one token per 4 bytes, rounded up (the real tokenizer is tested elsewhere).
struct QuarterCounter;
impl TokenCounter for QuarterCounter {
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

/// Stand-in narrator: answers with canned sections quoting `quote`.
struct CannedNarrator {
    quote: String,
    calls: usize,
}
impl Narrator for CannedNarrator {
    fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        self.calls += 1;
        assert!(
            req.user.len() < 64 * 1024,
            "the model sees the reduction only"
        );
        Ok(Narration {
            text: format!("Status: failed\nKey facts:\n- {}\n", self.quote),
            prompt_tokens: 100,
            generated_tokens: 10,
            prefill_ms: 5.0,
            decode_ms: 7.0,
            stop: Some(StopReason::Eos),
            ..Default::default()
        })
    }
    fn prefill_tok_per_s(&self) -> f64 {
        1000.0
    }
    fn decode_tok_per_s(&self) -> f64 {
        100.0
    }
    fn model_name(&self) -> String {
        "canned".into()
    }
}

fn req(dir: &Path, content: impl Into<Vec<u8>>) -> GuardRequest {
    GuardRequest {
        content: content.into(),
        tool: "Bash".into(),
        args: Some(serde_json::json!({"command": "make test"})),
        intent: Some("did the tests pass?".into()),
        session_dir: dir.to_path_buf(),
        limits: Limits::default(),
        keep_binary_inline: false,
        deadline: None,
        source: None,
        frame: String::new(),
    }
}

fn corpus(name: &str) -> Vec<u8> {
    crate::guard::test_corpus(name)
}

fn big_log(lines: usize) -> String {
    let mut s: String = (0..lines)
        .map(|i| {
            format!(
                "2024-05-01T10:00:{:02} INFO worker {i} processed batch ok\n",
                i % 60
            )
        })
        .collect();
    s.push_str("ERROR: unexpected status 401 Unauthorized\nexited with status 1\n");
    s
}

fn done(p: Prepared) -> GuardResponse {
    match p {
        Prepared::Done(r) => r,
        Prepared::NeedsModel(_) => panic!("expected a finished response"),
    }
}

fn job(p: Prepared) -> SummaryJob {
    match p {
        Prepared::NeedsModel(j) => j,
        Prepared::Done(r) => panic!("expected a model job, got {:?}: {}", r.kind, r.text),
    }
}

#[test]
fn small_result_passes_through_byte_identical() {
    let d = tempfile::tempdir().unwrap();
    let content = "line one\n\x1b[31mred\x1b[0m\r\n日本語 \u{1F600}\n";
    let r = done(prepare(req(d.path(), content), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.text.as_bytes(), content.as_bytes());
    assert!(r.saved.is_empty());
    assert!(!d.path().join("long_responses").exists());
    // Without a counter, bytes are the bound: still within the limit here.
    let r = done(prepare(req(d.path(), content), None).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
}

#[test]
fn a_saved_file_read_back_is_not_saved_again() {
    let d = tempfile::tempdir().unwrap();
    let log = big_log(3_000);
    let first = guard(req(d.path(), log.clone()), Some(&QuarterCounter), None).unwrap();
    let saved = first.saved.last().unwrap().clone();
    let abs = d.path().join(&saved.path);
    let count = || {
        std::fs::read_dir(d.path().join("long_responses"))
            .unwrap()
            .count()
    };
    assert_eq!(count(), 1);
    // A window over the limit: summarized, pointing at the same file, nothing saved.
    let window: String = log.lines().take(2_500).map(|l| format!("{l}\n")).collect();
    let mut rq = req(d.path(), window);
    rq.tool = "Read".into();
    rq.args = Some(serde_json::json!({"file_path": abs, "offset": 1, "limit": 2500}));
    let r = guard(rq, Some(&QuarterCounter), None).unwrap();
    assert_eq!(count(), 1, "not saved again");
    assert_eq!(r.saved.last(), Some(&saved));
    assert!(
        r.text
            .contains(&format!("read from the saved file {} (", saved.path)),
        "{}",
        r.text
    );
    assert!(r.text.contains("it was not saved again"));
    // A small window passes through, as any small result.
    let mut rq = req(d.path(), "line 1\nline 2\n");
    rq.args = Some(serde_json::json!({"command": format!("sed -n 1,2p {}", abs.display())}));
    let r = guard(rq, Some(&QuarterCounter), None).unwrap();
    assert_eq!(r.kind, ResultKind::Passthrough);
    // The caller's own copy of the same bytes (a dead daemon's save): the usual pointer.
    let mut rq = req(d.path(), log);
    rq.source = Some(saved.clone());
    let r = guard(rq, Some(&QuarterCounter), None).unwrap();
    assert_eq!(count(), 1);
    assert!(r
        .text
        .contains(&format!("Full response saved to: {} (", saved.path)));
}

/// A window read back from line 1,001 of a saved file: its summary's `L<n>` are lines of the
/// window, and the pointer says so and where the window starts, so `L<n>` can be read there.
#[test]
fn a_window_read_back_from_an_offset_maps_its_line_numbers_to_the_file() {
    let d = tempfile::tempdir().unwrap();
    let log = big_log(3_000);
    let first = guard(req(d.path(), log.clone()), Some(&QuarterCounter), None).unwrap();
    let saved = first.saved.last().unwrap().clone();
    let abs = d.path().join(&saved.path);
    let window: String = log.lines().skip(1_000).map(|l| format!("{l}\n")).collect();
    let mut rq = req(d.path(), window.clone());
    rq.tool = "Read".into();
    rq.args = Some(serde_json::json!({"file_path": abs, "offset": 1001}));
    let r = guard(rq, Some(&QuarterCounter), None).unwrap();
    assert_eq!(r.kind, ResultKind::Summary, "{}", r.text);
    assert!(
        r.text.contains(
            "This window starts at line 1,001 of that file: L<n> above is its line n + 1000."
        ),
        "{}",
        r.text
    );
    assert!(!r.text.contains(" of the saved file"), "{}", r.text);
    // Every quoted line is the window's line of that number, and the file's 1,000 lines on.
    let file: Vec<&str> = log.lines().collect();
    let lines: Vec<&str> = window.lines().collect();
    let mut quoted = 0;
    for l in r.text.lines() {
        let Some((n, rest)) = l.strip_prefix('L').and_then(|l| l.split_once(": ")) else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else { continue };
        let rest = rest.trim_start();
        assert!(lines[n - 1].contains(rest), "L{n}: {rest}");
        assert!(file[n + 1_000 - 1].contains(rest), "L{n}: {rest}");
        quoted += 1;
    }
    assert!(quoted > 0, "{}", r.text);
    // A window whose start cannot be placed (`grep -n` adds numbers): said so.
    let grep: String = log
        .lines()
        .enumerate()
        .skip(1_000)
        .map(|(i, l)| format!("{}:{l}\n", i + 1))
        .collect();
    let mut rq = req(d.path(), grep);
    rq.args = Some(serde_json::json!({"command": format!("grep -n . {}", abs.display())}));
    let r = guard(rq, Some(&QuarterCounter), None).unwrap();
    assert!(
        r.text
            .contains("L<n> above count from this output's first line, not the file's"),
        "{}",
        r.text
    );
    assert!(!r.text.contains(" of the saved file"), "{}", r.text);
}

/// An output with a screenshot in it, saved as received: reading it back saves nothing again,
/// not even the screenshot (the first guard saved it decoded).
#[test]
fn a_saved_output_with_base64_read_back_saves_no_file_again() {
    let d = tempfile::tempdir().unwrap();
    let shot = corpus("cases/case_08_mcp_screenshot.json");
    let mut body = String::from_utf8(shot.clone()).unwrap();
    body.push_str(&big_log(3_000));
    let mut rq = req(d.path(), body.clone());
    rq.limits.token_limit = 2_000;
    let first = guard(rq, Some(&QuarterCounter), None).unwrap();
    let count = || {
        std::fs::read_dir(d.path().join("long_responses"))
            .unwrap()
            .count()
    };
    // The PNG decoded, and the output byte for byte.
    assert_eq!(count(), 2, "{:?}", first.saved);
    let full = first.saved.last().unwrap().clone();
    assert_eq!(
        std::fs::read(d.path().join(&full.path)).unwrap(),
        body.as_bytes()
    );
    let mut rq = req(d.path(), body);
    rq.tool = "Read".into();
    rq.args = Some(serde_json::json!({"file_path": d.path().join(&full.path)}));
    rq.limits.token_limit = 2_000;
    let r = guard(rq, Some(&QuarterCounter), None).unwrap();
    assert_eq!(count(), 2, "nothing saved again: {:?}", r.saved);
    assert_eq!(r.saved.last(), Some(&full));
}

#[test]
fn counted_result_under_limit_passes_through() {
    let d = tempfile::tempdir().unwrap();
    let text = "x".repeat(40_000); // 40,000 bytes > 15,000, but 10,000 tokens.
    let r = done(prepare(req(d.path(), text.clone()), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.tokens.input, 10_000);
    assert_eq!(r.text, text);
    // With no counter the byte count decides, and the result is saved.
    let j = job(prepare(req(d.path(), text), None).unwrap());
    assert_eq!(j.input_tokens(), 40_000);
}

#[test]
fn large_result_is_saved_then_summarized() {
    let d = tempfile::tempdir().unwrap();
    let log = big_log(3_000);
    let j = job(prepare(req(d.path(), log.clone()), Some(&QuarterCounter)).unwrap());
    assert!(j.input_tokens() > 15_000);
    // Saved before the model runs, byte-identical, as .txt.
    let saved = j.full().clone();
    assert!(saved.path.ends_with("_Bash.txt"), "{}", saved.path);
    assert_eq!(
        std::fs::read(d.path().join(&saved.path)).unwrap(),
        log.as_bytes()
    );
    let mut n = CannedNarrator {
        quote: "ERROR: unexpected status 401 Unauthorized".into(),
        calls: 0,
    };
    let r = j.run(&QuarterCounter, Some(&mut n));
    assert!(matches!(r.kind, ResultKind::Summary | ResultKind::Preview));
    assert!(r
        .text
        .contains(&format!("Full response saved to: {} (", saved.path)));
    assert!(r.text.contains("Use Read"));
    assert!(r.text.len() < log.len() / 10);
    assert_eq!(r.saved.last(), Some(&saved));
    if r.kind == ResultKind::Summary && n.calls > 0 {
        assert_eq!(r.model.as_deref(), Some("canned"));
        assert_eq!(r.timings_ms.decode, 7.0);
    }
}

#[test]
fn the_whole_result_stays_within_the_result_cap() {
    // Lines of many templates fill every section; the answer, pointer and header included,
    // stays within the cap with the model off and above summarize_limit.
    let d = tempfile::tempdir().unwrap();
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    ];
    let log: String = (0..4_000)
        .map(|i| {
            let (a, b) = (words[i % 18], words[(i / 18) % 18]);
            let sev = if i % 11 == 0 { "ERROR" } else { "INFO" };
            format!(
                "{sev} {a} {b} stage reached replica {} after {} ms on node-{}\n",
                i * 7,
                i * 13,
                i % 97
            )
        })
        .collect();
    // Counts the joins too (a tokenizer's text is not the sum of its lines' counts).
    struct JoinCounter;
    impl TokenCounter for JoinCounter {
        fn count(&self, text: &str) -> usize {
            text.len().div_ceil(4) + 3 * text.matches('\n').count()
        }
    }
    let cap = crate::guard::summarize::RESULT_TOKEN_CAP;
    // What a hook prints around the result (its sentence, a pointer made absolute) counts
    // against the same cap.
    let hook = "not an error: toolsum saved this long tool output and replaced it with the \
                summary below.\n\n/home/someone/projects/app/.toolsum/0f3c2a9e-session";
    for (limit, frame) in [
        (None, ""),
        (Some(20_000), ""),
        (None, hook),
        (Some(20_000), hook),
    ] {
        let mut rq = req(d.path(), log.clone());
        rq.intent = Some("which replicas on node-5 reached the golf stage?".into());
        if let Some(l) = limit {
            rq.limits.summarize_limit = l;
        }
        rq.frame = frame.to_string();
        let r = guard(rq, Some(&JoinCounter), None).unwrap();
        let n = JoinCounter.count(&format!("{frame}\n\n{}", r.text));
        assert!(r.text.contains("Full response saved to: "), "{}", r.text);
        assert!(n <= cap, "{n} tokens: {}", r.text);
        assert!(n > cap * 3 / 4, "the room is used ({n} tokens): {}", r.text);
    }
}

#[test]
fn guard_without_model_still_answers() {
    let d = tempfile::tempdir().unwrap();
    let log = big_log(3_000);
    assert!(log.len() > 100_000);
    let r = guard(req(d.path(), log), Some(&QuarterCounter), None).unwrap();
    assert!(matches!(r.kind, ResultKind::Summary | ResultKind::Preview));
    assert!(r.model.is_none());
    assert!(r.text.contains("Full response saved to: long_responses/"));
    // No counter: bytes bound the tokens (here between the two limits).
    let r = guard(req(d.path(), big_log(1_000)), None, None).unwrap();
    assert_eq!(r.kind, ResultKind::Preview);
    assert!(r.reason.unwrap().starts_with("no_tokenizer"));
    assert!(r.text.contains("exited with status 1"), "tail kept");
}

#[test]
fn above_summarize_limit_without_a_model_is_the_structural_digest() {
    let d = tempfile::tempdir().unwrap();
    let mut rq = req(d.path(), big_log(3_000));
    rq.limits.summarize_limit = 20_000;
    let r = guard(rq, Some(&QuarterCounter), None).unwrap();
    assert_eq!(r.kind, ResultKind::Preview);
    assert!(r.reason.as_deref().unwrap().starts_with("too_large"));
    assert!(
        r.text.contains("facts extracted by structure"),
        "{}",
        r.text
    );
    // No model ran: the header says so, not that the output was too large for one (the
    // model reads a reduction of any size).
    assert!(r.text.contains("No model ran"), "{}", r.text);
    assert!(!r.text.contains("too large for the model"), "{}", r.text);
    assert!(r.text.contains("ERROR: unexpected status 401 Unauthorized"));
    assert!(r.text.len() < 2 * 2_000 * 2 + 1_000);
    assert_eq!(r.saved.len(), 1);
    assert!(r.text.contains(&r.saved[0].path));
    // The token count is in the reason only: the text states what the input says.
    assert!(!r.text.contains("20,000"), "{}", r.text);
}

#[test]
fn above_summarize_limit_the_model_still_reads_the_reduction() {
    let d = tempfile::tempdir().unwrap();
    let mut rq = req(d.path(), big_log(3_000));
    rq.limits.summarize_limit = 20_000;
    let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
    let mut n = CannedNarrator {
        quote: "ERROR: unexpected status 401 Unauthorized".into(),
        calls: 0,
    };
    // CannedNarrator asserts that its prompt is small: the reduction, not the text.
    let r = j.run(&QuarterCounter, Some(&mut n));
    assert_eq!(n.calls, 1);
    assert_eq!(r.kind, ResultKind::Summary);
    assert_eq!(r.model.as_deref(), Some("canned"));
    assert!(
        r.reason.as_deref().unwrap().starts_with("too_large"),
        "{:?}",
        r.reason
    );
    assert!(r.text.contains("ERROR: unexpected status 401 Unauthorized"));
    assert!(!r.text.contains("too large"), "{}", r.text);
    // A text past the digest's bound is not reduced at all: head and tail, no model.
    let huge = "x".repeat(DIGEST_MAX_BYTES + 10) + "\nERROR: tail line\n";
    let mut rq = req(d.path(), huge);
    rq.limits.summarize_limit = 20_000;
    let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Preview);
    assert!(r.reason.as_deref().unwrap().starts_with("too_large"));
    assert!(r.text.contains("ERROR: tail line"), "{}", &r.text[..200]);
    // Asked something, the lines holding the question's words are quoted with their numbers,
    // however deep in the text (here past the head and tail shown).
    let filler = "/usr/share/doc/some-package/changelog.Debian.gz\n".repeat(200_000);
    let huge = format!("{filler}/usr/lib/x86_64-linux-gnu/libssl.so.3\n{filler}");
    assert!(huge.len() > DIGEST_MAX_BYTES);
    let mut rq = req(d.path(), huge);
    rq.intent = Some("where is libssl.so.3 installed?".into());
    rq.limits.summarize_limit = 20_000;
    let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert!(
        r.text
            .contains("\nL200001: /usr/lib/x86_64-linux-gnu/libssl.so.3\n"),
        "{}",
        &r.text[..600]
    );
}

/// Past the digest's bound, the answer still fits the one cap of every result: long quoted
/// lines and a head and tail of dense text shrink (here they came to about 2,100 tokens).
#[test]
fn a_text_too_large_to_reduce_fits_the_result_cap() {
    let d = tempfile::tempdir().unwrap();
    let long =
        |what: &str, i: usize| format!("{}{what} {i}{}\n", "k=1;".repeat(100), ";v=2".repeat(100));
    let mut huge = String::new();
    for i in 0..12 {
        huge.push_str(&long("ERROR: disk quota exceeded on segment", i));
        huge.push_str(&long("payment charge declined", i));
    }
    huge.push_str(&"k=1;".repeat(DIGEST_MAX_BYTES / 4 + 10));
    assert!(huge.len() > DIGEST_MAX_BYTES);
    let mut rq = req(d.path(), huge);
    rq.intent = Some("why was the payment charge declined?".into());
    rq.limits.summarize_limit = 20_000;
    let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Preview);
    let tokens = QuarterCounter.count(&r.text);
    assert!(
        tokens <= crate::guard::summarize::RESULT_TOKEN_CAP && r.tokens.output == tokens,
        "{tokens} {:?}",
        r.tokens
    );
    // What the scan found first is still quoted, and the header says how much head is shown.
    assert!(
        r.text.contains("ERROR: disk quota exceeded on segment 0"),
        "{}",
        r.text
    );
    assert!(r.text.contains("payment charge declined 0"), "{}", r.text);
    assert!(r.text.contains("Full response saved to: "));
}

#[test]
fn late_model_falls_back_to_preview() {
    let d = tempfile::tempdir().unwrap();
    let mut rq = req(d.path(), big_log(3_000));
    rq.deadline = Some(Instant::now());
    let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert!(j.deadline().is_some());
    let mut n = CannedNarrator {
        quote: String::new(),
        calls: 0,
    };
    let r = j.run(&QuarterCounter, Some(&mut n));
    assert_eq!(n.calls, 0);
    assert_eq!(r.kind, ResultKind::Preview);
    assert!(r.reason.unwrap().starts_with("deadline_passed"));
    assert!(r.text.contains("Full response saved to: "));
}

#[test]
fn ansi_progress_is_cleaned_before_the_model() {
    let d = tempfile::tempdir().unwrap();
    let mut rq = req(d.path(), corpus("cases/case_16_ansi_progress.txt"));
    rq.limits.token_limit = 100;
    let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
    let saved = j.full().clone();
    let r = j.fallback(None, "model_unavailable: test");
    assert!(!r.text.contains('\x1b'));
    assert!(r.text.contains("FAIL  src/auth.test.js"), "{}", r.text);
    assert!(r.text.contains("1 failed, 41 passed, 42 total"));
    // The saved file keeps the escapes.
    assert_eq!(
        std::fs::read(d.path().join(saved.path)).unwrap(),
        corpus("cases/case_16_ansi_progress.txt")
    );
}

#[test]
fn whole_base64_png_is_saved_decoded() {
    let d = tempfile::tempdir().unwrap();
    let p = png(200, 120);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&p);
    for content in [b64.clone(), format!("data:image/png;base64,{b64}")] {
        let r = done(prepare(req(d.path(), content), Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Binary);
        assert_eq!(r.saved.len(), 1);
        assert!(r.saved[0].path.ends_with(".png"));
        assert_eq!(r.saved[0].media_type, "image/png");
        assert_eq!(std::fs::read(d.path().join(&r.saved[0].path)).unwrap(), p);
        assert!(r.text.starts_with("[image/png 200x120, "), "{}", r.text);
        assert!(r.text.contains("Full response saved to: long_responses/"));
        assert!(!r.text.contains("iVBOR"));
    }
    // keep_binary_inline: the base64 goes on as text.
    let mut rq = req(d.path(), b64.clone());
    rq.keep_binary_inline = true;
    let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.text, b64);
}

#[test]
fn case_08_mcp_screenshot() {
    let d = tempfile::tempdir().unwrap();
    let r = done(
        prepare(
            req(d.path(), corpus("cases/case_08_mcp_screenshot.json")),
            Some(&QuarterCounter),
        )
        .unwrap(),
    );
    assert_eq!(r.kind, ResultKind::Binary);
    assert!(r.text.len() < 1024, "{} bytes: {}", r.text.len(), r.text);
    assert!(r.text.contains("image/png 200x120, 28,627 bytes"));
    assert!(r
        .text
        .contains("Took a screenshot of the full current page."));
    assert!(!r.text.contains("iVBOR"));
    // The image, then the output as received, named in the image's description.
    assert_eq!(r.saved.len(), 2);
    assert!(r.text.contains(&r.saved[0].path));
    assert!(r.text.contains(&format!(
        " and the output as received to {}",
        r.saved[1].path
    )));
    assert_eq!(
        std::fs::read(d.path().join(&r.saved[1].path)).unwrap(),
        corpus("cases/case_08_mcp_screenshot.json")
    );
    assert!(serde_json::from_str::<serde_json::Value>(&r.text).is_ok());
}

#[test]
fn b64_01_corpus() {
    let d = tempfile::tempdir().unwrap();
    let mut rq = req(d.path(), corpus("b64_01.json"));
    rq.tool = "mcp__playwright__browser_take_screenshot".into();
    let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Binary);
    assert!(
        r.text.contains("image/png 846x1006, 53,949 bytes"),
        "{}",
        r.text
    );
    assert!(r
        .text
        .contains("/tmp/playwright-output/test-report-error-details.png"));
    assert!(r.text.contains("Took the viewport screenshot"));
    assert!(r.text.len() < 1024);
    let png_bytes = std::fs::read(d.path().join(&r.saved[0].path)).unwrap();
    assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn raw_binary_is_saved_as_is() {
    let d = tempfile::tempdir().unwrap();
    let content: Vec<u8> = (0..5_000u32).map(|i| (i % 256) as u8).collect();
    let r = done(prepare(req(d.path(), content.clone()), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Binary);
    assert_eq!(
        std::fs::read(d.path().join(&r.saved[0].path)).unwrap(),
        content
    );
    assert!(r
        .text
        .contains("application/octet-stream, 5,000 bytes of raw binary data"));
    assert!(r.saved[0].path.ends_with(".bin"));
}

#[test]
fn few_invalid_bytes_are_lossy_for_the_model_exact_on_disk() {
    let d = tempfile::tempdir().unwrap();
    let mut content = big_log(3_000).into_bytes();
    content.splice(10..10, [0xff, 0xfe]);
    let j = job(prepare(req(d.path(), content.clone()), Some(&QuarterCounter)).unwrap());
    assert!(j.text.contains('\u{FFFD}'));
    let saved = j.full().clone();
    assert_eq!(std::fs::read(d.path().join(saved.path)).unwrap(), content);
}

#[test]
fn bad_session_dirs_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let e = prepare(req(Path::new("rel"), "x"), None).unwrap_err();
    assert_eq!(e.kind(), "bad_session_dir");
    let e = prepare(req(&d.path().join("missing"), big_log(3_000)), None).unwrap_err();
    assert_eq!(e.kind(), "bad_session_dir");
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), d.path().join("long_responses")).unwrap();
    let e = prepare(req(d.path(), big_log(3_000)), Some(&QuarterCounter)).unwrap_err();
    assert_eq!(e.kind(), "unsafe_save_dir");
    let e = prepare(req(d.path(), png(2, 2)), None).unwrap_err();
    assert_eq!(e.kind(), "unsafe_save_dir");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn json_result_saved_as_json() {
    let d = tempfile::tempdir().unwrap();
    let items: Vec<_> = (0..2_000)
        .map(|i| serde_json::json!({"id": i, "name": format!("item-{i}"), "ok": i != 417}))
        .collect();
    let text = serde_json::to_string(&items).unwrap();
    let j = job(prepare(req(d.path(), text), Some(&QuarterCounter)).unwrap());
    assert!(j.full().path.ends_with(".json"));
    assert_eq!(j.full().media_type, "application/json");
}

/// A write failure (here EFBIG from a 1 KiB file-size limit, set in a child process so it
/// cannot affect other tests) still yields a preview, and the reason says why.
#[test]
fn save_failure_returns_preview_with_reason() {
    const CHILD: &str = "TOOLSUM_TEST_FSIZE_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "guard::pipeline::tests::save_failure_returns_preview_with_reason",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("CHILD_OK"),
            "child failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    // SAFETY: plain libc calls with valid arguments, in a child process of our own.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: 1024,
            rlim_max: 1024,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    let d = tempfile::tempdir().unwrap();
    let log = big_log(3_000);
    let r = done(prepare(req(d.path(), log), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Preview);
    assert!(r.ok);
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .starts_with("save_failed: io: "),
        "{:?}",
        r.reason
    );
    assert!(r.text.contains("could not be saved"));
    assert!(r.text.contains("exited with status 1"));
    assert!(r.saved.is_empty());
    // A base64 image that cannot be saved is still described, never inlined.
    let r = done(
        prepare(
            req(d.path(), corpus("cases/case_08_mcp_screenshot.json")),
            Some(&QuarterCounter),
        )
        .unwrap(),
    );
    assert!(r.text.contains("image/png 200x120, 28,627 bytes"));
    assert!(r.text.contains("not saved: io"));
    assert!(!r.text.contains("iVBOR"));
    assert!(r.reason.as_deref().unwrap().starts_with("save_failed"));
    println!("CHILD_OK");
}

#[test]
fn jobs_can_move_to_the_model_thread() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<SummaryJob>();
    assert_send::<Prepared>();
    assert_send::<GuardError>();
}

#[test]
fn response_serializes_with_lowercase_kind() {
    let d = tempfile::tempdir().unwrap();
    let r = done(prepare(req(d.path(), "ok"), None).unwrap());
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["kind"], "passthrough");
    let back: GuardResponse = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
    let l: Limits = serde_json::from_str(r#"{"token_limit": 10}"#).unwrap();
    assert_eq!(l.token_limit, 10);
    assert_eq!(l.summarize_limit, 100_000);
}

/// A short base64 file in a string (a certificate in `kubectl get secret -o json`): under the
/// limit the output goes back as it came; over it the summary may describe the file, but the
/// saved full response is the output byte for byte.
#[test]
fn a_short_base64_value_is_left_as_written_and_the_saved_output_is_the_output() {
    let d = tempfile::tempdir().unwrap();
    // A DER certificate's first bytes: 60 bytes, 80 chars of base64.
    let cert = "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UEChMJ";
    let small = format!("{{\"data\": {{\"tls.crt\": \"{cert}\"}}}}\n");
    let r = done(prepare(req(d.path(), small.clone()), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.text, small);
    assert!(r.saved.is_empty());
    let mut log = big_log(3_000);
    log.insert_str(log.len() / 2, &format!("loaded \"{cert}\" accepted\n"));
    let mut rq = req(d.path(), log.clone());
    rq.limits.token_limit = 1_000;
    let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert_eq!(
        std::fs::read(d.path().join(&j.full().path)).unwrap(),
        log.as_bytes()
    );
}

#[test]
fn the_callers_frame_is_left_out_of_the_cap() {
    // A hook's sentence and a relocated pointer are printed around the result: the job
    // counts them, and the sections' cap is that much smaller.
    let d = tempfile::tempdir().unwrap();
    let frame = "not an error: toolsum saved this long tool output and replaced it with the \
                 summary below.\n\n/home/someone/projects/app/.toolsum/0f3c2a9e-session";
    let mut rq = req(d.path(), big_log(3_000));
    rq.frame = frame.to_string();
    let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert_eq!(j.frame_tokens, QuarterCounter.count(frame));
    let plain = job(prepare(req(d.path(), big_log(3_000)), Some(&QuarterCounter)).unwrap());
    assert_eq!(plain.frame_tokens, 0);
    let cap = |frame_tokens| crate::guard::summarize::output_cap(20_000, frame_tokens);
    assert_eq!(cap(40 + j.frame_tokens) + j.frame_tokens, cap(40));
}
