"""One tenant cannot stop red-box for the others: hostile job names, comments and paths, real Slurm.

Slurm prints a job's name, comment and working directory unescaped; a
newline or a separator in one of them used to fail the whole squeue/sacct
parse (every status query and key lookup of everybody), and the key index
read every user's jobs. Here red-box runs as the job owner (uid 1000) and
another Slurm user (root) or the owner itself, outside red-box, submits the
hostile jobs with ``sbatch``.
"""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.redbox.helpers import scancel, script, wait_for
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.redbox.slurm.cli.rows import UNREADABLE_REASON
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm]


@pytest.fixture
def hostile_dir() -> Iterator[Path]:
    """A directory whose name has a newline and a ``|``, that any user may chdir into."""
    base = Path(tempfile.mkdtemp(prefix="hostile-", dir="/tmp"))
    path = base / "a\nb|c"
    path.mkdir()
    base.chmod(0o755)
    path.chmod(0o777)
    yield path
    subprocess.run(["rm", "-rf", str(base)], check=False)


@pytest.fixture
def sbatch() -> Iterator[Callable[..., JobId]]:
    """``sbatch(*options, user=None)``: a held job submitted outside red-box; scancelled at teardown."""
    made: list[int] = []

    def submit(*options: str, user: str | None = None) -> JobId:
        argv = ["sbatch", "--parsable", "--hold", "-p", "debug", *options, "--wrap", "true"]
        if user is not None:
            argv = ["runuser", "-u", user, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, cwd="/tmp", check=True)
        made.append(int(done.stdout.strip()))
        return JobId(made[-1])

    yield submit
    scancel(*made)


@pytest.fixture
def owner(redbox_factory: Callable[..., RedBox]) -> RedBox:
    return redbox_factory(user=JOB_OWNER)


@pytest.fixture
async def owner_client(owner: RedBox) -> AsyncIterator[RedBoxClient]:
    client = RedBoxClient(owner.socket, timeout=60.0)
    yield client
    await client.close()


def _held(key: str = "", **fields: str) -> JobSpec:
    fields = {"partition": "debug", **fields}
    return JobSpec(script=script("#SBATCH --hold", "true"), idempotency_key=key, **fields)


async def test_another_users_jobs_neither_break_lookups_nor_are_adopted(
    owner_client: RedBoxClient, sbatch: Callable[..., JobId], hostile_dir: Path
) -> None:
    stolen = f"stolen-{uuid.uuid4().hex}"
    sbatch("--job-name=x\ny|z", f"--comment=wlmvk:{stolen}-nl\n1\x1fRUNNING", f"--chdir={hostile_dir}")
    foreign = sbatch(f"--comment=wlmvk:{stolen}")
    assert await owner_client.find(stolen) is None, "another user's job is not ours to adopt"
    mine = await owner_client.submit(_held(stolen))
    assert mine != foreign
    found = await owner_client.find(stolen)
    assert found is not None
    assert found.job_id == mine
    state = await wait_for(owner_client, mine, lambda s: s.status is JobStatus.PENDING)
    assert state.idempotency_key == stolen
    assert (await owner_client.states([foreign]))[foreign].status is JobStatus.NOT_FOUND


ODD_NAME = "sep\x1fin\x1fname\nand a newline"


async def test_an_unreadable_row_of_our_own_user_is_unknown_and_the_others_answer(
    redbox_factory: Callable[..., RedBox], sbatch: Callable[..., JobId]
) -> None:
    # Through squeue (--slurm-api cli) the job's row cannot be split: that job alone is UNKNOWN.
    client = RedBoxClient(redbox_factory("--slurm-api", "cli", user=JOB_OWNER).socket, timeout=60.0)
    try:
        good = await client.submit(_held(f"good-{uuid.uuid4().hex}"))
        odd = sbatch(f"--job-name={ODD_NAME}", user=JOB_OWNER)
        states = await client.states([good, odd])
        assert states[good].status is JobStatus.PENDING
        assert (states[odd].status, states[odd].reason) == (JobStatus.UNKNOWN, UNREADABLE_REASON)
        key = f"after-{uuid.uuid4().hex}"
        after = await client.submit(_held(key))
        found = await client.find(key)
        assert found is not None
        assert found.job_id == after
    finally:
        await client.close()


async def test_through_slurmrestd_the_same_row_is_read_as_it_is(
    redbox_factory: Callable[..., RedBox], sbatch: Callable[..., JobId]
) -> None:
    # slurmrestd's dump is JSON: the name travels escaped, so the job reads whole.
    box = redbox_factory("--slurm-api", "rest", user=JOB_OWNER)
    client = RedBoxClient(box.socket, timeout=60.0)
    try:
        good = await client.submit(_held(f"good-{uuid.uuid4().hex}"))
        odd = sbatch(f"--job-name={ODD_NAME}", user=JOB_OWNER)
        states = await client.states([good, odd])
        assert states[good].status is JobStatus.PENDING
        assert (states[odd].status, states[odd].reason, states[odd].name) == (
            JobStatus.PENDING,
            "JobHeldUser",
            ODD_NAME,
        )
    finally:
        await client.close()
    assert "submitting through sbatch" not in box.log()


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"working_dir": "in\nside"}, "working dir"),
        ({"name": "a\x1fb"}, "job name"),
        ({"std_out": "out\n.txt"}, "output"),
        ({"partition": "debug\n"}, "partition"),
    ],
)
async def test_control_characters_in_a_submission_are_invalid_argument(
    owner: RedBox, owner_client: RedBoxClient, fields: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidInput, match=f"^SubmitJob: {named} .*control characters"):
        await owner_client.submit(_held(**fields))
    assert list(owner.work_dir.iterdir()) == [], "a refused job leaves no directory behind"


async def test_a_control_character_in_an_sbatch_line_is_invalid_argument(owner_client: RedBoxClient) -> None:
    spec = JobSpec(script=script("#SBATCH --comment=a\x1fb", "true"), partition="debug")
    with pytest.raises(InvalidInput, match=r"^SubmitJob: line 3 of the batch script: a control character"):
        await owner_client.submit(spec)
