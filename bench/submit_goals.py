"""The submission section's goals against the path's own limit (issue 35), from one run's figures.

Red-box through its slurmrestd is compared with a bare slurmrestd of the same release, flags and
user, posted to directly with the same number in flight (``bare-rest@C``): the kubelet's burst
(``rest-kubelet``, against the widest bare arm) and one SubmitJob call per job. The single-call
goal is judged on ``go-single@C``, whose calls come from the Go contract client (a compiled client,
0.1-0.15 ms of CPU per call, about what the bare arm's plain HTTP client costs), so that the two
arms differ by red-box; ``rest-single@C``, the same calls from this benchmark's Python gRPC client
(about 0.3 ms per call on the same 2 cores), is stated beside it with its client's CPU.
Each goal is stated as met or missed, its ratio to three places (the verdict is the unrounded
ratio's: 0.697 is short of 0.7 though it rounds to 0.70); a missed one is put beside the most
the arm could reach on the machine's cores at its CPU per job, against the bare arm's measured
rate (the bound).
"""

from __future__ import annotations

from typing import Any

import cpu_meter

KUBELET_X_BARE = 0.85
KUBELET_X_LOOP = 3.0
SINGLE_X_BARE = 0.7
KEYS_X_ORIGINAL = 1.9
ROUND_SPREAD = 0.15


def _total(arm: dict[str, Any]) -> float:
    """The arm's CPU per job in all (ms, median of the rounds)."""
    return _total_of(arm, "total")


def _spread(arm: dict[str, Any]) -> float:
    """How far the arm's farthest round is from the median of its rounds (a fraction)."""
    rounds = arm["rounds"]
    middle = cpu_meter.median(rounds)
    return max(abs(r - middle) for r in rounds) / middle if middle else 0.0


def _verdict(value: float, goal: float) -> str:
    return "met" if value >= goal else "missed"


def _bound(arm: dict[str, Any], bare: dict[str, Any], cores: int) -> str:
    """The most the arm could reach against the bare arm at its CPU per job: as busy as the bare
    arm kept the cores, and with every core busy."""
    total, bare_total = _total(arm), _total(bare)
    if not total or not bare_total or not bare["jobs_per_s"]:
        return ""
    busy = bare["jobs_per_s"] * bare_total / 1000
    full = cores * 1000 / total / bare["jobs_per_s"]
    return (
        f"; it costs {total:.2f} ms of CPU per job against the bare arm's {bare_total:.2f}, so with the"
        f" cores as busy as the bare arm kept them ({busy:.2f} of {cores}) it could reach at most"
        f" {bare_total / total:.2f}x, and {full:.2f}x with all {cores} busy"
    )


def goals(result: dict[str, Any]) -> list[str]:
    """The paragraph of goals, or nothing when the run had no bare slurmrestd arm."""
    arms: dict[str, dict[str, Any]] = result["arms"]
    bares = sorted((int(name.partition("@")[2]), name) for name in arms if name.startswith("bare-rest@"))
    if not bares:
        return []
    cores = int(result["machine"]["cores"])
    load = result["machine"]["load"]
    lines = [f"Against the path's own limit (goals on a quiet machine; load at the start {load}):"]
    kubelet = arms.get("rest-kubelet")
    if kubelet is not None and "x_bare" in kubelet:
        widest = arms[bares[-1][1]]
        x_bare, x_loop = kubelet["x_bare"], kubelet["x_loop"]
        lines.append(
            f"- the kubelet's burst: {x_bare:.3f}x the bare slurmrestd at {bares[-1][0]} in flight (goal >="
            f" {KUBELET_X_BARE}: {_verdict(x_bare, KUBELET_X_BARE)}), {x_loop:.2f}x the loop (goal >="
            f" {KUBELET_X_LOOP:g}: {_verdict(x_loop, KUBELET_X_LOOP)})"
            + (_bound(kubelet, widest, cores) if x_bare < KUBELET_X_BARE else "")
            + ";"
        )
    lines += _against_original(arms)
    for concurrency, name in bares:
        lines += _single(arms, concurrency, arms[name], cores)
    spreads = [
        (name, _spread(arm))
        for name, arm in arms.items()
        if name == "rest-kubelet" or name.startswith(("rest-single@", "go-single@", "bare-rest@"))
    ]
    if spreads:
        worst = max(spreads, key=lambda s: s[1])
        within = all(s <= ROUND_SPREAD for n, s in spreads if not n.startswith("bare-rest@"))
        lines.append(
            "- rounds against their median (goal: red-box's within"
            f" {ROUND_SPREAD:.0%}: {'met' if within else 'missed'}): "
            + ", ".join(f"{n} {s:.0%}" for n, s in spreads)
            + f"; the farthest, {worst[0]}."
        )
        lines += _farthest(arms, worst[0])
    return lines


