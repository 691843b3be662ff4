"""The ``#SBATCH`` directives of a batch script, read as sbatch reads them.

The operator needs the job's resource request before Slurm sees it: the
request becomes node affinity over the partition labels, so that Kubernetes
places the job pod only on a partition that can run it. The original parser
crashed on valueless flags (``--exclusive``) and on comments after a
directive; this one follows sbatch's own rules:

- directives are lines starting with ``#SBATCH`` in the first column; blank
  lines and other comments are skipped; reading stops at the first command;
- ``--key=value``, ``--key value``, ``-N 2``, ``-N2``, ``-N=2``;
- options that take no value (``--exclusive``, ``--requeue``...) never
  swallow the next token, and an unquoted ``#`` ends the directive;
- options the operator does not use are accepted and ignored.

A directive that cannot be read raises ``InvalidInput`` with the line
number, so the SlurmJob gets a clear condition rather than a crash.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from wlmvk.core.errors import InvalidInput

PREFIX = "#SBATCH"

# Long options that take no value, or only an optional ``=value``.
_FLAGS = frozenset(
    {
        "contiguous",
        "exclusive",
        "export",
        "get-user-env",
        "help",
        "hold",
        "ignore-pbs",
        "nice",
        "no-kill",
        "no-requeue",
        "overcommit",
        "oversubscribe",
        "parsable",
        "propagate",
        "quiet",
        "reboot",
        "requeue",
        "spread-job",
        "test-only",
        "usage",
        "use-min-nodes",
        "verbose",
        "version",
        "wait",
        "wrap",
    }
)
_SHORT_FLAGS = frozenset("HhkOQsvVW")
_SHORT_VALUES = {
    "a": "array",
    "A": "account",
    "b": "begin",
    "B": "extra-node-info",
    "c": "cpus-per-task",
    "C": "constraint",
    "d": "dependency",
    "D": "chdir",
    "e": "error",
    "F": "nodefile",
    "G": "gpus",
    "i": "input",
    "J": "job-name",
    "L": "licenses",
    "m": "distribution",
    "M": "clusters",
    "n": "ntasks",
    "N": "nodes",
    "o": "output",
    "p": "partition",
    "q": "qos",
    "S": "core-spec",
    "t": "time",
    "w": "nodelist",
    "x": "exclude",
}
_SHORT_FLAG_NAMES = {
    "H": "hold",
    "h": "help",
    "k": "no-kill",
    "O": "overcommit",
    "Q": "quiet",
    "s": "oversubscribe",
    "v": "verbose",
    "V": "version",
    "W": "wait",
}


@dataclass(frozen=True)
class Directive:
    """One option of one ``#SBATCH`` line; ``value`` is None for a flag."""

    name: str
    value: str | None
    line: int


@dataclass(frozen=True)
class Requirements:
    """What the script asks of a partition, in the units of the node labels.

    Zero means "not asked". ``wall_time`` is in seconds and ``mem_per_node``
    in MB. ``constraints`` is a disjunction of conjunctions of feature names
    (``a&b|c`` is ``(("a", "b"), ("c",))``).
    """

    nodes: int = 0
    wall_time: int = 0
    mem_per_node: int = 0
    cpu_per_node: int = 0
    gpu_per_node: int = 0
    partitions: tuple[str, ...] = ()
    constraints: tuple[tuple[str, ...], ...] = ()


def directives(script: str) -> list[Directive]:
    """Every option of the script's ``#SBATCH`` block, in order."""
    found: list[Directive] = []
    for number, text in _directive_lines(script):
        tokens = _tokens(text, number)
        index = 0
        while index < len(tokens):
            directive, index = _option(tokens, index, number)
            found.append(directive)
    return found


