"""``slurm.tenantstatus.Associations`` <-> the Associations rpc's answer, and ``AssociationLook``
<-> ObserveAssociations'."""

from __future__ import annotations

from wlmvk._proto import api
from wlmvk.slurm.tenantstatus import Association, AssociationLook, Associations


def _association(a: Association) -> api.Association:
    return api.Association(
        account=a.account, partition=a.partition, qos=list(a.qos), default_qos=a.default_qos
    )


def _from_association(a: api.Association) -> Association:
    return Association(a.account, a.partition, tuple(a.qos), a.default_qos)


def to_wire(known: Associations) -> api.AssociationsResponse:
    return api.AssociationsResponse(
        user=known.user,
        cluster=known.cluster,
        associations=[_association(a) for a in known.associations],
        qos=sorted(known.qos),
    )


def from_wire(wire: api.AssociationsResponse) -> Associations:
    return Associations(
        wire.user,
        wire.cluster,
        tuple(_from_association(a) for a in wire.associations),
        frozenset(wire.qos),
    )


def look_to_wire(look: AssociationLook) -> api.ObserveAssociationsResponse:
    return api.ObserveAssociationsResponse(
        cluster=look.cluster,
        own_user=look.own_user,
        users=[
            api.UserAssociations(user=user, associations=[_association(a) for a in rows])
            for user, rows in sorted(look.users.items())
        ],
        qos=sorted(look.qos),
    )


def look_from_wire(wire: api.ObserveAssociationsResponse) -> AssociationLook:
    return AssociationLook(
        wire.cluster,
        wire.own_user,
        {u.user: tuple(_from_association(a) for a in u.associations) for u in wire.users},
        frozenset(wire.qos),
    )
