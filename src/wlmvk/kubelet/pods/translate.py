"""Pod -> Slurm job: pure translation of a pod body into a ``JobSpec``.

Two kinds of pod reach a virtual node:

- the operator's job pods carry the batch script in the
  ``wlm.sylabs.io/batch`` annotation (and their working directory in
  ``wlm.sylabs.io/working-dir``): that script runs as written; a WlmJob's
  pod carries a container-job request instead (``core.containerjob``),
  which becomes a ``ContainerJobSpec`` for red-box's SubmitJobContainer;
- any other pod becomes a ``/bin/sh`` script built from its one container's
  command, args, env and workingDir. When the partition has a container
  runtime the image runs through Apptainer/Singularity (``--nv`` when the pod
  has GPUs: ``core.runtimes.gpu_flags``); otherwise the command
  runs on the compute node and the image is only recorded in a comment
  (``unused_image`` says so, for the pod's condition and Event).

Resources become ``#SBATCH`` options (``--cpus-per-task``, ``--mem``,
``--gres=gpu[:type]:N`` by ``core.gpus``, ``--time`` from ``activeDeadlineSeconds``), each only when
the script does not already set it, and the pod's name is the job's default
name (``core.sbatch`` decides both, with sbatch's rules). What a Slurm job cannot
honour (several containers, init containers, ports, volumes the job cannot
see, env from Secrets), and quantities or a deadline the API server should
have refused (negative, unreadable), is a ``Rejection`` with a reason for the
pod's status and its Event: never a silent drop.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from wlmvk.core import containerjob, names, quantities, runtimes
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerJobSpec, JobSpec, PartitionResources
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body
from wlmvk.kubelet.pods import environment
from wlmvk.slurm import gpus, sbatch

# Volumes a job pod may carry: the API server adds the service-account token volume
# (projected) to every pod; emptyDir and downwardAPI are harmless to ignore.
_IGNORED_VOLUMES = frozenset({"projected", "emptyDir", "downwardAPI"})
_VOLUME_SOURCE_KEYS = frozenset(
    {
        "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs",
        "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
        "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
        "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral",
        "image",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Rejection:
    """Why a pod cannot become a Slurm job: ``reason`` is CamelCase, ``message`` for people."""

    reason: str
    message: str


@dataclass(frozen=True)
class Target:
    """Where the pod runs: the partition of its node, and what that partition offers."""

    partition: str
    container_runtime: bool = False
    # Root of per-pod working directories on the Slurm side ("" = red-box's default).
    jobs_root: str = ""
    # The most GPUs one node of the partition has, per extended resource (None: not known).
    gpus: Mapping[str, int] | None = None
    # The site's GPU resource names -> Slurm GRES types (core.gpus).
    gpu_names: Mapping[str, str] = field(default_factory=dict)
    # red-box's --image-dir ("" = images are pulled) and the SIF files in it.
    image_dir: str = ""
    images: tuple[str, ...] = ()
    # The SIF runtime's flags for a job with GPUs (the kubelet's --sif-gpu-flags).
    sif_gpu_flags: tuple[str, ...] = runtimes.GPU_FLAGS


def target(
    resources: PartitionResources,
    jobs_root: str,
    gpu_names: Mapping[str, str],
    sif_gpu_flags: tuple[str, ...] = runtimes.GPU_FLAGS,
) -> Target:
    """The Target of a partition as red-box reports it: its GPUs are known when reported per type."""
    per_node = {k.kind: k.per_node for k in resources.gpu_kinds}
    known = gpus.capacity(per_node, gpu_names) if resources.gpu_kinds else None
    return Target(
        resources.name,
        resources.container_runtime,
        jobs_root,
        known,
        gpu_names,
        resources.image_dir,
        resources.images,
        sif_gpu_flags,
    )


def gpu_request(pod: Body, gpu_names: Mapping[str, str]) -> gpus.Request | None:
    """The GPUs a pod's container asks for; ``InvalidInput`` for two kinds or a fraction."""
    containers = objects.containers(pod)
    if len(containers) != 1:
        return None
    _check_quantities(containers[0], resources := containers[0].get("resources") or {})
    return gpus.request({**(resources.get("requests") or {}), **(resources.get("limits") or {})}, gpu_names)


@dataclass(frozen=True)
class JobPlan:
    """A pod's Slurm job, translated once on its partition: the job submitted (its name among it)
    and what of the pod it leaves out. The provider carries it from the translation to red-box."""

    spec: JobSpec | ContainerJobSpec
    image_unused: str = ""
    """Why the pod's image does not run there ("" when it does, or the pod is scripted)."""


def plan(pod: Body, target: Target, *, name: str) -> JobPlan | Rejection:
    """The plan of ``pod``'s job on ``target`` named ``name`` (``job_name``, derived once per pod
    by its record), or why it cannot run."""
    spec = pod_to_job(pod, target, name=name)
    if isinstance(spec, Rejection):
        return spec
    return JobPlan(spec, unused_image(pod, target))


