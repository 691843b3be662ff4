"""What an answer to a submission says about its job, and when a key lookup may say it was not made (pure).

The one rule of exactly-once submission, on both paths (sbatch and
slurmrestd), for SubmitJob and each job of SubmitJobs:

- an answer that certainly means "not made" may be followed by another
  submission at once (``RETRY_NOW``): nothing reached slurmctld (no
  connection, slurmrestd refused to parse it), or slurmctld refused the job;
- an answer that may mean "Slurm has it" (``LOOK_UP``: a socket timeout,
  Slurm's communication errors, a reply that does not decode, no reply) is
  never followed by another submission until the job's idempotency key was
  looked up after Slurm could no longer be making the job (``Unsettled``);
- anything else is the answer (``FINAL``): a job id, or a refusal the caller
  is given as it is.

When could Slurm no longer be making it? The request left red-box's side at
``since`` (the reply came, or the process that sent it is gone). slurmctld
takes connections in the order they came: once it answered a lookup that
started after ``since``, it had taken the submission too, and a request it
took is done within MessageTimeout (its clients give up then). A lookup
that started MessageTimeout (plus MARGIN) after that first answer, and does
not find the key, therefore says the job was not made.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from wlmvk.core.errors import Unavailable


class Verdict(enum.Enum):
    RETRY_NOW = "retry-now"
    LOOK_UP = "look-up-after-bound"
    FINAL = "final"


class MaybeMade(Unavailable):
    """A submission's answer may mean that Slurm has the job: look its key up before another.

    ``since`` is the monotonic second after which nothing of this request can still be sent.
    """

    def __init__(self, message: str, *, since: float) -> None:
        super().__init__(message)
        self.since = since


MARGIN = 2.0
"""Seconds added to MessageTimeout: a request slurmctld took ends within it, this covers scheduling."""

DEFAULT_MESSAGE_TIMEOUT = 10.0
"""Slurm's own default MessageTimeout, for a configuration that does not state it."""

_REFUSALS = (range(2000, 3000), range(9000, 10000))
"""slurmctld's refusals of a job (ESLURM_*), and slurmrestd's own (the request did not parse: never
sent). Every other code may have been a job made and its reply lost: the communication errors
1000-1999, the socket errors 5000-5005 (5004, "Socket timed out on send/recv operation"), the
authentication errors 6000 (a reply whose credential did not verify), and codes not known."""


def rest_answer(job_id: object, codes: Sequence[int] | None) -> Verdict:
    """slurmrestd's answer to a submission: its ``job_id`` and error codes (None: the body did not decode)."""
    if isinstance(job_id, int) and not isinstance(job_id, bool) and job_id > 0:
        return Verdict.FINAL  # a job id is a job, whatever else the answer says (2042: it is held)
    if codes and all(any(code in span for span in _REFUSALS) for code in codes):
        return Verdict.RETRY_NOW
    return Verdict.LOOK_UP


_PERHAPS = (
    "Socket timed out",  # 5004: sent, no reply within MessageTimeout
    "Zero Bytes were transmitted",  # 5005
    "Communication connection failure",  # 1001
    "Communication send failure",
    "Communication receive failure",
    "Unexpected message received",  # 1000
    "Insane message length",
    "Protocol authentication error",
    "Incomplete packet",
)
_NOT_SENT = (
    "Unable to contact slurm controller",  # connect failure: nothing sent
    "Connection refused",
    "Unable to establish connection",
    "Slurm backup controller in standby mode",
    "Unable to process configuration file",
)


def sbatch_failure(text: str) -> Verdict:
    """What sbatch's failure (its stderr and stdout, exit status not 0) says about the job."""
    if any(marker in text for marker in _PERHAPS):
        return Verdict.LOOK_UP
    if any(marker in text for marker in _NOT_SENT):
        return Verdict.RETRY_NOW
    return Verdict.FINAL


def message_timeout(config: str) -> float:
    """MessageTimeout in seconds from ``scontrol show config`` (``MessageTimeout = 10 sec``)."""
    match = re.search(r"^MessageTimeout\s*=\s*(\d+)", config, re.MULTILINE)
    return float(match.group(1)) if match else DEFAULT_MESSAGE_TIMEOUT


def bound(message_timeout_seconds: float) -> float:
    """Seconds after slurmctld's first answer until a lookup that misses the key is conclusive."""
    return message_timeout_seconds + MARGIN


@dataclass(frozen=True)
class Unsettled:
    """A key whose submission may have made its job, and what lookups said since (monotonic seconds)."""

    since: float
    answered: float | None = None
    """When the first lookup that started after ``since`` was answered (not finding the key)."""

    def counts(self, started: float) -> bool:
        """Whether a lookup that started then says anything: it started after the request left."""
        return started >= self.since

    def looked(self, started: float, ended: float) -> Unsettled:
        """After a lookup that started then, was answered at ``ended`` and did not find the key."""
        if self.answered is not None or not self.counts(started):
            return self
        return replace(self, answered=ended)

    def wait(self, now: float, seconds: float) -> float:
        """Seconds until a lookup may start that can conclude (0 before the first answer)."""
        return 0.0 if self.answered is None else max(0.0, self.answered + seconds - now)

    def conclusive(self, started: float, seconds: float) -> bool:
        """Whether a lookup that started then and did not find the key says the job was not made."""
        return self.answered is not None and started >= self.answered + seconds
