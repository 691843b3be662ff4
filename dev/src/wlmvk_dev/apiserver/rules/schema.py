"""OpenAPI v3 schema checks of custom resources: validation (422 causes) and pruning.

Covers what structural CRD schemas use: ``type``, ``required``, ``properties``, ``items``,
``enum``, ``minLength``/``maxLength``, ``pattern``, ``minimum``/``maximum`` (and the
exclusive forms), ``minItems``/``maxItems``, ``additionalProperties`` (bool or schema),
``nullable``, ``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-int-or-string``
and ``allOf``/``anyOf``/``oneOf`` in their simple forms. Messages follow the real server
(``spec.x: Required value``, ``spec.x: Unsupported value: "a": supported values: ...``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from wlmvk_dev.apiserver.objects.errors import Cause

Schema = Mapping[str, Any]

_TOP_LEVEL = ("apiVersion", "kind", "metadata")


def validate(schema: Schema, obj: Any) -> list[Cause]:
    """Every violation of ``schema`` by the object (metadata, apiVersion and kind are skipped)."""
    causes: list[Cause] = []
    if not isinstance(obj, dict):
        return [Cause("", "Invalid value: must be an object")]
    props = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if key not in _TOP_LEVEL and key not in obj:
            causes.append(Cause(key, "Required value", "FieldValueRequired"))
    for key, value in obj.items():
        if key in _TOP_LEVEL:
            continue
        if key in props:
            _check(props[key], value, key, causes)
    return causes


SAME_AS_BEFORE = "self == oldSelf"
NOT_CHECKED = (
    "Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


BLOCKING = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTypeInvalid"})
"""Errors after which kube-apiserver runs no CEL rule (its ``hasBlockingErr``)."""


def rule_causes(schema: Schema, old: Any, new: Any, found: list[Cause]) -> list[Cause]:
    """The ``x-kubernetes-validations`` rules' causes for a write, as kube-apiserver reports them.

    ``old`` is None on create. Only the transition rule ``self == oldSelf`` (a field frozen
    after creation) is understood; other CEL rules are not evaluated here (a known
    difference). After a blocking error in ``found`` no rule runs, and one cause says so.
    """
    rules = list(_rules(schema, ""))
    if not rules:
        return []
    if any(cause.reason in BLOCKING for cause in found):
        return [Cause("<nil>", NOT_CHECKED)]
    causes = []
    for path, rule in rules:
        if old is None or rule.get("rule") != SAME_AS_BEFORE:
            continue
        found_old, before = _at(old, path)
        found_new, after = _at(new, path)
        if found_old and found_new and before != after:
            message = rule.get("message") or f"failed rule: {SAME_AS_BEFORE}"
            causes.append(Cause(path, f"Invalid value: {message}"))
    return causes


def _rules(schema: Schema, path: str) -> Any:
    for rule in schema.get("x-kubernetes-validations") or ():
        yield path, rule
    for key, sub in (schema.get("properties") or {}).items():
        if path or key not in _TOP_LEVEL:
            yield from _rules(sub, f"{path}.{key}" if path else key)


def _at(obj: Any, path: str) -> tuple[bool, Any]:
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return False, None
        obj = obj[key]
    return True, obj


def relative_to_status(causes: list[Cause]) -> list[Cause]:
    """Causes of a status write: kube-apiserver validates the status against its own schema,
    so messages name the path below ``status`` (``exitCode in body``) and fields keep it."""
    out = []
    for cause in causes:
        if cause.field.startswith("status."):
            inner = cause.field.removeprefix("status.")
            message = cause.message.replace(f"{cause.field} in body", f"{inner} in body")
            cause = Cause(cause.field, message, cause.reason)
        out.append(cause)
    return out


def prune(schema: Schema, obj: Any) -> list[str]:
    """Drop fields the schema does not declare, in place; returns their paths."""
    dropped: list[str] = []
    if isinstance(obj, dict):
        for key in list(obj):
            if key in _TOP_LEVEL:
                continue
            _prune_field(schema, obj, key, key, dropped)
    return dropped


def _prune_field(schema: Schema, parent: dict[str, Any], key: str, path: str, dropped: list[str]) -> None:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        sub = (schema.get("properties") or {}).get(key)
        if sub is not None:
            _prune(sub, parent[key], path, dropped)
        return
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if key in props:
        _prune(props[key], parent[key], path, dropped)
    elif isinstance(extra, Mapping):
        _prune(extra, parent[key], path, dropped)
    elif extra is True:
        return
    else:
        del parent[key]
        dropped.append(path)


def _prune(schema: Schema, value: Any, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        if schema.get("type") not in (None, "object") and not schema.get("properties"):
            return
        if (
            not schema.get("properties")
            and not schema.get("additionalProperties")
            and not schema.get("x-kubernetes-preserve-unknown-fields")
            and schema.get("type") is None
        ):
            return
        for key in list(value):
            _prune_field(schema, value, key, f"{path}.{key}", dropped)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for n, item in enumerate(value):
            _prune(schema["items"], item, f"{path}[{n}]", dropped)


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def _check(schema: Schema, value: Any, path: str, causes: list[Cause]) -> None:
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            causes.append(
                Cause(path, f'Invalid value: "null": {path} in body must be of type {schema["type"]}: "null"')
            )
        return
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _type_ok("integer", value)):
            causes.append(
                Cause(
                    path, f"Invalid value: {_show(value)}: {path} in body must be of type integer-or-string"
                )
            )
            return
    elif kind and not _type_ok(kind, value):
        shown = type(value).__name__ if not isinstance(value, str) else "string"
        shown = {
            "dict": "object",
            "list": "array",
            "int": "integer",
            "float": "number",
            "bool": "boolean",
        }.get(shown, shown)
        causes.append(
            Cause(
                path,
                f'Invalid value: "{shown}": {path} in body must be of type {kind}: "{shown}"',
                "FieldValueTypeInvalid",
            )
        )
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_show(v) for v in schema["enum"])
        causes.append(
            Cause(
                path,
                f"Unsupported value: {_show(value)}: supported values: {allowed}",
                "FieldValueNotSupported",
            )
        )
    if isinstance(value, str):
        _check_string(schema, value, path, causes)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(schema, value, path, causes)
    elif isinstance(value, list):
        _check_array(schema, value, path, causes)
    elif isinstance(value, dict):
        _check_object(schema, value, path, causes)
    for sub in schema.get("allOf") or ():
        _check(sub, value, path, causes)
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if options:
            passing = 0
            for sub in options:
                trial: list[Cause] = []
                _check(sub, value, path, trial)
                passing += not trial
            if passing == 0 or (combinator == "oneOf" and passing > 1):
                causes.append(
                    Cause(path, f"Invalid value: {_show(value)}: {path} in body must match {combinator}")
                )


def _check_string(schema: Schema, value: str, path: str, causes: list[Cause]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(
            Cause(
                path,
                f"Invalid value: {_show(value)}: {path} in body should be at least "
                f"{schema['minLength']} chars long",
            )
        )
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(
            Cause(path, f"Too long: may not be more than {schema['maxLength']} bytes", "FieldValueTooLong")
        )
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        causes.append(
            Cause(path, f"Invalid value: {_show(value)}: {path} in body should match '{schema['pattern']}'")
        )


def _check_number(schema: Schema, value: float, path: str, causes: list[Cause]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None:
        if schema.get("exclusiveMinimum") and value <= low:
            causes.append(
                Cause(path, f"Invalid value: {_show(value)}: {path} in body should be greater than {low}")
            )
        elif value < low:
            causes.append(
                Cause(
                    path,
                    f"Invalid value: {_show(value)}: {path} in body should be greater than or equal to {low}",
                )
            )
    if high is not None:
        if schema.get("exclusiveMaximum") and value >= high:
            causes.append(
                Cause(path, f"Invalid value: {_show(value)}: {path} in body should be less than {high}")
            )
        elif value > high:
            causes.append(
                Cause(
                    path,
                    f"Invalid value: {_show(value)}: {path} in body should be less than or equal to {high}",
                )
            )


def _check_array(schema: Schema, value: list[Any], path: str, causes: list[Cause]) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(
            Cause(
                path,
                f"Invalid value: {len(value)}: {path} in body should have at least "
                f"{schema['minItems']} items",
            )
        )
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(
            Cause(
                path,
                f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                "FieldValueTooMany",
            )
        )
    items = schema.get("items")
    if isinstance(items, Mapping):
        for n, item in enumerate(value):
            _check(items, item, f"{path}[{n}]", causes)


def _check_object(schema: Schema, value: dict[str, Any], path: str, causes: list[Cause]) -> None:
    props = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if key not in value:
            causes.append(Cause(f"{path}.{key}", "Required value", "FieldValueRequired"))
    extra = schema.get("additionalProperties")
    for key, sub in value.items():
        if key in props:
            _check(props[key], sub, f"{path}.{key}", causes)
        elif isinstance(extra, Mapping):
            _check(extra, sub, f"{path}.{key}", causes)
