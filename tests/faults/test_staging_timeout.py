"""``wlmvk stage --timeout`` stops a transfer that stalls, without first reading the whole volume.

A real red-box (as the job owner) is stopped (SIGSTOP) while an upload of a 256 MiB input is under
way: the command must give up at its timeout with a clear line and exit 3. What it read of its
input is the proof it stopped there: before the fix it went on reading every byte of the volume
after the timeout (its producer thread was waited for), however large the volume.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.fixtures.processes import children
from tests.fixtures.redbox import JOB_OWNER, RedBox

pytestmark = [pytest.mark.slurm]

SIZE = 256 * 1024 * 1024
# The command, reporting on stderr how many bytes it read (/proc/self/io rchar) as it exits.
PROGRAM = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('rchar', [l for l in open('/proc/self/io') if l.startswith('rchar')]"
    "[0].split()[1], file=sys.stderr))\n"
    "from wlmvk.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_a_stalled_upload_stops_at_the_timeout(redbox_factory) -> None:  # type: ignore[no-untyped-def]
    box: RedBox = redbox_factory(user=JOB_OWNER)
    local = Path(tempfile.mkdtemp(prefix="stage-", dir="/tmp"))
    try:
        _stalled_upload(box, local)
    finally:
        shutil.rmtree(local)


def _stalled_upload(box: RedBox, local: Path) -> None:
    (local / "inputs").mkdir()
    with (local / "inputs" / "data.bin").open("wb") as data:
        for _ in range(SIZE // (1 << 20)):
            data.write(os.urandom(1 << 20))
    argv = ["stage", "in", "--from", str(local / "inputs"), "--to", "up", "--socket", box.socket]
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, *argv, "--timeout", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert box.proc is not None
    # red-box itself, under runuser: stopping runuser alone would leave red-box serving.
    server = children(box.proc.pid)
    assert len(server) == 1, server
    time.sleep(0.5)  # the upload is under way
    os.kill(server[0], signal.SIGSTOP)
    try:
        _, stderr = proc.communicate(timeout=120)
    finally:
        os.kill(server[0], signal.SIGCONT)
    lines = stderr.strip().splitlines()
    assert proc.returncode == 3, stderr
    assert (
        lines[-2] == f"wlmvk stage: red-box at {box.socket} is unreachable: the transfer took longer than 3 s"
    )
    read = int(lines[-1].split()[1])
    assert read < SIZE // 2, f"read {read} of {SIZE} bytes: it went on reading the input after its timeout"
