"""SubmitJobContainer on real Slurm: red-box's --container-runtime picks what runs the image.

red-box runs as the job owner (UID 1000), as in production; the image is
built here (``wlmvk_dev.images``), no registry is reached.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from tests.e2e.redbox.helpers import terminal, wait_for
from tests.fixtures import prerequisites
from tests.fixtures.redbox import JOB_OWNER, RedBox
from tests.fixtures.shared_dirs import SharedDir
from wlmvk._proto import api
from wlmvk.core.jobs import ContainerJobSpec, ContainerOptions, JobStatus
from wlmvk.redboxclient.client import RedBoxClient
from wlmvk_dev.images import busybox_rootfs, oci_archive

pytestmark = pytest.mark.slurm


def archive(shared_dir: SharedDir, entrypoint: str) -> str:
    where = shared_dir("wlmvk-image-")
    return f"oci-archive:{oci_archive(busybox_rootfs(where / 'rootfs', entrypoint), where / 'image.tar')}"


@prerequisites.unless_installed(
    shutil.which("podman") is None, "Podman is not installed (dev/scripts/container-local up)"
)
async def test_podman_runs_the_image_and_its_exit_code_is_the_jobs(
    redbox_factory: Callable[..., RedBox], shared_dir: SharedDir
) -> None:
    box = redbox_factory("--container-runtime", "podman", user=JOB_OWNER)
    client = RedBoxClient(box.socket, timeout=30.0)
    try:
        spec = ContainerJobSpec(
            image=archive(shared_dir, 'echo "hello as $(id -u) in $(pwd)"\nexit 7\n'),
            partition="debug",
            wall_time=120,
            options=ContainerOptions(clear_env=True),
            working_dir="boxed",
        )
        job_id = await client.submit_container(spec)
        state = await wait_for(client, job_id, terminal)
        assert state.status is JobStatus.FAILED
        assert state.exit_code == 7
        output = (box.work_dir / "boxed" / f"slurm-{job_id}.out").read_text()
        # rootless Podman's root is the job owner; the container starts in the job's directory
        assert f"hello as 0 in {box.work_dir / 'boxed'}" in output.splitlines(), output
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("apptainer", "the container runtime apptainer (red-box --container-runtime) is not installed"),
        ("none", "red-box runs with --container-runtime none: container jobs are disabled"),
    ],
)
async def test_a_missing_runtime_is_a_failed_precondition_naming_it(
    redbox_factory: Callable[..., RedBox], setting: str, message: str
) -> None:
    if setting != "none" and shutil.which(setting):
        pytest.skip(f"{setting} is installed here")
    box = redbox_factory("--container-runtime", setting)
    channel = Channel(path=box.socket)
    try:
        stub = api.WorkloadManagerStub(channel)
        with pytest.raises(GRPCError) as refused:
            await stub.submit_job_container(
                api.SubmitJobContainerRequest(image_name="oci:/x", partition="debug")
            )
        assert refused.value.status is Status.FAILED_PRECONDITION
        assert refused.value.message is not None
        assert message in refused.value.message
        resources = await stub.resources(api.ResourcesRequest(partition="debug"))
        assert resources.container_runtime is False
    finally:
        channel.close()
