"""core.tenancy: the mapping read from SlurmTenants, and each escape a job may try, refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from wlmvk.slurm import sbatch
from wlmvk.slurm.tenancy import Allowed, Book, Identity, Refusal, decide, outside, tenant_from, tenants_from


def tenant(name: str = "team-a", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "namespaces": ["alpha"],
        "user": "alice",
        "account": "physics",
        "qos": {"default": "normal", "allowed": ["long"]},
        "partitions": [{"cluster": "hpc", "partitions": ["cpu", "gpu"]}],
    }
    base.update(spec)
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmTenant",
        "metadata": {"name": name},
        "spec": base,
    }


TWO = tenants_from(
    [
        tenant(),
        tenant("team-b", namespaces=["beta"], user="bob", account="chemistry", qos={"default": "short"}),
    ]
)


def job(
    script: str, *, namespace: str = "alpha", partition: str = "cpu", **kw: Any
) -> Identity | Refusal | None:
    return decide(TWO, namespace=namespace, cluster="hpc", partition=partition, script=script, **kw)


def refused(script: str, **kw: Any) -> str:
    outcome = job(script, **kw)
    assert isinstance(outcome, Refusal), outcome
    return outcome.message


def test_no_tenant_at_all_is_todays_behaviour() -> None:
    script = "#!/bin/sh\n#SBATCH --account=anything --qos=any -p x --uid=0\ntrue\n"
    assert decide(Book(), namespace="alpha", cluster="hpc", partition="cpu", script=script) is None


def test_a_mapped_namespace_gets_its_tenants_identity() -> None:
    assert job("#!/bin/sh\ntrue\n") == Identity("team-a", "alice", "physics", "normal")
    assert job("#!/bin/sh\ntrue\n", namespace="beta") == Identity("team-b", "bob", "chemistry", "short")


def test_identity_becomes_directives_the_script_keeps() -> None:
    identity = Identity("team-a", "alice", "physics", "normal")
    script = sbatch.with_defaults("#!/bin/sh\ntrue\n", identity.directives())
    assert script == "#!/bin/sh\n#SBATCH --account=physics\n#SBATCH --qos=normal\ntrue\n"
    assert Identity("t", "u", "acct", "").directives() == [("account", "acct")]


@pytest.mark.parametrize(
    "line",
    [
        "#SBATCH --account chemistry",
        "#SBATCH --account=chemistry",
        "#SBATCH -A chemistry",
        "#SBATCH -Achemistry",
        "#SBATCH -A=chemistry",
        "#SBATCH --job-name=x -A chemistry",
        "#SBATCH --account=physics\n#SBATCH --account=chemistry",
    ],
)
def test_another_account_in_any_spelling_is_refused_by_name(line: str) -> None:
    message = refused(f"#!/bin/sh\n{line}\ntrue\n")
    assert message.startswith("SlurmTenant team-a: #SBATCH --account=chemistry (line ")
    assert message.endswith("is not account physics of this tenant")


def test_the_tenants_own_account_may_be_written() -> None:
    assert job("#!/bin/sh\n#SBATCH -A physics\ntrue\n") == Identity("team-a", "alice", "physics", "normal")


@pytest.mark.parametrize(
    "line", ["#SBATCH --qos=high", "#SBATCH --qos high", "#SBATCH -q high", "#SBATCH -qhigh"]
)
def test_a_qos_outside_allowed_is_refused(line: str) -> None:
    assert refused(f"#!/bin/sh\n{line}\ntrue\n") == (
        "SlurmTenant team-a: #SBATCH --qos=high (line 2) is not an allowed QoS (allowed: normal, long)"
    )


def test_an_allowed_qos_is_kept() -> None:
    assert job("#!/bin/sh\n#SBATCH -q long\ntrue\n") == Identity("team-a", "alice", "physics", "long")
    assert job("#!/bin/sh\n#SBATCH --qos=normal\ntrue\n") == Identity("team-a", "alice", "physics", "normal")


def test_no_qos_allowed_refuses_any_qos_named() -> None:
    assert refused("#SBATCH --qos=normal\ntrue\n", namespace="beta") == (
        "SlurmTenant team-b: #SBATCH --qos=normal (line 1) is not an allowed QoS (allowed: short)"
    )


@pytest.mark.parametrize(
    "line", ["#SBATCH --partition=long", "#SBATCH --partition long", "#SBATCH -p long", "#SBATCH -plong"]
)
def test_a_partition_outside_the_list_in_the_script_is_refused(line: str) -> None:
    assert refused(f"#!/bin/sh\n{line}\ntrue\n") == (
        "SlurmTenant team-a: #SBATCH --partition=long (line 2): partition long of cluster hpc is not allowed"
        " (allowed: cpu, gpu)"
    )


def test_several_partitions_each_must_be_allowed() -> None:
    assert isinstance(job("#SBATCH -p cpu,gpu\ntrue\n"), Identity)
    assert "partition long of cluster hpc" in refused("#SBATCH -p cpu,long\ntrue\n")


def test_the_node_of_a_partition_outside_the_list_is_refused() -> None:
    assert refused("true\n", partition="long") == (
        "SlurmTenant team-a: partition long of cluster hpc is not allowed (allowed: cpu, gpu)"
    )


def test_a_cluster_the_tenant_does_not_list_allows_no_partition() -> None:
    outcome = decide(TWO, namespace="alpha", cluster="other", partition="cpu", script="true\n")
    assert outcome == Refusal(
        "SlurmTenant team-a: partition cpu of cluster other is not allowed (allowed: none)"
    )


def test_partitions_are_not_judged_where_the_cluster_is_not_known() -> None:
    # The operator, before its pod is placed: the kubelet judges the partition.
    outcome = decide(TWO, namespace="alpha", cluster=None, partition="", script="#SBATCH -p long\ntrue\n")
    assert outcome == Identity("team-a", "alice", "physics", "normal")
    refused = decide(
        TWO, namespace="alpha", cluster=None, partition="", script="#SBATCH -A chemistry\ntrue\n"
    )
    assert isinstance(refused, Refusal)


def test_without_partitions_every_partition_is_allowed() -> None:
    book = tenants_from([tenant(partitions=None)])
    outcome = decide(book, namespace="alpha", cluster="x", partition="any", script="#SBATCH -p other\ntrue\n")
    assert outcome == Identity("team-a", "alice", "physics", "normal")


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("#SBATCH --uid=0", "--uid=0"),
        ("#SBATCH --uid root", "--uid=root"),
        ("#SBATCH --gid=0", "--gid=0"),
        ("#SBATCH --clusters=other", "--clusters=other"),
        ("#SBATCH -M other", "--clusters=other"),
    ],
)
def test_uid_gid_and_clusters_are_refused_outright(line: str, name: str) -> None:
    assert refused(f"{line}\ntrue\n") == (
        f"SlurmTenant team-a: #SBATCH {name} (line 1) is not allowed: jobs of namespaces alpha run as user"
        " alice"
    )


@pytest.mark.parametrize(
    ("line", "full"),
    [("--acc=chemistry", "account"), ("--acco chemistry", "account"), ("--q=high", "qos"),
     ("--part=long", "partition"), ("--ui=0", "uid"), ("--cluster=x", "clusters")],
)  # fmt: skip
def test_abbreviations_of_guarded_options_are_refused(line: str, full: str) -> None:
    assert f"abbreviates --{full}; write it in full" in refused(f"#SBATCH {line}\ntrue\n")


def test_other_options_pass() -> None:
    script = "#!/bin/sh\n#SBATCH --time=5 -c 2 --mem=1G --job-name=x --comment=hi --parsable\ntrue\n"
    assert job(script) == Identity("team-a", "alice", "physics", "normal")


def test_an_indented_or_late_sbatch_line_is_no_directive() -> None:
    # sbatch ignores both, so they choose nothing.
    assert isinstance(job("#!/bin/sh\n  #SBATCH -A chemistry\ntrue\n#SBATCH -A chemistry\n"), Identity)


@pytest.mark.parametrize("name", ["SBATCH_ACCOUNT", "SBATCH_QOS", "SBATCH_PARTITION", "SBATCH_CLUSTERS"])
def test_sbatch_input_variables_are_refused(name: str) -> None:
    message = refused("true\n", env={name: "x", "OTHER": "y"})
    assert message.startswith(f"SlurmTenant team-a: environment variable {name} would choose the job's ")


def test_an_unmapped_namespace_is_refused_when_tenancy_is_on() -> None:
    assert refused("true\n", namespace="gamma") == (
        "no SlurmTenant maps namespace gamma: tenancy is on, so its jobs may not run"
    )


def test_a_namespace_of_two_tenants_is_refused() -> None:
    book = tenants_from([tenant(), tenant("team-c", namespaces=["alpha"])])
    outcome = decide(book, namespace="alpha", cluster="hpc", partition="cpu", script="true\n")
    assert outcome == Refusal(
        "namespace alpha is mapped by several SlurmTenants (team-a, team-c); an admin must keep one"
    )


def test_an_unreadable_script_is_refused() -> None:
    outcome = job("#SBATCH --account\ntrue\n")
    assert outcome == Refusal(
        "SlurmTenant team-a: the batch script cannot be read: line 1: option --account needs a value",
        reason="InvalidBatchScript",
    )


def test_an_invalid_tenant_turns_tenancy_on_and_is_named() -> None:
    book = tenants_from([tenant(user="root")])
    assert book.on
    outcome = decide(book, namespace="alpha", cluster="hpc", partition="cpu", script="true\n")
    assert outcome == Refusal(
        "no valid SlurmTenant maps namespace alpha (invalid: SlurmTenant team-a: spec.user must name a Slurm"
        " user other than root)"
    )


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({"user": ""}, "spec.user must name a Slurm user other than root"),
        ({"account": None}, "spec.account is required"),
        ({"qos": "normal"}, "spec.qos must be a map"),
        ({"namespaces": "alpha"}, "spec.namespaces must be a list of non-empty strings"),
        ({"partitions": [{"partitions": ["cpu"]}]}, "spec.partitions[0].cluster is required"),
        ({"partitions": {"hpc": ["cpu"]}}, "spec.partitions must be a list"),
    ],
)
def test_tenant_from_says_what_is_wrong(spec: dict[str, Any], why: str) -> None:
    book = tenants_from([tenant(**spec)])
    assert book.tenants == ()
    assert book.unreadable == {"team-a": f"SlurmTenant team-a: {why}"}


def test_tenant_from_reads_every_field() -> None:
    body = tenant(
        partitions=[{"cluster": "hpc", "partitions": ["cpu"]}, {"cluster": "hpc", "partitions": ["gpu"]}]
    )
    read = tenant_from(body)
    assert (read.name, read.namespaces, read.user, read.account) == ("team-a", ("alpha",), "alice", "physics")
    assert (read.qos_default, read.qos_allowed) == ("normal", ("long",))
    assert read.partitions == {"hpc": ("cpu", "gpu")}
    assert tenant_from(tenant(qos=None, partitions=None)).qos_default == ""


SITE = Allowed(accounts=("physics",), qos=("normal", "long"), partitions=("cpu", "gpu"))


def test_red_box_with_no_lists_accepts_any_account_qos_partition() -> None:
    script = "#!/bin/sh\n#SBATCH -A any --qos=any -p any\ntrue\n"
    assert outside(Allowed(), script, ["--partition=x"], {"SBATCH_ACCOUNT": "y"}) == ""


@pytest.mark.parametrize("line", ["#SBATCH --uid=0", "#SBATCH --gid 0", "#SBATCH --uid=root"])
def test_red_box_refuses_uid_and_gid_whatever_its_lists(line: str) -> None:
    why = outside(Allowed(), f"#!/bin/sh\n{line}\ntrue\n", [], {})
    assert why.endswith("(line 2): a job runs as red-box's own user; --uid and --gid are not accepted")


@pytest.mark.parametrize(
    ("script", "options", "why"),
    [
        ("#SBATCH -A chemistry\n", [], "--account=chemistry (line 1): account chemistry is not allowed by"
         " this red-box (allowed: physics)"),
        ("#SBATCH -Achemistry\n", [], "--account=chemistry (line 1): account chemistry"),
        ("#SBATCH --qos=high\n", [], "--qos=high (line 1): qos high is not allowed by this red-box"
         " (allowed: normal, long)"),
        ("#SBATCH -p cpu,long\n", [], "--partition=cpu,long (line 1): partition long is not allowed"),
        ("true\n", ["--partition=long"], "--partition=long: partition long is not allowed by this"
         " red-box (allowed: cpu, gpu)"),
        ("#SBATCH --acc=x\n", [], "--acc abbreviates --account, which this red-box checks; write it in"
         " full"),
    ],
)  # fmt: skip
def test_red_box_refuses_what_its_site_does_not_allow(script: str, options: list[str], why: str) -> None:
    assert outside(SITE, script + "true\n", options, {}).startswith(why)


def test_red_box_refuses_sbatch_variables_of_a_checked_option() -> None:
    assert outside(SITE, "true\n", [], {"SBATCH_QOS": "high"}) == (
        "environment variable SBATCH_QOS is not accepted: this red-box's site sets the job's qos"
    )
    only_accounts = Allowed(accounts=("physics",))
    assert outside(only_accounts, "true\n", [], {"SBATCH_QOS": "high"}) == ""


def test_red_box_accepts_what_its_site_allows() -> None:
    script = "#!/bin/sh\n#SBATCH --account=physics -q long -p gpu --time=5\ntrue\n"
    assert outside(SITE, script, ["--partition=cpu", "--job-name=x", "--comment=wlmvk:k"], {"A": "b"}) == ""
