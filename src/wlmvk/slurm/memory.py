"""Slurm memory sizes: ``--mem``, a node's RealMemory, a partition's MaxMemPerNode.

Slurm counts memory in MB (MiB). A size is digits with an optional unit
``K``, ``M``, ``G`` or ``T`` (any case, an optional ``B``); no unit is MB.
Kilobytes round up, as sbatch rounds them (``--mem=500K`` asks for 1M,
checked with sbatch 22.05).
"""

from __future__ import annotations

import math
import re

UNLIMITED_MEMORY_MB = 2**31 - 1
"""MB standing for "no per-node limit known" where a number must be written (about 2 PiB): an
original red-box answers ``memPerNode -1`` for a partition without MaxMemPerNode, and a node label
must still compare (Gt) above any ``--mem`` and its capacity fit any memory request."""

_SIZE = re.compile(r"(\d+)([KMGT]?)B?", re.IGNORECASE)
_KB_PER_UNIT = {"K": 1, "": 1024, "M": 1024, "G": 1024**2, "T": 1024**3}


def megabytes(text: str) -> int | None:
    """MB of a Slurm size, rounded up; None when ``text`` is not a size."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        return None
    return math.ceil(int(match.group(1)) * _KB_PER_UNIT[match.group(2).upper()] / 1024)
