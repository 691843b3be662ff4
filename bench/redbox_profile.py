"""Where red-box's own CPU goes per keyed submission through slurmrestd: py-spy's samples by function.

A red-box in its own process as the job owner (``--slurm-api rest``), driven
as ``bench/redbox_submit.py``'s ``rest-keys@C`` arm drives it (the real
client, C calls in flight, a fresh idempotency key each). After a warm-up,
py-spy samples red-box (and only it) while ``count`` jobs are submitted;
the functions with the most samples are printed, by their own samples
("self") and with what they call ("total"), as a share of red-box's samples
and as milliseconds of CPU per job (red-box's CPU from /proc split by
share). Every job is cancelled at the end.

py-spy samples the wall time of red-box's busy threads (the fsync thread's wait and
the selector show up); ``--gil`` keeps only the samples of the thread holding the
GIL, red-box's Python work, closer to its CPU.

    .venv/bin/python bench/redbox_profile.py 1500 --concurrency 8 --gil

``--concurrency 1000000`` is the kubelet's burst (``rest-kubelet``: every job asked at once,
SubmitJobs of 64, 2 calls in flight); ``--single`` sends one SubmitJob call per job
(``rest-single@C``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import cpu_meter
from redbox_common import red_box_process, scancel
from redbox_submit import submitted_one_by_one, through


def _frames(line: str) -> tuple[list[str], int]:
    stack, _, count = line.rpartition(" ")
    # py-spy's raw format: "thread;frame;frame ... count", each frame "function (file:line)".
    frames = [frame.split(" (")[0] + " (" + frame.split(" (")[-1].split(":")[0].rsplit("/", 2)[-1] + ")"
              for frame in stack.split(";")[1:]]  # fmt: skip
    return frames, int(count)


def summary(raw: Path, cpu_ms_per_job: float, top: int) -> list[str]:
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        if not line.strip():
            continue
        frames, count = _frames(line)
        samples += count
        if frames:
            own[frames[-1]] += count
        for frame in set(frames):
            total[frame] += count
    lines = [f"{samples} samples; red-box {cpu_ms_per_job:.2f} ms of CPU per job"]
    for title, counter in (("self", own), ("total", total)):
        lines.append(f"--- by {title} ---")
        for frame, count in counter.most_common(top):
            share = count / samples if samples else 0.0
            lines.append(f"{100 * share:5.1f}%  {share * cpu_ms_per_job:5.2f} ms  {frame}")
    return lines


async def main_async(args: argparse.Namespace) -> None:
    pids: list[int] = []
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    raw = Path(tempfile.mkdtemp(prefix="rbprof", dir="/tmp")) / "samples.txt"
    async with red_box_process(pids=pids, args=("--slurm-api", "rest"), owner=True) as client:
        scancel(await through(client, 200, concurrency=args.concurrency, keyed=True))  # warm-up
        await cpu_meter.settled()
        sampler = subprocess.Popen(  # noqa: ASYNC220 - runs beside the submissions
            [spy, "record", "--pid", str(pids[0]), "--format", "raw", "--rate", "250",
             "--nonblocking", "--output", str(raw), *(["--gil"] if args.gil else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        await asyncio.sleep(1.0)  # py-spy attaches
        before = cpu_meter.reading(pids[0])
        if args.single:
            ids = await submitted_one_by_one(client, args.count, concurrency=args.concurrency)
        else:
            ids = await through(client, args.count, concurrency=args.concurrency, keyed=True)
        after = cpu_meter.reading(pids[0])
        sampler.send_signal(signal.SIGINT)  # py-spy writes its samples on SIGINT
        _, err = sampler.communicate()
        if not raw.exists():
            raise RuntimeError(f"py-spy wrote nothing: {err.decode(errors='replace')[-500:]}")
        scancel(ids)
    per_job = cpu_meter.per_job(before, after, args.count)
    print(", ".join(f"{k} {v:.2f}" for k, v in per_job.items()), "ms of CPU per job")
    print("\n".join(summary(raw, per_job["server"], args.top)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, nargs="?", default=1500)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--gil", action="store_true", help="only samples of the thread holding the GIL")
    parser.add_argument(
        "--single", action="store_true", help="one SubmitJob call per job (the rest-single arm), no batching"
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
