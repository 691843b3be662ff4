"""What Slurm knows of a SlurmTenant: the conditions of its status, per cluster and in sum.

A tenant names a Slurm user, account and QoS (``core.tenancy``); a typo in any of them would make
every job of its namespaces fail in Slurm. Its status says, before any job runs, whether Slurm
knows them: the tenant user's red-box answers that user's associations on its cluster and the QoS
Slurm knows (``Associations``), and ``judge`` turns that into the conditions ``UserKnown``,
``AccountKnown``, ``QoSKnown`` and ``Ready`` of one cluster. Each cluster's kubelet writes its own
entry of ``status.clusters`` (``entry``); ``summary`` folds the entries into the tenant's own
``Ready`` condition, which ``kubectl get slurmtenants`` shows, each message naming its cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wlmvk.slurm.tenancy import Tenant

USER, ACCOUNT, QOS, READY = "UserKnown", "AccountKnown", "QoSKnown", "Ready"
TYPES = (USER, ACCOUNT, QOS, READY)


@dataclass(frozen=True)
class Association:
    """One association of a user: ``account`` on ``partition`` ('' all), with the QoS it may use."""

    account: str
    partition: str = ""
    qos: tuple[str, ...] = ()
    default_qos: str = ""


@dataclass(frozen=True)
class Associations:
    """A user's associations on one cluster, and every QoS Slurm knows."""

    user: str
    cluster: str
    associations: tuple[Association, ...]
    qos: frozenset[str]


@dataclass(frozen=True)
class AssociationLook:
    """What one red-box's user saw of several users at once on its cluster (ObserveAssociations):
    each user Slurm showed, with its associations, and every QoS Slurm knows."""

    cluster: str
    own_user: str
    users: Mapping[str, tuple[Association, ...]]
    qos: frozenset[str]


def seen(look: AssociationLook, user: str) -> Associations | None:
    """``user``'s associations as ``look`` shows them, or None when it cannot tell.

    A user the look shows nothing of has no association, provided the look shows some other
    user than its own: a site's ``PrivateData=users`` (slurmdbd.conf) shows a user their own
    associations only. A look that shows only its own user's (or none) cannot tell an unknown
    user from a hidden one: None, and that user's own red-box is asked.
    """
    if user in look.users:
        return Associations(user, look.cluster, tuple(look.users[user]), look.qos)
    if user == look.own_user or any(u != look.own_user for u in look.users):
        return Associations(user, look.cluster, (), look.qos)
    return None


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str

    def body(self, previous: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
        """As written in a status, keeping the previous transition time when the status is the same."""
        kept = previous and previous.get("status") == self.status and previous.get("lastTransitionTime")
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": kept or now,
        }


def _known(kind: str, reason: str, message: str) -> Condition:
    return Condition(kind, "False" if message else "True", reason if message else "Known", message)


def _listed(values: Iterable[str]) -> str:
    return ", ".join(sorted(set(values))) or "none"


def judge(tenant: Tenant, known: Associations, *, cluster: str) -> list[Condition]:
    """The conditions of ``tenant`` on the kubelet's ``cluster`` (the key of its partitions), from
    its user's associations on that cluster's Slurm (``known.cluster``, Slurm's own name)."""
    user = tenant.user
    rows = [a for a in known.associations if a.account == tenant.account]
    no_user = (
        "" if known.associations else f"Slurm has no association of user {user} on cluster {known.cluster}"
    )
    no_account = ""
    if not rows:
        has = _listed(a.account for a in known.associations)
        no_account = f"user {user} has no association with account {tenant.account} (has: {has})"
    elif all(a.partition for a in rows):
        wanted = tenant.allowed_partitions(cluster) or ()
        missing = [p for p in wanted if p not in {a.partition for a in rows}]
        if missing:
            no_account = (
                f"user {user}'s association with account {tenant.account} is for partitions"
                f" {_listed(a.partition for a in rows)} only, not {', '.join(missing)}"
            )
    wanted_qos = list(dict.fromkeys(q for q in (tenant.qos_default, *tenant.qos_allowed) if q))
    unknown = [q for q in wanted_qos if q not in known.qos]
    allowed = {q for a in rows for q in a.qos}
    outside = [q for q in wanted_qos if rows and q in known.qos and q not in allowed]
    no_qos = "; ".join(
        [
            *([f"QoS {', '.join(unknown)} unknown to Slurm"] if unknown else []),
            *(
                [f"QoS {', '.join(outside)} not in the QoS of account {tenant.account} ({_listed(allowed)})"]
                if outside
                else []
            ),
        ]
    )
    parts = [
        _known(USER, "UserUnknown", no_user),
        _known(ACCOUNT, "AccountUnknown", no_account),
        _known(QOS, "QoSUnknown", no_qos),
    ]
    return [*parts, ready(parts)]


