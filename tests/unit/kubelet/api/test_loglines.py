"""The log line cutter: lines, and runs of MAX_LINE bytes for output without newlines."""

from __future__ import annotations

import pytest

from wlmvk.kubelet.api.loglines import MAX_LINE, LineCutter, pieces_of

LONG = b"x" * (2 * MAX_LINE + 5)


def test_lines_keep_their_newlines() -> None:
    assert pieces_of(b"a\n\nb\nc") == [b"a\n", b"\n", b"b\n", b"c"]


def test_carriage_return_is_not_a_line_break() -> None:
    assert pieces_of(b"10%\r20%\r30%\n") == [b"10%\r20%\r30%\n"]


def test_an_over_long_line_is_cut_into_max_line_pieces() -> None:
    assert pieces_of(LONG + b"\nend\n") == [b"x" * MAX_LINE, b"x" * MAX_LINE, b"xxxxx\n", b"end\n"]
    assert pieces_of(b"y" * MAX_LINE + b"\n") == [b"y" * MAX_LINE + b"\n"]


@pytest.mark.parametrize("size", [1, 7, 1000, MAX_LINE - 1, MAX_LINE, MAX_LINE + 1, 3 * MAX_LINE])
def test_any_chunking_gives_the_same_pieces_and_holds_less_than_a_line(size: int) -> None:
    data = b"short\n" + LONG + b"\n" + b"z" * (MAX_LINE + 3) + b"\nlast"
    cutter = LineCutter()
    pieces: list[bytes] = []
    for start in range(0, len(data), size):
        pieces += cutter.feed(data[start : start + size])
        assert len(cutter._rest) < MAX_LINE
    pieces += cutter.finish()
    assert pieces == pieces_of(data)
    assert b"".join(pieces) == data