def pod_to_job(
    pod: Body, target: Target, *, name: str | None = None
) -> JobSpec | ContainerJobSpec | Rejection:
    """The job that runs ``pod`` on ``target`` (named ``name``, else ``job_name``), or why it cannot run."""
    name = job_name(pod) if name is None else name
    spec = objects.spec(pod)
    annotations = objects.annotations(pod)
    problem = _unsupported(spec)
    if problem is not None:
        return problem
    container_request = annotations.get(names.ANNOTATION_CONTAINER_JOB)
    if container_request is not None:
        return _container_job(pod, container_request, target, name)
    container: Body = spec["containers"][0]
    try:
        asked = gpu_request(pod, target.gpu_names)
        options = _derived_options(container, spec, asked)
    except InvalidInput as exc:
        return Rejection("InvalidResources", exc.message)
    if asked is not None and (problem := _gpus_beyond(asked, target)) is not None:
        return problem
    batch = annotations.get(names.ANNOTATION_BATCH)
    if batch is not None:
        if not batch.strip():
            return Rejection("EmptyBatchScript", f"annotation {names.ANNOTATION_BATCH} is empty")
        script = batch
        working_dir = annotations.get(names.ANNOTATION_WORKING_DIR, "") or _default_dir(pod, target)
    else:
        built = _container_script(pod, container, target, gpus=asked.count if asked else 0)
        if isinstance(built, Rejection):
            return built
        script = built
        working_dir = _default_dir(pod, target)
    try:
        script = sbatch.with_defaults(script, options)
    except InvalidInput as exc:
        return Rejection("InvalidBatchScript", exc.message)
    return JobSpec(
        script=script,
        partition=target.partition,
        idempotency_key=objects.uid(pod),
        name=name,
        working_dir=working_dir,
    )


def _container_job(pod: Body, request: str, target: Target, name: str) -> ContainerJobSpec | Rejection:
    """A WlmJob's pod: the operator's container-job request, run by red-box's SubmitJobContainer."""
    try:
        decoded = containerjob.decode(request)
    except InvalidInput as exc:
        return Rejection("InvalidContainerJob", exc.message)
    annotations = objects.annotations(pod)
    return replace(
        decoded,
        partition=target.partition,
        idempotency_key=objects.uid(pod),
        name=name,
        working_dir=annotations.get(names.ANNOTATION_WORKING_DIR, "") or _default_dir(pod, target),
    )


def unused_image(pod: Body, target: Target) -> str:
    """Why a plain pod's image does not run on ``target`` ("" when it does, or the pod is scripted).

    The API server requires an image on every pod, so the kubelet cannot refuse a pod for one it
    cannot run without making plain pods unusable where no runtime is installed: the command runs
    on the compute node, and the pod says so (a condition and a Warning Event).
    """
    annotations = objects.annotations(pod)
    if names.ANNOTATION_BATCH in annotations or names.ANNOTATION_CONTAINER_JOB in annotations:
        return ""
    containers = objects.containers(pod)
    image = str(containers[0].get("image") or "") if containers else ""
    if not image or target.container_runtime:
        return ""
    return (
        f"image {image!r} is not used: partition {target.partition!r} has neither Apptainer nor"
        " Singularity, so the command runs on the compute node with the software installed there"
    )


def job_name(pod: Body) -> str:
    """The Slurm job name of a pod: its batch script's own ``--job-name``, else the pod's name."""
    name = objects.name(pod) or "pod"
    batch = objects.annotations(pod).get(names.ANNOTATION_BATCH)
    return sbatch.job_name(batch, name) if isinstance(batch, str) else name


def _default_dir(pod: Body, target: Target) -> str:
    if not target.jobs_root:
        return ""
    where = f"{objects.namespace(pod) or 'default'}/{objects.name(pod)}-{objects.uid(pod)[:8]}"
    return f"{target.jobs_root.rstrip('/')}/{where}"


def _unsupported(spec: Body) -> Rejection | None:
    containers = spec.get("containers") or []
    if len(containers) != 1:
        return Rejection(
            "UnsupportedContainers",
            f"a Slurm job runs one container; this pod has {len(containers)}",
        )
    if spec.get("initContainers"):
        return Rejection("UnsupportedInitContainers", "init containers cannot run as part of a Slurm job")
    container: Body = containers[0]
    if container.get("ports"):
        return Rejection("UnsupportedPorts", "container ports cannot be exposed from a Slurm job")
    if container.get("envFrom"):
        return Rejection("UnsupportedEnv", "envFrom (ConfigMap/Secret) is not supported on a Slurm job")
    for volume in spec.get("volumes") or []:
        kinds = [key for key in volume if key in _VOLUME_SOURCE_KEYS]
        if not kinds or any(kind not in _IGNORED_VOLUMES for kind in kinds):
            return Rejection(
                "UnsupportedVolume",
                f"volume {volume.get('name')!r} ({', '.join(kinds) or 'unknown'})"
                " is not visible to a Slurm job;"
                " stage data with a SlurmJob's prepare/results instead",
            )
    return None


