"""GPU pods on a real Slurm with typed and MIG-like GRES: what a job gets, what a node advertises.

The suite's shared Slurm has two untyped GPUs; these tests start a Slurm of their own
(``dev/scripts/slurm-local`` in another base, on other ports, without accounting, one per pytest
worker) whose node has
``Gres=gpu:tesla:2,gpu:1g.10gb:6``: character devices that are not GPUs, as slurmd accepts
(``WLMVK_SLURM_GPUS``). red-box runs as the job owner with that Slurm's ``SLURM_CONF``; the
kubelet runs in-process on the in-memory API server, whose scheduler counts extended
resources against allocatable as kube-scheduler does. Slurm numbers the node's GPUs in
gres.conf's order: tesla 0-1, the slices 2-7; a job sees its indices in ``SLURM_JOB_GPUS`` and
``CUDA_VISIBLE_DEVICES``. With ``WLMVK_SLURM_RELEASE`` (24.11, 26.05) they run on that release's
box, whose node has the same GRES (``dev/scripts/slurm-release``'s default ``WLMVK_SLURM_GPUS``): they
are in the release subsets (dev/scripts/test-releases), and pass there unchanged.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from tests.faults import ownslurm
from tests.fixtures import apptainer, prerequisites, slurm_release
from tests.fixtures.apiserver import RealApiServer, RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import JOB_OWNER, RedBox
from tests.fixtures.shared_dirs import PARENT
from wlmvk.core import names
from wlmvk.kube.bodies import EVENTS, NODES, PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk_dev.images import busybox_rootfs, sif

pytestmark = pytest.mark.slurm_releases

GPUS = "tesla:2,1g.10gb:6"
TESLA = {0, 1}
SLICES = set(range(2, 8))
# The in-memory plane's tests and the real plane's run in two worker groups, maybe at once:
# each worker its own Slurm (base and three ports apart).
_WORKER, _NTH = ownslurm.worker_slot()
BASE = Path(f"{os.environ.get('WLMVK_GPU_SLURM_BASE', '/var/tmp/wlmvk-gpu-slurm')}-{_WORKER}")
PORT = int(os.environ.get("WLMVK_GPU_SLURM_PORT", "6947")) + 3 * _NTH
OWN = ownslurm.Instance(BASE, PORT, "gputest", gpus=GPUS)
NODE = "slurm-test-gpu"
SHOW = 'echo "gpus=$SLURM_JOB_GPUS cuda=$CUDA_VISIBLE_DEVICES"'


@pytest.fixture(scope="module")
def typed_slurm(slurm: str) -> Iterator[dict[str, str]]:
    """The environment that points Slurm commands (and red-box) at this module's own Slurm.

    With ``WLMVK_SLURM_RELEASE``, the release's box instead, started with ``WLMVK_SLURM_GPUS``
    as here (``dev/scripts/slurm-release up``): its red-box runs inside it.
    """
    if slurm_release.RELEASE is not None:
        gres = run_slurm({}, "scontrol", "-o", "show", "node").split("Gres=", 1)[-1].split()[0]
        if gres != "gpu:tesla:2,gpu:1g.10gb:6":
            prerequisites.missing(
                f"the {slurm_release.RELEASE} box up with WLMVK_SLURM_GPUS={GPUS} (its node has Gres={gres})"
            )
        # The box's state outlives a run too: a GPU job a stopped run left would hold slices.
        ownslurm.empty(partition="gpu")
        yield {}
        return
    if os.geteuid() != 0:
        prerequisites.missing("root, to start a Slurm of the test's own (dev/scripts/slurm-local)")
    OWN.script("up", "--no-accounting")
    env = {"SLURM_CONF": str(OWN.conf)}
    try:
        # Its state outlives a run: jobs an earlier run left (a plane's test ended, the Slurm
        # stopped under them) would come back and hold slices (CI's run of 4443e3a: a 3-slice
        # pod never started, and allocatable never came back to 6).
        ownslurm.empty({**os.environ, **env})
        yield env
    finally:
        OWN.script("down")


def run_slurm(env: dict[str, str], *argv: str, user: str | None = None) -> str:
    command = ["runuser", "-u", user, "--", *argv] if user else list(argv)
    if slurm_release.RELEASE is not None:
        command = slurm_release.exec_argv(slurm_release.RELEASE, *argv, user=user)
    done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
async def gpu_stack(
    typed_slurm: dict[str, str],
    apiserver: RunningApiServer | RealApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
    kube: KubeClient,
) -> Stack:
    box = redbox_factory(user=JOB_OWNER, env=typed_slurm)
    kubelet = await kubelet_factory(
        kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"), red_box_socket=box.socket
    )
    return Stack(apiserver, box, kubelet, kube)


def gpu_pod(name: str, limits: dict[str, str], script: str = SHOW, **spec: object) -> Body:
    return job_pod(name, script, partition="gpu", resources={"limits": {"cpu": "1", **limits}}, **spec)


async def phase(stack: Stack, name: str, *phases: str, timeout: float = 120) -> Body:
    async def reached() -> Body | None:
        pod = await stack.kube.get(PODS, name, namespace="default")
        return pod if pod.get("status", {}).get("phase") in phases else None

    result: Body = await eventually(reached, timeout=timeout)
    return result


async def shown(stack: Stack, name: str) -> tuple[set[int], set[int]]:
    """The GPU indices the pod's job saw: SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES."""
    logs = await stack.kubectl("logs", name)
    assert logs.returncode == 0, logs.stderr
    words = dict(word.split("=", 1) for word in logs.stdout.split())
    return tuple({int(i) for i in words[key].split(",") if i} for key in ("gpus", "cuda"))  # type: ignore[return-value]


