"""WlmJobs run SIF images through Apptainer on real Slurm, each option taking effect inside.

Apptainer is the one ``dev/scripts/apptainer-local build`` built from its Go module; red-box
(as the job owner, UID 1000) finds it through ``--runtime-path`` and runs it with
``--container-runtime apptainer``. Images are SIFs built here (``wlmvk_dev.images.sif``:
busybox and a SCIF app, ``apptainer build`` of a directory); no registry is reached. The
entrypoint prints what each option changes, one ``name=value`` line each, and the tests
compare it with what the same lines say on the host (the login node: in the release subsets,
``slurm_releases``, the release's box, where the same build is bound at the same path; the box
has its own PID namespace, and the same IPC namespace and host name as the host).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack
from tests.e2e.operator.support import wait_status
from tests.e2e.operator.test_containers import create, wlmjob
from tests.fixtures import apptainer, prerequisites, slurm_release
from tests.fixtures.redbox import JOB_OWNER
from tests.fixtures.shared_dirs import SharedDir
from wlmvk_dev.images import busybox_rootfs, hello_image, sif

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.kubectl,
    pytest.mark.slurm_releases,
    WITH_AGENT_HOST,
    apptainer.NEEDED,
]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "wlmjob.yaml"
PROBE = """echo "marker=$(cat /etc/marker)"
echo "hostname=$(hostname)"
echo "SLURM_JOB_ID=${SLURM_JOB_ID:-unset}"
echo "pid1=$(cat /proc/1/comm)"
echo "ipc=$(readlink /proc/self/ns/ipc)"
echo "caps=$(grep CapEff /proc/self/status | cut -f2)"
echo "uid=$(id -u)"
echo "input=$(cat /input/data.txt 2>/dev/null || echo none)"
if touch /etc/written 2>/dev/null; then echo "image=writable"; else echo "image=read-only"; fi
echo "cwd=$(pwd)"
mkdir -p out && echo 42 > out/answer.txt
"""
APP = 'echo "app=cowsay $*"\n'


@pytest.fixture
def redbox_args() -> tuple[str, ...]:
    return ("--container-runtime", "apptainer", "--runtime-path", str(apptainer.BIN))


def image(shared_dir: SharedDir) -> str:
    """A SIF the job owner can read, running ``PROBE``, with the SCIF app ``cowsay``."""
    where = shared_dir("wlmvk-sif-")
    root = busybox_rootfs(where / "rootfs", PROBE)
    (root / "etc" / "marker").write_text("busybox-sif\n")
    return str(sif(root, where / "probe.sif", apptainer=apptainer.APPTAINER, apps={"cowsay": APP}))


async def finished(stack: Stack, name: str) -> tuple[dict[str, object], str]:
    """The status of WlmJob ``name`` once it ended, and its pod's logs."""
    status = await wait_status(stack.apiserver, name, {"Succeeded", "Failed"}, kind="wlmjob", timeout=120)
    logs = await stack.kubectl("logs", f"{name}-wlm-job")
    assert logs.returncode == 0, logs.stderr
    return status, str(logs.stdout)


async def run(stack: Stack, name: str, sif_path: str, **options: object) -> dict[str, str]:
    """The probe's ``name=value`` lines of a WlmJob of ``sif_path`` with ``options`` (Succeeded),
    and ``jobId`` and ``workingDir`` of its status."""
    await create(stack, wlmjob(name, f"local.file:{sif_path}", options={"allowUnsigned": True, **options}))
    status, logs = await finished(stack, name)
    assert status["status"] == "Succeeded", (status, logs)
    seen = dict(line.split("=", 1) for line in logs.splitlines())
    return {**seen, "jobId": str(status["jobId"]), "workingDir": str(status["workingDir"])}


def host_ipc() -> str:
    return os.readlink("/proc/self/ns/ipc")


def host_pid1() -> str:
    """The name of PID 1 where jobs run: the host's, or the release box's own init."""
    if slurm_release.RELEASE is None:
        return Path("/proc/1/comm").read_text().strip()
    argv = slurm_release.exec_argv(slurm_release.RELEASE, "cat", "/proc/1/comm")
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


async def test_a_sif_runs_with_singularitys_defaults(stack: Stack, shared_dir: SharedDir) -> None:
    seen = await run(stack, "defaults", image(shared_dir))
    assert seen["marker"] == "busybox-sif"
    # The host's name, environment, PID and IPC namespaces; the job owner; a read-only image.
    assert seen["hostname"] == socket.gethostname()
    assert seen["SLURM_JOB_ID"] == seen["jobId"]
    assert seen["pid1"] == host_pid1()
    assert seen["ipc"] == host_ipc()
    assert seen["uid"] == "1000"
    assert seen["caps"] == "0000000000000000"
    assert seen["image"] == "read-only"
    assert seen["input"] == "none"
    assert seen["cwd"].startswith("/")
    assert seen["cwd"].endswith(seen["workingDir"]), seen


