"""Reconciliation as a pure decision: resource + owned pods + nodes -> actions.

Given a SlurmJob/WlmJob, the pods it owns and the virtual nodes, ``decide``
returns what to do: pods to create, the status to write, Events to post:
one Normal Event per pod created and one when the job succeeds, a Warning
when it fails or is cancelled, is unschedulable or its pod refused; none for
the steps between (Pending, Running), which the status and conditions say.
It reads nothing else and remembers nothing: everything it needs is in the
pods (the prepare pod carries the node chosen for the job) and the status,
so a restarted operator takes up where the last one stopped. It is
idempotent: when the status already says what the pods say, it returns no
status patch and no Event, and a terminal status is never revisited, so a
job is reported once.

The steps: prepare (when ``spec.prepare``) -> job -> collect (when
``spec.results``). With a prepare step the partition must be known before the
job pod exists (the upload runs on its agent host), so the operator chooses
the node itself (``placement.candidates``), pins the prepare pod to its
agent host and the job pod to the node. Without one, the job pod is created
at once and Kubernetes' scheduler chooses; while it cannot, the SlurmJob is
Pending with the scheduler's message, preceded by what of the request no
partition offers (``placement.unmet``). A job pod the kubelet refused before
any job existed fails the resource with the kubelet's reason.

With SlurmTenants (``core.tenancy``), a resource whose namespace's tenant refuses its script (another
account, a QoS outside the list, ``--uid``...), or whose namespace no tenant maps, fails before any
pod is made (reason TenantRefused). Judged once, before the first pod: a mapping changed later
does not fail a job already under way (its pods are judged again by the kubelet).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from wlmvk.core import names, scheduling
from wlmvk.core.errors import InvalidInput
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body
from wlmvk.operator import directives, placement, pods
from wlmvk.operator import tenants as tenants_mod
from wlmvk.operator.observed import PodView, cancelled, view
from wlmvk.operator.resources import Job, parse
from wlmvk.operator.settings import OperatorSettings
from wlmvk.slurm import tenancy

TERMINAL = frozenset({"Succeeded", "Failed", "Cancelled"})
ADMITTED = "Admitted"
"""The condition of a resource whose pod the API server refused (False) and then let in (True)."""
NORMAL = names.EventType.NORMAL
WARNING = names.EventType.WARNING


@dataclass(frozen=True)
class CreatePod:
    body: Body
    reason: str
    message: str


@dataclass(frozen=True)
class PatchStatus:
    status: Body


@dataclass(frozen=True)
class Emit:
    type: str
    reason: str
    message: str


Action = CreatePod | PatchStatus | Emit


@dataclass
class _Outcome:
    """The status being computed, and the pods to create."""

    status: str = "Pending"
    reason: str = ""
    message: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    conditions: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    creates: list[CreatePod] = field(default_factory=list)

    def condition(self, kind: str, ok: bool, reason: str, message: str = "") -> None:
        self.conditions[kind] = ("True" if ok else "False", reason, message)

    def end(self, status: str, reason: str, message: str) -> _Outcome:
        self.status, self.reason, self.message = status, reason, message
        return self


def decide(
    body: Body,
    *,
    owned: Sequence[Body],
    nodes: Sequence[Body],
    settings: OperatorSettings,
    now: str,
    tenants: tenancy.Book | None = None,
) -> list[Action]:
    """The actions that bring the pods and the status of ``body`` in line (see module docstring)."""
    old = dict(objects.status(body))
    if old.get("status") in TERMINAL or objects.deleting(body):
        return []
    by_name = {objects.name(pod): pod for pod in owned}
    try:
        job = parse(body)
        if job.kind == "SlurmJob" and not job.batch.strip():
            raise InvalidInput("spec.batch is blank: there is no script to run")
        request = directives.requirements(job.batch) if job.kind == "SlurmJob" else directives.Requirements()
    except InvalidInput as exc:
        outcome = _Outcome()
        outcome.condition("Valid", False, "InvalidSpec", exc.message)
        outcome.end("Failed", "InvalidSpec", exc.message)
    else:
        decided = tenants_mod.decide(job, body, tenants)
        if isinstance(decided, tenancy.Refusal) and not owned:
            outcome = _Outcome()
            outcome.condition("Valid", False, decided.reason, decided.message)
            outcome.end("Failed", decided.reason, decided.message)
            return _report(old, outcome, now=now, generation=objects.generation(body))
        settings = replace(settings, staging=replace(settings.staging, tenant=decided))
        outcome = _steps(job, pods.requirements_of(job, request), by_name, nodes, settings)
        if placement.ignores_working_dir(
            placement.named(nodes, str(outcome.fields.get("node") or old.get("node") or ""))
        ):
            outcome.fields["workingDir"] = None  # an original red-box ran the job elsewhere
    return _report(old, outcome, now=now, generation=objects.generation(body))


def refused(body: Body, pod: str, message: str, *, final: bool, now: str) -> list[Action]:
    """What to report when the API server refused to create ``pod`` (``message`` is its answer).

    A pod the API server finds invalid (422) stays invalid: the resource fails (PodRejected). A
    forbidden one (403: an admission policy, Pod Security, RBAC) may be let in once an
    administrator changes the rule: the resource keeps its status, says why it does not go on
    (condition Admitted=False, reason PodRefused) and the controller retries with a backoff. One
    Warning Event per distinct refusal, not one per retry.
    """
    old = dict(objects.status(body))
    text = f"pod {pod} was refused: {message}"
    outcome = _Outcome(fields={})
    for kind, before in _conditions(old).items():
        outcome.conditions[kind] = (
            str(before.get("status")),
            str(before.get("reason")),
            str(before.get("message")),
        )
    if final:
        outcome.end("Failed", "PodRejected", text)
    else:
        outcome.condition(ADMITTED, False, "PodRefused", text)
        outcome.end(str(old.get("status") or "Pending"), "PodRefused", text)
    status = _status(old, outcome, now=now, generation=objects.generation(body))
    actions: list[Action] = []
    if status != old:
        actions.append(PatchStatus(status))
    if old.get("reason") != status["reason"] or old.get("message") != text:
        actions.append(Emit(WARNING, status["reason"], text))
    return actions


def _steps(
    job: Job,
    request: directives.Requirements,
    by_name: Mapping[str, Body],
    nodes: Sequence[Body],
    settings: OperatorSettings,
) -> _Outcome:
    outcome = _Outcome()
    if ADMITTED in _conditions(dict(job.status)):
        # Applied only after this pass's pods were created (a status patch follows the creates).
        outcome.condition(ADMITTED, True, "Admitted")
    working_dir = job.working_dir(settings.work_root)
    outcome.fields["workingDir"] = working_dir
    job_body = by_name.get(job.job_pod_name)
    pinned: dict[str, str] | None = None
    if job.prepare is not None:
        prepare = by_name.get(job.prepare_pod_name)
        if prepare is None:
            if job_body is None:
                return _start_prepare(job, request, outcome, nodes, settings, working_dir)
        else:
            step = view(prepare)
            target = step.annotation(pods.ANNOTATION_TARGET_NODE)
            outcome.fields["node"] = target
            node = placement.named(nodes, target)
            outcome.fields["partition"] = placement.partition_of(node)
            if step.phase == "Failed":
                outcome.condition("Prepared", False, "PrepareFailed", step.explain())
                return outcome.end(
                    "Failed", "PrepareFailed", f"uploading {job.prepare.path} failed: {step.explain()}"
                )
            if step.phase != "Succeeded":
                waiting = _waiting(step)
                outcome.condition("Prepared", False, "Preparing", waiting)
                return outcome.end(
                    "Preparing", "Preparing", f"uploading inputs to {job.prepare.path}: {waiting}"
                )
            outcome.condition("Prepared", True, "Prepared")
            pinned = placement.pin(node) if node else {"kubernetes.io/hostname": target}
    if job_body is None:
        if job.status.get("jobId") or job.status.get("status") in ("Running", "Collecting"):
            return outcome.end("Failed", "JobPodDeleted", f"pod {job.job_pod_name} was deleted")
        body = pods.job_pod(job, request, working_dir=working_dir, pinned=pinned)
        outcome.creates.append(CreatePod(body, "Created", f"Created job pod {job.job_pod_name}"))
        return outcome.end("Pending", "Scheduling", f"waiting for pod {job.job_pod_name} to be scheduled")
    return _after_job(job, request, view(job_body), outcome, by_name, nodes, settings, working_dir)


def _start_prepare(
    job: Job,
    request: directives.Requirements,
    outcome: _Outcome,
    nodes: Sequence[Body],
    settings: OperatorSettings,
    working_dir: str,
) -> _Outcome:
    assert job.prepare is not None
    spec = pods.job_pod(job, request, working_dir=working_dir)["spec"]
    matching = placement.candidates(spec, nodes)
    fitting = [node for node in matching if placement.agent_host(node)]
    if not fitting:
        virtual = [n for n in nodes if scheduling.fits({"tolerations": spec["tolerations"]}, n)]
        if matching:
            message = (
                f"{len(matching)} virtual node(s) match but none has the {names.LABEL_AGENT_HOST} label:"
                " there is no host to stage the data on"
            )
        elif virtual:
            message = _unmet(
                f"0/{len(virtual)} virtual nodes match the job's nodeSelector and #SBATCH resources",
                job,
                request,
                virtual,
            )
        else:
            message = "no virtual node (partition) is registered"
        outcome.condition("Scheduled", False, "Unschedulable", message)
        return outcome.end("Pending", "Unschedulable", message)
    node = fitting[0]
    name = str(node["metadata"]["name"])
    socket = tenants_mod.staging_socket(node, pods.socket_of(node, settings.staging), settings.staging.tenant)
    if isinstance(socket, tenancy.Refusal):
        outcome.condition("Prepared", False, socket.reason, socket.message)
        return outcome.end("Failed", socket.reason, socket.message)
    body = pods.prepare_pod(
        job, job.prepare, working_dir=working_dir, node=node, socket=socket, settings=settings.staging
    )
    outcome.creates.append(
        CreatePod(body, "Preparing", f"Created pod {job.prepare_pod_name} for node {name}")
    )
    outcome.fields["node"] = name
    outcome.fields["partition"] = placement.partition_of(node)
    outcome.condition("Prepared", False, "Preparing", f"pod {job.prepare_pod_name} created")
    return outcome.end("Preparing", "Preparing", f"uploading inputs to {job.prepare.path}")


def _after_job(
    job: Job,
    request: directives.Requirements,
    step: PodView,
    outcome: _Outcome,
    by_name: Mapping[str, Body],
    nodes: Sequence[Body],
    settings: OperatorSettings,
    working_dir: str,
) -> _Outcome:
    if step.job_id:
        outcome.fields["jobId"] = step.job_id
    if step.node:
        node = placement.named(nodes, step.node)
        outcome.fields["node"] = step.node
        outcome.fields["partition"] = placement.partition_of(node) or outcome.fields.get("partition", "")
        outcome.condition("Scheduled", True, "Scheduled", f"on {step.node}")
    if step.started_at:
        outcome.fields["startTime"] = step.started_at
    if step.phase == "Pending":
        if step.unschedulable and not step.node:
            message = _unmet(step.unschedulable, job, request, nodes)
            outcome.condition("Scheduled", False, "Unschedulable", message)
            return outcome.end("Pending", "Unschedulable", message)
        if not step.node:
            return outcome.end("Pending", "Scheduling", f"waiting for pod {step.name} to be scheduled")
        waiting = f"job {step.job_id} is queued" if step.job_id else "waiting for the job to be submitted"
        return outcome.end("Pending", "Queued" if step.job_id else "Submitting", waiting)
    if step.phase == "Running":
        return outcome.end("Running", "Running", f"job {step.job_id} is running" if step.job_id else "")
    if step.phase == "Failed":
        outcome.fields["completionTime"] = step.finished_at
        if cancelled(step):
            if step.exit_code is not None:
                outcome.fields["exitCode"] = step.exit_code
            return outcome.end("Cancelled", "Cancelled", f"{_job(step)} was cancelled")
        if not step.job_id and step.reason.isidentifier():
            # The kubelet refused the pod (SubmitFailed, PartitionGone...): no job ever existed,
            # so there is no exit code to report either.
            return outcome.end(
                "Failed", step.reason, f"the job was not submitted: {step.message or step.reason}"
            )
        if step.exit_code is not None:
            outcome.fields["exitCode"] = step.exit_code
        return outcome.end("Failed", "JobFailed", f"{_job(step)} failed: {step.explain()}")
    if step.phase != "Succeeded":
        return outcome.end(
            job.status.get("status") or "Pending", step.phase, f"pod {step.name} is {step.phase}"
        )
    outcome.fields["exitCode"] = step.exit_code if step.exit_code is not None else 0
    outcome.fields["completionTime"] = step.finished_at
    if job.results is None:
        return outcome.end("Succeeded", "Completed", f"{_job(step)} completed")
    return _collect(job, step, outcome, by_name, nodes, settings, working_dir)


def _collect(
    job: Job,
    step: PodView,
    outcome: _Outcome,
    by_name: Mapping[str, Body],
    nodes: Sequence[Body],
    settings: OperatorSettings,
    working_dir: str,
) -> _Outcome:
    assert job.results is not None
    collect = by_name.get(job.collect_pod_name)
    if collect is None:
        node = placement.named(nodes, step.node)
        if node is None or not placement.agent_host(node):
            message = (
                f"the agent host of node {step.node or '?'} is unknown: cannot collect {job.results.path}"
            )
            outcome.condition("Collected", False, "CollectFailed", message)
            return outcome.end("Failed", "CollectFailed", message)
        socket = tenants_mod.staging_socket(
            node, pods.socket_of(node, settings.staging), settings.staging.tenant
        )
        if isinstance(socket, tenancy.Refusal):
            outcome.condition("Collected", False, socket.reason, socket.message)
            return outcome.end("Failed", socket.reason, socket.message)
        body = pods.collect_pod(
            job, job.results, working_dir=working_dir, node=node, socket=socket, settings=settings.staging
        )
        outcome.creates.append(CreatePod(body, "Collecting", f"Created pod {job.collect_pod_name}"))
        outcome.fields["completionTime"] = ""
        return outcome.end("Collecting", "Collecting", f"collecting {job.results.path}")
    result = view(collect)
    if result.phase == "Failed":
        outcome.condition("Collected", False, "CollectFailed", result.explain())
        return outcome.end(
            "Failed", "CollectFailed", f"collecting {job.results.path} failed: {result.explain()}"
        )
    if result.phase != "Succeeded":
        outcome.fields["completionTime"] = ""
        waiting = _waiting(result)
        outcome.condition("Collected", False, "Collecting", waiting)
        return outcome.end("Collecting", "Collecting", f"collecting {job.results.path}: {waiting}")
    outcome.condition("Collected", True, "Collected")
    outcome.fields["completionTime"] = result.finished_at or outcome.fields.get("completionTime", "")
    return outcome.end("Succeeded", "Completed", f"{_job(step)} completed, results collected")


def _unmet(message: str, job: Job, request: directives.Requirements, nodes: Sequence[Body]) -> str:
    """The scheduler's ``message``, preceded by what of the request no partition offers."""
    problems = placement.unmet(request, job.node_selector, nodes)
    return f"{'; '.join(problems)} ({message.rstrip('.')})" if problems else message


