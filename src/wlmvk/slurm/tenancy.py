"""Tenancy: which Slurm user, account and QoS a namespace's job runs as, or why it may not run.

One rule for every side (the kubelet before it submits a pod's job, the operator before it makes a
SlurmJob's or WlmJob's pods). A site maps namespaces to Slurm identities with cluster-scoped
``SlurmTenant`` objects (``tenants_from`` reads them); with none at all tenancy is off and
``decide`` answers None: every job runs as red-box's own user, as before. With one or more, a
namespace's job is either given its tenant's identity (``Identity``: the account and QoS that
``directives`` adds to its script) or refused (``Refusal``) with a message naming the tenant and
the offending value. Nothing a pod author writes may choose another identity:

- ``--account``/``-A``, ``--qos``/``-q``, ``--partition``/``-p`` in any of sbatch's spellings
  (``core.sbatch`` reads them) must name the tenant's account, an allowed QoS and an allowed
  partition; ``--uid``, ``--gid`` and ``--clusters``/``-M`` are refused outright, and so is an
  abbreviation of any of these (sbatch takes ``--acc=X`` for ``--account=X``);
- the ``SBATCH_*`` input variables of the same options in the job's environment, which sbatch
  reads over the script's directives, are refused.

red-box applies the same reading to its own site's allow-lists (``Allowed``, ``outside``), as
defence in depth: whatever a kubelet sends, a red-box runs jobs only on what its site allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wlmvk.core.errors import InvalidInput
from wlmvk.slurm import sbatch

KIND = "SlurmTenant"
PLURAL = "slurmtenants"

# Options that choose who a job runs as, where, and on whose bill.
_CHECKED = ("account", "qos", "partition")
_FORBIDDEN = ("uid", "gid", "clusters")
_GUARDED = _CHECKED + _FORBIDDEN
# sbatch's input variables for those options: they override the script's #SBATCH lines.
FORBIDDEN_ENV = frozenset(
    {"SBATCH_ACCOUNT", "SBATCH_QOS", "SBATCH_PARTITION", "SBATCH_CLUSTERS", "SLURM_CLUSTERS"}
)


@dataclass(frozen=True)
class Tenant:
    """One ``SlurmTenant``: its namespaces run as ``user``, charged to ``account``."""

    name: str
    namespaces: tuple[str, ...]
    user: str
    account: str
    qos_default: str = ""
    qos_allowed: tuple[str, ...] = ()
    partitions: Mapping[str, tuple[str, ...]] | None = None
    """Per cluster, the partitions allowed; None: every partition of every cluster."""

    def allows_qos(self, qos: str) -> bool:
        return qos == self.qos_default or qos in self.qos_allowed

    def allowed_partitions(self, cluster: str) -> tuple[str, ...] | None:
        """The partitions of ``cluster`` allowed (empty when none); None when all are."""
        if self.partitions is None:
            return None
        return self.partitions.get(cluster, ())


@dataclass(frozen=True)
class Identity:
    """Who the job runs as: the tenant's user, its account and the QoS chosen ('' for Slurm's default)."""

    tenant: str
    user: str
    account: str
    qos: str

    def directives(self) -> list[tuple[str, str]]:
        """The options the job's script gets (``sbatch.with_defaults``)."""
        return [("account", self.account), *([("qos", self.qos)] if self.qos else [])]


@dataclass(frozen=True)
class Refusal:
    """Why the job may not run: ``reason`` CamelCase, ``message`` naming the tenant and the value."""

    message: str
    reason: str = "TenantRefused"


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InvalidInput(f"{where} must be a list of non-empty strings")
    return tuple(value)


