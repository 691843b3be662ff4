"""GPUs in a Slurm generic-resource string: ``--gres`` and a node's ``Gres``.

Each comma-separated item is ``name[:type][:count]``, with a socket list in
brackets on a node (``gpu:tesla:2(S:0-1)``). The last part is the count when
it is a number (``K``, ``M``, ``G`` multiply by 1024 as Slurm's do), the type
otherwise; with three parts it must be a count: sbatch refuses
``gpu:a100:x`` ("Invalid generic resource (gres) specification", 22.05), and
so does this module.
"""

from __future__ import annotations

import re

from wlmvk.core.errors import InvalidInput

_COUNT = re.compile(r"(\d+)([KMG]?)", re.IGNORECASE)
_MULTIPLIER = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_ITEMS = re.compile(r",(?![^(]*\))")


def gpus(text: str) -> int:
    """Total GPUs of a gres string (``(null)`` and empty are none); ``InvalidInput`` for a bad one."""
    return sum(by_type(text).values())


def count(text: str) -> int | None:
    """A GPU count (``2``, ``1K``), or None when ``text`` is not one."""
    return _count(text)


def _count(text: str) -> int | None:
    match = _COUNT.fullmatch(text.strip())
    if match is None:
        return None
    return int(match.group(1)) * _MULTIPLIER[match.group(2).upper()]


def by_type(text: str) -> dict[str, int]:
    """GPUs of a node's ``Gres`` or ``GresUsed`` per type ("" for untyped), in Slurm's order.

    ``gpu:tesla:2(S:0-1),gpu:1g.10gb:4`` -> ``{"tesla": 2, "1g.10gb": 4}``; ``GresUsed``'s
    ``gpu:tesla:1(IDX:0)`` and ``gpu:(null):0(IDX:N/A)`` read alike; ``(null)`` is none.
    ``InvalidInput`` for an item that is not ``gpu[:type][:count]``.
    """
    out: dict[str, int] = {}
    for item in _ITEMS.split(text.strip()):
        parts = item.strip().split("(", 1)[0].split(":")
        if item.strip().startswith("gpu:(null)"):
            parts = ["gpu", *item.strip().split(")", 1)[1].split("(", 1)[0].split(":")[1:]]
        if parts[0] != "gpu":
            continue
        if len(parts) > 3:
            raise InvalidInput(f"{item!r} wants gpu[:type][:count]")
        amount = _count(parts[-1]) if len(parts) > 1 else 1
        kind = parts[1] if len(parts) == 3 else ("" if amount is not None else parts[-1])
        if amount is None:
            if len(parts) == 3:
                raise InvalidInput(f"{item!r} wants a GPU count as its last part, not {parts[-1]!r}")
            amount = 1  # gpu:<type>
        out[kind] = out.get(kind, 0) + amount
    return out
