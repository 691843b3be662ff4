"""Kubernetes timestamps, written and read by one module (kube.times) for the kubelet, the operator
and the in-memory API server alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from wlmvk.kube import times
from wlmvk.kubelet.api import loglines

MOMENTS = [
    datetime(2026, 12, 3, 0, 0, 0, tzinfo=UTC),
    datetime(2026, 12, 3, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    datetime(2026, 6, 1, 12, 0, 0, 500000, tzinfo=timezone(timedelta(hours=-7))),
]


@pytest.mark.parametrize("moment", MOMENTS)
def test_the_three_formats(moment: datetime) -> None:
    utc = moment.astimezone(UTC)
    assert times.rfc3339(moment) == utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert times.micro_time(moment) == utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert times.nano_time(times.nanoseconds(moment)) == utc.strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


@pytest.mark.parametrize("moment", MOMENTS)
def test_log_lines_are_stamped_with_the_nano_format(moment: datetime) -> None:
    stamped = loglines.stamp(b"one\ntwo\n", moment)
    prefix = times.nano_time(times.nanoseconds(moment)).encode()
    assert stamped == prefix + b" one\n" + prefix + b" two\n"


def test_nano_time_keeps_every_nanosecond() -> None:
    assert times.nano_time(1_000_000_000_000_000_001) == "2001-09-09T01:46:40.000000001Z"


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-03T10:00:00Z",
        "2026-12-03T10:00:00z",
        "2026-12-03T10:00:00.000000Z",
        "2026-12-03T11:00:00+01:00",
    ],
)
def test_parse_reads_every_rfc3339_form(text: str) -> None:
    assert times.parse(text) == datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)


def test_parse_refuses_what_is_not_a_timestamp() -> None:
    with pytest.raises(ValueError, match="Invalid isoformat"):
        times.parse("yesterday")
