#!/usr/bin/env bash
# Load test of the daemon (issue 7): tiny model, temp socket, N = 1, 4, 16, 64 concurrent
# clients with a corpus mix; prints a markdown table. Knobs: LOAD_LEVELS (e.g. "1,4"),
# LOAD_REQUESTS per level (default 300), LOAD_SECS of issuing per level (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh tiny
cargo bench --bench load "$@"
