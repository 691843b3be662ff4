"""red-box's own small on-disk record: job states it has seen and idempotency keys.

Slurm forgets a finished job MinJobAge seconds after it ends; without
accounting nothing else remembers it. red-box appends each state change
and each key -> job id to a JSON-lines journal under ``--state-dir`` and
replays it at start, so a restarted red-box still answers for jobs that
left squeue. The journal is compacted (rewritten atomically) at start, and
records older than ``keep_days`` are dropped then.

Writing a line hands it to the operating system at once (it survives red-box
being killed); ``durable()`` waits until it is on the disk too (it survives
the machine going down). That wait is a group commit: one fsync covers every
line written before it started, so concurrent submissions share fsyncs instead
of queueing for one each. Where the fsync runs follows the disk: off the event
loop, in a thread, so that the loop keeps serving while a slow disk works; on
the loop itself while the last fsync took less than ``INLINE_FSYNC``. A fast
disk answers sooner than a thread is handed the call and hands it back: with 16
SubmitJob calls in flight through slurmrestd, each waited ~1.5 ms per group
commit in the thread's round trip for a 0.2 ms fsync, and red-box took 0.69x a
bare slurmrestd's jobs/s against 0.76x with the fsync on the loop (bench/
redbox_submit.py, rest-single@16, 5 rounds each; in runs of 3 rounds, 0.66x in
the thread, 0.68x and 0.63x in the thread with a 0.5 ms GIL switch interval,
0.74x on the loop: docs/raw/redbox-fsync-ab.txt). Beside the benchmark's other
arms the same fsyncs took 0.6-1.2 ms, still less than the thread's round trip:
hence the bound of 2 ms. The loop is held at most for one fsync that turns slower than
that, after which the next goes to the thread again.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from wlmvk.core.jobs import JobId, JobState, JobStatus

_log = structlog.get_logger(__name__)

JOURNAL = "records.jsonl"

INLINE_FSYNC = 0.002
"""Seconds: an fsync that took less than this runs the next on the event loop (see above)."""


_FIELDS = tuple(f.name for f in fields(JobState))


def _encode(state: JobState) -> dict[str, Any]:
    # Every field is a plain value: a shallow copy (asdict deep-copies each one, per submission).
    data = {name: getattr(state, name) for name in _FIELDS}
    data["status"] = state.status.value
    for key in ("submit_time", "start_time", "end_time"):
        value = data[key]
        data[key] = value.isoformat() if isinstance(value, datetime) else None
    return data


def _decode(data: dict[str, Any]) -> JobState:
    fields = dict(data)
    fields["job_id"] = JobId(int(fields["job_id"]))
    fields["status"] = JobStatus(fields["status"])
    for key in ("submit_time", "start_time", "end_time"):
        value = fields.get(key)
        fields[key] = datetime.fromisoformat(value) if value else None
    known = JobState.__dataclass_fields__
    return JobState(**{k: v for k, v in fields.items() if k in known})


def _submitted(job_id: JobId) -> JobState:
    """The state red-box gives a job it has just submitted, until it sees the job in Slurm."""
    return JobState(job_id=job_id, status=JobStatus.PENDING, reason="Submitted")


class Store:
    """Job states and idempotency keys, in memory and journaled to disk."""

    def __init__(self, directory: Path, *, keep_days: float = 14.0) -> None:
        self.directory = directory
        self.keep_seconds = keep_days * 86400
        self._states: dict[JobId, JobState] = {}
        self._seen: dict[JobId, float] = {}
        self._keys: dict[str, JobId] = {}
        # Keys whose sbatch was started but whose job id was never written:
        # red-box died in between, so Slurm may hold a job this record lacks.
        self._intents: set[str] = set()
        # The highest fencing token seen per scope (core.fences): kept for ever, one line each.
        self._fences: dict[str, int] = {}
        self._journal: Any = None
        self._written = 0  # lines written so far
        self._synced = 0  # of those, the ones an fsync has put on the disk
        self.fsyncs = [0, 0.0]  # group commits so far and their fsyncs' seconds (``tallies``)
        self.inline_fsyncs = 0  # of those, the ones run on the loop
        self._last_fsync = float("inf")  # seconds; a disk not yet timed is taken as slow
        self._syncing: asyncio.Future[None] | None = None

    def open(self) -> None:
        """Create the directory, replay and compact the journal, and open it for appending."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.directory / JOURNAL
        if path.exists():
            self._replay(path)
        self._compact(path)
        self._journal = path.open("a", encoding="utf-8")
        _log.info("state store opened", path=str(path), jobs=len(self._states), keys=len(self._keys))

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def _replay(self, path: Path) -> None:
        with path.open(encoding="utf-8") as journal:
            for number, line in enumerate(journal, 1):
                try:
                    entry = json.loads(line)
                    if entry["kind"] == "state":
                        state = _decode(entry["state"])
                        self._states[state.job_id] = state
                        self._seen[state.job_id] = float(entry["at"])
                    elif entry["kind"] == "key":
                        job_id = JobId(int(entry["job_id"]))
                        self._keys[entry["key"]] = job_id
                        self._seen.setdefault(job_id, float(entry["at"]))
                        self._intents.discard(entry["key"])
                        if entry.get("submitted"):
                            self._states.setdefault(job_id, _submitted(job_id))
                    elif entry["kind"] == "intent" and entry["key"] not in self._keys:
                        self._intents.add(entry["key"])
                    elif entry["kind"] == "fence":
                        scope, number = str(entry["scope"]), int(entry["number"])
                        self._fences[scope] = max(number, self._fences.get(scope, 0))
                except (ValueError, KeyError, TypeError) as exc:
                    # A torn last line after a crash must not stop red-box.
                    _log.warning("skipping a bad journal line", path=str(path), line=number, error=str(exc))

    def _compact(self, path: Path) -> None:
        horizon = time.time() - self.keep_seconds
        old = {job for job, at in self._seen.items() if at < horizon}
        for job in old:
            self._states.pop(job, None)
            self._seen.pop(job, None)
        self._keys = {k: j for k, j in self._keys.items() if j not in old}
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            for job_id, state in self._states.items():
                out.write(self._line("state", at=self._seen.get(job_id, time.time()), state=_encode(state)))
            for key, job_id in self._keys.items():
                out.write(self._line("key", at=self._seen.get(job_id, time.time()), key=key, job_id=job_id))
            for key in self._intents:
                out.write(self._line("intent", at=time.time(), key=key))
            for scope, number in self._fences.items():
                out.write(self._line("fence", at=time.time(), scope=scope, number=number))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)

    @staticmethod
    def _line(kind: str, **fields: Any) -> str:
        return json.dumps({"kind": kind, **fields}, separators=(",", ":")) + "\n"

    def _append(self, line: str) -> None:
        if self._journal is None:
            return
        self._journal.write(line)
        self._journal.flush()
        self._written += 1

    async def durable(self) -> None:
        """Return once every line written so far is on the disk (group commit, see above)."""
        target = self._written
        while self._synced < target and self._journal is not None:
            if self._syncing is None:
                self._syncing = asyncio.ensure_future(self._sync())
            # Shielded: a caller that goes away must not cancel the fsync others wait for.
            await asyncio.shield(self._syncing)

    async def _sync(self) -> None:
        try:
            inline = self._last_fsync < INLINE_FSYNC
            if inline:
                await asyncio.sleep(0)  # the lines of this loop turn's other callbacks join it
            if self._journal is None:
                return  # closed meanwhile: ``durable`` returns
            covered, fd = self._written, self._journal.fileno()
            if inline:
                took = _timed_fsync(fd)
                self.inline_fsyncs += 1
            else:
                took = await asyncio.get_running_loop().run_in_executor(None, _timed_fsync, fd)
            self._last_fsync = took
            self.fsyncs[0] += 1
            self.fsyncs[1] += took
            self._synced = max(self._synced, covered)
        finally:
            self._syncing = None

    # --- keys ---

    def job_for_key(self, key: str) -> JobId | None:
        return self._keys.get(key)

    def intended(self, key: str) -> bool:
        """True when a submission with ``key`` was started and its job id never recorded."""
        return key in self._intents

    def intents(self) -> frozenset[str]:
        """The keys whose submission was started and whose job id was never recorded."""
        return frozenset(self._intents)

    def intend(self, key: str) -> None:
        """Write ahead that a submission with ``key`` starts (written before its sbatch runs)."""
        self._intents.add(key)
        self._append(self._line("intent", at=time.time(), key=key))

    def remember_key(self, key: str, job_id: JobId) -> None:
        now = time.time()
        self._intents.discard(key)
        self._keys[key] = job_id
        self._seen.setdefault(job_id, now)
        self._append(self._line("key", at=now, key=key, job_id=job_id))

    def submitted(self, key: str, job_id: JobId) -> None:
        """``remember_key`` and ``track`` of a job red-box just submitted with ``key``, in one line.

        The key's line says that the job was submitted here (a red-box that does not know
        the mark reads it as the key alone): one line per submission fewer to encode and write.
        """
        now = time.time()
        self._intents.discard(key)
        self._keys[key] = job_id
        self._seen.setdefault(job_id, now)
        self._states.setdefault(job_id, _submitted(job_id))
        self._append(self._line("key", at=now, key=key, job_id=job_id, submitted=True))

    # --- fencing tokens ---

    def fence(self, scope: str) -> int | None:
        """The highest fencing token seen in ``scope``, None when none was."""
        return self._fences.get(scope)

    def raise_fence(self, scope: str, number: int) -> None:
        """Remember ``number`` as the highest token of ``scope`` (``durable()`` puts it on disk)."""
        self._fences[scope] = number
        self._append(self._line("fence", at=time.time(), scope=scope, number=number))

    # --- states ---

    def get(self, job_id: JobId) -> JobState | None:
        return self._states.get(job_id)

    def record(self, state: JobState) -> None:
        """Remember a state; only a change is written (a terminal state is kept as it is)."""
        known = self._states.get(state.job_id)
        if known is not None and known.status.terminal:
            return
        if state.idempotency_key == "" and known is not None and known.idempotency_key:
            state = replace(state, idempotency_key=known.idempotency_key)
        if known == state:
            return
        now = time.time()
        self._states[state.job_id] = state
        self._seen[state.job_id] = now
        self._append(self._line("state", at=now, state=_encode(state)))

    def unfinished(self) -> list[JobId]:
        """Jobs red-box has recorded (submitted or seen) whose end it has not seen yet."""
        jobs = set(self._keys.values()) | set(self._states)
        return sorted(j for j in jobs if j not in self._states or not self._states[j].status.terminal)

    def track(self, job_id: JobId) -> None:
        """Follow a job red-box submitted without a key until its end."""
        if job_id not in self._states:
            self.record(_submitted(job_id))


def _timed_fsync(fd: int) -> float:
    """fsync ``fd``; the seconds it took."""
    started = time.perf_counter()
    os.fsync(fd)
    return time.perf_counter() - started