def _job(step: PodView) -> str:
    return f"job {step.job_id}" if step.job_id else "the job"


def _waiting(step: PodView) -> str:
    """What a staging pod is waiting for, in the user's terms."""
    if step.unschedulable:
        return f"pod {step.name} cannot be scheduled: {step.unschedulable}"
    if step.phase == "Pending" and step.reason:
        return f"pod {step.name} is waiting: {step.explain()}"
    return f"pod {step.name} is {step.phase.lower()}"


# -- status and events --------------------------------------------------------------------------------------


def _report(old: Body, outcome: _Outcome, *, now: str, generation: int) -> list[Action]:
    status = _status(old, outcome, now=now, generation=generation)
    actions: list[Action] = list(outcome.creates)
    if status != old:
        actions.append(PatchStatus(status))
    if status.get("status") != old.get("status") and status["status"] in TERMINAL:
        # An Event when a job ends, as the Job controller's Completed, and for each pod made (the
        # creates): not for every step between (Pending, Running: the status and the pod's own
        # Events say them), which cost a write each and nobody acts on.
        message = outcome.message or status["status"]
        if status["status"] in ("Failed", "Cancelled"):
            # Why, not just that: InvalidSpec, SubmitFailed, JobFailed, CollectFailed...
            actions.append(Emit(WARNING, outcome.reason or status["status"], message))
        else:
            actions.append(Emit(NORMAL, status["status"], message))
    old_scheduled = _conditions(old).get("Scheduled", {})
    scheduled = outcome.conditions.get("Scheduled")
    if (
        scheduled
        and scheduled[0] == "False"
        and (old_scheduled.get("status") != "False" or old_scheduled.get("message") != scheduled[2])
    ):
        actions.append(Emit(WARNING, "FailedScheduling", scheduled[2]))
    return actions


