"""The operator PROCESS killed with SIGKILL mid-staging, twice: while its prepare pod uploads the
inputs and while its collect pod downloads the results. Each time a new ``wlmvk operator`` process
takes the leader Lease over once the dead one's has expired (nobody hands it over), and adopts the
staging pod the dead one made, still running or finished meanwhile. The SlurmJob still ends
Succeeded; the inputs were uploaded once (one prepare pod ever, one upload in red-box's log, one
copy, in the job's directory), the results downloaded once (one collect pod ever, one copy in the
volume), one Slurm job ran, and no pod is left running."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.operator.stack import STAGE_COMMAND, STAGING_UID, WITH_AGENT_HOST, share_socket, staging_env
from tests.e2e.operator.support import OperatorProcess, apply_crds, wait_status
from tests.faults.staged import staged_slurmjob
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Changed, Listed, WatchOptions, watch
from wlmvk.operator.controller import SLURMJOBS

# serial: kill -9 of the operator mid-transfer; beside the parallel run it passed its 300 s timeout
pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, WITH_AGENT_HOST, pytest.mark.serial]

# Staging costs per file (a millisecond or so each way, more on a loaded machine). The upload of
# this many files outlasts the kill and, mostly, the takeover; the download outlasts the kill.
INPUT_FILES = 20000
RESULT_FILES = 8000
FILE_BYTES = 1024
# The dead leader's Lease expires LEASE s after its last renewal; a candidate looks every RETRY s.
LEASE, RENEW, RETRY = 2, 0.4, 0.25


@dataclass
class Operators:
    """``wlmvk operator`` processes with the staging settings of the operator's e2e stack."""

    kubeconfig: Path
    log_dir: Path
    started: list[OperatorProcess] = field(default_factory=list)

    async def start(self, identity: str) -> OperatorProcess:
        flags = [
            "--work-root=",  # relative: under red-box's --work-dir
            "--stage-command",
            shlex.join(STAGE_COMMAND),
            "--run-as-user",
            str(STAGING_UID),
            "--run-as-group",
            str(STAGING_UID),
            "--lease-duration",
            str(LEASE),
            "--renew-interval",
            str(RENEW),
            "--retry-interval",
            str(RETRY),
        ]
        for name, value in staging_env():
            flags += ["--stage-env", f"{name}={value}"]
        process = OperatorProcess(self.kubeconfig, identity, *flags, log_dir=self.log_dir)
        self.started.append(await process.start())
        return process

    def logs(self) -> str:
        return "\n".join(f"--- {p.log.name}\n{p.output()[-3000:]}" for p in self.started)


@pytest.fixture
async def operators(apiserver: Any, redbox: Any, kubelet_factory: Any) -> AsyncIterator[Operators]:
    share_socket(redbox.socket)
    await apply_crds(apiserver)
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, red_box_socket=redbox.socket)
    running = Operators(apiserver.kubeconfig, Path(tempfile.mkdtemp(prefix="opkill9-", dir="/tmp")))
    yield running
    for process in running.started:
        await process.stop(signal.SIGKILL)


