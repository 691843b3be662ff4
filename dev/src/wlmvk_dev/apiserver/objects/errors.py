"""Kubernetes ``Status`` errors: what the store raises and the HTTP layer answers.

Every failure of a request is an :class:`ApiError` carrying the HTTP code, the
Kubernetes ``reason`` and message, so one place (``status()``) turns it into the
``{"kind": "Status", ...}`` body kubectl prints as ``Error from server (<reason>): <message>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wlmvk.core.errors import Conflict, InvalidInput, NotFound, WlmvkError


@dataclass(frozen=True)
class Cause:
    """One field-level problem of a 422 Invalid answer."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


class ApiError(WlmvkError):
    """A request failed with a Kubernetes Status."""

    def __init__(
        self, code: int, reason: str, message: str, *, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


class ApiNotFound(ApiError, NotFound):
    """404: the object or the resource type does not exist."""


class ApiConflict(ApiError, Conflict):
    """409: AlreadyExists, or a stale resourceVersion."""


class ApiInvalid(ApiError, InvalidInput):
    """400/422: the request or the object is malformed."""


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """A Status' details as kube-apiserver renders them: empty name and group are left out."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(resource: str, name: str, *, group: str = "") -> ApiError:
    details = _details(name, group, resource)
    return ApiNotFound(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found', details=details)


def already_exists(resource: str, name: str, *, group: str = "") -> ApiError:
    details = _details(name, group, resource)
    message = f'{_qualified(resource, group)} "{name}" already exists'
    return ApiConflict(409, "AlreadyExists", message, details=details)


def conflict(resource: str, name: str, why: str, *, group: str = "") -> ApiError:
    details = _details(name, group, resource)
    message = f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}'
    return ApiConflict(409, "Conflict", message, details=details)


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, name: str, causes: list[Cause], *, group: str = "") -> ApiError:
    listed = ", ".join(f"{c.field}: {c.message}" for c in causes)
    message = f'{kind}.{group} "{name}" is invalid: ' if group else f'{kind} "{name}" is invalid: '
    details = _details(name, group, kind)
    details["causes"] = [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes]
    if len(causes) > 1:
        listed = "[" + listed + "]"
    return ApiInvalid(422, "Invalid", message + listed, details=details)


def bad_request(message: str) -> ApiError:
    return ApiInvalid(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


METHOD_NOT_ALLOWED = "the server does not allow this method on the requested resource"
NO_RESOURCE = "the server could not find the requested resource"


def method_not_allowed(message: str = METHOD_NOT_ALLOWED) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message, details={})


def no_resource() -> ApiError:
    """404 for a path that names no served resource (an unknown kind, group or subresource)."""
    return ApiNotFound(404, "NotFound", NO_RESOURCE, details={})


def unsupported_media_type(message: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", message)


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource
