"""Run the benchmarks and the long fault suite; write docs/performance.md and docs/reliability.md's
fault table from their output.

Each benchmark's whole output is kept in docs/raw/ (``<name>.txt``, and its
figures as ``<name>.json``); the tables are generated from the JSON, never
typed. The README links to docs/performance.md rather than copying its tables.

The original Go red-box cannot be built in CI: when ``--original PATH`` (or
``WLMVK_ORIGINAL_REDBOX``) names a binary built from sylabs/wlm-operator,
its arms run beside ours and that run is also kept as the recorded
reference (``docs/raw/redbox-submit-reference.json``); runs without it show
the reference's figures with the reference's date. ``--before REV`` also
runs red-box as it was at git revision REV, in the same run (how a change
is shown against its predecessor).

Benchmarks run: ``redbox_submit.py`` (submission), ``kubelet_submit.py``
(pods to jobs) and ``status_steady.py`` twice (status at steady state with
1000 pods, with the ``--before`` revision's red-box and kubelet beside; the
kubelet at 10,000 pods: bench/perf_sections.py). The others in bench/ are
listed in the docs with what they measure, without figures, until this
script runs them.

``logs_follow.py`` runs 20 jobs at once: the local Slurm's node must declare 20 CPUs or more
(``WLMVK_SLURM_CPUS=24 dev/scripts/slurm-local up``); it says so and stops otherwise.

The reliability part (bench/faults_section.py) runs ``faults_run.py --only
FAULT`` once per fault (``docs/raw/faults-<fault>.txt`` and ``.json``) and
writes docs/reliability.md's table from them.

    bench/run-all                         # run everything, rewrite the docs
    bench/run-all --only reliability      # only the fault suite and its table
    bench/run-all --docs-only             # rewrite the docs from docs/raw as it is
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import cpu_meter
import faults_section
import pods_goals
import submit_goals
from exec_section import EXEC, EXEC_ARGV, HOPS, HOPS_ARGV, exec_section, hops_section
from nodes_scale_section import (
    CLUSTERS_SCALE,
    CLUSTERS_SCALE_ARGV,
    NODES_SCALE,
    NODES_SCALE_ARGV,
    nodes_scale_section,
)
from perf_sections import (
    LOGS,
    LOGS_ARGV,
    PLANE_NAMES,
    SCALE,
    STATUS,
    TENANTS,
    TENANTS_ARGV,
    logs_section,
    scale_argv,
    scale_section,
    status_argv,
    status_section,
    tenants_section,
)
from slurmjobs_section import SLURMJOBS, SLURMJOBS_ARGV, slurmjobs_section
from stats_section import RUNS, stats_argv, stats_section

from wlmvk_dev import localslurm

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RAW = ROOT / "docs" / "raw"
DOC = ROOT / "docs" / "performance.md"
RELIABILITY = ROOT / "docs" / "reliability.md"
SUBMIT = "redbox-submit"
PODS = "kubelet-submit"
REFERENCE = RAW / f"{SUBMIT}-reference.json"
PERFORMANCE_BENCHES = (
    SUBMIT, STATUS, PODS, LOGS, SLURMJOBS, "stats", SCALE, EXEC, TENANTS, NODES_SCALE, CLUSTERS_SCALE
)  # fmt: skip
NOT_RUN = [
    (
        "bench/kubelet_status_tick.py",
        "Slurm commands per kubelet status tick counted by shims with ticks back to back; superseded"
        " by `bench/status_steady.py` above, which counts slurmctld's and slurmdbd's RPCs per minute"
        " at steady state",
    ),
    (
        "bench/kubelet_logs_latency.py",
        "a line written by a job to the follower receiving it, with the follower on the kubelet's"
        " own API: users go through kubectl and the API server's proxy, which this does not measure",
    ),
    (
        "bench/kubelet_rss.py",
        "kubelet resident memory with 10,000 pods on a stub backend, read once after a garbage"
        " collection; superseded by the 10,000-pod run of `bench/status_steady.py` above (real red-box"
        " and Slurm, memory sampled throughout)",
    ),
    (
        "bench/wire_states.py",
        "a job state written and read straight between its bytes and its value (`wire.states`)"
        " against the message classes, pure CPU, no Slurm (raw output: `docs/raw/wire-states.txt`)",
    ),
    (
        "bench/redbox_states.py",
        "one JobStates call for 1000 jobs against a sequential loop of 1000 `scontrol show job`,"
        " not against one `squeue`",
    ),
]


def machine() -> dict[str, str]:
    versions = dict(
        line.split("=", 1)
        for line in (ROOT / "dev" / "scripts" / "kube-versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    # The local Slurm's (slurm-local), as the benchmarks use it: without its SLURM_CONF, sinfo
    # finds no configuration and prints nothing.
    local = {**os.environ, **localslurm.environment()}
    slurm = subprocess.run(["sinfo", "--version"], capture_output=True, text=True, check=False, env=local)
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return {
        "revision": revision.stdout.strip(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": str(os.cpu_count()),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "slurm": slurm.stdout.strip() or "not found",
        "kubernetes": versions.get("KUBE_VERSION", "?"),
        "python": platform.python_version(),
    }


def run(name: str, argv: list[str], *, results: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """Run one benchmark, keep its whole output, return its figures (``results``: exits that are
    results, not failures)."""
    figures = RAW / f"{name}.json"
    start = machine()  # the first line of the raw output says what the run was, and the load at its start
    head = f"$ {' '.join(argv)}  # {start['date']}, revision {start['revision']}, load {start['load']}"
    print(head, flush=True)
    done = subprocess.run(
        [sys.executable, *argv, "--json", str(figures)],
        cwd=BENCH,
        capture_output=True,
        text=True,
        check=False,
    )
    (RAW / f"{name}.txt").write_text(f"{head}\n{done.stdout}{done.stderr}")
    print(done.stdout[-2000:], flush=True)
    if done.returncode not in results:
        raise SystemExit(f"{name} failed (exit {done.returncode}); output in {RAW / (name + '.txt')}")
    result: dict[str, Any] = json.loads(figures.read_text())
    result["machine"] = start
    figures.write_text(json.dumps(result, indent=1))
    return result


def kept(name: str) -> dict[str, Any]:
    """A benchmark's figures as its last run kept them in docs/raw."""
    result: dict[str, Any] = json.loads((RAW / f"{name}.json").read_text())
    return result


def submit_table(result: dict[str, Any], reference: dict[str, Any] | None) -> list[str]:
    arms = result["arms"]
    rows = [
        "| arm | jobs/s | x the sequential `sbatch` loop | x the original, same concurrency "
        "| x a bare slurmrestd, same concurrency | rounds (jobs/s) |",
        "|---|---|---|---|---|---|",
    ]
    for name, arm in arms.items():
        rounds = " ".join(f"{r:.0f}" for r in arm["rounds"])
        versus = f"{arm['x_original']:.2f}" if "x_original" in arm else ""
        bare = f"{arm['x_bare']:.2f}" if "x_bare" in arm else ""
        rate = f"{arm['jobs_per_s']:.0f}"
        rows.append(f"| {describe(name)} | {rate} | {arm['x_loop']:.2f} | {versus} | {bare} | {rounds} |")
    if reference is not None and not any(n.startswith("original@") for n in arms):
        when = reference["machine"]["date"]
        for name, arm in reference["arms"].items():
            if name.startswith("original@"):
                rows.append(
                    f"| {describe(name)} (recorded reference, {when}) | {arm['jobs_per_s']:.0f} "
                    f"| {arm['x_loop']:.2f} (against that run's loop) | | | |"
                )
    return rows


def pods_table(result: dict[str, Any]) -> list[str]:
    """Each round's times, and the kubelet's on each plane it ran on (the real one first)."""
    planes = list(result.get("planes") or {"memory": result})
    heads = "".join(
        f"| pods through the kubelet, {PLANE_NAMES[p]} (s) | x the loop | x red-box's time " for p in planes
    )
    rows = [
        f"| round | sequential `sbatch` loop (s) | red-box alone (s) {heads}|",
        "|---|---|---" + "|---|---|---" * len(planes) + "|",
    ]
    for number, r in enumerate(result["rounds"], 1):
        times = [(r.get("planes") or {"memory": r})[p]["kubelet_s"] for p in planes]
        rows.append(
            f"| {number} | {r['loop_s']:.1f} | {r['redbox_s']:.1f} "
            + "".join(f"| {t:.1f} | {r['loop_s'] / t:.2f} | {t / r['redbox_s']:.2f} " for t in times)
            + "|"
        )
    medians = [(result.get("planes") or {"memory": result})[p] for p in planes]
    rows.append(
        "| median | | " + "".join(f"| | {m['x_loop']:.2f} | {m['x_redbox_time']:.2f} " for m in medians) + "|"
    )
    return rows


