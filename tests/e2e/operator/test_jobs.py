"""SlurmJobs end to end: real Slurm, red-box, kubelet, in-memory API server, operator, real kubectl."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack
from tests.e2e.operator.support import eventually, get_json, status_of, wait_status
from tests.fixtures.shared_dirs import SharedDir

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, WITH_AGENT_HOST]


def slurmjob(name: str, batch: str, **spec: Any) -> str:
    body = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": name},
        "spec": {"batch": batch, **spec},
    }
    return json.dumps(body)


async def create(stack: Stack, doc: str) -> None:
    created = await stack.kubectl("create", "-f", "-", input=doc)
    assert created.returncode == 0, created.stderr


def slurm_state(job_id: str) -> str:
    """The job's state as Slurm accounting has it ('' until the record arrives)."""
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"], capture_output=True, text=True, check=False
    ).stdout
    return out.strip().splitlines()[0] if out.strip() else ""


async def test_failing_script_fails_with_its_exit_code(stack: Stack) -> None:
    await create(stack, slurmjob("fails", "#!/bin/sh\necho about to fail\nexit 3\n"))
    status = await wait_status(stack.apiserver, "fails", {"Failed", "Succeeded"}, timeout=90)
    assert status["status"] == "Failed"
    assert status["exitCode"] == 3
    assert status["jobId"]
    assert status["partition"]
    listed = await stack.kubectl("get", "sj", "fails")
    assert "Failed" in listed.stdout
    assert status["jobId"] in listed.stdout
    logs = await stack.kubectl("logs", "fails-job")
    assert "about to fail" in logs.stdout


async def test_deleting_a_running_slurmjob_cancels_the_job_and_removes_its_pods(stack: Stack) -> None:
    await create(stack, slurmjob("long", "#!/bin/sh\n#SBATCH --time=2\nsleep 120\n"))
    status = await wait_status(stack.apiserver, "long", {"Running"}, timeout=90)
    job_id = status["jobId"]
    deleted = await stack.kubectl("delete", "slurmjob", "long")
    assert deleted.returncode == 0, deleted.stderr

    async def pod_gone() -> bool:
        return not await get_json(stack.apiserver, "pod", "long-job")

    await eventually(pod_gone, timeout=60, what="pod long-job removed")

    async def cancelled() -> str:
        state = await asyncio.to_thread(slurm_state, job_id)
        return state if state.startswith("CANCELLED") else ""

    await eventually(cancelled, timeout=60, what=f"Slurm job {job_id} cancelled")


async def test_job_too_large_for_every_partition_stays_pending_with_the_reason(stack: Stack) -> None:
    await create(stack, slurmjob("too-big", "#!/bin/sh\n#SBATCH --nodes=2 -c 64\necho never\n"))

    async def reason() -> dict[str, Any] | None:
        status = await status_of(stack.apiserver, "too-big")
        return status if status.get("reason") == "Unschedulable" else None

    status = await eventually(reason, timeout=30, what="an Unschedulable reason")
    assert status["status"] == "Pending"
    assert "didn't match Pod's node affinity/selector" in status["message"]
    await asyncio.sleep(2)
    assert (await status_of(stack.apiserver, "too-big"))["status"] == "Pending"
    pod = await get_json(stack.apiserver, "pod", "too-big-job")
    assert "nodeName" not in pod["spec"]


async def test_path_escape_fails_before_anything_runs(stack: Stack, tmp_path: Any) -> None:
    outputs = tmp_path / "outputs"
    mount = {"name": "outputs", "hostPath": {"path": str(outputs), "type": "DirectoryOrCreate"}}
    await create(
        stack, slurmjob("escape", "#!/bin/sh\necho x\n", results={"from": "../../..", "mount": mount})
    )
    status = await wait_status(stack.apiserver, "escape", {"Failed"}, timeout=30)
    assert status["reason"] == "InvalidSpec"
    assert "escapes the job's working directory" in status["message"]
    pods = await get_json(stack.apiserver, "pods")
    assert [p["metadata"]["name"] for p in pods["items"] if p["metadata"]["name"].startswith("escape")] == []
    assert not outputs.exists()


async def test_operator_restart_mid_job_completes_and_reports_once(stack: Stack) -> None:
    await create(stack, slurmjob("restart", "#!/bin/sh\necho started\nsleep 6\necho done\n"))
    await wait_status(stack.apiserver, "restart", {"Running"}, timeout=90)
    await stack.stop_operator()
    await stack.start_operator("op-2")
    status = await wait_status(stack.apiserver, "restart", {"Succeeded", "Failed"}, timeout=90)
    assert status["status"] == "Succeeded"
    events = await get_json(stack.apiserver, "events", "--field-selector", "involvedObject.name=restart")
    reasons: dict[str, int] = {}
    for event in events["items"]:
        reasons[event["reason"]] = reasons.get(event["reason"], 0) + int(event.get("count") or 1)
    # One Event per pod made and one at the end, each once across the restart: none per step between.
    assert reasons == {"Created": 1, "Succeeded": 1}
    pods = await get_json(stack.apiserver, "pods")
    assert [p["metadata"]["name"] for p in pods["items"] if p["metadata"]["name"].startswith("restart")] == [
        "restart-job"
    ]


