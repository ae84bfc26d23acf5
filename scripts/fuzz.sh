#!/usr/bin/env bash
# Runs the parsers' property tests (the `*_prop` modules) long: PROPTEST_CASES (default 100000)
# cases per target, each bounded by FUZZ_SECS seconds (default 300). Prints, per target, the
# cases executed, the time and the rate; a failure prints proptest's minimal case and exits 1.
set -uo pipefail
cd "$(dirname "$0")/.."
CASES="${PROPTEST_CASES:-100000}"
SECS="${FUZZ_SECS:-300}"
TARGETS=(
  daemon::protocol::parse_prop::arbitrary_bytes
  daemon::protocol::parse_prop::request_shaped_objects
  daemon::protocol::parse_prop::mutated_valid_request
  daemon::protocol::parse_prop::framer_on_arbitrary_stream
  guard::binary::binary_prop::arbitrary_bytes
  guard::binary::binary_prop::mutated_png_in_json
  guard::clean::clean_prop::keeps_line_count_and_drops_escapes
  guard::clean::tests::never_panics_and_removes_escapes
  guard::preview::tests::never_splits_utf8
  guard::save::sanitize_prop::never_leaves_long_responses
)
cargo test --release --lib --no-run >/dev/null 2>&1 || { cargo test --release --lib --no-run; exit 1; }
fail=0
printf '| target | cases | seconds | cases/s | result |\n|---|---|---|---|---|\n'
for t in "${TARGETS[@]}"; do
  start=$(date +%s.%N)
  PROPTEST_CASES="$CASES" timeout "$SECS" cargo test --release --lib -q "$t" -- --exact >"/tmp/fuzz-${t//::/_}.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  secs=$(echo "$end - $start" | bc)
  case $rc in
    0) res=pass; n=$CASES ;;
    124) res="time limit (fewer than $CASES cases)"; n="<$CASES" ;;
    *) res="FAIL (see /tmp/fuzz-${t//::/_}.log)"; n="?"; fail=1 ;;
  esac
  rate=$( [ "$rc" = 0 ] && echo "scale=0; $CASES / $secs" | bc || echo "-")
  printf '| %s | %s | %.1f | %s | %s |\n' "$t" "$n" "$secs" "$rate" "$res"
done
exit $fail
