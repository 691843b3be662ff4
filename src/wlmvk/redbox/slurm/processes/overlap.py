"""The srun command line of an exec into a running job, and srun's own words to drop: pure.

``srun --overlap --jobid=<id>`` starts one more step inside the job's
allocation, sharing its CPUs and memory with the steps already there (a job
whose batch step holds every CPU would otherwise wait for itself). One task
on one node, the job's first, as ``kubectl exec`` runs one process;
``--pty`` runs it on a terminal. ``--quiet`` keeps srun's progress notes
out of the command's stderr. The command starts in the container's working
directory (under the job's when relative, as the job script's ``cd``); srun
runs with the container's variables over red-box's own (``scripts.environment``,
as sbatch for a job), as a job script's ``srun`` runs after its ``export``
lines: the step inherits them. The step is named (``--job-name``, one name
per exec) so that ``step_named`` finds it in ``squeue -s`` when srun had to be
killed and the step must be cancelled through Slurm.

srun still adds one line of its own when the task fails
(``srun: error: <node>: task 0: Exited with exit code 3``): the exit code
reaches the client as the exit code, so ``ExitLineFilter`` takes that line
out of stderr, and only that line; an incomplete last line that could be it
is held back until its end is seen.
"""

from __future__ import annotations

import posixpath
import re

from wlmvk.core.execs import ExecSpec

_EXIT_LINE = re.compile(rb"srun: error: [^\s:]+: tasks? [0-9,\-]+: Exited with exit code [0-9]+\n")
_PREFIX = b"srun: error: "


def srun_argv(spec: ExecSpec, *, working_dir: str = "", name: str = "") -> list[str]:
    """srun's command line; ``working_dir`` is the job's, under which a relative container one is.

    ``name`` names the step.
    """
    argv = ["srun", "--overlap", f"--jobid={spec.job_id}", "--ntasks=1", "--nodes=1", "--quiet"]
    if name:
        argv.append(f"--job-name={name}")
    directory = posixpath.join(working_dir, spec.working_dir) if spec.working_dir else working_dir
    if directory:
        argv.append(f"--chdir={directory}")
    if spec.tty:
        argv.append("--pty")
    return [*argv, "--", *spec.command]


def step_named(listing: str, name: str) -> str | None:
    """The id (``JOB.STEP``) of the step called ``name`` in ``squeue -h -s -o "%i %j"``'s output."""
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1] == name:
            return fields[0]
    return None


class ExitLineFilter:
    """srun's stderr with its exit-code line taken out; fed chunk by chunk."""

    def __init__(self) -> None:
        self._held = b""  # the start of a line that may be srun's exit line
        self._mid_line = False  # the last byte passed on ended no line

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk
        at_line_start = bool(self._held) or not self._mid_line
        self._held = b""
        passed: list[bytes] = []
        for line in data.splitlines(keepends=True):
            if line.endswith(b"\n"):
                if not (at_line_start and _EXIT_LINE.fullmatch(line)):
                    passed.append(line)
                self._mid_line = False
            elif at_line_start and _PREFIX.startswith(line[: len(_PREFIX)]):
                self._held = line
            else:
                passed.append(line)
                self._mid_line = True
            at_line_start = True
        return b"".join(passed)

    def end(self) -> bytes:
        rest, self._held = self._held, b""
        return rest
