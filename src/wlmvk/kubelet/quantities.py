"""Kubernetes resource quantities as Slurm wants them: whole CPUs and MB.

Slurm allocates whole CPUs and takes ``--mem`` in megabytes (MiB), so
fractions round up: ``500m`` CPU is one CPU, ``1500Ki`` is 2 MB.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from wlmvk.core.errors import InvalidInput

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
_MIB = Decimal(2) ** 20


def parse(text: str | int | float) -> Decimal:
    """The value of a quantity (``"500m"`` -> 0.5, ``"1Gi"`` -> 1073741824)."""
    raw = str(text).strip()
    match = _QUANTITY.match(raw)
    if not match:
        raise InvalidInput(f"not a resource quantity: {raw!r}")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:
        raise InvalidInput(f"not a resource quantity: {raw!r}") from exc
    return number * _SUFFIXES[match.group(2) or ""]


def cpus(text: str | int | float) -> int:
    """Whole CPUs, rounded up (at least 1 for any positive amount)."""
    return max(0, math.ceil(parse(text)))


def megabytes(text: str | int | float) -> int:
    """Memory in MB (MiB, as Slurm's ``--mem`` counts), rounded up."""
    return max(0, math.ceil(parse(text) / _MIB))


def count(text: str | int | float) -> int:
    """An integer count (GPUs)."""
    return max(0, math.ceil(parse(text)))
