//! [`super::prepare`] on text that is not plain UTF-8 (legacy encodings, UTF-16, NULs, invalid
//! bytes) and on base64 nested in JSON strings: what the agent gets and what is saved.

use std::path::Path;

use base64::Engine as _;
use encoding_rs::{GBK, SHIFT_JIS};

use super::{prepare, Prepared, SummaryJob};
use crate::backend::TokenCounter;
use crate::guard::{GuardRequest, GuardResponse, Limits, ResultKind};

/// Test counter: one token per 4 bytes, rounded up.
struct QuarterCounter;
impl TokenCounter for QuarterCounter {
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

fn req(dir: &Path, content: impl Into<Vec<u8>>) -> GuardRequest {
    GuardRequest {
        content: content.into(),
        tool: "Bash".into(),
        args: None,
        intent: Some("what failed?".into()),
        session_dir: dir.to_path_buf(),
        limits: Limits::default(),
        keep_binary_inline: false,
        deadline: None,
        source: None,
        frame: String::new(),
    }
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

fn enc(e: &'static encoding_rs::Encoding, s: &str) -> Vec<u8> {
    let (b, _, bad) = e.encode(s);
    assert!(!bad);
    b.into_owned()
}

/// The saved file whose path the text names, read back.
#[track_caller]
fn pointed(d: &Path, r: &GuardResponse) -> Vec<u8> {
    let f = r
        .saved
        .iter()
        .find(|f| {
            r.text
                .contains(&format!("Full response saved to: {} (", f.path))
        })
        .unwrap_or_else(|| panic!("no pointer to a saved file in {:?} / {:?}", r.text, r.saved));
    std::fs::read(d.join(&f.path)).unwrap()
}

const BANNER: &str =
    "Microsoft Windows [版本 10.0.19045.3570]\r\n(c) Microsoft Corporation。保留所有权利。\r\n";

#[test]
fn cp936_banner_passes_through_decoded_with_a_pointer() {
    let d = tempfile::tempdir().unwrap();
    let raw = enc(GBK, BANNER);
    let r = done(prepare(req(d.path(), raw.clone()), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.encoding.as_deref(), Some("GBK"));
    assert!(r.text.starts_with(BANNER), "{}", r.text);
    let last = r.text.lines().last().unwrap();
    assert_eq!(
        last,
        format!(
            "Full response saved to: {} ({} bytes as received; decoded from GBK above)",
            r.saved[0].path,
            raw.len()
        )
    );
    assert_eq!(pointed(d.path(), &r), raw);
    assert_eq!(r.saved[0].media_type, "text/plain; charset=GBK");
    assert!(r.saved[0].path.ends_with(".txt"));
    assert_eq!(r.tokens.output, QuarterCounter.count(&r.text));
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["encoding"], "GBK");
}

#[test]
fn exact_utf8_has_no_encoding_and_saves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let r = done(prepare(req(d.path(), "ok 日本\n"), Some(&QuarterCounter)).unwrap());
    assert_eq!(
        (r.kind, r.encoding.as_deref()),
        (ResultKind::Passthrough, None)
    );
    assert_eq!(r.text, "ok 日本\n");
    assert!(r.saved.is_empty());
    // An old response without the field still reads.
    let mut v = serde_json::to_value(&r).unwrap();
    v.as_object_mut().unwrap().remove("encoding");
    assert_eq!(serde_json::from_value::<GuardResponse>(v).unwrap(), r);
}

#[test]
fn transcript_with_a_few_nuls_is_text() {
    let d = tempfile::tempdir().unwrap();
    let mut raw = b"$ ./probe --raw\nreading header... ok\nflags: ".to_vec();
    raw.extend_from_slice(b"\0\0\x01\0 done\n$ echo $?\n0\n");
    let r = done(prepare(req(d.path(), raw.clone()), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.encoding.as_deref(), Some("UTF-8"));
    assert!(
        r.text
            .starts_with("$ ./probe --raw\nreading header... ok\nflags: ␀␀\u{1}␀ done\n"),
        "{}",
        r.text
    );
    assert!(r.text.contains("; 3 NUL bytes shown as ␀ above)"));
    assert_eq!(pointed(d.path(), &r), raw);
    // Even a 42-byte lossy UTF-8 result (cut off inside its last character) is pointed to.
    let mut cut = "ok: résumé.txt written, 3 warnings 日本"
        .as_bytes()
        .to_vec();
    cut.pop();
    assert_eq!(cut.len(), 42);
    let r = done(prepare(req(d.path(), cut.clone()), None).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.encoding.as_deref(), Some("UTF-8"));
    assert!(
        r.text
            .starts_with("ok: résumé.txt written, 3 warnings 日\u{FFFD}\nFull response saved to: "),
        "{}",
        r.text
    );
    assert_eq!(pointed(d.path(), &r), cut);
}

#[test]
fn utf16_over_the_limit_is_summarized_decoded_and_saved_raw() {
    let d = tempfile::tempdir().unwrap();
    let mut text: String = (0..400)
        .map(|i| format!("Get-Service svc{i}    Running    Automatic\r\n"))
        .collect();
    text.push_str("Get-Service Spooler    Stopped    错误 1053: 服务没有及时响应\r\n");
    let mut raw = vec![0xff, 0xfe];
    raw.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let mut rq = req(d.path(), raw.clone());
    rq.limits.token_limit = 1_000;
    let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert!(j.text.contains("错误 1053: 服务没有及时响应"));
    assert!(!j.text.contains('\0'));
    let saved = j.full().clone();
    assert_eq!(std::fs::read(d.path().join(&saved.path)).unwrap(), raw);
    assert_eq!(saved.media_type, "text/plain; charset=UTF-16LE");
    let r = j.fallback(Some(&QuarterCounter), "model_unavailable: test");
    assert_eq!(r.encoding.as_deref(), Some("UTF-16LE"));
    assert!(
        r.text.contains(&format!(
            "Full response saved to: {} ({} bytes as received; decoded from UTF-16LE above)\n{}",
            saved.path,
            crate::guard::save::thousands(raw.len() as u64),
            crate::guard::response::READ_HINT
        )),
        "{}",
        r.text
    );
    assert_eq!(pointed(d.path(), &r), raw);
    assert_eq!(
        r.text.matches(&saved.path).count(),
        1,
        "one pointer to one file: {}",
        r.text
    );
}

#[test]
fn shift_jis_log_over_the_limit_reads_as_text() {
    let d = tempfile::tempdir().unwrap();
    let mut s: String = (0..300)
        .map(|i| {
            format!(
                "2024-05-01 10:00:{:02} 情報: ジョブ {i} を処理しました\n",
                i % 60
            )
        })
        .collect();
    s.push_str("2024-05-01 10:05:00 エラー: 接続がタイムアウトしました (host=db01)\n");
    let raw = enc(SHIFT_JIS, &s);
    let mut rq = req(d.path(), raw.clone());
    rq.limits.token_limit = 500;
    let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert!(j
        .text
        .contains("エラー: 接続がタイムアウトしました (host=db01)"));
    let r = j.fallback(Some(&QuarterCounter), "model_unavailable: test");
    assert_eq!(r.encoding.as_deref(), Some("Shift_JIS"));
    assert!(r.text.contains("host=db01"), "{}", r.text);
    assert_eq!(pointed(d.path(), &r), raw);
}

#[test]
fn real_binaries_stay_binary() {
    let d = tempfile::tempdir().unwrap();
    for content in [
        crate::guard::binary::tests::png(6, 6),
        crate::guard::binary::tests::wav(300),
        b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0".repeat(8),
    ] {
        let r = done(prepare(req(d.path(), content.clone()), Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Binary, "{}", r.text);
        assert_eq!(r.encoding, None);
        assert_eq!(
            std::fs::read(d.path().join(&r.saved[0].path)).unwrap(),
            content
        );
    }
}

#[test]
fn keep_binary_inline_points_to_the_raw_bytes() {
    let d = tempfile::tempdir().unwrap();
    let content: Vec<u8> = (0..300u32).map(|i| (i * 7 % 256) as u8).collect();
    let mut rq = req(d.path(), content.clone());
    rq.keep_binary_inline = true;
    let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert_eq!(r.encoding.as_deref(), Some("UTF-8"));
    assert_eq!(pointed(d.path(), &r), content);
}

#[test]
fn wav_in_json_in_an_mcp_text_block_is_saved_decoded() {
    let d = tempfile::tempdir().unwrap();
    let w = crate::guard::binary::tests::wav(2_000);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&w);
    let inner = serde_json::json!({"audio": b64, "voice": "alloy", "text": "Build finished."});
    let mcp = serde_json::json!({"content": [{"type": "text", "text": inner.to_string()}]});
    let r = done(prepare(req(d.path(), mcp.to_string()), Some(&QuarterCounter)).unwrap());
    assert_eq!(r.kind, ResultKind::Binary);
    assert!(!r.text.contains("UklGR"), "{}", r.text);
    assert!(r
        .text
        .contains("audio/x-wav, 4,044 bytes decoded from base64"));
    assert!(r.text.contains("Build finished."));
    let wav = r.saved.iter().find(|f| f.path.ends_with(".wav")).unwrap();
    assert_eq!(std::fs::read(d.path().join(&wav.path)).unwrap(), w);
    assert!(r.text.contains(&wav.path));
}

mod nothing_lost {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any bytes, under or over the token limit: the result is the input byte-identical
        /// (pass-through, nothing saved), or a saved file that the text names holds the input's
        /// exact bytes. Never a panic.
        #[test]
        fn arbitrary_bytes(
            bytes in prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..600),
                proptest::collection::vec(prop_oneof![Just(0u8), 0x20u8..0x7f, 0x80u8..=0xff], 0..600),
                "[a-z \n]{0,200}(错误|文件|é|\u{0}){0,20}[a-z \n]{0,100}".prop_map(|s| s.into_bytes()),
                "[a-z \n]{0,200}(错误|文件|失败|路径){1,20}".prop_map(|s| GBK.encode(&s).0.into_owned()),
            ],
            limit in prop_oneof![Just(15_000usize), 10usize..200],
        ) {
            let d = tempfile::tempdir().unwrap();
            let mut rq = req(d.path(), bytes.clone());
            rq.limits.token_limit = limit;
            let r = match prepare(rq, Some(&QuarterCounter)).unwrap() {
                Prepared::Done(r) => r,
                Prepared::NeedsModel(j) => j.fallback(Some(&QuarterCounter), "test"),
            };
            if r.kind == ResultKind::Passthrough && r.saved.is_empty() {
                prop_assert_eq!(r.text.as_bytes(), &bytes[..]);
                prop_assert_eq!(r.encoding, None);
            } else {
                let holds = r.saved.iter().any(|f| {
                    r.text.contains(&f.path)
                        && std::fs::read(d.path().join(&f.path)).unwrap() == bytes
                });
                prop_assert!(holds, "{:?} {:?}", r.text, r.saved);
            }
        }
    }
}

