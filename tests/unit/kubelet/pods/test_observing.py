"""Which states of one look the kubelet believes, and when it stops looking (kubelet.pods.observing)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import structlog

from wlmvk.core.backend import Observation
from wlmvk.core.errors import Unavailable, Unsupported
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.kubelet.pods import observing
from wlmvk.kubelet.pods.observing import StateLooks, believed, hidden


def state(job: int, status: JobStatus = JobStatus.RUNNING) -> JobState:
    return JobState(job_id=JobId(job), status=status)


SHOWN = {
    JobId(1): ("owner", state(1)),
    JobId(2): ("alice", state(2)),
    JobId(3): ("bob", state(3)),
    JobId(4): ("", state(4)),
}


def test_a_state_is_believed_only_for_the_user_whose_red_box_holds_the_job() -> None:
    wanted = {JobId(1): "", JobId(2): "alice", JobId(3): "alice", JobId(4): "", JobId(5): "bob"}
    assert believed(wanted, SHOWN, "owner") == {JobId(1): state(1), JobId(2): state(2)}
    # 3: another owner than its holder's user; 4: no owner named; 5: not shown.


def test_with_no_own_user_named_the_default_red_boxs_jobs_are_not_believed() -> None:
    assert believed({JobId(4): ""}, SHOWN, "") == {}


@pytest.mark.parametrize(
    ("status", "is_hidden"),
    [
        (JobStatus.PENDING, True),
        (JobStatus.RUNNING, True),
        (JobStatus.SUSPENDED, True),
        (JobStatus.COMPLETED, False),
        (JobStatus.CANCELLED, False),
        (JobStatus.NOT_FOUND, False),
        (JobStatus.UNKNOWN, False),
    ],
)
def test_a_job_the_look_missed_is_hidden_when_its_holder_still_shows_it_queued(
    status: JobStatus, is_hidden: bool
) -> None:
    assert hidden({JobId(7): state(7, status)}) == ([JobId(7)] if is_hidden else [])


class Looker:
    """An Observer answering SHOWN as the default red-box of user ``owner``, or failing."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.failure = failure
        self.followed: dict[str, list[JobId]] = {}

    async def observe(self, job_ids: Sequence[JobId]) -> Observation:
        if self.failure is not None:
            raise self.failure
        return Observation({j: s for j, s in SHOWN.items() if j in job_ids}, "owner")

    async def follow(self, job_ids: Sequence[JobId]) -> None:
        raise Unavailable("no answer")  # a red-box that cannot be told: the look still answers


async def test_a_look_answers_the_believed_states_even_when_a_tenant_cannot_be_told() -> None:
    looks = StateLooks(observer=Looker(), followers={"alice": Looker()})
    got = await looks.look({JobId(1): "", JobId(2): "alice", JobId(3): "alice"})
    assert got == {JobId(1): state(1), JobId(2): state(2)}
    assert looks.on


async def test_a_red_box_without_the_look_is_never_asked_again() -> None:
    looks = StateLooks(observer=Looker(Unsupported("ObserveStates")), followers={})
    assert await looks.look({JobId(1): ""}) is None
    assert not looks.on


async def test_a_look_that_fails_once_answers_nothing_and_is_tried_next_tick() -> None:
    looks = StateLooks(observer=Looker(Unavailable("down")), followers={})
    assert await looks.look({JobId(1): ""}) is None
    assert looks.on


def test_hidden_jobs_turn_the_look_off_for_a_while_and_are_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    looks = StateLooks(observer=Looker(), followers={})
    now = [1000.0]
    monkeypatch.setattr(observing.time, "monotonic", lambda: now[0])
    with structlog.testing.capture_logs() as logs:
        looks.check({JobId(3): state(3, JobStatus.COMPLETED)})
        assert looks.on, "an ended job the look missed had left the queue: nothing hidden"
        looks.check({JobId(3): state(3, JobStatus.PENDING)})
        assert not looks.on
        now[0] += observing.HIDDEN_RECHECK
        assert looks.on, "tried again after HIDDEN_RECHECK"
        looks.check({JobId(3): state(3, JobStatus.PENDING)})
    said = [e for e in logs if "hides other users' jobs" in str(e["event"])]
    assert len(said) == 1
    assert said[0]["log_level"] == "warning"
