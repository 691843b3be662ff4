"""Slurm's text output -> wlmvk values. Pure functions, no I/O.

Every format parsed here is one that ``commands`` asks for, and every
function is unit-tested on output captured from the real Slurm 22.05
(tests/fixtures/slurm_captured/). Formats were chosen for exactness:
``squeue -O`` and ``sacct --parsable2 --delimiter`` with a control-character
separator, and ``scontrol -o`` one-line records.

Slurm prints a job's name, comment and paths as given, newlines and all,
and no character is beyond what a user may give (NUL aside, which argv
cannot carry). So job rows are read one job at a time: a row starts at a
line opening with a job id and its separator, a line that does not is the
continuation of a field with a newline, and a row without exactly its
fields is skipped and reported (``Rows.skipped``), never the whole answer
failing. Only control characters in a field can break a row, and red-box
refuses them in what it submits (``scripts.check_texts``) and reads only
its own user's jobs. ``--json`` would be exact, but on 22.05 it ignores
``-j``/``-u``/``-t`` and prints about 3 KB per job of the whole cluster
(25 times the bytes and 9 times the time of ``-O`` for 300 jobs here).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from wlmvk.core import durations, gres, memory, sbatch
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import Feature, JobId, JobState, JobStatus
from wlmvk.redbox.slurm import arrays

SEP = "\x1f"
"""Field separator of the squeue -O and sacct formats (ASCII unit separator)."""

# squeue -O fields, in order; each gets SEP as its suffix.
SQUEUE_FIELDS = (
    "JobID",
    "State",
    "Reason",
    "exit_code",
    "Comment",
    "Partition",
    "NodeList",
    "SubmitTime",
    "StartTime",
    "EndTime",
    "WorkDir",
    "STDOUT",
    "STDERR",
    "UserID",
    "Name",
)
# JobArrayID prints a job id as sacct does (``12``, ``12_3``, ``12_[4-7%2]``, ``12+0``): a started
# array task or het component has a job id of its own, and is read as its job's.
SQUEUE_FORMAT = ",".join(f"{'JobArrayID' if name == 'JobID' else name}:{SEP}" for name in SQUEUE_FIELDS)

SACCT_FIELDS = (
    "JobID",
    "State",
    "Reason",
    "ExitCode",
    "Comment",
    "Partition",
    "NodeList",
    "Submit",
    "Start",
    "End",
    "WorkDir",
    "JobName",
)
SACCT_FORMAT = ",".join(SACCT_FIELDS)

_STATE_ALIASES = {
    "REQUEUE_FED": JobStatus.REQUEUED,
    "REQUEUE_HOLD": JobStatus.REQUEUED,
    "RESV_DEL_HOLD": JobStatus.PENDING,
    "RESIZING": JobStatus.RUNNING,
    "SIGNALING": JobStatus.COMPLETING,
    "STAGE_OUT": JobStatus.COMPLETING,
    "STOPPED": JobStatus.SUSPENDED,
    "SPECIAL_EXIT": JobStatus.FAILED,
    "REVOKED": JobStatus.CANCELLED,
}
_EMPTY = frozenset({"", "N/A", "Unknown", "None", "(null)", "None assigned", "NONE"})
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


def job_status(text: str) -> JobStatus:
    """Slurm's state name (``CANCELLED by 0`` and ``CANCELLED+`` included) -> JobStatus."""
    word = text.strip().split(" ", 1)[0].rstrip("+")
    if word in JobStatus.__members__:
        return JobStatus[word]
    return _STATE_ALIASES.get(word, JobStatus.UNKNOWN)


def timestamp(text: str) -> datetime | None:
    """Slurm's local ``YYYY-MM-DDTHH:MM:SS`` -> an aware UTC datetime; N/A/Unknown -> None."""
    return _timestamp(text.strip())


@functools.lru_cache(maxsize=8192)
def _timestamp(text: str) -> datetime | None:
    # Every status tick reads three times of every job, mostly the same few seconds over and
    # over; strptime and the local-time conversion took ~24 us each (50 ms a tick at 1000 jobs).
    if text in _EMPTY:
        return None
    try:
        local = datetime.strptime(text, _TIME_FORMAT)
    except ValueError:
        return None
    return local.astimezone(UTC)


def duration(text: str) -> timedelta | None:
    """A Slurm duration (``core.durations``) -> timedelta; no limit and empty -> None."""
    text = text.strip()
    if durations.unlimited(text) or text.upper() in {"", "NONE", "N/A", "PARTITION_LIMIT"}:
        return None
    seconds = durations.seconds(text)
    if seconds is None:
        raise ValueError(f"not a Slurm duration: {text!r}")
    return timedelta(seconds=seconds)


