"""Submission and cancel through slurmrestd, the CLI kept for everything else and as the fallback.

``RestSlurm`` is ``commands.Slurm`` with three methods taken over: ``submit``
sends the job to red-box's slurmrestd (one RPC from a long-lived process
instead of an ``sbatch`` process per job), ``cancel`` asks it to cancel, and
``queue`` (and ``observe``, every user's) reads the jobs' states with one RPC where ``squeue`` costs two:
``GET /jobs?update_time=T`` costs slurmrestd a few ms when no job of the
cluster changed since T (``unchanged``: the kept reading is given again), and
when one did its answer is every job of the cluster, read by ``restjobs`` as
squeue reads them. squeue stays the reading wherever that one cannot be exact,
and where the dump is too large to pay for every tick (``DUMP_MAX_JOBS``).
Accounting and the rest stay on the CLI.

What an answer means is ``verdicts``' rule. The CLI is used for a job at once
only when the answer certainly means "not made":

- slurmrestd is not serving (starting, restarting), or no connection to it
  could be made: nothing was sent, so sbatch cannot make a second job;
- ``restfields`` cannot express one of the job's options (``CliOnly``);
- slurmrestd or slurmctld refused the job: sbatch decides with its own words,
  so both paths refuse (or accept) a job the same way (a refused cancel: scancel).

An answer that may mean "Slurm has it" (no answer: slurmrestd died or hung
mid-request; error 5004 or another communication error; a body that does
not decode) raises ``verdicts.MaybeMade``: a slurmrestd that gave no answer is
ended first (so it cannot act on the request later), and ``jobs`` looks the
key up, after the bound, before any other submission. Each fallback to sbatch
is logged ("submitting through sbatch", with the reason).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence

import structlog

from wlmvk.core.errors import Unavailable
from wlmvk.core.jobs import JobId, JobState
from wlmvk.redbox.slurm import verdicts
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.cli.users import user_id
from wlmvk.redbox.slurm.processes.runner import Runner
from wlmvk.redbox.slurm.rest import dump as restjobs
from wlmvk.redbox.slurm.rest import fields as restfields
from wlmvk.redbox.slurm.rest.connection import Lost, NotSent, Response
from wlmvk.redbox.slurm.rest.daemon import Restd

_log = structlog.get_logger(__name__)

HELD = 2042
"""slurmrestd's 'Job is in held state': a held job was submitted, with its id."""


NOT_MODIFIED = 304
"""slurmrestd's answer to ``GET /jobs?update_time=T`` when no job changed since T."""

CHECK_PAUSE_MIN = 5.0
CHECK_PAUSE_MAX = 60.0
"""Seconds of squeue alone after a look that could not be used (a dump too large, an error, a
record that does not read), doubled while they keep coming: a look that only adds an RPC to
squeue's two is asked again only now and then."""

DUMP_MAX_JOBS = 2000
"""The largest dump (jobs of every user) read instead of squeue. A dump costs slurmrestd about
0.23 ms of CPU per job and red-box about 0.14 ms per job of its own (JSON and reading, measured
on the captured 22.05 records at 1,000 jobs), where squeue costs about 10 ms whatever the
cluster holds: at 2,000 jobs a changed tick costs about 0.7 s of CPU, a seventh of a core at
the kubelet's 5 s, which is where one RPC saved stops paying."""

CLOCK_MARGIN = 60
"""Seconds a kept reading's second is put back when slurmctld's own is not known (a v0.0.38 dump
carries none; squeue): slurmctld answers "no change since T" by its own clock, so a red-box up to
this far ahead of it still sees every change, and one behind only reads a whole dump more often.
v0.0.42 dumps carry slurmctld's second (``last_update``): the next look sends that one."""

REMEMBERED = 4
"""squeue answers kept for the conditional look (the kubelet's tick asks one job list)."""


def _unreachable(code: int) -> bool:
    # Slurm's communication errors (1000-1999: connection, send, receive, controller down).
    return 1000 <= code < 2000