#[test]
fn the_callers_copy_is_pointed_to_not_saved_again() {
    let d = tempfile::tempdir().unwrap();
    let raw = enc(GBK, BANNER);
    std::fs::create_dir(d.path().join("long_responses")).unwrap();
    std::fs::write(d.path().join("long_responses/agent.txt"), &raw).unwrap();
    let mut rq = req(d.path(), raw.clone());
    rq.source = Some(crate::guard::SavedFile {
        path: "long_responses/agent.txt".into(),
        bytes: raw.len() as u64,
        media_type: "text/plain".into(),
    });
    let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
    assert!(r.text.ends_with(&format!(
        "Full response saved to: long_responses/agent.txt ({} bytes as received; decoded from GBK above)",
        raw.len()
    )));
    assert_eq!(pointed(d.path(), &r), raw);
    let files = std::fs::read_dir(d.path().join("long_responses"))
        .unwrap()
        .count();
    assert_eq!(files, 1);
}

#[test]
fn asking_a_saved_legacy_output_reads_it_decoded() {
    let d = tempfile::tempdir().unwrap();
    let mut s: String = (0..300)
        .map(|i| format!("2024-05-01 10:00:{:02} 信息 任务 {i} 完成\n", i % 60))
        .collect();
    s.push_str("2024-05-01 10:05:00 错误：磁盘空间不足 (/var/lib/db)\n");
    let raw = enc(GBK, &s);
    let saved = crate::guard::SavedFile {
        path: "long_responses/x_Bash.txt".into(),
        bytes: raw.len() as u64,
        media_type: "text/plain; charset=GBK".into(),
    };
    let ask = |token_limit| crate::guard::ask::AskRequest {
        output: crate::guard::ask::SavedOutput {
            path: d.path().join(&saved.path),
            session_dir: d.path().to_path_buf(),
            saved: saved.clone(),
            tool: "Bash".into(),
            content: raw.clone(),
            owner: (0, 0, 0o600),
        },
        question: "which disk is full?".into(),
        limits: Limits {
            token_limit,
            ..Limits::default()
        },
        deadline: None,
    };
    let j = job(super::prepare_saved(ask(500), Some(&QuarterCounter)));
    assert!(j.text.contains("错误：磁盘空间不足 (/var/lib/db)"));
    let r = j.fallback(Some(&QuarterCounter), "test");
    assert_eq!(r.encoding.as_deref(), Some("GBK"));
    assert!(r
        .text
        .contains(&format!("Full response saved to: {} (", saved.path)));
    let r = done(super::prepare_saved(ask(100_000), Some(&QuarterCounter)));
    assert_eq!(r.kind, ResultKind::Passthrough);
    assert!(r.text.starts_with(&s), "{}", &r.text[..200]);
    assert!(r.text.ends_with(&format!(
        "Full response saved to: {} ({} bytes as received; decoded from GBK above)",
        saved.path,
        crate::guard::save::thousands(raw.len() as u64)
    )));
}