def _derived_options(container: Body, spec: Body, asked: gpus.Request | None) -> list[tuple[str, str]]:
    resources: Body = container.get("resources") or {}
    _check_quantities(container, resources)
    limits: Body = resources.get("limits") or {}
    requests: Body = resources.get("requests") or {}
    options: list[tuple[str, str]] = []

    def amount(key: str) -> Any:
        return limits.get(key, requests.get(key))

    cpu = amount("cpu")
    if cpu is not None and quantities.cpus(cpu) > 0:
        options.append(("cpus-per-task", str(quantities.cpus(cpu))))
    memory = amount("memory")
    if memory is not None and quantities.megabytes(memory) > 0:
        options.append(("mem", f"{quantities.megabytes(memory)}M"))
    if asked is not None:
        options.append(("gres", asked.gres))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None:
        seconds = _deadline(deadline)
        options.append(("time", str(max(1, math.ceil(seconds / 60)))))
    return options


def _gpus_beyond(asked: gpus.Request, target: Target) -> Rejection | None:
    """Why the partition can never run ``asked`` (None when it can, or when its GPUs are not known)."""
    if target.gpus is None:
        return None
    most = target.gpus.get(asked.resource, 0)
    if asked.count <= most:
        return None
    offered = ", ".join(f"{name}: {count}" for name, count in sorted(target.gpus.items())) or "none"
    return Rejection(
        "GPUsUnavailable",
        f"the pod asks for {asked.resource}: {asked.count} (--gres={asked.gres}) but a node of"
        f" partition {target.partition!r} has at most {most} ({offered})",
    )


def _check_quantities(container: Body, resources: Body) -> None:
    """Every limit and request a quantity, none negative (as the API server should have checked)."""
    name = container.get("name")
    if not isinstance(resources, dict):
        raise InvalidInput(f"container {name!r}: resources is not a map")
    for kind in ("limits", "requests"):
        amounts = resources.get(kind) or {}
        if not isinstance(amounts, dict):
            raise InvalidInput(f"container {name!r}: resources.{kind} is not a map")
        for key, value in amounts.items():
            where = f"container {name!r}: resources.{kind}.{key}"
            try:
                parsed = quantities.parse_quantity(value)
            except InvalidInput as exc:
                raise InvalidInput(f"{where}: {exc.message}") from exc
            if parsed < 0:
                raise InvalidInput(f"{where}: must not be negative, not {value!r}")


def _deadline(value: Any) -> int:
    """Seconds of ``activeDeadlineSeconds``: a whole number of at least 1, as the API server wants."""
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and value.strip().isdigit():
        seconds = int(value)
    else:
        raise InvalidInput(f"activeDeadlineSeconds must be a whole number of seconds, not {value!r}")
    if seconds < 1:
        raise InvalidInput(f"activeDeadlineSeconds must be at least 1 second, not {seconds}")
    return seconds


def _sif_image(image: str, target: Target) -> str | Rejection:
    """What the runtime runs for ``image``: the SIF file it names in the site's image directory
    (``ImageNotFound`` when there is none), or the image itself when the site has no directory."""
    if not target.image_dir:
        return image
    name = runtimes.sif_name(image)
    if name in target.images:
        return f"{target.image_dir.rstrip('/')}/{name}"
    held = ", ".join(target.images[:20]) or "no SIF file"
    return Rejection(
        "ImageNotFound",
        f"image {image!r}: no {name} in the site's image directory {target.image_dir}"
        f" (red-box --image-dir), which holds {held}",
    )


def _container_script(pod: Body, container: Body, target: Target, *, gpus: int) -> str | Rejection:
    try:
        env = environment.container_env(pod, container)
    except InvalidInput as exc:
        return Rejection("UnsupportedEnv", exc.message)
    command = [str(part) for part in container.get("command") or []]
    args = [str(part) for part in container.get("args") or []]
    image = str(container.get("image", ""))
    lines = [
        "#!/bin/sh",
        f"# wlmvk: pod {objects.namespace(pod)}/{objects.name(pod)},"
        f" container {container.get('name')}, image {image or '-'}",
    ]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in env]
    workdir = container.get("workingDir")
    if workdir:
        lines.append(f"cd {shlex.quote(str(workdir))} || exit 1")
    if target.container_runtime and image:
        resolved = _sif_image(image, target)
        if isinstance(resolved, Rejection):
            return resolved
        lines += runtimes.pod_lines(
            resolved, command, args, gpus=gpus, gpu_flags_of_site=target.sif_gpu_flags
        )
    elif command:
        lines.append(f"exec {shlex.join(command + args)}")
    else:
        return Rejection(
            "NoCommand",
            f"partition {target.partition!r} has no container runtime, so the pod needs a command"
            f" (the entrypoint of image {image!r} is unknown here)",
        )
    return "\n".join(lines) + "\n"