def _single(arms: dict[str, dict[str, Any]], concurrency: int, bare: dict[str, Any], cores: int) -> list[str]:
    """One SubmitJob per job at ``concurrency`` in flight: the goal on the Go client's arm, the
    Python client's arm beside it (either alone when the run had only one)."""
    go, python = arms.get(f"go-single@{concurrency}"), arms.get(f"rest-single@{concurrency}")
    lines = []
    if go is not None and "x_bare" in go:
        x_bare = go["x_bare"]
        lines.append(
            f"- one SubmitJob per job from the Go contract client, {concurrency} in flight: {x_bare:.3f}x"
            f" the bare slurmrestd (goal >= {SINGLE_X_BARE}: {_verdict(x_bare, SINGLE_X_BARE)}; its client"
            f" {_total_of(go, 'client'):.2f} ms of CPU per job, the bare arm's"
            f" {_total_of(bare, 'server'):.2f})"
            + (_bound(go, bare, cores) if x_bare < SINGLE_X_BARE else "")
            + ";"
        )
    if python is not None and "x_bare" in python:
        x_bare = python["x_bare"]
        judged = go is None or "x_bare" not in go
        lines.append(
            f"- one SubmitJob per job from this benchmark's Python gRPC client, {concurrency} in flight:"
            f" {x_bare:.3f}x"
            + (f" (goal >= {SINGLE_X_BARE}: {_verdict(x_bare, SINGLE_X_BARE)})" if judged else "")
            + f"; its client {_total_of(python, 'client'):.2f} ms of CPU per job"
            + (_bound(python, bare, cores) if x_bare < SINGLE_X_BARE else "")
            + ";"
        )
    return lines


def _total_of(arm: dict[str, Any], part: str) -> float:
    """One part's CPU per job (ms, median of the rounds)."""
    return cpu_meter.median([r.get(part, 0.0) for r in arm.get("cpu_ms_per_job") or [{}]])


def _against_original(arms: dict[str, dict[str, Any]]) -> list[str]:
    """The kubelet's path (keyed jobs through the client's batching and red-box's slurmrestd)
    against the original Go red-box at the same number in flight, when the run had the original."""
    pairs = sorted(
        (int(name.partition("@")[2]), arm["x_original"])
        for name, arm in arms.items()
        if name.startswith("rest-keys@") and "x_original" in arm
    )
    if not pairs:
        return []
    worst = min(x for _, x in pairs)
    return [
        "- keyed jobs as the kubelet sends them against the original Go red-box at the same number"
        f" in flight (goal >= {KEYS_X_ORIGINAL}: {_verdict(worst, KEYS_X_ORIGINAL)}): "
        + ", ".join(f"{x:.3f}x at {c}" for c, x in pairs)
        + ";"
    ]


def _farthest(arms: dict[str, dict[str, Any]], name: str) -> list[str]:
    """What the farthest round of ``name`` shared its time with: other processes' cores, red-box's
    key index scans and garbage collections in it (bench/redbox_tallies.py), when the run kept them."""
    arm = arms[name]
    notes = arm.get("cpu_ms_per_job") or []
    if len(notes) != len(arm["rounds"]) or any("others_cores" not in n for n in notes):
        return []
    middle = cpu_meter.median(arm["rounds"])
    at = max(range(len(notes)), key=lambda i: abs(arm["rounds"][i] - middle))
    others = cpu_meter.median([n["others_cores"] for n in notes])
    theirs = (
        f"other processes kept {notes[at]['others_cores']:.2f} cores busy in it (median round: {others:.2f})"
    )
    if "index_scans" in notes[at]:
        theirs += (
            f", red-box started {notes[at]['index_scans']:.0f} key index scan(s) and spent"
            f" {notes[at]['gc_ms']:.1f} ms in garbage collection in it"
        )
    red_box = [arm_ for a, arm_ in arms.items() if a.startswith(("rest-", "go-"))]
    ours = [n for arm_ in red_box for n in arm_.get("cpu_ms_per_job") or []]
    scanned = sum(1 for n in ours if n.get("index_scans"))
    return [
        f"- {name}'s farthest round ({arm['rounds'][at]:.0f} jobs/s, median {middle:.0f}): {theirs}."
        f" In the whole run red-box scanned its key index in {scanned} of {len(ours)} rounds of its"
        f" slurmrestd arms, and spent at most {max((n.get('gc_ms', 0.0) for n in ours), default=0.0):.1f}"
        " ms of a round in garbage collection."
    ]
