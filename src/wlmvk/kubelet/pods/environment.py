"""A plain pod's container environment and working directory: one rule for its job and its execs.

The job script built from a pod's container exports the container's ``env``
(literal values and the ``fieldRef`` values the kubelet resolves) and enters its
``workingDir``; ``kubectl exec`` into that pod gets exactly the same
(``exec_context``), as an exec into a container does. A batch pod's or a
WlmJob's script sets up its own environment and directory, so an exec there
gets the job's directory and red-box's environment, as a step the script starts
would. Pure: a function of the pod body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from wlmvk.core import names
from wlmvk.core.errors import InvalidInput
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body


@dataclass(frozen=True)
class ExecContext:
    """What a command run into the pod's job (``kubectl exec``) is given, as its job script was."""

    env: Mapping[str, str] = field(default_factory=dict)
    working_dir: str = ""


def exec_context(pod: Body) -> ExecContext:
    """A plain pod's container env and workingDir, exactly as its job script sets them."""
    annotations = objects.annotations(pod)
    containers = objects.containers(pod)
    scripted = names.ANNOTATION_BATCH in annotations or names.ANNOTATION_CONTAINER_JOB in annotations
    if scripted or not containers:
        return ExecContext()
    container: Body = containers[0]
    try:
        env = container_env(pod, container)
    except InvalidInput:
        return ExecContext()
    return ExecContext(env=dict(env), working_dir=str(container.get("workingDir") or ""))


def container_env(pod: Body, container: Body) -> list[tuple[str, str]]:
    """The container's env in order, ``fieldRef`` values resolved; ``InvalidInput`` names what cannot be."""
    out: list[tuple[str, str]] = []
    for item in container.get("env") or []:
        name = str(item.get("name", ""))
        if not name.isidentifier():
            raise InvalidInput(f"environment variable name {name!r} is not valid in a shell")
        if "valueFrom" not in item:
            out.append((name, str(item.get("value", ""))))
            continue
        source: Body = item["valueFrom"] or {}
        field_ref = source.get("fieldRef")
        if not field_ref:
            kinds = ", ".join(sorted(source)) or "unknown"
            raise InvalidInput(f"env {name} takes its value from {kinds}, not supported here")
        value = _field_value(pod, str(field_ref.get("fieldPath", "")))
        if value is None:
            raise InvalidInput(f"env {name}: field {field_ref.get('fieldPath')!r} is not supported")
        out.append((name, value))
    return out


def _field_value(pod: Body, path: str) -> str | None:
    metadata, spec = objects.meta(pod), objects.spec(pod)
    simple = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
    }
    if path in simple:
        return str(simple[path] or "")
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((metadata.get(key) or {}).get(path[len(prefix) + 2 : -2], ""))
    return None
