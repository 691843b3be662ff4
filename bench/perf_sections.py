"""The steady-state benchmarks bench/run-all runs, and the sections of docs/performance.md they fill.

``status_steady.py`` runs twice: with 1000 pods (what status costs Slurm per minute, and how
soon a change in Slurm reaches the pod; with ``--before REV`` that revision's red-box and
kubelet in the same run) and with 10,000 pods (the kubelet's memory, sampled throughout, and
its CPU per tick). Tables come from the scripts' JSON, never typed.
"""

from __future__ import annotations

from typing import Any

from wlmvk.redbox.files import TAIL_INTERVAL

STATUS = "status-steady"
SCALE = "kubelet-scale"
LOGS = "logs-follow"
SCALE_PODS = 10_000
LOGS_ARGV = ["logs_follow.py", "--pods", "20", "--followers", "200"]
PLANE_NAMES = {"real": "kube-apiserver", "memory": "the in-memory API server"}


def status_argv(pods: int, source: str) -> list[str]:
    # Both of red-box's ways to read status, one arm each in the same run: squeue (cli) and
    # slurmrestd (rest). --settle 120: a REST red-box pauses its look for up to 60 s where it
    # cannot use the dump (more than DUMP_MAX_JOBS jobs in the cluster); the window measures
    # after that, at steady state.
    argv = ["status_steady.py", "--pods", str(pods), "--window", "60", "--changes", "40", "--settle", "120"]
    return argv + ["--slurm-api", "cli,rest"] + (["--source", source] if source else [])


def scale_argv() -> list[str]:
    return ["status_steady.py", "--pods", str(SCALE_PODS), "--window", "60", "--changes", "20"]


def _arm(name: str, before: str) -> str:
    if name == "before":
        return f"before (git {before})"
    _, _, api = name.partition("-")
    return f"now, `--slurm-api {api}`" if api else "now"


