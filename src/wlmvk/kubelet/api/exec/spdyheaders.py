"""SPDY/3 header blocks: the dictionary, the block format, one zlib context per direction.

A SYN_STREAM, SYN_REPLY or HEADERS frame carries a header block: a 32-bit
count, then 32-bit length-prefixed names (lower-case, each once) and values
(a repeated header's values joined with NUL). Blocks are compressed with one
running zlib context per direction for the connection's life, primed with the
SPDY/3 dictionary (draft-mbelshe-httpbis-spdy-00, section 2.6.10). The
decompressed size is bounded (a bomb guard). Pure: no I/O here.
"""

from __future__ import annotations

import struct
import zlib

MAX_HEADER_BLOCK = 1 << 20
"""The largest decompressed header block accepted (a bomb guard; spdystream's field limit)."""

Headers = tuple[tuple[str, str], ...]
"""A header block in order: lower-case names; several values of one name joined by NUL."""


class SpdyError(Exception):
    """The peer broke the protocol; the connection ends with GOAWAY PROTOCOL_ERROR."""


# The SPDY/3 header dictionary (spec section 2.6.10.1): 65 length-prefixed words, then text.
_DICTIONARY_WORDS = (
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
)
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00"
    " Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = (
    b"".join(struct.pack(">I", len(word)) + word.encode() for word in _DICTIONARY_WORDS)
    + _DICTIONARY_TAIL.encode()
)


def header_values(headers: Headers, name: str) -> list[str]:
    """Every value of ``name`` (SPDY joins a repeated header's values with NUL)."""
    return [value for key, joined in headers if key == name for value in joined.split("\x00")]


def encode_header_block(headers: Headers) -> bytes:
    """The uncompressed block: a 32-bit count, then 32-bit length-prefixed names and values."""
    names = [name.lower() for name, _ in headers]
    if len(set(names)) != len(names):
        raise ValueError(f"a SPDY header block names each header once: {names}")
    parts = [struct.pack(">I", len(headers))]
    for name, (_, value) in zip(names, headers, strict=True):
        raw_name, raw_value = name.encode("latin-1"), value.encode("latin-1")
        parts += [struct.pack(">I", len(raw_name)), raw_name, struct.pack(">I", len(raw_value)), raw_value]
    return b"".join(parts)


def decode_header_block(block: bytes) -> Headers:
    """The inverse of :func:`encode_header_block`; refuses what the spec calls a protocol error."""
    if len(block) < 4:
        raise SpdyError(f"header block of {len(block)} bytes has no count")
    count, offset = u32(block, 0), 4
    if count > len(block) // 8:
        raise SpdyError(f"header block claims {count} headers in {len(block)} bytes")
    headers: list[tuple[str, str]] = []
    seen: set[str] = set()
    for _ in range(count):
        name, offset = _prefixed(block, offset)
        value, offset = _prefixed(block, offset)
        text = name.decode("latin-1")
        if not text or text != text.lower():
            raise SpdyError(f"header name {text!r} is empty or not lower-case")
        if text in seen:
            raise SpdyError(f"header {text!r} appears twice in one block")
        seen.add(text)
        headers.append((text, value.decode("latin-1")))
    if offset != len(block):
        raise SpdyError(f"{len(block) - offset} bytes left after the header block")
    return tuple(headers)


class HeaderCompressor:
    """One direction's zlib context: every block is a sync-flushed piece of one stream."""

    def __init__(self) -> None:
        self._zlib = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)

    def compress(self, headers: Headers) -> bytes:
        return self._zlib.compress(encode_header_block(headers)) + self._zlib.flush(zlib.Z_SYNC_FLUSH)


class HeaderDecompressor:
    def __init__(self, *, limit: int = MAX_HEADER_BLOCK) -> None:
        self._zlib = zlib.decompressobj(15, DICTIONARY)
        self._limit = limit

    def decompress(self, block: bytes) -> Headers:
        try:
            plain = self._zlib.decompress(block, self._limit + 1)
        except zlib.error as exc:
            raise SpdyError(f"header block does not decompress: {exc}") from exc
        if len(plain) > self._limit or self._zlib.unconsumed_tail:
            raise SpdyError(f"header block larger than {self._limit} bytes")
        return decode_header_block(plain)


def u32(data: bytes, offset: int) -> int:
    """The big-endian 32-bit word at ``offset`` (SPDY's every length, count and id)."""
    value: int = struct.unpack_from(">I", data, offset)[0]
    return value


def _prefixed(block: bytes, offset: int) -> tuple[bytes, int]:
    size = u32(block, offset) if offset + 4 <= len(block) else -1
    if size < 0 or offset + 4 + size > len(block):
        raise SpdyError("header block ends inside a name or value")
    return block[offset + 4 : offset + 4 + size], offset + 4 + size
