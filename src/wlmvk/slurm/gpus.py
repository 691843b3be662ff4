"""GPUs between Kubernetes and Slurm: extended resource names <-> GRES types, one rule both ways.

The NVIDIA device plugin names what a container asks for: ``nvidia.com/gpu`` (any GPU), and
with its ``mixed`` MIG strategy one resource per MIG profile, ``nvidia.com/mig-1g.10gb``. A
site names its GPU kinds with Slurm GRES types (``Gres=gpu:a100:4``). So:

- ``nvidia.com/gpu: N`` -> ``--gres=gpu:N`` (any type Slurm has);
- ``nvidia.com/mig-<profile>: N`` -> ``--gres=gpu:<profile>:N``;
- ``nvidia.com/gpu.<type>: N`` -> ``--gres=gpu:<type>:N``;
- a site's own names, ``Mapping`` resource name -> GRES type (``nvidia.com/a100 -> a100``,
  as the device plugin's ``resources.gpus`` renaming names them), win over the above.

A node advertises each Slurm type under the name a pod asks for it by (the site's name, else
``mig-`` for a MIG profile such as ``1g.10gb``, else ``gpu.<type>``) and every GPU under
``nvidia.com/gpu``. A container asks for one kind only (the device plugin's own rule: CUDA
uses one kind at a time), in whole numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wlmvk.core import quantities
from wlmvk.core.errors import InvalidInput

VENDOR = "nvidia.com/"
ANY = f"{VENDOR}gpu"
MIG = f"{VENDOR}mig-"
TYPED = f"{VENDOR}gpu."
_MIG_PROFILE = re.compile(r"\d+g\.\d+gb(\+me)?")
_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


@dataclass(frozen=True)
class Request:
    """What one container asks: ``count`` GPUs of Slurm type ``kind`` ("" = any), by ``resource``."""

    resource: str
    kind: str
    count: int

    @property
    def gres(self) -> str:
        return f"gpu:{self.kind}:{self.count}" if self.kind else f"gpu:{self.count}"


def slurm_type(resource: str, names: Mapping[str, str] | None = None) -> str | None:
    """The GRES type ``resource`` asks for ("" = any GPU), or None when it is not a GPU resource."""
    if names and resource in names:
        return names[resource]
    if resource == ANY:
        return ""
    for prefix in (MIG, TYPED):
        if resource.startswith(prefix) and _TYPE.fullmatch(resource[len(prefix) :]):
            return resource[len(prefix) :]
    return None


def resource_name(kind: str, names: Mapping[str, str] | None = None) -> str:
    """The extended resource a pod asks for GPUs of Slurm type ``kind`` by ("" = ``nvidia.com/gpu``)."""
    if not kind:
        return ANY
    for resource, mapped in sorted((names or {}).items()):
        if mapped == kind:
            return resource
    return f"{MIG}{kind}" if _MIG_PROFILE.fullmatch(kind) else f"{TYPED}{kind}"


def request(amounts: Mapping[str, Any], names: Mapping[str, str] | None = None) -> Request | None:
    """The GPUs of a container's resources (limits over requests, merged), None when it asks none.

    ``InvalidInput`` for two kinds at once or a count that is not a whole number.
    """
    asked: list[Request] = []
    for resource, amount in sorted(amounts.items()):
        kind = slurm_type(resource, names)
        if kind is None:
            continue
        try:
            value = quantities.parse_quantity(amount)
        except InvalidInput as exc:
            raise InvalidInput(f"{resource}: {exc.message}") from exc
        if value.denominator != 1:
            raise InvalidInput(f"{resource}: a GPU count is a whole number, not {amount!r}")
        if value > 0:
            asked.append(Request(resource, kind, int(value)))
    if len(asked) > 1:
        kinds = " and ".join(f"{r.resource}: {r.count}" for r in asked)
        raise InvalidInput(f"asks for {kinds}: a container's GPUs are of one kind (one resource name)")
    return asked[0] if asked else None


def capacity(per_type: Mapping[str, int], names: Mapping[str, str] | None = None) -> dict[str, int]:
    """Slurm's GPUs per type ("" untyped) -> extended resources: every GPU under ``nvidia.com/gpu``,
    each type under its own name too."""
    out = {ANY: sum(per_type.values())} if per_type else {}
    for kind, count in per_type.items():
        if kind:
            name = resource_name(kind, names)
            out[name] = out.get(name, 0) + count
    return out


def allocatable(total: Mapping[str, int], used: Mapping[str, int], held: Mapping[str, int]) -> dict[str, int]:
    """What the scheduler may still place: ``total`` less what Slurm says is used (``used``), except
    what this node's own pods hold (``held``), which the scheduler counts against it already."""
    return {
        name: max(0, count - max(0, used.get(name, 0) - held.get(name, 0))) for name, count in total.items()
    }
