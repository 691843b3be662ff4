"""Kubernetes timestamps: RFC 3339 ``Time`` (seconds) and ``MicroTime`` (microseconds), UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """``metav1.Time``: whole seconds, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro(moment: datetime) -> str:
    """``metav1.MicroTime``: microseconds, ``Z`` (Lease renewTime, Event eventTime)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse(text: str | None) -> datetime | None:
    """A Time or MicroTime (or any RFC 3339 offset); None when absent or unreadable."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
