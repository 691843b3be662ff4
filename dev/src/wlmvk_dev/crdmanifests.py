"""The SlurmJob, WlmJob and SlurmTenant CustomResourceDefinitions, from one source.

The definitions are built here, at development time: ``manifests/crds/*.yaml`` are
written from them (``python -m wlmvk_dev.crdmanifests manifests/crds``) and a test checks
that the files are up to date, so there is one copy to maintain; the product reads
none of this at run time (the API server serves the applied manifests). Field
names, types and required fields are the original's (wlm.sylabs.io
v1alpha1), so its examples apply unchanged; an invalid resource is refused
by the API server with 422.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from wlmvk.core.names import GROUP, VERSION

Schema = dict[str, Any]

STATUS_VALUES = ("Pending", "Preparing", "Running", "Collecting", "Succeeded", "Failed", "Cancelled")


def _string(description: str = "", **extra: Any) -> Schema:
    return {"type": "string", **({"description": description} if description else {}), **extra}


def _volume(description: str) -> Schema:
    # A core/v1 Volume: its many source kinds are kept as given and checked by the pod that mounts it.
    return {
        "type": "object",
        "description": description,
        "required": ["name"],
        "properties": {"name": _string("Volume name; the data appears under this name.", minLength=1)},
        "x-kubernetes-preserve-unknown-fields": True,
    }


def _node_selector() -> Schema:
    return {
        "type": "object",
        "description": "Labels the partition's virtual node must have.",
        "additionalProperties": {"type": "string"},
    }


def _results() -> Schema:
    return {
        "type": "object",
        "description": "Collect a file or directory of the job's working directory into a volume.",
        "required": ["from", "mount"],
        "properties": {
            "from": _string("Path relative to the job's working directory.", minLength=1),
            "mount": _volume("Where the results go; they appear under their base name."),
        },
    }


def _prepare() -> Schema:
    return {
        "type": "object",
        "description": "Upload a volume's contents before the job runs.",
        "required": ["to", "mount"],
        "properties": {
            "to": _string("Directory relative to the job's working directory.", minLength=1),
            "mount": _volume("The data to upload; it lands in <to>/<mount.name>/."),
        },
    }


def _status() -> Schema:
    condition = {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": _string(),
            "status": _string(enum=["True", "False", "Unknown"]),
            "reason": _string(),
            "message": _string(),
            "lastTransitionTime": _string(format="date-time"),
        },
    }
    return {
        "type": "object",
        "properties": {
            "status": _string("Pending, Preparing, Running, Collecting, Succeeded, Failed or Cancelled."),
            "reason": _string(),
            "message": _string(),
            "jobId": _string("The WLM job id."),
            "partition": _string(),
            "node": _string("The virtual node (partition) the job runs on."),
            "workingDir": _string("The job's working directory on the WLM side."),
            "startTime": _string(format="date-time"),
            "completionTime": _string(format="date-time"),
            "exitCode": {"type": "integer"},
            "observedGeneration": {"type": "integer", "format": "int64"},
            "conditions": {"type": "array", "items": condition},
        },
    }


def _columns() -> list[Schema]:
    return [
        {"name": "Status", "type": "string", "jsonPath": ".status.status"},
        {"name": "Job ID", "type": "string", "jsonPath": ".status.jobId"},
        {"name": "Partition", "type": "string", "jsonPath": ".status.partition"},
        {"name": "Node", "type": "string", "jsonPath": ".status.node", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


IMMUTABLE = "spec is immutable: a job runs once; delete it and create it again to run a changed spec"


def _immutable(spec: Schema) -> Schema:
    """The spec, frozen after creation by a CEL transition rule, as a Job's pod template is."""
    return {**spec, "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": IMMUTABLE}]}