def ready(parts: Sequence[Condition]) -> Condition:
    """``Ready`` of a cluster: True when every part is, else the first part not True's reason."""
    failed = [c for c in parts if c.status == "False"]
    unsure = [c for c in parts if c.status == "Unknown"]
    if failed:
        return Condition(READY, "False", failed[0].reason, "; ".join(c.message for c in failed))
    if unsure:
        return Condition(READY, "Unknown", unsure[0].reason, "; ".join(c.message for c in unsure))
    return Condition(READY, "True", "Known", "")


def unchecked(reason: str, message: str, *, ready: str = "Unknown") -> list[Condition]:
    """The conditions when Slurm could not be asked: the parts Unknown, ``Ready`` as given
    (Unknown when red-box is down or an original one; False when no job could run anyway: no
    red-box for the user on this kubelet, an invalid spec)."""
    parts = [Condition(kind, "Unknown", reason, message) for kind in (USER, ACCOUNT, QOS)]
    return [*parts, Condition(READY, ready, reason, message)]


def entry(
    cluster: str,
    generation: int,
    conditions: Sequence[Condition],
    *,
    previous: Mapping[str, Any] | None,
    now: str,
) -> dict[str, Any]:
    """This cluster's entry of ``status.clusters``."""
    before = {c.get("type"): c for c in (previous or {}).get("conditions") or [] if isinstance(c, Mapping)}
    return {
        "cluster": cluster,
        "observedGeneration": generation,
        "lastCheckTime": now,
        "conditions": [c.body(before.get(c.type), now) for c in conditions],
    }


def _ready_of(item: Mapping[str, Any]) -> Mapping[str, Any]:
    for condition in item.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == READY:
            return condition
    return {}


def summary(entries: Sequence[Mapping[str, Any]], generation: int) -> Condition:
    """The tenant's ``Ready``: False when any cluster's is, Unknown when any is or is older than
    ``generation`` (or there is none), else True; messages prefixed by their cluster."""
    failed, unsure = [], []
    for item in sorted(entries, key=lambda e: str(e.get("cluster"))):
        cluster, ready_ = str(item.get("cluster")), _ready_of(item)
        if item.get("observedGeneration") != generation:
            unsure.append(("NotChecked", f"{cluster}: not checked yet at generation {generation}"))
        elif ready_.get("status") == "False":
            failed.append((str(ready_.get("reason")), f"{cluster}: {ready_.get('message')}"))
        elif ready_.get("status") != "True":
            unsure.append((str(ready_.get("reason")), f"{cluster}: {ready_.get('message')}"))
    if failed:
        return Condition(READY, "False", failed[0][0], "; ".join(m for _, m in failed))
    if unsure:
        return Condition(READY, "Unknown", unsure[0][0], "; ".join(m for _, m in unsure))
    if not entries:
        return Condition(READY, "Unknown", "NotChecked", "no cluster has checked this tenant yet")
    return Condition(READY, "True", "Known", "")


def status(
    current: Mapping[str, Any] | None, mine: Mapping[str, Any], generation: int, *, now: str
) -> dict[str, Any]:
    """The tenant's status with this cluster's entry ``mine`` put in place of its old one."""
    old = current or {}
    others = [
        e for e in old.get("clusters") or [] if isinstance(e, Mapping) and e.get("cluster") != mine["cluster"]
    ]
    entries = sorted([*others, mine], key=lambda e: str(e.get("cluster")))
    previous = {c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, Mapping)}
    top = summary(entries, generation)
    return {
        "observedGeneration": generation,
        "conditions": [top.body(previous.get(READY), now)],
        "clusters": entries,
    }