async def gpus_of(stack: Stack, part: str) -> dict[str, str]:
    node = await stack.kube.get(NODES, NODE)
    return {k: v for k, v in node["status"][part].items() if k.startswith("nvidia.com/")}


async def test_the_node_advertises_gpus_per_type(gpu_stack: Stack) -> None:
    described = await gpu_stack.kubectl("describe", "node", NODE)
    assert described.returncode == 0, described.stderr
    assert await gpus_of(gpu_stack, "capacity") == {
        "nvidia.com/gpu": "8",
        "nvidia.com/gpu.tesla": "2",
        "nvidia.com/mig-1g.10gb": "6",
    }
    capacity = described.stdout.split("Capacity:", 1)[1].split("Allocatable:", 1)[0]
    shown = dict(line.split() for line in capacity.strip().splitlines())
    assert (shown["nvidia.com/gpu:"], shown["nvidia.com/gpu.tesla:"], shown["nvidia.com/mig-1g.10gb:"]) == (
        "8",
        "2",
        "6",
    ), described.stdout


@pytest.mark.parametrize(
    ("limits", "count", "among"),
    [
        ({"nvidia.com/gpu": "1"}, 1, TESLA | SLICES),
        ({"nvidia.com/gpu.tesla": "2"}, 2, TESLA),
        ({"nvidia.com/mig-1g.10gb": "3"}, 3, SLICES),
    ],
)
async def test_a_gpu_pods_job_sees_the_gpus_it_asked_for(
    gpu_stack: Stack, limits: dict[str, str], count: int, among: set[int]
) -> None:
    name = unique("gpu")
    await gpu_stack.kube.create(PODS, gpu_pod(name, limits), namespace="default")
    pod = await phase(gpu_stack, name, "Succeeded", "Failed")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    slurm_gpus, cuda = await shown(gpu_stack, name)
    assert slurm_gpus == cuda
    assert len(cuda) == count
    assert cuda <= among


