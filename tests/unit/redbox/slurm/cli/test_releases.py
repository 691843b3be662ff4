"""The same jobs read the same on every Slurm release: 22.05 (the host's), 24.11 and 26.05.

Captured by dev/scripts/slurm-capture (branch slurm-rel) from real runs of each release, one directory
per release under tests/fixtures/slurm_captured/releases/ (its README.txt lists every command line
and the jobs' ids): a job that exits 0, one that exits 3, one past its time limit, one cancelled
while it ran, an array of 3 tasks, one with --output/--error patterns (``o-%j.txt``); then squeue
with red-box's format, sacct, scontrol and sstat, and the output files the jobs left in their
working directory (work-dir-files.txt).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.slurm.cli import exits, releases, sacct, squeue
from wlmvk.redbox.slurm.cli import nodeinfo as partitions
from wlmvk.redbox.slurm.cli import scontrol as records
from wlmvk.redbox.slurm.cli import sstat as stats
from wlmvk.redbox.slurm.cli.releases import Release

RELEASES = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured" / "releases"
CAPTURED = sorted(path.name for path in RELEASES.iterdir())


class Capture:
    """One release's captured run."""

    def __init__(self, name: str) -> None:
        self.dir = RELEASES / name
        readme = self.read("README.txt")
        self.ids = {
            role: int(i)
            for role, i in re.findall(r"(\w+)=(\d+)", readme.split("\njobs: ", 1)[1].split("\n")[0])
        }
        self.user = re.search(r"Job owner: (\w+)", readme).group(1)  # type: ignore[union-attr]
        self.release = releases.detected(self.read("sinfo-V.stdout"))
        # The files the jobs wrote, as ``=== <path>`` lines of work-dir-files.txt.
        self.files = set(re.findall(r"^=== (.+)$", self.read("work-dir-files.txt"), re.MULTILINE))

    def more(self) -> Capture:
        """The second run, of tests/fixtures/slurm_captured/capture-more: a job killed by SIGKILL
        (signal) and one with relative --output/--error patterns (patterns)."""
        return Capture(f"{self.dir.name}/more")

    def read(self, name: str) -> str:
        return (self.dir / name).read_text()

    def queue(self) -> dict[str, JobState]:
        """squeue's rows, the timed-out job's taken alone once it ended, by the job's role."""
        output = self.read("squeue-finished.stdout")
        if (self.dir / "squeue-timeout.stdout").exists():
            output += self.read("squeue-timeout.stdout")
        read = squeue.squeue_rows(output, release=self.release, user=self.user)
        assert read.skipped == ()
        return self.by_role(read.states)

    def by_role(self, states: list[JobState]) -> dict[str, JobState]:
        roles = {job_id: role for role, job_id in self.ids.items()}
        return {roles[state.job_id]: state for state in states}


@pytest.fixture(params=CAPTURED)
def capture(request: pytest.FixtureRequest) -> Capture:
    return Capture(request.param)


def test_every_release_is_captured() -> None:
    assert CAPTURED == ["22.05", "24.11", "26.05"]


def test_slurm_22_05_names_an_array_tasks_default_output_wrongly_and_red_box_corrects_it() -> None:
    capture = Capture("22.05")
    array = capture.ids["array"]
    lines = [
        line for line in capture.read("squeue-finished.stdout").splitlines() if line.startswith(f"{array}_")
    ]
    assert len(lines) == 3
    for line in lines:
        fields = line.split("\x1f")
        task = fields[0].removeprefix(f"{array}_")
        if task != "2":  # the last task runs under the array's own id
            assert Path(fields[11]).name != f"slurm-{array}_{task}.out", "squeue: slurm-<task's own id>.out"
        (state,) = squeue.squeue_rows(line + "\n", release=capture.release, user=capture.user).states
        assert state.std_out == state.std_err == f"{state.working_dir}/slurm-{array}_{task}.out"
        assert state.std_out in capture.files


def test_the_release_is_the_one_the_directory_names(capture: Capture) -> None:
    assert str(capture.release).startswith(capture.dir.name + ".")


