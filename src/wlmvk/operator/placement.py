"""Where a job may run: node selection terms from its request, and their evaluation.

A job's request (``directives.Requirements``) becomes required node
affinity over the partition labels of the virtual nodes, in the original's
form: a label ``Gt`` the request minus one (a partition with 4 CPUs per node
has label 4, a job asking for 4 has ``Gt 3``). Feature constraints become
``Exists`` on feature labels; a ``|`` in ``--constraint`` becomes one
selector term per alternative (Kubernetes ORs the terms).

Kubernetes' scheduler places the job pod. When data must be staged first,
the operator has to know the partition before the job pod exists (the
upload runs on the partition's agent host), so ``candidates`` evaluates the
same selector and affinity against the virtual nodes with the scheduler's
own rules (``core.scheduling``): nodeSelector, required node affinity, taints.

When no node fits, the scheduler's words ("didn't match Pod's node
affinity/selector") do not say which part of the request is to blame:
``unmet`` says it in the request's own terms (no partition of that name,
more CPUs per node than any partition has...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wlmvk.core import names, scheduling
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body
from wlmvk.operator.directives import Requirements


def job_tolerations() -> list[Body]:
    return [
        {
            "key": names.TAINT_KEY,
            "operator": "Equal",
            "value": names.TAINT_VALUE,
            "effect": names.TAINT_EFFECT,
        }
    ]


def node_selector(user: Mapping[str, str]) -> dict[str, str]:
    """``type: virtual-kubelet`` overlaid with the user's nodeSelector (as the original)."""
    return {names.LABEL_TYPE: names.TYPE_VIRTUAL_KUBELET, **user}


def _gt(label: str, amount: int) -> list[Body]:
    return [{"key": label, "operator": "Gt", "values": [str(amount - 1)]}] if amount > 0 else []


def affinity(request: Requirements) -> Body | None:
    """Required node affinity for a request; None when it asks nothing."""
    common: list[Body] = [
        *_gt(names.LABEL_NODES, request.nodes),
        *_gt(names.LABEL_WALL_TIME, request.wall_time),
        *_gt(names.LABEL_MEM_PER_NODE, request.mem_per_node),
        *_gt(names.LABEL_CPU_PER_NODE, request.cpu_per_node),
        *_gt(names.LABEL_GPU_PER_NODE, request.gpu_per_node),
    ]
    if request.partitions:
        common.append({"key": names.LABEL_PARTITION, "operator": "In", "values": list(request.partitions)})
    alternatives = request.constraints or ((),)
    terms = [
        {
            "matchExpressions": common
            + [{"key": names.feature_label(feature), "operator": "Exists"} for feature in alternative]
        }
        for alternative in alternatives
    ]
    if not any(term["matchExpressions"] for term in terms):
        return None
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def pin(node: Body) -> dict[str, str]:
    """Labels that select exactly this virtual node."""
    labels = _labels(node)
    name = objects.name(node)
    if labels.get(names.LABEL_HOSTNAME) == name:
        return {names.LABEL_HOSTNAME: name}
    keep = (names.LABEL_PARTITION, names.LABEL_AGENT_HOST, names.LABEL_CLUSTER)
    return {key: labels[key] for key in keep if key in labels}


def agent_host(node: Body) -> str:
    """The Kubernetes node where the virtual node's kubelet and red-box socket are."""
    return _labels(node).get(names.LABEL_AGENT_HOST, "")


def named(nodes: Iterable[Body], name: str) -> Body | None:
    return next((node for node in nodes if objects.name(node) == name), None)


def ignores_working_dir(node: Body | None) -> bool:
    """Whether the node's red-box serves only the original API, which runs jobs where it stands."""
    return objects.annotations(node or {}).get(names.ANNOTATION_WORKING_DIR_IGNORED) == "true"


def partition_of(node: Body | None) -> str:
    return objects.labels(node).get(names.LABEL_PARTITION, "") if node is not None else ""


def socket_path(node: Body, default: str) -> str:
    """Host path of the red-box socket on the agent host."""
    return str(objects.annotations(node).get(names.ANNOTATION_RED_BOX_SOCKET) or default)


def candidates(pod_spec: Body, nodes: Iterable[Body]) -> list[Body]:
    """The nodes that would accept a pod with this spec; Ready ones first, then by name."""
    fitting = [node for node in nodes if scheduling.fits(pod_spec, node)]
    return sorted(fitting, key=lambda node: (not _ready(node), str(node["metadata"].get("name", ""))))


_AMOUNTS = (
    ("nodes", names.LABEL_NODES, "{} nodes"),
    ("cpu_per_node", names.LABEL_CPU_PER_NODE, "{} CPUs per node"),
    ("mem_per_node", names.LABEL_MEM_PER_NODE, "{} MB of memory per node"),
    ("wall_time", names.LABEL_WALL_TIME, "{} s of wall time"),
    ("gpu_per_node", names.LABEL_GPU_PER_NODE, "{} GPUs per node"),
)


def unmet(request: Requirements, selector: Mapping[str, str], nodes: Iterable[Body]) -> list[str]:
    """What of a job's request no virtual node offers, one sentence each.

    Empty when there is no node to compare with, or when each part alone is
    offered by some node (then only the combination fails, as the scheduler says).
    """
    every = [_labels(node) for node in nodes]
    if not every:
        return []
    problems = []
    missing = sorted(f"{k}={v}" for k, v in selector.items() if not any(n.get(k) == v for n in every))
    if missing:
        problems.append(f"no partition has the labels {', '.join(missing)}")
    scope, offers = every, "a partition offers"
    if request.partitions:
        asked = [n for n in every if n.get(names.LABEL_PARTITION) in request.partitions]
        if not asked:
            known = sorted({n.get(names.LABEL_PARTITION, "") for n in every} - {""})
            problems.append(
                f"no partition named {', '.join(request.partitions)} (partitions: {', '.join(known)})"
            )
        else:
            scope = asked
            found = sorted({n.get(names.LABEL_PARTITION, "") for n in asked})
            offers = f"partition {', '.join(found)} offers"
    for attribute, label, amount in _AMOUNTS:
        wanted: int = getattr(request, attribute)
        most = max(_number(n.get(label)) for n in scope)
        if wanted > most:
            problems.append(f"the job asks for {amount.format(wanted)}; the most {offers} is {most}")
    if request.constraints and not any(
        all(names.feature_label(feature) in n for feature in alternative)
        for n in scope
        for alternative in request.constraints
    ):
        wanted_features = " or ".join("&".join(alternative) for alternative in request.constraints)
        problems.append(f"no partition has the feature(s) {wanted_features}")
    return problems


def _number(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _labels(node: Body) -> dict[str, str]:
    return objects.labels(node)


def _ready(node: Body) -> bool:
    conditions = objects.status(node).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
