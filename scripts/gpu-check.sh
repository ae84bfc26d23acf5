#!/usr/bin/env bash
# GPU check: builds toolsum with the `cuda` feature (candle's CUDA quantized kernels) and prints
# prefill and decode tok/s per model on the first NVIDIA GPU, next to the CPU figures of the
# same binary. Needs the CUDA toolkit (nvcc) and a driver; not part of CI.
#   scripts/gpu-check.sh [tiny,small] [max_new_tokens]
# Output: one line per model and device:
#   <model> <device>: prompt=<tokens> prefill=<tok/s> decode=<tok/s> generated=<tokens>
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-tiny,small}
n=${2:-128}
command -v nvidia-smi >/dev/null || { echo "gpu-check: no nvidia-smi: no NVIDIA GPU/driver here" >&2; exit 2; }
command -v nvcc >/dev/null || { echo "gpu-check: no nvcc: install the CUDA toolkit to build the cuda feature" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
scripts/fetch-models.sh ${models//,/ } >&2
cargo build --release --features cuda --bin toolsum >&2
bin=target/release/toolsum
# A ~1,000-token prompt from the corpus (the last 2,000 bytes of a real CI log).
prompt=$(mktemp)
trap 'rm -f "$prompt"' EXIT
tail -c 2000 tests/corpus/ci_05.log > "$prompt"
for m in ${models//,/ }; do
  for dev in cuda cpu; do
    line=$("$bin" generate --model "$m" --device "$dev" --prompt-file "$prompt" \
      --max-new-tokens "$n" 2>&1 >/dev/null | grep '^prompt_tokens=' | tail -1)
    echo "$m $dev: $(sed -E 's/prompt_tokens=([0-9]+).*generated_tokens=([0-9]+).*prefill_tok_s=([0-9.]+) decode_tok_s=([0-9.]+).*/prompt=\1 prefill=\3 decode=\4 generated=\2/' <<<"$line")"
  done
done
