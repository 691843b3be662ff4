"""The production wheel: the product alone, and ``wlmvk dev`` saying how to get the tools it lacks."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            ".",
        ],
        cwd=ROOT,
        check=True,
    )
    (built,) = out.glob("wlmvk-*.whl")
    return built


def test_the_wheel_holds_the_product_and_not_the_development_tools(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.startswith("wlmvk-")}
    assert packages == {"wlmvk"}
    assert "wlmvk/kubelet/app.py" in names
    assert not [n for n in names if "apiserver" in n or "hostnode" in n or "demo" in n]


def test_wlmvk_dev_without_the_tools_says_how_to_install_them(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
    )
    # -S: no site-packages, so only the wheel's own metadata is visible (no wlmvk-dev).
    done = subprocess.run(
        [sys.executable, "-S", "-c", "import sys; from wlmvk.cli import main; sys.exit(main(['dev', 'up']))"],
        env={"PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "wlmvk dev: the development tools are not installed. They are the separate wlmvk-dev\n"
        "distribution in the dev/ folder of a wlmvk checkout: pip install -e ./dev\n"
        "(dev/scripts/bootstrap installs it).\n"
    )


def test_wlmvk_dev_with_the_tools_lists_them() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from wlmvk.cli import main; sys.exit(main(['dev', '--help']))"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "{apiserver,node,up}" in done.stdout
