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

Only the v0.0.38 plugin (Slurm 22.05) is spoken; ``choose_version`` picks it
from what a slurmrestd offers, and a slurmrestd that offers none of
``VERSIONS`` is not used (the CLI path is).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from wlmvk.core import durations, memory, sbatch
from wlmvk.core.errors import InvalidInput

VERSIONS = ("v0.0.38",)
"""The OpenAPI plugins this module writes fields for, preferred first."""


class CliOnly(Exception):
    """This job must go through sbatch: ``reason`` says which option or input REST cannot carry."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def choose_version(offered: Iterable[str]) -> str | None:
    """The plugin to speak, from slurmrestd's ``openapi/vX`` names or bare versions; None if none fits."""
    names = {name.strip().removeprefix("openapi/") for name in offered}
    return next((version for version in VERSIONS if version in names), None)


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


# Options with a value: long name -> (field, conversion).
_VALUED: dict[str, tuple[str, Callable[[str], object]]] = {
    "account": ("account", _text),
    "array": ("array", _text),
    "chdir": ("current_working_directory", _text),
    "comment": ("comment", _text),
    "constraint": ("constraints", _text),
    "cpus-per-task": ("cpus_per_task", _count),
    "dependency": ("dependency", _text),
    "error": ("standard_error", _text),
    "gres": ("gres", _text),
    "gpus": ("gpus", _text),
    "gpus-per-node": ("gpus_per_node", _text),
    "gpus-per-task": ("gpus_per_task", _text),
    "input": ("standard_input", _text),
    "job-name": ("name", _text),
    "licenses": ("licenses", _text),
    "mail-type": ("mail_type", _text),
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

# Options without a value: long name -> (field, value).
_FLAGGED: dict[str, tuple[str, object]] = {
    "hold": ("hold", True),
    "requeue": ("requeue", True),
    "oversubscribe": ("oversubscribe", True),
}

# v0.0.38 refuses its own schema's "true"; "exclusive" gives sbatch's OverSubscribe=NO.
_EXCLUSIVE = {None: "exclusive", "user": "user", "mcs": "mcs"}

PRINTING_ONLY = frozenset({"parsable", "quiet", "verbose"})
"""Options that change what sbatch prints, never the job."""

STDIN_NAME = "sbatch"
"""The job name sbatch gives a script read from stdin (red-box's way) when none is set."""

UMASK = "0022"
"""SLURM_UMASK as sbatch sets it from its own umask (red-box's, 022 where it runs here); the
job's files are created with it."""


def job_request(script: str, argv: Sequence[str], environment: Mapping[str, str]) -> dict[str, object]:
    """The body of ``POST /slurm/v0.0.38/job/submit`` for ``script`` with sbatch's ``argv`` options.

    ``environment`` is what sbatch would run with (and export to the job).
    Raises ``CliOnly`` for what only sbatch can do the same way.
    """
    _check_script(script)
    for name in environment:
        if name.startswith("SBATCH_"):
            raise CliOnly(f"environment variable {name}: sbatch reads it as an option")
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
        field, value = _field(directive)
        if field:
            job[field] = value
    job.setdefault("name", STDIN_NAME)
    job["environment"] = {"SLURM_UMASK": UMASK, **environment}
    return {"script": script, "job": job}


def _field(directive: sbatch.Directive) -> tuple[str, object]:
    name, value = directive.name, directive.value
    where = f"--{name}" + (f" (line {directive.line})" if directive.line else "")
    if name in PRINTING_ONLY and value is None:
        return "", None
    if name == "exclusive" and value in _EXCLUSIVE:
        return "exclusive", _EXCLUSIVE[value]
    if name == "export" and value in (None, "ALL"):
        return "", None  # the whole environment goes, as it does by default
    if name in _FLAGGED and value is None:
        return _FLAGGED[name]
    if name in _VALUED and value is not None:
        field, convert = _VALUED[name]
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
