#!/usr/bin/env bash
# GPU check: builds toolsum with the `cuda` feature (candle's CUDA kernels) against the CUDA
# toolkit from scripts/cuda-toolkit.sh (PyPI wheels; no system CUDA needed), prints prefill and
# decode tok/s per model on the first NVIDIA GPU next to the CPU figures of the same binary,
# then guards one corpus file through a daemon on the GPU. Not part of CI.
#   scripts/gpu-check.sh [tiny,small] [max_new_tokens]
#   scripts/gpu-check.sh --build-only          # the build step alone (works without a GPU)
# Env: TOOLSUM_BIN (a binary built with --features cuda: skips the build, and the toolkit too
# when its CUDA libraries resolve, e.g. from a system CUDA on LD_LIBRARY_PATH), CUDA_COMPUTE_CAP
# (default: nvidia-smi's, else 90), BUILD_TIMEOUT (s, default 3600), STEP_TIMEOUT (s per run,
# default 300), CARGO_TARGET_DIR.
# Needs a driver >= 580 (the toolkit is CUDA 13.0), the models cached (scripts/fetch-models.sh)
# or reachable, and for the build: python3 + pip reaching PyPI (once), gcc/g++, cargo.
# Output: one line per model and device, then the guard's kind/model/reason/timings:
#   <model> <device>: prompt=<tokens> prefill=<tok/s> decode=<tok/s> generated=<tokens>
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
models=${1:-tiny,small}
n=${2:-128}
step=${STEP_TIMEOUT:-300}

if [ "$build_only" = 0 ]; then
  command -v nvidia-smi >/dev/null || { echo "gpu-check: no nvidia-smi: no NVIDIA GPU/driver here" >&2; exit 2; }
  timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader
  cap=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-$cap}
fi
bin=${TOOLSUM_BIN:-}
# A given binary whose CUDA libraries already resolve (a system CUDA toolkit, or
# LD_LIBRARY_PATH set) needs no toolkit from PyPI: a GPU box offline can run the check.
if [ -n "$bin" ] && ! ldd "$bin" | grep -q 'not found'; then
  echo "gpu-check: $bin: its libraries resolve; no toolkit installed" >&2
else
  envs=$(timeout 1200 scripts/cuda-toolkit.sh)   # a failure stops here (eval "$(...)" would not)
  eval "$envs"
  echo "gpu-check: CUDA_HOME=$CUDA_HOME CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-auto}" >&2
fi

if [ -z "$bin" ]; then
  t0=$(date +%s)
  timeout "${BUILD_TIMEOUT:-3600}" cargo build --release --features cuda --bin toolsum >&2
  bin=${CARGO_TARGET_DIR:-target}/release/toolsum
  echo "gpu-check: built $bin in $(( $(date +%s) - t0 )) s" >&2
fi
[ "$build_only" = 0 ] || exit 0

for m in ${models//,/ }; do
  "$bin" models path "$m" >/dev/null 2>&1 || timeout "$step" "$bin" models fetch "$m" >&2
done

tmp=$(mktemp -d)
spid=
cleanup() {
  [ -z "$spid" ] || kill "$spid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# Prefill/decode: a ~1,000-token prompt from the corpus (the last 2,000 bytes of a real CI log).
tail -c 2000 tests/corpus/ci_05.log > "$tmp/prompt"
for m in ${models//,/ }; do
  for dev in cuda cpu; do
    rc=0
    timeout "$step" "$bin" generate --model "$m" --device "$dev" --prompt-file "$tmp/prompt" \
      --max-new-tokens "$n" 2>"$tmp/gen.err" >/dev/null || rc=$?
    line=$(grep '^prompt_tokens=' "$tmp/gen.err" | tail -1 || true)
    [ "$rc" = 0 ] && [ -n "$line" ] \
      || { echo "$m $dev: failed (exit $rc; 124 = over ${step} s): $(tail -1 "$tmp/gen.err")"; continue; }
    echo "$m $dev: $(sed -E 's/prompt_tokens=([0-9]+).*generated_tokens=([0-9]+).*prefill_tok_s=([0-9.]+) decode_tok_s=([0-9.]+).*/prompt=\1 prefill=\3 decode=\4 generated=\2/' <<<"$line")"
  done
done

# One guard through a daemon on the GPU, on its own socket so no running daemon answers.
m=${models%%,*}
sock=$tmp/toolsum.sock
timeout "$step" "$bin" serve --socket "$sock" --device cuda --model "$m" >"$tmp/serve.log" 2>&1 &
spid=$!
for _ in $(seq "$step"); do
  "$bin" status --socket "$sock" >"$tmp/status" 2>/dev/null && break
  kill -0 "$spid" 2>/dev/null || { echo "gpu-check: daemon exited:" >&2; tail -20 "$tmp/serve.log" >&2; exit 1; }
  sleep 1
done
echo "daemon $(grep -oE '"device": *"[^"]*"' "$tmp/status" | tail -1 || true)"
t0=$(date +%s%N)
# ci_08.log: 79 KB, ~29,000 tokens: over token_limit and under summarize_limit, so the model runs.
timeout "$step" "$bin" guard --socket "$sock" --no-spawn --session-dir "$tmp" --tool Bash --json \
  --intent "Did the commons-lang Jenkins build pass? If not, which test failed and where?" \
  tests/corpus/ci_08.log >"$tmp/guard.json"
echo "guard ci_08.log on cuda ($m): $(( ($(date +%s%N) - t0) / 1000000 )) ms;" \
  "$(grep -oE '"(kind|model|reason)":("[^"]*"|null)|"timings_ms":\{[^}]*\}' "$tmp/guard.json" | tr '\n' ' ' || true)"
timeout 30 "$bin" stop --socket "$sock" >/dev/null 2>&1 || true
wait "$spid" 2>/dev/null || true
spid=
