"""``wlmvk stage in|out`` against path escapes on both sides: red-box refuses remote paths that
leave its root (the matrix of test_redbox_paths, through the staging command), and links in the
data itself never carry a file from outside: a result directory holding symlinks to secrets or
out of the tree, a FIFO, and a local input holding a symlink to a secret."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.faults.test_redbox_paths import ESCAPES, _furnish, _snapshot
from tests.fixtures.redbox import RedBox

pytestmark = [pytest.mark.slurm]

WLMVK = [sys.executable, "-c", "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))"]
SECRET = b"the secret no job may carry out\n"


def stage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WLMVK, "stage", *args], capture_output=True, text=True, timeout=60, check=False)


def _last(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    return lines[-1] if lines else ""


def _clear(line: str) -> bool:
    return line.startswith("wlmvk stage:")


def _digests(tree: Path) -> set[str]:
    return {
        hashlib.sha256(Path(d, f).read_bytes()).hexdigest()
        for d, _, files in os.walk(tree)
        for f in files
        if Path(d, f).is_file() and not Path(d, f).is_symlink()
    }


def test_remote_escapes_are_refused_both_ways(fence: Path, fenced_redbox: RedBox) -> None:
    root = fenced_redbox.work_dir
    _furnish(fence, root)
    before = _snapshot(fence, root)
    local = Path(tempfile.mkdtemp(prefix="stage-", dir="/tmp"))
    (local / "inputs").mkdir()
    (local / "inputs" / "x.txt").write_text("x\n")
    (local / "down").mkdir()
    outcomes = {}
    for kind, template in ESCAPES.items():
        remote = template.format(fence=fence)
        up = stage("in", "--socket", fenced_redbox.socket, "--from", str(local / "inputs"), "--to", remote)
        down = stage("out", "--socket", fenced_redbox.socket, "--from", remote, "--to", str(local / "down"))
        outcomes[kind] = (up.returncode, down.returncode, _last(up.stderr), _last(down.stderr))
    refused = {kind: o for kind, o in outcomes.items() if o[0] != 1 or o[1] != 1}
    assert refused == {}, refused
    unclear = {k: o for k, o in outcomes.items() if not (_clear(o[2]) and _clear(o[3]))}
    assert unclear == {}
    assert _snapshot(fence, root) == before
    assert _digests(local / "down") == set()


def test_links_in_the_data_never_carry_a_file_from_outside(fence: Path, fenced_redbox: RedBox) -> None:
    root = fenced_redbox.work_dir
    (fence / "secret.txt").write_bytes(SECRET)
    secret = hashlib.sha256(SECRET).hexdigest()
    results = root / "results"
    results.mkdir()
    (results / "good.txt").write_text("good\n")
    os.symlink(fence / "secret.txt", results / "absolute-link")
    os.symlink("../../secret.txt", results / "relative-link")
    os.mkfifo(results / "fifo")
    local = Path(tempfile.mkdtemp(prefix="stage-", dir="/tmp"))
    down = stage("out", "--socket", fenced_redbox.socket, "--from", "results", "--to", str(local))
    landed = local / "results"
    if down.returncode == 0:
        assert (landed / "good.txt").read_text() == "good\n"
    else:
        assert down.stderr.strip().startswith("wlmvk stage:"), down.stderr
    assert secret not in _digests(local)
    for path in local.rglob("*"):
        if path.is_symlink():
            target = Path(os.path.realpath(path))
            assert target == local or local in target.parents, f"{path} -> {os.readlink(path)}"
        assert not stat.S_ISFIFO(path.lstat().st_mode) or path.parent == landed

    inputs = local / "inputs"
    inputs.mkdir()
    (inputs / "data.txt").write_text("data\n")
    os.symlink(fence / "secret.txt", inputs / "absolute-link")
    os.symlink("../../../secret.txt", inputs / "relative-link")
    up = stage("in", "--socket", fenced_redbox.socket, "--from", str(inputs), "--to", "staged")
    assert up.returncode in (0, 1), up.stderr
    assert secret not in _digests(root)
    for path in root.rglob("*"):
        if path.is_symlink():
            target = Path(os.path.realpath(path))
            inside = target == root or root in target.parents
            assert inside or path.parent == results, f"{path} -> {os.readlink(path)}"
