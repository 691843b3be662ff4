"""A SlurmTenant's status from what Slurm knows of its user (core.tenantstatus)."""

from __future__ import annotations

from wlmvk.slurm.tenancy import Tenant
from wlmvk.slurm.tenantstatus import (
    Association,
    AssociationLook,
    Associations,
    Condition,
    entry,
    judge,
    seen,
    status,
    summary,
    unchecked,
)

NOW, LATER = "2026-12-06T05:00:00Z", "2026-12-06T05:01:00Z"
KNOWN = Associations(
    "alice",
    "hpc",
    (
        Association("physics", "", ("normal", "long"), "normal"),
        Association("chem", "cpu", ("normal",), "normal"),
    ),
    frozenset({"normal", "long", "debug"}),
)


def tenant(**changes: object) -> Tenant:
    base: dict[str, object] = {
        "name": "team-a",
        "namespaces": ("team-a",),
        "user": "alice",
        "account": "physics",
        "qos_default": "normal",
        "qos_allowed": ("long",),
    }
    return Tenant(**{**base, **changes})  # type: ignore[arg-type]


def by_type(conditions: list[Condition]) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in conditions}


def test_everything_known_is_ready() -> None:
    assert by_type(judge(tenant(), KNOWN, cluster="hpc")) == {
        "UserKnown": ("True", "Known", ""),
        "AccountKnown": ("True", "Known", ""),
        "QoSKnown": ("True", "Known", ""),
        "Ready": ("True", "Known", ""),
    }


def test_a_misspelt_account_is_named() -> None:
    got = by_type(judge(tenant(account="physcs"), KNOWN, cluster="hpc"))
    why = "user alice has no association with account physcs (has: chem, physics)"
    assert got["AccountKnown"] == ("False", "AccountUnknown", why)
    assert got["UserKnown"] == ("True", "Known", "")
    assert got["QoSKnown"] == ("True", "Known", "")  # existence only: no association to judge by
    assert got["Ready"] == ("False", "AccountUnknown", why)


def test_a_user_slurm_does_not_know() -> None:
    got = by_type(
        judge(tenant(), Associations("alice", "hpc", (), frozenset({"normal", "long"})), cluster="hpc")
    )
    assert got["UserKnown"] == (
        "False",
        "UserUnknown",
        "Slurm has no association of user alice on cluster hpc",
    )
    assert got["AccountKnown"] == (
        "False",
        "AccountUnknown",
        "user alice has no association with account physics (has: none)",
    )
    assert got["Ready"] == (
        "False",
        "UserUnknown",
        "Slurm has no association of user alice on cluster hpc;"
        " user alice has no association with account physics (has: none)",
    )


def test_a_misspelt_qos_and_one_outside_the_association() -> None:
    got = by_type(judge(tenant(qos_default="nromal", qos_allowed=("debug",)), KNOWN, cluster="hpc"))
    assert got["QoSKnown"] == (
        "False",
        "QoSUnknown",
        "QoS nromal unknown to Slurm; QoS debug not in the QoS of account physics (long, normal)",
    )
    assert got["Ready"][:2] == ("False", "QoSUnknown")


def test_no_qos_named_is_known() -> None:
    assert by_type(judge(tenant(qos_default="", qos_allowed=()), KNOWN, cluster="hpc"))["QoSKnown"] == (
        "True",
        "Known",
        "",
    )


def test_an_association_for_some_partitions_only() -> None:
    allowed = tenant(account="chem", qos_allowed=(), partitions={"hpc": ("cpu", "gpu")})
    assert by_type(judge(allowed, KNOWN, cluster="hpc"))["AccountKnown"] == (
        "False",
        "AccountUnknown",
        "user alice's association with account chem is for partitions cpu only, not gpu",
    )
    assert by_type(
        judge(tenant(account="chem", qos_allowed=(), partitions={"hpc": ("cpu",)}), KNOWN, cluster="hpc")
    )["Ready"] == ("True", "Known", "")


def test_unchecked_leaves_the_parts_unknown() -> None:
    got = by_type(unchecked("NoRedBox", "user alice has no red-box", ready="False"))
    unknown = ("Unknown", "NoRedBox", "user alice has no red-box")
    assert got == {
        "UserKnown": unknown,
        "AccountKnown": unknown,
        "QoSKnown": unknown,
        "Ready": ("False", "NoRedBox", "user alice has no red-box"),
    }
    assert {c.status for c in unchecked("CheckFailed", "red-box down")} == {"Unknown"}