# (status, exit code, signal, reason) of each job, the same on every release.
ENDS = {
    "exit0": (JobStatus.COMPLETED, 0, 0, ""),
    "exit3": (JobStatus.FAILED, 3, 0, "NonZeroExitCode"),
    "timeout": (JobStatus.TIMEOUT, 0, 15, "TimeLimit"),
    "cancel": (JobStatus.CANCELLED, 0, 15, ""),
    "files": (JobStatus.COMPLETED, 0, 0, ""),
    "array": (JobStatus.COMPLETED, 0, 0, "array of 3 tasks: 3 completed"),
}


def test_squeue_gives_each_job_its_end_exit_code_and_reason(capture: Capture) -> None:
    ends = {role: (s.status, s.exit_code, s.signal, s.reason) for role, s in capture.queue().items()}
    assert ends == ENDS


# stdout's and stderr's file of each job, ``{}`` its id: the same on every release.
PATHS = {
    "exit0": ("slurm-{}.out", "slurm-{}.out"),
    "exit3": ("slurm-{}.out", "slurm-{}.out"),
    "timeout": ("slurm-{}.out", "slurm-{}.out"),
    "cancel": ("slurm-{}.out", "slurm-{}.out"),
    "files": ("o-{}.txt", "e-{}.txt"),
}


def test_squeue_gives_each_job_the_output_files_it_wrote(capture: Capture) -> None:
    states = capture.queue()
    for role, (out, err) in PATHS.items():
        state = states[role]
        where = state.working_dir + "/"
        job = capture.ids[role]
        assert (state.std_out, state.std_err) == (where + out.format(job), where + err.format(job)), role
        assert {state.std_out, state.std_err} <= capture.files, f"{role}: a file the job wrote"


def test_an_array_names_the_file_of_one_of_its_tasks(capture: Capture) -> None:
    # The array's state is its first row's (squeue's order), so is its file: Slurm's default for
    # an array, slurm-<array id>_<task>.out.
    array = capture.queue()["array"]
    assert array.std_out == array.std_err
    assert array.std_out in capture.files
    assert re.fullmatch(rf"slurm-{capture.ids['array']}_[012]\.out", Path(array.std_out).name)


def test_sacct_gives_the_same_ends_without_reasons(capture: Capture) -> None:
    # sacct's Reason of a finished job is None on every release; its exit code is the batch
    # step's for a signal, so a cancelled or timed-out job reads 0:0 there (red-box prefers squeue's).
    read = sacct.sacct_rows(capture.read("sacct.stdout"))
    assert read.skipped == ()
    ends = {role: (s.status, s.exit_code) for role, s in capture.by_role(read.states).items()}
    assert ends == {role: (status, code) for role, (status, code, _, _) in ENDS.items()}


@pytest.mark.parametrize(
    ("role", "end"),
    [
        ("ok", ("COMPLETED", (0, 0))),
        ("three", ("FAILED", (3, 0))),
        ("files", ("COMPLETED", (0, 0))),
        ("cancel", ("CANCELLED", (0, 15))),
        ("timeout", ("TIMEOUT", (0, 15))),
    ],
)
def test_scontrol_gives_the_end_and_names_files_the_job_wrote(
    capture: Capture, role: str, end: tuple[str, tuple[int, int]]
) -> None:
    (record,) = records.scontrol_records(capture.read(f"scontrol-job-{role}.stdout"))
    fields = records.job_info_fields(record)
    assert (fields["JobState"], exits.pair(fields["ExitCode"])) == end
    assert {fields["StdOut"], fields["StdErr"]} <= capture.files


def test_sstat_names_the_job_it_cannot_read(capture: Capture) -> None:
    unreadable = stats.unreadable(capture.read("sstat-unknown.stderr"), release=capture.release)
    assert list(unreadable) == [JobId(999999)]
    assert stats.unreadable(capture.read("sstat-finished.stderr"), release=capture.release) == {}, (
        "a job without a running step is absent, not unreadable"
    )


def test_partitions_read_alike(capture: Capture) -> None:
    nodes = partitions.node_records(capture.read("scontrol-node.stdout"))
    read = {p.name: p for p in partitions.partition_records(capture.read("scontrol-partition.stdout"), nodes)}
    debug = read["debug"]
    assert (debug.default, debug.state, debug.nodes, debug.wall_time) == (True, "UP", 1, 600)
    assert debug.cpu_per_node == nodes[0].cpus > 0
    assert debug.mem_per_node == nodes[0].memory_mb > 0
    assert read["unlimited"].wall_time is None


