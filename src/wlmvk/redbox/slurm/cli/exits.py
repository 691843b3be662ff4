"""A finished job's exit code and signal, in the two forms Slurm prints them (pure).

``sacct`` and ``scontrol`` print ``code:signal`` (``3:0``, ``0:15``). ``squeue
-O exit_code`` printed the raw wait status up to 22.05 (exit code in the
second byte, signal in the low seven bits) and ``code:signal`` since 23.02;
which one a row holds is the release's to say (``releases.Release``), not the
row's, so a value of the other form is an error, never a guess.
"""

from __future__ import annotations

import re

_PAIR = re.compile(r"(\d+):(\d+)")


def wait_status(text: str) -> tuple[int, int]:
    """A raw wait status (``768``, ``9``, ``0``) -> (exit code, signal); ValueError otherwise."""
    text = text.strip()
    if not text.isdigit():
        raise ValueError(f"not a wait status: {text!r}")
    value = int(text)
    return (value >> 8) & 0xFF, value & 0x7F


def pair(text: str) -> tuple[int, int]:
    """``code:signal`` (``3:0``, ``0:15``) -> (exit code, signal); ValueError otherwise."""
    match = _PAIR.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not an exit code:signal pair: {text!r}")
    return int(match.group(1)), int(match.group(2))
