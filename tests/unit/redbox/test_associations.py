"""sacctmgr's associations and QoS, read from output captured on the local Slurm 22.05 (non-admin user).

Captured as slurmuser with ``AccountingStorageEnforce=associations,limits,qos``: acct-a on every
partition with QoS normal,qos-a (default qos-a), acct-p on partition cpu only with qos-x.
"""

from __future__ import annotations

from pathlib import Path

from wlmvk.redbox.slurm.cli import sacctmgr as associations
from wlmvk.slurm.tenantstatus import Association

CAPTURED = Path(__file__).resolve().parents[2] / "fixtures" / "slurm_captured"


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
