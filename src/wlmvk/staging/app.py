"""``wlmvk stage in|out``: move data between a pod's volume and the WLM side.

The operator's prepare and collect pods run this on the agent host, with
the red-box socket and the user's volume mounted:

- ``wlmvk stage in --socket S --from DIR --to REMOTE_DIR`` uploads DIR as a
  tar stream; it appears as ``REMOTE_DIR/<base name of DIR>/...``.
- ``wlmvk stage out --socket S --from REMOTE_PATH --to DIR`` downloads a
  file or directory; it appears as ``DIR/<base name of REMOTE_PATH>``.

Exit codes: 0 done, 1 the transfer failed (the reason is the last line on
stderr and in the pod's termination message), 2 usage, 3 red-box is
unreachable.

red-box going away mid-transfer (killed and restarted, its SSH forward cut) is
not the end: the transfer starts again from the beginning, with a line on
stderr, until ``--timeout``; both directions overwrite what an interrupted
attempt left, so the result is whole. A download that still fails says that
the copy it leaves in the volume is incomplete.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import structlog

from wlmvk.core import logging as core_logging
from wlmvk.core import loop as event_loop
from wlmvk.core.backend import Backend
from wlmvk.core.errors import Unavailable, WlmvkError
from wlmvk.core.names import DEFAULT_RED_BOX_SOCKET
from wlmvk.core.tarsafe import Totals
from wlmvk.core.tarstreams import unpack
from wlmvk.redboxclient.client import RedBoxClient
from wlmvk.staging.packing import pack

BackendFactory = Callable[[str, float], Backend]
TERMINATION_LOG = Path("/dev/termination-log")

_log = structlog.get_logger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wlmvk stage", description="Stage data in or out through red-box.")
    parser.add_argument("--log-level", default="info", help="debug, info, warning or error")
    sub = parser.add_subparsers(dest="direction", required=True)
    up = sub.add_parser("in", help="upload a local directory to the WLM side")
    up.add_argument("--from", dest="source", required=True, help="local directory (or file) to upload")
    up.add_argument("--to", dest="target", required=True, help="remote directory to unpack it into")
    down = sub.add_parser("out", help="download a remote file or directory")
    down.add_argument("--from", dest="source", required=True, help="remote file or directory")
    down.add_argument("--to", dest="target", required=True, help="local directory to put it in")
    for command in (up, down):
        command.add_argument("--socket", default=DEFAULT_RED_BOX_SOCKET, help="red-box Unix socket")
        command.add_argument("--timeout", type=float, default=600.0, help="seconds the transfer may take")
    return parser


def _client(socket: str, timeout: float) -> Backend:
    return RedBoxClient(socket, timeout=timeout)


def main(argv: list[str], *, backend: BackendFactory = _client) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    core_logging.configure(args.log_level)
    try:
        totals = event_loop.run(_run(args, backend))
    except Unavailable as exc:
        return _fail(f"red-box at {args.socket} is unreachable: {exc.message}", 3)
    except WlmvkError as exc:
        return _fail(exc.message, 1)
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), 1)
    except Exception as exc:  # a library error nobody mapped: still one line and exit 1, not a traceback
        _log.debug("transfer failed", exc_info=True)
        return _fail(f"the transfer failed: {type(exc).__name__}: {exc}", 1)
    verb = "uploaded" if args.direction == "in" else "downloaded"
    print(f"{verb} {totals.files} files ({totals.bytes} bytes) from {args.source} to {args.target}")
    return 0


# Waits between attempts after red-box went away: first, longest.
RETRY_FIRST = 1.0
RETRY_MAX = 10.0


async def _run(args: argparse.Namespace, backend: BackendFactory) -> Totals:
    client = backend(args.socket, args.timeout)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.timeout
    delay = RETRY_FIRST
    try:
        async with asyncio.timeout_at(deadline):
            while True:
                try:
                    return await _once(args, client)
                except Unavailable as exc:
                    if loop.time() + delay >= deadline:
                        raise _incomplete(args, exc) from exc
                    print(
                        f"wlmvk stage: {exc.message}; starting the transfer again in {delay:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
    except TimeoutError as exc:
        late = Unavailable(f"the transfer took longer than {args.timeout:.0f} s")
        raise _incomplete(args, late) from exc
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result


async def _once(args: argparse.Namespace, client: Backend) -> Totals:
    """One whole transfer."""
    if args.direction == "in":
        source = _readable(Path(args.source))
        files, size = await client.stage_in(args.target, pack(source))
        return Totals(files, size)
    target = _writable(Path(args.target))
    return await unpack(client.stage_out(args.source), target)


def _incomplete(args: argparse.Namespace, error: Unavailable) -> Unavailable:
    """The error, saying what a failed download leaves behind: an incomplete copy in the volume."""
    if args.direction == "in":
        return error
    left = Path(args.target) / Path(args.source).name
    if not left.exists():
        return error
    return Unavailable(f"{error.message}; the copy left in {left} is incomplete")


def _readable(source: Path) -> Path:
    if not source.exists():
        raise WlmvkError(f"{source} does not exist (is the volume mounted?)")
    return source


def _writable(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    return target


def _fail(message: str, code: int) -> int:
    text = f"wlmvk stage: {message}"
    print(text, file=sys.stderr)
    try:
        if TERMINATION_LOG.parent.is_dir() and TERMINATION_LOG.exists():
            TERMINATION_LOG.write_text(message)
    except OSError:
        pass
    return code
