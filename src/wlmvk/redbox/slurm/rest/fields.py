"""What slurmrestd receives for a batch job: the options sbatch would take, as JSON fields.

slurmrestd ignores the script's ``#SBATCH`` lines: every option has to be
a field of the ``job`` object. The options are the ones sbatch ends with,
read by ``core.sbatch.combined`` (the script's directives, red-box's
command line over them), so both paths start from one reading. Each is
turned into its field here, with Slurm's units (minutes, MB) computed by
``core.durations`` and ``core.memory``.

An option this table cannot express exactly, or input that sbatch would
read differently (``#PBS`` lines, ``SBATCH_*`` variables, a script sbatch
refuses), raises ``CliOnly`` with the reason: that job goes through
``sbatch``, which honours or refuses it as it always did. Nothing is
dropped silently. Options that only change what sbatch prints
(``--parsable``, ``--quiet``, ``--verbose``) have no effect on the job.

The field names and shapes differ by OpenAPI version: v0.0.38 (Slurm 22.05,
the ``openapi/v0.0.38`` plugin) and v0.0.42 (``data_parser/v0.0.42``, offered
by 24.11 and 26.05 alike) each have a ``Dialect``: the same options, written
as that version reads them (GPUs as TRES strings, flags as lists, the
environment as ``NAME=value`` lines, the script inside the job). Both were
checked against real jobs (``scontrol show job`` against sbatch's).
``choose_version`` picks the first of ``VERSIONS`` a slurmrestd offers; one
that offers none of them is not used (the CLI path is).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from wlmvk.core.errors import InvalidInput
from wlmvk.slurm import durations, memory, sbatch

VERSIONS = ("v0.0.42", "v0.0.38")
"""The OpenAPI versions this module writes fields for, preferred first."""


class CliOnly(Exception):
    """This job must go through sbatch: ``reason`` says which option or input REST cannot carry."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def choose_version(offered: Iterable[str]) -> str | None:
    """The version to speak, from slurmrestd's plugin names; None if none fits.

    22.05 names its versions as ``openapi/v0.0.38`` plugins (``-s list``), later
    releases as ``data_parser/v0.0.42`` plugins (``-d list``); bare versions do too.
    """
    names = {name.strip().removeprefix("openapi/").removeprefix("data_parser/") for name in offered}
    return next((version for version in VERSIONS if version in names), None)


def plugin_options(version: str) -> list[str]:
    """slurmrestd's options that load ``version``: one OpenAPI plugin per version up to
    v0.0.38, the slurmctld plugin with a data_parser plugin from v0.0.39 on."""
    if version == "v0.0.38":
        return ["-s", f"openapi/{version}"]
    return ["-s", "openapi/slurmctld", "-d", f"data_parser/{version}"]


def _text(value: str) -> str:
    if not value:
        raise ValueError("an empty value")
    return value


def _count(value: str) -> int:
    if not value.isdigit():
        raise ValueError(f"{value!r} is not a whole number")
    return int(value)


def _minutes(value: str) -> int:
    # sbatch rounds seconds up to the next minute (Slurm's time_str2mins).
    seconds = None if durations.unlimited(value) else durations.seconds(value)
    if seconds is None:
        raise ValueError(f"{value!r} is not a duration this table converts")
    return math.ceil(seconds / 60)


def _megabytes(value: str) -> int:
    size = memory.megabytes(value)
    if not size:  # 0 means "all of the node's memory" to sbatch
        raise ValueError(f"{value!r} is not a size this table converts")
    return size


_NODES = re.compile(r"(\d+)(?:-(\d+))?")


def _nodes(value: str) -> str:
    # sbatch's -N 2 is 2-2 (a maximum too); v0.0.38 drops the maximum of [min, max] but reads
    # the text "min-max" (checked: scontrol shows NumNodes=1-1 for both).
    match = _NODES.fullmatch(value)
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"{value!r} is not N or N-M")
    return f"{match.group(1)}-{match.group(2) or match.group(1)}"


_Convert = Callable[[str], object]

NO_VAL16 = 0xFFFE
"""Slurm's "not set" for a 16-bit field."""

# Options with a value, as every version names them: long name -> (field, conversion).
_VALUED: dict[str, tuple[str, _Convert]] = {
    "account": ("account", _text),
    "array": ("array", _text),
    "chdir": ("current_working_directory", _text),
    "comment": ("comment", _text),
    "constraint": ("constraints", _text),
    "cpus-per-task": ("cpus_per_task", _count),
    "dependency": ("dependency", _text),
    "error": ("standard_error", _text),
    "input": ("standard_input", _text),
    "job-name": ("name", _text),
    "licenses": ("licenses", _text),
    "mail-user": ("mail_user", _text),
    "mem": ("memory_per_node", _megabytes),
    "mem-per-cpu": ("memory_per_cpu", _megabytes),
    "mincpus": ("minimum_cpus_per_node", _count),
    "nodes": ("nodes", _nodes),
    "nice": ("nice", _count),
    "ntasks": ("tasks", _count),
    "ntasks-per-node": ("tasks_per_node", _count),
    "output": ("standard_output", _text),
    "partition": ("partition", _text),
    "qos": ("qos", _text),
    "reservation": ("reservation", _text),
    "time": ("time_limit", _minutes),
    "time-min": ("time_minimum", _minutes),
    "wckey": ("wckey", _text),
}