def _crd(
    kind: str,
    plural: str,
    short: str,
    spec: Schema,
    *,
    scope: str = "Namespaced",
    columns: list[Schema] | None = None,
    status: Schema | None = None,
) -> dict[str, Any]:
    """A CRD of one served version with a status subresource; a job's (the defaults) has its
    spec frozen after creation, its status and its columns."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": _columns() if columns is None else columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": _immutable(spec) if status is None else spec,
                                "status": _status() if status is None else status,
                            },
                        }
                    },
                }
            ],
        },
    }


def slurmjob() -> dict[str, Any]:
    spec = {
        "type": "object",
        "required": ["batch"],
        "properties": {
            "batch": _string("The batch script, with #SBATCH directives.", minLength=1),
            "nodeSelector": _node_selector(),
            "prepare": _prepare(),
            "results": _results(),
        },
    }
    return _crd("SlurmJob", "slurmjobs", "sj", spec)


def wlmjob() -> dict[str, Any]:
    flags = ("allowUnsigned", "cleanEnv", "fakeRoot", "ipc", "pid", "noPrivs", "writable")
    options = {
        "type": "object",
        "description": "Singularity/Apptainer options.",
        "properties": {
            **{flag: {"type": "boolean"} for flag in flags},
            "app": _string(),
            "hostName": _string(),
            "binds": {"type": "array", "items": {"type": "string"}},
        },
    }
    resources = {
        "type": "object",
        "properties": {
            "nodes": {"type": "integer", "format": "int64", "minimum": 0},
            "cpuPerNode": {"type": "integer", "format": "int64", "minimum": 0},
            "memPerNode": {"type": "integer", "format": "int64", "minimum": 0, "description": "MB"},
            "wallTime": {"type": "integer", "format": "int64", "minimum": 0, "description": "seconds"},
        },
    }
    spec = {
        "type": "object",
        "required": ["image"],
        "properties": {
            "image": _string("The container image (docker://..., library://..., or a path).", minLength=1),
            "options": options,
            "resources": resources,
            "nodeSelector": _node_selector(),
            "results": _results(),
        },
    }
    return _crd("WlmJob", "wlmjobs", "wj", spec)


def slurmtenant() -> dict[str, Any]:
    """A site's mapping of namespaces to one Slurm user, account, QoS and partitions (docs/tenancy.md).

    Cluster-scoped: only a cluster admin writes it; the kubelet and the operator read it
    (``manifests/tenants.yaml``). ``core.tenancy`` reads its objects.
    """
    names_list = {"type": "array", "items": _string(minLength=1)}
    spec = {
        "type": "object",
        "required": ["namespaces", "user", "account"],
        "properties": {
            "namespaces": {**names_list, "minItems": 1, "description": "The namespaces this tenant maps."},
            "user": _string("The Slurm (and Unix) user their jobs run as; never root.", minLength=1),
            "account": _string("The Slurm account every job is charged to.", minLength=1),
            "qos": {
                "type": "object",
                "properties": {
                    "default": _string("The QoS of a job that names none (empty: Slurm's default)."),
                    "allowed": {**names_list, "description": "Other QoS a job may name."},
                },
            },
            "partitions": {
                "type": "array",
                "description": "Per cluster, the partitions allowed; omitted: every partition.",
                "items": {
                    "type": "object",
                    "required": ["cluster", "partitions"],
                    "properties": {
                        "cluster": _string(
                            "The <cluster> of the nodes slurm-<cluster>-<partition>.", minLength=1
                        ),
                        "partitions": names_list,
                    },
                },
            },
        },
    }
    condition = _status()["properties"]["conditions"]["items"]
    conditions = {"type": "array", "items": condition}
    generation = {"type": "integer", "format": "int64"}
    cluster = {
        "type": "object",
        "required": ["cluster"],
        "properties": {
            "cluster": _string("The cluster whose kubelet checked the tenant.", minLength=1),
            "observedGeneration": generation,
            "lastCheckTime": _string(format="date-time"),
            "conditions": {**conditions, "description": "UserKnown, AccountKnown, QoSKnown and Ready."},
        },
    }
    status = {
        "type": "object",
        "description": "Whether Slurm knows the user, account and QoS, per cluster (docs/tenancy.md).",
        "properties": {
            "conditions": {**conditions, "description": "Ready: every cluster's checks hold."},
            "observedGeneration": generation,
            "clusters": {"type": "array", "items": cluster},
        },
    }
    ready = '.status.conditions[?(@.type=="Ready")]'
    columns: list[Schema] = [
        {"name": "User", "type": "string", "jsonPath": ".spec.user"},
        {"name": "Account", "type": "string", "jsonPath": ".spec.account"},
        {"name": "QoS", "type": "string", "jsonPath": ".spec.qos.default"},
        {"name": "Namespaces", "type": "string", "jsonPath": ".spec.namespaces"},
        {"name": "Ready", "type": "string", "jsonPath": f"{ready}.status"},
        {"name": "Reason", "type": "string", "jsonPath": f"{ready}.reason"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Message", "type": "string", "jsonPath": f"{ready}.message", "priority": 1},
    ]
    return _crd("SlurmTenant", "slurmtenants", "st", spec, scope="Cluster", columns=columns, status=status)


def definitions() -> dict[str, dict[str, Any]]:
    """File name -> CRD, as written to manifests/crds/."""
    return {"slurmjobs.yaml": slurmjob(), "wlmjobs.yaml": wlmjob(), "slurmtenants.yaml": slurmtenant()}


def render(crd: dict[str, Any]) -> str:
    header = (
        "# Generated by `python -m wlmvk_dev.crdmanifests manifests/crds`:"
        " edit dev/src/wlmvk_dev/crdmanifests.py.\n"
    )
    return header + yaml.safe_dump(crd, sort_keys=False)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m wlmvk_dev.crdmanifests DIRECTORY", file=sys.stderr)
        return 2
    directory = Path(argv[0])
    directory.mkdir(parents=True, exist_ok=True)
    for name, crd in definitions().items():
        (directory / name).write_text(render(crd))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
