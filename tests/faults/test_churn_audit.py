"""The churn audit's counting (churn._audit), on the shapes a round leaves: exact, one rule per count."""

from __future__ import annotations

from tests.faults import churn


def _pod(phase: str) -> dict[str, object]:
    return {"status": {"phase": phase}}


SCRIPTS = {"run-a": churn.RUNS, "run-b": churn.RUNS, "held": churn.HELD}
UIDS = {"run-a": "u-a", "run-b": "u-b", "held": "u-h"}


def audit(current: dict[str, dict[str, object]], jobs: dict[str, dict[str, str]]) -> churn.Tally:
    tally = churn.Tally("t")
    churn._audit(current, SCRIPTS, {"held"}, UIDS, tally, jobs)  # type: ignore[arg-type]
    return tally


def test_a_round_as_it_should_be_is_clean() -> None:
    jobs = {"u-a": {"1": "COMPLETED"}, "u-b": {"2": "COMPLETED"}, "u-h": {"3": "CANCELLED"}}
    assert audit({"run-a": _pod("Succeeded"), "run-b": _pod("Succeeded")}, jobs).clean


def test_a_pod_that_should_have_succeeded_but_failed_is_counted_whatever_slurm_says() -> None:
    # Before: counted only when Slurm said COMPLETED; a job a fault made FAILED passed as clean.
    jobs = {"u-a": {"1": "FAILED"}, "u-b": {"2": "COMPLETED"}, "u-h": {}}
    tally = audit({"run-a": _pod("Failed"), "run-b": _pod("Failed")}, jobs)
    assert (tally.spurious, tally.lost, tally.round_problems) == (2, 0, 0)
    assert not tally.clean


def test_a_pod_never_created_is_a_round_problem_in_its_own_column() -> None:
    jobs = {"u-a": {"1": "COMPLETED"}, "u-h": {}}
    tally = churn.Tally("t")
    churn._audit(
        {"run-a": _pod("Succeeded")}, SCRIPTS, {"held"}, {"run-a": "u-a", "held": "u-h"}, tally, jobs
    )  # type: ignore[arg-type]
    assert (tally.round_problems, tally.lost, tally.spurious) == (1, 0, 0)
    row = dict(zip(churn.Tally.HEADER, tally.cells(), strict=True))
    assert row["round problems"] == "1"


def test_duplicates_lost_and_orphans() -> None:
    jobs = {"u-a": {"1": "COMPLETED", "4": "COMPLETED"}, "u-b": {}, "u-h": {"3": "PENDING"}}
    tally = audit({"run-a": _pod("Succeeded"), "run-b": _pod("Running")}, jobs)
    assert (tally.duplicates, tally.lost, tally.orphaned, tally.spurious) == (1, 1, 1, 0)


def test_the_takeover_p95_is_the_nearest_rank() -> None:
    assert churn.p95([12.0]) == 12.0
    assert churn.p95([float(s) for s in range(20, 0, -1)]) == 19.0  # rank 19 of 20
    assert churn.p95([float(s) for s in range(1, 22)]) == 20.0  # rank ceil(0.95 x 21) = 20


def test_a_pod_created_again_counts_its_first_pods_live_job_as_orphaned() -> None:
    # The new pod (uid u-a2) is audited as any; the first pod's uid is a deleted pod's.
    jobs = {"u-a": {"1": "PENDING"}, "u-a2": {"5": "COMPLETED"}, "u-b": {"2": "COMPLETED"}, "u-h": {}}
    tally = churn.Tally("t")
    uids = {**UIDS, "run-a": "u-a2"}
    current = {"run-a": _pod("Succeeded"), "run-b": _pod("Succeeded")}
    churn._audit(current, SCRIPTS, {"held"}, uids, tally, jobs)  # type: ignore[arg-type]
    churn._audit_replaced({"u-a": "run-a"}, tally, jobs)
    assert (tally.orphaned, tally.duplicates, tally.lost, tally.spurious) == (1, 0, 0, 0)
    assert tally.problems == ["run-a: created again, the first pod's job {'1': 'PENDING'} alive"]


def test_a_pod_created_again_whose_first_job_ended_or_never_was_is_clean() -> None:
    jobs = {"u-a": {"1": "CANCELLED"}, "u-a2": {"5": "COMPLETED"}, "u-b": {"2": "COMPLETED"}, "u-h": {}}
    tally = churn.Tally("t")
    churn._audit_replaced({"u-a": "run-a", "u-x": "run-b"}, tally, jobs)
    assert tally.clean
