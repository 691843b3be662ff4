"""Submission options and container scripts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerJobSpec, ContainerOptions
from wlmvk.redbox import scripts


def test_options_carry_the_key_in_the_comment() -> None:
    options = scripts.sbatch_options(
        script="#!/bin/sh\necho\n",
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
            script="#!/bin/sh\n#SBATCH --comment=theirs\n",
            partition="",
            name="",
            working_dir="",
            std_out="",
            std_err="",
            idempotency_key="",
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
    assert "srun apptainer --quiet pull --name x.sif docker://alpine:3 || exit" in lines
    assert "srun apptainer --quiet run --app=tool --bind=/a:/b,/c --cleanenv x.sif" in lines
    assert lines[-1] == "exit $status"


def test_a_container_script_is_charged_to_the_account_and_qos_asked() -> None:
    spec = ContainerJobSpec(image="docker://alpine:3", wall_time=60, account="physics", qos="long-2")
    lines = scripts.container_script(spec, "apptainer", pull_name="x.sif").splitlines()
    assert lines[:4] == [
        "#!/bin/sh",
        "#SBATCH --account=physics",
        "#SBATCH --qos=long-2",
        "#SBATCH --time=1:00",
    ]
    for field, value in (("account", "a\n#SBATCH --uid=0"), ("qos", "two words"), ("account", "-x")):
        with pytest.raises(InvalidInput, match=f"^{field} "):
            scripts.container_script(replace(spec, **{field: value}), "apptainer", pull_name="x.sif")


def test_container_script_for_a_local_image_verifies_it() -> None:
    spec = ContainerJobSpec(image="local.file:///images/tool.sif")
    text = scripts.container_script(spec, "singularity", pull_name="unused")
    assert "srun singularity --quiet verify /images/tool.sif || exit" in text
    assert "srun singularity --quiet run /images/tool.sif || exit" in text


@pytest.mark.parametrize("value", ["a\nb", "a\x1fb", "tab\there", "cr\r", "del\x7f"])
def test_control_characters_are_refused_with_the_field_named(value: str) -> None:
    with pytest.raises(InvalidInput, match=r"^working dir .*control characters"):
        scripts.check_text("working dir", value)
    assert scripts.check_text("working dir", "/a b|c/ünï") == "/a b|c/ünï"


def test_a_control_character_in_an_sbatch_line_is_refused_elsewhere_allowed() -> None:
    with pytest.raises(InvalidInput, match="line 2 of the batch script"):
        scripts.check_script("#!/bin/sh\n#SBATCH --comment=a\x1fb\necho\n", limit=1000)
    text = "#!/bin/sh\r\n#SBATCH\t--job-name=tabbed\r\nprintf 'a\\x1fb\x1f'\n"
    assert scripts.check_script(text, limit=1000) == text.encode()


def test_sbatch_variables_are_options_and_checked_like_them() -> None:
    with pytest.raises(InvalidInput, match="environment variable SBATCH_JOB_NAME"):
        scripts.check_env({"SBATCH_JOB_NAME": "x\ny"})
    assert scripts.check_env({"GREETING": "multi\nline"}) == {"GREETING": "multi\nline"}


def test_slurms_commands_get_red_boxs_environment_with_the_checked_request_over_it() -> None:
    base = {"PATH": "/usr/bin", "HOME": "/home/u"}
    assert scripts.environment(base, {}) is None, "nothing asked: the command inherits red-box's as it is"
    assert scripts.environment(base, {"PATH": "/opt/bin", "A": "1"}) == {
        "PATH": "/opt/bin",
        "HOME": "/home/u",
        "A": "1",
    }
    with pytest.raises(InvalidInput) as refused:
        scripts.environment(base, {"BAD-NAME": "x"})
    assert refused.value.message == "environment variable name 'BAD-NAME' is not valid"
