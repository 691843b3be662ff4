"""Kubernetes time formats: RFC 3339 seconds (Time) and microseconds (MicroTime)."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime | None = None) -> str:
    """A ``metav1.Time``: seconds precision, UTC, ``Z`` suffix."""
    value = (moment or now()).astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: datetime | None = None) -> str:
    """A ``metav1.MicroTime`` (Lease renewTime, Event eventTime)."""
    value = (moment or now()).astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse(text: str) -> datetime:
    """Parse either format (and any RFC 3339 offset) into an aware datetime."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)
