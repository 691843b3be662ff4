"""``kubectl logs -f`` of a running Slurm job while red-box, the ssh forward or the kubelet die.

What Kubernetes promises a follower, and so what is asserted:

- The kubelet follows a container's log file on the node; a container runtime restarting
  underneath does not end the follow, and the stream a follower gets has each line once, in
  order (a follow broken by the node's own doing, log rotation, was kubernetes#115701, a bug).
  Here red-box and the ssh forward to it are that runtime side: killed with SIGKILL and
  restarted mid-follow, the follower goes on getting every line exactly once, in order.
- When the kubelet itself dies, the stream of every follower is cut and kubectl does not
  reconnect (kubernetes#4844: the runtime's log API has no offset to resume from). The API
  server copies the kubelet's stream into its own response and ends that response normally
  when the kubelet's breaks (kube-apiserver's responsewriters.StreamObject ignores io.Copy's
  error; the in-memory server does the same), so kubectl ends with 0, unable to tell the cut
  from the end. What it printed is a prefix of the output, each line once, in order. A
  ``kubectl logs -f`` started after the kubelet is back starts from the first line, as a new
  follow always does, gets every line exactly once, in order, through to the job's end, and
  ends with 0.

One job and one test for the three kills (the rig and the job are the costly part); the job
prints until the test lets it end, so the kills land while it runs however slow the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.faults import churn
from tests.faults.conftest import Rig
from tests.fixtures.apiserver import KUBECTL
from wlmvk.kube.bodies import PODS

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]

# The job prints a numbered line every 0.2 s until the test lets it end (a file appears), then
# "done": it runs as long as the faults take, however slow the shared machine is.
CAP = 3000
SCRIPT = (
    "i=0; while [ ! -e {stop} ] && [ $i -lt CAP ]; do i=$((i+1)); echo line-$i; sleep 0.2; done; echo done\n"
).replace("CAP", str(CAP))


def _numbered(lines: list[str]) -> bool:
    """line-1, line-2, ... with none missing, none twice, in order."""
    return lines == [f"line-{i}" for i in range(1, len(lines) + 1)]


def _pod(name: str, stop: Path) -> dict[str, object]:
    return churn.pod_body(name, churn.RUNS.replace("\ntrue\n", "\n" + SCRIPT.format(stop=stop)))


async def _started(rig: Rig, stop: Path) -> tuple[str, asyncio.subprocess.Process]:
    """A pod whose job is running, and a ``kubectl logs -f`` of it that has read its first line."""
    name = f"follow-{uuid.uuid4().hex[:6]}"
    await rig.kube.create(PODS, _pod(name, stop), namespace="default")
    await _running(rig, name)
    follower = await _follow(rig, name)
    assert await _line(follower) == "line-1\n"
    return name, follower


async def _follow(rig: Rig, name: str) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(rig.apiserver.kubeconfig), HOME=str(rig.apiserver.home))
    return await asyncio.create_subprocess_exec(
        KUBECTL, "logs", "-f", name, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )


async def _line(follower: asyncio.subprocess.Process) -> str:
    assert follower.stdout is not None
    return (await asyncio.wait_for(follower.stdout.readline(), 120)).decode()


async def _running(rig: Rig, name: str) -> None:
    async def running() -> bool:
        pod = await rig.kube.get(PODS, name, namespace="default")
        return pod.get("status", {}).get("phase") == "Running"

    # The Slurm is shared (2 CPUs): the job may wait behind other sessions' jobs for a while.
    if not await churn.wait_for(running, 600):
        pod = await rig.kube.get(PODS, name, namespace="default")
        raise AssertionError(f"{name} never ran: {pod.get('status')}")


async def _outage(rig: Rig, down: object, up: object) -> None:
    """``down()``, wait for the node to go NotReady, ``up()``, wait for it to be Ready again."""
    await asyncio.to_thread(down)  # type: ignore[arg-type]
    assert await churn.wait_for(lambda: churn.node_not_ready(rig.kube), 30, every=0.2)
    await asyncio.to_thread(up)  # type: ignore[arg-type]
    assert await churn.wait_for(lambda: churn.node_ready(rig.kube), 60, every=0.2)


async def _cut_off(follower: asyncio.subprocess.Process) -> tuple[str, str, int]:
    """What a follow whose kubelet went away printed after that, its stderr and its exit code."""
    assert follower.stdout is not None
    assert follower.stderr is not None
    cut = (await asyncio.wait_for(follower.stdout.read(), 60)).decode()
    error = (await follower.stderr.read()).decode()
    return cut, error, await asyncio.wait_for(follower.wait(), 30)


def _whole_lines(before: list[str], cut: str) -> list[str]:
    """The lines read before the cut and after it; the last may have been cut mid-way by the
    kill, every whole line before it is in place."""
    seen = [*before, *cut.splitlines()]
    return seen if cut.endswith("\n") or not cut else seen[:-1]


async def test_follow_across_red_box_ssh_and_kubelet_kills(rig: Rig) -> None:
    """One job, one follower through red-box's then the ssh client's kill -9 (it goes on, each line
    once), then the kubelet's (it ends, a prefix); a new follower then gets every line once."""
    stop = Path(tempfile.mkdtemp(prefix="follow-", dir="/tmp")) / "stop"
    stop.parent.chmod(0o755)
    try:
        await _three_kills(rig, stop)
    finally:
        shutil.rmtree(stop.parent, ignore_errors=True)


