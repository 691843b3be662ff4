"""The original README's session, step by step, with its example file.

The example targets the node ``slurm-minikube-cpu``; the cluster here is named
``test``, so the test applies a copy whose nodeSelector and hostPaths fit
(everything else is the file as shipped).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.operator.stack import STAGING_UID, WITH_AGENT_HOST, Stack
from tests.e2e.operator.support import wait_status
from tests.fixtures.seeddirs import seed_dirs

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slurm_releases,
    pytest.mark.kubectl,
    WITH_AGENT_HOST,
    pytest.mark.timeout(600),
]
# How long a SlurmJob may take to end (staging in, the job, staging out): a bound on a condition
# wait, not an expected time. CI runs the release subset beside the main run, where 120 s was
# not enough at a load of 12 (scripts/test).
WAIT = 240

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def node_dirs() -> Any:
    """/home/docker/{inputs,outputs} of the README, as the user prepared them."""
    with seed_dirs("readme-", STAGING_UID) as dirs:
        yield dirs


def example_for(stack: Stack, inputs: Path, outputs: Path, directory: Path) -> Path:
    doc = yaml.safe_load((ROOT / "examples" / "prepare-and-results.yaml").read_text())
    assert doc["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "slurm-minikube-cpu"}
    doc["spec"]["nodeSelector"]["kubernetes.io/hostname"] = stack.node("cpu")
    doc["spec"]["prepare"]["mount"]["hostPath"]["path"] = str(inputs)
    doc["spec"]["results"]["mount"]["hostPath"]["path"] = str(outputs)
    path = directory / "prepare-and-results.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


async def test_prepare_and_results(stack: Stack, node_dirs: Any, tmp_path: Path) -> None:
    inputs, outputs = node_dirs
    example = example_for(stack, inputs, outputs, tmp_path)

    applied = await stack.kubectl("apply", "-f", str(example))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == "slurmjob.wlm.sylabs.io/prepare-and-results created"

    status = await wait_status(stack.apiserver, "prepare-and-results", {"Succeeded", "Failed"}, timeout=WAIT)
    assert status["status"] == "Succeeded", status

    listed = await stack.kubectl("get", "slurmjob")
    header, row = listed.stdout.splitlines()[:2]
    assert header.split()[:2] == ["NAME", "STATUS"]
    assert row.split()[:2] == ["prepare-and-results", "Succeeded"]

    pods = {line.split()[0]: line for line in (await stack.kubectl("get", "pod")).stdout.splitlines()[1:]}
    assert "Completed" in pods["prepare-and-results-job-prepare"]
    assert "Job finished" in pods["prepare-and-results-job"]
    assert "Completed" in pods["prepare-and-results-job-collect"]

    assert sorted(p.name for p in outputs.iterdir()) == ["bar"]
    result = outputs / "bar" / "output.txt"
    assert result.read_text() == "foo\nslurm\n"
    assert (result.stat().st_uid, result.stat().st_gid) == (STAGING_UID, STAGING_UID)

    logs = await stack.kubectl("logs", "prepare-and-results-job")
    assert logs.stdout == "Hello\n", logs.stderr

    described = await stack.kubectl("describe", "sj", "prepare-and-results")
    # (a job this short may finish between two looks, so Running is not always seen)
    for reason in ("Preparing", "Created", "Collecting", "Succeeded"):
        assert reason in described.stdout

    # each job has its own working directory on the Slurm side
    workdir = stack.redbox.work_dir / status["workingDir"]
    assert (workdir / "inputs" / "foo.txt").read_text() == "foo\n"
    assert (workdir / "bar" / "output.txt").read_text() == "foo\nslurm\n"


def twins(stack: Stack, tmp_path: Path) -> tuple[Path, list[str]]:
    """Two copies of the README example, named left and right, each with its own foo.txt."""
    base = Path(tempfile.mkdtemp(prefix="twins-", dir="/tmp"))
    base.chmod(0o755)
    docs = []
    for twin in ("left", "right"):
        inputs, outputs = base / twin / "inputs", base / twin / "outputs"
        inputs.mkdir(parents=True)
        outputs.mkdir()
        (inputs / "foo.txt").write_text(f"{twin}\n")
        for path in (base / twin, inputs, inputs / "foo.txt", outputs):
            os.chown(path, STAGING_UID, STAGING_UID)
        doc = yaml.safe_load(example_for(stack, inputs, outputs, tmp_path).read_text())
        doc["metadata"]["name"] = twin
        doc["spec"]["batch"] = doc["spec"]["batch"].replace("echo Hello", "echo Hello; sleep 2")
        docs.append(yaml.safe_dump(doc))
    return base, docs


def result(base: Path, twin: str) -> str:
    return (base / twin / "outputs" / "bar" / "output.txt").read_text()


async def test_two_jobs_writing_the_same_names_do_not_collide(stack: Stack, tmp_path: Path) -> None:
    """The original ran every job in red-box's directory: two jobs writing bar/ overwrote each other."""
    base, docs = twins(stack, tmp_path)
    applied = await stack.kubectl("apply", "-f", "-", input="---\n".join(docs))
    assert applied.returncode == 0, applied.stderr
    try:
        for twin in ("left", "right"):
            status = await wait_status(stack.apiserver, twin, {"Succeeded", "Failed"}, timeout=WAIT)
            assert status["status"] == "Succeeded", status
            assert result(base, twin) == f"{twin}\nslurm\n"
    finally:
        shutil.rmtree(base, ignore_errors=True)
