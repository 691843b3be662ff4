"""The ``#SBATCH`` directives a batch script already sets.

Slurm reads ``#SBATCH`` lines from the top of the script until the first
line that is neither blank nor a comment. The kubelet adds the options it
derives from the pod (CPUs, memory, GPUs, time, job name) only where the
user did not write them; this module answers "did they?" and inserts lines
where sbatch will read them.
"""

from __future__ import annotations

import shlex

# Option spellings that set the same thing, as sbatch accepts them.
_ALIASES: dict[str, str] = {
    "-c": "--cpus-per-task",
    "--cpus-per-task": "--cpus-per-task",
    "--mem": "--mem",
    "--mem-per-cpu": "--mem",
    "--mem-per-gpu": "--mem",
    "--gres": "--gres",
    "--gpus": "--gres",
    "-G": "--gres",
    "--gpus-per-node": "--gres",
    "--gpus-per-task": "--gres",
    "-t": "--time",
    "--time": "--time",
    "-J": "--job-name",
    "--job-name": "--job-name",
    "-o": "--output",
    "--output": "--output",
    "-e": "--error",
    "--error": "--error",
    "-D": "--chdir",
    "--chdir": "--chdir",
    "-p": "--partition",
    "--partition": "--partition",
    "-N": "--nodes",
    "--nodes": "--nodes",
}


def directive_lines(script: str) -> list[str]:
    """The ``#SBATCH`` lines sbatch will read (before the first command)."""
    found: list[str] = []
    for index, line in enumerate(script.splitlines()):
        stripped = line.strip()
        if index == 0 and stripped.startswith("#!"):
            continue
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if stripped.startswith("#SBATCH"):
            found.append(stripped)
    return found


def set_options(script: str) -> set[str]:
    """Canonical names (``--cpus-per-task``, ``--mem``...) of the options the script sets."""
    options: set[str] = set()
    for line in directive_lines(script):
        body = line[len("#SBATCH") :].split("#", 1)[0]
        try:
            tokens = shlex.split(body)
        except ValueError:
            tokens = body.split()
        for token in tokens:
            if not token.startswith("-"):
                continue
            name = token.split("=", 1)[0] if token.startswith("--") else token[:2]
            options.add(_ALIASES.get(name, name))
    return options


def insert(script: str, lines: list[str]) -> str:
    """``script`` with ``lines`` placed after the shebang (adding ``#!/bin/sh`` when there is none)."""
    body = script if script.endswith("\n") or not script else script + "\n"
    head, sep, rest = body.partition("\n")
    if head.startswith("#!"):
        shebang, remainder = head, rest
    else:
        shebang, remainder = "#!/bin/sh", body
    added = "".join(f"{line}\n" for line in lines)
    return f"{shebang}\n{added}{remainder}" if sep or remainder else f"{shebang}\n{added}"
