"""``sacctmgr show assoc`` and ``sacctmgr show qos`` -> what Slurm knows of a user (pure).

red-box reads its own user's associations on its own cluster, and the names of every QoS, for a
SlurmTenant's status (``core.tenantstatus``). Any Slurm user may read both on Slurm 22.05 without
``PrivateData`` (a site with ``PrivateData=users`` or ``accounts`` still shows a user their own
associations). Rows are ``sacctmgr -n -P``'s: ``|``-separated, one per line, no header.
"""

from __future__ import annotations

from wlmvk.slurm.tenantstatus import Association

FIELDS = ("Account", "Partition", "QOS", "DefaultQOS")
FORMAT = ",".join(FIELDS)


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


def qos_names(text: str) -> frozenset[str]:
    """The names ``sacctmgr -n -P show qos format=Name`` prints."""
    return frozenset(line.strip() for line in text.splitlines() if line.strip())
