"""Background processes of the demo: started with logs and pid files, stopped by pid.

Every process the demo starts gets ``<state>/logs/<name>.log`` and
``<state>/pids/<name>.pid``, so that ``scripts/demo down`` (another process,
later) can stop exactly what was started and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Started:
    name: str
    pid: int
    log: Path


class Processes:
    """The demo's process table, kept on disk under ``state``."""

    def __init__(self, state: Path) -> None:
        self.logs = state / "logs"
        self.pids = state / "pids"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pids.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> Started:
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        (self.pids / f"{name}.pid").write_text(f"{proc.pid}\n")
        return Started(name, proc.pid, log)

    def alive(self, name: str) -> bool:
        pid = self._pid(name)
        return pid is not None and _alive(pid)

    def stop_all(self, *, timeout: float = 15.0) -> list[str]:
        """Stop every recorded process at once: SIGTERM, then SIGKILL what is left after ``timeout``."""
        running: dict[str, int] = {}
        for pidfile in self.pids.glob("*.pid"):
            pid = self._pid(pidfile.stem)
            if pid is not None and _alive(pid):
                running[pidfile.stem] = pid
                _signal(pid, signal.SIGTERM)
            pidfile.unlink(missing_ok=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_alive(pid) for pid in running.values()):
            time.sleep(0.1)
        for pid in running.values():
            if _alive(pid):
                _signal(pid, signal.SIGKILL)
        return sorted(running)

    def _pid(self, name: str) -> int | None:
        try:
            return int((self.pids / f"{name}.pid").read_text().strip())
        except (OSError, ValueError):
            return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == 0


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal the process group the process leads (it was started in its own session)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    except PermissionError:
        os.kill(pid, sig)
