"""kubelet.node.spread: each node's writes at its own phase of the period, never all at once."""

from __future__ import annotations

import pytest

from wlmvk.kubelet.node.spread import Schedule, next_due, phase


def test_a_phase_is_within_the_period_and_the_same_every_time() -> None:
    assert 0 <= phase("slurm-c-debug", 10.0) < 10.0
    assert phase("slurm-c-debug", 10.0) == phase("slurm-c-debug", 10.0)
    assert phase("slurm-c-debug", 10.0) != phase("slurm-c-cpu", 10.0)


def test_next_due_is_the_first_slot_after_the_time_given() -> None:
    offset = phase("n", 10.0)
    assert next_due("n", 10.0, 100.0) == pytest.approx(100.0 + offset if offset > 0 else 110.0)
    assert next_due("n", 10.0, 100.0 + offset) == pytest.approx(110.0 + offset)


def test_a_thousand_nodes_fall_due_evenly_over_the_period() -> None:
    names = [f"slurm-cluster2-extra{n}" for n in range(1, 1001)]
    per_second = [0] * 10
    for name in names:
        per_second[int(phase(name, 10.0))] += 1
    assert sum(per_second) == 1000
    assert max(per_second) <= 130, per_second
    assert min(per_second) >= 70, per_second


def test_take_due_returns_the_due_nodes_earliest_first_and_schedules_them_again() -> None:
    schedule = Schedule(10.0)
    for name in ("a", "b", "c"):
        schedule.add(name, 0.0)
    first = schedule.next_time()
    assert first == min(phase(n, 10.0) for n in "abc")
    due = schedule.take_due(10.0)
    assert [d for _, d in due] == sorted(phase(n, 10.0) for n in "abc")
    assert sorted(n for n, _ in due) == ["a", "b", "c"]
    assert schedule.take_due(10.0) == []
    assert schedule.next_time() == pytest.approx(first + 10.0)


def test_a_node_more_than_a_period_behind_is_scheduled_after_now_once() -> None:
    schedule = Schedule(10.0)
    schedule.add("a", 0.0)
    assert [n for n, _ in schedule.take_due(55.0)] == ["a"]
    assert schedule.next_time() == pytest.approx(next_due("a", 10.0, 55.0))
    assert schedule.take_due(55.0) == []


def test_a_dropped_node_is_never_due_and_added_again_is_due_once() -> None:
    schedule = Schedule(10.0)
    schedule.add("a", 0.0)
    schedule.add("b", 0.0)
    schedule.discard("a")
    assert "a" not in schedule
    assert len(schedule) == 1
    assert [n for n, _ in schedule.take_due(10.0)] == ["b"]
    schedule.add("a", 10.0)
    schedule.add("a", 10.0)  # already scheduled: keeps its slot
    assert sorted(n for n, _ in schedule.take_due(20.0)) == ["a", "b"]
    assert schedule.take_due(20.0) == []
