"""The command runner: output, failures, and a hanging command killed after its timeout."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from wlmvk.core.errors import InvalidInput, NotFound, Unavailable
from wlmvk.redbox.slurm.commands import classify, no_accounting
from wlmvk.redbox.slurm.runner import Completed, Runner

CAPTURED = Path(__file__).resolve().parents[2] / "fixtures" / "slurm_captured"


async def test_runs_argv_with_stdin_and_env() -> None:
    runner = Runner(timeout=5)
    done = await runner.run(["sh", "-c", 'cat; printf "$X"'], stdin=b"in-", env={"X": "env", "PATH": "/bin"})
    assert done.ok
    assert done.stdout == "in-env"
    assert runner.spawned == 1


async def test_a_hanging_command_is_killed_and_unavailable() -> None:
    runner = Runner(timeout=0.3)
    started = time.monotonic()
    with pytest.raises(Unavailable, match="no answer"):
        await runner.run(["sh", "-c", "sleep 30 & wait"])
    assert time.monotonic() - started < 10


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
