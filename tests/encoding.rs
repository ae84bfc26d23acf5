//! Text in legacy encodings and with NULs through the real daemon (tier 3: the real binary and
//! the tiny model): the agent reads it decoded, and the pointer opens the raw bytes.

use std::path::Path;

use toolsum::guard::GuardResponse;

use crate::daemon::start_daemon;
use crate::util;

/// `toolsum guard --json` against `socket`; the parsed response.
fn guard(socket: &Path, session: &Path, input: &[u8], extra: &[&str]) -> GuardResponse {
    let out = util::run_guard(socket, session, "Bash", input.to_vec(), extra);
    assert!(
        out.status.success(),
        "guard failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The bytes of the file that the result's raw-bytes pointer line (`Full response saved to:
/// PATH (N bytes as received; … above)`) names, opened as an agent would: an absolute path,
/// or one relative to its cwd.
#[track_caller]
fn pointed(session: &Path, r: &GuardResponse) -> Vec<u8> {
    let line = r
        .text
        .lines()
        .find(|l| l.starts_with("Full response saved to: ") && l.contains(" bytes as received; "))
        .unwrap_or_else(|| panic!("no pointer line in {:?}", r.text));
    let path = line
        .strip_prefix("Full response saved to: ")
        .and_then(|rest| rest.rsplit_once(" ("))
        .unwrap()
        .0;
    let p = Path::new(path);
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else if session.join(p).exists() {
        session.join(p)
    } else {
        std::env::current_dir().unwrap().join(p)
    };
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

fn gbk(s: &str) -> Vec<u8> {
    let (b, _, bad) = encoding_rs::GBK.encode(s);
    assert!(!bad);
    b.into_owned()
}

#[test]
fn legacy_encoded_output_through_the_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("run/toolsum.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let _d = start_daemon(&socket, &[("TOOLSUM_MAX_NEW_TOKENS", "48")]);

    // A CP936 log over the token limit: summarized from the decoded text, raw bytes saved.
    let mut log: String = (0..400)
        .map(|i| {
            format!(
                "2024-05-01 10:{:02}:{:02} 信息 工作进程 {i} 处理批次成功\r\n",
                i / 60,
                i % 60
            )
        })
        .collect();
    log.push_str(
        "2024-05-01 10:07:00 ERROR 错误：数据库连接失败，用户 admin 拒绝访问 (code=1045)\r\n",
    );
    log.push_str("进程已退出，返回代码 1\r\n");
    let raw = gbk(&log);
    assert!(std::str::from_utf8(&raw).is_err());
    let r = guard(
        &socket,
        &session,
        &raw,
        &["--token-limit", "2000", "--model-ms", "50000"],
    );
    assert!(
        matches!(
            serde_json::to_value(r.kind).unwrap().as_str(),
            Some("summary" | "preview")
        ),
        "{r:?}"
    );
    assert!(
        r.reason.is_none()
            || !r
                .reason
                .as_deref()
                .unwrap()
                .starts_with("daemon_unavailable")
    );
    assert_eq!(r.encoding.as_deref(), Some("GBK"), "{r:?}");
    assert!(r.text.contains("数据库连接失败"), "{}", r.text);
    assert!(!r.text.contains('\u{FFFD}'), "{}", r.text);
    assert!(r
        .text
        .contains(" bytes as received; decoded from GBK above)"));
    assert_eq!(pointed(&session, &r), raw);

    // The 85-byte console banner passes through decoded, with its pointer.
    let banner =
        "Microsoft Windows [版本 10.0.19045.3570]\r\n(c) Microsoft Corporation。保留所有权利。\r\n";
    let raw = gbk(banner);
    let r = guard(&socket, &session, &raw, &[]);
    assert_eq!(serde_json::to_value(r.kind).unwrap(), "passthrough");
    assert!(r.reason.is_none(), "{:?}", r.reason);
    assert!(r.text.starts_with(banner), "{}", r.text);
    assert_eq!(pointed(&session, &r), raw);

    // A shell transcript with a few NULs is shown, NULs marked.
    let raw = b"$ ./dump --id 7\nid=7 name=alpha\0\0 state=ok\n$ echo $?\n0\n".to_vec();
    let r = guard(&socket, &session, &raw, &[]);
    assert_eq!(serde_json::to_value(r.kind).unwrap(), "passthrough");
    assert!(r.text.contains("name=alpha␀␀ state=ok"), "{}", r.text);
    assert_eq!(r.encoding.as_deref(), Some("UTF-8"));
    assert_eq!(pointed(&session, &r), raw);
}
