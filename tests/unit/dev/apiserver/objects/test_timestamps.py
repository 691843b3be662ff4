"""The in-memory API server's timestamps: the product's formats, read tolerantly."""

from __future__ import annotations

from datetime import UTC, datetime

from wlmvk_dev.apiserver.objects import timestamps


def test_parse_tolerates_what_is_absent_or_garbled() -> None:
    assert timestamps.parse(None) is None
    assert timestamps.parse("") is None
    assert timestamps.parse("yesterday") is None


def test_parse_reads_what_the_product_reads() -> None:
    assert timestamps.parse("2026-12-03T11:00:00+01:00") == datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)