class RestSlurm(Slurm):
    """Slurm's CLI, with submission and cancel through ``restd`` while it serves."""

    def __init__(self, runner: Runner, *, restd: Restd, user: str = "") -> None:
        super().__init__(runner, user=user)
        self.restd = restd
        # What sbatch inherits when a job asks for no variables: red-box's environment,
        # read once (iterating os.environ decodes every entry, on every submission), and
        # checked and encoded once per OpenAPI version.
        self.inherited = dict(os.environ)
        self._encoded: dict[str, restfields.Environment] = {}
        # The last readings (the second each started in, its states): squeue's by job list, and
        # the last of every job of the user (a dump, or squeue without a list).
        self._queued: dict[tuple[JobId, ...] | None, tuple[int, list[JobState]]] = {}
        self._every: tuple[int, list[JobState]] | None = None
        self._observed: tuple[int, list[tuple[str, JobState]]] | None = None  # every user's (observe)
        self._uid = user_id(self.user)
        self._pause = 0.0
        self._look_after = 0.0

    async def submit(
        self, script: bytes, options: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> JobId:
        client = self.restd.client
        if client is None:
            return await self._by_cli(script, options, env, why="slurmrestd is not serving")
        version = self.restd.version
        try:
            body = restfields.request_body(
                script.decode(), options, self._environment(version) if env is None else env, version=version
            )
        except (restfields.CliOnly, UnicodeDecodeError) as exc:
            reason = exc.reason if isinstance(exc, restfields.CliOnly) else "the script is not UTF-8"
            return await self._by_cli(script, options, env, why=reason)
        target = f"/slurm/{version}/job/submit"
        try:
            answer = await client.request("POST", target, body)
        except NotSent as exc:
            return await self._by_cli(script, options, env, why=str(exc))
        except Lost as exc:
            # It cannot act on the request later once it is gone: end it, then the rule applies.
            await self.restd.recycle(client)
            raise verdicts.MaybeMade(f"{exc} (slurmrestd ended)", since=time.monotonic()) from exc
        job_id, codes, why = _submitted(answer)
        verdict = verdicts.rest_answer(job_id, codes)
        if verdict is verdicts.Verdict.FINAL:
            return JobId(job_id)
        if verdict is verdicts.Verdict.LOOK_UP:
            raise verdicts.MaybeMade(f"slurmrestd: {why}", since=time.monotonic())
        return await self._by_cli(script, options, env, why=f"slurmrestd refused it: {why}")

    def _environment(self, version: str) -> restfields.Environment:
        encoded = self._encoded.get(version)
        if encoded is None:
            encoded = self._encoded[version] = restfields.environment(self.inherited, version=version)
        return encoded

    async def queue(self, job_ids: Sequence[JobId] | None = None) -> list[JobState]:
        """The jobs' states from one RPC: a kept reading when no job changed, else the dump itself.

        ``GET /jobs?update_time=T`` answers "no change" when slurmctld's last job update is
        older than the second before T (``_slurm_rpc_dump_jobs``), by slurmctld's clock: T is
        the second the kept dump was made in by that clock (v0.0.42's ``last_update``), else
        the second the kept reading started in by red-box's, less CLOCK_MARGIN. Any change
        answers with every job of the cluster, which ``restjobs`` reads as squeue would. squeue
        (two RPCs) is read instead while slurmrestd is not serving, when the answer is not a
        dump that reads exactly, and for a while after a dump of more than DUMP_MAX_JOBS.
        """
        key = None if job_ids is None else tuple(job_ids)
        client = self.restd.client
        if client is None or time.monotonic() < self._look_after:
            return await self._squeue(key)
        kept = self._kept(key)
        started = int(time.time()) - CLOCK_MARGIN
        query = "" if kept is None else f"?update_time={kept[0]}"
        try:
            answer = await client.request("GET", f"/slurm/{self.restd.version}/jobs{query}")
        except (NotSent, Lost) as exc:
            return await self._squeue(key, why=str(exc))
        if kept is not None and unchanged(answer):
            _log.debug("no job changed: the kept reading", since=kept[0], jobs=len(kept[1]))
            return kept[1]
        if answer.status != 200:
            return await self._squeue(key, why=f"slurmrestd answered HTTP {answer.status}")
        try:
            dump = restjobs.read(answer.body, uid=self._uid)
        except restjobs.Inexact as exc:
            return await self._squeue(key, why=f"the dump does not read as squeue: {exc}")
        # slurmctld's own second where the dump carries it: "no change since" is asked by its clock.
        self._every = (dump.last_update or started, dump.states)
        _log.debug("states read from the dump", jobs=len(dump.states), total=dump.total)
        if dump.total > DUMP_MAX_JOBS:
            self._pause_looks(f"the dump held {dump.total} jobs (more than {DUMP_MAX_JOBS})")
        else:
            self._pause = 0.0
        return _selected(dump.states, key)

    async def observe(self, job_ids: Sequence[JobId]) -> list[tuple[str, JobState]]:
        """These jobs' states whoever owns them (``Slurm.observe``) from the same one RPC as
        ``queue``: a reading of every user's jobs, kept and given again while no job changed."""
        client = self.restd.client
        if not job_ids or client is None or time.monotonic() < self._look_after:
            return await super().observe(job_ids)
        started = int(time.time()) - CLOCK_MARGIN
        kept = self._observed
        query = "" if kept is None else f"?update_time={kept[0]}"
        try:
            answer = await client.request("GET", f"/slurm/{self.restd.version}/jobs{query}")
        except (NotSent, Lost):
            return await super().observe(job_ids)
        if kept is not None and unchanged(answer):
            seen = kept[1]
        else:
            try:
                if answer.status != 200:
                    raise restjobs.Inexact(f"slurmrestd answered HTTP {answer.status}")
                dump = restjobs.read(answer.body, uid=None)
            except restjobs.Inexact as exc:
                self._pause_looks(f"every user's jobs through squeue: {exc}")
                return await super().observe(job_ids)
            seen = [(dump.owners.get(state.job_id, ""), state) for state in dump.states]
            self._observed = (dump.last_update or started, seen)
            if dump.total > DUMP_MAX_JOBS:
                self._pause_looks(f"the dump held {dump.total} jobs (more than {DUMP_MAX_JOBS})")
        wanted = frozenset(job_ids)
        return [(user, state) for user, state in seen if state.job_id in wanted]

    def _kept(self, key: tuple[JobId, ...] | None) -> tuple[int, list[JobState]] | None:
        """The newest reading that answers for these jobs, and the second it started in."""
        readings = [r for r in (self._every, self._queued.get(key)) if r is not None]
        if not readings:
            return None
        since, states = max(readings, key=lambda reading: reading[0])
        return since, _selected(states, key)

    def _pause_looks(self, why: str) -> None:
        self._pause = min(max(self._pause * 2, CHECK_PAUSE_MIN), CHECK_PAUSE_MAX)
        self._look_after = time.monotonic() + self._pause
        _log.debug("status through squeue for a while", reason=why, seconds=self._pause)

    async def _squeue(self, key: tuple[JobId, ...] | None, *, why: str = "") -> list[JobState]:
        if why:
            self._pause_looks(why)
        started = int(time.time()) - CLOCK_MARGIN
        states = await super().queue(key)
        if key is None:
            self._every = (started, states)
        self._queued.pop(key, None)
        self._queued[key] = (started, states)
        while len(self._queued) > REMEMBERED:
            del self._queued[next(iter(self._queued))]
        return states

    async def cancel(self, job_id: JobId) -> None:
        client = self.restd.client
        if client is None:
            return await super().cancel(job_id)
        try:
            answer = await client.request("DELETE", f"/slurm/{self.restd.version}/job/{int(job_id)}")
        except (NotSent, Lost):
            return await super().cancel(job_id)  # cancelling twice is harmless
        if answer.status == 200:
            return None
        code, text = _first_error(answer)
        if _unreachable(code):
            raise Unavailable(f"slurmrestd: cancel {job_id}: {text}")
        # scancel decides in its own words (an unknown id, say: it says nothing and exits 0).
        _log.debug("cancelling through scancel", job_id=job_id, reason=f"slurmrestd: {code} {text}")
        return await super().cancel(job_id)

    async def _by_cli(
        self, script: bytes, options: Sequence[str], env: Mapping[str, str] | None, *, why: str
    ) -> JobId:
        _log.info("submitting through sbatch", reason=why)
        return await super().submit(script, options, env=env)


UNCHANGED_MAX = 4096
"""An answer longer than this holds jobs: it is not read (a changed cluster's is megabytes)."""


def _selected(states: list[JobState], key: tuple[JobId, ...] | None) -> list[JobState]:
    """The states of these jobs (of all, for None), as ``squeue -j`` lists them."""
    if key is None:
        return list(states)
    wanted = frozenset(key)
    return [state for state in states if state.job_id in wanted]


def unchanged(answer: Response) -> bool:
    """Whether ``GET /jobs?update_time=T`` says no job changed since T.

    v0.0.38 answers 304. v0.0.42 answers 200 with no jobs and ``last_update`` 0 (and a
    warning "No job changes since update_time"), where a dump carries slurmctld's time.
    """
    if answer.status == NOT_MODIFIED:
        return True
    if answer.status != 200 or len(answer.body) > UNCHANGED_MAX:
        return False
    try:
        body = json.loads(answer.body)
        last_update = body["last_update"]
    except (ValueError, KeyError, TypeError):
        return False
    number = last_update.get("number") if isinstance(last_update, dict) else last_update
    return body.get("jobs") == [] and number == 0


def _submitted(answer: Response) -> tuple[int, list[int] | None, str]:
    """slurmrestd's answer to a submission: its job id (0: none), its error codes (None: the body
    does not decode as an answer), and what it says, for a log line."""
    try:
        body = json.loads(answer.body)
        errors = body.get("errors") or []
        codes = [int(error.get("error_code") or error.get("error_number") or 0) for error in errors]
    except (ValueError, AttributeError, TypeError):
        return 0, None, f"HTTP {answer.status}: {answer.body[:200].decode(errors='replace')}"
    job_id = body.get("job_id")
    if isinstance(job_id, int) and job_id > 0:
        return job_id, codes, ""
    code, text = _first_error(answer)
    return 0, codes, f"HTTP {answer.status}, error {code}: {text}"


def _first_error(answer: Response) -> tuple[int, str]:
    try:
        errors = json.loads(answer.body).get("errors") or []
    except (ValueError, AttributeError):
        return 0, answer.body[:200].decode(errors="replace")
    if not errors:
        return 0, f"HTTP {answer.status}"
    first = errors[0]
    # Submission answers name the code error_code, cancel answers error_number.
    return int(first.get("error_code") or first.get("error_number") or 0), str(first.get("error", ""))
