"""Fencing tokens (core.fences): the header's form, and red-box's refusal as the client reads it."""

from __future__ import annotations

import re

import pytest

from wlmvk.core import fences
from wlmvk.core.fences import Token


def test_a_token_travels_as_scope_equals_number() -> None:
    token = Token("kube-node-lease/slurm-c.kubelet", 7)
    assert token.header() == "kube-node-lease/slurm-c.kubelet=7"
    assert fences.parse(token.header()) == token


def test_the_number_is_read_after_the_last_equals_sign() -> None:
    assert fences.parse("a=b=12") == Token("a=b", 12)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("7", "expected <scope>=<number>"),
        ("=7", "expected <scope>=<number>"),
        ("lease=", "the number is not a non-negative integer"),
        ("lease=-1", "the number is not a non-negative integer"),
        ("lease=1.5", "the number is not a non-negative integer"),
        ("lease=\u0663", "the number is not a non-negative integer"),  # an Arabic-Indic three
    ],
)
def test_a_malformed_header_is_refused_saying_why(value: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"wlmvk-fence {value!r}: {why}")):
        fences.parse(value)


def test_the_refusal_names_both_numbers_and_is_recognised() -> None:
    message = fences.refusal(Token("ns/lease", 3), 4)
    assert message == (
        "fenced: token 3 of ns/lease is below the highest seen, 4: a newer holder of the Lease"
        " has spoken to red-box; this call changes nothing"
    )
    assert fences.refused(message)
    assert not fences.refused("sbatch: error: fenced: no")


def test_the_highest_number_is_read_back_from_a_refusal_only() -> None:
    assert fences.highest_in(fences.refusal(Token("ns/lease", 0), 12)) == 12
    assert fences.highest_in("sbatch: error: is below the highest seen, 3: no") is None
    assert fences.highest_in("fenced: something else") is None
