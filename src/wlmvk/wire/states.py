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
"""

from __future__ import annotations

from collections.abc import Iterable

from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobState
from wlmvk.wire import codec
from wlmvk.wire.protowire import read_varint, varint

_STATES_TAG = b"\x0a"  # field 1 (states), wire type 2 (length-delimited)
ENCODER_LIMIT = 200_000
"""States kept by an encoder; past it, the memory starts again (a churn of short jobs)."""


def frame(pieces: Iterable[bytes]) -> bytes:
    """The ``JobStatesResponse`` whose ``states`` are these encoded ``JobState`` messages."""
    return b"".join(_STATES_TAG + varint(len(p)) + p for p in pieces)


def split(data: bytes) -> list[bytes]:
    """The encoded ``JobState`` messages of a ``JobStatesResponse``; other fields are skipped."""
    pieces: list[bytes] = []
    at = 0
    while at < len(data):
        key, at = read_varint(data, at)
        field, kind = key >> 3, key & 7
        if kind == 0:
            _, at = read_varint(data, at)
        elif kind == 1:
            at += 8
        elif kind == 5:
            at += 4
        elif kind == 2:
            size, at = read_varint(data, at)
            if field == 1:
                pieces.append(data[at : at + size])
            at += size
        else:
            raise ValueError(f"unsupported wire type {kind} in JobStatesResponse")
        if at > len(data):
            raise ValueError("truncated JobStatesResponse")
    return pieces


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
                known = (state, bytes(codec.state_to_wire(state)))
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
                state = codec.state_from_wire(api.JobState().parse(piece))
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
