#!/usr/bin/env bash
# The large fuzz run, outside CI: the fuzz suite (test/interop/fuzz) against a fresh controller with about 100,000
# cases in all (max-examples 160 per operation and run, where CI uses 5), same seed, same checks, same phases.
# Takes about a quarter of an hour on two cores. Writes a JSON summary (cases, failures and time per run) and
# prints where it is; set PORTCULLIS_FUZZ_MAX_EXAMPLES, PORTCULLIS_FUZZ_SEED or PORTCULLIS_FUZZ_SUMMARY to
# change the budget, the seed or that path. On a shared machine run it under the same lock as the other suites.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
export PORTCULLIS_FUZZ_MAX_EXAMPLES="${PORTCULLIS_FUZZ_MAX_EXAMPLES:-160}"
export PORTCULLIS_FUZZ_SUMMARY="${PORTCULLIS_FUZZ_SUMMARY:-${TMPDIR:-/tmp}/portcullis-fuzz-large-$(date +%Y%m%dT%H%M%S).json}"
cd "$repo"
status=0
node test/interop/run.mjs --only fuzz || status=$?
echo "fuzz (large): summary in $PORTCULLIS_FUZZ_SUMMARY"
exit "$status"
