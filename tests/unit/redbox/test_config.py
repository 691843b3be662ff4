"""The per-partition YAML overrides: the original's format, strictly checked."""

from __future__ import annotations

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import Feature
from wlmvk.redbox.config import PartitionOverride, check_partitions, go_duration, parse_overrides
from wlmvk.redbox.slurm.cli.nodeinfo import PartitionRecord

README_EXAMPLE = """\
partition1:
  nodes: 10
  mem_per_node: 2048
  cpu_per_node: 8
  wall_time: 10h
partition2:
  nodes: 10
  # mem, cpu and wall_time will be automatically discovered
partition3:
  additional_features:
    - name: singularity
      version: 3.2.0
      quantity: 1
    - name: nvidia-gpu
      version: 2080ti-cuda-7.0
      quantity: 20
"""


def record(**changes: object) -> PartitionRecord:
    base = {
        "name": "p",
        "nodes": 1,
        "cpu_per_node": 2,
        "mem_per_node": 16000,
        "wall_time": 600,
        "gpu_per_node": 0,
        "features": (Feature("avx2", quantity=1),),
        "default": False,
        "state": "UP",
    }
    return PartitionRecord(**{**base, **changes})  # type: ignore[arg-type]


def test_the_original_readme_example_parses() -> None:
    overrides = parse_overrides(README_EXAMPLE)
    assert overrides["partition1"] == PartitionOverride(
        nodes=10, mem_per_node=2048, cpu_per_node=8, wall_time=36000
    )
    assert overrides["partition2"] == PartitionOverride(nodes=10)
    assert overrides["partition3"].additional_features == (
        Feature("singularity", "3.2.0", 1),
        Feature("nvidia-gpu", "2080ti-cuda-7.0", 20),
    )
    assert overrides["partition3"].line == 9


def test_override_merge_rule() -> None:
    merged = PartitionOverride(nodes=4, wall_time=5400, additional_features=(Feature("x"),)).apply(record())
    assert (merged.nodes, merged.cpu_per_node, merged.wall_time) == (4, 2, 5400)
    assert merged.features == (Feature("avx2", quantity=1), Feature("x"))
    forced = PartitionOverride(wall_time=5400, auto_wall_time=True).apply(record(wall_time=None))
    assert forced.wall_time is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10h", 36000), ("90m", 5400), ("1h30m", 5400), ("45s", 45), ("1.5h", 5400), ("2h0m30s", 7230)],
)
def test_go_durations(text: str, seconds: int) -> None:
    assert go_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "10 h", "ten hours", "1d", "-5m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        go_duration(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("p:\n  nodez: 3\n", "p.nodez: line 2: unknown key 'nodez'"),
        ("p:\n  nodes: -3\n", "p.nodes: line 2"),
        ("p:\n  nodes: [1]\n", "p.nodes: line 2: expected a single value"),
        ("p:\n  wall_time: 36000\n", "p.wall_time: line 2"),
        ("p:\n  auto_nodes: maybe\n", "p.auto_nodes: line 2"),
        ("p:\n  additional_features:\n    - version: 1\n", "needs a name"),
        ("p:\n  additional_features: x\n", "expected a list"),
        ("p: 3\n", "p: line 1: expected a map"),
        ("- p\n", "expected a map of partitions"),
        ("p: [\n", "not valid YAML"),
    ],
)
def test_errors_name_the_key_and_line(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as error:
        parse_overrides(text, "cfg.yaml")
    assert message in str(error.value)
    assert str(error.value).startswith("cfg.yaml")


def test_empty_file_and_unknown_partition() -> None:
    assert parse_overrides("") == {}
    overrides = parse_overrides("debug: {}\nghost:\n  nodes: 1\n")
    check_partitions({"debug": overrides["debug"]}, ["debug"], "cfg.yaml")
    with pytest.raises(InvalidInput, match="ghost: line 2: unknown partition 'ghost'"):
        check_partitions(overrides, ["debug", "long"], "cfg.yaml")