def tenant_from(body: Mapping[str, Any]) -> Tenant:
    """A ``SlurmTenant`` object as a ``Tenant``; ``InvalidInput`` when it cannot be one."""
    name = str((body.get("metadata") or {}).get("name") or "")
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidInput(f"SlurmTenant {name}: spec is missing")
    user, account = spec.get("user"), spec.get("account")
    if not isinstance(user, str) or not user or user == "root":
        raise InvalidInput(f"SlurmTenant {name}: spec.user must name a Slurm user other than root")
    if not isinstance(account, str) or not account:
        raise InvalidInput(f"SlurmTenant {name}: spec.account is required")
    qos = spec.get("qos") or {}
    if not isinstance(qos, Mapping):
        raise InvalidInput(f"SlurmTenant {name}: spec.qos must be a map")
    default = qos.get("default") or ""
    if not isinstance(default, str):
        raise InvalidInput(f"SlurmTenant {name}: spec.qos.default must be a string")
    partitions: dict[str, tuple[str, ...]] | None = None
    if spec.get("partitions") is not None:
        entries = spec["partitions"]
        if not isinstance(entries, list):
            raise InvalidInput(f"SlurmTenant {name}: spec.partitions must be a list")
        partitions = {}
        for index, entry in enumerate(entries):
            where = f"SlurmTenant {name}: spec.partitions[{index}]"
            cluster = entry.get("cluster") if isinstance(entry, Mapping) else None
            if not isinstance(cluster, str) or not cluster:
                raise InvalidInput(f"{where}.cluster is required")
            partitions[cluster] = partitions.get(cluster, ()) + _strings(
                entry.get("partitions"), f"{where}.partitions"
            )
    return Tenant(
        name=name,
        namespaces=_strings(spec.get("namespaces"), f"SlurmTenant {name}: spec.namespaces"),
        user=user,
        account=account,
        qos_default=default,
        qos_allowed=_strings(qos.get("allowed"), f"SlurmTenant {name}: spec.qos.allowed"),
        partitions=partitions,
    )


@dataclass(frozen=True)
class Book:
    """The tenants known, and those that could not be read (their namespaces are refused)."""

    tenants: tuple[Tenant, ...] = ()
    unreadable: Mapping[str, str] | None = None
    """Name -> why, of ``SlurmTenant`` objects that are not valid."""

    @property
    def on(self) -> bool:
        """Tenancy is on once any ``SlurmTenant`` exists, valid or not."""
        return bool(self.tenants or self.unreadable)


def tenants_from(bodies: Iterable[Mapping[str, Any]]) -> Book:
    """The ``SlurmTenant`` objects read: the valid ones, and why the others are not."""
    tenants: list[Tenant] = []
    unreadable: dict[str, str] = {}
    for body in bodies:
        try:
            tenants.append(tenant_from(body))
        except InvalidInput as exc:
            unreadable[str((body.get("metadata") or {}).get("name") or "")] = exc.message
    return Book(tuple(sorted(tenants, key=lambda t: t.name)), unreadable or None)


def tenant_of(book: Book, namespace: str) -> Tenant | Refusal:
    """The one tenant mapping ``namespace``, or why there is none (tenancy on)."""
    mapped = [tenant for tenant in book.tenants if namespace in tenant.namespaces]
    if len(mapped) > 1:
        names = ", ".join(tenant.name for tenant in mapped)
        return Refusal(
            f"namespace {namespace} is mapped by several SlurmTenants ({names}); an admin must keep one"
        )
    if mapped:
        return mapped[0]
    if book.unreadable:
        names = "; ".join(why for _, why in sorted(book.unreadable.items()))
        return Refusal(f"no valid SlurmTenant maps namespace {namespace} (invalid: {names})")
    return Refusal(f"no SlurmTenant maps namespace {namespace}: tenancy is on, so its jobs may not run")


def decide(
    book: Book,
    *,
    namespace: str,
    cluster: str | None,
    partition: str,
    script: str,
    env: Mapping[str, str] | None = None,
) -> Identity | Refusal | None:
    """Who a job of ``namespace`` on ``cluster``'s ``partition`` runs as; None when tenancy is off.

    ``script`` is the batch script as it will reach sbatch (directives and all), ``env`` the
    environment sbatch is asked to run with. ``cluster`` None: where the job will run is not
    known yet (the operator, before the scheduler places its pod), so partitions are judged later,
    where it is (the kubelet).
    """
    if not book.on:
        return None
    tenant = tenant_of(book, namespace)
    if isinstance(tenant, Refusal):
        return tenant
    who = f"SlurmTenant {tenant.name}"
    allowed = tenant.allowed_partitions(cluster) if cluster is not None else None
    if allowed is not None and partition and partition not in allowed:
        listed = ", ".join(allowed) or "none"
        return Refusal(
            f"{who}: partition {partition} of cluster {cluster} is not allowed (allowed: {listed})"
        )
    for name in sorted(set(env or {}) & FORBIDDEN_ENV):
        return Refusal(
            f"{who}: environment variable {name} would choose the job's {name.split('_', 1)[1].lower()}"
        )
    try:
        found = sbatch.directives(script)
    except InvalidInput as exc:
        return Refusal(f"{who}: the batch script cannot be read: {exc.message}", reason="InvalidBatchScript")
    qos = tenant.qos_default
    for directive in found:
        refusal = _judge(tenant, directive, cluster, allowed)
        if refusal is not None:
            return refusal
        if directive.name == "qos":
            qos = directive.value or ""
    return Identity(tenant=tenant.name, user=tenant.user, account=tenant.account, qos=qos)


