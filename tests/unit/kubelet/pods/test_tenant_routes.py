"""kubelet/pods/tenants: a pod's job gets its tenant's identity and goes to its user's red-box."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.kubelet.fakebackend import FakeBackend
from tests.unit.kubelet.podbodies import batch_pod, pod
from wlmvk.core.jobs import ContainerJobSpec, JobSpec
from wlmvk.kube.tenants import TenantWatch
from wlmvk.kubelet.pods.records import PodRecord
from wlmvk.kubelet.pods.states import Stage
from wlmvk.kubelet.pods.tenants import Routed, TenantRoutes
from wlmvk.kubelet.pods.translate import Rejection
from wlmvk.slurm import tenancy

TENANTS = [
    {
        "metadata": {"name": "team-a"},
        "spec": {
            "namespaces": ["default"],
            "user": "alice",
            "account": "physics",
            "qos": {"default": "normal"},
        },
    }
]


class Watched(TenantWatch):
    """A TenantWatch that has read ``bodies`` (no API server)."""

    def __init__(self, bodies: list[dict[str, object]]) -> None:
        super().__init__(client=None)  # type: ignore[arg-type]
        self.book = tenancy.tenants_from(bodies)  # type: ignore[arg-type]
        self.synced.set()


def routes(red_boxes: dict[str, FakeBackend], bodies: list[dict[str, object]] = TENANTS) -> TenantRoutes:
    return TenantRoutes(default=DEFAULT, cluster="c1", red_boxes=red_boxes, watch=Watched(bodies))


def record(body: dict[str, object]) -> PodRecord:
    return PodRecord(uid="u-1", pod=body, stage=Stage.NEW)


DEFAULT = FakeBackend()
ALICE = FakeBackend()


def test_a_tenants_job_gets_its_account_and_qos_and_its_users_red_box() -> None:
    routed = routes({"alice": ALICE}).route(
        record(pod()), JobSpec(script="#!/bin/sh\ntrue\n", partition="debug")
    )
    assert routed == Routed(
        ALICE, "alice", JobSpec(script="#!/bin/sh\n#SBATCH --account=physics\n#SBATCH --qos=normal\ntrue\n",
                                partition="debug"),
    )  # fmt: skip


def test_a_tenant_user_without_a_red_box_on_this_kubelet_is_refused() -> None:
    routed = routes({}).route(record(pod()), JobSpec(script="true\n", partition="debug"))
    assert routed == Rejection(
        "TenantRefused",
        "SlurmTenant team-a: user alice has no red-box on this kubelet (the site's --red-box alice=SOCKET)",
    )


def test_the_pods_own_script_is_judged_with_its_own_line_numbers() -> None:
    body = batch_pod("#!/bin/sh\n#SBATCH -A chemistry\ntrue\n")
    derived = JobSpec(
        script="#!/bin/sh\n#SBATCH --cpus-per-task=1\n#SBATCH -A chemistry\ntrue\n", partition="debug"
    )
    routed = routes({"alice": ALICE}).route(record(body), derived)
    assert routed == Rejection(
        "TenantRefused",
        "SlurmTenant team-a: #SBATCH --account=chemistry (line 2) is not account physics of this tenant",
    )


def test_a_container_job_runs_as_the_tenants_user_account_and_qos() -> None:
    spec = ContainerJobSpec(image="docker://alpine", partition="debug")
    assert routes({"alice": ALICE}).route(record(pod()), spec) == Routed(
        ALICE, "alice", replace(spec, account="physics", qos="normal")
    )


def test_without_tenants_everything_goes_to_the_default_red_box_unchanged() -> None:
    spec = JobSpec(script="#!/bin/sh\n#SBATCH -A any\ntrue\n", partition="debug")
    assert routes({"alice": ALICE}, []).route(record(pod()), spec) == Routed(DEFAULT, "", spec)


def test_a_followed_job_is_asked_where_it_was_submitted_else_at_its_tenants() -> None:
    table = routes({"alice": ALICE})
    submitted = record(pod())
    submitted.user = "alice"
    assert table.backend_of(submitted) is ALICE
    assert table.backend_of(record(pod())) is ALICE  # after a restart: its namespace's tenant
    assert table.backend_of(record(pod(metadata={"namespace": "other"}))) is DEFAULT
    assert routes({"alice": ALICE}, []).backend_of(record(pod())) is DEFAULT


def test_nothing_is_ready_before_the_tenants_are_read() -> None:
    watch = TenantWatch(client=None)  # type: ignore[arg-type]
    assert not TenantRoutes(default=DEFAULT, cluster="c1", watch=watch).ready
    watch.synced.set()
    assert TenantRoutes(default=DEFAULT, cluster="c1", watch=watch).ready
