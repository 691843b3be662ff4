"""SlurmJobs and WlmJobs of a tenant's namespace: refused before any pod exists, naming the mapping."""

from __future__ import annotations

import json
from typing import Any

from tests.unit.operator.builders import NOW, SETTINGS, scheduled, slurmjob, terminated, virtual_node, wlmjob
from wlmvk.core import names
from wlmvk.operator import reconcile
from wlmvk.slurm import tenancy

Body = dict[str, Any]

BOOK = tenancy.tenants_from(
    [
        {
            "metadata": {"name": "team-a"},
            "spec": {
                "namespaces": ["default"],
                "user": "alice",
                "account": "physics",
                "qos": {"default": "n"},
            },
        }
    ]
)


def decide(body: Body, book: tenancy.Book = BOOK, owned: list[Body] | None = None) -> list[reconcile.Action]:
    return reconcile.decide(
        body, owned=owned or [], nodes=[virtual_node()], settings=SETTINGS, now=NOW, tenants=book
    )


def test_another_account_fails_the_slurmjob_before_any_pod() -> None:
    actions = decide(slurmjob(batch="#!/bin/sh\n#SBATCH -A chemistry\ntrue\n"))
    message = "SlurmTenant team-a: #SBATCH --account=chemistry (line 2) is not account physics of this tenant"
    assert not [a for a in actions if isinstance(a, reconcile.CreatePod)]
    status = next(a.status for a in actions if isinstance(a, reconcile.PatchStatus))
    assert (status["status"], status["reason"], status["message"]) == ("Failed", "TenantRefused", message)
    valid = next(c for c in status["conditions"] if c["type"] == "Valid")
    assert (valid["status"], valid["reason"], valid["message"]) == ("False", "TenantRefused", message)
    assert reconcile.Emit("Warning", "TenantRefused", message) in actions


def test_an_unmapped_namespace_fails_a_wlmjob() -> None:
    body = wlmjob()
    body["metadata"]["namespace"] = "elsewhere"
    actions = decide(body)
    status = next(a.status for a in actions if isinstance(a, reconcile.PatchStatus))
    assert (
        status["message"] == "no SlurmTenant maps namespace elsewhere: tenancy is on, so its jobs may not run"
    )
    assert not [a for a in actions if isinstance(a, reconcile.CreatePod)]


def test_an_allowed_job_and_no_tenancy_go_on_as_before() -> None:
    allowed = decide(slurmjob(batch="#!/bin/sh\n#SBATCH -A physics\ntrue\n"))
    untenanted = decide(slurmjob(batch="#!/bin/sh\n#SBATCH -A chemistry\ntrue\n"), tenancy.Book())
    for actions in (allowed, untenanted):
        assert [a for a in actions if isinstance(a, reconcile.CreatePod)]


VOLUME = {"name": "data", "emptyDir": {}}


def tenant_node(sockets: dict[str, str], socket: str = "/run/wlmvk/default/rb.sock") -> Body:
    node = virtual_node(socket=socket)
    node["metadata"]["annotations"][names.ANNOTATION_RED_BOX_SOCKETS] = json.dumps(sockets)
    return node


def staged(body: Body, node: Body, book: tenancy.Book = BOOK, owned: list[Body] | None = None) -> list[Any]:
    return reconcile.decide(body, owned=owned or [], nodes=[node], settings=SETTINGS, now=NOW, tenants=book)


def test_a_tenants_staging_pods_reach_its_users_red_box_and_mount_only_its_directory() -> None:
    node = tenant_node({"alice": "/run/wlmvk/alice/rb.sock", "bob": "/run/wlmvk/bob/rb.sock"})
    (made,) = created(staged(slurmjob(prepare={"to": "in", "mount": VOLUME}), node))
    spec = made["spec"]
    assert spec["volumes"][1]["hostPath"] == {"path": "/run/wlmvk/alice", "type": "Directory"}
    args = spec["containers"][0]["args"]
    assert args[args.index("--socket") + 1] == "/var/run/wlmvk-red-box/rb.sock"
    # Without tenancy: the node's own red-box, as before.
    (untenanted,) = created(staged(slurmjob(prepare={"to": "in", "mount": VOLUME}), node, tenancy.Book()))
    assert untenanted["spec"]["volumes"][1]["hostPath"]["path"] == "/run/wlmvk/default"


