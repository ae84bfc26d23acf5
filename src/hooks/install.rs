//! `toolsum install <agent> [--project|--user]` and `toolsum uninstall <agent>`: write, merge
//! or remove toolsum's hook in the agent's own configuration.
//!
//! | agent | file (`--user` / `--project`) | entry |
//! |---|---|---|
//! | claude-code | `~/.claude/settings.json` / `.claude/settings.json` | `hooks.PostToolUse[]`: `{"matcher":"*","hooks":[{"type":"command","command":…,"timeout":150}]}` |
//! | codex | `$CODEX_HOME/hooks.json` (`~/.codex/hooks.json`) / `.codex/hooks.json` | `hooks.PostToolUse[]`: `{"hooks":[{"type":"command","command":…}]}` |
//! | gemini | `~/.gemini/settings.json` / `.gemini/settings.json` | `hooks.AfterTool[]`: `{"matcher":".*","hooks":[{"name":"toolsum","type":"command","command":…,"timeout":150000}]}` |
//! | cursor | `~/.cursor/hooks.json` / `.cursor/hooks.json` | `version: 1`, `hooks.afterMCPExecution[]`: `{"command":…}` |
//! | opencode | `~/.config/opencode/plugins/toolsum.ts` / `.opencode/plugins/toolsum.ts` | the plugin file |
//!
//! The command is this binary's absolute path with `hook <agent>`. The JSON files are edited
//! as JSONC with `jsonc-parser`'s concrete syntax tree: only the `hooks` value is rewritten;
//! every other key, comment and line stays as it was. Idempotent: a run that finds the entry
//! as it would write it changes nothing; an older toolsum entry (another binary path) is
//! replaced, never duplicated. Before a file is changed, its previous content is kept in
//! `<file>.toolsum.bak` (`.toolsum.bak.1`, `.2`, ... when that exists: the first backup, the
//! file as it was before toolsum, is never replaced). What changed is printed, one line per file.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::{json, Value};

use super::Agent;

/// The OpenCode plugin's source, written by `install opencode` with the binary path filled in.
pub const OPENCODE_PLUGIN: &str = include_str!("../../integrations/opencode/toolsum.ts");

/// The text in [`OPENCODE_PLUGIN`] replaced by the binary's path.
pub const OPENCODE_BIN_PLACEHOLDER: &str = "__TOOLSUM_BIN__";

/// Seconds Claude Code (and, ×1000 in ms, Gemini) let the hook run: a first call may wait for the
/// daemon to load the model (up to `spawn_timeout_ms`, 60 s) before the request's own deadline
/// (`deadline_ms` 60 s + the client's 10 s slack).
pub const HOOK_TIMEOUT_S: u64 = 150;

/// Suffix of the backup written beside a changed file; later backups add `.1`, `.2`, ...
pub const BACKUP_SUFFIX: &str = ".toolsum.bak";

/// Backups of one file kept at most (`.toolsum.bak`, then `.toolsum.bak.1` to `.99`); past
/// them an install that would change the file stops with an error, the file unchanged.
const MAX_BACKUPS: usize = 100;

/// `toolsum install|uninstall <agent> [--project|--user]`.
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    /// The agent to configure.
    #[arg(value_enum)]
    pub agent: Agent,
    /// The current project's configuration (e.g. `.claude/settings.json`).
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// The user's configuration (e.g. `~/.claude/settings.json`; the default).
    #[arg(long)]
    pub user: bool,
    /// The command the hook runs (default: this binary's absolute path).
    #[arg(long, hide = true)]
    pub bin: Option<PathBuf>,
}

/// What an install or uninstall did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file.
    pub path: PathBuf,
    /// Whether it was written.
    pub changed: bool,
    /// The backup of its previous content, when there was one to keep.
    pub backup: Option<PathBuf>,
    /// One line for the user.
    pub message: String,
}

