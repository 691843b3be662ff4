"""Slurm durations: ``--time``, a partition's MaxTime, a job's RunTime and TimeLimit.

One reading for the operator (a script's ``--time``) and red-box (scontrol's
output), in Slurm's formats: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``,
``D-H:M:S``. ``UNLIMITED`` and ``INFINITE`` are no limit.
"""

from __future__ import annotations

UNLIMITED = frozenset({"UNLIMITED", "INFINITE"})

UNLIMITED_WALL_TIME = 2**31 - 1
"""Seconds standing for "no limit" where a number must be written (about 68 years): a node
label must still compare (Gt) above any request, and the wire's ``wallTime`` needs a number."""


def unlimited(text: str) -> bool:
    """True for Slurm's spellings of no limit."""
    return text.strip().upper() in UNLIMITED


def seconds(text: str) -> int | None:
    """Seconds of a Slurm duration, or None when ``text`` is not one (nor a number of minutes)."""
    text = text.strip()
    days = 0
    rest = text
    if "-" in text:
        day_text, _, rest = text.partition("-")
        if not day_text.isdigit():
            return None
        days = int(day_text)
    parts = rest.split(":")
    if len(parts) > 3 or not all(part.isdigit() for part in parts):
        return None
    numbers = [int(part) for part in parts]
    if "-" in text:  # days-hours[:minutes[:seconds]]
        hours, minutes, secs = [*numbers, 0, 0][:3]
    elif len(numbers) == 1:  # minutes
        hours, minutes, secs = 0, numbers[0], 0
    elif len(numbers) == 2:  # minutes:seconds
        hours, minutes, secs = 0, numbers[0], numbers[1]
    else:
        hours, minutes, secs = numbers
    return ((days * 24 + hours) * 60 + minutes) * 60 + secs


def minutes_text(value: int) -> str:
    """A ``--time`` value for ``value`` seconds: ``M:SS``."""
    whole, rest = divmod(value, 60)
    return f"{whole}:{rest:02d}"
