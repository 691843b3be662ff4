"""slurmrestd's job dump reads as squeue reads the same jobs, on answers captured together.

Captured on this project's Slurm 22.05.8 as the job owner (``cloudsdk``): one job of each
kind submitted (held, begin-time pending, running, completed, failed with exit 3, cancelled,
killed by SIGKILL, an array partly running and pending, an array with a failed task, output
patterns), then ``squeue --local -h -t all -u cloudsdk -O squeue.FORMAT``, ``GET
/slurm/v0.0.38/jobs`` from a slurmrestd of the same user, and squeue again (the same bytes, so
nothing changed in between); a timed-out job the same way (``--time=1``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.slurm.cli import squeue
from wlmvk.redbox.slurm.cli.releases import Release
from wlmvk.redbox.slurm.rest import dump as restjobs

CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured"
USER = "cloudsdk"
UID = 1000
"""The owner of the captured 22.05 jobs (``user_id`` in the dump)."""
PAIRS = [
    ("restd_jobs_v0.0.38.json", "squeue_restd_v0.0.38.txt", Release(22, 5, 8)),
    ("restd_jobs_timeout_v0.0.38.json", "squeue_restd_timeout_v0.0.38.txt", Release(22, 5, 8)),
]


def by_id(states: list[JobState]) -> dict[JobId, JobState]:
    return {state.job_id: state for state in states}


@pytest.mark.parametrize(("dump", "listing", "release"), PAIRS)
def test_the_dump_reads_as_squeue_field_by_field(dump: str, listing: str, release: Release) -> None:
    rows = squeue.squeue_rows((CAPTURED / listing).read_text(), release=release, user=USER)
    assert rows.skipped == ()
    read = restjobs.read((CAPTURED / dump).read_bytes(), uid=UID)
    assert by_id(read.states) == by_id(rows.states)
    assert len(read.states) == len(rows.states)


def test_every_kind_of_job_is_in_the_captured_dump() -> None:
    read = restjobs.read((CAPTURED / "restd_jobs_v0.0.38.json").read_bytes(), uid=UID)
    states = by_id(read.states)
    assert read.total == 14
    assert {s.status for s in states.values()} == {
        JobStatus.PENDING,
        JobStatus.RUNNING,
        JobStatus.COMPLETED,
        JobStatus.FAILED,
        JobStatus.CANCELLED,
    }
    held = states[JobId(161612)]
    assert (held.reason, held.idempotency_key) == ("JobHeldUser", "key-held")
    assert (states[JobId(161617)].exit_code, states[JobId(161617)].signal) == (3, 0)
    assert (states[JobId(161618)].exit_code, states[JobId(161618)].signal) == (0, 15)
    array = states[JobId(161619)]
    assert array.status is JobStatus.RUNNING
    assert array.reason == "array of 6 tasks: 4 pending, 2 running"
    assert array.std_out == "/tmp/st3/work/arr-161619_4294967294.out"
    ended = states[JobId(161620)]
    assert (ended.status, ended.exit_code) == (JobStatus.FAILED, 1)
    assert ended.std_out == "/tmp/st3/work/slurm-161620_0.out"  # the first row, as squeue sorts them


def test_only_the_users_jobs_and_the_ids_asked_are_read() -> None:
    body = (CAPTURED / "restd_jobs_v0.0.38.json").read_bytes()
    assert restjobs.read(body, uid=4242) == restjobs.Dump([], 14)
    read = restjobs.read(body, uid=UID, job_ids=[JobId(161612), JobId(161619), JobId(999)])
    assert sorted(by_id(read.states)) == [161612, 161619]


def _with_first_job(change: dict[str, object]) -> bytes:
    document = json.loads((CAPTURED / "restd_jobs_v0.0.38.json").read_bytes())
    document["jobs"][0].update(change)
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    "change",
    [
        {"job_state": "SOMETHING_NEW"},
        {"job_state": ["PENDING", "A_NEW_FLAG"]},
        {"submit_time": "yesterday"},
        {"comment": 12},
        {"array_job_id": 5, "array_task_id": None, "array_task_string": ""},
        {"user_name": None},
        {"user_id": None},
        {"user_id": "1000"},
    ],
)
def test_a_record_that_does_not_read_makes_the_answer_inexact(change: dict[str, object]) -> None:
    with pytest.raises(restjobs.Inexact):
        restjobs.read(_with_first_job(change), uid=UID)


def test_another_users_odd_record_does_not_matter() -> None:
    read = restjobs.read(_with_first_job({"user_id": 4242, "job_state": "SOMETHING_NEW"}), uid=UID)
    assert JobId(161612) not in by_id(read.states)


def test_jobs_are_chosen_by_uid_not_by_name() -> None:
    """A job of red-box's uid under another name (a renamed user) is its own; another uid's under
    its name is not."""
    renamed = restjobs.read(_with_first_job({"user_name": "renamed"}), uid=UID)
    assert JobId(161612) in by_id(renamed.states)
    other = restjobs.read(_with_first_job({"user_id": 4242}), uid=UID)
    assert JobId(161612) not in by_id(other.states)


@pytest.mark.parametrize(
    "body", [b"not json", b'{"jobs": {}}', b'{"errors": [{"error": "x"}], "jobs": []}', b"[]"]
)
def test_an_answer_that_is_not_a_dump_is_inexact(body: bytes) -> None:
    with pytest.raises(restjobs.Inexact):
        restjobs.read(body, uid=UID)


def test_v0_0_42_values() -> None:
    assert restjobs.number({"set": True, "infinite": False, "number": 7}) == 7
    assert restjobs.number({"set": False, "infinite": False, "number": 0}) is None
    assert restjobs.state_word(["RUNNING", "COMPLETING"]) == "COMPLETING"
    assert restjobs.state_word(["PENDING", "UPDATE_DB"]) == "PENDING"
    number = {"set": True, "infinite": False, "number": 3}
    unset = {"set": False, "infinite": False, "number": 0}
    assert restjobs.exit_pair({"status": ["ERROR"], "return_code": number, "signal": {"id": unset}}) == (3, 0)


@pytest.mark.parametrize("release", ["24.11", "26.05"])
def test_v0_0_42_dumps_read(release: str) -> None:
    body = (CAPTURED / "releases" / release / "slurmrestd-v0.0.42-jobs-changed.json").read_bytes()
    read = restjobs.read(body, uid=1001)  # slurmuser, who made the captured jobs
    assert read.states
    for state in read.states:
        assert state.status is JobStatus.PENDING
        assert state.std_out == f"{state.working_dir}/slurm-{state.job_id}.out"
        assert state.submit_time is not None


def test_an_array_tasks_filled_default_output_is_slurms_default() -> None:
    """From 24.11 slurmrestd fills an unset stdout with the job's own id: for a task, the
    default names the array and the task (the record here: 24.11's, made a task of array 40)."""
    document = json.loads(
        (CAPTURED / "releases" / "24.11" / "slurmrestd-v0.0.42-jobs-changed.json").read_bytes()
    )
    record = document["jobs"][0]
    work = record["current_working_directory"]
    record |= {
        "job_id": 43,
        "array_job_id": {"set": True, "infinite": False, "number": 40},
        "array_task_id": {"set": True, "infinite": False, "number": 3},
        "standard_output": f"{work}/slurm-43.out",
        "standard_error": f"{work}/slurm-43.out",
    }
    [state] = restjobs.read(json.dumps({"jobs": [record]}).encode(), uid=1001).states
    assert (state.job_id, state.std_out, state.std_err) == (
        40,
        f"{work}/slurm-40_3.out",
        f"{work}/slurm-40_3.out",
    )


def test_the_reason_is_the_jobs_own_description_where_it_has_one() -> None:
    """squeue prints ``RaisedSignal:9(Killed)`` for a job killed by a signal on 24.11 and 26.05,
    where the record's state_reason is ``RaisedSignal`` and its state_description the whole."""
    document = json.loads(
        (CAPTURED / "releases" / "24.11" / "slurmrestd-v0.0.42-jobs-changed.json").read_bytes()
    )
    record = document["jobs"][0] | {
        "state_reason": "RaisedSignal",
        "state_description": "RaisedSignal:9(Killed)",
    }
    [state] = restjobs.read(json.dumps({"jobs": [record]}).encode(), uid=1001).states
    assert state.reason == "RaisedSignal:9(Killed)"
