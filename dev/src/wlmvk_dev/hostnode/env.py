"""A container's environment and command line, resolved as the kubelet resolves them.

- ``envFrom`` (ConfigMaps, Secrets, with ``prefix``) first, then ``env`` in
  order; a later name overrides an earlier one.
- ``value`` may refer to variables defined before it as ``$(NAME)``;
  ``$$(NAME)`` is an escaped literal ``$(NAME)``; an unknown reference stays
  as written. The same expansion applies to ``command`` and ``args``.
- ``valueFrom.fieldRef``: metadata.name/namespace/uid, metadata.labels['k'],
  metadata.annotations['k'], spec.nodeName, spec.serviceAccountName,
  status.hostIP(s), status.podIP(s); ``resourceFieldRef`` (limits/requests of
  cpu, memory, with a divisor); ``configMapKeyRef`` / ``secretKeyRef``
  (optional ones may be missing).
- A container without ``command`` runs its image's entrypoint: a local program
  the node maps the image to, with ``args``.

Nothing here touches the system: ConfigMaps and Secrets come in as a lookup
(``references`` names the ones a pod needs).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.core.quantities import parse_quantity
from wlmvk.kube.bodies import Body

Lookup = Callable[[str, str], Body | None]
"""(kind "configmaps"|"secrets", name) -> the object in the pod's namespace, or None."""

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion (``$$`` escapes a dollar)."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _REFERENCE.sub(replace, text)


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """The value of a ``fieldRef.fieldPath``; ``InvalidInput`` for unsupported paths."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    subscript = _SUBSCRIPT.match(path)
    if subscript:
        return str((metadata.get(subscript.group(1)) or {}).get(subscript.group(2), ""))
    simple: dict[str, Any] = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
        "status.hostIPs": ",".join(i.get("ip", "") for i in status.get("hostIPs") or []),
        "status.podIPs": ",".join(i.get("ip", "") for i in status.get("podIPs") or []),
    }
    if path == "metadata.labels" or path == "metadata.annotations":
        items = metadata.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(items.items()))
    if path not in simple:
        raise InvalidInput(f'unsupported fieldPath "{path}"')
    value = simple[path]
    return "" if value is None else str(value)


def resource_value(
    container: Mapping[str, Any], ref: Mapping[str, Any], node_allocatable: Mapping[str, Any]
) -> str:
    """``resourceFieldRef``: a limit (else node allocatable) or a request, over the divisor, rounded up."""
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or not name:
        raise InvalidInput(f'unsupported resource "{resource}"')
    resources = container.get("resources") or {}
    quantity = (resources.get(kind) or {}).get(name)
    if quantity is None and kind == "requests":
        quantity = (resources.get("limits") or {}).get(name)
    if quantity is None:
        quantity = node_allocatable.get(name, 0) if kind == "limits" else 0
    divisor = parse_quantity(ref.get("divisor") or "1")
    return str(math.ceil(parse_quantity(quantity) / divisor))


def container_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    lookup: Lookup,
    *,
    base: Mapping[str, str] | None = None,
    node_allocatable: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The container's environment: ``base`` (e.g. PATH, HOME), then envFrom, then env."""
    env = dict(base or {})
    for source in container.get("envFrom") or []:
        env.update(_from_source(source, lookup))
    for item in container.get("env") or []:
        name = item.get("name", "")
        if "valueFrom" in item:
            value = _value_from(pod, container, item["valueFrom"], lookup, node_allocatable or {})
            if value is None:
                continue
            env[name] = value
        else:
            env[name] = expand(str(item.get("value") or ""), env)
    return env


def runs_image(container: Mapping[str, Any], images: Mapping[str, Sequence[str]] | None) -> bool:
    """Whether the container runs the local program standing in for its image's entrypoint."""
    return not container.get("command") and bool(images) and str(container.get("image", "")) in (images or {})


def command_line(
    container: Mapping[str, Any],
    env: Mapping[str, str],
    images: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    """``command`` + ``args`` with ``$(VAR)`` expanded; ``InvalidInput`` when there is no command.

    Without a ``command`` the image's entrypoint runs, as in Kubernetes: here the local
    program ``images`` names for the image stands in for it, followed by ``args``.
    """
    command = list(container.get("command") or [])
    image = str(container.get("image", ""))
    if not command and images and image in images:
        return list(images[image]) + [expand(str(part), env) for part in container.get("args") or []]
    if not command:
        raise InvalidInput(
            "the host kubelet runs commands on this host and cannot run the entrypoint of image "
            f'"{image}": set the container\'s command (or give the node --image {image}=PROGRAM)'
        )
    return [expand(str(part), env) for part in command + list(container.get("args") or [])]


def references(pod: Mapping[str, Any]) -> set[tuple[str, str]]:
    """Every ConfigMap and Secret the pod's volumes, ``envFrom`` and ``env`` name: (kind, name)."""
    spec = pod.get("spec") or {}
    found: set[tuple[str, str]] = set()
    volumes = list(spec.get("volumes") or [])
    sources = volumes + [s for v in volumes for s in (v.get("projected") or {}).get("sources") or []]
    for source in sources:
        if "configMap" in source:
            found.add(("configmaps", str(source["configMap"].get("name", ""))))
        if "secret" in source:
            secret = source["secret"]
            found.add(("secrets", str(secret.get("secretName") or secret.get("name") or "")))
    for container in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        for source in container.get("envFrom") or []:
            for key, kind in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
                if key in source:
                    found.add((kind, str(source[key].get("name", ""))))
        for item in container.get("env") or []:
            value_from = item.get("valueFrom") or {}
            for key, kind in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
                if key in value_from:
                    found.add((kind, str(value_from[key].get("name", ""))))
    return found


def _value_from(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    source: Mapping[str, Any],
    lookup: Lookup,
    node_allocatable: Mapping[str, Any],
) -> str | None:
    if "fieldRef" in source:
        return field_value(pod, str(source["fieldRef"].get("fieldPath", "")))
    if "resourceFieldRef" in source:
        return resource_value(container, source["resourceFieldRef"], node_allocatable)
    for key, kind in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
        if key in source:
            ref = source[key]
            data = _data(lookup, kind, str(ref.get("name", "")), optional=bool(ref.get("optional")))
            if data is None or ref.get("key") not in data:
                if ref.get("optional"):
                    return None
                raise NotFound(f"couldn't find key {ref.get('key')} in {kind[:-1]} {ref.get('name')}")
            return data[ref["key"]]
    raise InvalidInput(f"unsupported valueFrom: {sorted(source)}")


def _from_source(source: Mapping[str, Any], lookup: Lookup) -> dict[str, str]:
    prefix = str(source.get("prefix") or "")
    for key, kind in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
        if key in source:
            ref = source[key]
            data = _data(lookup, kind, str(ref.get("name", "")), optional=bool(ref.get("optional")))
            return {prefix + k: v for k, v in (data or {}).items()}
    return {}


def _data(lookup: Lookup, kind: str, name: str, *, optional: bool) -> dict[str, str] | None:
    obj = lookup(kind, name)
    if obj is None:
        if optional:
            return None
        raise NotFound(f'{kind[:-1]} "{name}" not found')
    data = {k: str(v) for k, v in (obj.get("data") or {}).items()}
    if kind == "secrets":
        data = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in data.items()}
        data.update({k: str(v) for k, v in (obj.get("stringData") or {}).items()})
    elif obj.get("binaryData"):
        data.update({k: base64.b64decode(v).decode("utf-8", "replace") for k, v in obj["binaryData"].items()})
    return data
