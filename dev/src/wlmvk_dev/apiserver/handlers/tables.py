"""``meta.k8s.io/v1`` Table responses: the columns ``kubectl get`` prints.

kubectl asks for ``application/json;as=Table`` and prints whatever columns the server
returns, so the printing rules of the real server live here: pods (READY, STATUS as
kubectl's pod printer computes it, RESTARTS, AGE), nodes (STATUS from the Ready condition
and ``unschedulable``, ROLES from role labels, VERSION), events, namespaces, a few more,
custom resources (their ``additionalPrinterColumns``), and NAME/AGE for the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from wlmvk_dev.apiserver.handlers import jsonpath
from wlmvk_dev.apiserver.objects import timestamps
from wlmvk_dev.apiserver.objects.resources import (
    CONFIGMAPS,
    CRDS,
    DAEMONSETS,
    DEPLOYMENTS,
    EVENTS,
    GVR,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    REPLICASETS,
    SECRETS,
    SERVICEACCOUNTS,
    Obj,
    ResourceInfo,
)

Column = tuple[str, str, str, int]
"""name, type, format, priority (1 = only with ``-o wide``)."""
Row = Callable[[Obj, datetime], list[Any]]

_NAME: Column = ("Name", "string", "name", 0)
_AGE: Column = ("Age", "string", "", 0)


def table(info: ResourceInfo, objects: Iterable[Obj], resource_version: str, *, now: datetime) -> Obj:
    """The Table of ``objects`` of type ``info``."""
    columns, row = printer(info)
    rows = [{"cells": row(obj, now), "object": _partial(obj)} for obj in objects]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [
            {"name": n, "type": t, "format": f, "description": "", "priority": p} for n, t, f, p in columns
        ],
        "rows": rows,
    }


def _partial(obj: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def printer(info: ResourceInfo) -> tuple[list[Column], Row]:
    builtin = _PRINTERS.get(info.gvr)
    if builtin is not None:
        return builtin
    if info.printer_columns:
        return _custom(info.printer_columns)
    return [_NAME, _AGE], lambda o, now: [_name(o), age(o, now)]


# -- durations ------------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """kubectl's ``duration.HumanDuration``: 45s, 5m3s, 3h, 2d5h, 1y20d."""
    s = round(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        days, rest = divmod(hours, 24)
        return f"{days}d" if rest == 0 else f"{days}d{rest}h"
    days = hours // 24
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years, rest = divmod(days, 365)
    if hours < 24 * 365 * 8 and rest:
        return f"{years}y{rest}d"
    return f"{years}y"


def parse_time(value: Any) -> datetime | None:
    moment = timestamps.parse(value) if isinstance(value, str) else None
    return moment.astimezone(UTC) if moment else None


def since(value: Any, now: datetime) -> str:
    moment = parse_time(value)
    return "<unknown>" if moment is None else human_duration((now - moment).total_seconds())


def age(obj: Obj, now: datetime) -> str:
    return since(obj.get("metadata", {}).get("creationTimestamp"), now)


def _name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


# -- pods -----------------------------------------------------------------------------------


def pod_status(pod: Obj) -> str:
    """The STATUS column of ``kubectl get pods`` (the rules of kubectl's pod printer)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    initializing = False
    init_specs = spec.get("initContainers") or []
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        initializing = True
        if term is not None:
            if term.get("reason"):
                reason = "Init:" + term["reason"]
            elif term.get("signal"):
                reason = f"Init:Signal:{term['signal']}"
            else:
                reason = f"Init:ExitCode:{term.get('exitCode', 0)}"
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        break
    if not initializing or _condition_true(status, "Initialized"):
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            term, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                reason = (
                    f"Signal:{term['signal']}"
                    if term.get("signal")
                    else f"ExitCode:{term.get('exitCode', 0)}"
                )
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"
    deleting = pod.get("metadata", {}).get("deletionTimestamp")
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and status.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return str(reason)


def _condition_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def _pod_row(pod: Obj, now: datetime) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount", 0)) for cs in statuses)
    restarts += sum(int(cs.get("restartCount", 0)) for cs in status.get("initContainerStatuses") or [])
    last = max(
        (
            t
            for cs in statuses
            if (t := parse_time(((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")))
        ),
        default=None,
    )
    shown = (
        f"{restarts} ({human_duration((now - last).total_seconds())} ago)"
        if restarts and last
        else str(restarts)
    )
    gates = spec.get("readinessGates") or []
    return [
        _name(pod),
        f"{ready}/{len(spec.get('containers') or [])}",
        pod_status(pod),
        shown,
        age(pod, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>"
        if not gates
        else f"{sum(1 for g in gates if _condition_true(status, g.get('conditionType')))}/{len(gates)}",
    ]


_POD_COLUMNS: list[Column] = [
    _NAME,
    ("Ready", "string", "", 0),
    ("Status", "string", "", 0),
    ("Restarts", "string", "", 0),
    _AGE,
    ("IP", "string", "", 1),
    ("Node", "string", "", 1),
    ("Nominated Node", "string", "", 1),
    ("Readiness Gates", "string", "", 1),
]


# -- nodes ----------------------------------------------------------------------------------


def node_status(node: Obj) -> str:
    """The STATUS column of ``kubectl get nodes``: Ready/NotReady/Unknown[,SchedulingDisabled]."""
    parts = []
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            parts.append("Ready" if cond.get("status") == "True" else "NotReady")
    if not parts:
        parts.append("Unknown")
    if (node.get("spec") or {}).get("unschedulable"):
        parts.append("SchedulingDisabled")
    return ",".join(parts)


def node_roles(node: Obj) -> str:
    roles = set()
    for key, value in (node.get("metadata", {}).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/":
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _address(node: Obj, kind: str) -> str:
    for addr in (node.get("status") or {}).get("addresses") or []:
        if addr.get("type") == kind:
            return str(addr.get("address", ""))
    return "<none>"


def _node_row(node: Obj, now: datetime) -> list[Any]:
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return [
        _name(node),
        node_status(node),
        node_roles(node),
        age(node, now),
        info.get("kubeletVersion", ""),
        _address(node, "InternalIP"),
        _address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE_COLUMNS: list[Column] = [
    _NAME,
    ("Status", "string", "", 0),
    ("Roles", "string", "", 0),
    _AGE,
    ("Version", "string", "", 0),
    ("Internal-IP", "string", "", 1),
    ("External-IP", "string", "", 1),
    ("OS-Image", "string", "", 1),
    ("Kernel-Version", "string", "", 1),
    ("Container-Runtime", "string", "", 1),
]


# -- events and the rest --------------------------------------------------------------------


def _event_row(ev: Obj, now: datetime) -> list[Any]:
    obj = ev.get("involvedObject") or {}
    last = ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("metadata", {}).get("creationTimestamp")
    return [
        since(last, now),
        ev.get("type", ""),
        ev.get("reason", ""),
        f"{str(obj.get('kind', '')).lower()}/{obj.get('name', '')}",
        ev.get("message", ""),
        _name(ev),
    ]


_EVENT_COLUMNS: list[Column] = [
    ("Last Seen", "string", "", 0),
    ("Type", "string", "", 0),
    ("Reason", "string", "", 0),
    ("Object", "string", "", 0),
    ("Message", "string", "", 0),
    _NAME,
]


def _simple(*extra: tuple[Column, Callable[[Obj], Any]]) -> tuple[list[Column], Row]:
    cols = [_NAME] + [c for c, _ in extra] + [_AGE]

    def row(obj: Obj, now: datetime) -> list[Any]:
        return [_name(obj)] + [get(obj) for _, get in extra] + [age(obj, now)]

    return cols, row


def _string(name: str) -> Column:
    return (name, "string", "", 0)


_PRINTERS: dict[GVR, tuple[list[Column], Row]] = {
    PODS: (_POD_COLUMNS, _pod_row),
    NODES: (_NODE_COLUMNS, _node_row),
    EVENTS: (_EVENT_COLUMNS, _event_row),
    NAMESPACES: _simple((_string("Status"), lambda o: (o.get("status") or {}).get("phase", ""))),
    CONFIGMAPS: _simple(
        (("Data", "integer", "", 0), lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}))
    ),
    SECRETS: _simple(
        (_string("Type"), lambda o: o.get("type", "Opaque")),
        (("Data", "integer", "", 0), lambda o: len(o.get("data") or {})),
    ),
    SERVICEACCOUNTS: _simple((("Secrets", "integer", "", 0), lambda o: len(o.get("secrets") or []))),
    LEASES: _simple((_string("Holder"), lambda o: (o.get("spec") or {}).get("holderIdentity", ""))),
    DEPLOYMENTS: _simple(
        (_string("Ready"), lambda o: f"{_status(o, 'readyReplicas')}/{_spec(o, 'replicas', 1)}"),
        (("Up-to-date", "integer", "", 0), lambda o: _status(o, "updatedReplicas")),
        (("Available", "integer", "", 0), lambda o: _status(o, "availableReplicas")),
    ),
    REPLICASETS: _simple(
        (("Desired", "integer", "", 0), lambda o: _spec(o, "replicas", 1)),
        (("Current", "integer", "", 0), lambda o: _status(o, "replicas")),
        (("Ready", "integer", "", 0), lambda o: _status(o, "readyReplicas")),
    ),
    DAEMONSETS: _simple(
        (("Desired", "integer", "", 0), lambda o: _status(o, "desiredNumberScheduled")),
        (("Current", "integer", "", 0), lambda o: _status(o, "currentNumberScheduled")),
        (("Ready", "integer", "", 0), lambda o: _status(o, "numberReady")),
        (("Up-to-date", "integer", "", 0), lambda o: _status(o, "updatedNumberScheduled")),
        (("Available", "integer", "", 0), lambda o: _status(o, "numberAvailable")),
        (_string("Node Selector"), lambda o: _selector(o)),
    ),
    CRDS: (
        [_NAME, ("Created At", "date", "", 0)],
        lambda o, now: [_name(o), o.get("metadata", {}).get("creationTimestamp", "")],
    ),
}


def _status(obj: Obj, field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def _spec(obj: Obj, field: str, default: int) -> int:
    value = (obj.get("spec") or {}).get(field)
    return default if value is None else int(value)


def _selector(obj: Obj) -> str:
    selector = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"


def _custom(columns: Iterable[Mapping[str, Any]]) -> tuple[list[Column], Row]:
    cols = list(columns)
    defs: list[Column] = [_NAME] + [
        (str(c["name"]), str(c.get("type", "string")), str(c.get("format", "")), int(c.get("priority", 0)))
        for c in cols
    ]

    def row(obj: Obj, now: datetime) -> list[Any]:
        cells: list[Any] = [_name(obj)]
        for c in cols:
            values = jsonpath.find(obj, str(c.get("jsonPath", "")))
            if not values:
                cells.append(None)
            elif c.get("type") == "date":
                cells.append(since(values[0], now))
            elif len(values) == 1:
                cells.append(values[0] if isinstance(values[0], int | float | bool) else _text(values[0]))
            else:
                cells.append(",".join(_text(v) for v in values))
        return cells

    return defs, row


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, separators=(",", ":"))
    return str(value)
