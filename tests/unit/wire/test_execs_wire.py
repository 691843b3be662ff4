"""Exec's values over the wire and back, and the checks of an exec request."""

from __future__ import annotations

import pytest

from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput
from wlmvk.core.execs import (
    ExecSpec,
    Exited,
    Resize,
    Started,
    StderrData,
    StdinClosed,
    StdinData,
    StdoutData,
    exec_spec,
)
from wlmvk.core.jobs import JobId
from wlmvk.wire import execs as sessions


def test_the_spec_travels_in_the_first_message() -> None:
    spec = ExecSpec(job_id=JobId(42), command=("sh", "-c", "a b"), tty=True, size=Resize(120, 40))
    wire = api.ExecRequest().parse(bytes(sessions.spec_to_wire(spec)))
    assert sessions.spec_from_wire(wire) == spec
    plain = ExecSpec(job_id=JobId(1), command=("true",))
    assert sessions.spec_from_wire(api.ExecRequest().parse(bytes(sessions.spec_to_wire(plain)))) == plain


def test_the_containers_environment_and_directory_travel_with_the_spec() -> None:
    spec = ExecSpec(
        job_id=JobId(9),
        command=("env",),
        env={"GREETING": "a=b c", "EMPTY": "", "PATH": "/opt/bin:/usr/bin"},
        working_dir="data/run",
    )
    wire = api.ExecRequest().parse(bytes(sessions.spec_to_wire(spec)))
    assert wire.env == {"GREETING": "a=b c", "EMPTY": "", "PATH": "/opt/bin:/usr/bin"}
    assert sessions.spec_from_wire(wire) == spec


@pytest.mark.parametrize("event", [StdinData(b"\x00\x04x"), StdinClosed(), Resize(80, 24)])
def test_each_event_travels_alone(event: StdinData | StdinClosed | Resize) -> None:
    wire = api.ExecRequest().parse(bytes(sessions.event_to_wire(event)))
    assert sessions.events_from_wire(wire) == [event]


@pytest.mark.parametrize(
    "output", [Started(), StdoutData(b"out"), StderrData(b"err"), Exited(0), Exited(3), Exited(137)]
)
def test_each_output_travels(output: Started | StdoutData | StderrData | Exited) -> None:
    wire = api.ExecResponse().parse(bytes(sessions.output_to_wire(output)))
    assert sessions.outputs_from_wire(wire) == [output]


def test_an_empty_message_carries_nothing() -> None:
    assert sessions.events_from_wire(api.ExecRequest()) == []
    assert sessions.outputs_from_wire(api.ExecResponse()) == []


@pytest.mark.parametrize(
    ("job_id", "command", "message"),
    [
        (0, ["true"], "exec: job id 0 is not a Slurm job id"),
        (7, [], "exec: the command is empty"),
        (7, ["", "x"], "exec: the command is empty"),
        (7, ["a\x00"], "exec: a command word contains a NUL byte"),
        (7, ["x" * 200_000], "exec: the command is longer than 131072 bytes"),
    ],
)
def test_bad_exec_requests_are_refused(job_id: int, command: list[str], message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        exec_spec(job_id, command, tty=False, size=None)
    assert refused.value.message == message


@pytest.mark.parametrize(
    ("working_dir", "message"),
    [
        ("a\x00b", "exec: working directory 'a\\x00b' is not a path"),
        ("d" * 5000, f"exec: working directory {'d' * 80!r} is not a path"),
    ],
)
def test_a_working_directory_that_is_no_path_is_refused(working_dir: str, message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        exec_spec(7, ["true"], tty=False, size=None, working_dir=working_dir)
    assert refused.value.message == message
