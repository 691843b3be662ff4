"""A Go client generated from proto/wlm.proto drives a real red-box over real Slurm.

The client (contract/go/cmd/wlmclient, stubs from protoc-gen-go and
protoc-gen-go-grpc) is what the original's Go virtual kubelet was: it submits
a job, watches it with JobStates and JobInfo until it completes, streams its
output with OpenFile, and cancels a second, held job. Each test checks what
the Go client printed against Slurm itself (sacct) and against the files on
disk. The byte-level agreement of the two code generators is in
tests/unit/proto/test_go_wire.py.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.redbox.helpers import script, tls_listener
from tests.fixtures.goclient import build_wlmclient, run_wlmclient
from tests.fixtures.redbox import RedBox

pytestmark = pytest.mark.slurm

Line = dict[str, Any]
JOB = script("echo start", "sleep 3", "seq 1 60", 'echo "done $SLURM_JOB_ID"')


@pytest.fixture(scope="module")
def wlmclient() -> Path:
    return build_wlmclient()


def steps(lines: list[Line], name: str) -> list[Line]:
    return [line for line in lines if line["step"] == name]


def one(lines: list[Line], name: str) -> Line:
    found = steps(lines, name)
    assert len(found) == 1, f"want one {name!r} line: {lines}"
    return found[0]


def statuses(lines: list[Line], job_id: int, rpc: str) -> list[str]:
    return [s["status"] for s in steps(lines, "state") if s["job_id"] == job_id and s["rpc"] == rpc]


def sacct_state(job_id: int, done: Callable[[str], bool], timeout: float = 30.0) -> str:
    """The job's state in Slurm's accounting; records arrive 1-3 s after a job's end."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-j", str(job_id), "-o", "JobID,State"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows = dict(row.split("|", 1) for row in out.splitlines() if "|" in row)
        state = rows.get(str(job_id), "")
        if done(state) or time.monotonic() > deadline:
            return state
        time.sleep(0.5)


def test_go_client_runs_a_job_and_cancels_a_held_one(redbox: RedBox, wlmclient: Path, tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(JOB)
    lines = run_wlmclient(
        wlmclient, "run", "-socket", redbox.socket, "-script", str(tmp_path / "job.sh"), "-partition", "debug"
    )
    assert [line for line in lines if "error" in line] == []
    assert one(lines, "workload_info")["name"] == "slurm"
    assert "debug" in one(lines, "partitions")["partitions"]

    job_id = one(lines, "submit")["job_id"]
    assert sacct_state(job_id, lambda s: s == "COMPLETED") == "COMPLETED", "Slurm knows the job by that id"
    for rpc in ("JobStates", "JobInfo"):
        seen = statuses(lines, job_id, rpc)
        assert seen[-1] == "COMPLETED", (rpc, seen)
        assert set(seen) <= {"PENDING", "RUNNING", "COMPLETING", "COMPLETED"}, (rpc, seen)
    assert "RUNNING" in statuses(lines, job_id, "JobStates") + statuses(lines, job_id, "JobInfo")

    info = one(lines, "job_info")
    assert info["id"] == str(job_id)
    assert info["status"] == "COMPLETED"
    assert info["exit_code"] == "0:0"
    assert info["partition"] == "debug"
    assert Path(info["std_out"]).parent == redbox.work_dir

    expected = ("start\n" + "".join(f"{n}\n" for n in range(1, 61)) + f"done {job_id}\n").encode()
    opened = one(lines, "open_file")
    content = base64.b64decode(opened["content"])
    assert content == expected, "OpenFile streamed exactly the job's output"
    assert content == Path(info["std_out"]).read_bytes()
    assert opened["bytes"] == len(expected)
    assert opened["chunks"] >= 1

    held_id = one(lines, "submit_held")["job_id"]
    assert held_id != job_id
    assert one(lines, "held") == {
        "step": "held",
        "job_id": held_id,
        "status": "PENDING",
        "reason": "JobHeldUser",
    }
    assert one(lines, "cancel")["job_id"] == held_id
    assert one(lines, "cancelled")["status"] == "CANCELLED"
    assert statuses(lines, held_id, "JobInfo") == ["PENDING", "CANCELLED"]
    assert sacct_state(held_id, lambda s: s.startswith("CANCELLED")).startswith("CANCELLED")


def test_go_client_over_tls_tcp_sees_what_the_socket_shows(
    redbox_factory: Callable[..., RedBox], wlmclient: Path, tmp_path: Path
) -> None:
    listener = tls_listener(tmp_path)
    port = listener.port
    box = redbox_factory(*listener.flags)
    over_tcp = run_wlmclient(
        wlmclient,
        "info",
        "-tcp",
        f"127.0.0.1:{port}",
        "-ca",
        str(tmp_path / "ca.pem"),
        "-cert",
        str(tmp_path / "client.pem"),
        "-key",
        str(tmp_path / "client-key.pem"),
    )
    over_socket = run_wlmclient(wlmclient, "info", "-socket", box.socket)
    assert one(over_tcp, "dial")["target"] == f"tls://127.0.0.1:{port}"
    for step in ("workload_info", "partitions"):
        assert one(over_tcp, step) == one(over_socket, step)
    assert one(over_tcp, "workload_info")["name"] == "slurm"


def test_go_client_submit_load_sends_each_job_in_its_own_keyed_call(
    redbox: RedBox, wlmclient: Path, tmp_path: Path
) -> None:
    """``wlmclient submit`` (bench/redbox_submit.py's go-single arms): for each "COUNT CONCURRENCY"
    line, COUNT jobs, each its own SubmitJob with a key of its own, answered as one JSON line."""
    (tmp_path / "held.sh").write_text(script("#SBATCH --hold", "true"))
    argv = ["submit", "-socket", redbox.socket, "-script", str(tmp_path / "held.sh"), "-partition", "debug"]
    done = subprocess.run(
        [str(wlmclient), *argv], input="5 2\n3 3\n", capture_output=True, text=True, timeout=120, check=False
    )
    lines = [json.loads(text) for text in done.stdout.splitlines()]
    ids = [job_id for answer in lines if isinstance(answer, list) for job_id in answer]
    try:
        comments = subprocess.run(
            ["squeue", "-h", "-j", ",".join(map(str, ids)), "-o", "%i %k %r"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    finally:
        subprocess.run(["scancel", *map(str, ids)], check=False)
    assert done.returncode == 0, done.stderr
    assert [line["step"] for line in lines[:2]] == ["dial", "ready"]
    assert [len(answer) for answer in lines[2:]] == [5, 3]
    assert len(set(ids)) == 8
    rows = {int(row.split()[0]): row.split()[1:] for row in comments if row}
    assert sorted(rows) == sorted(ids), "Slurm holds every job by the id the client was given"
    keys = {comment for comment, _ in rows.values()}
    assert len(keys) == 8, f"one key per call: {rows}"
    assert all(k.startswith("wlmvk:") and len(k) == len("wlmvk:") + 32 for k in keys), rows
    assert {reason for _, reason in rows.values()} == {"JobHeldUser"}


def test_go_client_submit_load_refuses_a_line_it_cannot_read(
    redbox: RedBox, wlmclient: Path, tmp_path: Path
) -> None:
    (tmp_path / "held.sh").write_text(script("#SBATCH --hold", "true"))
    argv = ["submit", "-socket", redbox.socket, "-script", str(tmp_path / "held.sh")]
    done = subprocess.run(
        [str(wlmclient), *argv], input="five 2\n", capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "step": "load",
        "error": 'want COUNT CONCURRENCY, got "five 2"',
    }
