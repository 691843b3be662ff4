"""Every path a client names must end inside the allowed roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.redbox.files import Confinement


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
