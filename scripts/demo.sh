#!/usr/bin/env bash
# The main job on a real tool output shipped in the repo: a 219 KB GitHub Actions log of a failing
# Maven build (tests/corpus/ci_05.log; licence in tests/corpus/LICENSES.txt). Builds toolsum,
# fetches the default model (small: Qwen2.5-Coder-0.5B-Instruct, cached and sha256-verified),
# starts a daemon on a private socket, guards the output as an agent's hook would, prints the
# synthetic tool result, checks that the saved file is byte-identical to the input, and stops the
# daemon. Usage: scripts/demo.sh [FILE [TOOL [INTENT]]]
set -euo pipefail
cd "$(dirname "$0")/.."
input=${1:-tests/corpus/ci_05.log}
tool=${2:-Bash}
intent=${3:-Why did this CI run fail? Name the failing step, file and error.}
scripts/fetch-models.sh small >&2
# The release binary (a no-op when it is up to date; about 5 to 8 minutes on a fresh 2-core box).
cargo build --release --quiet >&2
bin=${CARGO_TARGET_DIR:-target}/release/toolsum
session=$(mktemp -d "${TMPDIR:-/tmp}/toolsum-demo.XXXXXX")
sock="$session/run/toolsum.sock"
trap '"$bin" stop --socket "$sock" >/dev/null 2>&1 || true' EXIT
echo "== toolsum guard --tool $tool $input ($(wc -c <"$input") bytes), session dir $session" >&2
start=$(date +%s.%N)
out=$("$bin" guard --tool "$tool" --args '{"command":"gh run view --log-failed"}' --intent "$intent" \
  --session-dir "$session" --socket "$sock" "$input")
end=$(date +%s.%N)
printf '%s\n' "$out"
saved=$(printf '%s\n' "$out" | sed -n 's/^Full response saved to: \([^ ]*\) .*/\1/p' | head -n1)
[ -n "$saved" ] || { echo "demo: no saved-file pointer in the result" >&2; exit 1; }
# The pointer opens from the current directory (relative inside it, else absolute).
cmp "$input" "$saved"
echo "== saved file $saved is byte-identical to the input; $(awk "BEGIN{printf \"%.1f\", $end-$start}") s including the daemon's start" >&2