def cpu_table(result: dict[str, Any]) -> list[str]:
    """CPU per job by part of the system for each submission arm (median of the rounds), and the
    most each arm could reach on the machine's cores at that CPU per job."""
    arms = {name: arm for name, arm in result["arms"].items() if "cpu_ms_per_job" in arm}
    if not arms or "loop" not in arms:
        return []
    cores = int(result["machine"]["cores"])
    loop_rate = arms["loop"]["jobs_per_s"]
    slurm_side = ("sbatch", "slurmctld", "munged", "slurmdbd+db")
    rows = [
        "Where the CPU goes, per job (ms of CPU, median of the rounds, read from /proc by"
        " `bench/cpu_meter.py`): the server itself; the `sbatch` it spawned (its reaped children;"
        " for the loops, the benchmark's); Slurm's daemons (slurmdbd with its MariaDB); the client"
        " driving the arm (the benchmark's process). Cores busy = jobs/s x total CPU per job. The"
        f" bound is the most an arm could reach with all {cores} cores busy at its CPU per job"
        f" ({cores} x 1000 / total jobs/s), against the loop's measured rate.",
        "",
        "| arm | " + " | ".join(cpu_meter.PARTS) + " | cores busy | bound on the cores, x the loop |",
        "|---|" + "---|" * (len(cpu_meter.PARTS) + 2),
    ]
    medians: dict[str, dict[str, float]] = {}
    for name, arm in arms.items():
        # Runs recorded before a part was measured (slurmrestd) read it as 0.
        rounds = arm["cpu_ms_per_job"]
        parts = {part: cpu_meter.median([r.get(part, 0.0) for r in rounds]) for part in cpu_meter.PARTS}
        medians[name] = parts
        busy = arm["jobs_per_s"] * parts["total"] / 1000
        bound = cores * 1000 / parts["total"] / loop_rate
        cells = " | ".join(f"{parts[p]:.2f}" for p in cpu_meter.PARTS)
        rows.append(f"| {describe(name)} | {cells} | {busy:.2f} | {bound:.2f} |")
    # The kubelet's path: through slurmrestd where the run had it, else through sbatch.
    keyed = [n for n in medians if n.startswith("rest-keys@")] or [
        n for n in medians if n.startswith("redbox-keys@")
    ]
    if keyed:
        name = keyed[-1]
        fixed = sum(medians[name][p] for p in (*slurm_side, "client"))
        room = cores * 1000 / (1.6 * loop_rate) - fixed
        rows += [
            "",
            f"At 1.6x the loop ({1.6 * loop_rate:.0f} jobs/s) on {cores} cores, a job may cost"
            f" {cores * 1000 / (1.6 * loop_rate):.2f} ms of CPU in all; Slurm's side (`sbatch` and"
            f" the daemons) and the client took {fixed:.2f} ms of it in the arm {describe(name)},"
            f" which leaves {room:.2f} ms per job for the server.",
        ]
    return rows