def _judge(
    tenant: Tenant, directive: sbatch.Directive, cluster: str | None, allowed: Sequence[str] | None
) -> Refusal | None:
    who = f"SlurmTenant {tenant.name}"
    name, value = directive.name, directive.value or ""
    shown = f"#SBATCH --{name}={value} (line {directive.line})"
    if name not in _GUARDED:
        cut = [full for full in _GUARDED if full.startswith(name)]
        if cut:
            return Refusal(
                f"{who}: #SBATCH --{name} (line {directive.line}) abbreviates --{cut[0]}; write it in full"
            )
        return None
    if name in _FORBIDDEN:
        namespaces = ", ".join(tenant.namespaces)
        return Refusal(
            f"{who}: {shown} is not allowed: jobs of namespaces {namespaces} run as user {tenant.user}"
        )
    if name == "account" and value != tenant.account:
        return Refusal(f"{who}: {shown} is not account {tenant.account} of this tenant")
    if name == "qos" and not tenant.allows_qos(value):
        listed = (
            ", ".join(dict.fromkeys([q for q in (tenant.qos_default, *tenant.qos_allowed) if q])) or "none"
        )
        return Refusal(f"{who}: {shown} is not an allowed QoS (allowed: {listed})")
    if name == "partition" and allowed is not None:
        asked = [part for part in value.split(",") if part]
        outside = [part for part in asked if part not in allowed] or ([] if asked else [value])
        if outside:
            listed = ", ".join(allowed) or "none"
            where = f"partition {outside[0]} of cluster {cluster}"
            return Refusal(f"{who}: {shown}: {where} is not allowed (allowed: {listed})")
    return None


@dataclass(frozen=True)
class Allowed:
    """What one red-box's site lets its jobs name (its own setting); an empty list: anything."""

    accounts: tuple[str, ...] = ()
    qos: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()


def outside(allowed: Allowed, script: str, options: Sequence[str], env: Mapping[str, str]) -> str:
    """Why a job red-box is asked to run names what its site does not allow ('' when nothing does).

    ``options`` are sbatch's command line, ``env`` its environment. ``--uid`` and ``--gid`` are
    refused whatever the lists (only root could use them, and red-box never passes them on); an
    option whose list is set is refused in any spelling outside it, abbreviations and its
    ``SBATCH_*`` variable included. Raises ``InvalidInput`` for an unreadable script.
    """
    lists = {"account": allowed.accounts, "qos": allowed.qos, "partition": allowed.partitions}
    guarded = ["uid", "gid", *(name for name, values in lists.items() if values)]
    for name in sorted(set(env) & FORBIDDEN_ENV):
        option = name.split("_", 1)[1].lower()
        if option in guarded:
            return f"environment variable {name} is not accepted: this red-box's site sets the job's {option}"
    found = [*sbatch.directives(script), *sbatch.combined("", options).values()]
    for directive in found:
        name, value = directive.name, directive.value or ""
        where = f"--{name}={value}" + (f" (line {directive.line})" if directive.line else "")
        if name in ("uid", "gid"):
            return f"{where}: a job runs as red-box's own user; --uid and --gid are not accepted"
        if name not in lists:
            cut = [full for full in guarded if full.startswith(name) and len(name) > 1]
            if cut:
                return f"--{name} abbreviates --{cut[0]}, which this red-box checks; write it in full"
            continue
        values = lists[name]
        asked = value.split(",") if name == "partition" else [value]
        refused = [item for item in asked if values and item not in values]
        if refused:
            return (
                f"{where}: {name} {refused[0]} is not allowed by this red-box (allowed: {', '.join(values)})"
            )
    return ""
