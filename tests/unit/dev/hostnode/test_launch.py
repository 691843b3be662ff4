"""The host kubelet's launcher: the mount points it makes, and which of them it records as made."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Barrier
from pathlib import Path

from wlmvk_dev.hostnode.launch import _ensure


def test_missing_directories_are_made_parent_first_and_recorded(tmp_path: Path) -> None:
    created: list[str] = []
    _ensure(str(tmp_path / "a" / "b" / "c"), True, [], created)
    assert created == [str(tmp_path / "a"), str(tmp_path / "a" / "b"), str(tmp_path / "a" / "b" / "c")]
    assert (tmp_path / "a" / "b" / "c").is_dir()


def test_a_file_mount_point_is_an_empty_file_in_made_directories(tmp_path: Path) -> None:
    created: list[str] = []
    _ensure(str(tmp_path / "etc" / "conf"), False, [], created)
    assert created == [str(tmp_path / "etc"), str(tmp_path / "etc" / "conf")]
    assert (tmp_path / "etc" / "conf").read_bytes() == b""


def test_what_exists_is_taken_as_it_is_and_not_recorded(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("kept")
    created: list[str] = []
    _ensure(str(tmp_path / "a"), True, [], created)
    _ensure(str(tmp_path / "a" / "f"), False, [], created)
    assert created == []
    assert (tmp_path / "a" / "f").read_text() == "kept"


def test_a_path_under_an_earlier_bind_is_recorded_as_the_host_sees_it(tmp_path: Path) -> None:
    (tmp_path / "volume").mkdir()
    done = [{"source": str(tmp_path / "host-dir"), "target": str(tmp_path / "volume")}]
    created: list[str] = []
    _ensure(str(tmp_path / "volume" / "kept"), True, done, created)
    assert created == [str(tmp_path / "host-dir" / "kept")]


def _race(path: str, barrier: Barrier, results: multiprocessing.SimpleQueue[list[str] | str]) -> None:
    barrier.wait()
    created: list[str] = []
    try:
        _ensure(path, True, [], created)
    except OSError as exc:
        results.put(f"{type(exc).__name__}: {exc}")
    else:
        results.put(created)


def test_launchers_making_the_same_mount_point_at_once_all_start_and_one_records_each_path(
    tmp_path: Path,
) -> None:
    """Two pods mounting one target started together: one failed with "File exists: '/collect'"."""
    racers, rounds = 6, 40
    context = multiprocessing.get_context("fork")
    for round_ in range(rounds):
        target = tmp_path / f"round{round_}" / "collect" / "deep"
        barrier = context.Barrier(racers)
        results: multiprocessing.SimpleQueue[list[str] | str] = context.SimpleQueue()
        processes = [
            context.Process(target=_race, args=(str(target), barrier, results)) for _ in range(racers)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        outcomes = [results.get() for _ in range(racers)]
        errors = [o for o in outcomes if isinstance(o, str)]
        assert errors == []
        recorded = sorted(path for o in outcomes if isinstance(o, list) for path in o)
        assert recorded == [str(tmp_path / f"round{round_}"), str(target.parent), str(target)]