def pods_cpu(result: dict[str, Any]) -> list[str]:
    """CPU per pod by part of the system through the kubelet (median of the rounds), on each plane,
    and the most the pods could reach on the machine's cores at that CPU per pod."""
    planes = list(result.get("planes") or {"memory": result})
    read = {p: pods_goals.plane_cpus(result, p) for p in planes}
    if not all(all(read[p]) for p in planes):
        return []
    cpus = {p: [cpu for cpu in read[p] if cpu] for p in planes}
    cores = int(result["machine"]["cores"])
    parts = list(cpus[planes[0]][0])
    rows = [
        "CPU per pod while the pods went through the kubelet (ms, median of the rounds; `sbatch` is"
        " red-box's reaped children, apiserver is kube-apiserver or the in-memory one, controllers the"
        " controller-manager and scheduler, client is the benchmark creating and watching the pods). The"
        f" bound is the most the pods could reach with all {cores} cores busy at this CPU per pod,"
        " against each round's loop (median of the rounds):",
        "",
        "| plane | " + " | ".join(parts) + " | bound on the cores, x the loop |",
        "|---|" + "---|" * (len(parts) + 1),
    ]
    for p in planes:
        medians = {part: cpu_meter.median([cpu[part] for cpu in cpus[p]]) for part in parts}
        # Each round's bound against its own loop, then their median (as the speedups are taken).
        bound = pods_goals.bound(result, cpus[p], cores)
        rows.append(
            f"| {PLANE_NAMES[p]} | "
            + " | ".join(f"{medians[part]:.2f}" for part in parts)
            + f" | {bound:.2f} |"
        )
    goal_rows = pods_goals.goals(result)
    return [*rows, *(["", *goal_rows] if goal_rows else [])]


def describe(arm: str) -> str:
    name, _, concurrency = arm.partition("@")
    words = {
        "loop": "sequential `sbatch` loop",
        "parallel4": "4 `sbatch` at once",
        "redbox-keys": "red-box, idempotency keys (as the kubelet)",
        "redbox-nokeys": "red-box, no keys",
        "rest-keys": "red-box through its slurmrestd, idempotency keys (as the kubelet)",
        "rest-nokeys": "red-box through its slurmrestd, no keys",
        "original": "the original Go red-box",
        "before-keys": "red-box before the change (`--before`), keys",
        "before-rest-keys": "red-box before the change (`--before`) through its slurmrestd, keys",
        "rest-single": "red-box through its slurmrestd, keys, one SubmitJob call per job",
        "rest-kubelet": "red-box through its slurmrestd, keys, the kubelet's burst (SubmitJobs of 64 x 2)",
        "go-single": "red-box through its slurmrestd, keys, one SubmitJob call per job, the Go client",
        "bare-rest": "a bare slurmrestd posted to directly (no red-box)",
    }
    text = words.get(name, name)
    return f"{text}, {concurrency} in flight" if concurrency else text


