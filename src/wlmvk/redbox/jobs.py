"""Jobs as red-box sees them: submit once per key, and know every job's state.

Where a state comes from, in order: ``squeue -t all`` (one call for any number of jobs), then
red-box's own record of terminal states, then ``sacct`` (one call for all the rest) when accounting
is on. A job found nowhere is NOT_FOUND: one red-box never knew, and also one it followed that left
Slurm before its end was seen (accounting off, red-box down longer than MinJobAge), whose reason
says so. Its end is unknowable, so its pod must end rather than wait for news that will never come;
a cancel of it has nothing to do. Every terminal state seen is recorded, so a job that left squeue
still answers without accounting, also after a restart.

Submissions with an idempotency key are serialised per key: the second of two racing calls waits for
the first and then finds its job (red-box's record, then the key in Slurm's job comments, then in
accounting) instead of submitting again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

import structlog

from wlmvk.core.errors import NotFound, Unavailable, WlmvkError
from wlmvk.core.jobs import JobId, JobSpec, JobState, JobStatus
from wlmvk.redbox import scripts, submitting
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.slurm import verdicts
from wlmvk.redbox.slurm.cli import arrays
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.store import Store
from wlmvk.slurm import tenancy

_log = structlog.get_logger(__name__)

ACCOUNTING_RECHECK = 60.0
"""Seconds to trust 'accounting is off' before asking sacct again."""

KEY_INDEX_TTL = 60.0
"""Seconds a submission trusts the index of idempotency keys found in Slurm."""

KEY_INDEX_STALE = 60.0
"""Seconds past KEY_INDEX_TTL a submission still answers from the index while a newer one is
built: a scan reads every job's comment, and submissions need not queue behind it."""

KEY_INDEX_FULL = 3600.0
"""Seconds between full builds of the key index (squeue and ACCOUNTING_WINDOW of accounting).
In between, a rebuild reads squeue and only the accounting since the last read: a user with
thousands of jobs in three days (7,000 here, 0.4 s of red-box's CPU to read as whole job states,
before the reading took ids and comments alone: ``cli.keys``) would otherwise pay that read
every KEY_INDEX_TTL while submitting."""

KEY_INDEX_OVERLAP = 600.0
"""Seconds before the last accounting read that the next one starts at: a job reaches
accounting a little after slurmctld has it (slurmdbd's queue), and squeue shows it meanwhile."""

LOST_REASON = "the job left Slurm before red-box saw it end"


