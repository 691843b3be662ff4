"""What sbatch receives: the script's ``#SBATCH`` directives and the final options.

One reading of a batch script for every side (the operator's placement, the
kubelet's derived options, red-box's command line), with sbatch's own rules,
checked against sbatch 22.05:

- directives are lines starting with ``#SBATCH`` in the first column (an
  indented ``#SBATCH`` is a plain comment to sbatch); blank lines and other
  comments are skipped; reading stops at the first command;
- ``--key=value``, ``--key value``, ``-N 2``, ``-N2``, ``-N=2``; options
  that take no value (``--exclusive``...) never swallow the next token, and
  an unquoted ``#`` ends the directive;
- an option given twice in the script: the last occurrence wins;
- an option on the command line wins over the script.

What wlmvk adds is decided here too (``with_defaults`` for the kubelet's
script lines, ``command_line`` for red-box's argv): the partition and the
working directory are wlmvk's (the node the pod was placed on, the confined
directory); the job name, output and error paths are defaults that a
script's own ``#SBATCH`` line overrides; the idempotency key rides in the
comment, ahead of a comment the script sets (``wlmvk:<key> <theirs>``).

A directive that cannot be read raises ``InvalidInput`` with the line
number, so the SlurmJob or pod gets a clear reason rather than a crash.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from wlmvk.core.errors import InvalidInput

PREFIX = "#SBATCH"

COMMENT_PREFIX = "wlmvk:"
"""Idempotency keys travel in the job's comment as ``wlmvk:<key>``, then the script's own comment."""

# Long options that take no value, or only an optional ``=value``.
_FLAGS = frozenset(
    {
        "contiguous", "exclusive", "export", "get-user-env", "help", "hold", "ignore-pbs", "nice",
        "no-kill", "no-requeue", "overcommit", "oversubscribe", "parsable", "propagate", "quiet",
        "reboot", "requeue", "spread-job", "test-only", "usage", "use-min-nodes", "verbose",
        "version", "wait", "wrap",
    }
)  # fmt: skip
_SHORT_FLAGS = {
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
_SHORT_VALUES = {
    "a": "array", "A": "account", "b": "begin", "B": "extra-node-info", "c": "cpus-per-task",
    "C": "constraint", "d": "dependency", "D": "chdir", "e": "error", "F": "nodefile", "G": "gpus",
    "i": "input", "J": "job-name", "L": "licenses", "m": "distribution", "M": "clusters",
    "n": "ntasks", "N": "nodes", "o": "output", "p": "partition", "q": "qos", "S": "core-spec",
    "t": "time", "w": "nodelist", "x": "exclude",
}  # fmt: skip

# Options that decide the same setting: sbatch refuses --mem with --mem-per-cpu, and a
# script asking for GPUs in any spelling has asked for them.
_SETTING = {
    "mem-per-cpu": "mem",
    "mem-per-gpu": "mem",
    "gpus": "gres",
    "gpus-per-node": "gres",
    "gpus-per-task": "gres",
}

# What wlmvk decides whatever the script says (command line over script), and what the
# script may override (passed only when the script is silent).
OURS = frozenset({"partition", "chdir"})
DEFAULTS = frozenset({"job-name", "output", "error"})


@dataclass(frozen=True)
class Directive:
    """One option of one ``#SBATCH`` line: its long name, ``value`` None for a flag."""

    name: str
    value: str | None
    line: int


def directives(script: str) -> list[Directive]:
    """Every option of the script's ``#SBATCH`` block, in order."""
    return list(_read(script))


@functools.lru_cache(maxsize=32)
def _read(script: str) -> tuple[Directive, ...]:
    # One submission reads its script twice (red-box's command line, then slurmrestd's
    # fields), and pods of one workload share theirs: the reading is kept for a while.
    found: list[Directive] = []
    for number, text in _directive_lines(script):
        tokens = _tokens(text, number)
        index = 0
        while index < len(tokens):
            directive, index = _option(tokens, index, number)
            found.append(directive)
    return tuple(found)


