"""The lookup by key's reading (``cli.keys``), on output captured from the real Slurm 22.05 of this
project by dev/scripts/slurm-capture-keys: the same jobs read with ids and comments alone and with
red-box's whole format find the same keys."""

from __future__ import annotations

from tests.unit.redbox.slurm.cli.test_parsing import captured
from wlmvk.core.jobs import JobId
from wlmvk.redbox.slurm.cli import keys, sacct, squeue
from wlmvk.redbox.slurm.cli.releases import Release

HELD = {
    "key-held": 939728,
    "key-heldarray": 939729,
    "key-twice": 939731,  # the newer of two jobs with the key (939730, 939731)
    "key-nl": 939732,  # the comment goes on after a newline
}
RAN = {"key-ended": 939726, "key-tasks": 939727}  # an array's two tasks are its job's


def test_squeue_finds_every_key_its_newest_job_and_skips_no_row() -> None:
    read = keys.squeue_keys(captured("squeue_keys.txt"))
    assert read.jobs == {**RAN, **HELD}
    assert read.skipped == ()


def test_sacct_finds_the_keys_of_jobs_that_started() -> None:
    # Held jobs are in accounting with an empty comment until they start: squeue finds them.
    read = keys.sacct_keys(captured("sacct_keys.txt"))
    assert read.jobs == RAN
    assert read.skipped == ()


def test_the_whole_reading_of_the_same_jobs_finds_the_same_keys() -> None:
    queued = squeue.squeue_rows(captured("squeue_keys_full.txt"), release=Release(22, 5, 8), user="slurmuser")
    accounted = sacct.sacct_rows(captured("sacct_keys_full.txt"))
    for whole, found in ((queued, {**RAN, **HELD}), (accounted, RAN)):
        newest: dict[str, JobId] = {}
        for state in sorted(whole.states, key=lambda s: s.job_id):
            if state.idempotency_key:
                newest[state.idempotency_key] = state.job_id
        assert newest == found


def test_a_row_without_its_two_fields_is_skipped_and_the_others_read() -> None:
    output = captured("squeue_keys.txt")
    broken = output.replace("939728\x1fwlmvk:key-held\x1f", "939728\x1fwlmvk:key-held\x1fextra\x1f")
    read = keys.squeue_keys(broken)
    assert read.skipped == ("939728\x1fwlmvk:key-held\x1fextra\x1f",)
    assert read.jobs == {k: v for k, v in {**RAN, **HELD}.items() if k != "key-held"}


def test_nothing_reads_as_no_keys() -> None:
    assert keys.squeue_keys("") == keys.Keys({})
    assert keys.sacct_keys("") == keys.Keys({})
