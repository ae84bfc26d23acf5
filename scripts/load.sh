#!/usr/bin/env bash
# Load test of the daemon (issues 7, 16): tiny model, temp socket, N = 1, 4, 16, 64 concurrent
# clients with a corpus mix, against the local engine and against the remote backend (a
# llama-server on 127.0.0.1 serving the same model, 4 slots); prints one markdown table.
# Knobs: LOAD_LEVELS (e.g. "1,4"), LOAD_REQUESTS per level (default 300), LOAD_SECS of issuing
# per level (default 20), LOAD_BACKENDS (default "local,openai"; `local:N` runs the local engine
# with --local-parallel N, e.g. "local:1,local:4"), LOAD_REMOTE_SLOTS (4),
# LOAD_REMOTE_THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh tiny
if [[ "${LOAD_BACKENDS:-local,openai}" == *openai* && -z "${TOOLSUM_LLAMA_SERVER:-}" ]]; then
  scripts/build-llama-server.sh >/dev/null
fi
cargo bench --bench load "$@"
