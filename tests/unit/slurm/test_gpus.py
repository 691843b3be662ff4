"""GPUs between Kubernetes and Slurm (core.gpus, core.gres.by_type): one rule both ways."""

from __future__ import annotations

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.slurm import gpus, gres

SITE = {"nvidia.com/a100": "a100", "example.com/h100-80gb": "h100"}


@pytest.mark.parametrize(
    ("amounts", "resource", "kind", "line"),
    [
        ({"nvidia.com/gpu": "1"}, "nvidia.com/gpu", "", "gpu:1"),
        ({"nvidia.com/gpu": 4}, "nvidia.com/gpu", "", "gpu:4"),
        ({"nvidia.com/gpu": "2e0"}, "nvidia.com/gpu", "", "gpu:2"),
        ({"nvidia.com/mig-1g.10gb": "1"}, "nvidia.com/mig-1g.10gb", "1g.10gb", "gpu:1g.10gb:1"),
        ({"nvidia.com/mig-3g.20gb": 2}, "nvidia.com/mig-3g.20gb", "3g.20gb", "gpu:3g.20gb:2"),
        ({"nvidia.com/mig-1g.10gb+me": 1}, "nvidia.com/mig-1g.10gb+me", "1g.10gb+me", "gpu:1g.10gb+me:1"),
        ({"nvidia.com/gpu.tesla": "2"}, "nvidia.com/gpu.tesla", "tesla", "gpu:tesla:2"),
        ({"nvidia.com/a100": "3"}, "nvidia.com/a100", "a100", "gpu:a100:3"),
        ({"example.com/h100-80gb": "1"}, "example.com/h100-80gb", "h100", "gpu:h100:1"),
        ({"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}, "nvidia.com/gpu", "", "gpu:1"),
    ],
)
def test_a_gpu_resource_becomes_one_gres(
    amounts: dict[str, object], resource: str, kind: str, line: str
) -> None:
    asked = gpus.request(amounts, SITE)
    assert asked == gpus.Request(resource, kind, int(str(amounts[resource]).replace("e0", "")))
    assert asked is not None
    assert asked.gres == line


@pytest.mark.parametrize(
    "amounts",
    [
        {},
        {"cpu": "2", "memory": "1Gi"},
        {"nvidia.com/gpu": "0"},
        {"nvidia.com/a100": "1"},  # a site name only where the site maps it
        {"nvidia.com/mig-": "1"},
        {"nvidia.com/gpu.": "1"},
        {"amd.com/gpu": "1"},
        {"example.com/fpga": "1"},
    ],
)
def test_no_gpu_asked(amounts: dict[str, object]) -> None:
    assert gpus.request(amounts) is None


@pytest.mark.parametrize(
    ("amounts", "message"),
    [
        (
            {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "1"},
            "asks for nvidia.com/gpu: 1 and nvidia.com/mig-1g.10gb: 1: a container's GPUs are of one kind"
            " (one resource name)",
        ),
        (
            {"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-3g.20gb": "1"},
            "asks for nvidia.com/mig-1g.10gb: 2 and nvidia.com/mig-3g.20gb: 1: a container's GPUs are of one"
            " kind (one resource name)",
        ),
        ({"nvidia.com/gpu": "0.5"}, "nvidia.com/gpu: a GPU count is a whole number, not '0.5'"),
        ({"nvidia.com/gpu": "500m"}, "nvidia.com/gpu: a GPU count is a whole number, not '500m'"),
        ({"nvidia.com/mig-1g.10gb": 1.5}, "nvidia.com/mig-1g.10gb: a GPU count is a whole number, not 1.5"),
        ({"nvidia.com/gpu": "two"}, "nvidia.com/gpu: quantities must match"),
    ],
)
def test_two_kinds_or_a_fraction_is_refused_with_a_reason(amounts: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        gpus.request(amounts)
    assert caught.value.message.startswith(message)


def test_two_kinds_mapped_by_the_site_are_two_kinds() -> None:
    with pytest.raises(InvalidInput):
        gpus.request({"nvidia.com/a100": "1", "nvidia.com/gpu.tesla": "1"}, SITE)


@pytest.mark.parametrize(
    ("kind", "names", "resource"),
    [
        ("", {}, "nvidia.com/gpu"),
        ("1g.10gb", {}, "nvidia.com/mig-1g.10gb"),
        ("7g.80gb", {}, "nvidia.com/mig-7g.80gb"),
        ("tesla", {}, "nvidia.com/gpu.tesla"),
        ("a100", SITE, "nvidia.com/a100"),
        ("h100", SITE, "example.com/h100-80gb"),
        ("1g.10gb", {"example.com/small": "1g.10gb"}, "example.com/small"),
    ],
)
def test_a_slurm_type_is_advertised_by_the_name_a_pod_asks_it_by(
    kind: str, names: dict[str, str], resource: str
) -> None:
    assert gpus.resource_name(kind, names) == resource
    assert gpus.slurm_type(resource, names) == kind


def test_capacity_has_every_gpu_under_the_any_name_and_each_type_under_its_own() -> None:
    assert gpus.capacity({"tesla": 2, "1g.10gb": 4}) == {
        "nvidia.com/gpu": 6,
        "nvidia.com/gpu.tesla": 2,
        "nvidia.com/mig-1g.10gb": 4,
    }
    assert gpus.capacity({"": 2}) == {"nvidia.com/gpu": 2}
    assert gpus.capacity({"": 1, "a100": 2}, SITE) == {"nvidia.com/gpu": 3, "nvidia.com/a100": 2}
    assert gpus.capacity({}) == {}


def test_allocatable_is_what_slurm_says_is_free_plus_what_this_nodes_pods_hold() -> None:
    total = {"nvidia.com/gpu": 6, "nvidia.com/mig-1g.10gb": 4}
    # Slurm: 3 slices in use, 2 of them this node's pods' (the scheduler counts those already).
    used = {"nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 3}
    held = {"nvidia.com/mig-1g.10gb": 2}
    assert gpus.allocatable(total, used, held) == {"nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 3}
    assert gpus.allocatable(total, {}, {}) == total
    # A pod's job not yet seen running by Slurm holds nothing there: never more than the total.
    assert gpus.allocatable(total, {}, {"nvidia.com/gpu": 2}) == total
    assert gpus.allocatable(total, {"nvidia.com/gpu": 9}, {}) == {
        "nvidia.com/gpu": 0,
        "nvidia.com/mig-1g.10gb": 4,
    }


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("gpu:tesla:2(S:0-1),gpu:1g.10gb:4", {"tesla": 2, "1g.10gb": 4}),
        ("gpu:2", {"": 2}),
        ("gpu:2(S:0)", {"": 2}),
        ("gpu:tesla", {"tesla": 1}),
        ("gpu", {"": 1}),
        ("gpu:a100:1K", {"a100": 1024}),
        ("mps:100,gpu:a:1", {"a": 1}),
        ("(null)", {}),
        ("", {}),
        # GresUsed (scontrol -d)
        ("gpu:1", {"": 1}),
        ("gpu:0(IDX:N/A)", {"": 0}),
        ("gpu:(null):0(IDX:N/A)", {"": 0}),
        ("gpu:tesla:1(IDX:0),gpu:1g.10gb:3(IDX:2-4)", {"tesla": 1, "1g.10gb": 3}),
        ("gpu:tesla:1(IDX:0,1),gpu:1g.10gb:0(IDX:N/A)", {"tesla": 1, "1g.10gb": 0}),
    ],
)
def test_a_nodes_gres_per_type(text: str, kinds: dict[str, int]) -> None:
    assert gres.by_type(text) == kinds
    assert gres.gpus(text) == sum(kinds.values())


@pytest.mark.parametrize("text", ["gpu:a:b:c", "gpu:a100:x"])
def test_a_gres_that_is_not_gpu_type_count_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        gres.by_type(text)
