#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (the OpenAI-compatible server the remote-backend tests and
# `scripts/load.sh` run) from a package registry, once, and caches it:
#   $XDG_CACHE_HOME/toolsum/ci/llama-server-<version>/bin/llama-server
# (default ~/.cache/toolsum/ci/...). Prints the binary's path on its last line.
#
# Source: the sdist of PyPI's llama-cpp-python (pinned below), which vendors llama.cpp's whole
# tree (tools/server included); only that tree is built, with cmake, as a static binary
# (no web UI, no HTTPS, no download support: it serves a local GGUF file and nothing else).
# cmake comes from PATH when it is 3.18 or newer, else from PyPI's `cmake` wheel in a venv
# beside the cache. Measured on the 2-core development machine: 20.6 min wall with a cargo
# build running beside it (8.0 min of CPU), once; later runs find the cached binary at once.
# Run it with `--no-repack` on CPUs with AMX: llama.cpp's AMX repacked path (this commit)
# crashes there (tests and benches do).
#
# Knobs: LLAMA_SERVER_JOBS (parallel compile jobs, default: cores).
set -euo pipefail

# llama-cpp-python 0.3.36 vendors llama.cpp at commit 0c1e57098 (2026-10-01).
LLAMA_CPP_PYTHON_VERSION=0.3.36
CMAKE_WHEEL_VERSION=4.4.4

cache=${XDG_CACHE_HOME:-$HOME/.cache}/toolsum/ci
dest=$cache/llama-server-$LLAMA_CPP_PYTHON_VERSION
bin=$dest/bin/llama-server
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

jobs=${LLAMA_SERVER_JOBS:-$(nproc)}
work=$(mktemp -d "${TMPDIR:-/tmp}/toolsum-llama-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

cmake_bin=""
if command -v cmake >/dev/null; then
  v=$(cmake --version | head -1 | awk '{print $3}')
  if [ "$(printf '%s\n3.18\n' "$v" | sort -V | head -1)" = "3.18" ]; then cmake_bin=cmake; fi
fi
if [ -z "$cmake_bin" ]; then
  venv=$cache/buildtools-venv
  if [ ! -x "$venv/bin/cmake" ]; then
    echo "build-llama-server: installing cmake $CMAKE_WHEEL_VERSION from PyPI into $venv" >&2
    if python3 -m venv "$venv" && "$venv/bin/python" -m pip install --quiet "cmake==$CMAKE_WHEEL_VERSION"; then
      :
    elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      rm -rf "$venv"
      echo "build-llama-server: no venv; installing Debian's cmake" >&2
      apt-get update -qq && apt-get install -y -qq cmake >/dev/null
    else
      echo "build-llama-server: needs cmake >= 3.18 (or python3-venv to install it)" >&2
      exit 1
    fi
  fi
  cmake_bin=$venv/bin/cmake
  [ -x "$cmake_bin" ] || cmake_bin=cmake
fi

echo "build-llama-server: fetching the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist" >&2
python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python \
  "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$work"
tar xzf "$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$work"
src=$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp
[ -f "$src/tools/server/server.cpp" ] || { echo "no tools/server in the sdist" >&2; exit 1; }

echo "build-llama-server: building llama-server with $jobs jobs (several minutes)" >&2
"$cmake_bin" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$work/configure.log" 2>&1 \
  || { tail -30 "$work/configure.log" >&2; exit 1; }
"$cmake_bin" --build "$work/build" -j "$jobs" --target llama-server >"$work/build.log" 2>&1 \
  || { tail -30 "$work/build.log" >&2; exit 1; }

mkdir -p "$dest.tmp/bin"
cp "$work/build/bin/llama-server" "$dest.tmp/bin/"
echo "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION (llama.cpp 0c1e57098)" >"$dest.tmp/SOURCE"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "build-llama-server: built in $(($(date +%s) - start)) s" >&2
echo "$bin"
