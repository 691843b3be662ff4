"""What a SlurmJob's batch script asks of a partition, from its ``#SBATCH`` directives.

The operator needs the job's resource request before Slurm sees it: the
request becomes node affinity over the partition labels, so that Kubernetes
places the job pod only on a partition that can run it. The directives are
read by ``core.sbatch`` (sbatch's rules), durations, sizes and GPU counts by
``core.durations``, ``core.memory`` and ``core.gres``, as red-box reads them.
A value that cannot be read raises ``InvalidInput`` with the line number, so
the SlurmJob gets a clear condition rather than a crash.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from wlmvk.core.errors import InvalidInput
from wlmvk.slurm import durations, gres, memory
from wlmvk.slurm.sbatch import Directive, effective


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


def requirements(script: str) -> Requirements:
    """The partition resources the script's directives require."""
    options = effective(script)
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


def _memory(directive: Directive | None) -> int:
    """Megabytes, rounded up; sbatch's default unit is MB."""
    if directive is None:
        return 0
    size = memory.megabytes(directive.value or "")
    if size is None:
        raise InvalidInput(
            f"line {directive.line}: --{directive.name} wants a size such as 4000, 500K, 4G or 1T,"
            f" not {directive.value!r}"
        )
    return size


def _wall_time(directive: Directive | None) -> int:
    """Seconds, from any of Slurm's time formats; 0 when not asked or unlimited."""
    if directive is None:
        return 0
    value = directive.value or ""
    if durations.unlimited(value):
        return 0
    seconds = durations.seconds(value)
    if seconds is None:
        raise InvalidInput(
            f"line {directive.line}: --time wants minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS,"
            f" not {value!r}"
        )
    return seconds


def _gpus(options: dict[str, Directive], *, nodes: int) -> int:
    if (per_node := options.get("gpus-per-node")) is not None:
        return _gpu_count(per_node)
    if (asked := options.get("gres")) is not None:
        try:
            return gres.gpus(asked.value or "")
        except InvalidInput as exc:
            raise InvalidInput(f"line {asked.line}: --gres {exc.message}") from exc
    if (total_gpus := options.get("gpus")) is not None:
        return math.ceil(_gpu_count(total_gpus) / max(nodes, 1))
    return 0


def _gpu_count(directive: Directive) -> int:
    """``--gpus``/``--gpus-per-node``: ``[type:]count``."""
    text = directive.value or ""
    count = gres.count(text.rsplit(":", 1)[-1])
    if count is None:
        raise InvalidInput(f"line {directive.line}: --{directive.name} wants a GPU count, not {text!r}")
    return count


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