def write_docs(
    submit: dict[str, Any],
    pods: dict[str, Any] | None,
    status: dict[str, Any] | None = None,
    scale: dict[str, Any] | None = None,
    logs: dict[str, Any] | None = None,
    slurmjobs: dict[str, Any] | None = None,
    stats: list[dict[str, Any]] | None = None,
) -> None:
    reference = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else None
    m = submit["machine"]
    table = submit_table(submit, reference)
    pod_rows: list[str] = []
    if pods is not None:
        p = pods["machine"]
        pod_rows = [
            f"Pods to jobs, {p['date']} (load {p['load']}): `bench/kubelet_submit.py --pods {pods['pods']}`,"
            f" {pods['workers']} submissions in flight"
            + (", red-box through its slurmrestd as the job owner" if pods.get("slurm_api") == "rest" else "")
            + "; the time from creating the first pod to every pod"
            " annotated with its job id, end to end (API server, kubelet, red-box, Slurm); through "
            + " and through ".join(PLANE_NAMES[p] for p in (pods.get("planes") or {"memory": pods}))
            + (" (their order rotated from round to round)" if len(pods.get("planes") or {}) > 1 else "")
            + ":",
            "",
            *pods_table(pods),
            "",
            *pods_cpu(pods),
        ]
    not_run = [f"- `{script}`: {what}." for script, what in NOT_RUN]
    goal_rows = submit_goals.goals(submit)
    before = []
    if "before" in submit:
        before = [f"The `--before` arms run red-box as of git revision {submit['before']}.", ""]
    doc = [
        "# Performance",
        "",
        "Generated by `bench/run-all` from the benchmarks' own output (kept in `docs/raw/`); do not edit.",
        "",
        f"Run {m['date']} on {m['cores']} cores (load average at the start: {m['load']}; the machine",
        "is shared with other work, so the ratios, measured in one run, mean more than jobs/s),",
        f"{m['slurm']}, Kubernetes {m['kubernetes']}, Python {m['python']}.",
        "",
        "## Submission",
        "",
        f"`bench/redbox_submit.py {submit['count']}`: every arm submits {submit['count']} held jobs per",
        "round to one partition, arms interleaved round by round; jobs/s is the median of the",
        "rounds, each ratio the median of the ratios taken within each round (arms of one round share",
        f"its minute of the shared machine). Raw output: `docs/raw/{SUBMIT}.txt`. The original Go",
        "red-box is built by hand from sylabs/wlm-operator's tree with the modules it vendors",
        "(`go build -mod=vendor ./cmd/red-box`), which CI cannot do: its figure is a recorded",
        'reference unless the run had it. The single calls "the Go client" sends come from this',
        "checkout's Go contract client (`wlmclient submit`, contract/go/cmd/wlmclient), built when Go",
        "is installed; the others' from this benchmark's Python gRPC client.",
        "",
        *table,
        "",
        *cpu_table(submit),
        "",
        *([*goal_rows, ""] if goal_rows else []),
        *before,
        "## Pods to jobs",
        "",
        f"Raw output: `docs/raw/{PODS}.txt`. Each round runs the loop, red-box alone (the same jobs,"
        " translated by the kubelet's code, before and after the kubelet: their mean), then the pods.",
        "",
        *(pod_rows or ["Not run yet."]),
        "",
        "## Status at steady state",
        "",
        *(status_section(status, status.get("before", "")) if status else ["Not run yet."]),
        "",
        "## The kubelet at 10,000 pods",
        "",
        *(scale_section(scale) if scale else ["Not run yet."]),
        "",
        "## `kubectl logs -f`",
        "",
        *(logs_section(logs) if logs else ["Not run yet."]),
        "",
        "## SlurmJobs end to end",
        "",
        *(slurmjobs_section(slurmjobs) if slurmjobs else ["Not run yet."]),
        "",
        "## `kubectl top`: usage per interval",
        "",
        *(stats_section(stats) if stats else ["Not run yet."]),
        "",
        "## `kubectl exec`: round trips",
        "",
        *(exec_section(kept(EXEC)) if (RAW / f"{EXEC}.json").exists() else ["Not run yet."]),
        *(["", *hops_section(kept(HOPS))] if (RAW / f"{HOPS}.json").exists() else []),
        "",
        "## Many tenants through one kubelet",
        "",
        *(tenants_section(kept(TENANTS)) if (RAW / f"{TENANTS}.json").exists() else ["Not run yet."]),
        "",
        "## One kubelet, many virtual nodes (real control plane)",
        "",
        *(
            nodes_scale_section(
                kept(NODES_SCALE), kept(CLUSTERS_SCALE) if (RAW / f"{CLUSTERS_SCALE}.json").exists() else None
            )
            if (RAW / f"{NODES_SCALE}.json").exists()
            else ["Not run yet."]
        ),
        "",
        "## Not run by `bench/run-all` yet",
        "",
        "These scripts print their own figures; none is quoted here until this script runs it,",
        "and each needs reframing first:",
        "",
        *not_run,
        "",
    ]
    DOC.write_text("\n".join(doc))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs-only", action="store_true", help="rewrite the docs from docs/raw, run nothing")
    p.add_argument("--original", default=os.environ.get("WLMVK_ORIGINAL_REDBOX", ""))
    p.add_argument("--count", type=int, default=300, help="jobs per submission arm and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pods", type=int, default=1000, help="pods per round of kubelet_submit.py")
    p.add_argument(
        "--before", default="", help="also red-box (and the kubelet, for status) as of this git revision"
    )
    p.add_argument("--status-pods", type=int, default=1000, help="held pods of status_steady.py")
    p.add_argument(
        "--only", action="append", choices=("performance", "reliability"), help="run only this part"
    )
    p.add_argument(
        "--rerun",
        action="append",
        choices=PERFORMANCE_BENCHES,
        help="run only this benchmark of the performance part (the others' figures are read from docs/raw)",
    )
    faults_section.add_arguments(p)
    args = p.parse_args()
    RAW.mkdir(parents=True, exist_ok=True)
    parts = args.only or ["performance", "reliability"]
    if "reliability" in parts:
        faults_section.reliability(run, RAW, RELIABILITY, args)
    if "performance" in parts:
        performance(args)
    return 0


