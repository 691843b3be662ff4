"""A unary call's answer on the wire in one write: its headers, its message and its trailers.

grpclib hands each frame it makes to the transport at once, so the answer to a unary call
(SubmitJob, JobState, WorkloadInfo, ...) left red-box as three ``send()``s, each waking the
client's reader for a part it can do nothing with before the trailers, which carry the status.
An ``Answer`` stream leaves its headers and its message in the connection's h2 buffer, and the
frame that ends the stream writes the buffer out whole. Nothing waits for a later loop turn (a
write at the end of each turn was tried and queued behind every ready callback). A write for
another stream in between takes the buffer along in its order, so the client's HPACK decoder
reads header blocks in the order red-box's encoder made them. Streams that answer with many
messages (TailFile, Exec) keep a write per frame: each message is news to their client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grpclib.protocol import Stream, _Headers
from grpclib.server import Handler
from h2.exceptions import StreamClosedError


class Answer(Stream):
    """A stream whose frames are held in h2's buffer until the one that ends it."""

    async def send_headers(self, headers: _Headers, end_stream: bool = False) -> None:
        assert self.id is not None, "a stream that sends headers has its id"
        await self.connection.write_ready.wait()
        if self.id not in self._h2_connection.streams:
            self.connection.flush()  # what was held goes, the stream's end or not
            raise StreamClosedError(self.id)
        self._h2_connection.send_headers(self.id, headers, end_stream=end_stream)
        if end_stream:
            self.connection.flush()
        self.connection.headers_send_process()

    async def send_data(self, data: bytes, end_stream: bool = False) -> None:
        assert self.id is not None, "a stream that sends data has its id"
        await self.connection.write_ready.wait()
        h2 = self._h2_connection
        if len(data) > min(h2.local_flow_control_window(self.id), h2.max_outbound_frame_size):
            # Several frames, or a wait for the client's window: grpclib's way, whose first
            # write carries what is held.
            await super().send_data(data, end_stream=end_stream)
            return
        h2.send_data(self.id, data, end_stream=end_stream)
        self.data_sent += len(data)
        self.connection.data_sent += len(data)
        if end_stream:
            self.connection.flush()
        self.connection.data_send_process()


class Answering(Handler):
    """grpclib's handler of a connection's calls, the unary-answered ones on ``Answer`` streams."""

    def accept(self, stream: Stream, headers: _Headers, release_stream: Callable[[], Any]) -> None:
        path = next((value for name, value in headers if name == ":path"), None)
        method = self.mapping.get(path) if path is not None else None
        if method is not None and not method.cardinality.server_streaming:
            stream.__class__ = Answer  # the same object, made by grpclib's connection
        super().accept(stream, headers, release_stream)
