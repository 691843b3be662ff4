"""JobStates answers in bytes, each job's state encoded and decoded once per change.

Every status tick asks red-box for the state of every live job, and most of
them did not change since the last tick. Built as message objects, 1000
states cost red-box ~0.1 s to encode and the kubelet ~0.3 s to decode per
tick (profiled: betterproto's per-field ``__setattr__``/``__getattribute__``),
which at 10,000 pods is seconds of CPU per tick for nothing. Here a
``JobStatesResponse`` is handled as what it is on the wire, field 1 repeated:
red-box keeps each job's encoded state beside the value it encodes
(``StatesEncoder``) and frames the pieces; the client splits the frame
(``split``) and decodes only the pieces it has not seen in the last answer
(``StatesDecoder``). A piece is a whole ``JobState`` message, so what travels
is byte for byte what the message classes would write: any client can read it.

Each piece is written and read here too (``write_state``, ``read_state``),
straight between its bytes and ``JobState``: as message objects one state
cost about 0.5 ms to read (betterproto's parse and lazy field reads), and a
kubelet submitting a burst of pods reads every new job's state at least once.
They are ``codec.state_to_wire``/``state_from_wire`` through the message
classes, field for field (a test compares them): an unknown field is
skipped, as protobuf skips it; a known one with another wire type, or a
string that is not UTF-8, is refused (``ValueError``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.wire import codec, protowire
from wlmvk.wire.protowire import varint

_STATES_TAG = b"\x0a"  # field 1 (states), wire type 2 (length-delimited)
ENCODER_LIMIT = 200_000
"""States kept by an encoder; past it, the memory starts again (a churn of short jobs)."""


def frame(pieces: Iterable[bytes]) -> bytes:
    """The ``JobStatesResponse`` whose ``states`` are these encoded ``JobState`` messages."""
    return b"".join(protowire.delimited(_STATES_TAG, p) for p in pieces)


def split(data: bytes) -> list[bytes]:
    """The encoded ``JobState`` messages of a ``JobStatesResponse``; other fields are skipped."""
    return [
        value
        for number, kind, value in protowire.fields(data)
        if number == 1 and kind == protowire.BYTES and isinstance(value, bytes)
    ]


# JobState's fields by number (proto/wlm.proto).
_JOB_ID, _STATUS, _REASON, _EXIT_CODE, _SIGNAL = 1, 2, 3, 4, 5
_TIMES = {6: "submit_time", 7: "start_time", 8: "end_time"}
_TEXTS = {3: "reason", 9: "std_out", 10: "std_err", 11: "working_dir", 12: "partition", 13: "node_list",
          14: "name", 15: "idempotency_key"}  # fmt: skip
_STATUSES = {int(wire): codec.status_from_wire(wire) for wire in api.JobStatus}
_WIRE_STATUSES = {status: int(codec.status_to_wire(status)) for status in JobStatus}


def _timestamp(value: datetime | None) -> bytes:
    """A ``google.protobuf.Timestamp`` field's bytes; the epoch and ``None`` are left out."""
    if value is None or value == codec.EPOCH:
        return b""
    offset = value - codec.EPOCH
    micros_since = (offset.days * 86_400 + offset.seconds) * 1_000_000 + offset.microseconds
    seconds, micros = divmod(micros_since, 1_000_000)
    out = b""
    if seconds:
        out += b"\x08" + varint(seconds)
    if micros:
        out += b"\x10" + varint(micros * 1000)
    return out


def _read_timestamp(data: bytes) -> datetime | None:
    seconds = nanos = 0
    for number, kind, value in protowire.fields(data):
        if number == 1:
            seconds = protowire.signed(protowire.as_varint("Timestamp", number, kind, value), 64)
        elif number == 2:
            nanos = protowire.signed(protowire.as_varint("Timestamp", number, kind, value), 32)
    return codec.time_from_wire(codec.EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000))


