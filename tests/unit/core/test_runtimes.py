"""core.runtimes: which runtime a setting picks, and Podman's flags for the WlmJob options."""

from __future__ import annotations

import shlex
from collections.abc import Callable

import pytest

from wlmvk.core import runtimes
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerOptions

BASE = ["podman", "--log-level=error", "run", "--quiet", "--rm", "--network=host"]


def has(*names: str) -> Callable[[str], bool]:
    return lambda name: name in names


@pytest.mark.parametrize(
    ("setting", "installed", "chosen"),
    [
        ("auto", ("apptainer", "singularity", "podman"), "apptainer"),
        ("auto", ("singularity", "podman"), "singularity"),
        ("auto", ("podman",), "podman"),
        ("auto", (), ""),
        ("podman", ("apptainer", "podman"), "podman"),
        ("apptainer", ("podman",), ""),
        ("none", ("apptainer", "podman"), ""),
    ],
)
def test_choose_follows_the_documented_order(setting: str, installed: tuple[str, ...], chosen: str) -> None:
    assert runtimes.choose(setting, has(*installed)) == chosen


def test_choose_refuses_an_unknown_setting() -> None:
    with pytest.raises(InvalidInput, match=r"docker.*use one of auto, apptainer, singularity, podman, none"):
        runtimes.choose("docker", has())


def test_missing_names_what_was_looked_for() -> None:
    assert runtimes.missing("auto") == (
        "no container runtime on the Slurm side: none of apptainer, singularity, podman is installed"
    )
    assert "podman" in runtimes.missing("podman")
    assert "--container-runtime" in runtimes.missing("podman")
    assert "container jobs are disabled" in runtimes.missing("none")


def test_podman_defaults_mirror_singularity_defaults() -> None:
    argv = runtimes.podman_argv("oci-archive:/i/box.tar", ContainerOptions())
    assert argv == [*BASE, "--env-host", "--read-only", "--pid=host", "oci-archive:/i/box.tar"]


def test_podman_maps_every_option_with_a_meaning() -> None:
    options = ContainerOptions(
        binds=("/data", "/in:/input:ro", "/out:/output:rw"),
        clear_env=True,
        writable=True,
        pid=True,
        no_privs=True,
        host_name="box",
        ipc=True,
        fake_root=True,
        allow_unsigned=True,
    )
    assert runtimes.podman_argv("oci:/i/layout:v1", options, ["sh", "-c", "id"]) == [
        *BASE,
        "--volume=/data:/data",
        "--volume=/in:/input:ro",
        "--volume=/out:/output",
        "--cap-drop=all",
        "--hostname=box",
        "oci:/i/layout:v1",
        "sh",
        "-c",
        "id",
    ]


@pytest.mark.parametrize(
    ("image", "tail"),
    [
        ("/srv/rootfs", ["--rootfs", "/srv/rootfs"]),
        ("docker://alpine:3", ["docker://alpine:3"]),
        ("docker-archive:/i/a.tar", ["docker-archive:/i/a.tar"]),
        ("alpine:3", ["alpine:3"]),
    ],
)
def test_podman_image_references(image: str, tail: list[str]) -> None:
    argv = runtimes.podman_argv(image, ContainerOptions(clear_env=True, writable=True, pid=True))
    assert argv == [*BASE, *tail]