# Options without a value that every version writes alike: long name -> (field, value).
_FLAGGED: dict[str, tuple[str, object]] = {
    "hold": ("hold", True),
    "requeue": ("requeue", True),
}


def _gres(value: str) -> str:
    # sbatch 24.11+ sends --gres as TRES: each "gpu:1" becomes "gres/gpu:1".
    items = value.split(",")
    if not all(items) or any("/" in item or item.startswith("gres") for item in items):
        raise ValueError(f"{value!r} is not a gres list this table converts")
    return ",".join(f"gres/{item}" for item in items)


def _gpus(value: str) -> str:
    # --gpus=[type:]N, --gpus-per-node=..., --gpus-per-task=...: "gres/gpu:[type:]N".
    if not value or "," in value or "/" in value:
        raise ValueError(f"{value!r} is not a GPU count this table converts")
    return f"gres/gpu:{value}"


_MAIL_TYPES = frozenset({"BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT", "ARRAY_TASKS"})


def _mail_types(value: str) -> list[str]:
    # v0.0.42 takes a list of flag names; ALL, NONE and the TIME_LIMIT names are spelled otherwise.
    names = [name.upper() for name in value.split(",")]
    if not set(names) <= _MAIL_TYPES:
        raise ValueError(f"{value!r} has a mail type this table does not convert")
    return names


@dataclass(frozen=True)
class Dialect:
    """How one OpenAPI version writes a job: fields, flag shapes, environment, script."""

    version: str
    valued: Mapping[str, tuple[str, _Convert]]
    flagged: Mapping[str, tuple[str, object]]
    exclusive: Mapping[str | None, object]
    """--exclusive's value -> the ``exclusive`` (v0.0.38) or ``shared`` (v0.0.42) field."""
    exclusive_field: str
    environment: Callable[[Mapping[str, str]], object]
    script_in_job: bool
    unset: Mapping[str, object]
    """Fields sent as Slurm's "not set" where the version's parser would write 0 instead."""
    also: Mapping[str, tuple[str, _Convert]]
    """A second field some options write as well (sbatch 24.11's TresPerTask=cpu=N for -c N)."""


DIALECTS = {
    "v0.0.38": Dialect(
        version="v0.0.38",
        valued={
            **_VALUED,
            "gres": ("gres", _text),
            "gpus": ("gpus", _text),
            "gpus-per-node": ("gpus_per_node", _text),
            "gpus-per-task": ("gpus_per_task", _text),
            "mail-type": ("mail_type", _text),
        },
        flagged={**_FLAGGED, "oversubscribe": ("oversubscribe", True)},
        # v0.0.38 refuses its own schema's "true"; "exclusive" gives sbatch's OverSubscribe=NO.
        exclusive={None: "exclusive", "user": "user", "mcs": "mcs"},
        exclusive_field="exclusive",
        environment=dict,
        script_in_job=False,
        unset={},
        also={},
    ),
    "v0.0.42": Dialect(
        version="v0.0.42",
        valued={
            **_VALUED,
            "gres": ("tres_per_node", _gres),
            "gpus": ("tres_per_job", _gpus),
            "gpus-per-node": ("tres_per_node", _gpus),
            "gpus-per-task": ("tres_per_task", _gpus),
            "mail-type": ("mail_type", _mail_types),
        },
        flagged={**_FLAGGED, "oversubscribe": ("shared", ["oversubscribe"])},
        exclusive={None: ["none"], "user": ["user"], "mcs": ["mcs"]},
        exclusive_field="shared",
        # A list of NAME=value; an unknown field is ignored, not refused, from v0.0.40 on.
        environment=lambda variables: [f"{name}={value}" for name, value in variables.items()],
        script_in_job=True,
        # Left out, it is 0 (OOMKillStep=0 on the job, overriding slurm.conf); sbatch leaves
        # it NO_VAL16, as this does (checked with scontrol on 24.11).
        unset={"oom_kill_step": NO_VAL16},
        also={"cpus-per-task": ("tres_per_task", lambda value: f"cpu={value}")},
    ),
}

PRINTING_ONLY = frozenset({"parsable", "quiet", "verbose"})
"""Options that change what sbatch prints, never the job."""

STDIN_NAME = "sbatch"
"""The job name sbatch gives a script read from stdin (red-box's way) when none is set."""

UMASK = "0022"
"""SLURM_UMASK as sbatch sets it from its own umask (red-box's, 022 where it runs here); the
job's files are created with it."""


def job_request(
    script: str, argv: Sequence[str], environment: Mapping[str, str], *, version: str
) -> dict[str, object]:
    """The body of ``POST /slurm/<version>/job/submit`` for ``script`` with sbatch's ``argv`` options.

    ``environment`` is what sbatch would run with (and export to the job).
    Raises ``CliOnly`` for what only sbatch can do the same way.
    """
    dialect = DIALECTS[version]
    _check_script(script)
    _check_environment(environment)
    body, job = _without_environment(script, argv, dialect)
    job["environment"] = dialect.environment({"SLURM_UMASK": UMASK, **environment})
    return body


