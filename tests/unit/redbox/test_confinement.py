"""Every path a client names must end inside the allowed roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.redbox.files import Confinement, plain_parts


@pytest.fixture
def roots(tmp_path: Path) -> Confinement:
    work = tmp_path / "work"
    extra = tmp_path / "extra"
    (work / "job").mkdir(parents=True)
    extra.mkdir()
    (tmp_path / "secret").write_text("no")
    os.symlink(tmp_path / "secret", work / "to-secret")
    os.symlink(tmp_path, work / "to-parent")
    os.symlink("job", work / "to-job")
    return Confinement(work, [work, extra])


@pytest.mark.parametrize("path", ["job/out.txt", "to-job/x", ".", "job/../job"])
def test_inside(roots: Confinement, path: str) -> None:
    assert roots.inside(roots.resolve(path))


def test_absolute_inside_an_extra_root(roots: Confinement, tmp_path: Path) -> None:
    assert roots.resolve(str(tmp_path / "extra" / "f")) == tmp_path / "extra" / "f"


@pytest.mark.parametrize(
    "path", ["..", "../secret", "job/../../secret", "to-secret", "to-parent/secret", "/etc/passwd", "/"]
)
def test_outside_is_refused(roots: Confinement, path: str) -> None:
    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        roots.resolve(path)


def test_empty_and_nul_are_refused(roots: Confinement) -> None:
    with pytest.raises(InvalidInput):
        roots.resolve("")
    with pytest.raises(InvalidInput):
        roots.resolve("job/\x00x")


def test_relative_to_a_base(roots: Confinement) -> None:
    base = roots.resolve("job")
    assert roots.resolve("out.txt", base=base) == base / "out.txt"


def test_directory_creation_and_files(roots: Confinement) -> None:
    made = roots.directory("new/deeper", create=True)
    assert made.is_dir()
    with pytest.raises(NotFound):
        roots.directory("missing", create=False)
    with pytest.raises(NotFound):
        roots.existing_file("job/none")
    with pytest.raises(InvalidInput, match="is a directory"):
        roots.existing_file("job")


@pytest.mark.parametrize("path", ["new/deeper", "job/pod-1"])
def test_a_directory_below_the_root_is_made_by_name_or_by_path(roots: Confinement, path: str) -> None:
    by_name = roots.directory(path, create=True)
    assert by_name == roots.work_dir / path
    assert by_name.is_dir()
    assert not by_name.is_symlink()
    assert roots.directory(str(roots.work_dir / path), create=True) == by_name, "made again: the same"


def test_a_symlink_inside_the_roots_is_followed_to_its_real_directory(roots: Confinement) -> None:
    assert roots.directory("to-job/pod-2", create=True) == roots.work_dir / "job" / "pod-2"
    assert (roots.work_dir / "job" / "pod-2").is_dir()


def test_a_symlink_out_of_the_roots_is_refused_and_nothing_is_made_outside(
    roots: Confinement, tmp_path: Path
) -> None:
    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        roots.directory("to-parent/escaped", create=True)
    assert not (tmp_path / "escaped").exists()


def test_below_a_working_root_that_is_not_an_allowed_root_nothing_is_made(tmp_path: Path) -> None:
    work, extra = tmp_path / "work", tmp_path / "extra"
    work.mkdir()
    extra.mkdir()
    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        Confinement(work, [extra]).directory("pod", create=True)
    assert not (work / "pod").exists()


def test_a_path_too_long_to_name_is_refused_and_nothing_is_made(roots: Confinement) -> None:
    with pytest.raises(InvalidInput, match="File name too long"):
        roots.directory("deep/" + "d/" * 2100 + "f", create=True)
    assert not (roots.work_dir / "deep").exists()


def test_a_file_where_a_directory_is_named_is_refused(roots: Confinement) -> None:
    (roots.work_dir / "job" / "plain").write_text("x")
    with pytest.raises(InvalidInput, match="job/plain/below: cannot create: Not a directory"):
        roots.directory("job/plain/below", create=True)
    with pytest.raises(InvalidInput, match="exists and is not a directory"):
        roots.directory("job/plain", create=True)


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("a/b", ("a", "b")),
        ("/w/a/b", ("a", "b")),
        ("/w", ()),
        ("/wx/a", ()),
        ("/elsewhere/a", ()),
        ("a/../b", ()),
        ("a/./b", ()),
        ("a//b", ()),
        ("a/b/", ()),
        ("", ()),
        ("a/\x00", ()),
    ],
)
def test_plain_parts(path: str, parts: tuple[str, ...]) -> None:
    assert plain_parts(path, Path("/w")) == parts
