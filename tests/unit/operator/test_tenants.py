"""SlurmJobs and WlmJobs of a tenant's namespace: refused before any pod exists, naming the mapping."""

from __future__ import annotations

from typing import Any

from tests.unit.operator.builders import NOW, SETTINGS, slurmjob, virtual_node, wlmjob
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


def test_staging_is_refused_for_tenants_until_it_reaches_their_red_box() -> None:
    volume = {"name": "data", "emptyDir": {}}
    for body in (
        slurmjob(prepare={"to": "in", "mount": volume}),
        wlmjob(results={"from": "out", "mount": volume}),
    ):
        actions = decide(body)
        status = next(a.status for a in actions if isinstance(a, reconcile.PatchStatus))
        assert (status["status"], status["reason"]) == ("Failed", "StagingUnsupported")
        assert status["message"] == (
            "SlurmTenant team-a: prepare and results are not supported for tenants yet (docs/tenancy.md);"
            " stage the data from the job's own script"
        )
        assert not [a for a in actions if isinstance(a, reconcile.CreatePod)]
        assert [a for a in decide(body, tenancy.Book()) if isinstance(a, reconcile.CreatePod)]


def test_a_job_under_way_is_not_judged_again() -> None:
    body = slurmjob(batch="#!/bin/sh\n#SBATCH -A chemistry\ntrue\n")
    pods = [a.body for a in decide(body, tenancy.Book()) if isinstance(a, reconcile.CreatePod)]
    later = decide(body, BOOK, owned=pods)
    assert all(getattr(a, "reason", "") != "TenantRefused" for a in later)
    assert all(
        a.status.get("reason") != "TenantRefused" for a in later if isinstance(a, reconcile.PatchStatus)
    )
