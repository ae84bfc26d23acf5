#!/usr/bin/env bash
# A CUDA toolkit for `cargo build --features cuda`, made from NVIDIA's PyPI wheels: no root, no
# system CUDA, no GPU needed to build. Installs pinned wheels into a venv (once), completes the
# tree they form, and prints the environment the build needs:
#   eval "$(scripts/cuda-toolkit.sh)"
#   cargo build --release --features cuda
# Where: ${TOOLSUM_CUDA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolsum/cuda}/venv-13.0 (644 MB of
# wheels, 401 MB of it cuBLAS; 1.2 GB installed); `.../cuda/13.0` links to the toolkit root
# (bin/nvcc, include/, lib/).
# Needs: x86_64 Linux, glibc >= 2.27 (the cuBLAS and cuRAND wheels are manylinux_2_27), python3
# with venv and pip reaching PyPI, a host gcc/g++ that nvcc 13.0 accepts (gcc 12.2 here), and cc
# for the link stub below. The built binary needs an NVIDIA driver >= 580 (CUDA 13.0) to start
# at all: it links libcuda.so.1, so without a driver even `--device cpu` cannot load.
#
# Why CUDA 13 and not 12: the cu12 wheels (`nvidia-cuda-nvcc-cu12` 12.4, 12.5, 12.6, 12.8, 12.9)
# hold only ptxas and libnvvm, no nvcc/cicc/cudafe++/fatbinary, so they cannot compile
# candle-kernels' .cu files. The CUDA 13 wheels (no -cuNN suffix) hold the whole compiler and
# all install into one CUDA_HOME-like tree, site-packages/nvidia/cu13. 13.0 is the oldest 13.x,
# so the lowest driver requirement; cudarc 0.19 accepts 13.0 to 13.4.
#
# What the build takes from it (candle-kernels 0.11 via cudaforge, cudarc 0.19 dynamic-linking):
#   bin/nvcc         candle-kernels compiles its PTX and libmoe.a (mmq/moe kernels, SASS for
#                    CUDA_COMPUTE_CAP); cudarc's build reads `nvcc --version` for the version.
#   include/         cuda.h, cuda_runtime.h, cuda_fp16/bf16/fp8.h, cccl (thrust, cub).
#   lib/             libcudart, libcublas, libcublasLt, libcurand, libnvrtc: linked at build
#                    time (unversioned names added here) and loaded at run time (LD_LIBRARY_PATH).
#   lib/stubs/       libcuda.so, a link-time stub generated here (no wheel ships one): one
#                    function per cu* name in cuda.h, each returning CUDA_ERROR_STUB_LIBRARY,
#                    soname libcuda.so.1 so the driver's real library loads at run time. Never
#                    put lib/stubs on LD_LIBRARY_PATH.
# CUDA_COMPUTE_CAP: without nvidia-smi, candle-kernels cannot detect the GPU; set it to the
# target's: 90 = H100/H200, 89 = L4/L40S/RTX 40xx, 86 = A10/A40/RTX 30xx, 80 = A100, 120 =
# RTX 50xx, 100 = B200 (CUDA 13 dropped sm < 75). Printed only when unset and nvidia-smi is
# absent: TOOLSUM_CUDA_COMPUTE_CAP, else 90. The kernels are built for that one capability
# only (PTX and libmoe.a's SASS; cudaforge makes 90 and up arch-specific, 90 -> sm_90a), so the
# binary runs on GPUs of that capability only: build again with another for another GPU.
#
# Flags: --quiet (no progress on stderr), --print (print the exports; fail if not installed).
set -euo pipefail

CUDA_VER=13.0
# Pinned: CUDA 13.0 Update 2's compiler, runtime and libraries, cuBLAS and cuRAND of 13.0.
WHEELS=(
  nvidia-cuda-nvcc==13.0.88
  nvidia-cuda-crt==13.0.88
  nvidia-nvvm==13.0.88
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-cccl==13.0.85
  nvidia-cuda-nvrtc==13.0.88
  nvidia-cublas==13.0.2.14
  nvidia-curand==10.4.0.35
)

