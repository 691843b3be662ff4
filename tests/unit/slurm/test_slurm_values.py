"""core.durations, core.memory and core.gres: one reading of Slurm's values for every side.

The rounding and the refusals are sbatch 22.05's (checked with held jobs):
``--mem=500K`` asks for 1M and ``--mem=1025K`` for 2M; ``--gres=gpu:a100:x`` is
"Invalid generic resource (gres) specification" while ``gpu:x`` is one GPU of type x.
"""

from __future__ import annotations

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.redbox.slurm.cli import nodeinfo as partitions
from wlmvk.slurm import durations, gres, memory


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10", 600),
        ("1:30", 90),
        ("01:02:03", 3723),
        ("2-3", (2 * 24 + 3) * 3600),
        ("2-3:04", (2 * 24 + 3) * 3600 + 240),
        ("1-00:00:01", 86401),
        (" 5 ", 300),
        ("x", None),
        ("1:2:3:4", None),
        ("a-1", None),
        ("", None),
    ],
)
def test_durations(text: str, seconds: int | None) -> None:
    assert durations.seconds(text) == seconds


def test_unlimited_spellings() -> None:
    assert durations.unlimited("UNLIMITED")
    assert durations.unlimited("infinite")
    assert not durations.unlimited("10")
    assert durations.minutes_text(125) == "2:05"


@pytest.mark.parametrize(
    ("text", "mb"),
    [
        ("500K", 1),
        ("1025K", 2),
        ("1024K", 1),
        ("7", 7),
        ("100MB", 100),
        ("4G", 4096),
        ("1t", 1024**2),
        ("4X", None),
    ],
)
def test_memory_rounds_up_as_sbatch(text: str, mb: int | None) -> None:
    assert memory.megabytes(text) == mb


def test_red_box_reads_a_kilobyte_limit_as_sbatch_does() -> None:
    # red-box floored (1025K -> 1 MB) where the operator and sbatch round up (2 MB).
    assert partitions._memory_mb("1025K") == 2


@pytest.mark.parametrize(
    ("text", "gpus"),
    [
        ("gpu", 1),
        ("gpu:2", 2),
        ("gpu:a100", 1),
        ("gpu:x", 1),
        ("gpu:a100:2", 2),
        ("gpu:2k", 2048),
        ("gpu:tesla:2(S:0-1)", 2),
        ("gpu:a:1,gpu:b:1", 2),
        ("gpu:a:1(S:0,1),mps:100", 1),
        ("(null)", 0),
        ("", 0),
    ],
)
def test_gpus(text: str, gpus: int) -> None:
    assert gres.gpus(text) == gpus


@pytest.mark.parametrize("text", ["gpu:a100:x", "gpu:a:b:c", "gpu:a100:2x"])
def test_gres_sbatch_refuses_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput, match="gpu"):
        gres.gpus(text)


def test_red_box_does_not_count_a_gres_sbatch_refuses() -> None:
    # red-box counted "gpu:a100:x" as one GPU where the operator refused it.
    assert partitions.gres_gpus("gpu:a100:x") == 0