@dataclass(frozen=True)
class Environment:
    """An environment checked and encoded once, for every job that runs with it.

    red-box's own environment, which a job that asks for no variables inherits,
    is the same for every such job: its ``SBATCH_*`` check and its JSON (a few
    dozen variables, half of the body's encoding) are done once, not per job.
    """

    version: str
    text: str
    refusal: str = ""


def environment(variables: Mapping[str, str], *, version: str) -> Environment:
    """``variables`` checked and encoded as ``version`` writes a job's environment."""
    try:
        _check_environment(variables)
    except CliOnly as exc:
        return Environment(version, "", exc.reason)
    written = DIALECTS[version].environment({"SLURM_UMASK": UMASK, **variables})
    return Environment(version, json.dumps(written))


def request_body(
    script: str, argv: Sequence[str], environment: Mapping[str, str] | Environment, *, version: str
) -> bytes:
    """``job_request`` encoded as JSON, with an ``Environment`` encoded once or variables to encode."""
    if not isinstance(environment, Environment):
        return json.dumps(job_request(script, argv, environment, version=version)).encode()
    if environment.version != version:
        raise ValueError(f"an environment encoded for {environment.version}, not {version}")
    _check_script(script)
    if environment.refusal:
        raise CliOnly(environment.refusal)
    text = json.dumps(_without_environment(script, argv, DIALECTS[version])[0])
    # The job is the body's last member and the environment the job's last (job_request):
    # the body ends with the job's "}" and its own, and the job is never empty (it has a name).
    return (text[:-2] + ', "environment": ' + environment.text + "}}").encode()


def _check_environment(environment: Mapping[str, str]) -> None:
    for name in environment:
        if name.startswith("SBATCH_"):
            raise CliOnly(f"environment variable {name}: sbatch reads it as an option")


def _without_environment(
    script: str, argv: Sequence[str], dialect: Dialect
) -> tuple[dict[str, object], dict[str, object]]:
    """The body without the job's environment, and the job in it (where the environment goes last)."""
    try:
        options = sbatch.combined(script, argv)
    except InvalidInput as exc:
        raise CliOnly(f"sbatch's own reading decides: {exc.message}") from exc
    job: dict[str, object] = {}
    seen: dict[str, str] = {}
    for directive in options.values():
        decided = sbatch.setting(directive.name)
        if decided in seen:
            # --mem with --mem-per-cpu, --gres with --gpus: sbatch's own rule decides.
            raise CliOnly(f"--{directive.name} and --{seen[decided]} decide one setting")
        seen[decided] = directive.name
        field, value = _field(directive, dialect)
        if field in job:  # v0.0.42 writes --exclusive and --oversubscribe to one field
            raise CliOnly(f"--{directive.name} and another option write one field, {field}")
        if field:
            job[field] = value
    for name, (field, convert) in dialect.also.items():
        value = options[name].value if name in options else None
        if value is not None:
            if field in job:  # -c with --gpus-per-task: sbatch joins them in an order of its own
                raise CliOnly(f"--{name} and another option write one field, {field}")
            job[field] = convert(value)  # checked by its own field's conversion
    job.setdefault("name", STDIN_NAME)
    job.update(dialect.unset)
    if dialect.script_in_job:
        job = {"script": script, **job}
        return {"job": job}, job
    return {"script": script, "job": job}, job


def _field(directive: sbatch.Directive, dialect: Dialect) -> tuple[str, object]:
    name, value = directive.name, directive.value
    where = f"--{name}" + (f" (line {directive.line})" if directive.line else "")
    if name in PRINTING_ONLY and value is None:
        return "", None
    if name == "exclusive" and value in dialect.exclusive:
        return dialect.exclusive_field, dialect.exclusive[value]
    if name == "export" and value in (None, "ALL"):
        return "", None  # the whole environment goes, as it does by default
    if name in dialect.flagged and value is None:
        return dialect.flagged[name]
    if name in dialect.valued and value is not None:
        field, convert = dialect.valued[name]
        try:
            return field, convert(value)
        except ValueError as exc:
            raise CliOnly(f"{where}: {exc}") from exc
    shown = where if value is None else f"{where}={value}"
    raise CliOnly(f"{shown}: no slurmrestd field carries it the way sbatch does")


_PBS = re.compile(r"^#PBS", re.MULTILINE)


def _check_script(script: str) -> None:
    # What sbatch refuses or reads beyond #SBATCH: it must be the one to decide.
    if not script.startswith("#!"):
        raise CliOnly("the script has no #! line (sbatch refuses it)")
    if "\r\n" in script or "\0" in script:
        raise CliOnly("the script has DOS line breaks or NUL bytes (sbatch refuses it)")
    if _PBS.search(script):
        raise CliOnly("the script has #PBS lines (sbatch reads them as options)")
