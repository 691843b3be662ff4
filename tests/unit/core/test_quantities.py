from __future__ import annotations

from fractions import Fraction

import pytest

from wlmvk.core import quantities
from wlmvk.core.errors import InvalidInput


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("500m", Fraction("0.5")),
        ("1k", 1000),
        ("1Ki", 1024),
        ("2Gi", 2 * 2**30),
        ("1e3", 1000),
        (3, 3),
    ],
)
def test_parse(text: str, value: Fraction) -> None:
    assert quantities.parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1x", "Gi", "1.2.3", "ten"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(InvalidInput):
        quantities.parse_quantity(text)


def test_rounding_up() -> None:
    assert quantities.cpus("100m") == 1
    assert quantities.cpus("2.5") == 3
    assert quantities.megabytes("1Mi") == 1
    assert quantities.megabytes("1M") == 1
    assert quantities.megabytes("1025Ki") == 2
    assert quantities.count("2") == 2
