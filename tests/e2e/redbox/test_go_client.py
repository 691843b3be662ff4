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
