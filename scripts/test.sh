#!/usr/bin/env bash
# The project's test command (README, .ci/run): fetch the tiny and small models (cached,
# sha256-verified), the OpenCode plugin's npm packages and the MCP proxy tests' pinned servers
# and client (npm, PyPI; cached), then run every test tier: unit tests, tokenizer equality
# against the committed reference ids, real-model engine tests, the daemon integration tests,
# the agent hooks and the MCP proxy, and the remote-backend tests against llama.cpp's
# llama-server (built once from PyPI's llama-cpp-python sdist and cached:
# scripts/build-llama-server.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh tiny small
# The OpenCode plugin's types and compiler (pinned in integrations/opencode/package-lock.json;
# npm's cache makes a second run offline-fast).
npm ci --prefix integrations/opencode --no-audit --no-fund --loglevel=error
scripts/mcp-test-deps.sh
[ -n "${TOOLSUM_LLAMA_SERVER:-}" ] || scripts/build-llama-server.sh >/dev/null
# Release profile: the real-model tests run the models, which are ~20x slower unoptimized.
cargo test --release --lib --bins --tests -- --test-threads "${TOOLSUM_TEST_THREADS:-2}"
