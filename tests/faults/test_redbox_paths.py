"""Every file rpc against a matrix of path escapes: all refused, nothing written outside the root.

red-box's working root sits inside a private fence directory holding a
secret file and a secret directory; the escapes aim at them (``..``, an
absolute path, symlinks to them, a symlink loop, names too long for the
kernel) or at special files inside the root (a FIFO, which would block a
plain ``open``, and a device that never ends). Each call must come back with
an error status within its deadline, and afterwards the fence must hold
exactly what it held before.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from grpclib.client import Channel
from grpclib.const import Status

from tests.faults.support import serving, status_of
from tests.fixtures.redbox import RedBox
from wlmvk._proto import api

pytestmark = [pytest.mark.slurm]

ESCAPES = {
    "dotdot": "../secret.txt",
    "dotdot-deep": "sub/../../secret-dir/new.txt",
    "absolute": "{fence}/secret.txt",
    "absolute-dir": "{fence}/secret-dir",
    "symlink-dir-out": "out-dir/secret.txt",
    "symlink-dir-out-new": "out-dir/new.txt",
    "symlink-file-out": "out-file",
    "loop": "loop-a",
    "loop-below": "loop-a/x",
    "long-name": "n" * 300,
    "long-path": "d/" * 2100 + "f",
    "fifo": "fifo",
    "device": "zero-dev",
}

HELD = "#!/bin/sh\n#SBATCH --hold\n#SBATCH --cpus-per-task=1\ntrue\n"


def _tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("in.txt")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"hi"))
    return buffer.getvalue()


Call = Callable[[api.WorkloadManagerStub, str], Any]

CALLS: dict[str, Call] = {
    "OpenFile": lambda s, p: s.open_file(api.OpenFileRequest(path=p)),
    "TailFile": lambda s, p: s.tail_file(
        [api.TailFileRequest(path=p, action=api.TailAction.ReadToEndAndClose)]
    ),
    "CreateFile": lambda s, p: s.create_file([api.CreateFileRequest(path=p, content=b"x")]),
    "Zip.path": lambda s, p: s.zip(api.ZipRequest(path=p, target="out.zip")),
    "Zip.target": lambda s, p: s.zip(api.ZipRequest(path="data", target=p)),
    "Unzip.source": lambda s, p: s.unzip(api.UnzipRequest(source=p, path="unzipped")),
    "Unzip.path": lambda s, p: s.unzip(api.UnzipRequest(source="good.zip", path=p)),
    "StageIn": lambda s, p: s.stage_in([api.StageInRequest(path=p), api.StageInRequest(data=_tar())]),
    "StageOut": lambda s, p: s.stage_out(api.StageOutRequest(path=p)),
    "SubmitJob.working_dir": lambda s, p: s.submit_job(api.SubmitJobRequest(script=HELD, working_dir=p)),
    "SubmitJob.std_out": lambda s, p: s.submit_job(api.SubmitJobRequest(script=HELD, std_out=p)),
    "SubmitJob.std_err": lambda s, p: s.submit_job(api.SubmitJobRequest(script=HELD, std_err=p)),
}
# Slurm opens a job's outputs itself, as the job's user: red-box only confines where they are.
NOT_SPECIAL = {"SubmitJob.working_dir", "SubmitJob.std_out", "SubmitJob.std_err"}


def _furnish(fence: Path, root: Path) -> None:
    (fence / "secret.txt").write_text("secret\n")
    (fence / "secret-dir").mkdir()
    (fence / "secret-dir" / "keep.txt").write_text("keep\n")
    (root / "sub").mkdir()
    (root / "data").mkdir()
    (root / "data" / "x.txt").write_text("x\n")
    with zipfile.ZipFile(root / "good.zip", "w") as archive:
        archive.writestr("z.txt", "z")
    os.symlink(fence / "secret-dir", root / "out-dir")
    os.symlink(fence / "secret.txt", root / "out-file")
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    os.mkfifo(root / "fifo")
    os.mknod(root / "zero-dev", 0o600 | stat.S_IFCHR, os.makedev(1, 5))


def _snapshot(fence: Path, root: Path) -> dict[str, str]:
    """Every path under the fence but outside the root, with a digest of each file."""
    seen: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(fence):
        if Path(dirpath) == root or root in Path(dirpath).parents:
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != root]
        for name in filenames:
            path = Path(dirpath, name)
            seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        for name in dirnames:
            seen[str(Path(dirpath, name))] = "dir"
    return seen


async def _matrix(socket: str, fence: Path) -> dict[tuple[str, str], Status | str]:
    answers: dict[tuple[str, str], Status | str] = {}
    channel = Channel(path=socket)
    stub = api.WorkloadManagerStub(channel)
    try:
        for rpc, call in CALLS.items():
            for kind, template in ESCAPES.items():
                if rpc in NOT_SPECIAL and kind in ("fifo", "device"):
                    continue
                path = template.format(fence=fence)
                try:
                    answers[(rpc, kind)] = await status_of(call(stub, path), timeout=15)
                except TimeoutError:
                    answers[(rpc, kind)] = "no answer in 15 s"
    finally:
        channel.close()
    return answers


def test_every_escape_is_refused_for_every_file_rpc(fence: Path, fenced_redbox: RedBox) -> None:
    root = fenced_redbox.work_dir
    _furnish(fence, root)
    before = _snapshot(fence, root)
    answers = asyncio.run(_matrix(fenced_redbox.socket, fence))
    accepted = {
        key: answer for key, answer in answers.items() if answer is Status.OK or isinstance(answer, str)
    }
    assert accepted == {}, f"not refused: {accepted}"
    unclear = {k: a for k, a in answers.items() if a not in (Status.INVALID_ARGUMENT, Status.NOT_FOUND)}
    assert unclear == {}, f"refused with an unclear status: {unclear}"
    assert _snapshot(fence, root) == before, "something outside the root changed"
    assert (fence / "secret.txt").read_text() == "secret\n"
    assert stat.S_ISFIFO(os.lstat(root / "fifo").st_mode)
    assert fenced_redbox.proc is not None
    assert fenced_redbox.proc.poll() is None
    assert asyncio.run(serving(fenced_redbox.socket))
    assert fenced_redbox.journal_job_ids() == set(), "a job was submitted with an escaping path"
    assert len(answers) == len(CALLS) * len(ESCAPES) - 2 * len(NOT_SPECIAL)