def requirements(script: str) -> Requirements:
    """The partition resources the script's directives require."""
    options: dict[str, Directive] = {}
    for directive in directives(script):
        options[directive.name] = directive  # as in sbatch, the last occurrence wins
    nodes = _nodes(options.get("nodes"))
    cpus_per_task = _count(options.get("cpus-per-task"), default=1)
    tasks_per_node = _count(options.get("ntasks-per-node"), default=0)
    tasks = _count(options.get("ntasks"), default=0)
    if tasks_per_node == 0 and tasks and nodes:
        tasks_per_node = math.ceil(tasks / nodes)
    asked_cpus = "cpus-per-task" in options or tasks_per_node > 0
    cpu_per_node = cpus_per_task * max(tasks_per_node, 1) if asked_cpus else 0
    mincpus = _count(options.get("mincpus"), default=0)
    cpu_per_node = max(cpu_per_node, mincpus)
    mem = _memory(options.get("mem"))
    per_cpu = _memory(options.get("mem-per-cpu"))
    if not mem and per_cpu:
        mem = per_cpu * max(cpu_per_node, 1)
    return Requirements(
        nodes=nodes,
        wall_time=_wall_time(options.get("time")),
        mem_per_node=mem,
        cpu_per_node=cpu_per_node,
        gpu_per_node=_gpus(options, nodes=nodes),
        partitions=_list(options.get("partition")),
        constraints=_constraints(options.get("constraint")),
    )


def _directive_lines(script: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(script.splitlines(), start=1):
        if line.startswith(PREFIX) and (len(line) == len(PREFIX) or line[len(PREFIX)].isspace()):
            yield number, line[len(PREFIX) :]
            continue
        text = line.strip()
        if text and not text.startswith("#"):
            return  # sbatch stops at the first command
        # blank lines and comments (also an indented "#SBATCH", which sbatch ignores) are skipped


def _tokens(text: str, number: int) -> list[str]:
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError as exc:
        raise InvalidInput(f"line {number}: cannot read #SBATCH directive: {exc}") from exc


def _option(tokens: list[str], index: int, number: int) -> tuple[Directive, int]:
    token = tokens[index]
    if token.startswith("--") and len(token) > 2:
        name, eq, value = token[2:].partition("=")
        if eq:
            return Directive(name, value, number), index + 1
        if name in _FLAGS:
            return Directive(name, None, number), index + 1
        if index + 1 >= len(tokens):
            raise InvalidInput(f"line {number}: option --{name} needs a value")
        return Directive(name, tokens[index + 1], number), index + 2
    if token.startswith("-") and len(token) > 1:
        letter, rest = token[1], token[2:]
        if letter in _SHORT_FLAGS:
            if rest and rest[0] != "=":
                # bundled flags such as -HQ: each letter is its own flag
                return Directive(_SHORT_FLAG_NAMES[letter], None, number), _rebundle(tokens, index, rest)
            return Directive(_SHORT_FLAG_NAMES[letter], rest[1:] or None, number), index + 1
        name = _SHORT_VALUES.get(letter, letter)
        if rest:
            return Directive(name, rest.removeprefix("="), number), index + 1
        if index + 1 >= len(tokens):
            raise InvalidInput(f"line {number}: option -{letter} needs a value")
        return Directive(name, tokens[index + 1], number), index + 2
    raise InvalidInput(f"line {number}: {token!r} is not an sbatch option")


def _rebundle(tokens: list[str], index: int, rest: str) -> int:
    tokens[index] = "-" + rest
    return index


def _count(directive: Directive | None, *, default: int) -> int:
    if directive is None:
        return default
    value = directive.value or ""
    if not value.isdigit():
        raise InvalidInput(f"line {directive.line}: --{directive.name} wants a count, not {value!r}")
    return int(value)


def _nodes(directive: Directive | None) -> int:
    if directive is None:
        return 0
    value = directive.value or ""
    low = re.split(r"[-,:]", value, maxsplit=1)[0]
    if not low.isdigit():
        raise InvalidInput(f"line {directive.line}: --nodes wants N or MIN-MAX, not {value!r}")
    return int(low)


_MEMORY = re.compile(r"(\d+)([KMGT]?)(B?)", re.IGNORECASE)
_MB_PER_UNIT = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}


