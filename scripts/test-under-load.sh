#!/usr/bin/env bash
# Runs the tests while this script keeps every core busy, as a developer's laptop, a shared CI
# runner or a submit node is (docs/development.md#tests-on-a-busy-machine): a test that fails only because the machine is busy tells
# nothing about the code. Run it before you stop; CI itself runs on an idle machine.
#
#   scripts/test-under-load.sh                      # npm test (every test) under load
#   scripts/test-under-load.sh test/e2e/restart.test.ts [-t name]   # bun test with these arguments
#
# The load: LOAD_PER_CORE (default 2) bash busy loops per core, so that the tests get about a
# third of the machine. Nothing to install. The loops are this script's children, stopped by
# their PIDs when it exits; each also ends by itself once this script is gone (a kill -9 leaves
# nothing spinning). It prints the load average it reached (sampled from /proc/loadavg every
# LOAD_SAMPLE_SECONDS, default 5) and exits with the tests' status.
set -uo pipefail

cd "$(dirname "$0")/.."

per_core=${LOAD_PER_CORE:-2}
every=${LOAD_SAMPLE_SECONDS:-5}
[[ $per_core =~ ^[0-9]+$ ]] || { echo "test-under-load: LOAD_PER_CORE must be a whole number, not '$per_core'" >&2; exit 2; }
[[ $every =~ ^[1-9][0-9]*$ ]] || { echo "test-under-load: LOAD_SAMPLE_SECONDS must be a positive whole number, not '$every'" >&2; exit 2; }
cores=$(nproc)
samples=$(mktemp "${TMPDIR:-/tmp}/test-under-load.XXXXXX")
pids=()

stop_all() {
  local p
  for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null; done
  for p in ${pids[@]+"${pids[@]}"}; do wait "$p" 2>/dev/null; done
  pids=()
}
trap 'stop_all; rm -f -- "$samples"' EXIT
# Ctrl-C reaches the tests too (one process group); once they have ended, EXIT stops the loops.
trap 'exit 130' INT
trap 'exit 143' TERM

me=$$
for ((i = 0; i < cores * per_core; i++)); do
  (while kill -0 "$me" 2>/dev/null; do for ((j = 0; j < 100000; j++)); do :; done; done) &
  pids+=($!)
done
(
  while kill -0 "$me" 2>/dev/null; do
    read -r one _ </proc/loadavg && echo "$one" >>"$samples"
    sleep "$every"
  done
) &
pids+=($!)
echo "test-under-load: $((cores * per_core)) busy loops on $cores cores ($per_core per core), load sampled every ${every}s" >&2

start=$SECONDS
if (($#)); then
  node_modules/.bin/bun test "$@"
else
  npm test
fi
status=$?
took=$((SECONDS - start))
read -r one five fifteen _ </proc/loadavg
stop_all

awk -v took="$took" -v status="$status" -v five="$five" -v fifteen="$fifteen" -v cores="$cores" '
  { n++; sum += $1; if ($1 > peak) peak = $1 }
  END {
    if (n == 0) { n = 1; peak = 0 }
    printf "test-under-load: exit %d after %d s (%dm%02ds); 1-min load average: mean %.2f, peak %.2f over %d samples; at the end 5-min %s, 15-min %s (%d cores)\n",
      status, took, took / 60, took % 60, sum / n, peak, n, five, fifteen, cores
  }' "$samples" >&2
exit "$status"