async def _three_kills(rig: Rig, stop: Path) -> None:
    name, first = await _started(rig, stop)
    try:
        await _outage(rig, rig.box.kill, rig.box.start)
        await _outage(rig, rig.forward.kill, rig.forward.start)
        # Still following after both: the next lines arrive, none twice, none skipped.
        after = [(await _line(first)).rstrip("\n") for _ in range(3)]
        await rig.kubelet.restart_after_kill()
        cut, error, code = await _cut_off(first)
    finally:
        with contextlib.suppress(ProcessLookupError):
            first.kill()
    whole = _whole_lines(["line-1", *after], cut)
    assert _numbered(whole), whole
    assert code == 0, error
    await _follow_to_end(rig, name, stop, rig.kubelet, printed=len(whole))


async def _follow_to_end(
    rig: Rig, name: str, stop: Path, kubelet: churn.KubeletRunner, *, printed: int
) -> None:
    """Once ``kubelet`` answers for the pod's log again, a new ``kubectl logs -f`` gets every line
    once, in order, from the first to the job's end (more than the ``printed`` lines of the cut
    follow), and ends with 0."""

    async def answers() -> bool:
        # The kubelet is back once the API server reaches it for this pod's log again.
        done = await rig.apiserver.kubectl("logs", "--tail=1", name, timeout=30)
        return done.returncode == 0

    assert await churn.wait_for(answers, 120, every=1.0), kubelet.log.read_text()[-2000:]
    second = await _follow(rig, name)
    try:
        assert await _line(second) == "line-1\n"
        await asyncio.to_thread(stop.touch)  # the job may end now
        assert second.stdout is not None
        rest = (await asyncio.wait_for(second.stdout.read(), 180)).decode().splitlines()
        code = await asyncio.wait_for(second.wait(), 30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            second.kill()
    everything = ["line-1", *rest]
    assert everything[-1] == "done"
    assert _numbered(everything[:-1])
    assert len(everything) - 1 > printed, "the new follow has the lines written after the kill"
    assert len(everything) - 1 < CAP, "the job ran out of lines before the test let it end"
    assert code == 0


@pytest.mark.parametrize("freeze", [False, True], ids=["kill-9", "sigstop"])
async def test_follow_across_a_takeover(
    rig: Rig, pair: tuple[churn.KubeletRunner, churn.KubeletRunner], freeze: bool
) -> None:
    """Two kubelets for the cluster; the one holding its Lease serves the follow. Its agent host
    fails mid-follow: kill -9, or SIGSTOP (a partition) and SIGCONT once the standby serves the node.
    The cut follower ends with 0, having printed a prefix, each line once, in order (as when a lone
    kubelet dies: the log API has no offset to resume from); the resumed holder exits 1; a follow
    started through the new holder gets every line once, in order, from the first to the job's end."""
    stop = Path(tempfile.mkdtemp(prefix="follow-", dir="/tmp")) / "stop"
    stop.parent.chmod(0o755)
    try:
        await _takeover(rig, pair, stop, freeze=freeze)
    finally:
        shutil.rmtree(stop.parent, ignore_errors=True)


async def _takeover(
    rig: Rig, pair: tuple[churn.KubeletRunner, churn.KubeletRunner], stop: Path, *, freeze: bool
) -> None:
    active, standby = pair
    assert active.process is not None
    name, first = await _started(rig, stop)
    try:
        active.process.send_signal(signal.SIGSTOP if freeze else signal.SIGKILL)
        taken = await churn.wait_for(
            lambda: churn.serving(rig.kube, standby), churn.TAKEOVER_LIMIT, every=0.25
        )
        assert taken, standby.log.read_text()[-3000:]
        if freeze:
            active.process.send_signal(signal.SIGCONT)
            assert await asyncio.wait_for(active.process.wait(), 60) == 1, active.log.read_text()[-3000:]
        cut, error, code = await _cut_off(first)
    finally:
        with contextlib.suppress(ProcessLookupError):
            first.kill()
    whole = _whole_lines(["line-1"], cut)
    assert _numbered(whole), whole
    assert code == 0, error
    await _follow_to_end(rig, name, stop, standby, printed=len(whole))
