"""Plain pods' images through Apptainer: resolved in the site's directory of SIFs, or refused.

red-box (as the job owner) runs with ``--container-runtime apptainer``, the Apptainer that
``dev/scripts/apptainer-local build`` built (``--runtime-path``), and ``--image-dir`` a directory
holding ``hello.sif`` (``wlmvk_dev.images``: busybox, built here). A pod's image names a file
there (``core.runtimes.sif_name``); its command, args and env run inside that image. In the
release subsets (``slurm_releases``) all of it runs in the release's box, where the same build
is bound at the same path (dev/scripts/slurm-release).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, json_of, slurm_jobs_named, unique
from tests.e2e.kubelet.test_kubelet import wait_phase
from tests.fixtures import apptainer
from tests.fixtures.shared_dirs import PARENT
from wlmvk.kube.bodies import PODS
from wlmvk_dev.images import busybox_rootfs, sif

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, pytest.mark.slurm_releases, apptainer.NEEDED]


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory of SIFs every job owner can read: ``hello.sif``, whose /etc/marker says so."""
    where = Path(tempfile.mkdtemp(prefix="wlmvk-sifs-", dir=PARENT))
    where.chmod(0o755)
    root = busybox_rootfs(tmp_path_factory.mktemp("rootfs"), 'echo "runscript: $*"\n')
    (root / "etc" / "marker").write_text("hello-sif\n")
    sif(root, where / "hello.sif", apptainer=apptainer.APPTAINER)
    yield where
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def redbox_args(image_dir: Path) -> tuple[str, ...]:
    return (
        "--container-runtime",
        "apptainer",
        "--runtime-path",
        str(apptainer.BIN),
        "--image-dir",
        str(image_dir),
    )


async def test_a_pods_image_runs_its_command_args_and_env_inside_the_sif(stack: Stack) -> None:
    name = unique("sif")
    body = job_pod(name, 'echo "in $(cat /etc/marker) as $(id -u): $GREETING $0 $1"', partition="debug")
    container = body["spec"]["containers"][0]
    container["image"] = "hello"
    container["args"] = ["first", "second"]
    container["env"] = [{"name": "GREETING", "value": "hi there"}]
    await stack.kube.create(PODS, body, namespace="default")
    pod = await wait_phase(stack, name, "Succeeded", "Failed")
    logs = await stack.kubectl("logs", name)
    assert pod["status"]["phase"] == "Succeeded", (pod["status"], logs.stdout)
    assert logs.stdout == "in hello-sif as 1000: hi there first second\n"


async def test_an_image_the_site_has_no_sif_for_fails_the_pod_naming_it(
    stack: Stack, image_dir: Path
) -> None:
    name = unique("nosif")
    body = job_pod(name, "echo never")
    body["spec"]["containers"][0]["image"] = "lolcow:2"
    await stack.kube.create(PODS, body, namespace="default")
    pod = await wait_phase(stack, name, "Failed", timeout=60)
    message = (
        f"image 'lolcow:2': no lolcow_2.sif in the site's image directory {image_dir}"
        " (red-box --image-dir), which holds hello.sif"
    )
    assert (pod["status"]["reason"], pod["status"]["message"]) == ("ImageNotFound", message)
    assert slurm_jobs_named(name) == {}

    async def warned() -> list[str]:
        result = await stack.kubectl(
            "get", "events", "-o", "json", "--field-selector", f"involvedObject.name={name}"
        )
        return [e["message"] for e in json_of(result.stdout)["items"] if e["reason"] == "ImageNotFound"]

    assert await eventually(warned, timeout=30) == [message]