def test_an_entry_keeps_the_transition_time_of_an_unchanged_condition() -> None:
    first = entry("hpc", 1, judge(tenant(), KNOWN, cluster="hpc"), previous=None, now=NOW)
    again = entry("hpc", 1, judge(tenant(), KNOWN, cluster="hpc"), previous=first, now=LATER)
    assert [c["lastTransitionTime"] for c in again["conditions"]] == [NOW] * 4
    assert again["lastCheckTime"] == LATER
    broken = entry("hpc", 2, judge(tenant(account="x"), KNOWN, cluster="hpc"), previous=again, now=LATER)
    times = {c["type"]: c["lastTransitionTime"] for c in broken["conditions"]}
    assert times == {"UserKnown": NOW, "AccountKnown": LATER, "QoSKnown": NOW, "Ready": LATER}
    assert broken["observedGeneration"] == 2


def test_the_summary_names_each_cluster() -> None:
    good = entry("hpc", 3, judge(tenant(), KNOWN, cluster="hpc"), previous=None, now=NOW)
    bad = entry("gpu", 3, judge(tenant(account="physcs"), KNOWN, cluster="hpc"), previous=None, now=NOW)
    old = entry("old", 2, judge(tenant(), KNOWN, cluster="hpc"), previous=None, now=NOW)
    assert summary([good], 3) == Condition("Ready", "True", "Known", "")
    assert summary([good, bad], 3) == Condition(
        "Ready",
        "False",
        "AccountUnknown",
        "gpu: user alice has no association with account physcs (has: chem, physics)",
    )
    assert summary([good, old], 3) == Condition(
        "Ready", "Unknown", "NotChecked", "old: not checked yet at generation 3"
    )
    assert summary([], 3).status == "Unknown"


def test_a_clusters_entry_replaces_only_its_own() -> None:
    other = entry("gpu", 1, judge(tenant(), KNOWN, cluster="hpc"), previous=None, now=NOW)
    mine = entry("hpc", 1, judge(tenant(account="physcs"), KNOWN, cluster="hpc"), previous=None, now=NOW)
    written = status({"clusters": [other]}, mine, 1, now=NOW)
    assert [e["cluster"] for e in written["clusters"]] == ["gpu", "hpc"]
    assert written["clusters"][0] == other
    assert written["observedGeneration"] == 1
    fixed = entry("hpc", 2, judge(tenant(), KNOWN, cluster="hpc"), previous=mine, now=LATER)
    again = status(written, fixed, 2, now=LATER)
    assert [e["cluster"] for e in again["clusters"]] == ["gpu", "hpc"]
    assert again["conditions"][0]["status"] == "Unknown"  # gpu has not checked generation 2 yet
    assert again["conditions"][0]["lastTransitionTime"] == LATER


# --- one look at several users (ObserveAssociations) ---

PHYSICS = (Association("physics", "", ("normal",), "normal"),)
QOS = frozenset({"normal"})


def look(own: str, **users: tuple[Association, ...]) -> AssociationLook:
    return AssociationLook("hpc", own, users, QOS)


def test_a_user_the_look_shows_is_judged_by_it() -> None:
    assert seen(look("default", alice=PHYSICS, bob=()), "alice") == Associations("alice", "hpc", PHYSICS, QOS)


def test_a_user_absent_while_another_user_shows_has_no_association() -> None:
    # Nothing is hidden from a view that shows someone else's associations: bob has none.
    known = seen(look("default", alice=PHYSICS), "bob")
    assert known == Associations("bob", "hpc", (), QOS)
    assert judge(tenant(user="bob"), known, cluster="hpc")[0] == Condition(
        "UserKnown", "False", "UserUnknown", "Slurm has no association of user bob on cluster hpc"
    )


def test_the_looks_own_user_absent_has_no_association() -> None:
    assert seen(look("alice"), "alice") == Associations("alice", "hpc", (), QOS)


def test_a_look_that_shows_only_its_own_user_cannot_tell_of_another() -> None:
    # PrivateData=users shows a user their own associations only: bob may be hidden.
    assert seen(look("alice", alice=PHYSICS), "bob") is None
    assert seen(look("default"), "bob") is None