@pytest.mark.kube_any(
    subject="scheduling: GPU extended resources placed against a virtual node's allocatable"
)
async def test_four_one_slice_pods_run_at_once_beside_a_plain_job_and_allocatable_falls(
    gpu_stack: Stack, typed_slurm: dict[str, str]
) -> None:
    async def all_free() -> bool:
        return (await gpus_of(gpu_stack, "allocatable")).get("nvidia.com/mig-1g.10gb") == "6"

    # An earlier GPU test on this worker's Slurm may still hold slices for a moment (its last pods'
    # jobs ending), and allocatable follows Slurm within a discovery round: the test starts once
    # all six are free (CI's run of e2169ea found two allocatable at the first look).
    await eventually(all_free, timeout=120)
    jobs = slurm_release.jobs_root(slurm_release.RELEASE) if slurm_release.RELEASE else BASE / "jobs"
    out = jobs / f"{unique('plain')}.out"
    plain = run_slurm(
        typed_slurm,
        *("sbatch", "--parsable", "-p", "gpu", "--gres=gpu:1g.10gb:2", "-o", str(out)),
        *("--wrap", f"{SHOW}; sleep 120"),
        user=JOB_OWNER,
    ).strip()
    pods = [unique("slice") for _ in range(4)]
    fifth = unique("slice")
    created: list[str] = []
    try:

        async def plain_counted() -> bool:
            return (await gpus_of(gpu_stack, "allocatable")).get("nvidia.com/mig-1g.10gb") == "4"

        await eventually(plain_counted, timeout=60)
        assert await gpus_of(gpu_stack, "allocatable") == {
            "nvidia.com/gpu": "6",
            "nvidia.com/gpu.tesla": "2",
            "nvidia.com/mig-1g.10gb": "4",
        }
        held = {int(i) for i in out.read_text().split()[0].removeprefix("gpus=").split(",")}
        assert len(held) == 2
        assert held <= SLICES

        for name in pods:
            body = gpu_pod(name, {"nvidia.com/mig-1g.10gb": "1"}, f"{SHOW}; sleep 20")
            await gpu_stack.kube.create(PODS, body, namespace="default")
            created.append(name)

        async def all_running() -> bool:
            got = [await gpu_stack.kube.get(PODS, n, namespace="default") for n in pods]
            return all(p.get("status", {}).get("phase") == "Running" for p in got)

        await eventually(all_running, timeout=90)
        states = run_slurm(typed_slurm, "squeue", "-h", "-p", "gpu", "-t", "RUNNING", "-o", "%j")
        assert sorted(n for n in states.split() if n in pods) == sorted(pods)

        # Slurm says all six slices are in use, four of them by this node's own pods, which the
        # scheduler counts against nvidia.com/mig-1g.10gb itself: that comes to 4 (not 0); of
        # all GPUs (nvidia.com/gpu, which those pods did not ask for) only the two teslas are free.
        # A discovery round that read the pods' records before they ran counts their slices as
        # others' (held is read before Slurm, so a job is never counted twice): 0 until the next
        # round (CI's run of 550c13a read it so).
        counted = {"nvidia.com/gpu": "2", "nvidia.com/gpu.tesla": "2", "nvidia.com/mig-1g.10gb": "4"}

        async def all_counted() -> bool:
            assert await gpus_of(gpu_stack, "allocatable") == counted  # the last one read, if never
            return True

        await eventually(all_counted, timeout=30)
        used = run_slurm(typed_slurm, "scontrol", "-d", "-o", "show", "node")
        assert "GresUsed=gpu:tesla:0(IDX:N/A),gpu:1g.10gb:6(IDX:2-7)" in used

        seen = [await shown(gpu_stack, name) for name in pods]
        slices = set()
        for slurm_gpus, cuda in seen:
            assert slurm_gpus == cuda
            assert len(cuda) == 1
            slices |= cuda
        assert slices == SLICES - held

        # A fifth slice fits nowhere: the scheduler keeps it Pending, unbound.
        await gpu_stack.kube.create(
            PODS, gpu_pod(fifth, {"nvidia.com/mig-1g.10gb": "1"}), namespace="default"
        )
        created.append(fifth)
        await asyncio.sleep(3)
        waiting = await gpu_stack.kube.get(PODS, fifth, namespace="default")
        assert (waiting["status"].get("phase"), waiting["spec"].get("nodeName")) == ("Pending", None)
    finally:
        run_slurm(typed_slurm, "scancel", plain)
        # Deleted while this kubelet runs, which cancels their jobs: the fifth, still Pending, must
        # not be bound to the node later, when another test's kubelet serves it.
        for name in created:
            await gpu_stack.kube.delete(PODS, name, namespace="default")

    await eventually(all_free, timeout=90)


@pytest.mark.parametrize(
    ("limits", "reason", "message"),
    [
        (
            {"nvidia.com/mig-3g.20gb": "1"},
            "GPUsUnavailable",
            "the pod asks for nvidia.com/mig-3g.20gb: 1 (--gres=gpu:3g.20gb:1) but a node of partition"
            " 'gpu' has at most 0 (nvidia.com/gpu: 8, nvidia.com/gpu.tesla: 2, nvidia.com/mig-1g.10gb: 6)",
        ),
        (
            {"nvidia.com/gpu.tesla": "3"},
            "GPUsUnavailable",
            "the pod asks for nvidia.com/gpu.tesla: 3 (--gres=gpu:tesla:3) but a node of partition"
            " 'gpu' has at most 2 (nvidia.com/gpu: 8, nvidia.com/gpu.tesla: 2, nvidia.com/mig-1g.10gb: 6)",
        ),
        (
            {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "1"},
            "InvalidResources",
            "asks for nvidia.com/gpu: 1 and nvidia.com/mig-1g.10gb: 1: a container's GPUs are of one kind"
            " (one resource name)",
        ),
    ],
)
async def test_a_pod_bound_to_the_node_asking_gpus_the_partition_never_has_fails_with_an_event(
    gpu_stack: Stack, typed_slurm: dict[str, str], limits: dict[str, str], reason: str, message: str
) -> None:
    """Bound by ``nodeName`` (no scheduler between): the kubelet refuses it; nothing reaches Slurm."""
    name = unique("nogpu")
    await gpu_stack.kube.create(PODS, gpu_pod(name, limits, nodeName=NODE), namespace="default")
    pod = await phase(gpu_stack, name, "Failed", timeout=60)
    assert (pod["status"].get("reason"), pod["status"].get("message")) == (reason, message)
    assert names.ANNOTATION_JOB_ID not in (pod["metadata"].get("annotations") or {})

    async def event() -> list[Body]:
        listed = await gpu_stack.kube.list(EVENTS, namespace="default")
        return [e for e in listed["items"] if e["involvedObject"]["name"] == name and e["reason"] == reason]

    (found,) = await eventually(event, timeout=30)
    assert (found["type"], found["message"]) == ("Warning", message)
    assert name not in run_slurm(typed_slurm, "squeue", "-h", "-t", "all", "-o", "%j").split()


