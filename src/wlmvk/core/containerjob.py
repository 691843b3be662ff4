"""The container-job annotation: a WlmJob's request, from the operator to the kubelet.

The operator puts it on the WlmJob's job pod (``names.ANNOTATION_CONTAINER_JOB``);
the kubelet turns it into ``Backend.submit_container``. The JSON is the
WlmJob spec's own shape, so a user reading the pod recognises it::

    {"image": "library://sylabsed/examples/lolcow",
     "options": {"app": "", "allowUnsigned": false, "binds": [], "cleanEnv": false,
                 "fakeRoot": false, "hostName": "", "ipc": false, "pid": false,
                 "noPrivs": false, "writable": false},
     "resources": {"nodes": 1, "cpuPerNode": 1, "memPerNode": 256, "wallTime": 300}}

``memPerNode`` is in MB and ``wallTime`` in seconds; absent keys mean zero or
false. ``decode`` gives a ``ContainerJobSpec`` without partition, key, name
or directories: the kubelet fills those in.
"""

from __future__ import annotations

import json
from typing import Any

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerJobSpec, ContainerOptions

_FLAGS = {
    "allowUnsigned": "allow_unsigned",
    "cleanEnv": "clear_env",
    "fakeRoot": "fake_root",
    "ipc": "ipc",
    "pid": "pid",
    "noPrivs": "no_privs",
    "writable": "writable",
}
_RESOURCES = {
    "nodes": "nodes",
    "cpuPerNode": "cpu_per_node",
    "memPerNode": "mem_per_node",
    "wallTime": "wall_time",
}


def encode(spec: ContainerJobSpec) -> str:
    """The annotation value of a container job request."""
    options = spec.options
    return json.dumps(
        {
            "image": spec.image,
            "options": {
                "app": options.app,
                "binds": list(options.binds),
                "hostName": options.host_name,
                **{key: bool(getattr(options, attr)) for key, attr in _FLAGS.items()},
            },
            "resources": {key: int(getattr(spec, attr)) for key, attr in _RESOURCES.items()},
        },
        sort_keys=True,
    )


def decode(text: str) -> ContainerJobSpec:
    """The request in an annotation value; InvalidInput when it is not one."""
    try:
        raw: Any = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"container job annotation is not JSON: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("image"), str) or not raw["image"]:
        raise InvalidInput("container job annotation needs a non-empty image")
    options = raw.get("options", {})
    resources = raw.get("resources", {})
    if not isinstance(options, dict) or not isinstance(resources, dict):
        raise InvalidInput("container job annotation: options and resources must be objects")
    binds = options.get("binds") or []
    if not isinstance(binds, list) or not all(isinstance(b, str) for b in binds):
        raise InvalidInput("container job annotation: options.binds must be a list of strings")
    numbers: dict[str, int] = {}
    for key, attr in _RESOURCES.items():
        value = resources.get(key) or 0
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidInput(f"container job annotation: resources.{key} must be a non-negative integer")
        numbers[attr] = value
    return ContainerJobSpec(
        image=raw["image"],
        options=ContainerOptions(
            app=str(options.get("app") or ""),
            binds=tuple(binds),
            host_name=str(options.get("hostName") or ""),
            **{attr: bool(options.get(key)) for key, attr in _FLAGS.items()},
        ),
        nodes=numbers["nodes"],
        cpu_per_node=numbers["cpu_per_node"],
        mem_per_node=numbers["mem_per_node"],
        wall_time=numbers["wall_time"],
    )
