"""Carrying usage samples between JobUsage answers: an unanswered running job keeps its last
sample (its own time, its rate's two samples) for a while, never a zero; others drop out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage, UsageSample
from wlmvk.kubelet.api.stats.samples import Samples, advance

T0 = datetime(2026, 12, 3, 20, 0, tzinfo=UTC)
KEEP = timedelta(seconds=50)


def at(job: int, seconds: float, cpu: float) -> JobUsage:
    return JobUsage(JobId(job), timedelta(seconds=cpu), 4096 * job, T0 + timedelta(seconds=seconds))


def test_an_answered_job_moves_its_last_sample_to_previous() -> None:
    before = Samples({JobId(1): at(1, 0, 5)})
    after = advance(
        before, UsageSample({JobId(1): at(1, 10, 8)}), now=T0 + timedelta(seconds=10), keep_for=KEEP
    )
    assert after == Samples({JobId(1): at(1, 10, 8)}, {JobId(1): at(1, 0, 5)})


def test_an_unanswered_job_keeps_its_sample_and_rate_window() -> None:
    before = Samples({JobId(1): at(1, 10, 8), JobId(2): at(2, 10, 3)}, {JobId(1): at(1, 0, 5)})
    answer = UsageSample({JobId(2): at(2, 20, 4)}, frozenset({JobId(1)}), "sstat: boom")
    after = advance(before, answer, now=T0 + timedelta(seconds=20), keep_for=KEEP)
    assert after.current == {JobId(1): at(1, 10, 8), JobId(2): at(2, 20, 4)}
    assert after.current[JobId(1)].sampled == T0 + timedelta(seconds=10), "its age stays visible"
    assert after.previous == {JobId(1): at(1, 0, 5), JobId(2): at(2, 10, 3)}


def test_an_unanswered_job_is_left_out_once_its_sample_is_older_than_keep_for() -> None:
    before = Samples({JobId(1): at(1, 0, 8)}, {JobId(1): at(1, -10, 5)})
    answer = UsageSample({}, frozenset({JobId(1)}), "sstat: boom")
    assert advance(before, answer, now=T0 + KEEP, keep_for=KEEP).current == {JobId(1): at(1, 0, 8)}
    later = advance(before, answer, now=T0 + KEEP + timedelta(seconds=1), keep_for=KEEP)
    assert later == Samples()


def test_an_unanswered_job_never_read_before_is_absent_not_zero() -> None:
    answer = UsageSample({}, frozenset({JobId(3)}), "sstat: boom")
    assert advance(Samples(), answer, now=T0, keep_for=KEEP) == Samples()


def test_a_job_absent_without_being_unanswered_has_stopped_and_drops_out() -> None:
    before = Samples({JobId(1): at(1, 0, 8), JobId(2): at(2, 0, 1)}, {JobId(1): at(1, -10, 5)})
    after = advance(
        before, UsageSample({JobId(2): at(2, 10, 2)}), now=T0 + timedelta(seconds=10), keep_for=KEEP
    )
    assert after == Samples({JobId(2): at(2, 10, 2)}, {JobId(2): at(2, 0, 1)})


def test_a_sample_no_newer_than_the_last_gives_no_rate_window() -> None:
    before = Samples({JobId(1): at(1, 10, 8)})
    after = advance(
        before, UsageSample({JobId(1): at(1, 10, 8)}), now=T0 + timedelta(seconds=10), keep_for=KEEP
    )
    assert after == Samples({JobId(1): at(1, 10, 8)}, {})
