//! `toolsum install` / `uninstall` on a temp HOME with existing configs, and the OpenCode plugin
//! type-checked with `tsc` against `@opencode-ai/plugin` and run under node against the real
//! binary and daemon (issue 18).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::hooks::{corpus, env, open_from, pointer, start_daemon};
use crate::util;

#[test]
fn install_twice_on_a_home_with_existing_configs() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let claude = h.join(".claude/settings.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    let original = "{\n  // my settings\n  \"model\": \"opus\",\n  \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n  \"hooks\": {\n    \"PostToolUse\": [{\"matcher\": \"Edit\", \"hooks\": [{\"type\": \"command\", \"command\": \"prettier --write\"}]}]\n  }\n}\n";
    std::fs::write(&claude, original).unwrap();
    let gemini = h.join(".gemini/settings.json");
    std::fs::create_dir_all(gemini.parent().unwrap()).unwrap();
    std::fs::write(&gemini, "{\"theme\": \"GitHub\", \"hooks\": {\"BeforeTool\": [{\"matcher\": \"write_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"./check.sh\"}]}]}}\n").unwrap();
    let cursor = h.join(".cursor/hooks.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(
        &cursor,
        "{\"version\": 1, \"hooks\": {\"stop\": [{\"command\": \"./audit.sh\"}]}}\n",
    )
    .unwrap();

    let run = |args: &[&str]| -> String {
        let out = Command::new(util::bin())
            .args(args)
            .env("HOME", h)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .current_dir(h)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let ours = |v: &Value, agent: &str| -> usize {
        let s = v.to_string();
        s.matches(&format!("hook {agent}\"")).count()
    };
    let read = |p: &Path| -> Value {
        jsonc_parser::parse_to_serde_value::<Option<Value>>(
            &std::fs::read_to_string(p).unwrap(),
            &Default::default(),
        )
        .unwrap()
        .unwrap()
    };
    let bak = |p: &Path| PathBuf::from(format!("{}.toolsum.bak", p.display()));
    for agent in ["claude-code", "codex", "gemini", "cursor", "opencode"] {
        let first = run(&["install", agent, "--user"]);
        assert!(first.contains(agent), "{first}");
        let second = run(&["install", agent, "--user"]);
        assert!(second.contains("nothing changed"), "{agent}: {second}");
    }
    // Claude Code: one hook entry, the others kept, comments kept, the backup is the original.
    let v = read(&claude);
    assert_eq!(ours(&v, "claude-code"), 1, "{v}");
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls:*)");
    let groups = v["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["hooks"][0]["command"], "prettier --write");
    assert_eq!(groups[1]["matcher"], "*");
    assert_eq!(groups[1]["hooks"][0]["type"], "command");
    assert!(std::fs::read_to_string(&claude)
        .unwrap()
        .contains("// my settings"));
    assert_eq!(std::fs::read_to_string(bak(&claude)).unwrap(), original);
    let cmd = groups[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(cmd.ends_with(" hook claude-code"), "{cmd}");
    assert!(
        Path::new(cmd.trim_end_matches(" hook claude-code")).is_file(),
        "{cmd}"
    );
    // Codex: a new hooks.json, no backup needed.
    let codex = h.join(".codex/hooks.json");
    let v = read(&codex);
    assert_eq!(ours(&v, "codex"), 1, "{v}");
    assert_eq!(v["hooks"]["PostToolUse"][0]["hooks"][0]["type"], "command");
    assert!(!bak(&codex).exists());
    // Gemini: AfterTool added beside BeforeTool.
    let v = read(&gemini);
    assert_eq!(ours(&v, "gemini"), 1);
    assert_eq!(v["theme"], "GitHub");
    assert_eq!(
        v["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        "./check.sh"
    );
    assert_eq!(v["hooks"]["AfterTool"][0]["hooks"][0]["timeout"], 150_000);
    assert!(bak(&gemini).exists());
    // Cursor: afterMCPExecution beside stop, version kept.
    let v = read(&cursor);
    assert_eq!(ours(&v, "cursor"), 1);
    assert_eq!(v["version"], 1);
    assert_eq!(v["hooks"]["stop"][0]["command"], "./audit.sh");
    assert!(bak(&cursor).exists());
    // OpenCode: the plugin file with the binary filled in.
    let plugin = std::fs::read_to_string(h.join(".config/opencode/plugins/toolsum.ts")).unwrap();
    assert!(!plugin.contains("__TOOLSUM_BIN__"));
    assert!(plugin.contains("\"tool.execute.after\""));

    // Uninstall: toolsum's entries gone, everything else as it was.
    for agent in ["claude-code", "codex", "gemini", "cursor", "opencode"] {
        let out = run(&["uninstall", agent, "--user"]);
        assert!(out.contains("removed"), "{agent}: {out}");
    }
    let before: Value =
        jsonc_parser::parse_to_serde_value::<Option<Value>>(original, &Default::default())
            .unwrap()
            .unwrap();
    assert_eq!(read(&claude), before);
    assert!(std::fs::read_to_string(&claude)
        .unwrap()
        .contains("// my settings"));
    assert_eq!(ours(&read(&gemini), "gemini"), 0);
    // Codex's file held only toolsum's hook: no empty `"hooks": {}` is left.
    assert_eq!(read(&codex), json!({}));
    assert_eq!(read(&cursor)["hooks"]["stop"][0]["command"], "./audit.sh");
    assert!(!h.join(".config/opencode/plugins/toolsum.ts").exists());
}

#[test]
fn opencode_plugin_typechecks_and_runs_under_node() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/opencode");
    assert!(
        dir.join("node_modules/@opencode-ai/plugin").is_dir(),
        "the plugin's types are missing: run `npm ci --prefix integrations/opencode` (scripts/test.sh does)"
    );
    let tsc = dir.join("node_modules/.bin/tsc");
    let out = Command::new(&tsc)
        .arg("--noEmit")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tsc: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let e = env();
    let _d = start_daemon(
        &e.socket,
        &["--model-ms", "20000"],
        &[("TOOLSUM_MAX_NEW_TOKENS", "16")],
    );
    let build = e.root.join("plugin");
    let out = Command::new(&tsc)
        .arg("--outDir")
        .arg(&build)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tsc build: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let log = corpus("ci_05.log");
    let cases = json!([
        {"input": {"tool": "bash", "sessionID": "ses_01J9ZK3Q", "callID": "call_1", "args": {"command": "mvn verify", "description": "Run the build"}},
         "output": {"title": "mvn verify", "output": log, "metadata": {}}},
        {"input": {"tool": "bash", "sessionID": "ses_01J9ZK3Q", "callID": "call_2", "args": {"command": "pwd"}},
         "output": {"title": "pwd", "output": "/home/me/proj\n", "metadata": {}}}
    ]);
    let cases_path = e.root.join("cases.json");
    std::fs::write(&cases_path, cases.to_string()).unwrap();
    let out = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks/opencode-driver.mjs"))
        .arg(build.join("toolsum.js"))
        .arg(&cases_path)
        .arg(&e.project)
        .env("TOOLSUM_BIN", util::bin())
        .env("TOOLSUM_SOCKET", &e.socket)
        .env("TOOLSUM_MODEL", util::model_path("tiny"))
        .env("XDG_STATE_HOME", &e.state)
        .env_remove("TOOLSUM_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = after[0]["output"].as_str().unwrap();
    assert!(text.len() < log.len() / 20, "{text}");
    assert_eq!(open_from(&e.project, &pointer(text)), log.as_bytes());
    assert_eq!(after[1]["output"], "/home/me/proj\n", "small results stay");
    assert_eq!(after[0]["title"], "mvn verify");
}