@pytest.fixture(scope="module")
def gpu_images() -> Iterator[Path]:
    """A directory of SIFs the job owner reads, on a path the jobs see: ``hello.sif`` (busybox)."""
    where = Path(tempfile.mkdtemp(prefix="wlmvk-gpu-sifs-", dir=PARENT))
    where.chmod(0o755)
    root = busybox_rootfs(where / "rootfs", 'echo "runscript: $*"\n')
    sif(root, where / "hello.sif", apptainer=apptainer.APPTAINER)
    shutil.rmtree(root)
    yield where
    shutil.rmtree(where, ignore_errors=True)


NV_LIBS = "ls /.singularity.d/libs"


@apptainer.NEEDED
async def test_a_gpu_pods_image_runs_through_apptainer_with_nv(
    typed_slurm: dict[str, str],
    gpu_images: Path,
    apiserver: RunningApiServer | RealApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
    kube: KubeClient,
) -> None:
    """The job's script runs the image with ``--nv``; inside, the job's GPUs are those asked for.

    This machine has no NVIDIA GPU or driver: ``--nv`` binds what of Apptainer's nvliblist.conf
    the node has (on this host libglvnd's libGL/libEGL, in the release boxes nothing) into
    /.singularity.d/libs, without a warning. The pod's listing of it equals a direct
    ``apptainer exec --nv`` of the image on the same node, and a run without ``--nv`` lists none.
    """
    box = redbox_factory(
        *("--container-runtime", "apptainer", "--runtime-path", str(apptainer.BIN)),
        *("--image-dir", str(gpu_images)),
        user=JOB_OWNER,
        env=typed_slurm,
    )
    kubelet = await kubelet_factory(
        kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"), red_box_socket=box.socket
    )
    stack = Stack(apiserver, box, kubelet, kube)
    name = unique("nv")
    body = gpu_pod(name, {"nvidia.com/mig-1g.10gb": "1"}, f"{SHOW}; {NV_LIBS}; sleep 8")
    body["spec"]["containers"][0]["image"] = "hello"
    await stack.kube.create(PODS, body, namespace="default")
    running = await phase(stack, name, "Running", "Succeeded", "Failed")
    assert running["status"]["phase"] == "Running", running["status"]
    job_id = running["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
    script = run_slurm(typed_slurm, "scontrol", "write", "batch_script", str(job_id), "-")
    sif_path = gpu_images / "hello.sif"
    assert script.splitlines()[-1] == (
        f"exec \"$rt\" --quiet exec --nv {sif_path} sh -c '{SHOW}; {NV_LIBS}; sleep 8'"
    ), script
    pod = await phase(stack, name, "Succeeded", "Failed")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    logs = await stack.kubectl("logs", name)
    assert logs.returncode == 0, logs.stderr
    shown_line, *libs = logs.stdout.splitlines()
    words = dict(word.split("=", 1) for word in shown_line.split())
    assert words["gpus"] == words["cuda"]
    assert len(words["cuda"].split(",")) == 1
    assert int(words["cuda"]) in SLICES

    def direct(*flags: str) -> list[str]:
        argv = [apptainer.APPTAINER, "--quiet", "exec", *flags, str(sif_path), "sh", "-c", NV_LIBS]
        return run_slurm(typed_slurm, *argv, user=JOB_OWNER).splitlines()

    assert libs == direct("--nv")
    assert direct() == []