@pytest.mark.parametrize(
    ("release", "text", "pair"),
    [
        (Release(22, 5, 8), "768", (3, 0)),
        (Release(22, 5, 8), "15", (0, 15)),
        (Release(23, 2), "3:0", (3, 0)),
        (Release(24, 11, 5), "0:15", (0, 15)),
        (Release(26, 5, 5), "3:0", (3, 0)),
    ],
)
def test_squeue_exit_codes_by_release(release: Release, text: str, pair: tuple[int, int]) -> None:
    assert release.squeue_exit()(text) == pair


@pytest.mark.parametrize(("release", "text"), [(Release(22, 5, 8), "3:0"), (Release(24, 11, 5), "768")])
def test_an_exit_code_of_another_releases_form_is_an_error_not_a_guess(release: Release, text: str) -> None:
    with pytest.raises(ValueError, match="not a"):
        release.squeue_exit()(text)


@pytest.mark.parametrize(
    ("release", "stderr", "job"),
    [
        (Release(22, 5, 8), "sstat: error: couldn't get steps for job 44", 44),
        (Release(25, 5), "sstat: error: couldn't get steps for job 44", 44),
        (Release(26, 5, 5), "sstat: error: couldn't get steps for JobId=44", 44),
    ],
)
def test_sstats_wording_by_release(release: Release, stderr: str, job: int) -> None:
    assert list(stats.unreadable(stderr, release=release)) == [JobId(job)]


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("slurm-wlm 22.05.8\n", Release(22, 5, 8)),
        ("slurm 24.11.5\n", Release(24, 11, 5)),
        ("slurm-wlm 26.05.5\n", Release(26, 5, 5)),
        ("slurm 25.11.0-0rc1\n", Release(25, 11, 0)),
    ],
)
def test_release_from_sinfo(text: str, release: Release) -> None:
    assert releases.detected(text) == release


@pytest.mark.parametrize("text", ["", "slurm\n", "slurm version-unknown\n"])
def test_no_release_in_sinfo_is_an_error(text: str) -> None:
    with pytest.raises(ValueError, match="sinfo -V names no Slurm release"):
        releases.detected(text)


# Slurm's own reason for a batch script killed by a signal changed after 22.05.
SIGNAL_REASONS = {
    "22.05": "JobLaunchFailure",
    "24.11": "RaisedSignal:9(Killed)",
    "26.05": "RaisedSignal:9(Killed)",
}


def test_a_job_killed_by_a_signal_failed_with_that_signal(capture: Capture) -> None:
    more = capture.more()
    signalled = more.queue()["signal"]
    reason = SIGNAL_REASONS[capture.dir.name]
    assert (signalled.status, signalled.exit_code, signalled.signal, signalled.reason) == (
        JobStatus.FAILED,
        0,
        9,
        reason,
    )
    assert signalled.std_out == signalled.std_err == f"{signalled.working_dir}/slurm-{more.ids['signal']}.out"
    assert signalled.std_out in more.files
    accounted = more.by_role(sacct.sacct_rows(more.read("sacct.stdout")).states)["signal"]
    assert (accounted.status, accounted.exit_code, accounted.signal) == (JobStatus.FAILED, 0, 9)


def test_relative_output_patterns_name_the_files_slurm_wrote(capture: Capture) -> None:
    # --output='p-%x-%u-%N-%4j-100%%.out' --error='p-%x.err', job name pat, on node vm.
    more = capture.more()
    job = more.ids["patterns"]
    state = more.queue()["patterns"]
    where = state.working_dir + "/"
    expected = (f"{where}p-pat-slurmuser-vm-{job:04d}-100%.out", f"{where}p-pat.err")
    assert (state.std_out, state.std_err) == expected
    assert set(expected) <= more.files
    (record,) = records.scontrol_records(more.read("scontrol-job-patterns.stdout"))
    fields = records.job_info_fields(record)
    assert (fields["StdOut"], fields["StdErr"]) == expected, "scontrol's partial expansion completed"
