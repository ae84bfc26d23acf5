#!/usr/bin/env bash
# Fidelity + latency benchmark: builds the release binary, then runs `toolsum bench`, which
# starts `toolsum serve` on a private socket and sends every corpus file through it as a client
# would, next to the head and head+tail cuts agent CLIs use today.
#
#   scripts/bench.sh [--corpus DIR] [--model tiny|small] [other `toolsum bench` flags]
#   scripts/bench.sh --dev [--model tiny|small] [flags]
#
# Defaults: --corpus tests/corpus (the repo copy of ../shared/corpus), --model small.
# --dev: also fetch (once; verified by sha256) and run the dev corpus (tests/devcorpus/README.md) in
# the same daemon session: totals for the sets shared, dev and dev-holdout, each beside head and
# head+tail; per-file rows for shared and dev only (holdout files are reported through totals).
# Other flags: --out DIR (bench-out), --files a,b,c, --limit N, --naive N, --deadline-ms N,
# --model-ms N, --token-limit N, --threads N, --no-chart. The table goes to stdout, the totals
# line last; bench.md, bench.json, bench.png and daemon.log go to the out dir.
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=tests/corpus
model=small
dev=0
rest=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --corpus) corpus="$2"; shift 2 ;;
        --corpus=*) corpus="${1#*=}"; shift ;;
        --model) model="$2"; shift 2 ;;
        --model=*) model="${1#*=}"; shift ;;
        --dev) dev=1; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) rest+=("$1"); shift ;;
    esac
done

cargo build --release --bin toolsum >&2
# Cargo builds into CARGO_TARGET_DIR when it is set (a shared target dir across worktrees).
bin="${CARGO_TARGET_DIR:-target}/release/toolsum"
# A pinned tier is fetched (and verified) once; a path or repo:file is used as given.
case "$model" in tiny|small|large) "$bin" models fetch "$model" >&2 ;; esac
corpora=(--corpus "$corpus")
if [[ $dev == 1 ]]; then
    # The fetch prints the corpus dir last; it fails on a bad hash or a must_keep not in its file.
    devdir="$(scripts/fetch-devcorpus.sh | tail -n 1)"
    corpora=(--corpus "shared=$corpus" --corpus "dev=$devdir")
fi
exec "$bin" bench "${corpora[@]}" --model "$model" "${rest[@]+"${rest[@]}"}"