/// The file `agent`'s hook goes in (see the module table).
///
/// # Errors
/// No home directory (for `--user`) or no current directory (for `--project`).
pub fn config_path(agent: Agent, project: bool) -> anyhow::Result<PathBuf> {
    let home = || dirs::home_dir().context("no home directory");
    let root = if project {
        std::env::current_dir()?
    } else {
        home()?
    };
    Ok(match (agent, project) {
        (Agent::ClaudeCode, false) => std::env::var_os("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".claude"))
            .join("settings.json"),
        (Agent::ClaudeCode, true) => root.join(".claude/settings.json"),
        (Agent::Codex, false) => std::env::var_os("CODEX_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".codex"))
            .join("hooks.json"),
        (Agent::Codex, true) => root.join(".codex/hooks.json"),
        (Agent::Gemini, _) => root.join(".gemini/settings.json"),
        (Agent::Cursor, _) => root.join(".cursor/hooks.json"),
        (Agent::Opencode, false) => std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| root.join(".config"))
            .join("opencode/plugins/toolsum.ts"),
        (Agent::Opencode, true) => root.join(".opencode/plugins/toolsum.ts"),
    })
}

/// `path` quoted for a POSIX shell when it needs it.
pub fn shell_quote(path: &str) -> String {
    if !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%".contains(&b))
    {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// The hook command for `agent`: `<bin> hook <agent>`.
pub fn hook_command(bin: &Path, agent: Agent) -> String {
    format!(
        "{} hook {}",
        shell_quote(&bin.to_string_lossy()),
        agent.name()
    )
}

fn is_ours(entry: &Value, agent: Agent) -> bool {
    entry
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains("toolsum") && c.ends_with(&format!(" hook {}", agent.name())))
}

/// The event key and the matcher group toolsum adds for a Claude-style agent.
fn group_for(agent: Agent, command: &str) -> (&'static str, Value) {
    match agent {
        Agent::ClaudeCode => (
            "PostToolUse",
            json!({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}),
        ),
        Agent::Codex => (
            "PostToolUse",
            json!({"hooks": [{"type": "command", "command": command}]}),
        ),
        Agent::Gemini => (
            "AfterTool",
            json!({"matcher": ".*", "hooks": [{"name": "toolsum", "type": "command", "command": command, "timeout": HOOK_TIMEOUT_S * 1000}]}),
        ),
        Agent::Cursor => ("afterMCPExecution", json!({"command": command})),
        Agent::Opencode => unreachable!("OpenCode takes a plugin file"),
    }
}

/// Entries of `list` (matcher groups, or Cursor's flat entries) with toolsum's hooks removed;
/// a group left without hooks is dropped.
fn without_ours(list: &[Value], agent: Agent) -> Vec<Value> {
    let mut out = Vec::new();
    for item in list {
        if agent == Agent::Cursor {
            if !is_ours(item, agent) {
                out.push(item.clone());
            }
            continue;
        }
        match item.get("hooks").and_then(Value::as_array) {
            Some(hooks) if hooks.iter().any(|h| is_ours(h, agent)) => {
                let kept: Vec<Value> = hooks
                    .iter()
                    .filter(|h| !is_ours(h, agent))
                    .cloned()
                    .collect();
                if !kept.is_empty() {
                    let mut g = item.clone();
                    g["hooks"] = Value::Array(kept);
                    out.push(g);
                }
            }
            _ => out.push(item.clone()),
        }
    }
    out
}

/// The `hooks` object after installing (`Some(command)`) or uninstalling (`None`) toolsum.
pub fn merged_hooks(hooks: &Value, agent: Agent, command: Option<&str>) -> Value {
    let mut hooks = match hooks {
        Value::Object(_) => hooks.clone(),
        _ => json!({}),
    };
    let (event, group) = group_for(agent, command.unwrap_or(""));
    let list: Vec<Value> = hooks
        .get(event)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // Already exactly as it would be written: leave the order the user has.
    if let Some(_c) = command {
        let ours: Vec<&Value> = if agent == Agent::Cursor {
            list.iter().filter(|e| is_ours(e, agent)).collect()
        } else {
            list.iter()
                .filter(|g| {
                    g.get("hooks")
                        .and_then(Value::as_array)
                        .is_some_and(|h| h.iter().any(|h| is_ours(h, agent)))
                })
                .collect()
        };
        if ours.len() == 1 && *ours[0] == group {
            return hooks;
        }
    }
    let mut list = without_ours(&list, agent);
    if command.is_some() {
        list.push(group);
    }
    let o = hooks.as_object_mut().expect("an object");
    if list.is_empty() {
        o.remove(event);
    } else {
        o.insert(event.to_string(), Value::Array(list));
    }
    hooks
}

fn to_cst(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(to_cst).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), to_cst(v))).collect())
        }
    }
}

