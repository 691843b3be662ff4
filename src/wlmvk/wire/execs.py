"""core.execs values <-> the Exec wire messages, both directions, pure.

The first ExecRequest carries the spec; each later one carries one event, read
in this order: a size (a resize), stdin bytes, the end of stdin. Each
ExecResponse carries the start (the first), output, or the exit code (the last).
"""

from __future__ import annotations

from wlmvk._proto import api
from wlmvk.core.execs import (
    ExecEvent,
    ExecOutput,
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


def spec_to_wire(spec: ExecSpec) -> api.ExecRequest:
    size = spec.size or Resize(0, 0)
    return api.ExecRequest(
        job_id=spec.job_id,
        command=list(spec.command),
        tty=spec.tty,
        width=size.width,
        height=size.height,
        env=dict(spec.env),
        working_dir=spec.working_dir,
    )


def spec_from_wire(wire: api.ExecRequest) -> ExecSpec:
    """The first message's spec (InvalidInput when it is not one)."""
    size = Resize(wire.width, wire.height) if wire.width or wire.height else None
    return exec_spec(
        wire.job_id,
        wire.command,
        tty=wire.tty,
        size=size,
        env=dict(wire.env),
        working_dir=wire.working_dir,
    )


def event_to_wire(event: ExecEvent) -> api.ExecRequest:
    match event:
        case StdinData(data):
            return api.ExecRequest(stdin=data)
        case StdinClosed():
            return api.ExecRequest(stdin_closed=True)
        case Resize(width, height):
            return api.ExecRequest(width=max(width, 0), height=max(height, 0))


def events_from_wire(wire: api.ExecRequest) -> list[ExecEvent]:
    """The events of a later message (none when it carries nothing)."""
    events: list[ExecEvent] = []
    if wire.width or wire.height:
        events.append(Resize(wire.width, wire.height))
    if wire.stdin:
        events.append(StdinData(wire.stdin))
    if wire.stdin_closed:
        events.append(StdinClosed())
    return events


def output_to_wire(output: ExecOutput) -> api.ExecResponse:
    match output:
        case Started():
            return api.ExecResponse(started=True)
        case StdoutData(data):
            return api.ExecResponse(stdout=data)
        case StderrData(data):
            return api.ExecResponse(stderr=data)
        case Exited(code):
            return api.ExecResponse(exited=True, exit_code=code)


def outputs_from_wire(wire: api.ExecResponse) -> list[ExecOutput]:
    outputs: list[ExecOutput] = []
    if wire.started:
        outputs.append(Started())
    if wire.stdout:
        outputs.append(StdoutData(wire.stdout))
    if wire.stderr:
        outputs.append(StderrData(wire.stderr))
    if wire.exited:
        outputs.append(Exited(wire.exit_code))
    return outputs
