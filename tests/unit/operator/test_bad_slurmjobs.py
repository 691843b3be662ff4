"""Bad SlurmJobs: refused by the API server, or reported on the SlurmJob with a reason and an Event.

Two kinds of bad input:

- what the CRD schema can say (a missing ``spec.batch``, a wrong type, an
  unknown field): ``kubectl`` and the client are refused and told which
  field, and nothing is stored;
- what only the operator can judge (a partition or size no virtual node
  offers, an ``#SBATCH`` line sbatch could not read, a staging path out of
  the working directory, a pod the kubelet cannot run): the SlurmJob is
  stored and its status, a condition and a Warning Event say why.

The whole loop runs fast: in-memory API server with its scheduler, the
operator, and the kubelet over a fake red-box with partitions ``debug``
(1 node, 2 CPUs, 20000 MB, 600 s, 2 GPUs) and ``long`` (86400 s).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from tests.unit.kubelet.test_kubelet_fake_backend import eventually
from wlmvk.core import names, tasks
from wlmvk.core.errors import InvalidInput
from wlmvk.kube.bodies import EVENTS, PODS, Body, Resource
from wlmvk.kube.client import KubeClient
from wlmvk.operator.app import serve
from wlmvk.operator.controller import SLURMJOBS
from wlmvk.operator.settings import OperatorSettings
from wlmvk_dev import crdmanifests as crds

CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)
SCRIPT = "#!/bin/sh\necho hi\n"


def slurmjob(name: str, spec: Any) -> Body:
    return {"apiVersion": names.API_VERSION, "kind": "SlurmJob", "metadata": {"name": name}, "spec": spec}


def mount(name: str = "data") -> Body:
    return {"name": name, "hostPath": {"path": f"/tmp/wlmvk-never-{name}", "type": "DirectoryOrCreate"}}


@pytest.fixture
async def kube(apiserver: RunningApiServer) -> AsyncIterator[KubeClient]:
    client = await KubeClient.connect(str(apiserver.kubeconfig))
    for crd in crds.definitions().values():
        await client.create(CRDS, crd)
    yield client
    await client.close()


# -- refused by the schema -----------------------------------------------------------------------------------

# id -> (spec, the field the refusal names)
REFUSED: dict[str, tuple[Any, str]] = {
    "no-spec": (None, "spec: Required value"),
    "no-batch": ({"nodeSelector": {"a": "b"}}, "spec.batch: Required value"),
    "empty-batch": ({"batch": ""}, "spec.batch"),
    "batch-a-number": ({"batch": 5}, "spec.batch"),
    "batch-a-list": ({"batch": ["#!/bin/sh", "echo"]}, "spec.batch"),
    "spec-a-string": ("#!/bin/sh\necho\n", "spec"),
    "nodeSelector-value-a-number": ({"batch": SCRIPT, "nodeSelector": {"a": 1}}, "spec.nodeSelector"),
    "nodeSelector-a-list": ({"batch": SCRIPT, "nodeSelector": ["a=b"]}, "spec.nodeSelector"),
    "prepare-a-string": ({"batch": SCRIPT, "prepare": "inputs"}, "spec.prepare"),
    "prepare-without-mount": ({"batch": SCRIPT, "prepare": {"to": "in"}}, "spec.prepare.mount"),
    "prepare-empty-to": ({"batch": SCRIPT, "prepare": {"to": "", "mount": mount()}}, "spec.prepare.to"),
    "results-without-from": ({"batch": SCRIPT, "results": {"mount": mount()}}, "spec.results.from"),
    "results-mount-without-name": (
        {"batch": SCRIPT, "results": {"from": "out", "mount": {"emptyDir": {}}}},
        "spec.results.mount.name",
    ),
    "results-from-a-number": (
        {"batch": SCRIPT, "results": {"from": 7, "mount": mount()}},
        "spec.results.from",
    ),
}


@pytest.mark.kubectl
@pytest.mark.parametrize(("spec", "field"), list(REFUSED.values()), ids=list(REFUSED))
async def test_a_slurmjob_the_schema_refuses_is_refused_naming_the_field(
    apiserver: RunningApiServer, kube: KubeClient, spec: Any, field: str
) -> None:
    body = slurmjob("bad", spec)
    if spec is None:
        del body["spec"]
    applied = await apiserver.kubectl("apply", "-f", "-", input=json.dumps(body))
    assert applied.returncode != 0
    assert 'The SlurmJob "bad" is invalid' in applied.stderr, applied.stderr  # kubectl's words for a 422
    assert field in applied.stderr
    with pytest.raises(InvalidInput, match=field.split(":")[0].replace(".", r"\.")):
        await kube.create(SLURMJOBS, body, namespace="default")
    assert (await kube.list(SLURMJOBS, namespace="default"))["items"] == []


@pytest.mark.kubectl
async def test_unknown_fields_are_refused_by_kubectl_and_pruned_otherwise(
    apiserver: RunningApiServer, kube: KubeClient
) -> None:
    """The schema is structural: kubectl (strict field validation) names the field; a plain
    client's unknown field is dropped, as a real API server does, so it cannot be half-obeyed."""
    body = slurmjob(
        "typo",
        {"batch": SCRIPT, "nodeSelectr": {"a": "b"}, "results": {"from": "o", "mount": mount(), "too": "x"}},
    )
    applied = await apiserver.kubectl("apply", "-f", "-", input=json.dumps(body))
    assert applied.returncode != 0
    assert 'unknown field "spec.nodeSelectr"' in applied.stderr, applied.stderr
    assert 'unknown field "spec.results.too"' in applied.stderr
    assert (await kube.list(SLURMJOBS, namespace="default"))["items"] == []
    created = await kube.create(SLURMJOBS, body, namespace="default")
    assert created["spec"] == {"batch": SCRIPT, "results": {"from": "o", "mount": mount()}}


