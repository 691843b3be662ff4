"""``core.tenantstatus.Associations`` <-> the Associations rpc's answer."""

from __future__ import annotations

from wlmvk._proto import api
from wlmvk.slurm.tenantstatus import Association, Associations


def to_wire(known: Associations) -> api.AssociationsResponse:
    return api.AssociationsResponse(
        user=known.user,
        cluster=known.cluster,
        associations=[
            api.Association(
                account=a.account, partition=a.partition, qos=list(a.qos), default_qos=a.default_qos
            )
            for a in known.associations
        ],
        qos=sorted(known.qos),
    )


def from_wire(wire: api.AssociationsResponse) -> Associations:
    return Associations(
        wire.user,
        wire.cluster,
        tuple(Association(a.account, a.partition, tuple(a.qos), a.default_qos) for a in wire.associations),
        frozenset(wire.qos),
    )
