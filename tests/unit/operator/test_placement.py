"""Evaluating a job pod's selector, affinity and tolerations against virtual nodes."""

from __future__ import annotations

from tests.unit.operator.builders import ordinary_node, virtual_node
from wlmvk.core import names
from wlmvk.operator import placement
from wlmvk.operator.directives import Requirements, requirements


def spec_for(request: Requirements, selector: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    spec = {
        "nodeSelector": placement.node_selector(selector or {}),
        "tolerations": placement.job_tolerations(),
    }
    affinity = placement.affinity(request)
    if affinity:
        spec["affinity"] = affinity
    return spec


NODES = [
    virtual_node("debug", cpus=2, wall=600),
    virtual_node("long", cpus=2, wall=86400),
    virtual_node("gpu", cpus=2, wall=7200, gpus=2, features=("avx2",)),
    virtual_node("big", cpus=8, nodes=4, mem=64000, wall=3600),
    ordinary_node(),
]


def fitting(request: Requirements, selector: dict[str, str] | None = None) -> list[str]:
    return [n["metadata"]["name"] for n in placement.candidates(spec_for(request, selector), NODES)]


def test_nothing_asked_fits_every_virtual_node_never_an_ordinary_one() -> None:
    assert fitting(Requirements()) == ["slurm-c1-big", "slurm-c1-debug", "slurm-c1-gpu", "slurm-c1-long"]


def test_resources_are_greater_than_request_minus_one() -> None:
    assert fitting(requirements("#SBATCH --time=10\n")) == fitting(Requirements())
    assert fitting(requirements("#SBATCH --time=11\n")) == ["slurm-c1-big", "slurm-c1-gpu", "slurm-c1-long"]
    assert fitting(requirements("#SBATCH -N 2\n")) == ["slurm-c1-big"]
    assert fitting(requirements("#SBATCH -c 3\n")) == ["slurm-c1-big"]
    assert fitting(requirements("#SBATCH --mem=30G\n")) == ["slurm-c1-big"]
    assert fitting(requirements("#SBATCH -N 5\n")) == []


def test_gpus_and_features() -> None:
    assert fitting(requirements("#SBATCH --gres=gpu:2\n")) == ["slurm-c1-gpu"]
    assert fitting(requirements("#SBATCH --gres=gpu:3\n")) == []
    assert fitting(requirements("#SBATCH -C avx2\n")) == ["slurm-c1-gpu"]
    assert fitting(requirements("#SBATCH -C 'avx512|avx2'\n")) == ["slurm-c1-gpu"]
    assert fitting(requirements("#SBATCH -C avx512\n")) == []


def test_partition_directive_and_user_selector() -> None:
    assert fitting(requirements("#SBATCH -p long,debug\n")) == ["slurm-c1-debug", "slurm-c1-long"]
    assert fitting(Requirements(), {names.LABEL_HOSTNAME: "slurm-c1-long"}) == ["slurm-c1-long"]


def test_untolerated_taint_and_unready_nodes() -> None:
    spec = {"nodeSelector": placement.node_selector({})}
    assert placement.candidates(spec, NODES) == []
    unready = virtual_node("aaa")
    unready["status"]["conditions"][0]["status"] = "False"
    names_ = [
        n["metadata"]["name"] for n in placement.candidates(spec_for(Requirements()), [unready, NODES[0]])
    ]
    assert names_ == ["slurm-c1-debug", "slurm-c1-aaa"]


def edge(*, expression: dict | None = None, toleration: dict | None = None) -> dict:  # type: ignore[type-arg]
    """A job pod's spec with one more requirement or toleration, as a user's nodeSelector cannot give."""
    spec = spec_for(Requirements())
    if expression is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
        }
    if toleration is not None:
        spec["tolerations"] = [toleration]
    return spec


def candidate_names(spec: dict, nodes: list[dict] = NODES) -> list[str]:  # type: ignore[type-arg]
    return [n["metadata"]["name"] for n in placement.candidates(spec, nodes)]


def test_candidates_follow_kube_schedulers_rules_for_malformed_shapes() -> None:
    # kube-scheduler cannot parse these (kube-apiserver refuses them): they match no node.
    cpus = names.LABEL_CPU_PER_NODE
    assert candidate_names(edge(expression={"key": "zone", "operator": "NotIn"})) == []
    assert candidate_names(edge(expression={"key": cpus, "operator": "Exists", "values": ["2"]})) == []
    assert candidate_names(edge(expression={"key": cpus, "operator": "Gt", "values": ["1", "100"]})) == []
    assert candidate_names(edge(expression={"key": cpus, "operator": "Gt", "values": [" 7"]})) == []
    assert candidate_names(edge(expression={"key": cpus, "operator": "Gt", "values": ["7"]})) == [
        "slurm-c1-big"
    ]


def test_candidates_follow_kube_schedulers_tolerations() -> None:
    provider = {"key": names.TAINT_KEY, "value": names.TAINT_VALUE}
    assert candidate_names(edge(toleration={**provider, "operator": "Bogus"})) == []
    assert candidate_names(edge(toleration={**provider, "operator": "Equal"})) == fitting(Requirements())
    cordoned = virtual_node("debug")
    cordoned["spec"]["unschedulable"] = True
    assert candidate_names(spec_for(Requirements()), [cordoned]) == []
    tolerant = spec_for(Requirements())
    tolerant["tolerations"].append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"})
    assert candidate_names(tolerant, [cordoned]) == ["slurm-c1-debug"]
    # An empty key with Exists tolerates every taint, the cordon's included.
    assert candidate_names(edge(toleration={"operator": "Exists"}), [cordoned]) == ["slurm-c1-debug"]


def test_pin_selects_exactly_one_node() -> None:
    assert placement.pin(NODES[0]) == {names.LABEL_HOSTNAME: "slurm-c1-debug"}
    node = virtual_node("debug")
    del node["metadata"]["labels"][names.LABEL_HOSTNAME]
    assert placement.pin(node) == {names.LABEL_PARTITION: "debug", names.LABEL_AGENT_HOST: "host1"}