quiet=0 print_only=0
for a in "$@"; do
  case $a in
    --quiet) quiet=1 ;;
    --print) print_only=1 ;;
    *) echo "cuda-toolkit: unknown flag $a" >&2; exit 2 ;;
  esac
done
log() { [ "$quiet" = 1 ] || echo "cuda-toolkit: $*" >&2; }

base=${TOOLSUM_CUDA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolsum/cuda}
venv=$base/venv-$CUDA_VER
link=$base/$CUDA_VER
want=$(printf '%s\n' "${WHEELS[@]}")

if [ ! -f "$link/.toolsum-complete" ] || [ "$(cat "$link/.toolsum-complete")" != "$want" ]; then
  [ "$print_only" = 0 ] || { echo "cuda-toolkit: not installed at $link; run scripts/cuda-toolkit.sh" >&2; exit 1; }
  [ "$(uname -sm)" = "Linux x86_64" ] || { echo "cuda-toolkit: x86_64 Linux only" >&2; exit 1; }
  command -v python3 >/dev/null || { echo "cuda-toolkit: needs python3" >&2; exit 1; }
  command -v cc >/dev/null || { echo "cuda-toolkit: needs cc (gcc) for the libcuda stub" >&2; exit 1; }
  t0=$(date +%s)
  mkdir -p "$base"
  [ -x "$venv/bin/python" ] || { log "venv $venv"; python3 -m venv "$venv"; }
  log "pip install ${WHEELS[*]}"
  # --no-deps: the set is complete and pinned; the wheels' own requirements are unpinned.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "${WHEELS[@]}"
  root=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nvidia/cu13
  [ -x "$root/bin/nvcc" ] && [ -x "$root/nvvm/bin/cicc" ] && [ -f "$root/include/cuda.h" ] \
    || { echo "cuda-toolkit: incomplete toolkit in $root" >&2; exit 1; }
  # Unversioned names for the linker (-lcudart, -lcublas, ...).
  for f in "$root"/lib/lib*.so.*; do
    n=$(basename "$f")
    case $n in *builtins*|*.alt.*) continue ;; esac
    ln -sfn "$n" "$root/lib/${n%%.so.*}.so"
  done
  ln -sfn lib "$root/lib64"
  # The libcuda link stub (see the top of this file).
  mkdir -p "$root/lib/stubs"
  tmp=$(mktemp -d)
  grep -ohE '\bcu[A-Z][A-Za-z0-9_]*\b' "$root/include/cuda.h" | sort -u \
    | awk '{ printf "int %s(void) { return 34; }\n", $1 }' > "$tmp/stub.c"
  cc -shared -fPIC -O0 -Wl,-soname,libcuda.so.1 -o "$root/lib/stubs/libcuda.so" "$tmp/stub.c"
  rm -rf "$tmp"
  "$root/bin/nvcc" --version | grep -q "release $CUDA_VER" \
    || { echo "cuda-toolkit: $root/bin/nvcc is not CUDA $CUDA_VER" >&2; exit 1; }
  ln -sfn "$root" "$link"
  echo "$want" > "$root/.toolsum-complete"
  log "ready in $(( $(date +%s) - t0 )) s: $link -> $root ($(du -sh "$venv" | cut -f1))"
fi

root=$(cd "$link" && pwd -P)
cap=${CUDA_COMPUTE_CAP:-}
if [ -z "$cap" ] && ! command -v nvidia-smi >/dev/null; then cap=${TOOLSUM_CUDA_COMPUTE_CAP:-90}; fi
cat <<EOF
export CUDA_HOME='$root'
export CUDA_PATH='$root'
export CUDA_ROOT='$root'
export NVCC='$root/bin/nvcc'
export PATH='$root/bin':"\$PATH"
export LD_LIBRARY_PATH='$root/lib'"\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
EOF
[ -z "$cap" ] || echo "export CUDA_COMPUTE_CAP=$cap"
