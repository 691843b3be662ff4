"""What a submission becomes: sbatch options and, for container jobs, the batch script.

Pure functions. A JobSpec's extras become sbatch options (never a shell
string), merged with the script's own ``#SBATCH`` lines by ``core.sbatch``:
``--partition`` and ``--chdir`` are red-box's, ``--job-name``, ``--output``
and ``--error`` give way to the script's, and the idempotency key rides in
``--comment=wlmvk:<key>`` ahead of the script's own comment, where Slurm
keeps it (and accounting stores it) so a lost job can be found by key even
when red-box lost its own records. A container job becomes a ``#!/bin/sh`` script that
runs the image with the chosen runtime (``core.runtimes``).

No control character reaches what Slurm stores and prints back unescaped
(the options, the ``#SBATCH`` lines, ``SBATCH_*`` variables): a newline or
separator there would be read back as a broken row by every status query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from wlmvk.core import runtimes
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerJobSpec
from wlmvk.slurm import durations, sbatch

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_SLURM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,200}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_BUT_TAB = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def check_text(what: str, value: str) -> str:
    """Refuse a control character in ``value``, naming ``what`` it is."""
    if _CONTROL.search(value):
        raise InvalidInput(
            f"{what} {value[:200]!r}: control characters (newline, tab, ...) are not accepted: "
            "Slurm would print them back unescaped"
        )
    return value


def _check_name(what: str, value: str) -> str:
    # An account or QoS is one word: anything else would add to (or break) its #SBATCH line.
    if not _SLURM_NAME.fullmatch(value):
        raise InvalidInput(f"{what} {value[:200]!r}: use up to 128 letters, digits, '.', '_', '-'")
    return value


def check_key(key: str) -> str:
    if key and not _KEY.fullmatch(key):
        raise InvalidInput(f"idempotency key {key!r}: use up to 128 letters, digits, '.', '_', ':', '-'")
    return key


def check_script(script: str, *, limit: int) -> bytes:
    data = script.encode("utf-8")
    if not script.strip():
        raise InvalidInput("the batch script is empty")
    if len(data) > limit:
        raise InvalidInput(f"the batch script has {len(data)} bytes; the limit is {limit}")
    for number, line in enumerate(script.split("\n"), 1):
        if line.lstrip().startswith("#SBATCH") and _CONTROL_BUT_TAB.search(line.rstrip("\r")):
            raise InvalidInput(f"line {number} of the batch script: a control character in {line[:200]!r}")
    return data


MAX_ENV_ENTRY = 128 * 1024 - 1
"""Bytes of one ``NAME=value`` (the kernel's MAX_ARG_STRLEN, with its NUL): more cannot be exec'd."""
MAX_ENV_BYTES = 1024 * 1024
"""Bytes of the whole requested environment: sbatch must still start (argv and env share ARG_MAX)."""


def check_env(env: Mapping[str, str]) -> dict[str, str]:
    total = 0
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise InvalidInput(f"environment variable name {name[:100]!r} is not valid")
        if "\x00" in value:
            raise InvalidInput(f"environment variable {name} contains a NUL byte")
        if name.startswith("SBATCH_"):
            check_text(f"environment variable {name}", value)  # sbatch reads these as options
        size = len(name.encode()) + 1 + len(value.encode())
        if size > MAX_ENV_ENTRY:
            raise InvalidInput(f"environment variable {name} has {size} bytes; the limit is {MAX_ENV_ENTRY}")
        total += size + 1
    if total > MAX_ENV_BYTES:
        raise InvalidInput(f"the environment has {total} bytes; the limit is {MAX_ENV_BYTES}")
    return dict(env)


def environment(base: Mapping[str, str], requested: Mapping[str, str]) -> dict[str, str] | None:
    """What Slurm's command (sbatch, srun) runs with: ``base`` with the checked ``requested`` over it.

    None when nothing is requested: the command inherits red-box's environment as it is.
    """
    return {**base, **check_env(requested)} if requested else None


def sbatch_options(
    *,
    script: str,
    partition: str,
    name: str,
    working_dir: str,
    std_out: str,
    std_err: str,
    idempotency_key: str,
) -> list[str]:
    """The sbatch options of a submission (paths already resolved and checked by the caller)."""
    if name and not _NAME.fullmatch(name):
        raise InvalidInput(f"job name {name!r}: 1-200 printable characters")
    asked = [
        ("partition", partition),
        ("job-name", name),
        ("chdir", working_dir),
        ("output", std_out),
        ("error", std_err),
    ]
    return sbatch.command_line(script, asked, key=check_key(idempotency_key))


def container_script(spec: ContainerJobSpec, runtime: str, *, pull_name: str, binary: str = "") -> str:
    """A batch script that runs ``spec.image`` with ``runtime`` (``core.runtimes`` builds its lines),
    started as ``binary`` (its path on the login node) when given, charged to ``spec.account``
    and ``spec.qos`` when given (red-box's allow-lists then judge them as any script's)."""
    lines = ["#!/bin/sh"]
    for option, value in (("account", spec.account), ("qos", spec.qos)):
        if value:
            lines.append(f"#SBATCH --{option}={_check_name(option, value)}")
    if spec.wall_time > 0:
        lines.append(f"#SBATCH --time={durations.minutes_text(spec.wall_time)}")
    if spec.mem_per_node > 0:
        lines.append(f"#SBATCH --mem={spec.mem_per_node}")
    if spec.nodes > 0:
        lines.append(f"#SBATCH --nodes={spec.nodes}")
    if spec.cpu_per_node > 0:
        lines.append(f"#SBATCH --cpus-per-task={spec.cpu_per_node}")
    lines += runtimes.job_lines(runtime, spec.image, spec.options, pull_name=pull_name, binary=binary)
    return "\n".join(lines) + "\n"