def write_state(state: JobState) -> bytes:
    """``bytes(codec.state_to_wire(state))``, written directly: fields in number order, proto3's
    zeros and empty strings left out."""
    out = bytearray()
    if state.job_id:
        out += b"\x08" + varint(state.job_id)
    status = _WIRE_STATUSES[state.status]
    if status:
        out += b"\x10" + varint(status)
    _text(out, _REASON, state.reason)
    for number, value in ((_EXIT_CODE, state.exit_code or 0), (_SIGNAL, state.signal)):
        if value:
            out += protowire.key(number, protowire.VARINT) + varint(protowire.signed(value, 32))
    for number, name in _TIMES.items():
        stamp = _timestamp(getattr(state, name))
        if stamp:
            out += protowire.delimited(protowire.key(number, protowire.BYTES), stamp)
    for number, name in _TEXTS.items():
        if number != _REASON:
            _text(out, number, getattr(state, name))
    return bytes(out)


def _text(out: bytearray, number: int, text: str) -> None:
    if text:
        raw = text.encode()
        out += protowire.delimited(protowire.key(number, protowire.BYTES), raw)


def read_state(piece: bytes) -> JobState:
    """``codec.state_from_wire(api.JobState().parse(piece))``, read directly."""
    job_id = wire_status = exit_code = signal = 0
    times: dict[str, datetime | None] = dict.fromkeys(_TIMES.values())
    texts = dict.fromkeys(_TEXTS.values(), "")
    for number, kind, value in protowire.fields(piece):
        if number <= _SIGNAL and number != _REASON:
            value = protowire.as_varint("JobState", number, kind, value)
            if number == _JOB_ID:
                job_id = protowire.signed(value, 64)
            elif number == _STATUS:
                wire_status = value
            elif number == _EXIT_CODE:
                exit_code = protowire.signed(value, 32)
            else:
                signal = protowire.signed(value, 32)
            continue
        name = _TIMES.get(number) or _TEXTS.get(number)
        if name is None:
            continue
        value = protowire.as_bytes("JobState", number, kind, value)
        if number in _TIMES:
            times[name] = _read_timestamp(value)
        else:
            texts[name] = value.decode()
    status = _STATUSES.get(wire_status, JobStatus.UNKNOWN)
    return JobState(
        job_id=JobId(job_id),
        status=status,
        exit_code=exit_code if status.terminal else None,
        signal=signal,
        submit_time=times["submit_time"],
        start_time=times["start_time"],
        end_time=times["end_time"],
        reason=texts["reason"],
        std_out=texts["std_out"],
        std_err=texts["std_err"],
        working_dir=texts["working_dir"],
        partition=texts["partition"],
        node_list=texts["node_list"],
        name=texts["name"],
        idempotency_key=texts["idempotency_key"],
    )


class StatesEncoder:
    """red-box's side: each job's last state and its encoding."""

    def __init__(self) -> None:
        self._known: dict[JobId, tuple[JobState, bytes]] = {}

    def encode(self, states: Iterable[JobState]) -> bytes:
        pieces = []
        for state in states:
            known = self._known.get(state.job_id)
            if known is None or known[0] != state:
                if len(self._known) >= ENCODER_LIMIT:
                    self._known.clear()
                known = (state, write_state(state))
                self._known[state.job_id] = known
            pieces.append(known[1])
        return frame(pieces)


class StatesDecoder:
    """The client's side: the states of the last answer, by their encoding."""

    def __init__(self) -> None:
        self._last: dict[bytes, JobState] = {}

    def decode(self, data: bytes) -> list[JobState]:
        seen: dict[bytes, JobState] = {}
        for piece in split(data):
            state = self._last.get(piece)
            if state is None:
                state = read_state(piece)
            seen[piece] = state
        self._last = seen
        return list(seen.values())


class EncodedStates(api.JobStatesResponse):  # type: ignore[misc]
    """A ``JobStatesResponse`` already encoded (red-box sends it as it is)."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self._data = data

    def SerializeToString(self) -> bytes:  # the protobuf name grpclib calls
        return self._data

    def __bytes__(self) -> bytes:
        return self._data


class RawStates:
    """What the client asks grpclib to decode a ``JobStatesResponse`` into: its bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    @classmethod
    def FromString(cls, data: bytes) -> RawStates:  # the protobuf name grpclib calls
        return cls(data)
