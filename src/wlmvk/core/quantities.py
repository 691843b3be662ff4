"""Kubernetes resource quantities ("500m", "1Gi", "2e3", "100u") as exact numbers.

One reading for every side: the kubelet turns a pod's resources into Slurm's
whole CPUs and MB, the in-memory scheduler compares requests with allocatable
the way kube-scheduler does (CPU in whole millicores, everything else in
whole units, each rounded *up*: ``Quantity.MilliValue()`` /
``Quantity.Value()``). Parsing is exact (``Fraction``), so "0.1" + "0.2"
really is "0.3", and accepts every suffix the API server accepts.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from wlmvk.core.errors import InvalidInput

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity; ``InvalidInput`` when it is not one."""
    if isinstance(text, bool):
        raise InvalidInput(f"quantity must be a string or number, not {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip())
    if not match:
        raise InvalidInput(f"quantities must match the regular expression '{_QUANTITY.pattern}': {text!r}")
    number, suffix = Fraction(match.group(1)), match.group(2)
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = _EXPONENT.match(suffix)
    if exponent:
        return number * Fraction(10) ** int(exponent.group(1))
    raise InvalidInput(f"unable to parse quantity's suffix: {text!r}")


def milli_value(text: str | int | float) -> int:
    """Whole thousandths, rounded up (how CPU is compared: "0.5" -> 500)."""
    return math.ceil(parse_quantity(text) * 1000)


def value(text: str | int | float) -> int:
    """Whole units, rounded up (memory in bytes, pods, GPUs)."""
    return math.ceil(parse_quantity(text))


def scaled(resource: str, text: str | int | float) -> int:
    """The integer kube-scheduler compares for ``resource``: millicores for cpu, units otherwise."""
    return milli_value(text) if resource == "cpu" else value(text)


_MIB = 2**20


def cpus(text: str | int | float) -> int:
    """Whole CPUs, as Slurm allocates them: rounded up (``500m`` is one CPU)."""
    return max(0, math.ceil(parse_quantity(text)))


def megabytes(text: str | int | float) -> int:
    """Memory in MB (MiB, as Slurm's ``--mem`` counts), rounded up (``1500Ki`` is 2)."""
    return max(0, math.ceil(parse_quantity(text) / _MIB))


def count(text: str | int | float) -> int:
    """A whole count (GPUs), rounded up."""
    return max(0, math.ceil(parse_quantity(text)))
