#!/usr/bin/env bash
# The project's test command (README, .ci/run): fetch the tiny and small models (cached,
# sha256-verified), then run every test tier: unit tests, tokenizer equality against the
# committed reference ids, real-model engine tests, and the daemon integration tests. The MCP
# proxy tests' pinned servers and client (npm, PyPI) are installed first, cached.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh tiny small
scripts/mcp-test-deps.sh
# Release profile: the real-model tests run the models, which are ~20x slower unoptimized.
cargo test --release --lib --bins --tests -- --test-threads "${TOOLSUM_TEST_THREADS:-2}"
