"""The demo's tenant users (``wlmvk_dev.demo.tenantusers``): made and recorded at up, removed at
down only while they bear the demo's mark; none made where a site runs Slurm.

``useradd``, ``userdel`` and the password database are a fake here (the demo's own run, with the
real ones, is tests/e2e/demo/test_demo.py).
"""

from __future__ import annotations

import pwd
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from wlmvk_dev.demo import tenantusers
from wlmvk_dev.demo.tenantusers import MARK, USERS


class Passwd:
    """A password database that useradd and userdel change; what ran is kept."""

    def __init__(self, **users: str) -> None:
        self.users = dict(users)  # name -> comment
        self.ran: list[list[str]] = []

    def getpwnam(self, name: str) -> pwd.struct_passwd:
        if name not in self.users:
            raise KeyError(name)
        return pwd.struct_passwd((name, "x", 999, 999, self.users[name], "/", "/usr/sbin/nologin"))

    def run(self, argv: Sequence[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.ran.append(list(argv))
        if argv[0] == "useradd":
            self.users[argv[-1]] = argv[argv.index("--comment") + 1]
        elif argv[0] == "userdel":
            del self.users[argv[-1]]
        return subprocess.CompletedProcess(list(argv), 0, "", "")


@pytest.fixture
def passwd(monkeypatch: pytest.MonkeyPatch) -> Passwd:
    fake = Passwd(cloudsdk="")
    monkeypatch.setattr(pwd, "getpwnam", fake.getpwnam)
    monkeypatch.setattr(subprocess, "run", fake.run)
    return fake


def test_up_makes_both_users_marked_and_down_removes_them(passwd: Passwd, tmp_path: Path) -> None:
    assert tenantusers.make(tmp_path) == USERS
    assert passwd.users == {"cloudsdk": "", USERS[0]: MARK, USERS[1]: MARK}
    assert passwd.ran[0] == [
        "useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
        "--comment", MARK, USERS[0],
    ]  # fmt: skip
    assert tenantusers.remove(tmp_path) == list(USERS)
    assert passwd.users == {"cloudsdk": ""}
    assert tenantusers.remove(tmp_path) == [], "nothing recorded any more"


def test_users_left_by_a_demo_that_did_not_end_are_taken_again(passwd: Passwd, tmp_path: Path) -> None:
    passwd.users[USERS[0]] = MARK
    assert tenantusers.make(tmp_path) == USERS
    assert [argv[-1] for argv in passwd.ran] == [USERS[1]]
    assert tenantusers.remove(tmp_path) == list(USERS)


def test_a_user_of_that_name_the_demo_did_not_make_is_refused_and_kept(
    passwd: Passwd, tmp_path: Path
) -> None:
    passwd.users[USERS[1]] = "Team B's real account"
    with pytest.raises(RuntimeError) as refused:
        tenantusers.make(tmp_path)
    assert str(refused.value) == f"user {USERS[1]} exists and was not made by the demo: remove or rename it"
    assert tenantusers.remove(tmp_path) == [USERS[0]], "only the one the demo made"
    assert passwd.users == {"cloudsdk": "", USERS[1]: "Team B's real account"}


def test_a_recorded_user_whose_mark_is_gone_is_not_removed(passwd: Passwd, tmp_path: Path) -> None:
    tenantusers.make(tmp_path)
    passwd.users[USERS[0]] = "taken over by the site"
    assert tenantusers.remove(tmp_path) == [USERS[1]]
    assert USERS[0] in passwd.users


def test_a_site_slurm_is_told_by_its_config_or_its_munged(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    conf, socket = tmp_path / "slurm.conf", tmp_path / "munge.socket.2"
    monkeypatch.setattr(tenantusers, "SITE_SIGNS", (conf, socket))
    assert tenantusers.site_slurm() is None
    socket.touch()
    assert tenantusers.site_slurm() == socket
    conf.touch()
    assert tenantusers.site_slurm() == conf


def test_where_a_site_runs_slurm_the_tenants_are_the_users_already_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WLMVK_JOB_USER", raising=False)
    assert tenantusers.fallback("cloudsdk") == ("cloudsdk", "slurmuser")
