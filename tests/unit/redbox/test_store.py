"""red-box's on-disk record survives restarts, torn lines and old age."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.store import JOURNAL, Store


def finished(job: int, **changes: object) -> JobState:
    fields: dict[str, object] = {
        "job_id": JobId(job),
        "status": JobStatus.FAILED,
        "exit_code": 3,
        "end_time": datetime(2026, 12, 2, 14, 0, tzinfo=UTC),
        "std_out": f"/w/slurm-{job}.out",
    }
    fields.update(changes)
    return JobState(**fields)  # type: ignore[arg-type]


def test_states_and_keys_survive_a_restart(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.open()
    store.remember_key("uid-1", JobId(7))
    store.track(JobId(7))
    store.record(finished(7, idempotency_key=""))
    store.track(JobId(8))
    store.close()

    again = Store(tmp_path)
    again.open()
    assert again.job_for_key("uid-1") == 7
    state = again.get(JobId(7))
    assert state == finished(7)
    assert again.unfinished() == [8]


def test_a_terminal_state_is_final(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.open()
    store.record(finished(1))
    store.record(JobState(job_id=JobId(1), status=JobStatus.RUNNING))
    assert store.get(JobId(1)) == finished(1)
    store.close()


def test_keys_are_kept_on_later_states(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.open()
    store.record(JobState(job_id=JobId(2), status=JobStatus.PENDING, idempotency_key="k"))
    store.record(finished(2))
    state = store.get(JobId(2))
    assert state is not None
    assert state.idempotency_key == "k"
    store.close()


def test_a_torn_line_is_skipped_and_compaction_drops_old_records(tmp_path: Path) -> None:
    journal = tmp_path / JOURNAL
    old = time.time() - 30 * 86400
    lines = [
        json.dumps({"kind": "key", "at": old, "key": "ancient", "job_id": 1}),
        json.dumps({"kind": "key", "at": time.time(), "key": "recent", "job_id": 2}),
        '{"kind": "state", "at": 1',
    ]
    journal.write_text("\n".join(lines) + "\n")
    store = Store(tmp_path, keep_days=14)
    store.open()
    assert store.job_for_key("recent") == 2
    assert store.job_for_key("ancient") is None
    store.close()
    assert len(journal.read_text().splitlines()) == 1
