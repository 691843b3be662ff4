#!/usr/bin/env python3
"""The README's statement of the suite's time, from kept whole runs of CI.

Usage: ``bench/ci_times.py KIND=docs/raw/RUN.txt...`` (KIND: ``cached`` or ``fresh``; README.md
is rewritten between ``<!-- suite-times:begin -->`` and ``<!-- suite-times:end -->``).
Each raw file is the whole output of ``CI=true bash .ci/run`` on a clean clone, as kept: its
first line says what ran (commit, load, caches), and ``scripts/test`` ends it with its own
"seconds per step (total N s)" and the "== end (exit N)" line. Nothing here is typed by hand:
the seconds, the result and the three slowest steps come from the file.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

BEGIN, END = "<!-- suite-times:begin -->", "<!-- suite-times:end -->"
KINDS = {"cached": "cached (builds kept on the machine)", "fresh": "fresh (every build cache empty)"}
BUDGET_MINUTES = {"cached": 25, "fresh": 45}
"""The project's budgets for a whole CI run of each kind, in minutes."""
_TOTAL = re.compile(r"^seconds per step \(total (\d+) s\):$")
_STEP = re.compile(r"^\s+(\d+) s  (.+)$")
_END = re.compile(r"^== end \(exit (\d+)\)")


@dataclass(frozen=True)
class Run:
    kind: str
    path: str
    total: int
    exit_code: int
    steps: tuple[tuple[int, str], ...]
    what: str


def parse(kind: str, path: str, text: str) -> Run:
    """The last whole ``scripts/test`` run in ``text`` (a kept CI output)."""
    lines = text.splitlines()
    totals = [n for n, line in enumerate(lines) if _TOTAL.match(line)]
    ends = [m for line in lines if (m := _END.match(line))]
    if not totals or not ends:
        raise ValueError(f"{path}: no 'seconds per step' or '== end' line: not a whole run's output")
    first = totals[-1]
    match = _TOTAL.match(lines[first])
    assert match is not None
    steps = []
    for line in lines[first + 1 :]:
        step = _STEP.match(line)
        if step is None:
            break
        steps.append((int(step.group(1)), step.group(2)))
    return Run(
        kind=kind,
        path=path,
        total=int(match.group(1)),
        exit_code=int(ends[-1].group(1)),
        steps=tuple(steps),
        what=lines[0].lstrip("# ").strip() if lines else "",
    )


def block(runs: list[Run]) -> list[str]:
    """The README's lines between the markers."""
    out = [
        "The whole suite as CI runs it (`CI=true bash .ci/run` on a clean clone, 2 cores; seconds from",
        "`scripts/test`'s own count, raw output kept):",
        "",
        "| run | result | seconds (minutes) | budget, margin (minutes) | slowest steps | raw output |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        result = "passed" if run.exit_code == 0 else f"failed (exit {run.exit_code})"
        slowest = "; ".join(
            f"{name.split(' (')[0]} {seconds}" for seconds, name in sorted(run.steps, reverse=True)[:3]
        )
        minutes = f"{run.total / 60:.1f}"
        budget = BUDGET_MINUTES[run.kind]
        margin = f"{budget}, {budget - run.total / 60:+.1f}"
        cells = [KINDS[run.kind], result, f"{run.total} ({minutes})", margin, slowest, f"`{run.path}`"]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "What each run was (its first line):", ""]
    out += [f"- {run.kind}: {run.what}" for run in runs]
    out += ["", "Where the time goes: [development.md](docs/development.md#the-suites-time)."]
    return out


def rewrite(doc: str, lines: list[str]) -> str:
    start, end = doc.index(BEGIN), doc.index(END)
    return doc[: start + len(BEGIN)] + "\n" + "\n".join(lines) + "\n" + doc[end:]


def main(argv: list[str]) -> int:
    runs = []
    for arg in argv:
        kind, _, path = arg.partition("=")
        if kind not in KINDS or not path:
            print(__doc__, file=sys.stderr)
            return 2
        runs.append(parse(kind, path, Path(path).read_text()))
    if not runs:
        print(__doc__, file=sys.stderr)
        return 2
    readme = Path(__file__).resolve().parents[1] / "README.md"
    readme.write_text(rewrite(readme.read_text(), block(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
