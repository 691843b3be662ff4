"""The ``kubectl top`` benchmark bench/run-all runs (bench/kubelet_stats.py, at two numbers of
running steps), and its section of docs/performance.md: the JobUsage call in slices against the
one sstat it replaced, both measured in each run. The table comes from the script's JSON, never
typed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

IDS = 1000
# raw name -> running steps: sstat pays one slurmd RPC per running step.
RUNS = {"kubelet-stats": 200, "kubelet-stats-50": 50, "kubelet-stats-400": 400}
STATS = "kubelet-stats"
BEFORE_TIMEOUT_MS = 30000


def stats_argv(steps: int = RUNS[STATS]) -> list[str]:
    return ["kubelet_stats.py", "--ids", str(IDS), "--steps", str(steps), "--rounds", "3"]


def _ms(values: list[float | None]) -> str:
    return " ".join("killed" if v is None else f"{v:.0f}" for v in values)


def _before(result: dict[str, Any]) -> str:
    rounds = result["before_one_sstat_rounds_ms"]
    finished = [v for v in rounds if v is not None]
    if len(finished) < len(rounds):
        killed = len(rounds) - len(finished)
        return f"> {BEFORE_TIMEOUT_MS}: {killed} of {len(rounds)} killed (rounds: {_ms(rounds)})"
    return f"{statistics.median(finished):.0f} (rounds: {_ms(rounds)})"


def _complete(result: dict[str, Any]) -> bool:
    """Every call answered every running job: only then is its time comparable to a full read."""
    return all(c["unanswered"] == 0 for c in result["calls"])


def _now(result: dict[str, Any]) -> str:
    rounds = result["jobusage_rounds_ms"]
    text = f"{result['jobusage_ms']:.0f} (rounds: {_ms(rounds)})"
    before = result["before_one_sstat_rounds_ms"]
    cut = sum(1 for c in result["calls"] if c["unanswered"])
    if cut:
        text += f"; cut at the budget in {cut} of {len(rounds)} calls"
    elif all(v is not None for v in before):
        text += f"; {statistics.median(before) / result['jobusage_ms']:.1f}x faster than one sstat"
    return text


def _calls(result: dict[str, Any]) -> str:
    return "; ".join(
        f"{c['answered']} / {c['unanswered']} / {c['slices_finished']} of {c['slices']} / {c['steps_read']}"
        for c in result["calls"]
    )


def _versus_loop(result: dict[str, Any]) -> str:
    if not _complete(result):
        return f"{result['sstat_each_ms']:.0f} (JobUsage cut at the budget: no ratio)"
    return f"{result['sstat_each_ms']:.0f} ({result['x_sstat_each']:.1f}x)"


def _reasons(results: list[dict[str, Any]]) -> list[str]:
    reasons = sorted({c["reason"] for r in results for c in r["calls"] if c["reason"]})
    failures = sorted({f for r in results for f in r.get("failures", [])})
    return [f"- {text}" for text in [*reasons, *failures]]


def stats_section(results: list[dict[str, Any]]) -> list[str]:
    """``results``: one kubelet_stats.py run per number of running steps."""
    budget = results[0]["budget_s"]
    head = f"| per interval (`--stats-interval` 10 s, JobUsage budget {budget:g} s) | " + " | ".join(
        f"{r['running_steps']} running steps (load {r['machine']['load'].split()[0]} at the end)"
        for r in results
    )

    def row(title: str, cell: Callable[[dict[str, Any]], str]) -> str:
        return f"| {title} | " + " | ".join(cell(r) for r in results) + " |"

    rows = [
        head + " |",
        "|---|" + "---|" * len(results),
        row(
            f"before: one `sstat -a` over the {IDS} ids, killed after red-box's 30 s `--slurm-timeout`,"
            " median of the rounds (ms)",
            _before,
        ),
        row(f"now: one JobUsage through red-box for the {IDS} ids, median of 3 (ms)", _now),
        row(
            "each call: jobs answered / unanswered / sstat slices finished within the budget / running"
            " steps they read",
            _calls,
        ),
        row(
            "Slurm commands per JobUsage call (one `squeue -s`, one `sstat` per slice)",
            lambda r: str(r["slurm_commands_per_call"]),
        ),
        row(
            "one interval's scrapes at once (5 x `/metrics/resource/<node>`, `/stats/summary`):"
            " JobUsage calls / Slurm commands / ms / scrapes with `resource_scrape_error 1`",
            lambda r: "{jobusage_calls} / {slurm_commands} / {wall_ms:.0f} / {scrape_errors}".format(
                **r["interval"]
            ),
        ),
        row(f"{IDS} x `sstat -a -j ID`, as a per-pod poller (ms; x one JobUsage)", _versus_loop),
        row(f"building `/stats/summary` for {IDS} pods (ms)", lambda r: f"{r['summary_build_ms']:.1f}"),
        row(f"`/metrics/resource` of 5 nodes for {IDS} pods (ms)", lambda r: f"{r['metrics_render_ms']:.1f}"),
    ]
    dates = ", ".join(
        f"{r['machine']['date']} (`{' '.join(stats_argv(r['running_steps'] - 1))}`)" for r in results
    )
    reasons = _reasons(results)
    return [
        f"Runs: {dates}. Slurm here runs at most 2 jobs at once (2 CPUs), so 1,000 running jobs cannot"
        " be had. sstat pays one RPC to slurmd per running step, so one job holds the running steps"
        " (the batch step included) and held jobs stand for the rest of the ids (the kubelet asks"
        " for the pods it last saw running). Every request of an interval shares one JobUsage call."
        " red-box lists the running steps with one `squeue -s` and reads them in sstat slices of at"
        " most 25 steps, 4 at a time, within the budget the kubelet gives (0.7 x the interval); a"
        " slice that does not finish in time loses only its own jobs, which the answer names as"
        " unanswered and the kubelet serves with their last sample and its timestamp. A job with"
        " more steps than a slice holds (this bench's one job) is answered only when all its"
        " slices are. Before, one `sstat -a` read every id and failed as a whole past red-box's"
        " `--slurm-timeout`; both are measured in each round, interleaved. Raw output:"
        f" {', '.join(f'`docs/raw/{name}.txt`' for name in RUNS)}.",
        "",
        *rows,
        *(["", "Unanswered or failed calls said:", "", *reasons] if reasons else []),
    ]