/// Writes `text` to `path` atomically (temp file + rename in the same dir, the old file's
/// mode kept), first copying the old content to `<path>.toolsum.bak` (or the next free
/// `.toolsum.bak.N`) with the old file's mode
/// (a settings file of mode 0600 may hold an API key). A `path` that is a symlink (a dotfiles
/// repository's file linked into place) is written through: its target gets the new text and
/// the link stays.
fn write_with_backup(
    path: &Path,
    old: Option<&str>,
    text: &str,
) -> anyhow::Result<Option<PathBuf>> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let linked = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if linked {
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    } else {
        path.to_path_buf()
    };
    let dir = target.parent().context("a config path has a directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mode = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let backup = match old {
        Some(old) => {
            // Created private, then given the old file's mode: never readable by more users
            // than the file it copies. An earlier backup is never replaced (it may be the
            // only copy of the file as it was before toolsum): the next free name is taken.
            let (b, f) = (0..MAX_BACKUPS)
                .find_map(|k| {
                    let mut b = path.as_os_str().to_owned();
                    b.push(BACKUP_SUFFIX);
                    if k > 0 {
                        b.push(format!(".{k}"));
                    }
                    let b = PathBuf::from(b);
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&b);
                    match f {
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                        f => Some((b, f)),
                    }
                })
                .with_context(|| {
                    format!("{MAX_BACKUPS} backups of {} already exist", path.display())
                })?;
            let mut f = f.with_context(|| format!("writing {}", b.display()))?;
            f.write_all(old.as_bytes())
                .with_context(|| format!("writing {}", b.display()))?;
            if let Some(m) = &mode {
                let _ = std::fs::set_permissions(&b, m.clone());
            }
            Some(b)
        }
        None => None,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".toolsum-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())?;
    if let Some(m) = mode {
        let _ = std::fs::set_permissions(tmp.path(), m);
    }
    tmp.persist(&target)
        .with_context(|| format!("writing {}", target.display()))?;
    Ok(backup)
}

/// Installs (`install = true`) or removes toolsum's hook for `agent` in `path` (`project`: a
/// project's file, which some agents ask about before running).
///
/// # Errors
/// The file cannot be read or written, or is not JSON/JSONC (nothing is written then).
pub fn apply(
    agent: Agent,
    path: &Path,
    bin: &Path,
    install: bool,
    project: bool,
) -> anyhow::Result<Change> {
    let old = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let done = |changed: bool, backup: Option<PathBuf>, message: String| Change {
        path: path.to_path_buf(),
        changed,
        backup,
        message,
    };
    let command = hook_command(bin, agent);
    if agent == Agent::Opencode {
        let text = OPENCODE_PLUGIN.replace(OPENCODE_BIN_PLACEHOLDER, &bin.to_string_lossy());
        return Ok(match (install, old.as_deref()) {
            (true, Some(t)) if t == text => done(
                false,
                None,
                format!(
                    "opencode: the plugin {} is up to date; nothing changed",
                    path.display()
                ),
            ),
            (true, old) => {
                let b = write_with_backup(path, old, &text)?;
                done(true, b, format!("opencode: wrote the plugin {} (tool.execute.after runs `{}`); restart OpenCode to load it", path.display(), hook_command(bin, agent)))
            }
            (false, Some(t)) if t.contains(OPENCODE_SIGNATURE) => {
                let mut b = path.as_os_str().to_owned();
                b.push(BACKUP_SUFFIX);
                let b = PathBuf::from(b);
                std::fs::rename(path, &b)
                    .with_context(|| format!("moving {} aside", path.display()))?;
                done(
                    true,
                    Some(b),
                    format!("opencode: removed the plugin {}", path.display()),
                )
            }
            (false, _) => done(
                false,
                None,
                format!(
                    "opencode: no toolsum plugin at {}; nothing changed",
                    path.display()
                ),
            ),
        });
    }
    let text = old.clone().unwrap_or_else(|| "{}\n".to_string());
    let opts = ParseOptions::default();
    let value = jsonc_parser::parse_to_serde_value::<Option<Value>>(&text, &opts)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))?
        .unwrap_or(json!({}));
    if !value.is_object() {
        bail!("{} is not a JSON object; not touching it", path.display());
    }
    let hooks = value.get("hooks").cloned().unwrap_or(Value::Null);
    let new_hooks = merged_hooks(&hooks, agent, install.then_some(command.as_str()));
    let needs_version = agent == Agent::Cursor && install && value.get("version").is_none();
    let (event, _) = group_for(agent, "");
    if new_hooks == hooks || (hooks.is_null() && !install) {
        let what = if install {
            "already installed in"
        } else {
            "not installed in"
        };
        return Ok(done(
            false,
            None,
            format!(
                "{}: {what} {}; nothing changed",
                agent.name(),
                path.display()
            ),
        ));
    }
    let root = CstRootNode::parse(&text, &opts)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))?;
    let obj = root.object_value_or_set();
    if needs_version {
        obj.insert(0, "version", CstInputValue::Number("1".into()));
    }
    match obj.get("hooks") {
        // Uninstalled, and nothing else hooked: no empty `"hooks": {}` left behind.
        Some(p) if !install && new_hooks.as_object().is_some_and(|o| o.is_empty()) => p.remove(),
        Some(p) => p.set_value(to_cst(&new_hooks)),
        None => {
            obj.append("hooks", to_cst(&new_hooks));
        }
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let backup = write_with_backup(path, old.as_deref(), &out)?;
    let verb = if install {
        format!("added the {event} hook `{command}` to")
    } else {
        format!("removed the {event} hook from")
    };
    let note = match (agent, install) {
        (Agent::Codex, true) => "; Codex runs new hooks once you trust them: open /hooks in Codex",
        (Agent::Gemini, true) if project => "; Gemini CLI asks before running a new project hook",
        (Agent::Cursor, true) => "; Cursor can replace MCP tool results only",
        _ => "",
    };
    let b = backup
        .as_ref()
        .map(|b| format!(" (backup: {})", b.display()))
        .unwrap_or_default();
    Ok(done(
        true,
        backup,
        format!("{}: {verb} {}{b}{note}", agent.name(), path.display()),
    ))
}