def created(actions: list[Any]) -> list[Body]:
    return [a.body for a in actions if isinstance(a, reconcile.CreatePod)]


def refusal(actions: list[Any]) -> tuple[str, str, str]:
    assert not [a for a in actions if isinstance(a, reconcile.CreatePod)]
    status = next(a.status for a in actions if isinstance(a, reconcile.PatchStatus))
    return status["status"], status["reason"], status["message"]


def test_staging_is_refused_where_the_users_red_box_is_not_alone_in_its_directory_or_not_there() -> None:
    body = slurmjob(prepare={"to": "in", "mount": VOLUME})
    shared = tenant_node({"alice": "/run/wlmvk/alice.sock", "bob": "/run/wlmvk/bob.sock"}, "/run/rb/rb.sock")
    assert refusal(staged(body, shared)) == (
        "Failed",
        "StagingUnsupported",
        "SlurmTenant team-a: the socket of user alice's red-box, /run/wlmvk/alice.sock, shares its"
        " directory with /run/wlmvk/bob.sock; a staging pod mounts the whole directory, so each tenant"
        " user's red-box needs a directory of its own to stage through",
    )
    with_default = tenant_node({"alice": "/run/wlmvk/alice.sock"}, "/run/wlmvk/rb.sock")
    said = refusal(staged(body, with_default))[2]
    assert said.startswith("SlurmTenant team-a: the socket of user alice's red-box, /run/wlmvk/alice.sock,")
    assert " shares its directory with /run/wlmvk/rb.sock; " in said
    assert refusal(staged(body, tenant_node({"bob": "/run/wlmvk/bob/rb.sock"}))) == (
        "Failed",
        "StagingUnsupported",
        "SlurmTenant team-a: node slurm-c1-debug publishes no red-box of user alice (the kubelet's"
        " --red-box alice=SOCKET): there is nothing to stage through",
    )
    # The user's red-box may be the node's own: one red-box, nothing else in its directory.
    same = tenant_node({"alice": "/run/wlmvk/rb.sock"}, "/run/wlmvk/rb.sock")
    assert created(staged(slurmjob(prepare={"to": "in", "mount": VOLUME}), same))


def test_a_job_under_way_whose_tenant_refuses_it_now_collects_nothing() -> None:
    node = tenant_node({"alice": "/run/wlmvk/alice/rb.sock"})
    body = wlmjob(results={"from": "out", "mount": VOLUME})
    (job_pod,) = created(staged(body, node))
    done = terminated(scheduled(job_pod, "slurm-c1-debug", job_id="5"), reason="Job finished")
    gone = tenancy.tenants_from([{"metadata": {"name": "team-b"}, "spec": {
        "namespaces": ["other"], "user": "bob", "account": "x"}}])  # fmt: skip
    assert refusal(staged(body, node, gone, owned=[done])) == (
        "Failed",
        "TenantRefused",
        "no SlurmTenant maps namespace default: tenancy is on, so its jobs may not run",
    )


def test_a_job_under_way_is_not_judged_again() -> None:
    body = slurmjob(batch="#!/bin/sh\n#SBATCH -A chemistry\ntrue\n")
    pods = [a.body for a in decide(body, tenancy.Book()) if isinstance(a, reconcile.CreatePod)]
    later = decide(body, BOOK, owned=pods)
    assert all(getattr(a, "reason", "") != "TenantRefused" for a in later)
    assert all(
        a.status.get("reason") != "TenantRefused" for a in later if isinstance(a, reconcile.PatchStatus)
    )
