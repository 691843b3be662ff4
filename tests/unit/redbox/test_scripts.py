"""Submission options and container scripts."""

from __future__ import annotations

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerJobSpec, ContainerOptions
from wlmvk.redbox import scripts


def test_options_carry_the_key_in_the_comment() -> None:
    options = scripts.sbatch_options(
        partition="debug",
        name="job one",
        working_dir="/w/j",
        std_out="/w/j/out",
        std_err="",
        idempotency_key="0f1e-uid",
    )
    assert options == [
        "--partition=debug",
        "--job-name=job one",
        "--chdir=/w/j",
        "--output=/w/j/out",
        "--comment=wlmvk:0f1e-uid",
    ]
    assert (
        scripts.sbatch_options(
            partition="", name="", working_dir="", std_out="", std_err="", idempotency_key=""
        )
        == []
    )


@pytest.mark.parametrize("key", ["has space", "semi;colon", "x" * 129, "-leading"])
def test_bad_keys(key: str) -> None:
    with pytest.raises(InvalidInput, match="idempotency key"):
        scripts.check_key(key)


def test_script_checks() -> None:
    assert scripts.check_script("#!/bin/sh\n", limit=100) == b"#!/bin/sh\n"
    with pytest.raises(InvalidInput, match="empty"):
        scripts.check_script(" \n", limit=100)
    with pytest.raises(InvalidInput, match="limit is 10"):
        scripts.check_script("#!/bin/sh\necho long\n", limit=10)
    with pytest.raises(InvalidInput, match="not valid"):
        scripts.check_env({"BAD-NAME": "x"})


def test_container_script_pulls_runs_and_cleans_up() -> None:
    spec = ContainerJobSpec(
        image="docker://alpine:3",
        wall_time=90,
        mem_per_node=512,
        nodes=1,
        cpu_per_node=2,
        options=ContainerOptions(binds=("/a:/b", "/c"), clear_env=True, app="tool"),
    )
    text = scripts.container_script(spec, "apptainer", pull_name="x.sif")
    lines = text.splitlines()
    assert lines[:5] == [
        "#!/bin/sh",
        "#SBATCH --time=1:30",
        "#SBATCH --mem=512",
        "#SBATCH --nodes=1",
        "#SBATCH --cpus-per-task=2",
    ]
    assert "srun apptainer pull --name x.sif docker://alpine:3 || exit" in lines
    assert "srun apptainer run --app=tool --bind=/a:/b,/c --cleanenv x.sif" in lines
    assert lines[-1] == "exit $status"


def test_container_script_for_a_local_image_verifies_it() -> None:
    spec = ContainerJobSpec(image="local.file:///images/tool.sif")
    text = scripts.container_script(spec, "singularity", pull_name="unused")
    assert "srun singularity verify /images/tool.sif || exit" in text
    assert "srun singularity run /images/tool.sif || exit" in text
