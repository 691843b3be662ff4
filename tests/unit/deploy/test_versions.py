"""What an admin pins: one version, named by the changelog, and the constraints the installs use."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import wlmvk

ROOT = Path(__file__).resolve().parents[3]


def _pins() -> dict[str, str]:
    lines = (ROOT / "deploy" / "constraints.txt").read_text().splitlines()
    pairs = (line.split("==") for line in lines if line and not line.startswith("#"))
    return {canonicalize_name(name): pinned for name, pinned in pairs}


def test_the_installed_metadata_carries_the_one_stated_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project
    assert project["dynamic"] == ["version"]
    assert version("wlmvk") == wlmvk.__version__


def test_the_changelogs_newest_release_is_the_version() -> None:
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert headings[0] == "Unreleased"
    assert headings[1] == wlmvk.__version__


def test_every_runtime_dependency_is_pinned_within_what_pyproject_allows() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins()
    for text in project["dependencies"]:
        req = Requirement(text)
        pinned = pins[canonicalize_name(req.name)]
        assert req.specifier.contains(pinned, prereleases=True), f"{req}: pinned {pinned}"
    assert "wlmvk" not in pins


def test_the_image_installs_with_the_constraints() -> None:
    text = (ROOT / "Containerfile").read_text()
    assert "COPY deploy/constraints.txt ./" in text
    assert "pip install --no-cache-dir --disable-pip-version-check -c constraints.txt ." in text
