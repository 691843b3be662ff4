"""The simple JSONPath of CRD printer columns: ``.status.phase``, ``.spec.items[0].name``,
``.status.conditions[?(@.type=="Ready")].status``, ``.spec.list[*].x``, ``.metadata.labels['a.b/c']``.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$]+)"""
    r"""|\[(?P<index>-?\d+)\]"""
    r"""|\[(?P<star>\*)\]"""
    r"""|\[['"](?P<quoted>[^'"]+)['"]\]"""
    r"""|\[\?\(@\.(?P<fkey>[A-Za-z0-9_.\-]+)\s*(?P<fop>==|!=)\s*['"]?(?P<fval>[^'")]*)['"]?\)\]"""
    r"""|\.\*"""
)


def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` selects in ``obj`` (empty when nothing matches or the path is odd)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    current = [obj]
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return []
        pos = m.end()
        current = [v for node in current for v in _step(node, m)]
    return current


def _step(node: Any, m: re.Match[str]) -> list[Any]:
    if m.group("field") is not None or m.group("quoted") is not None:
        key = m.group("field") or m.group("quoted")
        return [node[key]] if isinstance(node, dict) and key in node else []
    if m.group("index") is not None:
        idx = int(m.group("index"))
        return [node[idx]] if isinstance(node, list) and -len(node) <= idx < len(node) else []
    if m.group("fkey") is not None:
        if not isinstance(node, list):
            return []
        keys = m.group("fkey").split(".")
        equal = m.group("fop") == "=="
        return [item for item in node if (_get(item, keys) == m.group("fval")) == equal]
    if isinstance(node, list):
        return list(node)
    if isinstance(node, dict):
        return list(node.values())
    return []


def _get(item: Any, keys: list[str]) -> str | None:
    for k in keys:
        if not isinstance(item, dict) or k not in item:
            return None
        item = item[k]
    if isinstance(item, bool):
        return "true" if item else "false"
    return None if item is None else str(item)