async def test_example_wlmjob_runs_through_apptainer(stack: Stack, shared_dir: SharedDir) -> None:
    """examples/wlmjob.yaml, its oci-archive pulled into a SIF by Apptainer. Two paths are this
    test's own: the image, built as dev/scripts/container-local builds the example's (whichever
    checkout ran that last wrote the shared one), and the results, which the staging pods (UID
    1000) can write."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    archive = hello_image(shared_dir("wlmvk-image-") / Path(doc["spec"]["image"]).name)
    doc["spec"]["image"] = f"oci-archive:{archive}"
    outputs = shared_dir("wlmvk-cow-results-", 0o777)
    doc["spec"]["results"]["mount"]["hostPath"]["path"] = str(outputs)
    await create(stack, json.dumps(doc))
    status, logs = await finished(stack, "cow")
    assert status["status"] == "Succeeded", (status, logs)
    assert logs == "Hello from a container (wlmvk busybox)\n"
    assert (outputs / "result.txt").read_text() == f"results of {socket.gethostname()}\n"


async def test_binds_show_a_host_directory_inside(stack: Stack, shared_dir: SharedDir) -> None:
    data = shared_dir("wlmvk-bind-")
    (data / "data.txt").write_text("bound in\n")
    (data / "data.txt").chmod(0o644)
    seen = await run(stack, "binds", image(shared_dir), binds=[f"{data}:/input:ro"])
    assert seen["input"] == "bound in"


async def test_clean_env_keeps_the_jobs_environment_out(stack: Stack, shared_dir: SharedDir) -> None:
    seen = await run(stack, "clean", image(shared_dir), cleanEnv=True)
    assert seen["SLURM_JOB_ID"] == "unset"


async def test_writable_lets_the_container_write_its_image(stack: Stack, shared_dir: SharedDir) -> None:
    # Unprivileged, Apptainer runs a SIF from a temporary sandbox: the writes end with the job.
    seen = await run(stack, "writable", image(shared_dir), writable=True)
    assert seen["image"] == "writable"


async def test_pid_gives_the_container_its_own_pid_namespace(stack: Stack, shared_dir: SharedDir) -> None:
    seen = await run(stack, "pid", image(shared_dir), pid=True)
    assert seen["pid1"] == "appinit"  # Apptainer's init, PID 1 of the new namespace
    assert host_pid1() != "appinit"


async def test_ipc_gives_the_container_its_own_ipc_namespace(stack: Stack, shared_dir: SharedDir) -> None:
    seen = await run(stack, "ipc", image(shared_dir), ipc=True)
    assert seen["ipc"].startswith("ipc:[")
    assert seen["ipc"] != host_ipc()


async def test_host_name_names_the_container(stack: Stack, shared_dir: SharedDir) -> None:
    seen = await run(stack, "named", image(shared_dir), hostName="cowbox")
    assert seen["hostname"] == "cowbox"


def subordinate_ids() -> None:
    for file in ("/etc/subuid", "/etc/subgid"):
        lines = Path(file).read_text().splitlines() if Path(file).exists() else []
        if not any(line.startswith(f"{JOB_OWNER}:") for line in lines):
            prerequisites.missing(f"{JOB_OWNER} has no range in {file} (dev/scripts/container-local up)")


async def test_fake_root_makes_the_job_owner_root_inside(stack: Stack, shared_dir: SharedDir) -> None:
    subordinate_ids()  # Apptainer maps root to the job owner and the rest to its subordinate ids
    seen = await run(stack, "fakeroot", image(shared_dir), fakeRoot=True)
    assert seen["uid"] == "0"
    assert seen["caps"] == "000001ffffffffff"


async def test_no_privs_leaves_no_capabilities(stack: Stack, shared_dir: SharedDir) -> None:
    # Limit: red-box's jobs run as the job owner, whose container has no capability to drop
    # (the defaults test sees the same); Apptainer applies --no-privs to a root user's container.
    seen = await run(stack, "noprivs", image(shared_dir), noPrivs=True)
    assert seen["caps"] == "0000000000000000"
    assert seen["uid"] == "1000"


async def test_app_runs_the_scif_app(stack: Stack, shared_dir: SharedDir) -> None:
    seen = await run(stack, "app", image(shared_dir), app="cowsay")
    assert seen.keys() == {"app", "jobId", "workingDir"}
    assert seen["app"] == "cowsay "


async def test_an_unsigned_image_fails_unless_allowed(stack: Stack, shared_dir: SharedDir) -> None:
    """allowUnsigned false (the default): red-box verifies the SIF first, and an unsigned one stops."""
    await create(stack, wlmjob("signed", f"local.file:{image(shared_dir)}"))
    status, logs = await finished(stack, "signed")
    assert status["status"] == "Failed", (status, logs)
    assert "Failed to verify container: integrity: signature not found for object group 1" in logs
    assert "marker=" not in logs
