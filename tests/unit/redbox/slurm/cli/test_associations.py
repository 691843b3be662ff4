"""sacctmgr's associations and QoS, read from output captured on the local Slurm 22.05 (non-admin user).

Captured as slurmuser with ``AccountingStorageEnforce=associations,limits,qos``: acct-a on every
partition with QoS normal,qos-a (default qos-a), acct-p on partition cpu only with qos-x. Several
users at once (``sacctmgr_assoc_users.txt``, as slurmuser on the local Slurm 22.05, cluster
gpush5: ``show assoc where users=slurmuser,cloudsdk,nounixuser,nosuchuser``): slurmuser as above,
cloudsdk in acct-p with qos-x, nounixuser (a Slurm user without a Unix account) in acct-a with
normal and no default QoS, nosuchuser absent (no association). The same question with
``PrivateData=users`` in slurmdbd.conf (``sacctmgr_assoc_users_private.txt``): slurmuser's own
rows only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput
from wlmvk.redbox.slurm.cli import sacctmgr as associations
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.processes.runner import Completed
from wlmvk.slurm.tenantstatus import Association, AssociationLook, Associations, seen
from wlmvk.wire import associations as wire

CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured"


def test_a_users_associations_as_sacctmgr_prints_them() -> None:
    text = (CAPTURED / "sacctmgr_assoc_user.txt").read_text()
    assert associations.association_rows(text) == (
        Association("acct-p", "cpu", ("qos-x",), "qos-x"),
        Association("acct-a", "", ("normal", "qos-a"), "qos-a"),
    )


def test_the_qos_names() -> None:
    text = (CAPTURED / "sacctmgr_qos.txt").read_text()
    assert associations.qos_names(text) == frozenset({"normal", "qos-a", "qos-x"})


def test_a_user_without_association_has_no_rows() -> None:
    assert associations.association_rows("") == ()


def test_rows_without_an_account_or_too_short_are_left_out() -> None:
    assert associations.association_rows("|cpu|normal|normal\nacct\nacct-b|||\n") == (
        Association("acct-b", "", (), ""),
    )


def test_the_format_asked_is_what_is_read() -> None:
    assert associations.FORMAT == "Account,Partition,QOS,DefaultQOS"


# --- several users at once (ObserveAssociations) ---


def test_several_users_associations_as_sacctmgr_prints_them() -> None:
    text = (CAPTURED / "sacctmgr_assoc_users.txt").read_text()
    assert associations.user_rows(text) == {
        "cloudsdk": (Association("acct-p", "", ("qos-x",), "qos-x"),),
        "nounixuser": (Association("acct-a", "", ("normal",), ""),),
        "slurmuser": (
            Association("acct-p", "cpu", ("qos-x",), "qos-x"),
            Association("acct-a", "", ("normal", "qos-a"), "qos-a"),
        ),
    }


def test_an_accounts_own_row_and_a_short_row_are_no_users() -> None:
    assert associations.user_rows("|acct-a||normal|\nbob|acct\nbob|acct-b|||\n") == {
        "bob": (Association("acct-b", "", (), ""),)
    }


def test_the_users_format_leads_with_the_user() -> None:
    assert associations.USERS_FORMAT == "User,Account,Partition,QOS,DefaultQOS"


class Sacctmgr:
    """sacctmgr answering the captured rows; every argv kept."""

    def __init__(self) -> None:
        self.argvs: list[tuple[str, ...]] = []

    async def run(
        self, argv: Sequence[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None
    ) -> Completed:
        self.argvs.append(tuple(argv))
        name = "sacctmgr_qos.txt" if "qos" in argv else "sacctmgr_assoc_users.txt"
        return Completed(tuple(argv), 0, (CAPTURED / name).read_text(), "")


@pytest.mark.parametrize("count", [2, 50])
async def test_any_number_of_users_costs_two_sacctmgr(count: int) -> None:
    runner = Sacctmgr()
    slurm = Slurm(runner, user="slurmuser")  # type: ignore[arg-type]
    users = ["slurmuser", "cloudsdk", *(f"wlmvk-t{i:02d}" for i in range(count - 2))]
    look = await slurm.observe_associations(users, "gpush5")
    assert runner.argvs == [
        (
            "sacctmgr", "-n", "-P", "show", "assoc", "where", f"users={','.join(sorted(users))}",
            "cluster=gpush5", "format=User,Account,Partition,QOS,DefaultQOS",
        ),
        ("sacctmgr", "-n", "-P", "show", "qos", "format=Name"),
    ]  # fmt: skip
    # Only the users asked about; nounixuser was printed but not asked.
    assert sorted(look.users) == ["cloudsdk", "slurmuser"]
    assert (look.cluster, look.own_user, look.qos) == (
        "gpush5",
        "slurmuser",
        frozenset({"normal", "qos-a", "qos-x"}),
    )


async def test_a_name_that_would_change_sacctmgrs_question_is_refused_before_any_call() -> None:
    runner = Sacctmgr()
    slurm = Slurm(runner, user="slurmuser")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as refused:
        await slurm.observe_associations(["alice", "bob,root", "x y"], "gpush5")
    assert str(refused.value) == "not a user name sacctmgr can be asked about: 'bob,root', 'x y'"
    assert runner.argvs == []


def test_a_look_travels_the_wire_unchanged() -> None:
    look = AssociationLook(
        "gpush5",
        "slurmuser",
        {"cloudsdk": (Association("acct-p", "cpu", ("qos-x", "normal"), "qos-x"),), "bob": ()},
        frozenset({"normal", "qos-x"}),
    )
    back = wire.look_from_wire(api.ObserveAssociationsResponse().parse(bytes(wire.look_to_wire(look))))
    assert back == look


def test_with_private_users_a_look_shows_its_own_user_only_and_tells_nothing_of_the_others() -> None:
    text = (CAPTURED / "sacctmgr_assoc_users_private.txt").read_text()
    rows = associations.user_rows(text)
    assert list(rows) == ["slurmuser"]
    look = AssociationLook("gpush5", "slurmuser", rows, frozenset({"normal", "qos-a", "qos-x"}))
    assert seen(look, "slurmuser") == Associations("slurmuser", "gpush5", rows["slurmuser"], look.qos)
    # cloudsdk has an association, hidden here: asked of its own red-box, never judged unknown.
    assert seen(look, "cloudsdk") is None
