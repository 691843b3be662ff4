"""API server errors mapped onto the project's error classes, in one place."""

from __future__ import annotations

import json
from typing import Any

from wlmvk.core.errors import (
    Conflict,
    FailedPrecondition,
    InvalidInput,
    NotFound,
    Unavailable,
    WlmvkError,
)


class ResourceExpired(Conflict):
    """The resourceVersion is too old (HTTP 410 Gone): relist, then watch again."""


class AlreadyExists(Conflict):
    """A create found an object of that name (HTTP 409 AlreadyExists)."""


def status_message(payload: bytes | str | None) -> tuple[str, str]:
    """(reason, message) of a ``Status`` body; the raw text when it is not one."""
    if not payload:
        return "", ""
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    try:
        body: Any = json.loads(text)
    except ValueError:
        return "", text.strip()[:500]
    if isinstance(body, dict):
        return str(body.get("reason", "")), str(body.get("message", ""))
    return "", text.strip()[:500]


def from_status(code: int, payload: bytes | str | None, *, what: str) -> WlmvkError:
    """The error for an HTTP status code and its Status body."""
    reason, message = status_message(payload)
    text = f"{what}: {message or reason or code}"
    if code == 404:
        return NotFound(text)
    if code == 410:
        return ResourceExpired(text)
    if code == 409:
        return AlreadyExists(text) if reason == "AlreadyExists" else Conflict(text)
    if code in (400, 422, 415):
        return InvalidInput(text)
    if code in (401, 403):
        return FailedPrecondition(text)
    return Unavailable(text)