def idempotency_key(comment: str) -> str:
    """The key carried in a job comment (``core.sbatch``), or '' for a comment wlmvk did not write."""
    return sbatch.comment_key(comment)


def leading_id(text: str) -> int:
    """``12``, ``12_3`` (array task), ``12_[1-3]``, ``12+0`` (het job) -> 12."""
    match = re.match(r"\s*(\d+)", text)
    if not match:
        raise ValueError(f"not a job id: {text!r}")
    return int(match.group(1))


def _text(value: str) -> str:
    value = value.strip()
    return "" if value in _EMPTY else value


def wait_status(raw: str) -> tuple[int, int]:
    """squeue's ``exit_code`` is a raw wait status: (exit code, signal)."""
    value = int(raw.strip() or 0)
    return (value >> 8) & 0xFF, value & 0x7F


def exit_pair(text: str) -> tuple[int, int]:
    """sacct/scontrol ``code:signal`` -> (exit code, signal)."""
    code, _, signal = text.strip().partition(":")
    return int(code or 0), int(signal or 0)


@dataclass(frozen=True)
class Rows:
    """The jobs read from one answer, and the raw text of every row that could not be read."""

    states: list[JobState]
    skipped: tuple[str, ...] = ()

    def unreadable(self) -> list[JobState]:
        """An UNKNOWN state for each job whose row was skipped and that no readable row answers."""
        read = {state.job_id for state in self.states}
        ids = dict.fromkeys(job_id for text in self.skipped if (job_id := _row_id(text)) not in read)
        return [
            JobState(job_id=job_id, status=JobStatus.UNKNOWN, reason=UNREADABLE_REASON)
            for job_id in ids
            if job_id is not None
        ]


UNREADABLE_REASON = "Slurm's row of this job cannot be read (a control character in a name, comment or path)"


def _row_id(text: str) -> JobId | None:
    match = re.match(r"\d+", text)
    return JobId(int(match.group())) if match else None


# A row opens with a job id (``12``, ``12_3``, ``12_[1-3%2]``, ``12+0``, ``12.batch``) and its separator.
_ROW_START = r"\d+(?:[_+.][^\n{sep}]*)?{sep}"


