"""A job's output paths, expanded as slurmstepd names the files (captured forms: test_releases.py)."""

from __future__ import annotations

import pytest

from wlmvk.redbox.slurm.cli import outputs, squeue
from wlmvk.redbox.slurm.cli.outputs import Job

JOB = Job(job_id=42, working_dir="/w", user="ann", name="train", batch_host="n01")
TASK = Job(job_id=40, working_dir="/w/", user="ann", name="sweep", array_job_id=40, array_task_id=3)


@pytest.mark.parametrize(
    ("path", "job", "expanded"),
    [
        ("/w/slurm-42.out", JOB, "/w/slurm-42.out"),  # 22.05: squeue fills in the default itself
        ("/w/slurm-%j.out", JOB, "/w/slurm-42.out"),  # 24.11: the default's pattern
        ("slurm-%j.out", JOB, "/w/slurm-42.out"),  # 26.05: relative to the working directory
        ("out/%x-%u-%N.log", JOB, "/w/out/train-ann-n01.log"),
        ("%5j.%J.%s.%n.%t", JOB, "/w/00042.42.batch.0.0"),
        ("%A_%a", JOB, "/w/42_4294967294"),  # not an array task: Slurm's NO_VAL, as slurmstepd writes
        ("slurm-%A_%a.out", TASK, "/w/slurm-40_3.out"),
        ("%3a-%12A", TASK, "/w/003-0000000040"),  # widths above 10 are 10
        ("100%%-%q-%", JOB, "/w/100%-%q-%"),  # %% is %, an unknown letter and a lone % stay
        ("/abs/\\%j\\.out", JOB, "/abs/%j.out"),  # a backslash: taken as it stands
        ("", JOB, ""),
    ],
)
def test_expand(path: str, job: Job, expanded: str) -> None:
    assert outputs.expand(path, job) == expanded


def test_stderr_unset_is_stdouts_and_stdout_unset_is_slurms_default() -> None:
    assert outputs.paths("o-%j.txt", "", JOB) == ("/w/o-42.txt", "/w/o-42.txt")
    assert outputs.paths("", "", JOB) == ("/w/slurm-42.out", "/w/slurm-42.out")
    assert outputs.paths("", "e.txt", TASK) == ("/w/slurm-40_3.out", "/w/e.txt")


@pytest.mark.parametrize(
    ("nodes", "first"),
    [("vm", "vm"), ("n[01-04,7]", "n01"), ("a,b", "a"), ("r[2-3]-n[5-6],x", "r2-n5"), ("", "")],
)
def test_the_batch_host_is_the_first_node(nodes: str, first: str) -> None:
    assert squeue.first_host(nodes) == first