def status_section(result: dict[str, Any], before: str = "") -> list[str]:
    m = result["machine"]
    rows = [
        "| arm | slurmctld RPCs/min | slurmdbd RPCs/min | per 5 s interval (goal <= 2) | squeue/min "
        "| scontrol/min | red-box CPU s/min | slurmrestd CPU s/min | kubelet CPU s/min "
        "| change -> pod status p50 / p95 / max (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, arm in result["arms"].items():
        ran = arm["commands_per_min"]
        cpu = arm["cpu_s_per_min"]
        void = " (a daemon restarted: void)" if arm["restarted"] else ""
        rows.append(
            f"| {_arm(name, before)}{void} | {arm['slurmctld_per_min']:.1f} | {arm['slurmdbd_per_min']:.1f} "
            f"| {arm['per_tick']:.2f} | {ran.get('squeue', 0):.1f} | {ran.get('scontrol', 0):.1f} "
            f"| {cpu['red-box']:.2f} | {cpu.get('slurmrestd', 0.0):.2f} | {cpu['kubelet']:.2f} "
            f"| {arm['change_p50_s']:.2f} / {arm['change_p95_s']:.2f} / {arm['change_max_s']:.2f} |"
        )
    return [
        f"`bench/status_steady.py --pods {result['pods']}`, {m['date']} (load {m['load']}): {result['pods']}"
        " pods on one virtual node run held jobs through the whole system at its default intervals"
        " (in-memory API server, `wlmvk kubelet`, red-box, each a process; red-box as the benchmarks'"
        " own Slurm user `wlmvk-bench`, so that slurmctld's and slurmdbd's per-user counters, read before"
        f" and after a {result['window_s']:.0f} s window, count only its calls). Then 40 jobs are"
        " `scancel`led one at a time at random moments and the time to the pod's status written (seen"
        " on a watch) is taken; the goal is p95 <= the 5 s interval + 1 s. Raw output:"
        f" `docs/raw/{STATUS}.txt`.",
        "",
        *rows,
        "",
        "One `squeue` costs slurmctld two RPCs in Slurm 22.05 (REQUEST_JOB_USER_INFO, and"
        " REQUEST_PARTITION_INFO, which squeue always loads: src/squeue/print.c), three without"
        " `--local` (REQUEST_FED_INFO first); `scontrol show partition` one, `scontrol show node` two."
        " Where a node has GPUs, red-box reads the node table at every discovery round for the GPUs in"
        " use (`scontrol -d -o show node`: two more RPCs per round, for all nodes and partitions;"
        " `tests/unit/redbox/slurm/cli/test_commands.py` counts them); the table above was measured"
        " before that, on the local Slurm, whose node has two GPUs."
        " A kubelet ticking every 5 s through squeue therefore costs 2 per interval by itself. Through"
        " slurmrestd (`rest`) a tick is one REQUEST_JOB_INFO: `GET /jobs?update_time=T` answers"
        ' "no change" or with every job of the cluster, which red-box reads instead of running'
        " squeue (docs/slurmrestd.md, Status); slurmrestd's CPU is what that dump costs.",
    ]


def scale_section(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    arm = result["arms"]["now"]
    per_tick = arm["kubelet_cpu_s_per_tick"]
    rows = [
        "| pods | kubelet peak RSS, sampled every 0.2 s (MB) | kubelet VmHWM (MB) | kubelet CPU per tick (s) "
        "| Slurm RPCs per 5 s interval | change -> pod status p95 (s) |",
        "|---|---|---|---|---|---|",
        f"| {result['pods']} | {arm['kubelet_rss_peak_sampled_mb']:.0f} | {arm['kubelet_rss_hwm_mb']:.0f} "
        f"| {per_tick if per_tick is not None else float('nan'):.3f} | {arm['per_tick']:.2f} "
        f"| {arm['change_p95_s']:.2f} |",
    ]
    return [
        f"`bench/status_steady.py --pods {result['pods']}`, {m['date']} (load {m['load']}): the same"
        " system with held jobs on real red-box and Slurm (MaxJobCount here is 50,000); the kubelet's"
        " resident memory is sampled every 0.2 s from its start to its end (not read once after a"
        " garbage collection), and VmHWM is the kernel's own high-water mark of it; CPU per tick is the"
        " kubelet's CPU time in the window over the ticks in it (one `squeue` each). Goals: <= 250 MB,"
        f" <= 0.5 s. Raw output: `docs/raw/{SCALE}.txt`.",
        "",
        *rows,
    ]


LOGS_PARTS = ("kubelet", "red-box", "apiserver", "etcd", "kubectl")
"""The parts whose CPU per followed line the logs table shows (etcd: the real plane only)."""


def logs_section(result: dict[str, Any]) -> list[str]:
    """docs/performance.md's section of ``logs_follow.py``: a row per plane, with CPU per line."""
    m = result["machine"]
    planes = result.get("planes") or {"memory": result}
    rows = [
        "| plane | lines | p50 (ms) | p95 (ms, goal < 250) | max (ms) | lines missed "
        + "".join(f"| {part} CPU per line (ms) " for part in LOGS_PARTS)
        + "|",
        "|---|---|---|---|---|---" + "|---" * len(LOGS_PARTS) + "|",
    ]
    for plane, r in planes.items():
        cpu = r.get("cpu_ms_per_line") or {}
        cells = "".join(f"| {cpu[part]:.3f} " if part in cpu else "| " for part in LOGS_PARTS)
        rows.append(
            f"| {PLANE_NAMES[plane]} | {r['lines']} | {r['p50_s'] * 1000:.0f} | {r['p95_s'] * 1000:.0f}"
            f" | {r['max_s'] * 1000:.0f} | {r.get('missing', '')} {cells}|"
        )
    window = result.get("window_s")
    return [
        f"`bench/logs_follow.py --pods {result['pods']} --followers {result['followers']}`, {m['date']}"
        f" (load {m['load']}): {result['followers']} real `kubectl logs -f` processes (`{result['kubectl']}`)"
        f" at once on {result['pods']} running Slurm jobs"
        + (f" (the local node declared {result['node_cpus']} CPUs)" if "node_cpus" in result else "")
        + ", spread evenly, through each plane's API server"
        " (kube-apiserver with the real plane's own kubeconfig; the in-memory server's pods/log proxy) to"
        " the kubelet's HTTPS API and red-box's TailFile; each job prints its clock every 0.25 s and a"
        " line's latency is the time kubectl printed it minus the time in it."
        + (
            f" Measured over a {window:.0f} s window that opens once every follower has printed a line"
            " (each one's backlog and the 200 kubectl processes' start left out), over the lines written"
            " in it; CPU per line is each part's CPU time in the window over the lines the followers"
            " printed in it (kubectl: all the followers together); a line missed is one another follower"
            " of the same job printed and this one had not 10 s after the window."
            if window
            else " Backlog left out."
        )
        + f" Raw output: `docs/raw/{LOGS}.txt`.",
        "",
        *rows,
        *_logs_verdict(planes),
    ]


def _logs_verdict(planes: dict[str, Any]) -> list[str]:
    """Each plane's p95 against the goal, and what the median is made of."""
    if "cpu_ms_per_line" not in next(iter(planes.values())):
        return []  # a run recorded before the goal was 250 ms
    verdicts = "; ".join(
        f"{PLANE_NAMES[plane]} {r['p95_s'] * 1000:.0f} ms ({'met' if r['p95_s'] < 0.25 else 'missed'})"
        for plane, r in planes.items()
    )
    return [
        "",
        f"p95 against the goal of 250 ms: {verdicts}. A line written waits for red-box's next look at"
        f" the file, every {TAIL_INTERVAL:g} s (`redbox/files.py`), {TAIL_INTERVAL * 500:.0f} ms on"
        " average: most of the median. Before red-box's server took more than h2's default 100"
        " streams on a connection (`redbox/listening.py`), the 101st follower waited for another to"
        " end, and so did the kubelet's status tick.",
    ]


TENANTS = "tenants-scale"
TENANTS_ARGV = ["tenants_scale.py", "--tenants", "50", "--pods", "1000", "--window", "60"]


def tenants_section(result: dict[str, Any]) -> list[str]:
    """docs/performance.md's section of ``tenants_scale.py``: one tenant against many, one run."""
    m = result["machine"]
    single, many = result["arms"]["single"], result["arms"]["tenants"]
    rows = [
        "| arm | namespaces | red-boxes | pods to job ids (s) | pods/s | slurmctld RPCs per 5 s "
        "| slurmdbd RPCs per 5 s | kubelet CPU s/min | tenants' red-boxes RSS (MB, summed) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, arm in (("one tenant (no SlurmTenant)", single), (f"{many['tenants']} tenants", many)):
        void = " (a daemon restarted: void)" if arm["restarted"] else ""
        rss = f"{arm['tenant_red_boxes_rss_mb']:.0f}" if arm["tenants"] else "-"
        rows.append(
            f"| {name}{void} | {arm['namespaces']} | {1 + arm['tenants']} | {arm['to_jobs_s']:.1f} "
            f"| {arm['pods_per_s']:.1f} | {arm['slurmctld_per_tick']:.2f} | {arm['slurmdbd_per_tick']:.2f} "
            f"| {arm['kubelet_cpu_s_per_min']:.2f} | {rss} |"
        )
    rounds = result.get("rounds", [])
    return [
        f"`bench/tenants_scale.py --tenants {result['tenants']} --pods {result['pods']}`, {m['date']}"
        f" (load {m['load']}; the ratios within this one run are what count): two arms, each a"
        + (
            f" burst in {len(rounds)} rounds, the arms' order rotated from round to round, each round a"
            if rounds
            else ""
        )
        + " fresh system (in-memory API server, one `wlmvk kubelet`, red-boxes, each a process), each with"
        f" {result['pods']} held pods on one virtual node. One tenant: no SlurmTenant, every pod in one"
        f" namespace, one red-box. {result['tenants']} tenants: {result['tenants']} SlurmTenants, one"
        " namespace each, the pods spread evenly; each tenant its own Unix user (made for the run"
        " with `useradd --system` and an account of its own with `sacctmgr`, both removed after) and"
        " its own red-box as that user (`--red-box USER=SOCKET`), red-box's default settings (its"
        " slurmrestd). RPCs are slurmctld's and slurmdbd's per-user counters of the run's users over"
        f" a {many['window_s']:.0f} s window at steady state; the memory is each tenant red-box's RSS"
        f" with its children's (its slurmrestd, when it runs one), summed. Raw output:"
        f" `docs/raw/{TENANTS}.txt`.",
        "",
        *rows,
        "",
        *_tenants_rounds(rounds),
        f"Pods to job ids with {many['tenants']} tenants: {result['rate_ratio']:.2f}x the one tenant's"
        f" rate{' (the medians of the rounds)' if rounds else ''} (goal >= 0.9x). slurmctld RPCs per"
        f" 5 s: {result['slurmctld_per_tick_added'] + 0.0:+.2f} against"
        " the one tenant's (goal <= +1): the kubelet's tick looks at every tenant's jobs once through"
        " the default red-box (ObserveStates) and the tenants' red-boxes' recorders are told the jobs"
        " are followed (FollowJobs), docs/tenancy.md. The tenants' red-boxes hold"
        f" {many['tenant_red_boxes_rss_mb']:.0f} MB of the login node's memory"
        f" ({many['tenant_red_boxes_rss_mb'] / max(1, many['tenants']):.0f} MB per tenant user, the"
        f" largest {many['tenant_red_box_rss_mb_max']:.0f} MB).",
        *_tenants_burst_cpu(result),
        "",
        _tenants_dbd(result),
    ]


def _tenants_rounds(rounds: list[dict[str, Any]]) -> list[str]:
    """Each round's rates, in the order the arms ran (runs that had rounds): the table's pods to
    job ids and CPU by part are their medians; the RPCs and memory are the last round's."""
    if not rounds:
        return []
    said = [
        f"round {i}: "
        + ", ".join(f"{label} {r[label]['pods_per_s']:.0f} pods/s" for label in r["order"])
        + f" ({r['tenants']['pods_per_s'] / r['single']['pods_per_s']:.2f}x)"
        for i, r in enumerate(rounds, 1)
    ]
    return [
        "Rounds (single: the one tenant; tenants: the many): " + "; ".join(said) + ". The table's pods"
        " to job ids and the CPU by part below are the medians of the rounds; the RPCs and the memory"
        " are the last round's, at its steady state.",
        "",
    ]


def _tenants_burst_cpu(result: dict[str, Any]) -> list[str]:
    """CPU by part from the first pod to the last job id, both arms (runs that recorded it)."""
    single, many = result["arms"]["single"], result["arms"]["tenants"]
    if "burst_cpu_s" not in single or "burst_cpu_s" not in many:
        return []
    cores = int(result["machine"]["cores"])
    one, all_ = single["burst_cpu_s"], many["burst_cpu_s"]
    parts = "; ".join(f"{part} {one[part]:.2f} and {all_[part]:.2f}" for part in one)
    busy = [sum(arm["burst_cpu_s"].values()) / (cores * arm["to_jobs_s"]) for arm in (single, many)]
    apart = "their Slurm commands" in one
    ran = (
        "the Slurm commands the red-boxes ran apart"
        if apart
        else "the red-boxes with the Slurm commands they ran"
    )
    return [
        "",
        f"CPU seconds from the first pod created to the last job id, by part (one tenant, then"
        f" {many['tenants']} tenants; {ran}): {parts}; in all"
        f" {sum(one.values()):.2f} and {sum(all_.values()):.2f}, that is {100 * busy[0]:.0f}% and"
        f" {100 * busy[1]:.0f}% of the {cores} cores over each arm's time (the rest of the machine's"
        " load not counted).",
        *(_tenants_bound(result) if apart else []),
    ]


def _tenants_bound(result: dict[str, Any]) -> list[str]:
    """What the tenants' burst cost beyond the one tenant's, and the rate its CPU allows."""
    single, many = result["arms"]["single"], result["arms"]["tenants"]
    cores = int(result["machine"]["cores"])
    one, all_ = single["burst_cpu_s"], many["burst_cpu_s"]
    grew = sorted(((all_[p] - one[p], p) for p in one if all_[p] - one[p] >= 0.05), reverse=True)
    more = ", ".join(f"{part} +{extra:.2f}" for extra, part in grew)
    floor = sum(all_.values()) / cores  # the burst's CPU on every core, nothing else running
    ceiling = single["to_jobs_s"] / floor
    budget = cores * single["to_jobs_s"] / 0.9
    return [
        "",
        f"The bound: the {many['tenants']} tenants' burst cost {sum(all_.values()) - sum(one.values()):.2f}"
        f" CPU s more than the one tenant's ({more}). Its {sum(all_.values()):.2f} CPU s take at least"
        f" {floor:.2f} s on {cores} cores, so at that CPU it can reach at most {ceiling:.2f}x the one"
        f" tenant's rate; 0.9x needs the burst within {budget:.2f} CPU s. What grows: the pods,"
        f" spread evenly over the tenants ({result['pods'] // max(1, many['tenants'])} each), reach each"
        " red-box a few at a time, so few meet in one `SubmitJobs`, where red-box's gRPC costs more per"
        " call than its submission per job, and each call is one request to that tenant's slurmrestd"
        " (docs/slurmrestd.md, where red-box's CPU goes). Each tenant's red-box reads its own user's"
        " keys (`squeue -u`, `sacct -u`) when it starts, before the pods come; the read is trusted"
        " for 60 s (KEY_INDEX_TTL), which this run's burst came within, so a burst after a longer"
        " quiet starts that read again in each tenant's red-box (in the background: submissions"
        " wait for it only past 120 s), as every burst did before red-box read it at start.",
    ]


def _tenants_dbd(result: dict[str, Any]) -> str:
    """What slurmdbd's RPCs were in the run: the status check as the run's revision made it."""
    cpu = (
        "the kubelet's CPU is mostly the one look's answer (every job's state, decoded each tick), the"
        " FollowJobs calls (one per tenant user per tick) and the status checks."
    )
    if result.get("status_check") == "look":
        return (
            "slurmdbd's RPCs are the kubelet's SlurmTenant status check: one look through the default"
            " red-box at every tenant user (two `sacctmgr` every 60 s whatever the number of tenants,"
            " docs/tenancy.md); " + cpu
        )
    return (
        "What grew with the tenants in this run: slurmdbd's RPCs were the kubelet's SlurmTenant status"
        f" check as revision {result['machine']['revision']} made it (each tenant user's red-box ran two"
        " `sacctmgr` every 60 s), by the tenant users; " + cpu + " The check is one look since (two"
        " `sacctmgr` per check whatever the number of tenants: docs/tenancy.md#status-at-scale); this"
        " benchmark has not run again since."
    )