def split_rows(
    output: str, count: int, sep: str, *, trailing: bool
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Cut an answer into rows (their text and ``count`` fields); the rest is returned as skipped text.

    ``trailing``: every field, the last included, ends with ``sep`` (squeue -O).
    A line that does not open a row continues the row before it: a field
    with a newline spans lines.
    """
    start = re.compile(_ROW_START.format(sep=re.escape(sep)))
    texts: list[str] = []
    skipped: list[str] = []
    # The answer's own last newline ends the last row; one more belongs to a field.
    for line in output.removesuffix("\n").split("\n") if output else []:
        if start.match(line):
            texts.append(line)
        elif texts:
            texts[-1] += "\n" + line
        elif line.strip():
            skipped.append(line)
    rows = []
    for text in texts:
        fields = text.split(sep)
        # With ``trailing``, what follows the last separator must be nothing.
        if trailing and fields.pop() != "":
            skipped.append(text)
        elif len(fields) == count:
            rows.append((text, fields))
        else:
            skipped.append(text)
    return rows, skipped


def squeue_rows(output: str) -> Rows:
    """Parse ``squeue -h -t all -O SQUEUE_FORMAT``: one job per row."""
    rows, skipped = split_rows(output, len(SQUEUE_FIELDS), SEP, trailing=True)
    groups: dict[JobId, list[arrays.Task]] = {}
    for text, fields in rows:
        row = dict(zip(SQUEUE_FIELDS, fields, strict=True))
        try:
            state = _state(row, wait_status)
        except ValueError:
            skipped.append(text)
            continue
        groups.setdefault(state.job_id, []).append(arrays.task(state, row["JobID"]))
    return Rows([arrays.combine(tasks) for tasks in groups.values()], tuple(skipped))


# sacct's names of the squeue fields it has (it has no STDOUT/STDERR).
_SACCT_AS_SQUEUE = {"ExitCode": "exit_code", "Submit": "SubmitTime", "Start": "StartTime", "End": "EndTime"}


def sacct_rows(output: str, *, sep: str = SEP) -> Rows:
    """Parse ``sacct -X -n --parsable2 --delimiter=SEP -o SACCT_FORMAT``: one allocation per row.

    Job steps (``12.batch``) are skipped should they appear; the rows of an array's
    tasks (``12_3``) or a heterogeneous job's components (``12+0``) make one state.
    """
    rows, skipped = split_rows(output, len(SACCT_FIELDS), sep, trailing=False)
    names = [_SACCT_AS_SQUEUE.get(name, name) for name in SACCT_FIELDS]
    groups: dict[JobId, list[arrays.Task]] = {}
    for text, fields in rows:
        row = dict(zip(names, fields, strict=True))
        if "." in row["JobID"]:
            continue
        try:
            state = _state({**row, "Name": row["JobName"]}, exit_pair)
        except ValueError:
            skipped.append(text)
            continue
        groups.setdefault(state.job_id, []).append(arrays.task(state, row["JobID"]))
    return Rows([arrays.combine(tasks) for tasks in groups.values()], tuple(skipped))


def _state(row: Mapping[str, str], exit_of: Callable[[str], tuple[int, int]]) -> JobState:
    """One row, by squeue's field names, -> a JobState; ValueError when a value does not read."""
    status = job_status(row["State"])
    exit_code: int | None = None
    signal = 0
    if status.terminal:
        exit_code, signal = exit_of(row["exit_code"])
    return JobState(
        job_id=JobId(leading_id(row["JobID"])),
        status=status,
        reason=_text(row["Reason"]),
        exit_code=exit_code,
        signal=signal,
        submit_time=timestamp(row["SubmitTime"]),
        start_time=timestamp(row["StartTime"]),
        # squeue shows the *expected* end of a job that still runs.
        end_time=timestamp(row["EndTime"]) if status.terminal else None,
        std_out=_text(row.get("STDOUT", "")),
        std_err=_text(row.get("STDERR", "")),
        working_dir=_text(row["WorkDir"]),
        partition=_text(row["Partition"]),
        node_list=_text(row["NodeList"]),
        name=row["Name"],
        idempotency_key=idempotency_key(row["Comment"]),
    )


@dataclass(frozen=True)
class StepRecord:
    """One line of ``sacct -p -n -o start,end,exitcode,state,jobid,jobname``."""

    id: str
    name: str
    exit_code: int
    status: JobStatus
    start_time: datetime | None
    end_time: datetime | None


def sacct_steps(output: str) -> list[StepRecord]:
    """Parse the original red-box's JobSteps query (``-p`` leaves a trailing ``|``)."""
    steps = []
    for line in output.splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < 6:
            raise ValueError(f"sacct step line has {len(fields)} fields: {line!r}")
        start, end, exit_code, state, job_id, name = fields[:6]
        steps.append(
            StepRecord(
                id=job_id,
                name=name,
                exit_code=exit_pair(exit_code)[0],
                status=job_status(state),
                start_time=timestamp(start),
                end_time=timestamp(end),
            )
        )
    return steps


# A key of a ``scontrol -o`` record: a word (with / : _ .) right before '='.
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:.]*)=")


def scontrol_record(line: str) -> dict[str, str]:
    """One ``scontrol show ... -o`` line -> {key: value}.

    Values may contain spaces (``OS=Linux 6.1 #1 SMP``) and ``=``
    (``TRES=cpu=2,mem=16000M``): a value runs until the next `` Key=``.
    """
    record: dict[str, str] = {}
    matches = list(_KEY.finditer(line))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        record[match.group(1)] = line[match.end() : end].strip()
    return record


def scontrol_records(output: str) -> list[dict[str, str]]:
    """``scontrol show job|partition|node -o``: one record per non-empty line."""
    return [scontrol_record(line) for line in output.splitlines() if line.strip()]


def scontrol_blocks(output: str) -> list[dict[str, str]]:
    """Multi-line ``scontrol show job`` output: records separated by blank lines."""
    blocks = [" ".join(block.split("\n")) for block in re.split(r"\n\s*\n", output)]
    return [scontrol_record(block) for block in blocks if block.strip()]


def user_id(text: str) -> str:
    """``slurmuser(1001)`` -> ``1001`` (the original sent the whole text; so do we)."""
    return text.strip()


def slurm_version(output: str) -> str:
    """``sinfo -V`` -> ``22.05.8`` (the original kept the trailing newline; we do not)."""
    words = output.split()
    return words[1] if len(words) > 1 else output.strip()


def config_value(output: str, key: str) -> str:
    """One value of ``scontrol show config`` (``Key = value`` lines)."""
    for line in output.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip()
    return ""


# --- partitions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRecord:
    name: str
    cpus: int
    memory_mb: int
    features: tuple[str, ...]
    gpus: int
    partitions: tuple[str, ...]


@dataclass(frozen=True)
class PartitionRecord:
    """What Slurm says of a partition, before any configured override."""

    name: str
    nodes: int
    cpu_per_node: int
    mem_per_node: int
    wall_time: int | None
    gpu_per_node: int
    features: tuple[Feature, ...]
    default: bool
    state: str
    mem_limit: int | None = None
    """The partition's own MaxMemPerNode in MB; None when Slurm says UNLIMITED."""


