from __future__ import annotations

from dataclasses import replace

from wlmvk import __version__
from wlmvk.core import names
from wlmvk.core.jobs import Feature, GpuKind, PartitionResources
from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk.kubelet.node import nodes
from wlmvk.kubelet.node.controller import resources_from_labels
from wlmvk.slurm.memory import UNLIMITED_MEMORY_MB

# As red-box reports the local Slurm's partitions (slurm-local.md: vm, 2 CPUs, 20000 MB, gpu:2, avx2).
DEBUG = PartitionResources(
    name="debug", nodes=1, cpu_per_node=2, mem_per_node=20000, wall_time=600, gpu_per_node=2,
    features=(Feature("avx2"), Feature("matlab", "r2019", 3)), default=True,
)  # fmt: skip
UNLIMITED = PartitionResources(name="unlimited", nodes=1, cpu_per_node=2, mem_per_node=20000, wall_time=None)
CTX = nodes.NodeContext(cluster="vm", agent_host="host-a", node_ip="10.0.0.5", port=10250, max_pods=110)
UP = nodes.Health(reachable=True, since="2026-12-02T14:00:00Z")
DOWN = nodes.Health(reachable=False, message="connection refused", since="2026-12-02T14:05:00Z")


def test_labels_keep_the_original_keys() -> None:
    labels = nodes.labels(DEBUG, CTX)
    assert labels[names.LABEL_PARTITION] == "debug"
    assert labels[names.LABEL_NODES] == "1"
    assert labels[names.LABEL_CPU_PER_NODE] == "2"
    assert labels[names.LABEL_MEM_PER_NODE] == "20000"
    assert labels[names.LABEL_WALL_TIME] == "600"
    assert labels["wlm.sylabs.io/avx2"] == "true"
    assert labels["wlm.sylabs.io/matlab_r2019"] == "3"
    assert labels["type"] == "virtual-kubelet"
    assert labels["kubernetes.io/role"] == "agent"
    assert labels["kubernetes.io/hostname"] == "slurm-vm-debug"
    assert labels["kubernetes.io/os"] == "linux"
    assert labels[names.LABEL_CLUSTER] == "vm"
    assert labels[names.LABEL_AGENT_HOST] == "host-a"


def test_unlimited_wall_time_still_compares_above_any_request() -> None:
    assert int(nodes.labels(UNLIMITED, CTX)[names.LABEL_WALL_TIME]) > 10 * 365 * 86400


def test_capacity_is_nodes_times_per_node() -> None:
    cap = nodes.capacity(PartitionResources("p", 3, 4, 1000, None, gpu_per_node=2), CTX)
    assert cap == {
        "cpu": "12",
        "memory": "3000Mi",
        "pods": "110",
        "ephemeral-storage": "0",
        "nvidia.com/gpu": "6",
    }
    assert "nvidia.com/gpu" not in nodes.capacity(UNLIMITED, CTX)


# Two nodes of Gres=gpu:tesla:2,gpu:1g.10gb:4; Slurm says 1 tesla and 3 slices are in use.
TYPED = PartitionResources(
    "gpu", 2, 8, 16000, None, gpu_per_node=6,
    gpu_kinds=(GpuKind("tesla", 2, 4, 1), GpuKind("1g.10gb", 4, 8, 3)),
)  # fmt: skip


def test_capacity_has_gpus_per_type_and_allocatable_what_slurm_says_is_free() -> None:
    status = nodes.status(TYPED, CTX, UP, heartbeat="", ready_since="")
    gpus = {k: v for k, v in status["capacity"].items() if "/" in k}
    assert gpus == {"nvidia.com/gpu": "12", "nvidia.com/gpu.tesla": "4", "nvidia.com/mig-1g.10gb": "8"}
    free = {k: v for k, v in status["allocatable"].items() if "/" in k}
    assert free == {"nvidia.com/gpu": "8", "nvidia.com/gpu.tesla": "3", "nvidia.com/mig-1g.10gb": "5"}
    assert status["allocatable"]["cpu"] == status["capacity"]["cpu"] == "16"


