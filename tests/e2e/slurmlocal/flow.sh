#!/usr/bin/env bash
# The local Slurm's whole life beside a site (run by site.sh in its namespace):
#   flow.sh OUT_DIR
# dev/scripts/slurm-local up (its base and ports from the WLMVK_SLURM_* environment),
# one job through it as the job owner, and down. The job's output is copied
# to OUT_DIR/job.out, the Slurm commands' answers to OUT_DIR/*.txt.
set -euo pipefail
out=${1:?usage: flow.sh OUT_DIR}
root=$(cd "$(dirname "$0")/../../.." && pwd)
"$root/dev/scripts/slurm-local" up
eval "$("$root/dev/scripts/slurm-local" env)"
jobs=$WLMVK_SLURM_BASE/jobs
# As red-box submits: the job owner, its environment (SLURM_CONF) exported to the job.
id=$(runuser -u slurmuser -- sbatch --parsable --chdir="$jobs" --output="$jobs/iso-%j.out" \
    --wrap 'echo "conf=$SLURM_CONF"; srun echo step-ran')
for _ in $(seq 1 600); do
    state=$(scontrol -o show job "$id" | grep -o 'JobState=[A-Z]*' || true)
    [ "$state" = JobState=COMPLETED ] && break
    case $state in JobState=PENDING|JobState=RUNNING|JobState=COMPLETING|'') sleep 0.1 ;; *) break ;; esac
done
echo "$state" > "$out/state.txt"
cp "$jobs/iso-$id.out" "$out/job.out"
"$root/dev/scripts/slurm-local" down
