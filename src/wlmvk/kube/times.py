"""Kubernetes time formats, the only implementation: RFC 3339 seconds (Time) and microseconds (MicroTime).

Everything that writes or reads a Kubernetes timestamp goes through here (the kubelet's pod
status and stats, Events, Leases, node heartbeats, the operator's conditions, the in-memory API
server of ``wlmvk_dev``), so that they agree: always UTC, always ``Z``.
"""

from __future__ import annotations

import calendar
import time
from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime | None = None) -> str:
    """A ``metav1.Time``: seconds precision, UTC, ``Z`` suffix (now, when no moment is given)."""
    value = (moment or now()).astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: datetime | None = None) -> str:
    """A ``metav1.MicroTime`` (Lease renewTime, Event eventTime)."""
    value = (moment or now()).astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def nano_time(ns: int | None = None) -> str:
    """The kubelet's log line timestamp: RFC 3339 with nine fraction digits, UTC (``ns`` since
    the epoch; now when not given)."""
    seconds, rest = divmod(time.time_ns() if ns is None else ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest:09d}Z"


def nanoseconds(moment: datetime) -> int:
    """``moment`` as nanoseconds since the epoch, exactly (no float on the way)."""
    value = moment.astimezone(UTC)
    return calendar.timegm(value.utctimetuple()) * 1_000_000_000 + value.microsecond * 1000


def parse(text: str) -> datetime:
    """Parse either format (and any RFC 3339 offset, ``Z`` or ``z``) into an aware datetime.

    Raises ``ValueError`` when ``text`` is not a timestamp.
    """
    value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)
