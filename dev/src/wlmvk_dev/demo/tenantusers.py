"""The demo's two tenant users: Unix users of its own, made at ``up`` and removed at ``down``.

The tenancy design runs each tenant's jobs as its own Unix user (docs/tenancy.md), so the demo's
two tenants get two users of their own (``USERS``), made with ``useradd --system`` as
bench/tenants_scale.py makes its users, each marked with ``MARK`` as its comment, and recorded
in the demo's state directory; ``down`` removes those it recorded and only while they still
bear the mark. A user of that name the demo did not make is never used nor removed.

Only in the demo's own local setup: on a machine that runs a site's Slurm (``SITE_SIGNS``: a
``/etc/slurm/slurm.conf``, which dev/scripts/slurm-local never writes, or a munged on munge's default
socket, where slurm-local's own listens elsewhere), the demo makes no user and its tenants run as
the two users its local setup already has (its job owner and dev/scripts/slurm-local's job user).
``/etc/munge/munge.key``, which slurm-local's install test also reads, is no sign here: Debian's
munge package writes one when slurm-local installs it.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path

from wlmvk_dev.demo.progress import Progress

USERS = ("wlmvk-ta", "wlmvk-tb")
"""Short enough for sacct's User column (9 characters) to print them whole."""
MARK = "wlmvk demo tenant (scripts/demo down removes it)"
SITE_SIGNS = (Path("/etc/slurm/slurm.conf"), Path("/run/munge/munge.socket.2"))
RECORD = "tenant-users.json"


def site_slurm() -> Path | None:
    """The path that says a site runs Slurm on this machine, if one does."""
    return next((f for f in SITE_SIGNS if f.exists()), None)


def fallback(owner: str) -> tuple[str, str]:
    """The two users the demo's local setup already has: its job owner, slurm-local's job user."""
    return owner, os.environ.get("WLMVK_JOB_USER") or "slurmuser"


def ours(user: str) -> bool:
    """Whether ``user`` exists and is one the demo made."""
    try:
        return pwd.getpwnam(user).pw_gecos == MARK
    except KeyError:
        return False


def make(state: Path) -> tuple[str, str]:
    """The two tenant users, made (or found, left by a demo that did not end) and recorded."""
    made = []
    for user in USERS:
        if not ours(user):
            try:
                pwd.getpwnam(user)
            except KeyError:
                pass
            else:
                raise RuntimeError(f"user {user} exists and was not made by the demo: remove or rename it")
            argv = ["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin"]
            subprocess.run([*argv, "--comment", MARK, user], check=True, capture_output=True)
        made.append(user)
        (state / RECORD).write_text(json.dumps(made))
    return USERS


def remove(state: Path) -> list[str]:
    """The users the demo recorded and still bear its mark, removed (``userdel``); their names."""
    record = state / RECORD
    if not record.exists():
        return []
    removed = []
    for user in json.loads(record.read_text()):
        if ours(user):
            subprocess.run(["userdel", user], check=True, capture_output=True)
            removed.append(user)
    record.unlink()
    return removed


def prepare(state: Path, owner: str, progress: Progress) -> tuple[str, str]:
    """The tenants' two Unix users: the demo's own, unless a site runs Slurm here (then
    ``fallback``), each shown with ``id``."""
    site = site_slurm()
    if site is not None:
        users = fallback(owner)
        progress.line(f"tenant users {' and '.join(users)}: this machine has {site}, the demo makes none")
        return users
    with progress.step(f"tenant users {' and '.join(USERS)} (useradd, removed at down)"):
        users = make(state)
    for user in users:
        shown = subprocess.run(["id", user], capture_output=True, text=True, check=True)
        progress.command(["id", user], shown.stdout)
    return users
