"""``sacctmgr show assoc`` and ``sacctmgr show qos`` -> what Slurm knows of users (pure).

red-box reads its own user's associations on its own cluster (``association_rows``), or several
users' at once (``user_rows``, one ``show assoc where users=...``), and the names of every QoS,
for the SlurmTenants' status (``slurm.tenantstatus``). Any Slurm user may read them on Slurm
22.05 without ``PrivateData`` (a site with ``PrivateData=users`` or ``accounts`` still shows a
user their own associations). Rows are ``sacctmgr -n -P``'s: ``|``-separated, one per line, no
header.
"""

from __future__ import annotations

import re

from wlmvk.slurm.tenantstatus import Association

FIELDS = ("Account", "Partition", "QOS", "DefaultQOS")
FORMAT = ",".join(FIELDS)
USERS_FORMAT = ",".join(("User", *FIELDS))
USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")
"""A user name sacctmgr's ``users=`` list can carry: no comma, space, quote or ``=``."""


def association_rows(text: str) -> tuple[Association, ...]:
    """The rows of ``sacctmgr -n -P show assoc user=U cluster=C format=FORMAT``."""
    rows = []
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) < len(FIELDS) or not cells[0]:
            continue
        account, partition, qos, default = cells[: len(FIELDS)]
        rows.append(Association(account, partition, tuple(q for q in qos.split(",") if q), default))
    return tuple(rows)


def user_rows(text: str) -> dict[str, tuple[Association, ...]]:
    """Each user's rows of ``sacctmgr -n -P show assoc where users=U1,U2 cluster=C format=USERS_FORMAT``,
    in sacctmgr's order; a row without a user or an account (an account's own) is left out."""
    rows: dict[str, list[Association]] = {}
    for line in text.splitlines():
        user, _, rest = line.partition("|")
        found = association_rows(rest)
        if user and found:
            rows.setdefault(user, []).extend(found)
    return {user: tuple(found) for user, found in rows.items()}


def qos_names(text: str) -> frozenset[str]:
    """The names ``sacctmgr -n -P show qos format=Name`` prints."""
    return frozenset(line.strip() for line in text.splitlines() if line.strip())
