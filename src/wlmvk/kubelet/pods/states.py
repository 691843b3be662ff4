"""A pod's lifecycle on this kubelet: one explicit stage, and the only transitions allowed.

Every pod bound to one of the kubelet's nodes is, at any time, in exactly one ``Stage``. What
moves it is a ``Happening``: something the provider (Slurm) or the controller (Kubernetes)
learned or did. ``advance`` is the whole transition table; anything else is a bug, raised as
``InvalidTransition`` rather than silently tolerated, since a pod in an unexpected stage is
how a job gets submitted twice or orphaned.

Whether the pod still exists in the API (``Presence``) is the watch's fact, not a stage: a pod
may be deleted in any stage, and what deleting it takes (a lookup, a cancel, nothing) depends
on the stage it was in.

    UNVERIFIED --NOTHING_FOUND--> NEW --SUBMITTED--> TRACKING --CANCELLED--> CANCELLING
    UNVERIFIED, NEW --ADOPTED--> TRACKING          NEW --REPLY_LOST--> UNVERIFIED
    UNVERIFIED, NEW --ANNOTATED--> CLAIMED --CLAIM_CONFIRMED (or ADOPTED)--> TRACKING
                                   CLAIMED --CLAIM_FOREIGN--> FOREIGN --ADOPTED--> TRACKING
    every stage but FINAL --FINISHED--> FINAL

A FOREIGN pod's claim is another's, but the pod's key still decides which job is its own: a job
found under the pod's UID (a predecessor's submission the wrong annotation hid) is adopted, as it
is from UNVERIFIED, rather than left running for a pod failed with ForeignJob, and then orphaned
when the pod is deleted. The claimed job itself is never adopted.
"""

from __future__ import annotations

import enum


class Stage(enum.Enum):
    UNVERIFIED = "Unverified"
    """No job known, but a predecessor may have submitted one: look the pod's key up first."""
    NEW = "New"
    """No job: submit one."""
    CLAIMED = "Claimed"
    """The job-id annotation names a job, not yet shown to be the pod's (the next status tick checks)."""
    FOREIGN = "Foreign"
    """The claimed job is another's, left alone: the pod's key is looked up, else it fails ForeignJob."""
    TRACKING = "Tracking"
    """The job is the pod's: its states become the pod's status."""
    CANCELLING = "Cancelling"
    """The pod is going away and its job was cancelled: its end is awaited before the pod goes."""
    FINAL = "Final"
    """The pod's last status is written (or was, before this kubelet started): nothing more to do."""


class Happening(enum.Enum):
    NOTHING_FOUND = "NothingFound"
    """The lookup by key found no job (or red-box cannot look up)."""
    ADOPTED = "Adopted"
    """A job shown to be the pod's was taken on: found by key, or annotated on an original red-box."""
    ANNOTATED = "Annotated"
    """A job id appeared in the pod's annotation."""
    SUBMITTED = "Submitted"
    REPLY_LOST = "ReplyLost"
    """Submission failed as unavailable: red-box may have run sbatch, so the key is looked up again."""
    CLAIM_CONFIRMED = "ClaimConfirmed"
    CLAIM_FOREIGN = "ClaimForeign"
    CANCELLED = "Cancelled"
    """The job's cancel was sent (or refused as already ending)."""
    FINISHED = "Finished"
    """The pod's last status was written: its job ended, it was rejected, deleted, or finished earlier."""


class Presence(enum.Enum):
    """The pod in the API, as the watch last showed it."""

    LIVE = "Live"
    DELETING = "Deleting"
    """A deletionTimestamp is set: the kubelet releases the pod once its job is over."""
    GONE = "Gone"
    """Deleted from the API (or missing from a relist): forgotten once its job is over."""


class InvalidTransition(Exception):
    def __init__(self, stage: Stage, happening: Happening) -> None:
        super().__init__(f"{happening.value} cannot happen to a pod in stage {stage.value}")
        self.stage = stage
        self.happening = happening


_S, _H = Stage, Happening

TRANSITIONS: dict[tuple[Stage, Happening], Stage] = {
    (_S.UNVERIFIED, _H.NOTHING_FOUND): _S.NEW,
    (_S.UNVERIFIED, _H.ADOPTED): _S.TRACKING,
    (_S.UNVERIFIED, _H.ANNOTATED): _S.CLAIMED,
    (_S.NEW, _H.SUBMITTED): _S.TRACKING,
    (_S.NEW, _H.REPLY_LOST): _S.UNVERIFIED,
    (_S.NEW, _H.ADOPTED): _S.TRACKING,
    (_S.NEW, _H.ANNOTATED): _S.CLAIMED,
    (_S.CLAIMED, _H.CLAIM_CONFIRMED): _S.TRACKING,
    (_S.CLAIMED, _H.CLAIM_FOREIGN): _S.FOREIGN,
    (_S.CLAIMED, _H.ADOPTED): _S.TRACKING,
    (_S.FOREIGN, _H.ADOPTED): _S.TRACKING,
    (_S.TRACKING, _H.CANCELLED): _S.CANCELLING,
    **{(stage, _H.FINISHED): _S.FINAL for stage in Stage if stage is not _S.FINAL},
}

WITHOUT_JOB = frozenset({Stage.UNVERIFIED, Stage.NEW, Stage.CLAIMED, Stage.FOREIGN})
"""Stages in which the kubelet follows no job of the pod's."""

FOLLOWED = frozenset({Stage.TRACKING, Stage.CANCELLING})
"""Stages whose job the status poller asks Slurm about."""


def advance(stage: Stage, happening: Happening) -> Stage:
    """The stage after ``happening``; ``InvalidTransition`` when it cannot happen in ``stage``."""
    try:
        return TRANSITIONS[(stage, happening)]
    except KeyError:
        raise InvalidTransition(stage, happening) from None


def initial(*, annotated: bool, lookup: bool, lookups: bool) -> Stage:
    """The stage of a pod first seen: annotated with a job id or not, to be looked up or not.

    ``lookup``: seen in the first listing (a predecessor may have submitted its job);
    ``lookups``: red-box can find a job by key (an original red-box cannot: an annotated job
    is then taken on trust, as nothing could check it).
    """
    if annotated:
        return Stage.CLAIMED if lookups else Stage.TRACKING
    return Stage.UNVERIFIED if lookup and lookups else Stage.NEW


def urgent(stage: Stage, presence: Presence) -> bool:
    """Pods to submit or to cancel go before status writes: a burst reaches Slurm first."""
    return presence is not Presence.LIVE or stage in WITHOUT_JOB
