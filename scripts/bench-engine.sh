#!/usr/bin/env bash
# Engine speed vs llama.cpp on the same GGUF files and thread count, in one run.
#   scripts/bench-engine.sh [tiny,small] [threads]
# toolsum's figures come from `cargo bench --bench engine` (pp512, tg128). llama.cpp's from
# llama-bench, built from a source snapshot OUTSIDE this repo; point LLAMA_BENCH at the binary
# (default /opt/llamacpp/src/build/bin/llama-bench). To provide it:
#   git clone https://github.com/ggerganov/llama.cpp && cd llama.cpp
#   cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
#   cmake --build build -j --target llama-bench llama-batched-bench
# llama-batched-bench, when built beside llama-bench, gives llama.cpp's decode at 512 and 2048
# tokens of context, for the depth table: with its default f16 KV cache, and with a q8_0 K and
# V cache (flash attention on, which its quantized V cache needs) beside our `--kv-decode q8`.
# Without it, toolsum's figures are still printed. Last line:
#   min ratio vs llama.cpp: prefill=X decode=Y
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-tiny,small}
threads=${2:-$(nproc)}
llama=${LLAMA_BENCH:-/opt/llamacpp/src/build/bin/llama-bench}
scripts/fetch-models.sh ${models//,/ } >&2
mkdir -p bench-out
TOOLSUM_BENCH_MODELS=$models TOOLSUM_BENCH_PP=512 TOOLSUM_BENCH_TG=128 TOOLSUM_THREADS=$threads \
  cargo bench --bench engine 2>/dev/null | tee bench-out/engine.md
: > bench-out/llama.jsonl
: > bench-out/llama-depth.jsonl
if [ -x "$llama" ]; then
  # The snapshot's commit: a COMMIT file beside the source or its parent, or its git HEAD.
  bin=$(dirname "$llama")
  commit=$(cat "$bin/../../COMMIT" "$bin/../../../COMMIT" 2>/dev/null | head -1 || true)
  commit=${commit:-$(git -C "$bin/../.." rev-parse HEAD 2>/dev/null || echo unknown)}
  echo "llama.cpp: $llama (commit $commit)"
  for m in ${models//,/ }; do
    path=$("${CARGO_TARGET_DIR:-target}/release/toolsum" models path "$m")
    "$llama" -m "$path" -p 512 -n 128 -t "$threads" -r 2 -o jsonl 2>/dev/null \
      | sed "s/^{/{\"tier\":\"$m\",/" >> bench-out/llama.jsonl
    # Decode at depth (llama-bench here has no depth option): llama-batched-bench beside it,
    # decode 128 tokens after 512 and after 2048 prompt tokens, best of two runs.
    if [ -x "$bin/llama-batched-bench" ]; then
      for _ in 1 2; do
        "$bin/llama-batched-bench" -m "$path" -c 2304 -t "$threads" -npp 512,2048 -ntg 128 \
          -npl 1 --output-format jsonl 2>/dev/null | grep '^{' \
          | sed "s/^{/{\"tier\":\"$m\",/" >> bench-out/llama-depth.jsonl
        "$bin/llama-batched-bench" -m "$path" -c 2304 -t "$threads" -npp 512,2048 -ntg 128 \
          -npl 1 -fa -ctk q8_0 -ctv q8_0 --output-format jsonl 2>/dev/null | grep '^{' \
          | sed "s/^{/{\"tier\":\"$m (q8 KV)\",/" >> bench-out/llama-depth.jsonl
      done
    fi
  done
else
  echo "llama-bench not found at $llama: set LLAMA_BENCH (see the comment at the top of this script)"
fi
python3 - <<'PY'
import json
rows = json.load(open("bench-out/engine.json"))
ours = {}
for r in rows:
    t = r.get("test", "")
    if "tok_per_s" not in r:
        continue
    # llama-bench's tg128 decodes from an empty context: compare our "tg128 @0".
    key = (r["model"], "pp" if t == "pp512" else "tg" if t == "tg128 @0" else None)
    if key[1]:
        ours[key] = max(ours.get(key, 0.0), r["tok_per_s"])
theirs = {}
for line in open("bench-out/llama.jsonl"):
    line = line.strip()
    if not line:
        continue
    j = json.loads(line)
    kind = "pp" if j.get("n_prompt", 0) > 0 else "tg"
    theirs[(j["tier"], kind)] = j["avg_ts"]
print("\n| model | test | toolsum tok/s | llama.cpp tok/s | ratio |\n|---|---|---|---|---|")
ratios = {"pp": [], "tg": []}
for (m, k), v in sorted(ours.items()):
    l = theirs.get((m, k))
    r = v / l if l else None
    if r:
        ratios[k].append(r)
    print(f"| {m} | {'pp512' if k == 'pp' else 'tg128'} | {v:.1f} | {l if l is None else round(l, 1)} | {'n/a' if r is None else f'{r:.2f}'} |")
depth = {}
for line in open("bench-out/llama-depth.jsonl"):
    if line.strip():
        j = json.loads(line)
        key = (j["tier"], j["pp"])
        depth[key] = max(depth.get(key, 0.0), j["speed_tg"])
ours_depth = {}
for r in rows:
    t = r.get("test", "")
    for d in (512, 2048):
        if t.startswith("tg") and t.endswith(f" @{d}"):
            ours_depth[(r["model"], d)] = r["tok_per_s"]
        elif t.startswith("tg") and t.endswith(f" @{d}, q8 KV"):
            ours_depth[(r["model"] + " (q8 KV)", d)] = r["tok_per_s"]
models = sorted({m for (m, _) in ours_depth})
if models:
    print("\n| model | decode @512 toolsum / llama.cpp | @2048 toolsum / llama.cpp | @2048/@512 toolsum | llama.cpp |\n|---|---|---|---|---|")
    for m in models:
        o5, o2 = ours_depth.get((m, 512)), ours_depth.get((m, 2048))
        l5, l2 = depth.get((m, 512)), depth.get((m, 2048))
        f = lambda v: "n/a" if v is None else f"{v:.1f}"
        r = lambda a, b: "n/a" if not a or not b else f"{a / b:.2f}"
        print(f"| {m} | {f(o5)} / {f(l5)} | {f(o2)} / {f(l2)} | {r(o2, o5)} | {r(l2, l5)} |")
fmt = lambda xs: f"{min(xs):.2f}" if xs else "n/a"
print(f"min ratio vs llama.cpp: prefill={fmt(ratios['pp'])} decode={fmt(ratios['tg'])}")
PY
