//! Unit tests of the MCP proxy's helpers.

use super::*;

#[test]
fn a_saved_file_is_found_by_its_bare_name_or_under_the_session_dir() {
    let t = tempfile::tempdir().unwrap();
    let session = t.path().join("s");
    std::fs::create_dir_all(session.join("long_responses")).unwrap();
    let f = session.join("long_responses/1_Bash.txt");
    std::fs::write(&f, "x").unwrap();
    assert_eq!(resolve_saved(Path::new("1_Bash.txt"), &session), f);
    assert_eq!(
        resolve_saved(Path::new("long_responses/1_Bash.txt"), &session),
        f
    );
    assert_eq!(resolve_saved(&f, &session), f);
    // Missing: under the session dir, for the daemon to say so.
    assert_eq!(
        resolve_saved(Path::new("nope.txt"), &session),
        session.join("nope.txt")
    );
}

#[test]
fn a_server_line_with_a_lone_surrogate_or_bad_bytes_is_still_read() {
    // A result whose text was cut between a pair's halves by the server's JSON.stringify.
    let line =
        br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok \ud83d"}]}}"#;
    assert!(serde_json::from_slice::<Value>(line).is_err());
    let v = mended_line(line).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "ok \u{FFFD}");
    let mut raw = br#"{"id":4,"result":{"content":[{"type":"text","text":"caf"#.to_vec();
    raw.extend_from_slice(b"\xe9\"}]}}");
    assert_eq!(
        mended_line(&raw).unwrap()["result"]["content"][0]["text"],
        "caf\u{FFFD}"
    );
    // Not JSON for another reason: passed through as sent.
    assert!(mended_line(b"{\"id\": 5, oops}").is_none());
}

#[test]
fn file_uri_paths_decode() {
    assert_eq!(
        percent_decode("/tmp/a%20b/%C3%BC%25.txt"),
        std::ffi::OsString::from("/tmp/a b/ü%.txt")
    );
    assert_eq!(
        percent_decode("/x%zz%4"),
        std::ffi::OsString::from("/x%zz%4")
    );
}

#[test]
fn a_client_call_with_bad_bytes_is_still_tracked_and_its_intent_taken() {
    let ctx = Ctx {
        state: Mutex::new(State::default()),
        session_dir: std::env::temp_dir(),
        remote: Remote::new(
            crate::config::Config::resolve(crate::config::ConfigLayer::default(), &|_| None),
            false,
        ),
    };
    let mut line = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/tmp/a.txt","_intent":"caf"#.to_vec();
    line.extend_from_slice(b"\xe9 which JDK?\"}}}\n");
    let FromClient::Forward(out) = on_client_line(line, &ctx) else {
        panic!("forwarded");
    };
    let sent: Value = serde_json::from_slice(&out).unwrap();
    assert!(
        sent["params"]["arguments"].get("_intent").is_none(),
        "{sent}"
    );
    assert_eq!(sent["params"]["arguments"]["path"], "/tmp/a.txt");
    let st = ctx.state();
    let call = st.pending[&key(&serde_json::json!(2))]
        .call
        .as_ref()
        .unwrap();
    assert_eq!(call.intent.as_deref(), Some("caf\u{FFFD} which JDK?"));
}
