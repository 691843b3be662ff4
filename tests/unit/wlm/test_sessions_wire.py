"""Exec's values over the wire and back, and the checks of an exec request."""

from __future__ import annotations

import pytest

from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobId
from wlmvk.core.sessions import (
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
from wlmvk.wire import sessions


def test_the_spec_travels_in_the_first_message() -> None:
    spec = ExecSpec(job_id=JobId(42), command=("sh", "-c", "a b"), tty=True, size=Resize(120, 40))
    wire = api.ExecRequest().parse(bytes(sessions.spec_to_wire(spec)))
    assert sessions.spec_from_wire(wire) == spec
    plain = ExecSpec(job_id=JobId(1), command=("true",))
    assert sessions.spec_from_wire(api.ExecRequest().parse(bytes(sessions.spec_to_wire(plain)))) == plain


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
