"""The srun command of an exec and the filter of srun's own exit line (captured from Slurm 22.05)."""

from __future__ import annotations

import pytest

from wlmvk.core.execs import ExecSpec, Resize
from wlmvk.core.jobs import JobId
from wlmvk.redbox.slurm.processes.overlap import ExitLineFilter, srun_argv, step_named

# What srun 22.05 printed for `sh -c 'echo err >&2; exit 3'` in job 162127 (node vm).
CAPTURED = b"err\nsrun: error: vm: task 0: Exited with exit code 3\n"


def test_srun_argv() -> None:
    spec = ExecSpec(job_id=JobId(12), command=("sh", "-c", "echo; exit 3"))
    assert srun_argv(spec) == [
        "srun", "--overlap", "--jobid=12", "--ntasks=1", "--nodes=1", "--quiet",
        "--", "sh", "-c", "echo; exit 3",
    ]  # fmt: skip


def test_srun_argv_on_a_terminal_in_the_jobs_directory() -> None:
    spec = ExecSpec(job_id=JobId(5), command=("bash",), tty=True, size=Resize(80, 24))
    assert srun_argv(spec, working_dir="/home/u/w") == [
        "srun", "--overlap", "--jobid=5", "--ntasks=1", "--nodes=1", "--quiet", "--chdir=/home/u/w", "--pty",
        "--", "bash",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("container_dir", "chdir"),
    [("", "/home/u/w"), ("data/run", "/home/u/w/data/run"), ("/scratch/x", "/scratch/x")],
)
def test_the_command_starts_in_the_containers_directory_under_the_jobs(
    container_dir: str, chdir: str
) -> None:
    spec = ExecSpec(job_id=JobId(5), command=("pwd",), working_dir=container_dir)
    assert f"--chdir={chdir}" in srun_argv(spec, working_dir="/home/u/w")


def run(chunks: list[bytes]) -> bytes:
    f = ExitLineFilter()
    return b"".join(f.feed(c) for c in chunks) + f.end()


def test_the_exit_line_is_dropped() -> None:
    assert run([CAPTURED]) == b"err\n"


@pytest.mark.parametrize("cut", range(1, len(CAPTURED)))
def test_the_exit_line_is_dropped_however_the_stream_is_cut(cut: int) -> None:
    assert run([CAPTURED[:cut], CAPTURED[cut:]]) == b"err\n"


def test_other_srun_errors_pass() -> None:
    text = b"srun: error: Unable to create step for job 9: Job/step already completing or completed\n"
    assert run([text]) == text


def test_a_line_that_only_contains_the_words_passes() -> None:
    text = b"x srun: error: vm: task 0: Exited with exit code 3\n"
    assert run([text[:2], text[2:]]) == text


def test_output_without_a_newline_is_not_held() -> None:
    f = ExitLineFilter()
    assert f.feed(b"prompt> ") == b"prompt> "
    assert f.feed(b"srun: error: vm: task 0: Exited with exit code 3\n") == (
        b"srun: error: vm: task 0: Exited with exit code 3\n"
    ), "not at the start of a line: the command's own text"


def test_a_held_start_that_was_not_the_exit_line_comes_out() -> None:
    f = ExitLineFilter()
    assert f.feed(b"srun: er") == b""
    assert f.feed(b"ror: elsewhere\n") == b"srun: error: elsewhere\n"
    assert f.feed(b"srun") == b""
    assert f.end() == b"srun"


def test_the_step_is_named_when_asked() -> None:
    spec = ExecSpec(job_id=JobId(12), command=("true",))
    assert srun_argv(spec, name="wlmvk-exec-0123456789ab")[:7] == [
        "srun", "--overlap", "--jobid=12", "--ntasks=1", "--nodes=1", "--quiet",
        "--job-name=wlmvk-exec-0123456789ab",
    ]  # fmt: skip


def test_step_named_finds_the_step_by_its_exact_name() -> None:
    # `squeue -h -s -j 57020 -o "%i %j"` (Slurm 22.05) with an exec step named wlmvk-exec-abc.
    listing = "57020.0 wlmvk-exec-abc\n57020.batch batch\n"
    assert step_named(listing, "wlmvk-exec-abc") == "57020.0"
    assert step_named(listing, "wlmvk-exec-ab") is None
    assert step_named(listing, "batch") == "57020.batch"
    assert step_named("", "wlmvk-exec-abc") is None
