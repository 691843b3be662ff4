"""bench/run-all's reliability part: the long fault suite once per fault, and docs/reliability.md's table.

``run_faults`` runs ``faults_run.py --only FAULT`` for each fault through run-all's
``run`` (which keeps ``docs/raw/faults-<fault>.txt`` and ``.json``); a fault run whose
counts are not all zero exits 1, a result shown in the table, not a failure.
``write_reliability`` fills the table between ``<!-- faults:begin -->`` and
``<!-- faults:end -->`` from the kept figures; the prose around it is the doc's own.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

BEGIN, END = "<!-- faults:begin -->", "<!-- faults:end -->"
# The faults run for the doc, in its table's order (slurmctld and ctldstop-*: on a Slurm of its own,
# see faults_run.py).
FAULTS = (
    "none", "kill9", "kill9-running", "takeover", "takeover-stop", "redbox", "watch", "slurmctld",
    "ctldstop-rest", "ctldstop-cli", "skew-ahead", "skew-behind", "restd-stop", "takeover-held",
)  # fmt: skip
# The rows run on the real control plane too (key ``<fault>-real``: faults_run.py --kube real).
REAL = ("kill9", "kill9-running", "takeover", "takeover-stop")
REAL_SUFFIX = "-real"
# The rows run on other Slurm releases' boxes too (key ``<fault>-<release>``: faults_run.py
# --slurm-release): those whose fault each release's Slurm answers in its own words.
RELEASES = {"ctldstop-rest": ("24.11", "26.05"), "ctldstop-cli": ("24.11", "26.05")}
# Every kept row, in the table's order: each real-plane row, then each release's, after the host's.
KEPT = tuple(
    k
    for f in FAULTS
    for k in (f, *((f + REAL_SUFFIX,) if f in REAL else ()), *(f"{f}-{r}" for r in RELEASES.get(f, ())))
)
COLUMNS = (
    ("fault", "fault"), ("rounds", "rounds"), ("pods", "pods"), ("duplicates", "duplicates"),
    ("lost", "lost"), ("orphaned", "orphaned"), ("spurious", "spurious failures"),
    ("round_problems", "round problems"),
)  # fmt: skip

Run = Callable[..., dict[str, Any]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # The table's scale (issue 24: at least 20 rounds x 200 pods per row); smaller for a quick look.
    parser.add_argument("--fault-rounds", type=int, default=20, help="rounds per fault (faults_run.py)")
    parser.add_argument("--fault-pods", type=int, default=200, help="pods per fault round")
    parser.add_argument("--seed", type=int, default=8, help="faults_run.py's seed")
    parser.add_argument(
        "--fault",
        action="append",
        choices=KEPT,
        help="run only this fault (repeatable); the other faults' kept runs stay in the table",
    )


def run_faults(run: Run, raw: Path, args: argparse.Namespace) -> None:
    """Each fault's run, kept in ``raw`` by ``run``; the arguments shown in the doc kept with it."""
    shown = ["--rounds", str(args.fault_rounds), "--pods", str(args.fault_pods), "--seed", str(args.seed)]
    for key in args.fault or KEPT:
        fault, extra = split(key)
        result = run(f"faults-{key}", ["faults_run.py", *shown, "--only", fault, *extra], results=(0, 1))
        result["argv_shown"] = shown
        (raw / f"faults-{key}.json").write_text(json.dumps(result, indent=1))


def split(key: str) -> tuple[str, list[str]]:
    """A kept row's fault and the arguments that run it where the key says (real plane, release)."""
    if key.endswith(REAL_SUFFIX):
        return key.removesuffix(REAL_SUFFIX), ["--kube", "real"]
    for fault, releases in RELEASES.items():
        for release in releases:
            if key == f"{fault}-{release}":
                return fault, ["--slurm-release", release]
    return key, []


def kept(raw: Path) -> list[dict[str, Any]]:
    """The figures of every fault that has a run kept in ``raw``, in the table's order."""
    found = []
    for key in KEPT:
        path = raw / f"faults-{key}.json"
        if path.exists():
            result: dict[str, Any] = json.loads(path.read_text())
            result["key"] = key
            found.append(result)
    return found


def table(results: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| " + " | ".join(title for _, title in COLUMNS) + " | takeover p95 (s) | seconds | run ended |",
        "|" + "---|" * (len(COLUMNS) + 3),
    ]
    for result in results:
        when = result["machine"]["date"]
        for row in result["rows"]:
            cells = [str(row[key]) for key, _ in COLUMNS]
            rows.append("| " + " | ".join([*cells, takeover_p95(row), f"{row['seconds']:.0f}", when]) + " |")
    return rows


def takeover_p95(row: dict[str, Any]) -> str:
    """The row's p95 takeover time (faults_run.py's figure) and over how many, or - without any."""
    if row.get("takeover_p95") is None:
        return "-"
    return f"{row['takeover_p95']:.1f} (of {len(row['takeovers'])})"


def write_reliability(doc: Path, results: list[dict[str, Any]]) -> None:
    """Fill ``doc``'s fault table (between its markers) from the runs' figures."""
    loads = ", ".join(f"{r['machine']['load']} ({r['key']})" for r in results)
    revisions = sorted({r["machine"].get("revision") or "not recorded" for r in results})
    problems = [f"- {r['key']}: {p}" for r in results for p in r["problems"][:10]]
    first = results[0]["machine"]
    shown = results[0]["argv_shown"]
    others = [f"{r['key']}: `{' '.join(r['argv_shown'])}`" for r in results if r["argv_shown"] != shown]
    unlike = f" (except {'; '.join(others)})" if others else ""
    block = [
        BEGIN,
        "Generated by `bench/run-all` from the fault runs' own output (`docs/raw/faults-<fault>.txt`,"
        " `.json`); do not edit.",
        "",
        f"Each fault: `bench/faults_run.py {' '.join(shown)} --only <fault>`{unlike}, the rows marked"
        " [real plane] with `--kube real` (kept as `<fault>-real`), those marked [Slurm RELEASE] with"
        " `--slurm-release RELEASE` (kept as `<fault>-RELEASE`), on"
        f" {first['cores']} cores shared with other sessions' tests and benchmarks (load average as each"
        f" run ended: {loads}), {first['slurm']}, Python {first['python']}; git revision"
        f" {', '.join(revisions)}.",
        "",
        *table(results),
        "",
        *(["Problems the rounds reported:", "", *problems] if problems else ["No round reported a problem."]),
        END,
    ]
    text = doc.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(head + "\n".join(block) + tail)


def reliability(run: Run, raw: Path, doc: Path, args: argparse.Namespace) -> None:
    """Run the faults (unless ``--docs-only``) and write the doc's table from what is kept."""
    if not args.docs_only:
        run_faults(run, raw, args)
    results = kept(raw)
    if results:
        write_reliability(doc, results)
        print(f"wrote {doc.name}'s fault table")
