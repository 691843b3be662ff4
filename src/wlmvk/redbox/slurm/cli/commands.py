"""The Slurm commands red-box needs, as typed async methods.

Each method builds one argv list, runs it through ``runner.Runner`` and
hands the text to the module that reads that output (``squeue``, ``sacct``,
``records``, ``partitions``, ``stats``). Where Slurm releases print a field
differently, the rules of the release read once from ``sinfo -V``
(``releases``) apply. Failures become ``core.errors`` classes with
Slurm's stderr in the message: a controller that does not answer is
``Unavailable``, an unknown job id ``NotFound``, a rejected submission
``InvalidInput``. Accounting that is switched off is not an error: the
accounting queries answer ``None`` and the caller uses its own records.

Job queries see only the jobs of red-box's own user (``-u``): another
user's job can neither be read, nor adopted by key, nor break a parse. A
row that cannot be read is logged and left out, the others answer. The one
exception is ``observe``, a reading of any user's jobs that red-box hands
to its caller and never acts on.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import structlog

from wlmvk.core.errors import InvalidInput, LimitReached, NotFound, Unavailable
from wlmvk.core.jobs import JobId, JobState
from wlmvk.core.usage import UsageSample
from wlmvk.redbox.slurm import verdicts
from wlmvk.redbox.slurm.cli import keys, releases, rows, sacct, slices, squeue
from wlmvk.redbox.slurm.cli import nodeinfo as partitions
from wlmvk.redbox.slurm.cli import sacctmgr as associations
from wlmvk.redbox.slurm.cli import scontrol as records
from wlmvk.redbox.slurm.cli import sstat as stats
from wlmvk.redbox.slurm.cli.users import user_name
from wlmvk.redbox.slurm.processes import overlap
from wlmvk.redbox.slurm.processes.runner import Completed, NoAnswer, Runner
from wlmvk.slurm.tenantstatus import Association, AssociationLook, Associations

_log = structlog.get_logger(__name__)

_UNREACHABLE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Zero Bytes were transmitted",
    "Connection refused",
    "Communication connection failure",
    "Slurm backup controller in standby mode",
    "Unable to establish connection",
    # slurm.conf unreadable (being rewritten, say): the client cannot start, nothing was asked.
    "Unable to process configuration file",
)
_NO_ACCOUNTING = ("accounting storage is disabled", "not running a supported accounting_storage")
_UNKNOWN_JOB = "Invalid job id specified"
# sbatch's ESLURM_ACCOUNTING_POLICY for a QoS's or an association's MaxSubmitJobs: nothing made.
_SUBMIT_LIMIT = "job submit limit"

PARTITION_TABLE_TTL = 2.0
"""Seconds one ``scontrol show partition`` answers every caller (one discovery's calls)."""

NODE_TABLE_TTL = 600.0
"""Seconds node records are reused while the partition table stays the same."""

USAGE_CONCURRENCY = 4
"""sstat processes reading one JobUsage at once.

They mostly wait for slurmd, which answers several at once: 201 running steps
of one node, 1000 ids asked, took 5.1 s (median of 3) with 2 at once, 4.8 s
with 4 and 3.8 s with 8, against 9.7-14.9 s in one sstat, at load 6-8 on 2
cores. Past what the budget can read, fewer at once finish more slices in
time: at 401 steps and a 7 s budget, slices finished read 150 and 300 steps
with 2, 250 and 200 with 4, and 0, 0, 200, 200, 200 with 8 (where each
slurmd answer walks the node's processes, 8 at once share its 2 cores and
all finish late). bench/kubelet_stats.py and its variants, 2026-12-03.
"""

USAGE_SLICE_STEPS = 25
"""Running steps per sstat process: what one failed or slow slice can lose."""

ACCOUNTING_WINDOW = "now-3days"
"""How far back a lookup by idempotency key searches the accounting database.

Keys are looked up in Slurm only when red-box's own record lacks them (a lost
state directory, a reply lost mid-submission): a kubelet asks again within
minutes, so three days cover a long weekend without reading a week of jobs.
"""


def classify(done: Completed) -> Exception:
    """A failed command -> the error a caller should see."""
    text = done.stderr + done.stdout
    if any(marker in text for marker in _UNREACHABLE):
        return Unavailable(done.message())
    if _UNKNOWN_JOB in text:
        return NotFound(done.message())
    if done.argv[0] == "sbatch":
        if _SUBMIT_LIMIT in text:
            return LimitReached(done.message())
        return InvalidInput(done.message())
    return Unavailable(done.message())


def no_accounting(done: Completed) -> bool:
    return any(marker in done.stderr + done.stdout for marker in _NO_ACCOUNTING)


class Slurm:
    """Slurm's CLI as red-box uses it."""

    def __init__(self, runner: Runner, *, user: str = "") -> None:
        self.runner = runner
        # squeue and sacct take a uid as well as a name; ours unless told.
        self.user = user or str(os.geteuid())
        self._table: asyncio.Future[Completed] | None = None
        self._table_at = 0.0
        self._nodes: tuple[str, float, list[partitions.NodeRecord]] | None = None
        self._detecting = asyncio.Lock()
        self._detected: tuple[str, releases.Release] | None = None
        self._message_timeout: float | None = None

    async def submit(
        self, script: bytes, options: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> JobId:
        """``sbatch --parsable OPTIONS`` with the script on stdin -> the new job id.

        A failure that may mean Slurm has the job (``verdicts.sbatch_failure``; sbatch killed at
        its timeout; an answer that does not read) raises ``verdicts.MaybeMade``.
        """
        try:
            done = await self.runner.run(["sbatch", "--parsable", *options], stdin=script, env=env)
        except NoAnswer as exc:
            raise verdicts.MaybeMade(exc.message, since=time.monotonic()) from exc
        if not done.ok:
            if verdicts.sbatch_failure(done.stderr + done.stdout) is verdicts.Verdict.LOOK_UP:
                raise verdicts.MaybeMade(done.message(), since=time.monotonic())
            raise classify(done)
        text = done.stdout.strip().split(";", 1)[0]
        if not text.isdigit():
            why = f"sbatch: unexpected answer {done.stdout.strip()!r}"
            raise verdicts.MaybeMade(why, since=time.monotonic())
        return JobId(int(text))

    async def cancel(self, job_id: JobId) -> None:
        await self._ok(["scancel", str(job_id)])

    async def cancel_step(self, job_id: JobId, name: str) -> str | None:
        """Cancel the step of ``job_id`` named ``name``, if Slurm still has it; its id then."""
        listing = await self.runner.run(["squeue", "-h", "-s", "-j", str(job_id), "-o", "%i %j"])
        step = overlap.step_named(listing.stdout, name) if listing.ok else None
        if step is None:
            return None
        await self._ok(["scancel", step])
        return step

    async def queue(self, job_ids: Sequence[JobId] | None = None) -> list[JobState]:
        """``squeue -t all``: the jobs Slurm still holds (finished ones until MinJobAge).

        With ``job_ids`` only those; ids Slurm no longer knows are simply absent.
        """
        release = await self.release()
        argv = ["-u", self.user, "-O", squeue.FORMAT]
        if job_ids is not None:
            if not job_ids:
                return []
            argv += ["-j", ",".join(str(i) for i in job_ids)]
        listing = await self._listing(argv)
        return _read(squeue.squeue_rows(listing, release=release, user=user_name(self.user)), "squeue")

    async def own_keys(self) -> dict[str, JobId]:
        """Each wlmvk key among the jobs of red-box's user that slurmctld holds, with its newest job
        (the lookup by key's reading, ``keys``): ``squeue -u``, so slurmctld sends only this user's
        jobs (``slurm_load_job_user``), never the cluster's."""
        listing = await self._listing(["-u", self.user, "-O", keys.SQUEUE_FORMAT])
        return _keyed(keys.squeue_keys(listing), "squeue")

    async def observe(self, job_ids: Sequence[JobId]) -> list[tuple[str, JobState]]:
        """``squeue -t all -j IDS`` with no user filter: these jobs' states, whoever owns them, each
        with its owner's name. A reading for a caller that follows jobs of several users in one
        look (the kubelet's tick): red-box itself acts on what ``queue`` shows, never on this.
        Jobs Slurm does not show (gone, or another user's hidden by PrivateData) are absent.
        """
        if not job_ids:
            return []
        release = await self.release()
        listing = await self._listing(["-O", squeue.FORMAT, "-j", ",".join(str(i) for i in job_ids)])
        read, owners = squeue.owned_rows(listing, release=release, name_of=user_name)
        return [(owners.get(state.job_id, ""), state) for state in _read(read, "squeue")]

    async def _listing(self, selection: Sequence[str]) -> str:
        """``squeue -h -t all`` of ``selection`` (its -u, -O, -j): the listing, '' when Slurm knows
        none of the jobs asked for. --local: no REQUEST_FED_INFO first (a third of what each look
        cost slurmctld); red-box submits to its own cluster only."""
        done = await self.runner.run(["squeue", "--local", "-h", "-t", "all", *selection])
        if not done.ok:
            error = classify(done)
            if isinstance(error, NotFound):
                return ""
            raise error
        return done.stdout

    async def accounting(self, job_ids: Sequence[JobId]) -> list[JobState] | None:
        """``sacct`` rows of these jobs, or None when accounting is off."""
        if not job_ids:
            return []
        return await self._sacct(["-j", ",".join(str(i) for i in job_ids)])

    async def accounting_keys(self, since: float | None = None) -> dict[str, JobId] | None:
        """Each wlmvk key in the accounting of the last ACCOUNTING_WINDOW, or of any state after the
        epoch second ``since``, with its newest job (``keys``); None without accounting."""
        start = (
            ACCOUNTING_WINDOW if since is None else time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
        )
        done = await self._sacct_run(keys.SACCT_FORMAT, ["-S", start])
        return None if done is None else _keyed(keys.sacct_keys(done.stdout), "sacct")

    async def _sacct(self, selection: Sequence[str]) -> list[JobState] | None:
        done = await self._sacct_run(sacct.FORMAT, selection)
        return None if done is None else _read(sacct.sacct_rows(done.stdout), "sacct")

    async def _sacct_run(self, fields: str, selection: Sequence[str]) -> Completed | None:
        argv = ["sacct", "-X", "-n", "-u", self.user, "--parsable2", f"--delimiter={rows.SEP}"]
        done = await self.runner.run([*argv, "-o", fields, *selection])
        if not done.ok:
            if no_accounting(done):
                return None
            raise classify(done)
        return done

    async def usage(self, job_ids: Sequence[JobId], *, budget: float | None = None) -> UsageSample:
        """CPU time and memory of these jobs' running steps, read within ``budget`` seconds.

        One ``squeue -s`` lists the running steps (jobs without one are absent from
        the answer); sstat reads them in slices (``slices``), USAGE_CONCURRENCY at a
        time, each killed when the budget runs out. A slice that fails or is cut
        short names its jobs as unanswered; the others answer. Only a failure of
        the listing raises. ``budget`` is capped by the runner's timeout.
        """
        if not job_ids:
            return UsageSample({})
        limit = self.runner.timeout if budget is None else min(budget, self.runner.timeout)
        deadline = time.monotonic() + limit
        argv = ["squeue", "--local", "-s", "-h", "-u", self.user, "-o", slices.STEP_FORMAT]
        listing = await self.runner.run([*argv, "-j", ",".join(str(i) for i in job_ids)], timeout=limit)
        if not listing.ok:
            error = classify(listing)
            if isinstance(error, NotFound):
                return UsageSample({})
            raise error
        plan = slices.plan(slices.running_steps(listing.stdout, job_ids), per_slice=USAGE_SLICE_STEPS)
        gate = asyncio.Semaphore(USAGE_CONCURRENCY)
        release = await self.release()
        answers = await asyncio.gather(
            *(self._read_slice(part, gate, deadline, limit, release) for part in plan)
        )
        combined = slices.combine(answers, sampled=datetime.now(UTC))
        if combined.unanswered:
            _log.warning("usage slices unanswered", jobs=len(combined.unanswered), reason=combined.reason)
        return UsageSample(combined.usages, combined.unanswered, combined.reason)

    async def _read_slice(
        self,
        part: slices.Slice,
        gate: asyncio.Semaphore,
        deadline: float,
        budget: float,
        release: releases.Release,
    ) -> slices.Answered:
        # One wording for every slice the budget cut short, so the answer names it once.
        late = f"sstat: no answer within the budget of {budget:g} s"
        async with gate:
            left = deadline - time.monotonic()
            if left <= 0:
                return slices.Answered(part, failure=late + " (not started)")
            argv = ["sstat", "-a", "-n", "--parsable2", "-o", stats.FIELDS, "-j", ",".join(part.targets())]
            try:
                done = await self.runner.run(argv, timeout=left)
            except Unavailable as exc:
                cut = time.monotonic() >= deadline
                return slices.Answered(part, failure=late + " (killed)" if cut else exc.message)
        # sstat names a job without a running step on stderr and still exits 0.
        if not done.ok and not done.stdout and not isinstance(classify(done), NotFound):
            return slices.Answered(part, failure=done.message())
        return slices.Answered(
            part, stats.step_rows(done.stdout), unreadable=stats.unreadable(done.stderr, release=release)
        )

    async def show_job(self, job_id: JobId) -> list[dict[str, str]]:
        """``scontrol -o show job ID``: one record per job (an array has several)."""
        done = await self._ok(["scontrol", "-o", "show", "job", str(job_id)])
        return records.scontrol_records(done.stdout)

    async def steps(self, job_id: JobId) -> list[sacct.StepRecord] | None:
        """The original JobSteps query, or None without accounting."""
        argv = ["sacct", "-p", "-n", "-j", str(job_id), "-o", "start,end,exitcode,state,jobid,jobname"]
        done = await self.runner.run(argv)
        if not done.ok:
            if no_accounting(done):
                return None
            raise classify(done)
        return sacct.sacct_steps(done.stdout)

    async def partitions(self) -> list[partitions.PartitionRecord]:
        """Partition records joined with their nodes.

        The partition table is read each time (limits and state change at any moment);
        the node table (CPUs, memory, features, GPUs: configuration) again only when the
        partition table changed or NODE_TABLE_TTL passed. ``scontrol show node`` costs
        slurmctld two RPCs (it reads the partition table too): a discovery that reads
        both every minute cost three times what one that reads the partitions does.
        Where a node has GPUs, what is in use (GresUsed) changes with every job: the
        node table is then read at each look, one ``scontrol show node`` for all nodes.
        """
        parts = await self._partition_table()
        if not parts.ok:
            raise classify(parts)
        nodes = self._nodes
        if (
            nodes is None
            or nodes[0] != parts.stdout
            or time.monotonic() - nodes[1] > NODE_TABLE_TTL
            or any(n.gpu_kinds for n in nodes[2])
        ):
            done = await self._ok(["scontrol", "-d", "-o", "show", "node"])
            nodes = self._nodes = (parts.stdout, time.monotonic(), partitions.node_records(done.stdout))
        return partitions.partition_records(parts.stdout, nodes[2])

    async def partition_names(self) -> list[str]:
        done = await self._partition_table()
        if not done.ok:
            raise classify(done)
        return partitions.partition_names(done.stdout)

    async def _partition_table(self) -> Completed:
        """``scontrol -o show partition``, one look shared for PARTITION_TABLE_TTL seconds.

        A kubelet's discovery asks for the names, then for each partition's resources
        (which join the table with the nodes): one look at the table answers both.
        """
        shared = self._table
        if shared is None or time.monotonic() - self._table_at > PARTITION_TABLE_TTL:
            self._table_at = time.monotonic()
            shared = self._table = asyncio.ensure_future(
                self.runner.run(["scontrol", "-o", "show", "partition"])
            )
        try:
            done = await asyncio.shield(shared)
        except BaseException:
            if shared.done() and self._table is shared:
                self._table = None  # a failed look is not kept
            raise
        if not done.ok and self._table is shared:
            self._table = None
        return done

    async def version(self) -> str:
        """The version ``sinfo -V`` printed (``22.05.8``), read once."""
        return (await self._detect())[0]

    async def release(self) -> releases.Release:
        """The Slurm release whose output forms red-box reads, read once from ``sinfo -V``."""
        return (await self._detect())[1]

    async def _detect(self) -> tuple[str, releases.Release]:
        async with self._detecting:
            if self._detected is None:
                done = await self._ok(["sinfo", "-V"])
                try:
                    release = releases.detected(done.stdout)
                except ValueError as exc:
                    raise Unavailable(str(exc)) from exc
                self._detected = (records.slurm_version(done.stdout), release)
                _log.info("slurm release detected", release=str(release))
            return self._detected

    async def _ok(self, argv: Sequence[str]) -> Completed:
        """Run a Slurm command; its failure raised as ``classify`` says."""
        done = await self.runner.run(argv)
        if not done.ok:
            raise classify(done)
        return done

    async def message_timeout(self) -> float:
        """Slurm's MessageTimeout in seconds (``scontrol show config``), read once it answers."""
        if self._message_timeout is None:
            done = await self._ok(["scontrol", "show", "config"])
            self._message_timeout = verdicts.message_timeout(done.stdout)
            _log.info("slurm message timeout read", seconds=self._message_timeout)
        return self._message_timeout

    async def associations(self, cluster: str) -> Associations:
        """Red-box's own user's associations on ``cluster`` and the QoS Slurm knows (two sacctmgr)."""
        user = user_name(self.user)
        argv = ["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", f"cluster={cluster}"]
        rows = await self._ok([*argv, f"format={associations.FORMAT}"])
        return Associations(
            user, cluster, associations.association_rows(rows.stdout), await self._qos_names()
        )

    async def _qos_names(self) -> frozenset[str]:
        names = await self._ok(["sacctmgr", "-n", "-P", "show", "qos", "format=Name"])
        return associations.qos_names(names.stdout)

    async def observe_associations(self, users: Sequence[str], cluster: str) -> AssociationLook:
        """What red-box's user sees of ``users``' associations on ``cluster``, and the QoS Slurm
        knows: two sacctmgr however many users (a reading, for the status of many tenants)."""
        wanted = sorted(set(users))
        odd = [u for u in wanted if not associations.USER_NAME.fullmatch(u)]
        if odd:
            raise InvalidInput(f"not a user name sacctmgr can be asked about: {', '.join(map(repr, odd))}")
        found: dict[str, tuple[Association, ...]] = {}
        if wanted:
            where = ["where", f"users={','.join(wanted)}", f"cluster={cluster}"]
            argv = ["sacctmgr", "-n", "-P", "show", "assoc", *where, f"format={associations.USERS_FORMAT}"]
            rows = await self._ok(argv)
            found = {u: a for u, a in associations.user_rows(rows.stdout).items() if u in wanted}
        return AssociationLook(cluster, user_name(self.user), found, await self._qos_names())

    async def cluster_name(self) -> str:
        done = await self._ok(["scontrol", "show", "config"])
        return records.config_value(done.stdout, "ClusterName")


def _read(read: rows.Rows, command: str) -> list[JobState]:
    """The readable rows, and UNKNOWN for a job whose row is not: its pod is left as it is."""
    _skipped(read.skipped, command)
    return read.states + read.unreadable()


def _keyed(read: keys.Keys, command: str) -> dict[str, JobId]:
    _skipped(read.skipped, command)
    return read.jobs


def _skipped(texts: Sequence[str], command: str) -> None:
    for text in texts:
        _log.warning("unreadable job row skipped", command=command, row=text[:500])
