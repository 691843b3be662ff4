"""Log lines with a bounded length: the cutter every log path of the kubelet uses.

A job's output may hold no newline at all (a progress bar, a binary dump):
holding "the current line" until its newline would hold the whole output.
So a line longer than ``MAX_LINE`` bytes is cut into pieces of ``MAX_LINE``
bytes, and each piece counts as a line for ``tailLines`` and gets its own
timestamp, as containerd does with the partial lines of its CRI log files
(its ``max_container_log_line_size`` is 16 KiB too). The bytes themselves are
never changed: joined, the pieces are the output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from wlmvk.kube import times

MAX_LINE = 16 * 1024

# A line with its newline, or, failing that, the longest run without one up to
# MAX_LINE bytes. A run shorter than MAX_LINE at the end of the data may be
# the start of a line the next bytes complete.
_PIECE = re.compile(rb"[^\n]{0,%d}\n|[^\n]{1,%d}" % (MAX_LINE, MAX_LINE))


class LineCutter:
    """Cuts a byte stream into pieces (lines, or ``MAX_LINE`` runs); holds < ``MAX_LINE`` bytes."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        """The pieces completed by ``data``."""
        if not data:
            return []
        pieces = _PIECE.findall(self._rest + data)
        last = pieces[-1]
        if not last.endswith(b"\n") and len(last) < MAX_LINE:
            self._rest = pieces.pop()
        else:
            self._rest = b""
        return pieces

    def finish(self) -> list[bytes]:
        """The last piece, without a newline, when the stream ended mid-line."""
        rest, self._rest = self._rest, b""
        return [rest] if rest else []


def pieces_of(data: bytes) -> list[bytes]:
    """All the pieces of ``data`` (a trailing partial line is one)."""
    cutter = LineCutter()
    return cutter.feed(data) + cutter.finish()


def stamp_pieces(pieces: Iterable[bytes], moment: datetime) -> bytes:
    """Each piece prefixed with an RFC 3339 nano timestamp, as the kubelet does."""
    prefix = (times.nano_time(times.nanoseconds(moment)) + " ").encode()
    return b"".join(prefix + piece for piece in pieces)


def stamp(data: bytes, moment: datetime) -> bytes:
    """Prefix each line (piece) of ``data`` with the timestamp."""
    return stamp_pieces(pieces_of(data), moment)
