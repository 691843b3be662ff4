"""Kubernetes quantity parsing and the rounding kube-scheduler compares with."""

from __future__ import annotations

from fractions import Fraction

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.core.quantities import milli_value, parse_quantity, scaled, value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Fraction(1)),
        ("0", Fraction(0)),
        ("500m", Fraction(1, 2)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("2.", Fraction(2)),
        ("100n", Fraction(1, 10**7)),
        ("3u", Fraction(3, 10**6)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("1G", Fraction(10**9)),
        ("2T", Fraction(2 * 10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("1Mi", Fraction(2**20)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1Ti", Fraction(2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("12e-3", Fraction(12, 1000)),
        ("1e+2", Fraction(100)),
        ("+4", Fraction(4)),
        ("-4", Fraction(-4)),
        (" 7 ", Fraction(7)),
    ],
)
def test_parses_every_suffix_exactly(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("number", [3, 0, 128])
def test_integers_are_quantities(number: int) -> None:
    assert parse_quantity(number) == number


def test_floats_are_read_as_written() -> None:
    assert parse_quantity(0.1) + parse_quantity(0.2) == parse_quantity("0.3")


@pytest.mark.parametrize("text", ["", "abc", "1Qi", "1kk", "1 Gi", "Gi", "1.2.3", "--1", "1e", "1ki", "1mi"])
def test_rejects_what_kubernetes_rejects(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_quantity(text)


def test_booleans_are_not_quantities() -> None:
    with pytest.raises(InvalidInput):
        parse_quantity(True)


@pytest.mark.parametrize(
    ("text", "millis"), [("1", 1000), ("250m", 250), ("0.1", 100), ("1n", 1), ("1.0001", 1001), ("2", 2000)]
)
def test_milli_value_rounds_up(text: str, millis: int) -> None:
    assert milli_value(text) == millis


@pytest.mark.parametrize(("text", "units"), [("1Gi", 2**30), ("1.5", 2), ("100m", 1), ("0", 0), ("1k", 1000)])
def test_value_rounds_up(text: str, units: int) -> None:
    assert value(text) == units


def test_cpu_is_compared_in_millicores_and_the_rest_in_units() -> None:
    assert scaled("cpu", "1500m") == 1500
    assert scaled("memory", "1Ki") == 1024
    assert scaled("nvidia.com/gpu", "2") == 2
    assert scaled("pods", 110) == 110
