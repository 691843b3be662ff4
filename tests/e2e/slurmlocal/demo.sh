#!/usr/bin/env bash
# The demo beside a site (run by site.sh in its namespace):
#   demo.sh WLMVK STATE_DIR PORT OUT_FILE EXAMPLES_DIR
# `wlmvk dev up` (what scripts/demo runs) with its own Slurm (base and ports from
# the WLMVK_SLURM_* environment) on the examples of EXAMPLES_DIR, its output to
# OUT_FILE, then that Slurm's down.
# The demo's red-box sockets (/run/syslurm) get a tmpfs of this namespace, so a
# demo elsewhere on the machine keeps its own.
set -euo pipefail
wlmvk=$1 state=$2 port=$3 out=$4 examples=$5
root=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p /run/syslurm
mount -t tmpfs -o mode=0755 demo /run/syslurm
rc=0
"$wlmvk" dev up --state-dir "$state" --port "$port" --examples "$examples" >"$out" 2>&1 || rc=$?
# Its processes' logs, for a failure's message (the state dir goes with the test).
cp -r "$state/logs" "$out.logs" 2>/dev/null || true
"$root/dev/scripts/slurm-local" down
exit "$rc"
