"""Which processes of the whole machine use the CPU, second by second, beside a running benchmark.

``python3 bench/process_sampler.py OUTPUT`` prints, every second, the eight processes that used
the most CPU in that second (``comm:pid=seconds``, kernel threads included) and the last line the
benchmark had written to OUTPUT, so that a slow round can be matched with what else ran in it
(docs/raw/redbox-submit-rounds-3-processes.txt). Stop it with a signal.
"""

from __future__ import annotations

import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def snapshot() -> dict[int, tuple[str, float]]:
    """Every process's name and CPU seconds so far."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        found[int(pid)] = (
            text[text.index("(") + 1 : text.rindex(")")],
            (int(fields[11]) + int(fields[12])) / HZ,
        )
    return found


def last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as out:
            lines = out.read().strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:40] if lines else ""


def main() -> None:
    before = snapshot()
    while True:
        time.sleep(1.0)
        now = snapshot()
        used = sorted(
            ((cpu - before.get(pid, (name, 0.0))[1], pid, name) for pid, (name, cpu) in now.items()),
            reverse=True,
        )[:8]
        top = " ".join(f"{name}:{pid}={seconds:.2f}" for seconds, pid, name in used if seconds > 0.02)
        print(time.strftime("%H:%M:%S"), "|", last_line(sys.argv[1]), "|", top, flush=True)
        before = now


if __name__ == "__main__":
    main()
