"""structlog setup: JSON when stderr is not a terminal, console otherwise.

Libraries' own chatter stays at INFO or above whatever the level: at DEBUG,
hpack and h2 log every HTTP/2 frame of every gRPC call (dozens of lines
per call), burying wlmvk's own lines and spending CPU on each.
"""

from __future__ import annotations

import logging
import sys

import structlog

QUIET = ("hpack", "h2", "grpclib", "asyncio", "aiohttp.access")
"""Loggers of libraries kept at INFO or above."""


def configure(level: str = "info", *, json: bool | None = None, cache: bool = False) -> None:
    """Configure structlog and the stdlib root logger once per process.

    ``cache``: each module's logger is built once, at its first use, instead of at every
    call (a line filtered out by the level still built one: a few microseconds, several
    times per pod in a busy kubelet or red-box). The configuration cannot change after
    that, and structlog's ``capture_logs`` no longer sees those loggers: only the
    long-running processes whose CPU per job counts ask for it.
    """
    as_json = (not sys.stderr.isatty()) if json is None else json
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer()
    )
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format="%(message)s")
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(max(logging.INFO, logging.getLogger().level))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=cache,
    )
