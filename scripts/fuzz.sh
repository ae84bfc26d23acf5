#!/usr/bin/env bash
# Runs the parsers' property tests (the `*_prop` modules) long: up to PROPTEST_CASES (default
# 100000) cases per target, each bounded by FUZZ_SECS seconds (default 300). Cases run in rounds
# of FUZZ_ROUND (default 5000; each round draws a fresh random seed), so a target stopped by its
# time cap still reports how many cases it finished. Prints, per target, the cases executed,
# the time, the rate and the result; a failure prints proptest's minimal case (in the log named
# in the table, and saved under proptest-regressions/) and makes the script exit 1.
set -uo pipefail
cd "$(dirname "$0")/.."
CASES="${PROPTEST_CASES:-100000}"
SECS="${FUZZ_SECS:-300}"
ROUND="${FUZZ_ROUND:-5000}"
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
bin=$(cargo test --release --lib --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  cargo test --release --lib --no-run
  exit 1
fi
fail=0
printf '| target | cases | seconds | cases/s | result |\n|---|---|---|---|---|\n'
for t in "${TARGETS[@]}"; do
  log="/tmp/fuzz-${t//::/_}.log"
  : >"$log"
  start=$(date +%s.%N)
  done_cases=0
  res=pass
  while [ "$done_cases" -lt "$CASES" ]; do
    left=$(echo "$SECS - ($(date +%s.%N) - $start)" | bc)
    if [ "$(echo "$left <= 0" | bc)" = 1 ]; then
      res="time limit"
      break
    fi
    n=$(( CASES - done_cases < ROUND ? CASES - done_cases : ROUND ))
    PROPTEST_CASES="$n" timeout "$left" "$bin" -q --exact "$t" >>"$log" 2>&1
    rc=$?
    if [ "$rc" = 0 ] && ! grep -q "1 passed" <(tail -5 "$log"); then
      res="FAIL (no such test; see $log)"; fail=1; break
    fi
    case $rc in
      0) done_cases=$(( done_cases + n )) ;;
      124) res="time limit"; break ;;
      *) res="FAIL (see $log)"; fail=1; break ;;
    esac
  done
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  rate=$(echo "scale=0; $done_cases / $secs" | bc)
  printf '| %s | %s | %.1f | %s | %s |\n' "$t" "$done_cases" "$secs" "$rate" "$res"
done
exit $fail
