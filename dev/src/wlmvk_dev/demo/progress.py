"""One line per demo step, with the elapsed time, and the commands a user would type."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


class StepFailed(Exception):
    """A step of the demo failed; the message names the step and where its log is."""


class Progress:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def line(self, text: str) -> None:
        print(f"[{self.elapsed():6.1f}s] {text}", flush=True)

    def command(self, argv: list[str], output: str) -> None:
        """Show a command as a user would type it, and what it printed."""
        print(f"\n$ {' '.join(argv)}", flush=True)
        if output:
            print(output.rstrip("\n"), flush=True)
        print(flush=True)

    @contextmanager
    def step(self, name: str, *, log: str = "") -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        except StepFailed:
            raise
        except Exception as exc:
            where = f" (log: {log})" if log else ""
            self.line(f"FAILED {name}: {exc}{where}")
            raise StepFailed(f"{name}: {exc}{where}") from exc
        self.line(f"{name} ({time.monotonic() - start:.1f}s)")


def fail(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
