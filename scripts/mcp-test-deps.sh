#!/usr/bin/env bash
# Installs what the MCP proxy tests (tests/mcp.rs) need, pinned, under the user's cache dir:
#   ~/.cache/toolsum/ci/npm   @modelcontextprotocol/server-filesystem and server-everything
#                             (tests/mcp/package.json + package-lock.json, `npm ci`)
#   ~/.cache/toolsum/ci/venv  the official Python MCP SDK (tests/mcp/requirements.txt)
# Each is reinstalled only when its pin files change (a stamp holds their sha256). Needs node
# (>= 20) with npm, and python3 with venv; called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ci="${XDG_CACHE_HOME:-$HOME/.cache}/toolsum/ci"
mkdir -p "$ci"

command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "mcp-test-deps: node and npm are needed (apt-get install nodejs npm)" >&2; exit 1; }

stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

npm_stamp=$(stamp_of tests/mcp/package.json tests/mcp/package-lock.json)
if [ "$(cat "$ci/npm/.stamp" 2>/dev/null)" != "$npm_stamp" ] \
   || [ ! -f "$ci/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ]; then
  echo "mcp-test-deps: npm ci (MCP servers) into $ci/npm"
  rm -rf "$ci/npm"
  mkdir -p "$ci/npm"
  cp tests/mcp/package.json tests/mcp/package-lock.json "$ci/npm/"
  (cd "$ci/npm" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$npm_stamp" > "$ci/npm/.stamp"
fi

py_stamp=$(stamp_of tests/mcp/requirements.txt)
if [ "$(cat "$ci/venv/.stamp" 2>/dev/null)" != "$py_stamp" ] || [ ! -x "$ci/venv/bin/python" ]; then
  echo "mcp-test-deps: python venv (MCP SDK) into $ci/venv"
  rm -rf "$ci/venv"
  python3 -m venv "$ci/venv"
  "$ci/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r tests/mcp/requirements.txt
  echo "$py_stamp" > "$ci/venv/.stamp"
fi
"$ci/venv/bin/python" -c 'import mcp, mcp_types' \
  || { echo "mcp-test-deps: the venv at $ci/venv has no working mcp package" >&2; exit 1; }
