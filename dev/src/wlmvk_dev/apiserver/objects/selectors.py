"""Label and field selectors: parsed once from their query-string form, then matched.

Label selectors support ``=``, ``==``, ``!=``, ``in (...)``, ``notin (...)``, ``key``
(exists) and ``!key``. Field selectors support ``=``, ``==`` and ``!=`` on any dotted path
into the object (``metadata.name``, ``spec.nodeName``, ``status.phase``,
``involvedObject.uid``, ...); a missing field compares as the empty string, as
Kubernetes' field label conversion does for unset strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wlmvk_dev.apiserver.objects.errors import bad_request

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")
_CMP = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*([-A-Za-z0-9_./]*)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str
    """One of ``in``, ``notin``, ``exists``, ``!``."""
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op == "in":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``app=x,tier in (a,b),!legacy``; a malformed selector is a 400."""
    if not text or not text.strip():
        return LabelSelector()
    reqs = []
    for part in _split_top_level(text):
        if m := _SET.match(part):
            values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append(Requirement(m.group(1), m.group(2), values))
        elif m := _CMP.match(part):
            op = "notin" if m.group(2) == "!=" else "in"
            reqs.append(Requirement(m.group(1), op, frozenset({m.group(3)})))
        elif m := _EXISTS.match(part):
            reqs.append(Requirement(m.group(2), "!" if m.group(1) else "exists"))
        else:
            raise bad_request(f"unable to parse requirement: {part.strip()!r} in label selector {text!r}")
    return LabelSelector(tuple(reqs))


def selector_from_match_labels(match: Mapping[str, Any]) -> LabelSelector:
    """A ``metav1.LabelSelector`` object (matchLabels + matchExpressions) as a selector."""
    reqs = [Requirement(k, "in", frozenset({str(v)})) for k, v in (match.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in match.get("matchExpressions") or []:
        reqs.append(Requirement(expr["key"], ops[expr["operator"]], frozenset(expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldRequirement:
    path: tuple[str, ...]
    equal: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, self.path) == self.value) == self.equal


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact(self, path: str) -> str | None:
        """The value ``path`` must equal, if the selector pins it (used for fast lookups)."""
        want = tuple(path.split("."))
        for r in self.requirements:
            if r.path == want and r.equal:
                return r.value
        return None


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse ``metadata.name=x,spec.nodeName!=``; a malformed selector is a 400."""
    if not text or not text.strip():
        return FieldSelector()
    reqs = []
    for part in _split_escaped(text, ","):
        for op, equal in (("!=", False), ("==", True), ("=", True)):
            idx = _find_unescaped(part, op)
            if idx >= 0:
                path, value = part[:idx].strip(), _unescape(part[idx + len(op) :].strip())
                if not path:
                    break
                reqs.append(FieldRequirement(tuple(path.split(".")), equal, value))
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(reqs))


def field_value(obj: Mapping[str, Any], path: tuple[str, ...]) -> str:
    """The string form of a field, ``""`` when missing (booleans as ``true``/``false``)."""
    cur: Any = obj
    for step in path:
        if not isinstance(cur, Mapping) or step not in cur:
            return ""
        cur = cur[step]
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _split_escaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], "", 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            cur += text[i : i + 2]
            i += 2
            continue
        if text[i] == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += text[i]
        i += 1
    parts.append(cur)
    return [p for p in parts if p.strip()]


def _find_unescaped(text: str, op: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(op, i):
            return i
        i += 1
    return -1


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)
