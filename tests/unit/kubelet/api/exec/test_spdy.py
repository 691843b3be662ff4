"""SPDY/3.1 framing: byte layouts from the spec, the real apiserver's bytes, round trips, refusals."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from wlmvk.kubelet.api.exec import spdyframes, spdyheaders

CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "spdy_captured"


def test_dictionary_is_the_spdy3_one() -> None:
    # 1423 bytes; its Adler-32 is the DICTID in the zlib header of every SPDY/3 header block,
    # here as kube-apiserver v1.36.3 sent it (bytes 20..23 of the captured frame, after zlib's 78 f9).
    captured = (CAPTURED / "syn-stream-error.bin").read_bytes()
    assert len(spdyheaders.DICTIONARY) == 1423
    assert zlib.adler32(spdyheaders.DICTIONARY) == 0xE3C6A7C2
    assert captured[18:24] == b"\x78\xf9" + struct.pack(">I", zlib.adler32(spdyheaders.DICTIONARY))


def test_the_apiservers_first_frame_decodes() -> None:
    captured = (CAPTURED / "syn-stream-error.bin").read_bytes()
    assert spdyframes.FrameDecoder().feed(captured) == [spdyframes.SynStream(1, (("streamtype", "error"),))]


def test_the_apiservers_first_frame_decodes_fed_byte_by_byte() -> None:
    captured = (CAPTURED / "syn-stream-error.bin").read_bytes()
    decoder = spdyframes.FrameDecoder()
    frames = [frame for byte in captured for frame in decoder.feed(bytes([byte]))]
    assert frames == [spdyframes.SynStream(1, (("streamtype", "error"),))]
    assert decoder.pending == 0


@pytest.mark.parametrize(
    ("frame", "wire"),
    [
        (spdyframes.Ping(1), "80030006 00000004 00000001"),
        (spdyframes.RstStream(3, spdyframes.RstStatus.CANCEL), "80030003 00000008 00000003 00000005"),
        (spdyframes.GoAway(7, spdyframes.GoAwayStatus.PROTOCOL_ERROR), "80030007 00000008 00000007 00000001"),
        (spdyframes.WindowUpdate(5, 65536), "80030009 00000008 00000005 00010000"),
        (
            spdyframes.Settings((spdyframes.Setting(id=7, value=65536, flags=1),)),
            "80030004 0000000c 00000001 01000007 00010000",
        ),
        (spdyframes.Settings(clear=True), "80030004 01000004 00000000"),
        (spdyframes.Data(1, b"hi"), "00000001 00000002 6869"),
        (spdyframes.Data(3, b"", fin=True), "00000003 01000000"),
    ],
)
def test_frame_layouts(frame: spdyframes.Frame, wire: str) -> None:
    raw = bytes.fromhex(wire.replace(" ", ""))
    assert spdyframes.FrameEncoder().encode(frame) == raw
    assert spdyframes.FrameDecoder().feed(raw) == [frame]


def test_syn_stream_head_layout() -> None:
    raw = spdyframes.FrameEncoder().encode(
        spdyframes.SynStream(5, (("streamtype", "stdin"),), associated_to=1, priority=7, slot=2, fin=True)
    )
    assert raw[:4] == bytes.fromhex("80030001")
    assert raw[4] == spdyframes.FLAG_FIN
    assert int.from_bytes(raw[5:8], "big") == len(raw) - 8
    assert raw[8:18] == bytes.fromhex("00000005 00000001 e0 02".replace(" ", ""))


def test_header_block_layout_before_compression() -> None:
    block = spdyheaders.encode_header_block((("streamtype", "error"), ("x", "a\x00b")))
    assert block == (
        b"\x00\x00\x00\x02" + b"\x00\x00\x00\x0astreamtype" + b"\x00\x00\x00\x05error" + b"\x00\x00\x00\x01x"
        b"\x00\x00\x00\x03a\x00b"
    )
    assert spdyheaders.decode_header_block(block) == (("streamtype", "error"), ("x", "a\x00b"))


def test_compressed_block_is_zlib_with_the_dictionary_sync_flushed() -> None:
    raw = spdyframes.FrameEncoder().encode(spdyframes.SynReply(1, (("streamtype", "error"),)))
    block = raw[12:]
    assert block[:2] == b"\x78\xf9"  # deflate, 32K window, best compression, FDICT set: as Go's framer
    assert block.endswith(b"\x00\x00\xff\xff")  # Z_SYNC_FLUSH: the block ends where the frame ends
    plain = zlib.decompressobj(zdict=spdyheaders.DICTIONARY).decompress(block)
    assert spdyheaders.decode_header_block(plain) == (("streamtype", "error"),)


def test_every_frame_round_trips_through_one_connection() -> None:
    frames: list[spdyframes.Frame] = [
        spdyframes.SynStream(1, (("streamtype", "error"),)),
        spdyframes.SynReply(1),
        spdyframes.SynStream(3, (("streamtype", "stdin"),), priority=3),
        spdyframes.HeadersFrame(3, (("a", "1"), ("b", "x\x00y")), fin=True),
        spdyframes.SynReply(3, (("streamtype", "stdin"),), fin=True),
        spdyframes.Data(3, b"\x00\xff" * 40000),
        spdyframes.Data(3, b"", fin=True),
        spdyframes.RstStream(1, spdyframes.RstStatus.INTERNAL_ERROR),
        spdyframes.Settings((spdyframes.Setting(4, 100), spdyframes.Setting(7, 1 << 20, flags=2))),
        spdyframes.Ping(2),
        spdyframes.WindowUpdate(0, 1),
        spdyframes.SynStream(5, (("streamtype", "resize"), ("extra", "é")), unidirectional=True),
        spdyframes.GoAway(5),
    ]
    encoder, decoder = spdyframes.FrameEncoder(), spdyframes.FrameDecoder()
    wire = b"".join(encoder.encode(frame) for frame in frames)
    assert decoder.feed(wire[:1000]) + decoder.feed(wire[1000:]) == frames


def test_header_contexts_run_for_the_connections_life() -> None:
    # The second block is compressed against the first: it decodes only in the same context.
    encoder = spdyframes.FrameEncoder()
    first = encoder.encode(spdyframes.SynStream(1, (("streamtype", "error"),)))
    second = encoder.encode(spdyframes.SynStream(3, (("streamtype", "error"),)))
    assert len(second) < len(first)
    with pytest.raises(spdyheaders.SpdyError, match="does not decompress"):
        spdyframes.FrameDecoder().feed(second)
    decoder = spdyframes.FrameDecoder()
    assert [frame.stream_id for frame in decoder.feed(first + second)] == [1, 3]  # type: ignore[union-attr]


def test_unknown_control_frames_are_skipped() -> None:
    unknown = bytes.fromhex("8003000a 00000002 abcd".replace(" ", ""))
    assert spdyframes.FrameDecoder().feed(unknown + spdyframes.FrameEncoder().encode(spdyframes.Ping(1))) == [
        spdyframes.Ping(1)
    ]


def test_header_values_split_on_nul() -> None:
    headers = (("x-stream-protocol-version", "v4.channel.k8s.io\x00channel.k8s.io"), ("a", "b"))
    assert spdyheaders.header_values(headers, "x-stream-protocol-version") == [
        "v4.channel.k8s.io",
        "channel.k8s.io",
    ]
    assert spdyheaders.header_values(headers, "missing") == []


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("80020006 00000004 00000001", "SPDY version 2, this end speaks 3"),
        ("00000000 00000001 00", "DATA frame on stream 0"),
        ("80030006 00000002 0001", "PING frame of 2 bytes, not 4"),
        ("80030003 00000004 00000001", "RST_STREAM frame of 4 bytes, not 8"),
        ("80030009 00000008 00000000 00000001", None),
        ("80030003 00000008 00000000 00000001", "stream id 0 where a stream is needed"),
        ("80030004 00000008 00000002 00000000", "SETTINGS claims 2 entries in 8 bytes"),
        ("80030002 00000002 0001", "SYN_REPLY frame of 2 bytes is too short"),
        ("80030002 00000008 00000001 01020304", "header block does not decompress"),
    ],
)
def test_malformed_frames(wire: str, message: str | None) -> None:
    raw = bytes.fromhex(wire.replace(" ", ""))
    if message is None:
        assert spdyframes.FrameDecoder().feed(raw) == [spdyframes.WindowUpdate(0, 1)]
        return
    with pytest.raises(spdyheaders.SpdyError) as caught:
        spdyframes.FrameDecoder().feed(raw)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (b"\x00\x00", "header block of 2 bytes has no count"),
        (b"\x00\x00\x00\x01\x00\x00\x00\x01A\x00\x00\x00\x00", "header name 'A' is empty or not lower-case"),
        (b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00", "header name '' is empty or not lower-case"),
        (
            b"\x00\x00\x00\x02" + (b"\x00\x00\x00\x01a\x00\x00\x00\x00") * 2,
            "header 'a' appears twice in one block",
        ),
        (b"\x00\x00\x00\x01\x00\x00\x00\x09ab\x00\x00\x00\x00", "header block ends inside a name or value"),
        (b"\x00\x00\x00\x09\x00\x00\x00\x01a", "header block claims 9 headers in 9 bytes"),
        (b"\x00\x00\x00\x00junk", "4 bytes left after the header block"),
    ],
)
def test_malformed_header_blocks(block: bytes, message: str) -> None:
    with pytest.raises(spdyheaders.SpdyError) as caught:
        spdyheaders.decode_header_block(block)
    assert str(caught.value) == message


def test_a_header_bomb_is_refused() -> None:
    compressor = spdyheaders.HeaderCompressor()
    block = compressor.compress((("a", "x" * 5000),))
    with pytest.raises(spdyheaders.SpdyError, match="header block larger than 1000 bytes"):
        spdyheaders.HeaderDecompressor(limit=1000).decompress(block)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (spdyframes.Data(0, b""), "stream id 0 is not in 1..2**31-1"),
        (spdyframes.SynReply(1 << 31), "stream id 2147483648 is not in 1..2**31-1"),
        (spdyframes.SynStream(1, (("a", "1"), ("A", "2"))), "a SPDY header block names each header once"),
        (spdyframes.Data(1, bytes(spdyframes.MAX_LENGTH + 1)), "a SPDY frame carries at most 16777215 bytes"),
    ],
)
def test_the_encoder_refuses_what_cannot_be_sent(frame: spdyframes.Frame, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("*", r"\*").replace(".", r"\.")):
        spdyframes.FrameEncoder().encode(frame)


def test_a_whole_tty_session_as_the_apiserver_sent_it() -> None:
    # kubectl exec -it (WebSocket v5) translated by kube-apiserver v1.36.3 into SPDY: four streams
    # whose header blocks share one zlib context, two resizes, keystrokes, a ping, stdin's FIN,
    # then the client's resets once it had the status.
    session = (CAPTURED / "translator-tty-session.bin").read_bytes()
    stream = (("streamtype", "error"),), (("streamtype", "stdin"),), (("streamtype", "stdout"),)
    assert spdyframes.FrameDecoder().feed(session) == [
        spdyframes.SynStream(1, stream[0]),
        spdyframes.SynStream(3, stream[1]),
        spdyframes.SynStream(5, stream[2]),
        spdyframes.SynStream(7, (("streamtype", "resize"),)),
        spdyframes.Data(7, b'{"Width":120,"Height":40}\n'),
        spdyframes.Data(3, b"hi\r"),
        spdyframes.Data(7, b'{"Width":132,"Height":50}\n'),
        spdyframes.Ping(1),
        spdyframes.Data(3, b"q\r"),
        spdyframes.Data(3, b"", fin=True),
        spdyframes.RstStream(1, spdyframes.RstStatus.CANCEL),
        spdyframes.RstStream(5, spdyframes.RstStatus.CANCEL),
        spdyframes.RstStream(7, spdyframes.RstStatus.CANCEL),
    ]
