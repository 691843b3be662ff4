"""The ``kubectl top`` benchmark bench/run-all runs (bench/kubelet_stats.py, at two numbers of
running steps), and its section of docs/performance.md. The table comes from the script's JSON,
never typed.
"""

from __future__ import annotations

from typing import Any

IDS = 1000
# raw name -> running steps: sstat pays one slurmd RPC per running step.
RUNS = {"kubelet-stats": 200, "kubelet-stats-50": 50}
STATS = "kubelet-stats"


def stats_argv(steps: int = RUNS[STATS]) -> list[str]:
    return ["kubelet_stats.py", "--ids", str(IDS), "--steps", str(steps), "--rounds", "3"]


def _jobusage(result: dict[str, Any]) -> str:
    rounds = " ".join(f"{t:.0f}" for t in result["jobusage_rounds_ms"])
    failed = len(result.get("failures", []))
    if failed == len(result["jobusage_rounds_ms"]):
        return f"> {result['jobusage_ms']:.0f}: every call timed out (rounds: {rounds})"
    return f"{result['jobusage_ms']:.0f} (rounds: {rounds}; failed: {failed})"


def _versus_loop(result: dict[str, Any]) -> str:
    if len(result.get("failures", [])) == len(result["jobusage_rounds_ms"]):
        return f"{result['sstat_each_ms']:.0f} (one JobUsage did not finish)"
    return f"{result['sstat_each_ms']:.0f} ({result['x_sstat_each']:.1f}x)"


def stats_section(results: list[dict[str, Any]]) -> list[str]:
    """``results``: one kubelet_stats.py run per number of running steps."""
    head = "| per interval (`--stats-interval`, 10 s) | " + " | ".join(
        f"{r['running_steps']} running steps (load {r['machine']['load'].split()[0]} at the end)"
        for r in results
    )
    rows = [
        head + " |",
        "|---|" + "---|" * len(results),
        f"| one JobUsage through red-box for {IDS} ids, median of 3 (ms) | "
        + " | ".join(_jobusage(r) for r in results)
        + " |",
        "| Slurm commands per JobUsage call | "
        + " | ".join(str(r["slurm_commands_per_call"]) for r in results)
        + " |",
        "| one interval's scrapes at once (5 x `/metrics/resource/<node>`, `/stats/summary`):"
        " JobUsage calls / Slurm commands / ms / scrapes with `resource_scrape_error 1` | "
        + " | ".join(
            f"{i['jobusage_calls']} / {i['slurm_commands']} / {i['wall_ms']:.0f} / {i['scrape_errors']}"
            for i in (r["interval"] for r in results)
        )
        + " |",
        f"| {IDS} x `sstat -a -j ID`, as a per-pod poller (ms; x one JobUsage) | "
        + " | ".join(_versus_loop(r) for r in results)
        + " |",
        f"| building `/stats/summary` for {IDS} pods (ms) | "
        + " | ".join(f"{r['summary_build_ms']:.1f}" for r in results)
        + " |",
        f"| `/metrics/resource` of 5 nodes for {IDS} pods (ms) | "
        + " | ".join(f"{r['metrics_render_ms']:.1f}" for r in results)
        + " |",
    ]
    failures = sorted({f for r in results for f in r.get("failures", [])})
    dates = ", ".join(
        f"{r['machine']['date']} (`{' '.join(stats_argv(r['running_steps'] - 1))}`)" for r in results
    )
    return [
        f"Runs: {dates}. Slurm here runs at most 2 jobs at once (2 CPUs), so 1,000 running jobs cannot"
        " be had. sstat pays one RPC to slurmd per running step, so one job holds the running steps"
        " (the batch step included) and held jobs stand for the rest of the ids (the kubelet asks"
        " for the pods it last saw running). Every request of an interval shares one JobUsage call."
        " A call that takes longer than red-box's `--slurm-timeout` (30 s) fails, and each"
        " `/metrics/resource` of that interval says `resource_scrape_error 1`. Raw output:"
        f" {', '.join(f'`docs/raw/{name}.txt`' for name in RUNS)}.",
        "",
        *rows,
        *(["", "Failed calls:", "", *(f"- {f}" for f in failures)] if failures else []),
    ]
