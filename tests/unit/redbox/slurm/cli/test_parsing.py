"""Slurm output -> values, on output captured from the real Slurm 22.05 of this project.

The same jobs on every release: test_releases.py."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from wlmvk.core.jobs import Feature, JobStatus
from wlmvk.redbox.slurm.cli import exits, sacct, squeue, values
from wlmvk.redbox.slurm.cli import nodeinfo as partitions
from wlmvk.redbox.slurm.cli import rows as listing
from wlmvk.redbox.slurm.cli import scontrol as records
from wlmvk.redbox.slurm.cli.releases import Release

SLURM_22_05 = Release(22, 5, 8)
CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured"


def captured(name: str) -> str:
    return (CAPTURED / name).read_text()


def read_queue(output: str) -> listing.Rows:
    return squeue.squeue_rows(output, release=SLURM_22_05, user="slurmuser")


def by_id(states: list) -> dict:  # type: ignore[type-arg]
    return {s.job_id: s for s in states}


def test_squeue_finished_jobs_carry_exit_code_signal_and_key() -> None:
    rows = read_queue(captured("squeue_states_1.txt"))
    assert rows.skipped == ()
    states = by_id(rows.states)
    assert set(states) == {3, 4, 5, 8, 10, 11, 12, 13, 14}
    held = states[3]
    assert held.status is JobStatus.PENDING
    assert held.reason == "JobHeldUser"
    assert held.exit_code is None
    assert held.start_time is None
    assert held.end_time is None
    assert held.node_list == ""
    assert held.std_out == "/var/tmp/wlmvk-slurm/jobs/slurm-3.out"
    cancelled = states[4]
    assert cancelled.status is JobStatus.CANCELLED
    assert cancelled.idempotency_key == "0123456789abcdef0123456789abcdef-long-uid-key"
    assert cancelled.name == "a-very-long-job-name-that-exceeds-twenty-chars"
    killed = states[11]
    assert (killed.status, killed.exit_code, killed.signal) == (JobStatus.FAILED, 0, 9)
    running = states[5]
    assert running.status is JobStatus.RUNNING
    assert running.idempotency_key == "key-timeout"
    assert running.end_time is None, "squeue's EndTime of a running job is only a forecast"
    assert running.start_time is not None
    assert running.start_time.tzinfo is not None
    assert running.partition == "debug"
    assert running.node_list == "vm"
    assert running.working_dir == "/var/tmp/wlmvk-slurm/jobs"


def test_squeue_skips_and_reports_a_foreign_row() -> None:
    rows = read_queue("1|RUNNING|None\n")
    assert rows == listing.Rows(states=[], skipped=("1|RUNNING|None",))


def test_squeue_reads_every_job_around_hostile_names_comments_and_paths() -> None:
    """Captured: jobs named ``nl\\nin|name`` (working dir with a newline and ``|``, a comment forging a row
    after a newline) and ``sep\\x1fin\\x1fname``, between two plain jobs. The plain ones are read, the
    hostile ones are skipped and reported, nothing raises."""
    rows = read_queue(captured("squeue_hostile.txt"))
    assert sorted((s.job_id, s.name, s.idempotency_key) for s in rows.states) == [
        (625, "plain", "key-plain"),
        (628, "after", "key-after"),
    ]
    assert [text.split(listing.SEP, 1)[0] for text in rows.skipped] == ["627", "626", "99"]
    unknown = rows.unreadable()
    assert [(s.job_id, s.status, s.reason) for s in unknown] == [
        (job_id, JobStatus.UNKNOWN, listing.UNREADABLE_REASON) for job_id in (627, 626, 99)
    ]


def squeue_line(**values: str) -> str:
    """One squeue -O row as Slurm prints it: every field followed by the separator."""
    row = dict.fromkeys(squeue.FIELDS, "") | {"State": "RUNNING", "exit_code": "0"} | values
    return "".join(row[name] + listing.SEP for name in squeue.FIELDS) + "\n"


def test_a_newline_in_a_field_is_part_of_the_field() -> None:
    rows = read_queue(squeue_line(JobArrayID="7", Comment="wlmvk:k", WorkDir="/w\nx", Name="a\n\nb"))
    assert rows.skipped == ()
    (state,) = rows.states
    assert (state.working_dir, state.name, state.idempotency_key) == ("/w\nx", "a\n\nb", "k")


def test_a_row_whose_values_do_not_read_is_skipped_alone() -> None:
    bad = squeue_line(JobArrayID="9", State="COMPLETED", exit_code="not-a-number")
    rows = read_queue(bad + squeue_line(JobArrayID="8", State="COMPLETED"))
    assert [s.job_id for s in rows.states] == [8]
    assert rows.skipped == (bad.removesuffix("\n"),)


def test_a_skipped_fragment_does_not_hide_a_readable_row_of_its_job() -> None:
    rows = read_queue("8" + listing.SEP + "forged\n" + squeue_line(JobArrayID="8"))
    assert [(s.job_id, s.status) for s in rows.states] == [(8, JobStatus.RUNNING)]
    assert rows.unreadable() == []


def test_sacct_states_cover_every_terminal_kind() -> None:
    rows = sacct.sacct_rows(captured("sacct_states.txt"), sep="|")
    assert rows.skipped == ()
    states = by_id(rows.states)
    assert (states[2].status, states[2].exit_code, states[2].idempotency_key) == (
        JobStatus.FAILED,
        3,
        "abc-123",
    )
    assert states[4].status is JobStatus.CANCELLED, "'CANCELLED by 0' is CANCELLED"
    assert states[5].status is JobStatus.TIMEOUT
    assert states[5].idempotency_key == "key-timeout"
    assert (states[6].status, states[6].exit_code) == (JobStatus.COMPLETED, 0)
    assert (states[11].exit_code, states[11].signal) == (0, 9)
    assert states[3].status is JobStatus.PENDING
    assert states[3].exit_code is None
    assert states[3].node_list == ""
    assert states[3].start_time is None
    assert states[8].start_time is None
    assert states[8].end_time is not None
    assert states[12].status is JobStatus.CANCELLED


def test_sacct_skips_step_rows_and_keeps_bars_in_names() -> None:
    times = ["2026-12-02T16:06:43"] * 3
    line = listing.SEP.join(["7", "FAILED", "None", "3:0", "", "debug", "vm", *times, "/w", "a|b"])
    step = listing.SEP.join(["7.batch", "FAILED", "None", "3:0", "", "", "", *times, "", "batch"])
    rows = sacct.sacct_rows(f"{line}\n{step}\n")
    assert [s.name for s in rows.states] == ["a|b"]
    assert rows.skipped == ()


def test_sacct_reads_every_job_around_hostile_names_comments_and_paths() -> None:
    """Captured with ``--delimiter=\\x1f`` after cancelling the jobs of ``squeue_hostile.txt``."""
    rows = sacct.sacct_rows(captured("sacct_hostile.txt"))
    assert sorted((s.job_id, s.status, s.idempotency_key) for s in rows.states) == [
        (625, JobStatus.CANCELLED, "key-plain"),
        (628, JobStatus.CANCELLED, "key-after"),
    ]
    assert [text.split(listing.SEP, 1)[0] for text in rows.skipped] == ["626", "99", "627"]


def test_sacct_steps_of_the_original_query() -> None:
    steps = sacct.sacct_steps(captured("sacct_steps.txt"))
    assert [(s.id, s.name, s.exit_code, s.status) for s in steps] == [
        ("7", "cap-fail", 3, JobStatus.FAILED),
        ("7.batch", "batch", 3, JobStatus.FAILED),
    ]
    assert steps[0].start_time is not None


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("RUNNING", JobStatus.RUNNING),
        ("CANCELLED by 1001", JobStatus.CANCELLED),
        ("CANCELLED+", JobStatus.CANCELLED),
        ("OUT_OF_MEMORY", JobStatus.OUT_OF_MEMORY),
        ("REQUEUE_HOLD", JobStatus.REQUEUED),
        ("STAGE_OUT", JobStatus.COMPLETING),
        ("SOMETHING_NEW", JobStatus.UNKNOWN),
    ],
)
def test_job_status_names(text: str, status: JobStatus) -> None:
    assert values.job_status(text) is status


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("00:10:00", timedelta(minutes=10)),
        ("10", timedelta(minutes=10)),
        ("1:30", timedelta(minutes=1, seconds=30)),
        ("1-00:00:00", timedelta(days=1)),
        ("2-3", timedelta(days=2, hours=3)),
        ("2-3:04", timedelta(days=2, hours=3, minutes=4)),
        ("UNLIMITED", None),
        ("", None),
    ],
)
def test_durations(text: str, expected: timedelta | None) -> None:
    assert values.duration(text) == expected


def test_wait_status_and_exit_pairs() -> None:
    assert exits.wait_status("768") == (3, 0)
    assert exits.wait_status("15") == (0, 15)
    assert exits.pair("3:0") == (3, 0)
    assert exits.pair("0:15") == (0, 15)


def test_scontrol_record_keeps_values_with_spaces_and_equals() -> None:
    (node,) = records.scontrol_records(captured("scontrol_nodes.txt"))
    assert node["OS"].startswith("Linux ")
    assert "SMP" in node["OS"]
    assert node["CfgTRES"] == "cpu=2,mem=16000M,billing=2"
    assert node["Partitions"].split(",")[0] == "debug"


def test_scontrol_job_record_of_a_held_job() -> None:
    (one,) = records.scontrol_records(captured("scontrol_job_held_oneline.txt"))
    assert one["JobState"] == "PENDING"
    assert one["StdOut"] == "/var/tmp/wlmvk-slurm/jobs/slurm-3.out"
    fields = records.job_info_fields(one)
    assert fields["JobId"] == "3"
    assert fields["JobName"] == "capt2"
    assert fields["StartTime"] == ""
    assert fields["NodeList"] == ""
    assert fields["UserId"] == "slurmuser(1001)"


def test_partitions_fix_the_original_mistakes() -> None:
    nodes = partitions.node_records(captured("scontrol_nodes.txt"))
    assert nodes[0].features == ("avx2",)
    assert nodes[0].gpus == 2
    assert nodes[0].cpus == 2
    parts = {p.name: p for p in partitions.partition_records(captured("scontrol_partitions.txt"), nodes)}
    assert partitions.partition_names(captured("scontrol_partitions.txt"))[0] == "debug"
    debug = parts["debug"]
    assert debug.default
    assert debug.state == "UP"
    assert (debug.nodes, debug.cpu_per_node, debug.wall_time) == (1, 2, 600)
    assert debug.mem_per_node == 16000, "memory from the nodes when MaxMemPerNode is UNLIMITED"
    assert debug.features == (Feature(name="avx2", quantity=1),)
    assert debug.gpu_per_node == 2
    assert parts["long"].mem_per_node == 8000
    assert (debug.mem_limit, parts["long"].mem_limit) == (None, 8000), "the partition's own MaxMemPerNode"
    assert parts["long"].wall_time == 86400
    assert parts["unlimited"].wall_time is None, "UNLIMITED MaxTime is not 0"
    assert parts["unlimited"].cpu_per_node == 1, "MaxCPUsPerNode caps the node's CPUs"


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [("gpu:2", 2), ("(null)", 0), ("", 0), ("gpu:tesla:2(S:0-1)", 2), ("gpu:a:1,gpu:b:1", 2), ("mps:100", 0)],
)
def test_gres_gpus(gres: str, gpus: int) -> None:
    assert partitions.gres_gpus(gres) == gpus


def test_version_and_config() -> None:
    assert records.slurm_version(captured("sinfo_version.txt")) == "22.05.8"
    assert records.config_value(captured("scontrol_config.txt"), "ClusterName") == "testcluster"
    assert records.config_value(captured("scontrol_config.txt"), "NoSuchKey") == ""


def test_idempotency_key_only_from_wlmvk_comments() -> None:
    assert values.idempotency_key("wlmvk:abc") == "abc"
    assert values.idempotency_key("(null)") == ""
    assert values.idempotency_key("somebody else's note") == ""


@pytest.mark.parametrize(("text", "job"), [("12", 12), ("12_3", 12), ("12_[1-3]", 12), ("12+0", 12)])
def test_leading_job_ids(text: str, job: int) -> None:
    assert values.leading_id(text) == job
