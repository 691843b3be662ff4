"""SlurmJob and WlmJob objects as typed values.

The API server has already checked the schema (manifests/crds); what is read here
is what the schema cannot say: that ``prepare.to`` and ``results.from`` stay
inside the job's working directory. ``parse`` raises ``InvalidInput`` with a
message meant for the user.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerOptions
from wlmvk.core.names import API_VERSION
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body

Kind = Literal["SlurmJob", "WlmJob"]
KINDS: tuple[Kind, ...] = ("SlurmJob", "WlmJob")


@dataclass(frozen=True)
class Staging:
    """A volume and a path relative to the job's working directory."""

    path: str
    volume: Mapping[str, Any]

    @property
    def volume_name(self) -> str:
        return str(self.volume.get("name", ""))


@dataclass(frozen=True)
class ContainerResources:
    nodes: int = 0
    cpu_per_node: int = 0
    mem_per_node: int = 0
    wall_time: int = 0


@dataclass(frozen=True)
class Job:
    """A SlurmJob or WlmJob, as far as reconciliation needs it."""

    kind: Kind
    namespace: str
    name: str
    uid: str
    generation: int = 0
    batch: str = ""
    image: str = ""
    options: ContainerOptions = field(default_factory=ContainerOptions)
    resources: ContainerResources = field(default_factory=ContainerResources)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    prepare: Staging | None = None
    results: Staging | None = None
    status: Mapping[str, Any] = field(default_factory=dict)
    deleting: bool = False

    @property
    def job_pod_name(self) -> str:
        return f"{self.name}-job" if self.kind == "SlurmJob" else f"{self.name}-wlm-job"

    @property
    def prepare_pod_name(self) -> str:
        return f"{self.job_pod_name}-prepare"

    @property
    def collect_pod_name(self) -> str:
        return f"{self.job_pod_name}-collect"

    def working_dir(self, root: str) -> str:
        """The job's own directory on the WLM side: two jobs never share one."""
        return posixpath.join(root, self.namespace, f"{self.name}-{self.uid}")

    def owner_reference(self) -> Body:
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def reference(self) -> Body:
        """Enough of the object for an Event's involvedObject."""
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "metadata": {"name": self.name, "namespace": self.namespace, "uid": self.uid},
        }


def parse(body: Body) -> Job:
    """The typed job, with its staging paths checked. Raises InvalidInput."""
    metadata, spec = objects.meta(body), objects.spec(body)
    kind = body.get("kind")
    if kind not in KINDS:
        raise InvalidInput(f"not a SlurmJob or WlmJob: {kind!r}")
    return Job(
        kind=kind,
        namespace=objects.namespace(body) or "default",
        name=objects.name(body),
        uid=objects.uid(body),
        generation=int(metadata.get("generation") or 0),
        batch=str(spec.get("batch") or ""),
        image=str(spec.get("image") or ""),
        options=_options(spec.get("options") or {}),
        resources=_resources(spec.get("resources") or {}),
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
        prepare=_staging(spec.get("prepare"), "to") if kind == "SlurmJob" else None,
        results=_staging(spec.get("results"), "from"),
        status=dict(objects.status(body)),
        deleting=objects.deleting(body),
    )


def confined(path: str, *, field_name: str) -> str:
    """``path`` normalised, refused when it is absolute or climbs out of the working directory."""
    if not path:
        raise InvalidInput(f"{field_name} is empty")
    if path.startswith("/"):
        raise InvalidInput(f"{field_name} {path!r} must be relative to the job's working directory")
    if "\x00" in path:
        raise InvalidInput(f"{field_name} contains a NUL byte")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise InvalidInput(f"{field_name} {path!r} escapes the job's working directory")
    return normal


def _staging(value: Any, key: str) -> Staging | None:
    if not value:
        return None
    section = "prepare" if key == "to" else "results"
    path = confined(str(value.get(key) or ""), field_name=f"spec.{section}.{key}")
    volume = dict(value.get("mount") or {})
    if not volume.get("name"):
        raise InvalidInput(f"spec.{section}.mount needs a name")
    if section == "results" and path == ".":
        raise InvalidInput("spec.results.from must name a file or directory inside the working directory")
    return Staging(path=path, volume=volume)


def _options(value: Mapping[str, Any]) -> ContainerOptions:
    return ContainerOptions(
        app=str(value.get("app") or ""),
        allow_unsigned=bool(value.get("allowUnsigned")),
        binds=tuple(str(b) for b in value.get("binds") or ()),
        clear_env=bool(value.get("cleanEnv") or value.get("clearEnv")),
        fake_root=bool(value.get("fakeRoot")),
        host_name=str(value.get("hostName") or ""),
        ipc=bool(value.get("ipc")),
        pid=bool(value.get("pid")),
        no_privs=bool(value.get("noPrivs")),
        writable=bool(value.get("writable")),
    )


def _resources(value: Mapping[str, Any]) -> ContainerResources:
    def number(key: str) -> int:
        raw = value.get(key) or 0
        try:
            return max(int(raw), 0)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"spec.resources.{key} must be an integer, not {raw!r}") from exc

    return ContainerResources(
        nodes=number("nodes"),
        cpu_per_node=number("cpuPerNode"),
        mem_per_node=number("memPerNode"),
        wall_time=number("wallTime"),
    )
