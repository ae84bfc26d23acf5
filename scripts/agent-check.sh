#!/usr/bin/env bash
# What the model really receives after toolsum's hook, checked with the agents themselves:
# Claude Code (npm @anthropic-ai/claude-code) and Gemini CLI (npm @google/gemini-cli) run one turn
# against a scripted model endpoint on 127.0.0.1 (scripts/agent-check/*_endpoint.py: it asks for
# `cat build.log` on a 219 KB CI log, then records the tool result it is sent). The hooks are
# installed with `toolsum install` into a temp HOME; the real daemon guards the log. Prints, per
# agent, the bytes the model got and its text. Not part of scripts/test.sh: it downloads the
# agents (~170 MB for Claude Code's native binary) into $XDG_CACHE_HOME/toolsum/agents.
# Usage: scripts/agent-check.sh [CLAUDE_CODE_VERSION [GEMINI_CLI_VERSION]]
set -euo pipefail
cd "$(dirname "$0")/.."
cc_version=${1:-2.1.328}
gm_version=${2:-0.61.0}
scripts/fetch-models.sh small >&2
bin=$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/toolsum
cache=${XDG_CACHE_HOME:-$HOME/.cache}
agents="$cache/toolsum/agents"
mkdir -p "$agents"
fetch() { # fetch NPM_SPEC DIR: unpack the package once
  [ -d "$agents/$2" ] && return
  (cd "$agents" && npm pack --silent "$1" >/dev/null && mkdir -p "$2" && tar xzf ./*.tgz -C "$2" && rm -f ./*.tgz)
}
fetch "@anthropic-ai/claude-code-linux-x64@$cc_version" "claude-code-$cc_version"
fetch "@google/gemini-cli@$gm_version" "gemini-cli-$gm_version"
work=$(mktemp -d "${TMPDIR:-/tmp}/toolsum-agent-check.XXXXXX")
pids=()
cleanup() {
  XDG_RUNTIME_DIR="$work/run" "$bin" stop >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/run" "$work/home" "$work/proj"
chmod 700 "$work/run"
cp tests/corpus/ci_05.log "$work/proj/build.log"
export HOME="$work/home" XDG_RUNTIME_DIR="$work/run" XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$cache"
unset TOOLSUM_CONFIG
python3 scripts/agent-check/anthropic_endpoint.py 18765 "$work/claude.jsonl" & pids+=($!)
python3 scripts/agent-check/gemini_endpoint.py 18767 "$work/gemini.jsonl" & pids+=($!)
sleep 1
(cd "$work/proj" && "$bin" install claude-code --project && "$bin" install gemini)
python3 - "$HOME/.gemini/settings.json" <<'PY'
import json, sys
p = sys.argv[1]; v = json.load(open(p))
v["security"] = {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}
json.dump(v, open(p, "w"), indent=2)
PY
echo "== Claude Code $cc_version" >&2
(cd "$work/proj" && ANTHROPIC_BASE_URL=http://127.0.0.1:18765 ANTHROPIC_API_KEY=sk-ant-local \
  DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
  timeout 300 "$agents/claude-code-$cc_version/package/claude" -p "Show me the build log" \
  --allowedTools Bash --setting-sources project --model claude-sonnet-4-5 \
  --debug-file "$work/claude-debug.log" >/dev/null)
grep -h "replaced tool output\|does not match" "$work/claude-debug.log" | sed 's/^/   claude debug: /' >&2 || true
echo "== Gemini CLI $gm_version" >&2
(cd "$work/proj" && GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:18767 GEMINI_API_KEY=local \
  timeout 300 node "$agents/gemini-cli-$gm_version/package/bundle/gemini.js" -p "Show me the build log" \
  --approval-mode yolo -m gemini-2.5-flash >/dev/null 2>"$work/gemini.err")
python3 - "$work/claude.jsonl" "$work/gemini.jsonl" <<'PY'
import json, sys
def last(path):
    return json.loads(open(path).read().splitlines()[-1])["body"]
def show(name, text):
    print(f"== {name}: the model was sent {len(text.encode()):,} bytes for the 219,304-byte log")
    print(text)
body = last(sys.argv[1])
for m in body["messages"]:
    for c in (m["content"] if isinstance(m.get("content"), list) else []):
        if c.get("type") == "tool_result":
            t = c["content"] if isinstance(c["content"], str) else "\n".join(x.get("text", "") for x in c["content"])
            show("Claude Code tool_result", t)
body = last(sys.argv[2])
for c in body["contents"]:
    for p in c.get("parts", []):
        if "functionResponse" in p:
            r = p["functionResponse"]["response"]
            show("Gemini CLI functionResponse (" + ", ".join(r) + ")", next(iter(r.values())) if len(r) == 1 else json.dumps(r))
PY
