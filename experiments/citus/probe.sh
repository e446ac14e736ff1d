#!/usr/bin/env bash
# Runs the Citus probe (experiments/citus/probe.ts) on two new databases of the 3-node cluster that
# scripts/ensure-citus.sh keeps (it builds and starts it when needed), saves what it printed to
# experiments/citus/probe-output.txt, and drops the two databases afterwards (KEEP=1 keeps them, to
# look at the shards by hand). Runs as root, like ensure-citus.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT=experiments/citus/probe-output.txt
# The last line ensure-citus prints is the new database's URL; its progress goes to stderr.
AS_IS=$(bash scripts/ensure-citus.sh --new-database | tail -n1)
RESHAPED=$(bash scripts/ensure-citus.sh --new-database | tail -n1)

cleanup() {
  [ "${KEEP:-0}" = 1 ] && { echo "probe: kept $AS_IS and $RESHAPED" >&2; return; }
  bash scripts/ensure-citus.sh --drop-database "${AS_IS##*/}" >/dev/null
  bash scripts/ensure-citus.sh --drop-database "${RESHAPED##*/}" >/dev/null
}
trap cleanup EXIT

# pipefail: a probe that crashes fails this script too, after its output is saved.
npx tsx experiments/citus/probe.ts "$AS_IS" "$RESHAPED" 2>&1 | tee "$OUT"