def _int(text: str, default: int = 0) -> int:
    match = re.match(r"\d+", text.strip())
    return int(match.group()) if match else default


def gres_gpus(text: str) -> int:
    """A node's ``Gres`` (``gpu:tesla:2(S:0-1)``, ``(null)``) -> its GPUs, read by ``core.gres``."""
    try:
        return gres.gpus(text)
    except InvalidInput:
        return 0  # slurmctld checked its own configuration: not a GPU count we can read


def _memory_mb(text: str) -> int:
    """``16000`` or ``16000M`` / ``16G`` -> MB (``core.memory``)."""
    return memory.megabytes(text) or 0


def node_records(output: str) -> list[NodeRecord]:
    """``scontrol show node -o`` -> nodes."""
    nodes = []
    for record in scontrol_records(output):
        if "NodeName" not in record:
            continue
        features = _text(record.get("AvailableFeatures", ""))
        partitions = _text(record.get("Partitions", ""))
        nodes.append(
            NodeRecord(
                name=record["NodeName"],
                cpus=_int(record.get("CPUEfctv") or record.get("CPUTot", "0")),
                memory_mb=_int(record.get("RealMemory", "0")),
                features=tuple(f for f in features.split(",") if f),
                gpus=gres_gpus(_text(record.get("Gres", ""))),
                partitions=tuple(p for p in partitions.split(",") if p),
            )
        )
    return nodes


def partition_records(output: str, nodes: Iterable[NodeRecord]) -> list[PartitionRecord]:
    """``scontrol show partition -o`` plus its nodes -> per-node resources of each partition.

    Unlike the original red-box: an UNLIMITED MaxTime is ``None`` (not 0);
    memory comes from the nodes when the partition sets no MaxMemPerNode;
    CPUs are per node (not the partition's total); node features and GPUs
    (GRES) are reported. A heterogeneous partition reports its largest node.
    """
    node_list = list(nodes)
    result = []
    for record in scontrol_records(output):
        name = record.get("PartitionName")
        if not name:
            continue
        members = [n for n in node_list if name in n.partitions]
        total_nodes = _int(record.get("TotalNodes", "0"), len(members))
        max_nodes = record.get("MaxNodes", "UNLIMITED")
        nodes_count = total_nodes if not max_nodes.isdigit() else min(int(max_nodes), total_nodes)
        node_cpus = max((n.cpus for n in members), default=0)
        if not node_cpus and total_nodes:
            node_cpus = _int(record.get("TotalCPUs", "0")) // total_nodes
        cpu_cap = record.get("MaxCPUsPerNode", "UNLIMITED")
        cpus = min(node_cpus, int(cpu_cap)) if cpu_cap.isdigit() else node_cpus
        node_mem = max((n.memory_mb for n in members), default=0)
        mem_cap = record.get("MaxMemPerNode", "UNLIMITED")
        mem = min(node_mem, _memory_mb(mem_cap)) if mem_cap[:1].isdigit() else node_mem
        if mem_cap[:1].isdigit() and not node_mem:
            mem = _memory_mb(mem_cap)
        limit = duration(record.get("MaxTime", "UNLIMITED"))
        counts: dict[str, int] = {}
        for node in members:
            for feature in node.features:
                counts[feature] = counts.get(feature, 0) + 1
        result.append(
            PartitionRecord(
                name=name,
                nodes=nodes_count,
                cpu_per_node=cpus,
                mem_per_node=mem,
                wall_time=None if limit is None else int(limit.total_seconds()),
                gpu_per_node=max((n.gpus for n in members), default=0),
                features=tuple(Feature(name=f, quantity=q) for f, q in sorted(counts.items())),
                default=record.get("Default", "NO") == "YES",
                state=record.get("State", "UP"),
                mem_limit=_memory_mb(mem_cap) if mem_cap[:1].isdigit() else None,
            )
        )
    return result


def partition_names(output: str) -> list[str]:
    """The partitions listed by ``scontrol show partition -o``, in Slurm's order."""
    return [r["PartitionName"] for r in scontrol_records(output) if r.get("PartitionName")]


def job_info_fields(record: Mapping[str, str]) -> dict[str, str]:
    """The ``scontrol show job`` keys that the original JobInfo carries, blanks normalised."""
    keys = (
        "JobId",
        "UserId",
        "JobName",
        "ExitCode",
        "JobState",
        "SubmitTime",
        "StartTime",
        "EndTime",
        "RunTime",
        "TimeLimit",
        "WorkDir",
        "StdOut",
        "StdErr",
        "Partition",
        "NodeList",
        "BatchHost",
        "NumNodes",
        "ArrayJobId",
        "Reason",
        "Comment",
    )
    return {key: _text(record.get(key, "")) for key in keys}
