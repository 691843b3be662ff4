"""The ``kubectl top`` benchmark bench/run-all runs (bench/kubelet_stats.py), and its section of
docs/performance.md. The table comes from the script's JSON, never typed.
"""

from __future__ import annotations

from typing import Any

STATS = "kubelet-stats"
IDS = 1000


def stats_argv() -> list[str]:
    return ["kubelet_stats.py", "--ids", str(IDS), "--steps", "200", "--rounds", "3"]


def stats_section(result: dict[str, Any]) -> list[str]:
    m, interval = result["machine"], result["interval"]
    rounds = " ".join(f"{t:.0f}" for t in result["jobusage_rounds_ms"])
    failed = result.get("failures", [])
    rows = [
        "| per interval (`--stats-interval`, 10 s) | figure |",
        "|---|---|",
        f"| one JobUsage through red-box for {result['ids']} ids, median of {result['rounds']} (ms) "
        f"| {result['jobusage_ms']:.0f} (rounds: {rounds}; failed: {len(failed)}) |",
        f"| Slurm commands per JobUsage call | {result['slurm_commands_per_call']} |",
        f"| one interval's {interval['scrapes']} scrapes at once ({result['nodes']} x"
        f" `/metrics/resource/<node>`, `/stats/summary`): JobUsage calls / Slurm commands / ms "
        f"| {interval['jobusage_calls']} / {interval['slurm_commands']} / {interval['wall_ms']:.0f}"
        f" ({interval.get('scrape_errors', 0)} with resource_scrape_error 1) |",
        f"| {result['ids']} x `sstat -a -j ID`, as a per-pod poller (ms; x one JobUsage) "
        f"| {result['sstat_each_ms']:.0f} ({result['x_sstat_each']:.1f}x) |",
        f"| building `/stats/summary` for {IDS} pods (ms) | {result['summary_build_ms']:.1f} |",
        f"| `/metrics/resource` of {result['nodes']} nodes for {IDS} pods (ms) "
        f"| {result['metrics_render_ms']:.1f} |",
    ]
    return [
        f"`bench/{' '.join(stats_argv())}`, {m['date']} (load {m['load']}). Slurm here runs at most 2"
        " jobs at once (2 CPUs), so 1,000 running jobs cannot be had: sstat pays one RPC to slurmd per"
        f" running step, so one job holds {result['running_steps']} running steps (the batch step"
        f" included) and {result['held']} held jobs stand for the rest of the ids (the kubelet asks"
        " for the pods it last saw running). Raw output: `docs/raw/kubelet-stats.txt`.",
        "",
        *rows,
        *(["", "Failed calls:", "", *(f"- {f}" for f in failed)] if failed else []),
    ]