@pytest.mark.parametrize(
    ("image", "options", "message"),
    [
        ("library://sylabsed/examples/lolcow", ContainerOptions(), "needs Apptainer or Singularity"),
        ("local.file:/i/cow.sif", ContainerOptions(), "needs Apptainer or Singularity"),
        ("shub://x/y", ContainerOptions(), "needs Apptainer or Singularity"),
        ("http://x/y.tar", ContainerOptions(), "Podman runs docker://, oci:"),
        ("oci:/i", ContainerOptions(app="cowsay"), "app='cowsay': SCIF apps exist only in SIF images"),
        ("oci:/i", ContainerOptions(binds=("",)), "bind '': use SRC"),
        ("oci:/i", ContainerOptions(binds=("/a:/b:rx",)), "bind '/a:/b:rx'"),
        ("oci:/i", ContainerOptions(binds=("/a:/b:ro:z",)), "bind '/a:/b:ro:z'"),
    ],
)
def test_podman_refuses_what_has_no_meaning(image: str, options: ContainerOptions, message: str) -> None:
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(")):
        runtimes.podman_argv(image, options)


def test_podman_job_line_is_one_srun_without_shell_injection() -> None:
    lines = runtimes.job_lines("podman", "/srv/root fs;rm -rf ~", ContainerOptions(), pull_name="unused")
    assert len(lines) == 1
    words = shlex.split(lines[0])
    assert words[-1] == "/srv/root fs;rm -rf ~"
    assert words[:2] == ["srun", "podman"]
    assert '--volume="$PWD:$PWD" --workdir="$PWD"' in lines[0]


def test_job_lines_refuse_an_unknown_runtime() -> None:
    with pytest.raises(InvalidInput, match="unknown container runtime 'docker'"):
        runtimes.job_lines("docker", "oci:/i", ContainerOptions(), pull_name="x")


def test_job_lines_start_the_runtime_by_the_path_the_login_node_found() -> None:
    where = "/var/cache/wlmvk apptainer/v1.4.3/bin/apptainer"
    lines = runtimes.job_lines(
        "apptainer", "local.file:/i/a.sif", ContainerOptions(), pull_name="x", binary=where
    )
    assert lines == [
        "srun '/var/cache/wlmvk apptainer/v1.4.3/bin/apptainer' --quiet verify /i/a.sif || exit",
        "srun '/var/cache/wlmvk apptainer/v1.4.3/bin/apptainer' --quiet run /i/a.sif || exit",
    ]
    podman = runtimes.job_lines("podman", "oci:/i", ContainerOptions(), pull_name="x", binary="/opt/p/podman")
    assert shlex.split(podman[0])[:3] == ["srun", "/opt/p/podman", "--log-level=error"]


@pytest.mark.parametrize(
    ("runtime_path", "path", "searched"),
    [
        ("/opt/a/bin", "/usr/bin:/bin", "/opt/a/bin:/usr/bin:/bin"),
        ("/opt/a/bin:/opt/b", "/bin:/opt/a/bin", "/opt/a/bin:/opt/b:/bin"),
        ("", "/usr/bin::/bin", "/usr/bin:/bin"),
        ("/opt/a/bin:", "", "/opt/a/bin"),
    ],
)
def test_search_path_puts_the_runtime_path_ahead_once(runtime_path: str, path: str, searched: str) -> None:
    assert runtimes.search_path(runtime_path, path) == searched


@pytest.mark.parametrize(
    ("image", "name"),
    [
        ("busybox", "busybox.sif"),
        ("busybox:1.36", "busybox_1.36.sif"),
        ("site/tools:2", "site_tools_2.sif"),
        ("docker://site/tools:2", "site_tools_2.sif"),
        ("tools@sha256:ab12", "tools_sha256_ab12.sif"),
    ],
)
def test_sif_name_is_the_reference_with_separators_made_underscores(image: str, name: str) -> None:
    assert runtimes.sif_name(image) == name


@pytest.mark.parametrize(("gpus", "flags"), [(0, ()), (-1, ()), (1, ("--nv",)), (8, ("--nv",))])
def test_a_job_with_gpus_gets_nv_and_one_without_gets_nothing(gpus: int, flags: tuple[str, ...]) -> None:
    assert runtimes.gpu_flags(gpus) == flags


@pytest.mark.parametrize(
    ("gpus", "site", "flags"),
    [
        (1, ("--rocm",), ("--rocm",)),
        (2, ("--nv", "--nvccli"), ("--nv", "--nvccli")),
        (1, (), ()),
        (0, ("--rocm",), ()),
    ],
)
def test_a_site_names_its_own_gpu_flags(gpus: int, site: tuple[str, ...], flags: tuple[str, ...]) -> None:
    assert runtimes.gpu_flags(gpus, site) == flags


@pytest.mark.parametrize(
    "good", [("--nv",), ("--rocm",), ("--nvccli",), ("--bind=/opt/cuda:/usr/local/cuda",), ()]
)
def test_gpu_flags_that_are_options_are_taken(good: tuple[str, ...]) -> None:
    assert runtimes.check_gpu_flags(good) == good


@pytest.mark.parametrize("bad", ["nv", "-n", "--nv;reboot", "--NV", "--bind=$(id)", "--x y"])
def test_a_gpu_flag_that_is_not_an_option_is_refused_by_name(bad: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        runtimes.check_gpu_flags(["--nv", bad])
    assert refused.value.message == (
        f"SIF runtime GPU flag {bad!r}: expected an option such as --nv or --rocm"
    )


PICK = "if command -v apptainer >/dev/null 2>&1; then rt=apptainer; else rt=singularity; fi"


@pytest.mark.parametrize(
    ("image", "command", "args", "gpus", "line"),
    [
        ("busybox", ["nvidia-smi"], [], 0, 'exec "$rt" --quiet exec docker://busybox nvidia-smi'),
        ("busybox", ["nvidia-smi"], [], 1, 'exec "$rt" --quiet exec --nv docker://busybox nvidia-smi'),
        (
            "/s/cuda.sif",
            ["sh", "-c"],
            ["echo $X"],
            2,
            "exec \"$rt\" --quiet exec --nv /s/cuda.sif sh -c 'echo $X'",
        ),
        ("/s/cuda.sif", [], [], 0, 'exec "$rt" --quiet run /s/cuda.sif'),
        ("/s/cuda.sif", [], [], 4, 'exec "$rt" --quiet run --nv /s/cuda.sif'),
        ("oras://r/x:1", [], ["--a", "b c"], 1, "exec \"$rt\" --quiet run --nv oras://r/x:1 --a 'b c'"),
    ],
)
def test_pod_lines_put_nv_before_the_image_only_when_the_pod_has_gpus(
    image: str, command: list[str], args: list[str], gpus: int, line: str
) -> None:
    assert runtimes.pod_lines(image, command, args, gpus=gpus) == [PICK, line]


def test_pod_lines_give_a_gpu_pod_the_sites_flags_instead_of_nv() -> None:
    lines = runtimes.pod_lines("/s/rocm.sif", ["rocm-smi"], [], gpus=1, gpu_flags_of_site=("--rocm",))
    assert lines == [PICK, 'exec "$rt" --quiet exec --rocm /s/rocm.sif rocm-smi']