@pytest.fixture
def scratch(redbox: Any) -> Iterator[Path]:
    """A directory the staging pods' user can reach; it and the jobs' copies go at teardown."""
    path = Path(tempfile.mkdtemp(prefix="opkill9-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(Path(redbox.work_dir, "default"), ignore_errors=True)


@dataclass
class PodHistory:
    """Every pod the API server ever held for one job, by name: the uids it had, its last phase."""

    prefix: str
    uids: dict[str, set[str]] = field(default_factory=dict)
    phases: dict[str, str] = field(default_factory=dict)

    def note(self, pod: dict[str, Any]) -> None:
        name = str(pod["metadata"]["name"])
        if name.startswith(self.prefix):
            self.uids.setdefault(name, set()).add(str(pod["metadata"]["uid"]))
            self.phases[name] = str((pod.get("status") or {}).get("phase") or "Pending")

    async def follow(self, client: KubeClient) -> None:
        async for event in watch(client, PODS, WatchOptions(namespace="default")):
            for pod in event.items if isinstance(event, Listed) else []:
                self.note(pod)
            if isinstance(event, Changed):
                self.note(event.object)


async def _kill_while_running(
    operators: Operators, victim: OperatorProcess, pods: PodHistory, pod: str, successor: str
) -> OperatorProcess:
    """SIGKILL ``victim`` as soon as staging pod ``pod`` runs, check it still runs, start ``successor``."""
    deadline = time.monotonic() + 150  # the job may queue behind others in the shared Slurm
    while pods.phases.get(pod) != "Running":
        ended = {name: phase for name, phase in pods.phases.items() if phase == "Failed"}
        assert not ended, f"waiting for pod {pod} to run: {pods.phases}\n{operators.logs()}"
        assert pods.phases.get(pod) != "Succeeded", f"missed pod {pod} running: {pods.phases}"
        assert time.monotonic() < deadline, f"pod {pod} never ran: {pods.phases}\n{operators.logs()}"
        await asyncio.sleep(0.02)
    assert await victim.stop(signal.SIGKILL) == -signal.SIGKILL
    await asyncio.sleep(0.3)  # the watch's news of the pod, if it had ended before the kill
    assert pods.phases[pod] == "Running", f"the staging ended before the kill: make it slower ({pods.phases})"
    return await operators.start(successor)


def _files(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256)."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


async def test_operator_killed_9_mid_upload_and_mid_download_completes_staging_once(
    apiserver: Any, redbox: Any, operators: Operators, scratch: Path
) -> None:
    inputs, outputs = scratch / "data", scratch / "results"
    (inputs / "many").mkdir(parents=True)
    (inputs / "a.txt").write_text("a\n")
    for index in range(INPUT_FILES):
        (inputs / "many" / f"{index:05d}").write_bytes(os.urandom(FILE_BYTES))
    outputs.mkdir()
    for directory in (scratch, inputs, inputs / "many", outputs):
        directory.chmod(0o777)
    sent = _files(inputs)
    name = f"opk9-{os.urandom(2).hex()}"
    batch = (
        "#!/bin/sh\n#SBATCH --cpus-per-task=1\nmkdir -p out\n"
        "(cd in && find . -type f | sort) >out/listing.txt\n"
        f"head -c {RESULT_FILES * FILE_BYTES} /dev/urandom | split -a 4 -b {FILE_BYTES} - out/part.\n"
    )
    body = staged_slurmjob(name, batch, inputs, outputs, namespace="default")
    client = await KubeClient.connect(str(apiserver.kubeconfig))
    pods = PodHistory(f"{name}-")
    following = asyncio.create_task(pods.follow(client))
    try:
        first = await operators.start("op-1")
        created = await client.create(SLURMJOBS, body, namespace="default")
        second = await _kill_while_running(operators, first, pods, f"{name}-job-prepare", "op-2")
        third = await _kill_while_running(operators, second, pods, f"{name}-job-collect", "op-3")
        final = await wait_status(apiserver, name, {"Succeeded", "Failed", "Cancelled"}, timeout=90)
        # Nothing in the job can fail: the exact end, not merely "not Failed".
        assert (final["status"], final["reason"]) == ("Succeeded", "Completed"), (
            f"{final}\n{operators.logs()}"
        )
        assert third.proc is not None
        assert third.proc.returncode is None, operators.logs()
        await asyncio.sleep(1.0)  # a late (wrong) second staging pod would show up here
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await client.close()

    # One pod of each kind ever existed (none recreated), and none is left running.
    assert {pod: len(uids) for pod, uids in pods.uids.items()} == {
        f"{name}-job-prepare": 1,
        f"{name}-job": 1,
        f"{name}-job-collect": 1,
    }
    assert set(pods.phases.values()) == {"Succeeded"}, pods.phases
    # The inputs went up once, into the job's own directory, and nowhere else.
    job_dir = Path(redbox.work_dir, final["workingDir"])
    assert job_dir == redbox.work_dir / "default" / f"{name}-{created['metadata']['uid']}"
    assert _files(job_dir / "in") == {f"data/{path}": digest for path, digest in sent.items()}
    digests = set(sent.values())
    elsewhere = {
        path
        for path, digest in _files(redbox.work_dir).items()
        if digest in digests and not Path(redbox.work_dir, path).is_relative_to(job_dir / "in")
    }
    assert elsewhere == set()
    uploads = [line for line in redbox.log().splitlines() if '"staged in"' in line]
    assert len(uploads) == 1, uploads
    assert str(job_dir / "in") in uploads[0]
    # One Slurm job, the one the status names.
    assert redbox.journal_job_ids() == {int(final["jobId"])}
    # The results came down once, into the volume, and nothing else did.
    made = _files(job_dir / "out")
    assert len(made) == 1 + RESULT_FILES
    assert _files(outputs) == {f"out/{path}": digest for path, digest in made.items()}
    listing = (outputs / "out" / "listing.txt").read_text().split()
    assert sorted(listing) == sorted(f"./data/{path}" for path in sent)
    assert set(_files(scratch)) == {*(f"data/{p}" for p in sent), *(f"results/out/{p}" for p in made)}
