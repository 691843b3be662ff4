"""Which Slurm release red-box talks to, and the one place its output forms are chosen (pure).

red-box reads the release once, from ``sinfo -V`` (``slurm-wlm 22.05.8``,
``slurm 24.11.5``: the same form on every release), and parses with the
rules of that release rather than guessing the form of each line. Where
releases print a field differently, the boundary is named here, read from
Slurm's own source history:

- ``squeue -O exit_code`` printed the raw wait status up to 22.05
  (``768`` for exit 3, ``9`` for SIGKILL) and ``code:signal`` from 23.02
  (``3:0``, ``0:9``), the form ``sacct`` and ``scontrol`` always printed.
- ``squeue -O STDOUT`` of a job that set none printed ``<workdir>/slurm-<own
  job id>.out`` up to 23.11, also for an array task, whose file is
  ``slurm-<array id>_<task>.out``; since 24.05 it prints Slurm's pattern
  (``slurm-%j.out``, ``slurm-%A_%a.out``).
- ``sstat`` names a job it cannot read ``couldn't get steps for job 12``
  up to 25.05 and ``... for JobId=12`` from 25.11.

Everything else red-box reads is chosen to print alike on 22.05, 24.11 and
26.05, or is read by one rule that covers every form (a job's output paths:
``outputs``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from wlmvk.redbox.slurm.cli import exits


@dataclass(frozen=True, order=True)
class Release:
    """A Slurm release, ``major.minor.micro`` (``22.05.8`` is (22, 5, 8))."""

    major: int
    minor: int
    micro: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor:02d}.{self.micro}"

    def squeue_exit(self) -> Callable[[str], tuple[int, int]]:
        """The reader of ``squeue -O exit_code`` on this release: (exit code, signal)."""
        return exits.pair if self >= EXIT_PAIRS_SINCE else exits.wait_status

    def squeue_fills_default_output(self) -> bool:
        """Whether squeue prints an unset stdout as ``<workdir>/slurm-<own job id>.out``."""
        return self < OUTPUT_PATTERNS_SINCE

    def sstat_job(self) -> str:
        """How sstat's errors name a job on this release, before its id (``job ``, ``JobId=``)."""
        return "JobId=" if self >= STEP_ID_WORDS_SINCE else "job "


EXIT_PAIRS_SINCE = Release(23, 2)
"""The first release whose ``squeue -O exit_code`` prints ``code:signal``."""

OUTPUT_PATTERNS_SINCE = Release(24, 5)
"""The first release whose squeue prints an unset stdout as Slurm's default pattern."""

STEP_ID_WORDS_SINCE = Release(25, 11)
"""The first release whose sstat errors name a job ``JobId=12`` (``job 12`` before)."""

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def detected(sinfo_output: str) -> Release:
    """``sinfo -V``'s answer -> its Release; ValueError when it names none."""
    words = sinfo_output.split()
    match = _VERSION.match(words[1]) if len(words) > 1 else None
    if match is None:
        raise ValueError(f"sinfo -V names no Slurm release: {sinfo_output.strip()[:200]!r}")
    return Release(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