# -- accepted by the schema, reported by the operator --------------------------------------------------------


@pytest.fixture
async def operator(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet
) -> AsyncIterator[FakeBackend]:
    """The operator and a kubelet over a fake red-box; yields the fake (to see what was submitted)."""
    fake = FakeBackend()
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake)
    stop = asyncio.Event()
    settings = OperatorSettings(leader_election=False, identity="op-test", resync_interval=5.0)
    running = tasks.guarded(serve(settings, kubeconfig=str(apiserver.kubeconfig), stop=stop), name="operator")
    yield fake
    stop.set()
    await asyncio.wait_for(running, 20)


async def status_of(kube: KubeClient, name: str) -> Body:
    return dict((await kube.get(SLURMJOBS, name, namespace="default")).get("status") or {})


async def events_of(kube: KubeClient, name: str) -> list[Body]:
    listed = await kube.list(EVENTS, namespace="default")
    return [
        e
        for e in listed["items"]
        if e["involvedObject"]["kind"] == "SlurmJob" and e["involvedObject"]["name"] == name
    ]


async def reported(kube: KubeClient, name: str, status: str, reason: str, event: str) -> tuple[Body, Body]:
    """The SlurmJob's status once it is ``status``/``reason``, and its Warning Event ``event``."""

    async def settled() -> Body | None:
        now = await status_of(kube, name)
        return now if (now.get("status"), now.get("reason")) == (status, reason) else None

    found = await eventually(settled, timeout=15)

    async def warned() -> Body | None:
        return next(
            (e for e in await events_of(kube, name) if e["type"] == "Warning" and e["reason"] == event), None
        )

    return found, await eventually(warned, timeout=10)


def condition(status: Body, kind: str) -> Body:
    return next(c for c in status.get("conditions") or [] if c["type"] == kind)


# id -> (spec, words the message must contain)
INVALID: dict[str, tuple[Body, str]] = {
    "nodes-not-a-count": ({"batch": "#!/bin/sh\n#SBATCH --nodes=two\necho\n"}, "line 2: --nodes wants N"),
    "unterminated-quote": ({"batch": '#!/bin/sh\n#SBATCH --job-name="oops\necho\n'}, "line 2: cannot read"),
    "not-an-option": ({"batch": "#!/bin/sh\n#SBATCH nodes=2\necho\n"}, "'nodes=2' is not an sbatch option"),
    "option-without-value": (
        {"batch": "#!/bin/sh\n#SBATCH --partition\necho\n"},
        "--partition needs a value",
    ),
    "memory-not-a-size": ({"batch": "#!/bin/sh\n#SBATCH --mem=lots\necho\n"}, "--mem wants a size"),
    "time-not-a-duration": ({"batch": "#!/bin/sh\n#SBATCH -t forever\necho\n"}, "--time wants minutes"),
    "cpus-negative": ({"batch": "#!/bin/sh\n#SBATCH -c -1\necho\n"}, "--cpus-per-task wants a count"),
    "gpus-not-a-count": ({"batch": "#!/bin/sh\n#SBATCH --gres=gpu:many:x\necho\n"}, "GPU count"),
    "blank-script": ({"batch": "  \n\t\n"}, "spec.batch is blank: there is no script to run"),
    "results-escape": (
        {"batch": SCRIPT, "results": {"from": "../../..", "mount": mount()}},
        "spec.results.from '../../..' escapes the job's working directory",
    ),
    "results-absolute": (
        {"batch": SCRIPT, "results": {"from": "/etc/passwd", "mount": mount()}},
        "must be relative to the job's working directory",
    ),
    "results-the-whole-directory": (
        {"batch": SCRIPT, "results": {"from": "a/..", "mount": mount()}},
        "spec.results.from must name a file or directory",
    ),
    "prepare-escape": (
        {"batch": SCRIPT, "prepare": {"to": "in/../../x", "mount": mount()}},
        "spec.prepare.to 'in/../../x' escapes",
    ),
}


