"""The pods a SlurmJob or WlmJob owns, as bodies: job, prepare and collect.

- The job pod is a placeholder the scheduler places on a partition's virtual
  node; the kubelet there reads the script (or the container job) from its
  annotations and submits it. Container ``jt1`` (``jt2`` for a WlmJob) with
  image ``no-image``, as the original.
- Staging pods run ``wlmvk stage in|out`` on the agent host of the partition,
  where the red-box socket is, with the user's volume and the socket mounted,
  as the configured UID/GID.

Every pod has a controller ownerReference to its resource: deleting the
resource deletes them (and the kubelet cancels the job).
"""

from __future__ import annotations

import hashlib
import posixpath

from wlmvk.core import containerjob, names
from wlmvk.core.jobs import ContainerJobSpec
from wlmvk.kube.bodies import Body
from wlmvk.operator import placement
from wlmvk.operator.directives import Requirements
from wlmvk.operator.resources import Job, Staging
from wlmvk.operator.settings import START_GRACE, StagingSettings

MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "wlmvk-operator"
LABEL_JOB = f"{names.GROUP}/job"
LABEL_ROLE = f"{names.GROUP}/role"
# On the prepare pod: the virtual node chosen for the job, so that the job pod
# goes where the data went (also after an operator restart).
ANNOTATION_TARGET_NODE = f"{names.GROUP}/target-node"

# The DIRECTORY of red-box's socket on the agent host is mounted here, not the socket file: a
# bind mount pins the file it was made of, and red-box restarting or its SSH forward coming back
# (StreamLocalBindUnlink) puts a new socket at the path, which a pinned mount never sees.
SOCKET_DIR_MOUNT = "/var/run/wlmvk-red-box"
SOCKET_VOLUME = "wlmvk-red-box-socket"
COLLECT_MOUNT = "/collect"


def label_value(name: str) -> str:
    """A label value for a resource name (names may be longer than the 63 characters a label holds)."""
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-.')}-{digest}"


def _metadata(job: Job, name: str, role: str, annotations: dict[str, str] | None = None) -> Body:
    metadata: Body = {
        "name": name,
        "namespace": job.namespace,
        "labels": {MANAGED_BY: OPERATOR, LABEL_JOB: label_value(job.name), LABEL_ROLE: role},
        "ownerReferences": [job.owner_reference()],
    }
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def container_job(job: Job) -> str:
    """The WlmJob's container request as the kubelet reads it (see ``core.containerjob``)."""
    r = job.resources
    spec = ContainerJobSpec(
        image=job.image,
        options=job.options,
        nodes=r.nodes,
        cpu_per_node=r.cpu_per_node,
        mem_per_node=r.mem_per_node,
        wall_time=r.wall_time,
    )
    return containerjob.encode(spec)


def requirements_of(job: Job, request: Requirements) -> Requirements:
    """A WlmJob's request comes from spec.resources, a SlurmJob's from its directives."""
    if job.kind == "SlurmJob":
        return request
    r = job.resources
    return Requirements(
        nodes=r.nodes, wall_time=r.wall_time, mem_per_node=r.mem_per_node, cpu_per_node=r.cpu_per_node
    )


def job_pod(
    job: Job, request: Requirements, *, working_dir: str, pinned: dict[str, str] | None = None
) -> Body:
    """The placeholder pod the kubelet turns into the WLM job."""
    annotations = {names.ANNOTATION_WORKING_DIR: working_dir}
    if job.kind == "SlurmJob":
        annotations[names.ANNOTATION_BATCH] = job.batch
    else:
        annotations[names.ANNOTATION_CONTAINER_JOB] = container_job(job)
    spec: Body = {
        "restartPolicy": "Never",
        "containers": [{"name": "jt1" if job.kind == "SlurmJob" else "jt2", "image": "no-image"}],
        "nodeSelector": {**placement.node_selector(job.node_selector), **(pinned or {})},
        "tolerations": placement.job_tolerations(),
    }
    affinity = placement.affinity(request)
    if affinity is not None:
        spec["affinity"] = affinity
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(job, job.job_pod_name, "job", annotations),
        "spec": spec,
    }


def prepare_pod(
    job: Job, staging: Staging, *, working_dir: str, node: Body, socket: str, settings: StagingSettings
) -> Body:
    """``wlmvk stage in``: the volume's contents into ``<working_dir>/<to>/<volume name>/``."""
    mount = f"/mnt/{staging.volume_name}"
    target = posixpath.normpath(posixpath.join(working_dir, staging.path))
    argv = ["stage", "in", "--socket", _mounted(socket), "--from", mount, "--to", target]
    annotations = {
        ANNOTATION_TARGET_NODE: str(node["metadata"]["name"]),
        names.ANNOTATION_WORKING_DIR: working_dir,
    }
    return _staging_pod(
        job, job.prepare_pod_name, "prepare", "pr1", argv, staging, mount, node, socket, settings, annotations
    )


def collect_pod(
    job: Job, staging: Staging, *, working_dir: str, node: Body, socket: str, settings: StagingSettings
) -> Body:
    """``wlmvk stage out``: ``<working_dir>/<from>`` into the volume, under its base name."""
    source = posixpath.normpath(posixpath.join(working_dir, staging.path))
    argv = ["stage", "out", "--socket", _mounted(socket), "--from", source, "--to", COLLECT_MOUNT]
    annotations = {names.ANNOTATION_WORKING_DIR: working_dir}
    return _staging_pod(
        job, job.collect_pod_name, "collect", "cr1", argv, staging, COLLECT_MOUNT, node, socket, settings,
        annotations,
    )  # fmt: skip


def socket_of(node: Body, settings: StagingSettings) -> str:
    """Host path of the node's own red-box socket on its agent host."""
    return placement.socket_path(node, settings.socket_host_path)


def _mounted(socket: str) -> str:
    """Where the staging command finds the socket ``socket`` (a host path): in the mounted directory."""
    return posixpath.join(SOCKET_DIR_MOUNT, posixpath.basename(socket))


def _staging_pod(
    job: Job,
    name: str,
    role: str,
    container: str,
    argv: list[str],
    staging: Staging,
    mount_path: str,
    node: Body,
    socket: str,
    settings: StagingSettings,
    annotations: dict[str, str],
) -> Body:
    command = list(settings.command)
    argv = [*argv, "--timeout", str(settings.timeout)]
    volume = dict(staging.volume)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(job, name, role, annotations),
        "spec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": settings.timeout + START_GRACE,
            "nodeSelector": {names.LABEL_HOSTNAME: placement.agent_host(node)},
            # The agent host may be a control-plane node.
            "tolerations": [
                {
                    "key": "node-role.kubernetes.io/control-plane",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                },
                {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "securityContext": {
                "runAsUser": settings.run_as_user,
                "runAsGroup": settings.run_as_group,
                "runAsNonRoot": settings.run_as_user != 0,
            },
            "containers": [
                {
                    "name": container,
                    "image": settings.image,
                    "imagePullPolicy": settings.image_pull_policy,
                    **({"command": command[:1]} if command else {}),
                    "args": command[1:] + argv,
                    "env": [{"name": key, "value": value} for key, value in settings.env],
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    "volumeMounts": [
                        {"name": volume["name"], "mountPath": mount_path},
                        {"name": SOCKET_VOLUME, "mountPath": SOCKET_DIR_MOUNT},
                    ],
                }
            ],
            "volumes": [
                volume,
                {
                    "name": SOCKET_VOLUME,
                    "hostPath": {
                        "path": posixpath.dirname(socket),
                        "type": "Directory",
                    },
                },
            ],
        },
    }
