"""Protobuf's wire format, the little of it that the hand-read messages need.

A message is a run of fields, each a key (``field number << 3 | wire type``,
a varint) and a value: a varint (type 0), eight bytes (1), a length and that
many bytes (2), or four bytes (5). Types 3 and 4 (groups) are long
deprecated and never written by proto3 code; they are refused.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    """``value`` as a varint; a negative int64 as its ten-byte two's complement, as protobuf writes it."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key(number: int, kind: int) -> bytes:
    """A field's key: its number and wire type, as a varint."""
    return varint(number << 3 | kind)


def delimited(field_key: bytes, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or a message): its key, the length, the payload."""
    return field_key + varint(len(payload)) + payload


def signed(value: int, bits: int) -> int:
    """A varint's value as protobuf's int32 (``bits`` 32) or int64 (64) reads it: two's complement."""
    value &= (1 << bits) - 1
    sign = 1 << (bits - 1)
    return (value ^ sign) - sign


def as_varint(message: str, number: int, kind: int, value: int | bytes) -> int:
    """A field's value read where the message has a varint; ValueError naming the field otherwise."""
    if kind != VARINT or not isinstance(value, int):
        raise ValueError(f"{message} field {number}: wire type {kind}, not a varint")
    return value


def as_bytes(message: str, number: int, kind: int, value: int | bytes) -> bytes:
    """A field's value read where the message has a string or a message; ValueError otherwise."""
    if kind != BYTES or not isinstance(value, bytes):
        raise ValueError(f"{message} field {number}: wire type {kind}, not a string or message")
    return value


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and the offset after it."""
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Each field of a message: (number, wire type, value: an int, or bytes for type 2)."""
    at, end = 0, len(data)
    while at < end:
        key, at = read_varint(data, at)
        number, kind = key >> 3, key & 7
        value: int | bytes
        if kind == BYTES:
            size, at = read_varint(data, at)
            value = data[at : at + size]
            at += size
        elif kind == VARINT:
            value, at = read_varint(data, at)
        elif kind == FIXED64:
            value = int.from_bytes(data[at : at + 8], "little")
            at += 8
        elif kind == FIXED32:
            value = int.from_bytes(data[at : at + 4], "little")
            at += 4
        else:
            raise ValueError(f"unsupported wire type {kind} (field {number})")
        if at > end or number == 0:
            raise ValueError("truncated message" if at > end else "field number 0")
        yield number, kind, value
