"""A pod's lifecycle: every (stage, happening) pair, the allowed ones and the refused ones."""

from __future__ import annotations

import itertools

import pytest

from wlmvk.kubelet.pods.states import (
    FOLLOWED,
    WITHOUT_JOB,
    Happening,
    InvalidTransition,
    Presence,
    Stage,
    advance,
    initial,
    urgent,
)

S, H = Stage, Happening

# The whole table, written out: a pair missing here must be refused.
ALLOWED = {
    (S.UNVERIFIED, H.NOTHING_FOUND): S.NEW,
    (S.UNVERIFIED, H.ADOPTED): S.TRACKING,
    (S.UNVERIFIED, H.ANNOTATED): S.CLAIMED,
    (S.UNVERIFIED, H.FINISHED): S.FINAL,
    (S.NEW, H.SUBMITTED): S.TRACKING,
    (S.NEW, H.REPLY_LOST): S.UNVERIFIED,
    (S.NEW, H.ADOPTED): S.TRACKING,
    (S.NEW, H.ANNOTATED): S.CLAIMED,
    (S.NEW, H.FINISHED): S.FINAL,
    (S.CLAIMED, H.CLAIM_CONFIRMED): S.TRACKING,
    (S.CLAIMED, H.CLAIM_FOREIGN): S.FOREIGN,
    (S.CLAIMED, H.ADOPTED): S.TRACKING,
    (S.CLAIMED, H.FINISHED): S.FINAL,
    (S.FOREIGN, H.ADOPTED): S.TRACKING,
    (S.FOREIGN, H.FINISHED): S.FINAL,
    (S.TRACKING, H.CANCELLED): S.CANCELLING,
    (S.TRACKING, H.FINISHED): S.FINAL,
    (S.CANCELLING, H.FINISHED): S.FINAL,
}


@pytest.mark.parametrize(("stage", "happening"), list(itertools.product(Stage, Happening)))
def test_every_pair_of_the_table(stage: Stage, happening: Happening) -> None:
    expected = ALLOWED.get((stage, happening))
    if expected is not None:
        assert advance(stage, happening) is expected
    else:
        with pytest.raises(InvalidTransition) as caught:
            advance(stage, happening)
        assert str(caught.value) == f"{happening.value} cannot happen to a pod in stage {stage.value}"


def test_final_is_the_end() -> None:
    assert [h for h in Happening if (S.FINAL, h) in ALLOWED] == []


def test_a_job_is_submitted_only_from_new() -> None:
    """Exactly once: nothing but a NEW pod (looked up, or never needing it) submits."""
    assert [stage for stage in Stage if (stage, H.SUBMITTED) in ALLOWED] == [S.NEW]


def test_a_lost_reply_forces_a_lookup_before_anything_else() -> None:
    after = advance(S.NEW, H.REPLY_LOST)
    assert after is S.UNVERIFIED
    assert (after, H.SUBMITTED) not in ALLOWED


def test_a_claim_never_becomes_the_pods_job_without_being_checked() -> None:
    assert (S.CLAIMED, H.SUBMITTED) not in ALLOWED
    assert (S.FOREIGN, H.CLAIM_CONFIRMED) not in ALLOWED
    assert (S.FOREIGN, H.SUBMITTED) not in ALLOWED


def test_a_foreign_claim_still_lets_the_job_under_the_pods_key_be_adopted() -> None:
    """The key decides which job is the pod's: one found under it (a predecessor's, hidden by a
    wrong annotation) is followed, not left running for a pod failed ForeignJob and then gone."""
    assert advance(S.FOREIGN, H.ADOPTED) is S.TRACKING


def test_only_a_tracked_job_is_cancelled() -> None:
    assert [stage for stage in Stage if (stage, H.CANCELLED) in ALLOWED] == [S.TRACKING]


@pytest.mark.parametrize(
    ("annotated", "lookup", "lookups", "stage"),
    [
        (False, False, True, S.NEW),  # created while the kubelet runs
        (False, True, True, S.UNVERIFIED),  # present at start: a predecessor may have submitted it
        (False, True, False, S.NEW),  # an original red-box cannot look up
        (False, False, False, S.NEW),
        (True, False, True, S.CLAIMED),  # an annotation is a claim, checked by the next tick
        (True, True, True, S.CLAIMED),
        (True, False, False, S.TRACKING),  # an original red-box reports no key: taken on trust
        (True, True, False, S.TRACKING),
    ],
)
def test_initial(annotated: bool, lookup: bool, lookups: bool, stage: Stage) -> None:
    assert initial(annotated=annotated, lookup=lookup, lookups=lookups) is stage


@pytest.mark.parametrize(("stage", "presence"), list(itertools.product(Stage, Presence)))
def test_urgent_pods_are_those_to_submit_or_to_end(stage: Stage, presence: Presence) -> None:
    expected = presence is not Presence.LIVE or stage in (S.UNVERIFIED, S.NEW, S.CLAIMED, S.FOREIGN)
    assert urgent(stage, presence) is expected


def test_followed_and_jobless_stages_do_not_overlap() -> None:
    assert {S.TRACKING, S.CANCELLING} == FOLLOWED
    assert {S.UNVERIFIED, S.NEW, S.CLAIMED, S.FOREIGN} == WITHOUT_JOB
    assert set(Stage) == FOLLOWED | WITHOUT_JOB | {S.FINAL}
