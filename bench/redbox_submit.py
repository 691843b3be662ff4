"""Submission speed: red-box against ``sbatch`` itself, side by side in one run; prints ratios.

Arms, interleaved over ``--rounds`` rounds (so that a slow minute of the
machine hits every arm alike), each submitting ``count`` jobs of the same held
one-line script (``#SBATCH --hold``: nothing runs; every job is cancelled at
the end of its round):

- ``loop``: a sequential ``sbatch`` loop, the baseline every ratio divides by;
- ``parallel4``: four ``sbatch`` at once, about what Slurm itself can take here;
- ``redbox-keys@C``: red-box in its own process (as deployed), driven as the
  kubelet drives it, with the real client over its Unix socket, C calls in
  flight, each with its own idempotency key (the pod UID, in the kubelet);
- ``redbox-nokeys@C``: the same without keys (the original API's calls);
- ``rest-keys@C``, ``rest-nokeys@C``: the same two through red-box's own
  slurmrestd (``--slurm-api rest``; red-box runs as the job owner, uid 1000,
  as slurmrestd requires); the ``slurmrestd`` column is its CPU;
- ``rest-keys@W``, ``original@W`` for each ``--wide`` W (32): more calls in
  flight on the kubelet's path and on the original's, to see whether they
  fill the machine's cores;
- ``rest-single@C``: keyed jobs through red-box's slurmrestd, one SubmitJob call
  per job (as a client without batching sends them); ``rest-keys@C`` goes
  through the client's batching (``redboxclient.batching``: calls that meet go
  as one SubmitJobs), as the kubelet's does;
- ``rest-kubelet``: the kubelet's way in a burst: every job asked at once, so
  the client sends SubmitJobs of 64 keyed jobs, 2 calls in flight;
- ``go-single@C``: ``rest-single@C`` sent by the Go contract client
  (``wlmclient submit``, bench/go_submitter.py, ``--go-client PATH``) instead of
  this process: a compiled client's cost per call, as the bare arm's plain client's;
- ``bare-rest@C``: no red-box: a slurmrestd started as red-box starts its own,
  as the job owner, posted to directly by a plain HTTP client with C requests
  in flight (bench/bare_restd.py), the same job's body; the limit of the
  path red-box takes. Its ``server`` CPU column is that plain client's;
- ``original@C``: the original Go red-box (sylabs/wlm-operator's
  ``cmd/red-box``) behind the same client at the same concurrency, when
  ``--original PATH`` names its binary. CI cannot build it: its figure is a
  recorded reference (docs/performance.md), not a CI comparison.

``--before SRC`` adds ``before-keys@C`` and ``before-rest-keys@C``: red-box from
another source tree (say the commit before a change, ``git archive REV src | tar
-x -C DIR``; SRC is DIR/src), through sbatch and through its slurmrestd, so a
change is measured against its predecessor in the same run; with the Go client,
also ``before-go-single@C``, its single calls to that tree's red-box.

Every arm submits to the same partition (the original needs one named). The
arms run in a rotated order each round (round 2 starts with the second arm),
so that no arm always runs first or right after the same one. Each
figure is the median of the rounds; each ratio (to the loop, and of red-box to
the original at the same concurrency) is taken within each round and the
median of the rounds' ratios is printed: arms of one round share its minute
of a shared machine. ``--json FILE`` also writes the figures for ``bench/run-all``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import cpu_meter
import redbox_tallies
from go_submitter import go_submitter
from line_arm import LINE_LIMIT, LineArm, ended
from redbox_common import as_job_owner, red_box_process, scancel, wait_serving

from wlmvk.core import logging as wlog
from wlmvk.core import loop as event_loop
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.redboxclient.client import RedBoxClient
from wlmvk_dev import goclient

COUNT = 300
PARTITION = "debug"
SCRIPT = "#!/bin/sh\n#SBATCH --hold\n#SBATCH --output=/dev/null\ntrue\n"
SBATCH = ["sbatch", "--parsable", f"--partition={PARTITION}"]


def _sbatch_one() -> int:
    done = subprocess.run(SBATCH, input=SCRIPT, capture_output=True, text=True, check=True)
    return int(done.stdout.split(";")[0])


async def sbatch_loop(count: int) -> list[int]:
    return [_sbatch_one() for _ in range(count)]


async def sbatch_parallel(count: int, width: int = 4) -> list[int]:
    limit = asyncio.Semaphore(width)

    async def one() -> int:
        async with limit:
            proc = await asyncio.create_subprocess_exec(
                *SBATCH, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
            out, _ = await proc.communicate(SCRIPT.encode())
            return int(out.decode().split(";")[0])

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def through(client: RedBoxClient, count: int, *, concurrency: int, keyed: bool) -> list[int]:
    limit = asyncio.Semaphore(concurrency)

    async def one() -> JobId:
        key = uuid.uuid4().hex if keyed else ""
        async with limit:
            return await client.submit(JobSpec(script=SCRIPT, partition=PARTITION, idempotency_key=key))

    return [int(j) for j in await asyncio.gather(*(one() for _ in range(count)))]


@contextlib.asynccontextmanager
async def original_process(binary: str, pids: list[int]) -> AsyncIterator[RedBoxClient]:
    """The original Go red-box on its own socket, in a scratch directory (its sbatch runs there),
    as the job owner as ours runs (when this runs as root)."""
    home = Path(tempfile.mkdtemp(prefix="rborig", dir="/tmp"))
    socket = str(home / "rb.sock")
    argv = [binary, "-socket", socket]
    if os.geteuid() == 0:
        argv = as_job_owner(argv, home)
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    pids.append(proc.pid)
    client = RedBoxClient(socket, timeout=120)
    try:
        await wait_serving(client)
        yield client
    finally:
        await client.close()
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()  # its GracefulStop can wait for a connection grpclib keeps
            await proc.wait()


async def submitted_one_by_one(client: RedBoxClient, count: int, *, concurrency: int) -> list[int]:
    """Keyed jobs, each through its own SubmitJob call (no batching), ``concurrency`` in flight."""
    limit = asyncio.Semaphore(concurrency)

    async def one() -> JobId:
        spec = JobSpec(script=SCRIPT, partition=PARTITION, idempotency_key=uuid.uuid4().hex)
        async with limit:
            return await client._submit_one(spec)  # the one-call path the batcher falls back to

    return [int(j) for j in await asyncio.gather(*(one() for _ in range(count)))]


@contextlib.asynccontextmanager
async def bare_restd(pids: list[int]) -> AsyncIterator[LineArm]:
    """A bare slurmrestd and its plain client (their process's pid appended to ``pids``)."""
    helper = Path(__file__).with_name("bare_restd.py")
    proc = await asyncio.create_subprocess_exec(
        *as_job_owner([sys.executable, str(helper), PARTITION, SCRIPT]),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=LINE_LIMIT,
        cwd="/tmp",
    )
    pids.append(proc.pid)
    assert proc.stdout is not None
    assert proc.stdin is not None
    try:
        ready = await asyncio.wait_for(proc.stdout.readline(), 30)
        if not ready.startswith(b"ready "):
            raise RuntimeError(f"bench/bare_restd.py did not start: {ready[:300]!r}")
        yield LineArm(proc, "bench/bare_restd.py")
    finally:
        await ended(proc)


@contextlib.asynccontextmanager
async def red_box_from(
    source: str, pids: list[int], *, args: tuple[str, ...] = (), owner: bool = False
) -> AsyncIterator[RedBoxClient]:
    """red-box started from another source tree (its process imports ``wlmvk`` from ``source``)."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = source
    try:
        async with red_box_process(pids=pids, args=args, owner=owner) as client:
            os.environ.pop("PYTHONPATH")
            if saved is not None:
                os.environ["PYTHONPATH"] = saved
            yield client
    finally:
        if saved is not None:
            os.environ["PYTHONPATH"] = saved


Arm = Callable[[int], Awaitable[list[int]]]


def _arm(server: RedBoxClient, concurrency: int, *, keyed: bool) -> Arm:
    """``count`` jobs through ``server``, ``concurrency`` in flight."""
    return lambda count: through(server, count, concurrency=concurrency, keyed=keyed)


def rotated(names: list[str], number: int) -> list[str]:
    """``names`` starting at the ``number``-th (modulo their count): round ``number``'s order."""
    at = number % len(names)
    return names[at:] + names[:at]


async def measure(
    count: int,
    rounds: int,
    concurrency: list[int],
    original: str,
    before: str,
    wide: list[int],
    bare_arms: bool = True,
    only: frozenset[str] = frozenset(),
    go_client: str = "",
) -> tuple[dict[str, list[float]], dict[str, list[dict[str, float]]]]:
    """Each arm's jobs/s per round, and its CPU per job by part of the system per round."""
    rates: dict[str, list[float]] = {}
    costs: dict[str, list[dict[str, float]]] = {}
    ours_pid: list[int] = []
    rest_pid: list[int] = []
    theirs_pid: list[int] = []
    older_pid: list[int] = []
    older_rest_pid: list[int] = []
    bare_pid: list[int] = []
    go_pid: list[int] = []
    older_go_pid: list[int] = []
    # The processes that drive an arm for this one (the Go client), counted as its client's CPU.
    drivers: dict[str, list[int]] = {}
    # What each of this tree's red-boxes did in each round (index scans, GC, CPU), by its pid.
    ours_tallies, rest_tallies = redbox_tallies.Tallies(), redbox_tallies.Tallies()
    async with contextlib.AsyncExitStack() as stack:
        ours_args = ("--slurm-api", "cli", *ours_tallies.args)
        ours = await stack.enter_async_context(red_box_process(pids=ours_pid, args=ours_args))
        rest_args = ("--slurm-api", "rest")
        rest = await stack.enter_async_context(
            red_box_process(pids=rest_pid, args=(*rest_args, *rest_tallies.args), owner=True)
        )
        ours_tallies.pid, rest_tallies.pid = ours_pid[0], rest_pid[0]
        tallied = {t.pid: t for t in (ours_tallies, rest_tallies)}
        theirs = await stack.enter_async_context(original_process(original, theirs_pid)) if original else None
        older = await stack.enter_async_context(red_box_from(before, older_pid)) if before else None
        older_rest = (
            await stack.enter_async_context(red_box_from(before, older_rest_pid, args=rest_args, owner=True))
            if before
            else None
        )
        arms: dict[str, tuple[Arm, int | None]] = {
            "loop": (sbatch_loop, None),
            "parallel4": (sbatch_parallel, None),
        }
        # Every server's arms: (name, server, keyed, its pid); a server not started has none.
        servers = [
            ("redbox-keys", ours, True, ours_pid),
            ("redbox-nokeys", ours, False, ours_pid),
            ("rest-keys", rest, True, rest_pid),
            ("rest-nokeys", rest, False, rest_pid),
            ("original", theirs, False, theirs_pid),
            ("before-keys", older, True, older_pid),
            ("before-rest-keys", older_rest, True, older_rest_pid),
        ]
        for c in concurrency:
            for name, server, keyed, pids in servers:
                if server is not None:
                    arms[f"{name}@{c}"] = (_arm(server, c, keyed=keyed), pids[0])
        bare = await stack.enter_async_context(bare_restd(bare_pid)) if bare_arms else None
        go = older_go = None
        if go_client:
            driver = go_submitter(go_client, rest.socket_path, SCRIPT, PARTITION, go_pid)
            go = await stack.enter_async_context(driver)
            if older_rest is not None:
                driver = go_submitter(go_client, older_rest.socket_path, SCRIPT, PARTITION, older_go_pid)
                older_go = await stack.enter_async_context(driver)
        for c in concurrency:
            arms[f"rest-single@{c}"] = (
                lambda count, c=c: submitted_one_by_one(rest, count, concurrency=c),
                rest_pid[0],
            )
            if go is not None:
                arms[f"go-single@{c}"] = (lambda count, c=c: go.submit(count, c), rest_pid[0])
                drivers[f"go-single@{c}"] = go_pid
            if older_go is not None:
                arms[f"before-go-single@{c}"] = (
                    lambda count, c=c: older_go.submit(count, c),
                    older_rest_pid[0],
                )
                drivers[f"before-go-single@{c}"] = older_go_pid
            if bare is not None:
                arms[f"bare-rest@{c}"] = (lambda count, c=c: bare.submit(count, c), bare_pid[0])
        arms["rest-kubelet"] = (_arm(rest, 10**6, keyed=True), rest_pid[0])
        for c in wide:  # only the kubelet's path and the original: whether more in flight fills the cores
            for name, server, keyed, pids in servers:
                if server is not None and name in ("rest-keys", "original"):
                    arms[f"{name}@{c}"] = (_arm(server, c, keyed=keyed), pids[0])
        # Each server once before the rounds: a red-box builds its index of idempotency keys at
        # the first keyed call (all of the user's accounting of three days), as it does once
        # after a start; the rounds measure it up and running.
        for client in (ours, rest, theirs, older, older_rest):
            if client is not None:
                scancel(await through(client, 20, concurrency=4, keyed=client is not theirs))
        await cpu_meter.settled()
        if only:
            arms = {name: arm for name, arm in arms.items() if name == "loop" or name.split("@")[0] in only}
        for number in range(rounds):
            for name in rotated(list(arms), number):
                arm, server_pid = arms[name]
                tallies = tallied.get(server_pid or 0)
                before_tallies = await tallies.read() if tallies else None
                clients = drivers.get(name, [])
                before_cpu = cpu_meter.reading(server_pid, clients)
                before_machine = redbox_tallies.machine_cpu()
                started = time.perf_counter()
                ids = await arm(count)
                elapsed = time.perf_counter() - started
                busy = redbox_tallies.machine_cpu() - before_machine
                costs.setdefault(name, []).append(
                    cpu_meter.per_job(before_cpu, cpu_meter.reading(server_pid, clients), count)
                )
                cores = redbox_tallies.others(busy, costs[name][-1]["total"] * count / 1000, elapsed)
                costs[name][-1].update(cores)  # kept beside the round's CPU (bench/submit_goals.py)
                did = "  " + redbox_tallies.others_line(cores)
                if tallies and before_tallies:
                    diff = redbox_tallies.difference(before_tallies, await tallies.read())
                    did += "; " + redbox_tallies.line(diff)
                    costs[name][-1].update(redbox_tallies.notes(diff))
                scancel(ids)
                await cpu_meter.settled()
                rates.setdefault(name, []).append(count / elapsed)
                print(f"round {number + 1} {name:<18} {count / elapsed:7.1f} jobs/s{did}", flush=True)
    return rates, costs


def _ratio(arm: list[float], base: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(arm, base, strict=True))


def _in_flight(name: str) -> int:
    return int(name.partition("@")[2] or 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("count", type=int, nargs="?", default=COUNT, help="jobs per arm and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", default="8,16", help="calls in flight to red-box (comma list)")
    p.add_argument(
        "--wide",
        default="32",
        help="also red-box through its slurmrestd (keys) and the original at these (comma list; '' none)",
    )
    p.add_argument("--original", default=os.environ.get("WLMVK_ORIGINAL_REDBOX", ""))
    p.add_argument("--before", default="", help="also red-box from this source tree (its src directory)")
    p.add_argument(
        "--go-client",
        default=os.environ.get("WLMVK_GO_CLIENT", "auto"),
        help="the Go contract client's binary for the go-single arms; 'auto' (the default) builds"
        " contract/go/cmd/wlmclient when go is installed, '' leaves the arms out",
    )
    p.add_argument("--json", default="", help="also write the figures here")
    p.add_argument(
        "--arms", default="", help="only these arms (comma list of names without @C; the loop always runs)"
    )
    args = p.parse_args()
    wlog.configure("warning")
    go_client = args.go_client
    if go_client == "auto":
        try:
            go_client = str(goclient.build_wlmclient())
        except goclient.GoMissing as missing:
            print(f"no go-single arms: {missing}", file=sys.stderr)
            go_client = ""
    concurrency = [int(c) for c in args.concurrency.split(",")]
    wide = [int(c) for c in args.wide.split(",") if c]
    # On the loop the kubelet runs on (wlmvk.core.loop): this process is the kubelet's client.
    rates, costs = event_loop.run(
        measure(
            args.count,
            args.rounds,
            concurrency,
            args.original,
            args.before,
            wide,
            only=frozenset(a for a in args.arms.split(",") if a),
            go_client=go_client,
        )
    )
    print(f"\njobs per arm and round: {args.count}; rounds: {args.rounds}; partition: {PARTITION}")
    print(f"{'arm':<18} {'jobs/s':>7} {'x loop':>7} {'x orig':>7} {'x bare':>7}   rounds")
    figures = {}
    widest_bare = max((n for n in rates if n.startswith("bare-rest@")), default="", key=_in_flight)
    for name, values in rates.items():
        figure: dict[str, object] = {"jobs_per_s": statistics.median(values), "rounds": values}
        figure["cpu_ms_per_job"] = costs[name]
        # Each ratio is taken within a round (arms of one round share its minute of the
        # machine), and the figure is the median of the rounds' ratios.
        figure["x_loop"] = _ratio(values, rates["loop"])
        original = rates.get("original@" + name.partition("@")[2])
        if original is not None and "@" in name:
            figure["x_original"] = _ratio(values, original)
        # red-box through its slurmrestd against the bare slurmrestd at the same number in flight
        # (the kubelet's burst against the widest bare arm).
        if name.startswith(("rest-", "go-")):
            bare = rates.get(widest_bare if name == "rest-kubelet" else "bare-rest@" + name.partition("@")[2])
            if bare is not None:
                figure["x_bare"] = _ratio(values, bare)
        spread = " ".join(f"{v:.0f}" for v in values)
        versus = " ".join(
            f"{figure[key]:7.2f}" if key in figure else " " * 7 for key in ("x_original", "x_bare")
        )
        print(f"{name:<18} {statistics.median(values):7.1f} {figure['x_loop']:7.2f} {versus}   {spread}")
        figures[name] = figure
    print("\nCPU per job (ms, median of the rounds), by part of the system; the server's reaped")
    print("children are its sbatch; for the loops, sbatch is this process's children; for")
    print("bare-rest, the server is the plain client that posts to slurmrestd:")
    for line in cpu_meter.table(costs):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"count": args.count, "arms": figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
