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


def test_operators() -> None:
    labels = {"a": "1", "b": "x"}
    node = {"metadata": {"name": "n", "labels": labels}}

    def term(*expressions: dict) -> dict:  # type: ignore[type-arg]
        return {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
                    }
                }
            }
        }

    assert placement.fits(term({"key": "b", "operator": "In", "values": ["x", "y"]}), node)
    assert not placement.fits(term({"key": "b", "operator": "NotIn", "values": ["x"]}), node)
    assert placement.fits(term({"key": "c", "operator": "DoesNotExist"}), node)
    assert placement.fits(term({"key": "a", "operator": "Lt", "values": ["2"]}), node)
    assert not placement.fits(term({"key": "b", "operator": "Gt", "values": ["0"]}), node)
    assert not placement.fits(term(), node)


def test_pin_selects_exactly_one_node() -> None:
    assert placement.pin(NODES[0]) == {names.LABEL_HOSTNAME: "slurm-c1-debug"}
    node = virtual_node("debug")
    del node["metadata"]["labels"][names.LABEL_HOSTNAME]
    assert placement.pin(node) == {names.LABEL_PARTITION: "debug", names.LABEL_AGENT_HOST: "host1"}
