"""What red-box's Slurm commands cost slurmctld: which commands run, how often (captured output).

Counted at the runner: each ``scontrol show partition`` is one RPC to slurmctld,
each ``scontrol -d show node`` two (it reads the partition table too), each
``squeue`` two with ``--local`` (three without: the federation first).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence

import pytest

from tests.unit.redbox.slurm.cli.test_parsing import captured
from wlmvk.core.errors import Unavailable
from wlmvk.redbox.slurm.cli import commands
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.processes.runner import Completed


class CountingRunner:
    def __init__(self) -> None:
        self.argvs: list[tuple[str, ...]] = []
        self.outputs = {
            ("scontrol", "-o", "show", "partition"): captured("scontrol_partitions.txt"),
            ("scontrol", "-d", "-o", "show", "node"): captured("scontrol_nodes.txt"),
            ("sinfo", "-V"): captured("sinfo_version.txt"),
        }
        self.failing = False

    async def run(
        self, argv: Sequence[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None
    ) -> Completed:
        self.argvs.append(tuple(argv))
        if self.failing:
            return Completed(tuple(argv), 1, "", "Unable to contact slurm controller")
        return Completed(tuple(argv), 0, self.outputs.get(tuple(argv), ""), "")


def shows(runner: CountingRunner, what: str) -> int:
    return sum(1 for argv in runner.argvs if argv[0] == "scontrol" and argv[-2:] == ("show", what))


async def test_one_discovery_reads_the_partition_table_once() -> None:
    runner = CountingRunner()
    slurm = Slurm(runner)  # type: ignore[arg-type]
    names = await slurm.partition_names()
    records = await slurm.partitions()
    assert names == [r.name for r in records]
    assert (shows(runner, "partition"), shows(runner, "node")) == (1, 1)


async def test_nodes_are_read_again_only_when_the_partition_table_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(commands, "PARTITION_TABLE_TTL", 0.0)
    runner = CountingRunner()
    nodes = runner.outputs[("scontrol", "-d", "-o", "show", "node")]
    runner.outputs[("scontrol", "-d", "-o", "show", "node")] = re.sub(
        r"\bGres(Used)?=\S+", r"Gres\1=(null)", nodes
    )
    slurm = Slurm(runner)  # type: ignore[arg-type]
    first = await slurm.partitions()
    assert first[0].gpu_per_node == 0
    assert await slurm.partitions() == first
    assert (shows(runner, "partition"), shows(runner, "node")) == (2, 1), "the same table: nodes reused"
    table = runner.outputs[("scontrol", "-o", "show", "partition")]
    runner.outputs[("scontrol", "-o", "show", "partition")] = table.replace("State=UP", "State=DOWN", 1)
    changed = await slurm.partitions()
    assert (shows(runner, "partition"), shows(runner, "node")) == (3, 2), "a changed table: nodes read"
    assert changed[0].state == "DOWN"


async def test_where_nodes_have_gpus_each_look_reads_the_node_table_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GPUs in use (GresUsed) change with every job: one ``scontrol show node`` per look, for all nodes."""
    monkeypatch.setattr(commands, "PARTITION_TABLE_TTL", 0.0)
    runner = CountingRunner()
    slurm = Slurm(runner)  # type: ignore[arg-type]
    first = await slurm.partitions()
    assert first[0].gpu_per_node == 2
    for _ in range(3):
        await slurm.partitions()
    assert (shows(runner, "partition"), shows(runner, "node")) == (4, 4)


async def test_a_failed_look_at_the_partitions_is_not_kept() -> None:
    runner = CountingRunner()
    slurm = Slurm(runner)  # type: ignore[arg-type]
    runner.failing = True
    with pytest.raises(Unavailable):
        await slurm.partition_names()
    runner.failing = False
    assert await slurm.partition_names()
    assert shows(runner, "partition") == 2


async def test_squeue_skips_the_federation_lookup() -> None:
    runner = CountingRunner()
    await Slurm(runner, user="1000").queue()  # type: ignore[arg-type]
    assert [argv[:2] for argv in runner.argvs] == [("sinfo", "-V"), ("squeue", "--local")]


async def test_the_release_is_read_once_for_every_query_and_the_version() -> None:
    runner = CountingRunner()
    slurm = Slurm(runner, user="1000")  # type: ignore[arg-type]
    await slurm.queue()
    await slurm.queue()
    assert await slurm.version() == "22.05.8"
    assert str(await slurm.release()) == "22.05.8"
    assert [argv[0] for argv in runner.argvs] == ["sinfo", "squeue", "squeue"]


async def test_a_release_that_cannot_be_read_is_unavailable_and_asked_again() -> None:
    runner = CountingRunner()
    runner.outputs[("sinfo", "-V")] = "slurm\n"
    slurm = Slurm(runner, user="1000")  # type: ignore[arg-type]
    with pytest.raises(Unavailable, match="sinfo -V names no Slurm release: 'slurm'"):
        await slurm.queue()
    runner.outputs[("sinfo", "-V")] = captured("sinfo_version.txt")
    assert await slurm.queue() == []
    assert [argv[0] for argv in runner.argvs] == ["sinfo", "sinfo", "squeue"]


async def test_a_lookup_by_key_reads_only_our_users_jobs_of_the_last_three_days() -> None:
    # The key index never reads another user's jobs nor a week of the cluster (issue 14).
    runner = CountingRunner()
    slurm = Slurm(runner, user="wlmvk")  # type: ignore[arg-type]
    assert await slurm.accounting_keys() == {}
    (argv,) = runner.argvs
    assert argv[0] == "sacct"
    assert argv[argv.index("-u") + 1] == "wlmvk"
    assert argv[argv.index("-S") + 1] == "now-3days"
    # A rebuild reads from its start on, in the local time sacct reads.
    await slurm.accounting_keys(since=time.mktime((2026, 12, 5, 16, 20, 30, 0, 0, -1)))
    assert runner.argvs[-1][runner.argvs[-1].index("-S") + 1] == "2026-12-05T16:20:30"
    assert argv[argv.index("-o") + 1] == "JobID,Comment", "job ids and comments alone"
    assert await slurm.own_keys() == {}
    queue = runner.argvs[-1]
    assert (queue[0], queue[queue.index("-u") + 1]) == ("squeue", "wlmvk")
    assert queue[queue.index("-O") + 1] == "JobArrayID:\x1f,Comment:\x1f"
