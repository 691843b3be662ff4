"""Which mount points the host kubelet's sweep keeps: a point mounted anywhere, named either way."""

from __future__ import annotations

from pathlib import Path

from wlmvk_dev.hostnode.context import holds_a_mount


def test_a_point_mounted_under_its_own_name_is_held(tmp_path: Path) -> None:
    point = str(tmp_path / "sock")
    assert holds_a_mount(point, {point})
    assert holds_a_mount(point + "/", {point})
    assert holds_a_mount(point, {point + "/inner"})


def test_a_point_reached_through_a_linked_directory_is_held_by_its_real_name(tmp_path: Path) -> None:
    """/var/run/x shows in mountinfo as /run/x: removing it would detach another pod's socket."""
    (tmp_path / "run").mkdir()
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "run").symlink_to(tmp_path / "run")
    point = str(tmp_path / "var" / "run" / "wlmvk-red-box")
    assert holds_a_mount(point, {str(tmp_path / "run" / "wlmvk-red-box")})
    assert holds_a_mount(point, {str(tmp_path / "run" / "wlmvk-red-box" / "rb.sock")})


def test_other_points_and_mere_prefixes_do_not_hold_it(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "run").symlink_to(tmp_path / "run")
    point = str(tmp_path / "var" / "run" / "wlmvk-red-box")
    assert not holds_a_mount(point, set())
    assert not holds_a_mount(point, {str(tmp_path / "run"), str(tmp_path / "run" / "wlmvk-red-box-2")})
    assert not holds_a_mount(point, {str(tmp_path / "run" / "other")})


def test_a_link_made_as_the_point_is_judged_by_its_own_name_not_its_target(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    link = tmp_path / "mnt"
    link.symlink_to(tmp_path / "data")
    assert not holds_a_mount(str(link), {str(tmp_path / "data")})
    assert holds_a_mount(str(link), {str(link)})