def effective(script: str) -> dict[str, Directive]:
    """Each option the script sets, by long name, as sbatch takes it (the last occurrence)."""
    return {directive.name: directive for directive in directives(script)}


def combined(script: str, argv: Sequence[str]) -> dict[str, Directive]:
    """Each option sbatch ends with for ``script`` run with the options ``argv``.

    The script's directives, then the command line's over them (the command
    line wins); ``argv`` is read with the same rules, its directives have line 0.
    """
    found = effective(script)
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        directive, index = _option(tokens, index, 0)
        found[directive.name] = directive
    return found


def setting(name: str) -> str:
    """The setting an option decides: ``mem`` for ``--mem-per-cpu``, ``gres`` for ``--gpus``..."""
    return _SETTING.get(name, name)


def settings(script: str) -> frozenset[str]:
    """The settings the script decides (``mem`` also for ``--mem-per-cpu``, ``gres`` for ``--gpus``)."""
    return frozenset(_SETTING.get(directive.name, directive.name) for directive in directives(script))


def with_defaults(script: str, defaults: Sequence[tuple[str, str]]) -> str:
    """``script`` with ``#SBATCH --name=value`` for each default it does not set itself.

    The lines go right after the shebang (``#!/bin/sh`` is added when there is
    none), ahead of the script's own directives.
    """
    already = settings(script)
    lines = [
        f"{PREFIX} --{name}={value}" for name, value in defaults if _SETTING.get(name, name) not in already
    ]
    if not lines and script.startswith("#!"):
        return script
    body = script if script.endswith("\n") or not script else script + "\n"
    head, sep, rest = body.partition("\n")
    shebang, remainder = (head, rest) if head.startswith("#!") else ("#!/bin/sh", body)
    added = "".join(f"{line}\n" for line in lines)
    return f"{shebang}\n{added}{remainder}" if sep or remainder else f"{shebang}\n{added}"


def command_line(script: str, options: Sequence[tuple[str, str]], *, key: str) -> list[str]:
    """The options sbatch gets on its command line for ``script``.

    ``options`` are (long name, value) pairs, empty values skipped: those in
    ``OURS`` always go, those in ``DEFAULTS`` only when the script does not set
    them. The key goes in ``--comment``, followed by the script's own comment
    (the command line wins, so that comment would otherwise be lost).
    """
    script_sets = effective(script)
    argv = []
    for name, value in options:
        if name not in OURS | DEFAULTS:
            raise ValueError(f"--{name} is neither wlmvk's nor a default")
        if value and (name in OURS or name not in script_sets):
            argv.append(f"--{name}={value}")
    if key:
        theirs = script_sets.get("comment")
        comment = f"{COMMENT_PREFIX}{key}"
        if theirs is not None and theirs.value:
            comment = f"{comment} {theirs.value}"
        argv.append(f"--comment={comment}")
    return argv


def job_name(script: str, default: str) -> str:
    """The name Slurm gives the job: the script's own ``--job-name``, else ``default``.

    An unreadable script names nothing (it is refused where it is submitted).
    """
    try:
        own = effective(script).get("job-name")
    except InvalidInput:
        return default
    return own.value if own is not None and own.value else default


def comment_key(comment: str) -> str:
    """The key carried in a job comment, or '' for a comment wlmvk did not write."""
    rest = comment.strip().removeprefix(COMMENT_PREFIX)
    if len(rest) == len(comment.strip()) or not rest or rest[0].isspace():
        return ""
    return rest.split(None, 1)[0]


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
                tokens[index] = "-" + rest
                return Directive(_SHORT_FLAGS[letter], None, number), index
            return Directive(_SHORT_FLAGS[letter], rest[1:] or None, number), index + 1
        name = _SHORT_VALUES.get(letter, letter)
        if rest:
            return Directive(name, rest.removeprefix("="), number), index + 1
        if index + 1 >= len(tokens):
            raise InvalidInput(f"line {number}: option -{letter} needs a value")
        return Directive(name, tokens[index + 1], number), index + 2
    raise InvalidInput(f"line {number}: {token!r} is not an sbatch option")