@pytest.mark.parametrize(("spec", "words"), list(INVALID.values()), ids=list(INVALID))
async def test_a_slurmjob_nothing_can_run_fails_with_the_reason_and_an_event(
    kube: KubeClient, operator: FakeBackend, spec: Body, words: str
) -> None:
    await kube.create(SLURMJOBS, slurmjob("bad", spec), namespace="default")
    status, event = await reported(kube, "bad", "Failed", "InvalidSpec", "InvalidSpec")
    assert words in status["message"], status["message"]
    valid = condition(status, "Valid")
    assert (valid["status"], valid["reason"], valid["message"]) == ("False", "InvalidSpec", status["message"])
    assert event["message"] == status["message"]
    pods = await kube.list(PODS, namespace="default")
    assert pods["items"] == []
    assert operator.calls["submit"] == 0


# id -> (spec, words the message must contain besides the scheduler's)
UNPLACEABLE: dict[str, tuple[Body, str]] = {
    "no-such-partition": (
        {"batch": "#!/bin/sh\n#SBATCH --partition=nosuch\necho\n"},
        "no partition named nosuch (partitions: debug, long)",
    ),
    "more-nodes-than-any-partition": (
        {"batch": "#!/bin/sh\n#SBATCH --nodes=5\necho\n"},
        "5 nodes; the most a partition offers is 1",
    ),
    "more-cpus-than-any-partition": (
        {"batch": "#!/bin/sh\n#SBATCH -c 64\necho\n"},
        "64 CPUs per node; the most a partition offers is 2",
    ),
    "more-memory-than-any-partition": (
        {"batch": "#!/bin/sh\n#SBATCH --mem=1T\necho\n"},
        "1048576 MB of memory per node; the most a partition offers is 20000",
    ),
    "longer-than-any-partition": (
        {"batch": "#!/bin/sh\n#SBATCH --time=2-00:00:00\necho\n"},
        "172800 s of wall time; the most a partition offers is 86400",
    ),
    "more-gpus-than-any-partition": (
        {"batch": "#!/bin/sh\n#SBATCH --gres=gpu:8\necho\n"},
        "8 GPUs per node; the most a partition offers is 2",
    ),
    "too-long-for-the-partition-asked": (
        {"batch": "#!/bin/sh\n#SBATCH -p debug -t 60\necho\n"},
        "3600 s of wall time; the most partition debug offers is 600",
    ),
    "a-feature-no-partition-has": (
        {"batch": "#!/bin/sh\n#SBATCH --constraint=quantum\necho\n"},
        "no partition has the feature(s) quantum",
    ),
    "a-node-selector-no-partition-matches": (
        {"batch": SCRIPT, "nodeSelector": {names.LABEL_PARTITION: "gpu"}},
        f"no partition has the labels {names.LABEL_PARTITION}=gpu",
    ),
    "with-prepare-no-such-partition": (
        {"batch": "#!/bin/sh\n#SBATCH -p nosuch\necho\n", "prepare": {"to": "in", "mount": mount()}},
        "no partition named nosuch",
    ),
}


@pytest.mark.parametrize(("spec", "words"), list(UNPLACEABLE.values()), ids=list(UNPLACEABLE))
async def test_a_slurmjob_no_partition_can_run_waits_saying_why(
    kube: KubeClient, operator: FakeBackend, spec: Body, words: str
) -> None:
    """Pending, not Failed: a partition may yet appear or grow (as a pod waits for a node)."""
    await kube.create(SLURMJOBS, slurmjob("big", spec), namespace="default")
    status, event = await reported(kube, "big", "Pending", "Unschedulable", "FailedScheduling")
    assert words in status["message"], status["message"]
    scheduled = condition(status, "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"] == status["message"] == event["message"]
    await asyncio.sleep(1.0)
    assert (await status_of(kube, "big"))["status"] == "Pending"
    assert operator.calls["submit"] == 0


async def test_a_job_pod_the_kubelet_refuses_fails_the_slurmjob_with_its_reason(
    kube: KubeClient, operator: FakeBackend
) -> None:
    """Slurm refusing the job (here: the fake red-box answering sbatch's error) fails the SlurmJob."""

    async def refuse(spec: Any) -> Any:
        raise InvalidInput("sbatch: error: Invalid qos specification")

    operator.submit = refuse  # type: ignore[method-assign]
    await kube.create(
        SLURMJOBS,
        slurmjob("refused", {"batch": "#!/bin/sh\n#SBATCH --qos=nosuch\necho\n"}),
        namespace="default",
    )
    status, event = await reported(kube, "refused", "Failed", "SubmitFailed", "SubmitFailed")
    assert "was not submitted" in status["message"]
    assert "Invalid qos specification" in status["message"]
    assert "jobId" not in status
    assert "exitCode" not in status  # no job ran: no exit code to report
    assert event["message"] == status["message"]