def results_into(directory: Any, source: str) -> dict[str, Any]:
    return {
        "from": source,
        "mount": {"name": "outputs", "hostPath": {"path": str(directory), "type": "DirectoryOrCreate"}},
    }


async def test_failed_collection_fails_the_slurmjob_with_the_reason(stack: Stack, tmp_path: Any) -> None:
    outputs = tmp_path / "outputs"
    await create(
        stack, slurmjob("nothing", "#!/bin/sh\necho no results\n", results=results_into(outputs, "bar"))
    )
    status = await wait_status(stack.apiserver, "nothing", {"Succeeded", "Failed"}, timeout=90)
    assert status["status"] == "Failed"
    assert status["reason"] == "CollectFailed"
    assert "bar" in status["message"]
    assert "bar: no such file or directory" in status["message"]
    collected = next(c for c in status["conditions"] if c["type"] == "Collected")
    assert collected["status"] == "False"


async def test_a_symlink_out_of_the_working_directory_is_not_collected(
    stack: Stack, tmp_path: Any, shared_dir: SharedDir
) -> None:
    # Readable by the job owner red-box runs as: refused for where it points, not for access.
    secret = shared_dir("secret-")
    (secret / "key").write_text("do not copy")
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    outputs.chmod(0o777)
    batch = f"#!/bin/sh\nln -s {secret} bar\n"
    await create(stack, slurmjob("sneaky", batch, results=results_into(outputs, "bar")))
    status = await wait_status(stack.apiserver, "sneaky", {"Succeeded", "Failed"}, timeout=90)
    assert status["status"] == "Failed"
    assert status["reason"] == "CollectFailed"
    assert list(outputs.rglob("*")) == []
    assert "bar: outside the allowed roots" in status["message"]


async def test_a_job_cancelled_in_slurm_is_cancelled(stack: Stack) -> None:
    await create(stack, slurmjob("scancelled", "#!/bin/sh\n#SBATCH --time=2\nsleep 120\n"))
    status = await wait_status(stack.apiserver, "scancelled", {"Running"}, timeout=90)
    await asyncio.to_thread(subprocess.run, ["scancel", status["jobId"]], check=True)
    status = await wait_status(
        stack.apiserver, "scancelled", {"Cancelled", "Failed", "Succeeded"}, timeout=60
    )
    assert status["status"] == "Cancelled"
    assert status["message"] == f"job {status['jobId']} was cancelled"


async def test_a_single_result_file_lands_under_its_base_name(stack: Stack, tmp_path: Any) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    outputs.chmod(0o777)
    batch = "#!/bin/sh\nmkdir -p deep/er\necho 42 > deep/er/answer.txt\n"
    await create(stack, slurmjob("one-file", batch, results=results_into(outputs, "deep/er/answer.txt")))
    status = await wait_status(stack.apiserver, "one-file", {"Succeeded", "Failed"}, timeout=90)
    assert status["status"] == "Succeeded", status
    assert [p.name for p in outputs.iterdir()] == ["answer.txt"]
    assert (outputs / "answer.txt").read_text() == "42\n"


async def test_a_failed_upload_fails_the_slurmjob_before_submitting(stack: Stack, tmp_path: Any) -> None:
    inputs = tmp_path / "private"
    inputs.mkdir()
    (inputs / "secret.txt").write_text("root only")
    inputs.chmod(0o700)  # the staging pod runs as UID 1000: it cannot read this volume
    mount = {"name": "private", "hostPath": {"path": str(inputs), "type": "Directory"}}
    prepare = {"to": "in", "mount": mount}
    await create(stack, slurmjob("no-upload", "#!/bin/sh\nls in\n", nodeSelector={}, prepare=prepare))
    # A bound on a hang: on 3 workers and a loaded machine the staging pod's failure took over 90 s.
    status = await wait_status(stack.apiserver, "no-upload", {"Succeeded", "Failed"}, timeout=240)
    assert status["status"] == "Failed"
    assert status["reason"] == "PrepareFailed"
    assert status["message"] == (
        "uploading in failed: exit code 1, Error: wlmvk stage: cannot read /mnt/private:"
        " [Errno 13] Permission denied: '/mnt/private'"
    )
    assert "jobId" not in status
    assert not await get_json(stack.apiserver, "pod", "no-upload-job")
