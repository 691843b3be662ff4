"""Go's protobuf and Python's betterproto agree on the wire, byte for byte.

The Go contract client (contract/go/cmd/wlmclient) encodes representative
messages of proto/wlm.proto from their protojson form and decodes wire bytes
back to protojson. For each message: Go's bytes equal ``bytes(msg)`` from
betterproto, betterproto parses Go's bytes into an equal message, and Go
parses betterproto's bytes (no unknown fields) into the same protojson and
serializes them again to the same bytes. Needs ``go`` (skips without it).
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import betterproto
import pytest

from tests.fixtures.goclient import build_wlmclient, run_wlmclient
from wlmvk._proto import api

# (message type, the betterproto message, its protojson with proto field names as Go prints it)
CASES: list[tuple[str, betterproto.Message, dict[str, Any]]] = [
    (
        "SubmitJobRequest",
        api.SubmitJobRequest(
            script="#!/bin/sh\n#SBATCH --mem=1G\necho héllo ✓\n",
            partition="debug",
            client_id="go",
            idempotency_key="6f1e0c9a-0d6b-4d0e-9a53-2f8f3c1a7b10",
            job_name="cow",
            working_dir="/var/tmp/jobs/cow",
            std_out="out-%j.log",
            std_err="err.log",
            env={"A": "1", "PATH": "/bin:/usr/bin"},
        ),
        {
            "script": "#!/bin/sh\n#SBATCH --mem=1G\necho héllo ✓\n",
            "partition": "debug",
            "client_id": "go",
            "idempotency_key": "6f1e0c9a-0d6b-4d0e-9a53-2f8f3c1a7b10",
            "job_name": "cow",
            "working_dir": "/var/tmp/jobs/cow",
            "std_out": "out-%j.log",
            "std_err": "err.log",
            "env": {"A": "1", "PATH": "/bin:/usr/bin"},
        },
    ),
    (
        "JobInfoResponse",
        api.JobInfoResponse(
            info=[
                api.JobInfo(
                    id="4242",
                    user_id="root(0)",
                    name="cow",
                    exit_code="0:0",
                    status=api.JobStatus.RUNNING,
                    submit_time=datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
                    start_time=datetime(2024, 5, 6, 7, 8, 10, 500000, tzinfo=UTC),
                    run_time=timedelta(seconds=90),
                    time_limit=timedelta(minutes=10),
                    working_dir="/var/tmp/jobs",
                    std_out="/var/tmp/jobs/slurm-4242.out",
                    partition="debug",
                    node_list="vm",
                    batch_host="vm",
                    num_nodes="1",
                    reason="None",
                    idempotency_key="uid-1",
                ),
                api.JobInfo(id="4243", status=api.JobStatus.COMPLETED),
            ]
        ),
        {
            "info": [
                {
                    "id": "4242",
                    "user_id": "root(0)",
                    "name": "cow",
                    "exit_code": "0:0",
                    "status": "RUNNING",
                    "submit_time": "2024-05-06T07:08:09Z",
                    "start_time": "2024-05-06T07:08:10.500Z",
                    "run_time": "90s",
                    "time_limit": "600s",
                    "working_dir": "/var/tmp/jobs",
                    "std_out": "/var/tmp/jobs/slurm-4242.out",
                    "partition": "debug",
                    "node_list": "vm",
                    "batch_host": "vm",
                    "num_nodes": "1",
                    "reason": "None",
                    "idempotency_key": "uid-1",
                },
                {"id": "4243"},
            ]
        },
    ),
    (
        "JobStatesResponse",
        api.JobStatesResponse(
            states=[
                api.JobState(
                    job_id=123456789012,
                    status=api.JobStatus.CANCELLED,
                    reason="JobHeldUser",
                    signal=15,
                    end_time=datetime(2024, 5, 6, 7, 9, 0, tzinfo=UTC),
                    std_out="/var/tmp/jobs/slurm-1.out",
                ),
                api.JobState(job_id=7, status=api.JobStatus.NOT_FOUND),
            ]
        ),
        {
            "states": [
                {
                    "job_id": "123456789012",
                    "status": "CANCELLED",
                    "reason": "JobHeldUser",
                    "signal": 15,
                    "end_time": "2024-05-06T07:09:00Z",
                    "std_out": "/var/tmp/jobs/slurm-1.out",
                },
                {"job_id": "7", "status": "NOT_FOUND"},
            ]
        },
    ),
    (
        "JobUsageResponse",
        api.JobUsageResponse(
            usages=[
                api.JobUsage(
                    job_id=123456789012,
                    cpu_time=timedelta(seconds=3723, milliseconds=250),
                    memory_bytes=10801152,
                    sampled=datetime(2024, 5, 6, 7, 9, 0, tzinfo=UTC),
                    steps=2,
                ),
                api.JobUsage(job_id=7),
            ],
            unanswered=[123456789013, 8],
            unanswered_reason="sstat: no answer within the budget of 7 s (killed)",
        ),
        {
            "usages": [
                {
                    "job_id": "123456789012",
                    "cpu_time": "3723.250s",
                    "memory_bytes": "10801152",
                    "sampled": "2024-05-06T07:09:00Z",
                    "steps": 2,
                },
                {"job_id": "7"},
            ],
            "unanswered": ["123456789013", "8"],
            "unanswered_reason": "sstat: no answer within the budget of 7 s (killed)",
        },
    ),
    (
        "JobUsageRequest",
        api.JobUsageRequest(job_ids=[123456789012, 7], budget=timedelta(seconds=7)),
        {"job_ids": ["123456789012", "7"], "budget": "7s"},
    ),
    (
        "ResourcesResponse",
        api.ResourcesResponse(
            nodes=1,
            cpu_per_node=2,
            mem_per_node=7982,
            wall_time=2**62,
            features=[api.Feature(name="singularity", version="3.7", quantity=1)],
            wall_time_unlimited=True,
            state="UP",
        ),
        {
            "nodes": "1",
            "cpuPerNode": "2",
            "memPerNode": "7982",
            "wallTime": str(2**62),
            "features": [{"name": "singularity", "version": "3.7", "quantity": "1"}],
            "wall_time_unlimited": True,
            "state": "UP",
        },
    ),
    (
        "JobStepInfo",
        api.JobStepInfo(id="4242.batch", name="batch", exit_code=-1, status=api.JobStatus.FAILED),
        {"id": "4242.batch", "name": "batch", "exit_code": -1, "status": "FAILED"},
    ),
    (
        "Chunk",
        api.Chunk(content=bytes(range(256))),
        {"content": base64.b64encode(bytes(range(256))).decode()},
    ),
]


@pytest.fixture(scope="module")
def wlmclient() -> Path:
    return build_wlmclient()


def codec(binary: Path, mode: str, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    lines = run_wlmclient(binary, mode, stdin=stdin, timeout=60)
    assert [line["type"] for line in lines] == [request["type"] for request in requests]
    return lines


def test_go_bytes_equal_betterproto_bytes_and_parse_back(wlmclient: Path) -> None:
    encoded = codec(wlmclient, "encode", [{"type": name, "json": form} for name, _, form in CASES])
    for (name, message, _), line in zip(CASES, encoded, strict=True):
        assert line["hex"] == bytes(message).hex(), f"{name}: Go and betterproto serialize differently"
        assert type(message)().parse(bytes.fromhex(line["hex"])) == message, name


def test_betterproto_bytes_parse_identically_in_go(wlmclient: Path) -> None:
    decoded = codec(
        wlmclient, "decode", [{"type": name, "hex": bytes(message).hex()} for name, message, _ in CASES]
    )
    for (name, message, form), line in zip(CASES, decoded, strict=True):
        assert line["json"] == form, name
        assert line["hex"] == bytes(message).hex(), f"{name}: Go serializes its parse differently"


def test_map_entry_with_empty_value_parses_identically(wlmclient: Path) -> None:
    """Go always writes a map entry's key and value; betterproto leaves an empty value out.

    The bytes differ, so only the parse is compared: both sides read both forms the same.
    """
    message = api.SubmitJobRequest(script="x", env={"EMPTY": "", "SET": "1"})
    form = {"script": "x", "env": {"EMPTY": "", "SET": "1"}}
    (go,) = codec(wlmclient, "encode", [{"type": "SubmitJobRequest", "json": form}])
    assert api.SubmitJobRequest().parse(bytes.fromhex(go["hex"])) == message
    (back,) = codec(wlmclient, "decode", [{"type": "SubmitJobRequest", "hex": bytes(message).hex()}])
    assert back["json"] == form