/// A line that marks the OpenCode plugin as toolsum's (for `uninstall`).
pub const OPENCODE_SIGNATURE: &str = "toolsum OpenCode plugin";

/// Runs `install` (`install = true`) or `uninstall`, printing what changed.
///
/// # Errors
/// As [`config_path`] and [`apply`].
pub fn install_cmd(a: InstallArgs, install: bool) -> anyhow::Result<()> {
    let path = config_path(a.agent, a.project)?;
    let bin = match a.bin {
        Some(b) => b,
        None => std::env::current_exe()
            .context("locating this binary")?
            .canonicalize()
            .context("locating this binary")?,
    };
    let change = apply(a.agent, &path, &bin, install, a.project)?;
    crate::daemon::cli::out_line(&change.message)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_idempotent_and_keeps_other_hooks() {
        let other = json!({"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier"}]}], "Stop": []});
        let bin = Path::new("/opt/toolsum/bin/toolsum");
        let cmd = hook_command(bin, Agent::ClaudeCode);
        let once = merged_hooks(&other, Agent::ClaudeCode, Some(&cmd));
        let twice = merged_hooks(&once, Agent::ClaudeCode, Some(&cmd));
        assert_eq!(once, twice);
        assert_eq!(once["PostToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(once["Stop"], json!([]));
        // A moved binary: replaced, not added.
        let moved = merged_hooks(
            &once,
            Agent::ClaudeCode,
            Some("/new/toolsum hook claude-code"),
        );
        assert_eq!(moved["PostToolUse"].as_array().unwrap().len(), 2);
        assert!(moved.to_string().contains("/new/toolsum"));
        assert!(!moved.to_string().contains("/opt/toolsum"));
        let gone = merged_hooks(&once, Agent::ClaudeCode, None);
        assert_eq!(gone, other);
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }

    #[test]
    fn the_backup_keeps_the_files_mode_and_a_linked_file_stays_linked() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        // A private settings file (it holds an API key), linked from a dotfiles repository.
        let real = d.path().join("dotfiles/settings.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, r#"{"apiKey": "k"}"#).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = d.path().join("home/.gemini/settings.json");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let bin = Path::new("/opt/toolsum/bin/toolsum");
        let c = apply(Agent::Gemini, &link, bin, true, false).unwrap();
        assert!(c.changed);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let backup = c.backup.unwrap();
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            r#"{"apiKey": "k"}"#
        );
        assert_eq!(mode(&backup), 0o600);
        // Written through the link: the dotfiles copy has the hook, the link is still one.
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let now = std::fs::read_to_string(&real).unwrap();
        assert!(now.contains("toolsum") && now.contains("apiKey"), "{now}");
        assert_eq!(mode(&real), 0o600);
    }

    /// Install, uninstall, install again: every change keeps a backup, and the first one,
    /// the file as it was before toolsum, is still there.
    #[test]
    fn a_later_change_never_replaces_the_first_backup() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("settings.json");
        let original = r#"{"theme": "dark"}"#;
        std::fs::write(&path, original).unwrap();
        let bin = Path::new("/opt/toolsum/bin/toolsum");
        let first = apply(Agent::ClaudeCode, &path, bin, true, false).unwrap();
        let removed = apply(Agent::ClaudeCode, &path, bin, false, false).unwrap();
        let again = apply(Agent::ClaudeCode, &path, bin, true, false).unwrap();
        let backups: Vec<PathBuf> = [first, removed, again]
            .into_iter()
            .map(|c| c.backup.expect("each run changed the file"))
            .collect();
        assert_eq!(backups[0], d.path().join("settings.json.toolsum.bak"));
        assert_eq!(backups[2], d.path().join("settings.json.toolsum.bak.2"));
        assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), original);
        assert!(std::fs::read_to_string(&backups[1])
            .unwrap()
            .contains("hook claude-code"));
    }
}