def _status(old: Body, outcome: _Outcome, *, now: str, generation: int) -> Body:
    status: Body = {"status": outcome.status, "reason": outcome.reason, "message": outcome.message}
    for key in ("jobId", "node", "partition", "workingDir", "startTime", "completionTime", "exitCode"):
        value = outcome.fields.get(key, old.get(key))
        if value not in (None, ""):
            status[key] = value
    if outcome.status in TERMINAL and "completionTime" not in status:
        status["completionTime"] = now
    started = outcome.status in ("Running", "Collecting", "Succeeded", "Cancelled") or "jobId" in status
    if started and outcome.status != "Pending" and "startTime" not in status:
        status["startTime"] = now
    previous = _conditions(old)
    conditions = []
    for kind, (value, reason, message) in outcome.conditions.items():
        before = previous.get(kind, {})
        since = before.get("lastTransitionTime") if before.get("status") == value else now
        conditions.append(
            {"type": kind, "status": value, "reason": reason, "message": message, "lastTransitionTime": since}
        )
    for kind, before in previous.items():
        if kind not in outcome.conditions:
            conditions.append(before)
    if conditions:
        status["conditions"] = sorted(conditions, key=lambda c: _ORDER.get(c["type"], 99))
    if generation:
        status["observedGeneration"] = generation
    return status


_ORDER = {"Valid": 0, "Prepared": 1, "Scheduled": 2, "Collected": 3}


def _conditions(status: Body) -> dict[str, Body]:
    return {str(c.get("type")): dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)}