def test_gpus_this_nodes_running_pods_hold_stay_allocatable() -> None:
    """The scheduler counts its own pods' requests against allocatable: not twice."""
    held = {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/gpu": 1}
    status = nodes.status(TYPED, CTX, UP, heartbeat="", ready_since="", held=held)
    free = {k: v for k, v in status["allocatable"].items() if "/" in k}
    assert free == {"nvidia.com/gpu": "9", "nvidia.com/gpu.tesla": "3", "nvidia.com/mig-1g.10gb": "7"}


def test_a_sites_gpu_names_name_the_types() -> None:
    ctx = replace(CTX, gpu_names={"nvidia.com/t4": "tesla"})
    cap = nodes.capacity(TYPED, ctx)
    assert (cap.get("nvidia.com/t4"), "nvidia.com/gpu.tesla" in cap) == ("4", False)


def test_gpus_in_use_are_not_part_of_what_the_partition_is() -> None:
    busier = replace(TYPED, gpu_kinds=(GpuKind("tesla", 2, 4, 4), GpuKind("1g.10gb", 4, 8, 0)))
    assert busier != TYPED
    assert busier.settled() == TYPED.settled()
    assert nodes.labels(busier, CTX) == nodes.labels(TYPED, CTX)


def test_no_known_memory_limit_fits_any_request_and_reads_back() -> None:
    # An original red-box's memPerNode -1: a label above any --mem, a capacity above any request.
    res = PartitionResources("p", 2, 4, -1, None)
    labels = nodes.labels(res, CTX)
    assert labels[names.LABEL_MEM_PER_NODE] == str(UNLIMITED_MEMORY_MB)
    assert nodes.capacity(res, CTX)["memory"] == f"{2 * UNLIMITED_MEMORY_MB}Mi"
    assert resources_from_labels(labels).mem_per_node == -1


def test_node_object() -> None:
    body = nodes.node_object(
        DEBUG, CTX, UP, heartbeat="2026-12-02T14:10:00Z", ready_since="2026-12-02T14:00:00Z"
    )
    assert body["metadata"]["name"] == "slurm-vm-debug"
    assert body["spec"]["taints"] == [
        {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}
    ]
    status = body["status"]
    assert status["addresses"][0] == {"type": "InternalIP", "address": "10.0.0.5"}
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
    assert status["nodeInfo"]["kubeletVersion"] == f"{KUBERNETES_VERSION}+wlmvk-{__version__}"
    assert status["allocatable"] == status["capacity"]
    ready = {c["type"]: c for c in status["conditions"]}
    assert ready["Ready"]["status"] == "True"
    assert ready["WLMReachable"]["status"] == "True"


def test_unreachable_red_box_makes_the_node_not_ready() -> None:
    conditions = {c["type"]: c for c in nodes.conditions(DEBUG, DOWN, heartbeat="h", ready_since="s")}
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Ready"]["reason"] == "WLMUnreachable"
    assert "connection refused" in conditions["Ready"]["message"]
    assert conditions["WLMReachable"]["status"] == "False"


def test_partition_down_makes_the_node_not_ready() -> None:
    down = PartitionResources("debug", 1, 2, 100, 60, state="DOWN")
    conditions = {c["type"]: c for c in nodes.conditions(down, UP, heartbeat="h", ready_since="s")}
    assert conditions["Ready"]["reason"] == "PartitionNotUp"


def test_visible_ignores_heartbeats() -> None:
    one = nodes.status(DEBUG, CTX, UP, heartbeat="a", ready_since="s")
    two = nodes.status(DEBUG, CTX, UP, heartbeat="b", ready_since="s")
    assert one != two
    assert nodes.visible(one) == nodes.visible(two)


def test_resources_from_labels_round_trip() -> None:
    for res in (DEBUG, UNLIMITED):
        back = resources_from_labels(nodes.labels(res, CTX))
        assert (back.name, back.nodes, back.cpu_per_node, back.mem_per_node, back.wall_time) == (
            res.name, res.nodes, res.cpu_per_node, res.mem_per_node, res.wall_time,
        )  # fmt: skip


def test_a_node_of_an_original_red_box_says_it_ignores_the_working_dir() -> None:
    old = replace(CTX, original_api=True)
    args = {"heartbeat": "2026-12-02T14:10:00Z", "ready_since": "2026-12-02T14:00:00Z"}
    annotations = nodes.node_object(DEBUG, old, UP, **args)["metadata"]["annotations"]
    assert annotations[names.ANNOTATION_WORKING_DIR_IGNORED] == "true"
    assert (
        names.ANNOTATION_WORKING_DIR_IGNORED
        not in nodes.node_object(DEBUG, CTX, UP, **args)["metadata"]["annotations"]
    )


def test_a_node_names_its_own_resource_metrics_path() -> None:
    """metrics-server scrapes the path of this annotation: several nodes share one kubelet address."""
    args = {"heartbeat": "2026-12-02T14:10:00Z", "ready_since": "2026-12-02T14:00:00Z"}
    body = nodes.node_object(DEBUG, CTX, UP, **args)
    name = body["metadata"]["name"]
    assert (
        body["metadata"]["annotations"]["metrics.k8s.io/resource-metrics-path"] == f"/metrics/resource/{name}"
    )


def test_a_node_publishes_each_tenant_users_red_box_socket_for_staging() -> None:
    args = {"heartbeat": "2026-12-02T14:10:00Z", "ready_since": "2026-12-02T14:00:00Z"}
    tenants = replace(
        CTX, red_boxes=(("bob", "/run/wlmvk/bob/rb.sock"), ("alice", "/run/wlmvk/alice/rb.sock"))
    )
    annotations = nodes.node_object(DEBUG, tenants, UP, **args)["metadata"]["annotations"]
    assert annotations[names.ANNOTATION_RED_BOX_SOCKETS] == (
        '{"alice": "/run/wlmvk/alice/rb.sock", "bob": "/run/wlmvk/bob/rb.sock"}'
    )
    assert (
        names.ANNOTATION_RED_BOX_SOCKETS
        not in nodes.node_object(DEBUG, CTX, UP, **args)["metadata"]["annotations"]
    )