class Jobs:
    def __init__(
        self,
        *,
        slurm: Slurm,
        store: Store,
        confinement: Confinement,
        max_script_bytes: int,
        base_env: Mapping[str, str] | None = None,
        allowed: tenancy.Allowed | None = None,
    ) -> None:
        self.slurm = slurm
        self.allowed = allowed or tenancy.Allowed()
        """The site's allow-lists of this red-box (docs/tenancy.md): checked on every submission."""
        self.store = store
        self.confinement = confinement
        self.max_script_bytes = max_script_bytes
        self.base_env = dict(os.environ if base_env is None else base_env)
        self._inflight: dict[str, asyncio.Future[JobId]] = {}
        self._accounting_off_until = 0.0
        self._index: dict[str, JobId] = {}
        """Each idempotency key found in Slurm, with its newest job."""
        self._index_at = -math.inf
        self._index_scan: asyncio.Future[None] | None = None
        self._index_full_at = -math.inf  # monotonic: the last full build
        self._accounting_read: float | None = None  # epoch: when the index last read accounting
        self.index_scans: Counter[str] = Counter()  # scans of the key index started, full or since
        # When each followed job was last looked at in Slurm (a JobStates, a FollowJobs; a job's
        # acceptance is its first): the recorder leaves out jobs a client looked at recently.
        self._looked: dict[JobId, float] = {}
        # Keys whose submission may have made a job that no lookup found yet (verdicts): those an
        # earlier red-box started and never recorded too, since its sbatch may have been sent.
        started = time.monotonic()
        self._unsettled = {key: verdicts.Unsettled(since=started) for key in store.intents()}

    # --- submitting ---

    async def submit(self, spec: JobSpec, *, durable: bool = True) -> JobId:
        """A keyed job's id is on the disk before it is returned, unless ``durable`` is False:
        then the caller waits for ``store.durable()`` before it answers (SubmitJobs: one for all)."""
        script = scripts.check_script(spec.script, limit=self.max_script_bytes)
        key = scripts.check_key(spec.idempotency_key)
        options, env = submitting.options(
            spec, allowed=self.allowed, confinement=self.confinement, base_env=self.base_env
        )
        if not key:
            try:
                job_id = await self.slurm.submit(script, options, env=env)
            except verdicts.MaybeMade as exc:
                why = f"{exc.message}; the job may exist and has no key to look it up by"
                raise Unavailable(why) from exc
            self.store.track(job_id)
            self._looked[job_id] = time.monotonic()
            _log.info("job submitted", job_id=job_id, partition=spec.partition)
            return job_id
        # One submission per key at a time, shared by every caller with that key, and
        # shielded from their cancellation: a client that dies mid-call must not kill
        # an sbatch that may already have made the job before its id is recorded.
        inflight = self._inflight.get(key)
        if inflight is None:
            inflight = asyncio.ensure_future(self._submit_once(key, script, options, env, spec.partition))
            self._inflight[key] = inflight
            inflight.add_done_callback(functools.partial(self._settled, key))
        job_id = await asyncio.shield(inflight)
        if durable:
            await self.store.durable()
        return job_id

    def _settled(self, key: str, done: asyncio.Future[JobId]) -> None:
        if self._inflight.get(key) is done:
            del self._inflight[key]
        if not done.cancelled():
            done.exception()  # retrieved here; the awaiting callers see it too

    async def _submit_once(
        self, key: str, script: bytes, options: list[str], env: dict[str, str] | None, partition: str
    ) -> JobId:
        if key in self._unsettled:
            found = await self._settle_key(key)
        else:
            found = await self._lookup(key, max_age=KEY_INDEX_TTL, stale=KEY_INDEX_STALE)
        if found is not None:
            _log.info("job exists for key", job_id=found, key=key)
            return found
        # Written ahead, not waited for: should red-box die while its sbatch runs (the
        # child, in a session of its own, may outlive it), the next red-box reads this line
        # and looks at Slurm afresh before submitting again. Only a machine going down could
        # lose it, and its sbatch goes down too: the first look at Slurm after the restart
        # (the key index starts empty) comes after every job the old red-box made, and finds
        # this one by its key. One fsync per submission, then, shared by concurrent ones.
        self.store.intend(key)
        try:
            job_id = await self.slurm.submit(script, options, env=env)
        except verdicts.MaybeMade as exc:
            # The rule (verdicts): no second submission before a conclusive lookup of the key.
            self._unsettled[key] = verdicts.Unsettled(since=exc.since)
            _log.warning("the answer may mean Slurm has the job", key=key, reason=exc.message)
            found = await self._settle_key(key)
            if found is not None:
                _log.warning("job found by key after an uncertain answer", job_id=found, key=key)
                return found
            _log.warning("no job under the key after the bound: submitting again", key=key)
            try:
                job_id = await self.slurm.submit(script, options, env=env)
            except verdicts.MaybeMade as again:
                self._unsettled[key] = verdicts.Unsettled(since=again.since)
                raise
        self.store.submitted(key, job_id)
        self._looked[job_id] = time.monotonic()
        _log.info("job submitted", job_id=job_id, partition=partition, key=key)
        return job_id

    async def _settle_key(self, key: str) -> JobId | None:
        """The job of an unsettled key, or None once a lookup says it was not made (``verdicts``).

        Raises Unavailable while Slurm does not answer: the key stays unsettled, and the next
        submission with it settles it first.
        """
        while True:
            state = self._unsettled[key]
            bound = 0.0
            if state.answered is not None:
                bound = verdicts.bound(await self.slurm.message_timeout())
                await asyncio.sleep(state.wait(time.monotonic(), bound))
            started = time.monotonic()
            found = self.store.job_for_key(key)
            if found is None:
                found = (await self._index_since(max(started, state.since))).get(key)
                if found is not None:
                    self.store.remember_key(key, found)
            if found is not None or state.conclusive(started, bound):
                del self._unsettled[key]
                return found
            self._unsettled[key] = state.looked(started, time.monotonic())
            _log.info("key not in Slurm yet; looked up again after the bound", key=key)

    async def _index_since(self, after: float) -> dict[str, JobId]:
        """The index from a scan that started at ``after`` or later."""
        while self._index_at < after:
            scan = self._index_scan
            # A scan that ended is not awaited again: its callback may not have run yet, and
            # awaiting a done future never yields, so this loop would spin with the loop blocked.
            if scan is None or scan.done():
                scan = self._start_scan()
            await asyncio.shield(scan)
        return self._index

    # --- finding by key ---

    async def find(self, key: str, *, max_age: float = 0.0) -> JobState | None:
        """The job submitted with ``key``: red-box's record, else Slurm's job comments.

        Slurm is searched through an index of every wlmvk key in squeue and
        (with accounting) sacct, rebuilt when older than ``max_age`` seconds;
        concurrent lookups share one rebuild. A rebuild reads the accounting
        since the last read (KEY_INDEX_OVERLAP before it), and all of
        ACCOUNTING_WINDOW every KEY_INDEX_FULL. The FindJob rpc asks for a fresh
        index; submissions accept one up to KEY_INDEX_TTL old, since a job this
        red-box submitted is in its record anyway, and one up to KEY_INDEX_STALE
        older while the next is built.
        """
        known = await self.job_for_key(key, max_age=max_age)
        if known is None:
            return None
        state = await self.state(known)
        # A state from red-box's own record may lack the key it was found by; a row of
        # Slurm's keeps the comment it has, so a caller can check it is the job it wants.
        return state if state.idempotency_key else replace(state, idempotency_key=key)

    async def job_for_key(self, key: str, *, max_age: float = 0.0) -> JobId | None:
        scripts.check_key(key)
        inflight = self._inflight.get(key)
        if inflight is not None:
            # A submission with this key is under way: its answer is the answer.
            with contextlib.suppress(Exception):
                made = await asyncio.shield(inflight)
                await self.store.durable()  # on the disk before anyone hears of the job
                return made
        return await self._lookup(key, max_age=max_age)

    async def _lookup(self, key: str, *, max_age: float, stale: float = 0.0) -> JobId | None:
        known = self.store.job_for_key(key)
        if known is None:
            if self.store.intended(key):
                # A submission of an earlier red-box never recorded its job id: only a
                # fresh look at Slurm can tell whether sbatch made the job.
                max_age = stale = 0.0
            known = (await self._key_index(max_age, stale=stale)).get(key)
            if known is None:
                return None
            self.store.remember_key(key, known)
        return known

    async def warm_index(self) -> None:
        """The key index read at start, as the first submission would (as sound, trusted as long).
        A Slurm that does not answer leaves the read to the first keyed submission."""
        try:
            await self._key_index(0.0)
        except WlmvkError as exc:
            _log.warning("key index not read at start: the first keyed submission reads it", reason=str(exc))

    async def _key_index(self, max_age: float, *, stale: float = 0.0) -> dict[str, JobId]:
        """The index, rebuilt when older than ``max_age``; waited for only past ``max_age + stale``."""
        age = time.monotonic() - self._index_at
        if self._index_scan is None and age > max_age:
            self._start_scan()
        if self._index_scan is not None and age > max_age + stale:
            await asyncio.shield(self._index_scan)
        return self._index

    def _start_scan(self) -> asyncio.Future[None]:
        """A new scan of the keys, the one in progress from now on."""
        scan = self._index_scan = asyncio.ensure_future(self._scan_keys(time.monotonic()))
        scan.add_done_callback(self._scanned)
        return scan

    def _scanned(self, task: asyncio.Future[None]) -> None:
        if self._index_scan is task:
            self._index_scan = None
        if not task.cancelled():
            task.exception()  # retrieved here; the awaiting callers see it too

    async def _scan_keys(self, started: float) -> None:
        full = self._accounting_read is None or started - self._index_full_at > KEY_INDEX_FULL
        self.index_scans["full" if full else "since"] += 1
        # Between full builds the index only grows: a key found once keeps its job (the newest).
        index: dict[str, JobId] = {} if full else dict(self._index)
        found = [await self.slurm.own_keys()]
        if self._accounting_maybe():
            last = self._accounting_read
            since = None if full or last is None else last - KEY_INDEX_OVERLAP
            reading = time.time()
            accounted = await self.slurm.accounting_keys(since)
            if accounted is None:
                self._accounting_off()
                self._accounting_read = None  # when it is back, a full read
            else:
                found.append(accounted)
                self._accounting_read = reading
        for keys in found:
            for key, job_id in keys.items():
                if job_id >= index.get(key, 0):
                    index[key] = job_id
        self._index, self._index_at = index, started
        if full:
            self._index_full_at = started

    # --- states ---

    def _accounting_maybe(self) -> bool:
        return time.monotonic() >= self._accounting_off_until

    def _accounting_off(self) -> None:
        self._accounting_off_until = time.monotonic() + ACCOUNTING_RECHECK

    async def states(self, job_ids: Sequence[JobId]) -> dict[JobId, JobState]:
        """The state of every job asked for: one squeue call, at most one sacct call."""
        wanted = sorted({j for j in job_ids if j > 0})
        looked = time.monotonic()
        result: dict[JobId, JobState] = {
            j: JobState(job_id=j, status=JobStatus.NOT_FOUND, reason="not a job id")
            for j in job_ids
            if j <= 0
        }
        unsure: dict[JobId, JobState] = {}
        for state in await self.slurm.queue(wanted):
            if state.job_id in result:
                continue
            if arrays.combined(state) and state.status.terminal and self._accounting_maybe():
                # squeue forgets each task MinJobAge after it ends: accounting has them all.
                unsure[state.job_id] = state
                continue
            result[state.job_id] = state
            if state.status.terminal or self.store.get(state.job_id) is not None:
                self.store.record(state)
        missing = [j for j in wanted if j not in result]
        ask = [j for j in missing if not self._recorded_end(j)]
        accounted: dict[JobId, JobState] = {}
        trouble = ""
        if ask and self._accounting_maybe():
            try:
                rows = await self.slurm.accounting(ask)
            except Unavailable as exc:
                # squeue answered; one sick slurmdbd must not hide those answers.
                _log.warning("accounting unavailable", error=exc.message)
                rows, trouble = [], exc.message
            if rows is None:
                self._accounting_off()
            else:
                accounted = {r.job_id: r for r in rows}
        for job_id in missing:
            row = accounted.get(job_id) or unsure.get(job_id)
            if trouble and row is None and not self._recorded_end(job_id):
                result[job_id] = JobState(job_id=job_id, status=JobStatus.UNKNOWN, reason=trouble)
            else:
                result[job_id] = self._settle(job_id, row)
        if trouble:
            return result  # accounting did not answer: the recorder must look again
        for job_id in wanted:
            if job_id in self._looked or self.store.get(job_id) is not None:
                self._looked[job_id] = looked
        return result

    def follow(self, job_ids: Sequence[JobId]) -> int:
        """Own unfinished jobs a client follows elsewhere (``observing``) count as looked at now."""
        followed = set(job_ids) & set(self.store.unfinished())
        self._looked.update(dict.fromkeys(followed, time.monotonic()))
        return len(followed)

    def _recorded_end(self, job_id: JobId) -> bool:
        known = self.store.get(job_id)
        return known is not None and known.status.terminal

    def _settle(self, job_id: JobId, row: JobState | None) -> JobState:
        known = self.store.get(job_id)
        if known is not None and known.status.terminal:
            return known
        if row is not None:
            if known is not None:
                row = replace(
                    row,
                    std_out=row.std_out or known.std_out,
                    std_err=row.std_err or known.std_err,
                    idempotency_key=row.idempotency_key or known.idempotency_key,
                )
            if row.status.terminal:
                self.store.record(row)
            return row
        if known is not None:
            lost = replace(known, status=JobStatus.NOT_FOUND, reason=LOST_REASON, exit_code=None)
            self.store.record(lost)
            return lost
        return JobState(job_id=job_id, status=JobStatus.NOT_FOUND, reason="unknown to Slurm and red-box")

    async def state(self, job_id: JobId) -> JobState:
        return (await self.states([job_id]))[job_id]

    # --- cancelling ---

    async def cancel(self, job_id: JobId) -> None:
        """scancel a job; a finished or lost one is left alone, one never known is NotFound."""
        queued = await self.slurm.queue([job_id])
        if not queued:
            state = await self.state(job_id)
            if state.status is JobStatus.NOT_FOUND and state.reason != LOST_REASON:
                raise NotFound(f"job {job_id}: {state.reason}")
            return
        if all(s.status.terminal for s in queued):
            return
        await self.slurm.cancel(job_id)
        _log.info("job cancelled", job_id=job_id)

    # --- the background recorder ---

    async def poll_unfinished(self, max_age: float = 0.0) -> int:
        """Look at the jobs red-box follows whose end it has not seen; returns how many.

        Only when one of them went unlooked-at for ``max_age`` seconds (a client's
        JobStates counts), and then at every one unlooked-at for half that: one squeue
        for the lot, so their looks fall together instead of one squeue per job's age.
        """
        now = time.monotonic()
        unfinished = [j for j in self.store.unfinished() if not self._lost(j)]
        ages = {j: now - self._looked.get(j, -math.inf) for j in unfinished}
        self._looked = {j: self._looked[j] for j in unfinished if j in self._looked}
        if not unfinished or max(ages.values()) < max_age:
            return 0
        due = [j for j in unfinished if ages[j] >= max_age / 2]
        await self.states(due)
        return len(due)

    def _lost(self, job_id: JobId) -> bool:
        known = self.store.get(job_id)
        return known is not None and known.reason == LOST_REASON