def performance(args: argparse.Namespace) -> None:
    """Run the benchmarks (all, or those ``--rerun`` names: the others are read back from
    docs/raw as their last run kept them) and rewrite the docs."""
    rerun = set(args.rerun or ([] if args.docs_only else PERFORMANCE_BENCHES))

    def kept_or_none(name: str) -> dict[str, Any] | None:
        return kept(name) if (RAW / f"{name}.json").exists() else None

    submit, status = kept_or_none(SUBMIT), kept_or_none(STATUS)
    with tempfile.TemporaryDirectory(prefix="before") as tree:
        before = _before_tree(args.before, Path(tree)) if args.before and rerun & {SUBMIT, STATUS} else ""
        if SUBMIT in rerun:
            argv = ["redbox_submit.py", str(args.count), "--rounds", str(args.rounds)]
            argv += ["--original", args.original] if args.original else []
            argv += ["--before", before] if before else []
            submit = run(SUBMIT, argv)
            if before:
                submit["before"] = args.before
                (RAW / f"{SUBMIT}.json").write_text(json.dumps(submit, indent=1))
            if args.original:
                REFERENCE.write_text(json.dumps(submit, indent=1))
        if STATUS in rerun:
            status = run(STATUS, status_argv(args.status_pods, before))
            if before:
                status["before"] = args.before
                (RAW / f"{STATUS}.json").write_text(json.dumps(status, indent=1))
    if PODS in rerun:
        run(PODS, ["kubelet_submit.py", "--pods", str(args.pods), "--rounds", str(args.rounds)])
    if LOGS in rerun:
        run(LOGS, LOGS_ARGV)
    if SLURMJOBS in rerun:
        run(SLURMJOBS, SLURMJOBS_ARGV)
    if "stats" in rerun:
        for name, steps in RUNS.items():
            run(name, stats_argv(steps))
    if SCALE in rerun:
        run(SCALE, scale_argv())
    if EXEC in rerun:
        run(EXEC, EXEC_ARGV)
        run(HOPS, HOPS_ARGV)
    if TENANTS in rerun:
        run(TENANTS, TENANTS_ARGV)
    if NODES_SCALE in rerun:
        run(NODES_SCALE, NODES_SCALE_ARGV)
    if CLUSTERS_SCALE in rerun:
        run(CLUSTERS_SCALE, CLUSTERS_SCALE_ARGV)
    if submit is None:
        raise SystemExit(f"no submission figures in {RAW}: run {SUBMIT} first")
    stats = [kept(n) for n in RUNS if (RAW / f"{n}.json").exists()]
    write_docs(
        submit,
        kept_or_none(PODS),
        status,
        kept_or_none(SCALE),
        kept_or_none(LOGS),
        kept_or_none(SLURMJOBS),
        stats,
    )
    print(f"wrote {DOC.relative_to(ROOT)}")


def _before_tree(revision: str, tree: Path) -> str:
    """red-box's (and the kubelet's) sources as of ``revision``, unpacked in ``tree``: its src path."""
    archive = subprocess.run(["git", "archive", revision, "src"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    project = subprocess.run(
        ["git", "show", f"{revision}:pyproject.toml"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if "rust-codec" not in project.stdout:
        # That revision decoded messages in Python: hide the codec installed since.
        (tree / "src" / "betterproto_rust_codec.py").write_text("raise ModuleNotFoundError\n")
    tree.chmod(0o755)  # status_steady runs that red-box as the benchmarks' user
    return f"{tree}/src"


if __name__ == "__main__":
    sys.exit(main())
