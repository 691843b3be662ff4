"""The command runner: output, failures, and a hanging command killed after its timeout.

The running tests run twice: children collected by pidfd (``spawning``) and,
as on kernels without pidfds, by asyncio's subprocess support.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import pytest

from wlmvk.core.errors import InvalidInput, LimitReached, NotFound, Unavailable
from wlmvk.redbox.slurm.cli.commands import classify, no_accounting
from wlmvk.redbox.slurm.processes import spawning
from wlmvk.redbox.slurm.processes.runner import Completed, Runner

CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured"


@pytest.fixture(params=["pidfd", "asyncio"])
def spawn_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "asyncio":
        monkeypatch.setattr(spawning, "available", lambda: False)
    else:
        assert spawning.available(), "this machine's kernel has pidfds"
    return str(request.param)


@pytest.mark.usefixtures("spawn_path")
async def test_runs_argv_with_stdin_and_env() -> None:
    runner = Runner(timeout=5)
    done = await runner.run(["sh", "-c", 'cat; printf "$X"'], stdin=b"in-", env={"X": "env", "PATH": "/bin"})
    assert done.ok
    assert done.stdout == "in-env"
    assert runner.spawned == 1


@pytest.mark.usefixtures("spawn_path")
async def test_a_large_stdin_stdout_and_stderr_and_the_exit_status() -> None:
    script = b"x" * 300_000 + b"\n"  # more than a pipe holds: written as the child reads
    argv = ["sh", "-c", "wc -c; echo warn >&2; exit 3"]
    done = await Runner(timeout=10).run(argv, stdin=script)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (3, "300001", "warn\n")


@pytest.mark.usefixtures("spawn_path")
async def test_a_child_that_ignores_its_stdin() -> None:
    done = await Runner(timeout=10).run(["sh", "-c", "exec 0<&-; echo ok"], stdin=b"y" * 300_000)
    assert (done.returncode, done.stdout) == (0, "ok\n")


@pytest.mark.usefixtures("spawn_path")
async def test_a_hanging_command_is_killed_and_unavailable() -> None:
    runner = Runner(timeout=0.3)
    started = time.monotonic()
    with pytest.raises(Unavailable, match="no answer"):
        await runner.run(["sh", "-c", "sleep 30 & wait"])
    assert time.monotonic() - started < 10


@pytest.mark.usefixtures("spawn_path")
async def test_a_missing_command_is_unavailable() -> None:
    with pytest.raises(Unavailable, match="not found"):
        await Runner().run(["no-such-slurm-command-xyz"])


def _failed(argv0: str, stderr: str) -> Completed:
    return Completed(argv=(argv0,), returncode=1, stdout="", stderr=stderr)


@pytest.mark.parametrize(
    ("argv0", "fixture", "error"),
    [
        ("sbatch", "sbatch_bad_partition.stderr", InvalidInput),
        ("sbatch", "sbatch_no_shebang.stderr", InvalidInput),
        ("sbatch", "sbatch_time_limit.stderr", InvalidInput),
        ("scontrol", "scontrol_job_unknown.stderr", NotFound),
        # Caught while another process rewrote slurm.conf: the next try works, the job is fine.
        ("sbatch", "sbatch_conf_unreadable.stderr", Unavailable),
        # A QoS's MaxSubmitJobsPerUser reached (22.05, AccountingStorageEnforce=limits): made nothing.
        ("sbatch", "sbatch_submit_limit.stderr", LimitReached),
    ],
)
def test_classify_captured_failures(argv0: str, fixture: str, error: type[Exception]) -> None:
    stderr = (CAPTURED / fixture).read_text()
    found = classify(_failed(argv0, stderr))
    assert isinstance(found, error)
    assert stderr.strip().splitlines()[-1] in str(found), "Slurm's own words reach the caller"


def test_classify_controller_down_and_accounting_off() -> None:
    down = _failed("sbatch", "sbatch: error: Batch job submission failed: Unable to contact slurm controller")
    assert isinstance(classify(down), Unavailable)
    assert no_accounting(_failed("sacct", "Slurm accounting storage is disabled"))
    assert not no_accounting(down)


@pytest.mark.usefixtures("spawn_path")
async def test_no_descriptor_is_left_open() -> None:
    runner = Runner(timeout=0.3)
    await runner.run(["true"])  # the loop's own descriptors exist from here on
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(5):
        await runner.run(["cat"], stdin=b"in")
        with pytest.raises(Unavailable):
            await runner.run(["sleep", "30"])
    assert sorted(os.listdir("/proc/self/fd")) == before


async def test_a_call_cancelled_while_its_child_starts_leaves_no_child() -> None:
    marker = f"{os.getpid()}.{time.monotonic_ns() % 1000}"
    before = sorted(os.listdir("/proc/self/fd"))
    calls = [asyncio.ensure_future(Runner(timeout=60).run(["sleep", marker])) for _ in range(5)]
    await asyncio.sleep(0)  # each call is past its slot and into the spawner
    for call in calls:
        call.cancel()
    for call in calls:
        with pytest.raises(asyncio.CancelledError):
            await call
    for _ in range(100):  # killed and reaped on the spawner thread, just after
        if not _running(marker) and sorted(os.listdir("/proc/self/fd")) == before:
            break
        await asyncio.sleep(0.05)
    assert _running(marker) == []
    assert sorted(os.listdir("/proc/self/fd")) == before


def _running(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes() == f"sleep\0{marker}\0".encode():
                found.append(pid)
    return found
