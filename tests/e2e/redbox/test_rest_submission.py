"""The same scripts through sbatch and through slurmrestd make the same Slurm jobs.

Two red-boxes run as the job owner on one working root: one with ``--slurm-api cli``
(sbatch), one with ``--slurm-api rest`` (its own slurmrestd, which ignores the
script's ``#SBATCH`` lines, so red-box sends each as a JSON field). Every script
below is submitted held through both; ``scontrol show job`` of the two jobs must
agree field by field, except the fields that name the job itself (its id, times)
and where it was submitted from (the session id). The REST red-box's log shows
which path made the job: the scripts whose options REST cannot carry must have gone
through sbatch there too. A script both refuse gets the same error (sbatch's).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.redbox.helpers import slurm_cmd
from tests.fixtures.redbox import JOB_OWNER, RedBox
from tests.fixtures.slurm import JOBS_ROOT
from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.redbox.slurm.cli.scontrol import scontrol_records
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases]

# Every #SBATCH directive of the tests and examples that this cluster accepts, a few at a time.
THROUGH_REST = [
    "--time=5 --mem=100 --cpus-per-task=1 --job-name=named",
    "-N 1 -c 2 -t 1:30 --mem-per-cpu=50",
    "--nodes=1-1 --ntasks=2 --ntasks-per-node=2 --mincpus=2",
    "-p gpu --gres=gpu:1 --time=0:45",
    "-p gpu -G 1",
    "-p gpu --gpus-per-node=2 --mem=1G",
    "-C avx2 --exclusive",
    "--constraint=avx2 --exclusive=user",
    "--array=0-3 --requeue",
    "--comment='a note of mine' -J short --nice=5",
    "--output=o-%j.out --error=e-%j.err",
    "--mail-type=END,FAIL --mail-user=a@b.c -q normal",
    "--export=ALL -HQ",
    "-t 1-0 -p long --account=wlmvk-test",
]
THROUGH_SBATCH = [
    "--time=UNLIMITED -p unlimited",
    "--begin=now+600",
    "--no-requeue",
    "--nice",
    "--signal=B:USR1@60",
    "--mem=0",
]
REFUSED = [
    "-p nosuchpartition",
    "-t 20 -p debug",  # over the partition's 10 minutes (EnforcePartLimits=ALL)
    "-C nosuchfeature",
    "--begin=garbage",
]
# Fields that name the job or its moment, not what was asked.
OWN = {"JobId", "ArrayJobId", "SubmitTime", "EligibleTime", "LastSchedEval", "AllocNode:Sid"}
OWN |= {"StartTime", "EndTime"}  # a pending job's expected start: from its submission time
OWN |= {"SubmitLine"}  # 26.05: the submitting command line (sbatch's argv; none through REST)
OWN |= {"AccrueTime"}  # when a scheduler pass first let it accrue age: set on one, Unknown on the other
# What the REST red-box logs (at debug) for a job it hands to sbatch.
SBATCH_USED = "submitting through sbatch"


@dataclass
class Pair:
    cli: RedBoxClient
    rest: RedBoxClient
    work_dir: Path
    rest_box: RedBox


@pytest.fixture
async def pair(redbox_factory: Callable[..., RedBox]) -> AsyncIterator[Pair]:
    work_dir = Path(tempfile.mkdtemp(prefix="rb-rest-", dir=JOBS_ROOT))
    shutil.chown(work_dir, JOB_OWNER, JOB_OWNER)
    cli = redbox_factory("--slurm-api", "cli", user=JOB_OWNER, work_dir=work_dir)
    rest = redbox_factory("--slurm-api", "rest", user=JOB_OWNER, work_dir=work_dir)
    clients = Pair(RedBoxClient(cli.socket), RedBoxClient(rest.socket), work_dir, rest)
    yield clients
    await clients.cli.close()
    await clients.rest.close()


def _partition(directives: str) -> str:
    # red-box's partition wins over the script's (it is the node the pod was placed on).
    found = re.search(r"-p (\S+)", directives)
    return found.group(1) if found else "debug"


def _script(directives: str) -> str:
    return f"#!/bin/sh\n#SBATCH --hold\n#SBATCH {directives}\necho hello\n"


async def _both(pair: Pair, directives: str) -> tuple[dict[str, str], dict[str, str]]:
    token = os.urandom(4).hex()
    records = []
    for client, side in ((pair.cli, "cli"), (pair.rest, "rest")):
        key = f"{side}-{token}"
        spec = JobSpec(script=_script(directives), partition=_partition(directives), idempotency_key=key)
        job_id = await client.submit(spec)
        try:
            (record,) = scontrol_records(slurm_cmd("scontrol", "-o", "show", "job", str(job_id)))[:1]
        finally:
            slurm_cmd("scancel", str(job_id))
        records.append(_comparable(record, job_id, f"{side}-{token}"))
    return records[0], records[1]


def _comparable(record: dict[str, str], job_id: int, key: str) -> dict[str, str]:
    named = {"StdOut", "StdErr", "StdIn", "Comment"}  # the fields that may hold the id or the key
    # Job 4 is not the 4 of slurm-4_4294967294.out, job 50 not the 50 of rb-rest-x23u50at.
    own_id = re.compile(rf"(?<![0-9A-Za-z]){job_id}(?![0-9A-Za-z])")
    return {
        name: own_id.sub("<id>", value.replace(key, "<key>")) if name in named else value
        for name, value in record.items()
        if name not in OWN
    }


async def test_rest_makes_the_job_sbatch_makes(pair: Pair) -> None:
    differing = {}
    for directives in THROUGH_REST:
        cli, rest = await _both(pair, directives)
        if rest != cli:
            differing[directives] = {
                k: (rest.get(k), cli.get(k)) for k in rest | cli if rest.get(k) != cli.get(k)
            }
    assert differing == {}
    assert pair.rest_box.log().count(SBATCH_USED) == 0


async def test_what_rest_cannot_carry_goes_through_sbatch(pair: Pair) -> None:
    for number, directives in enumerate(THROUGH_SBATCH, 1):
        cli, rest = await _both(pair, directives)
        assert rest == cli, directives
        assert pair.rest_box.log().count(SBATCH_USED) == number, directives


async def test_both_refuse_with_sbatchs_words(pair: Pair) -> None:
    for directives in REFUSED:
        errors = []
        for client in (pair.cli, pair.rest):
            spec = JobSpec(script=_script(directives), partition=_partition(directives), idempotency_key="")
            with pytest.raises(InvalidInput) as refused:
                await client.submit(spec)
            errors.append(refused.value.message)
        assert errors[0] == errors[1], directives
        assert errors[0].startswith("SubmitJob: sbatch: "), directives


async def test_cancel_through_rest_as_through_scancel(pair: Pair) -> None:
    errors = []
    for client in (pair.cli, pair.rest):
        job_id = await client.submit(JobSpec(script=_script("-t 1"), partition="debug", idempotency_key=""))
        await client.cancel(job_id)
        assert (await client.states([job_id]))[job_id].status.name == "CANCELLED"
        with pytest.raises(NotFound) as unknown:
            await client.cancel(JobId(2_000_000_000))
        errors.append(unknown.value.message)
    assert errors[0] == errors[1]
    assert "cancelling through scancel" not in pair.rest_box.log()