def _memory(directive: Directive | None) -> int:
    """Megabytes, rounded up; sbatch's default unit is MB."""
    if directive is None:
        return 0
    match = _MEMORY.fullmatch(directive.value or "")
    if match is None:
        raise InvalidInput(
            f"line {directive.line}: --{directive.name} wants a size such as 4000, 500K, 4G or 1T,"
            f" not {directive.value!r}"
        )
    return math.ceil(int(match.group(1)) * _MB_PER_UNIT[match.group(2).upper()])


_UNLIMITED = {"unlimited", "infinite"}


def _wall_time(directive: Directive | None) -> int:
    """Seconds, from any of Slurm's time formats; 0 when not asked or unlimited."""
    if directive is None:
        return 0
    value = directive.value or ""
    if value.lower() in _UNLIMITED:
        return 0
    seconds = parse_duration(value)
    if seconds is None:
        raise InvalidInput(
            f"line {directive.line}: --time wants minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS,"
            f" not {value!r}"
        )
    return seconds


def parse_duration(value: str) -> int | None:
    """Seconds of a Slurm time value, or None when it is not one."""
    days = 0
    rest = value
    if "-" in value:
        day_text, _, rest = value.partition("-")
        if not day_text.isdigit():
            return None
        days = int(day_text)
    parts = rest.split(":")
    if not all(part.isdigit() for part in parts) or len(parts) > 3:
        return None
    numbers = [int(part) for part in parts]
    if "-" in value:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = [*numbers, 0, 0][:3]
    elif len(numbers) == 1:  # minutes
        hours, minutes, seconds = 0, numbers[0], 0
    elif len(numbers) == 2:  # minutes:seconds
        hours, minutes, seconds = 0, numbers[0], numbers[1]
    else:
        hours, minutes, seconds = numbers
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _gpus(options: dict[str, Directive], *, nodes: int) -> int:
    if (per_node := options.get("gpus-per-node")) is not None:
        return _gpu_count(per_node, per_node.value or "")
    if (gres := options.get("gres")) is not None:
        return sum(_gres_gpus(gres, item) for item in (gres.value or "").split(","))
    if (total_gpus := options.get("gpus")) is not None:
        return math.ceil(_gpu_count(total_gpus, total_gpus.value or "") / max(nodes, 1))
    return 0


def _gres_gpus(directive: Directive, item: str) -> int:
    """GPUs in one ``--gres`` item: ``gpu``, ``gpu:2``, ``gpu:a100`` or ``gpu:a100:2``."""
    parts = item.strip().split(":")
    if parts[0] != "gpu":
        return 0
    if len(parts) == 1 or (len(parts) == 2 and not parts[1].isdigit()):
        return 1
    return _gpu_count(directive, parts[-1])


def _gpu_count(directive: Directive, text: str) -> int:
    count = text.rsplit(":", 1)[-1]
    if not count.isdigit():
        raise InvalidInput(f"line {directive.line}: --{directive.name} wants a GPU count, not {text!r}")
    return int(count)


def _list(directive: Directive | None) -> tuple[str, ...]:
    if directive is None or not directive.value:
        return ()
    return tuple(item for item in directive.value.split(",") if item)


_FEATURE = re.compile(r"[A-Za-z0-9_.\-]+")


def _constraints(directive: Directive | None) -> tuple[tuple[str, ...], ...]:
    """``a&b|c`` -> ((a, b), (c,)); brackets and ``*count`` are dropped."""
    if directive is None or not directive.value:
        return ()
    text = directive.value.replace("[", "").replace("]", "").replace(",", "&")
    alternatives: list[tuple[str, ...]] = []
    for alternative in text.split("|"):
        names = []
        for term in alternative.split("&"):
            name = term.split("*", 1)[0].strip()
            if not _FEATURE.fullmatch(name):
                raise InvalidInput(
                    f"line {directive.line}: --constraint has a feature name it cannot read: {term!r}"
                )
            names.append(name)
        alternatives.append(tuple(names))
    return tuple(alternatives)
