"""Fencing tokens: the one rule by which red-box tells a Lease's holder from a deposed one.

A kubelet serving with ``--leader-elect`` holds its cluster's Lease; every
takeover raises the Lease's ``leaseTransitions``. The holder sends that number,
with the Lease it counts (the token's ``scope``), with each call to red-box as
gRPC metadata (``HEADER``: ``<scope>=<number>``). red-box keeps the highest
number it has seen per scope, on disk, and refuses a call that brings a lower
one (``refusal``): a deposed holder's call that was queued, frozen or retried
after a successor spoke to red-box changes nothing. A call without the header
(the original client, a plain ``grpcurl``) is served as before.

The client learns of a refusal by its message's start (``REFUSED``), and the
kubelet treats it as red-box telling it that it is deposed (retry is the new
holder's job). ``Fencing`` is what the client asks before each send: the
check that the holder still holds, and its token; and what it tells of a
refusal (``refused``, with the highest number red-box named): a holder that
still holds was refused only because its Lease was deleted and made again,
its count restarted, and raises the count above red-box's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

HEADER = "wlmvk-fence"
"""The gRPC metadata key carrying a token (lower case, as HTTP/2 headers are)."""

WRITES = frozenset(
    ("SubmitJob", "SubmitJobs", "SubmitJobContainer", "CancelJob", "StageIn", "CreateFile", "Unzip", "Zip")
)
"""The rpcs that change Slurm or files: sent only while the holder's check passes, and the calls
a new holder's first call waits for."""

REFUSED = "fenced"
"""The first word of red-box's refusal of a lower token."""


@dataclass(frozen=True)
class Token:
    """A holder's number in a scope (the Lease: ``<namespace>/<name>``); higher is newer."""

    scope: str
    number: int

    def header(self) -> str:
        return f"{self.scope}={self.number}"


def parse(value: str) -> Token:
    """A token from its header; ValueError naming what is wrong."""
    scope, equals, number = value.rpartition("=")
    if not equals or not scope:
        raise ValueError(f"{HEADER} {value!r}: expected <scope>=<number>")
    if not number.isdigit() or not number.isascii():
        raise ValueError(f"{HEADER} {value!r}: the number is not a non-negative integer")
    return Token(scope, int(number))


def refusal(token: Token, highest: int) -> str:
    """red-box's message for a token below the highest seen in its scope."""
    return (
        f"{REFUSED}: token {token.number} of {token.scope} is below the highest seen, {highest}:"
        " a newer holder of the Lease has spoken to red-box; this call changes nothing"
    )


def refused(message: str) -> bool:
    """Whether red-box's message (without the client's rpc prefix) is a fencing refusal."""
    return message.startswith(REFUSED + ":")


_HIGHEST = re.compile(r"is below the highest seen, (\d+):")


def highest_in(message: str) -> int | None:
    """The highest number a refusal (``refusal``) names; None for any other message."""
    found = _HIGHEST.search(message) if refused(message) else None
    return int(found.group(1)) if found else None


class Fencing(Protocol):
    """What a client asks just before each send (each retry included)."""

    def check(self) -> Token:
        """This process's token; raises (an ``Unavailable``) when it may not write now."""
        ...

    def token(self) -> Token | None:
        """This process's token for a call that writes nothing, None when it holds no Lease now."""
        ...

    async def refused(self, highest: int) -> None:
        """red-box refused this process's token, having seen ``highest``."""
        ...
