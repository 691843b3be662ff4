"""What the kubelet API asks of the pods, answered from the pod controller's records.

As virtual-kubelet's HTTP layer takes handler functions that a provider
implements (``GetContainerLogs``, ``RunInContainer``, ``GetStatsSummary``), the
API here (``api.server``) takes plain functions and knows no controller. This
module implements them over the ``PodController`` and the Backend: a
container's logs, the pod an exec runs in, the pods ``/pods`` lists, the
running pods the stats sample, and the nodes a request is authorized on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from wlmvk.core.backend import Backend
from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.core.jobs import JobStatus
from wlmvk.kubelet.api.auth import rules
from wlmvk.kubelet.api.exec import executing
from wlmvk.kubelet.api.logs import LogOptions, LogSource, stream_logs
from wlmvk.kubelet.api.stats.summary import PodJob
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.pods import environment
from wlmvk.kubelet.pods.controller import PodController
from wlmvk.kubelet.pods.tenants import TenantRoutes

_RUNNING = (JobStatus.RUNNING, JobStatus.COMPLETING)
_NOT_STARTED = (JobStatus.PENDING, JobStatus.CONFIGURING, JobStatus.REQUEUED)


class PodHandlers:
    """The API's handlers over one kubelet's pods."""

    def __init__(
        self,
        *,
        pods: PodController,
        backend: Backend,
        directory: NodeDirectory,
        host_ip: str,
        tenants: TenantRoutes | None = None,
    ) -> None:
        self._pods = pods
        self._backend = backend
        self._tenants = tenants
        """Which red-box holds a pod's job (a tenant user's: its logs, execs and usage are there)."""
        self._directory = directory
        self._host_ip = host_ip

    def serves(self, namespace: str, pod: str) -> bool:
        """Whether the pod is on one of these nodes (a kubelet serving several clusters asks)."""
        return self._pods.record(namespace, pod) is not None

    def listed(self) -> list[dict[str, Any]]:
        """The pods ``/pods`` lists."""
        return self._pods.pods()

    async def logs(
        self, namespace: str, pod: str, container: str, options: LogOptions
    ) -> AsyncIterator[bytes]:
        """The log stream of one pod's container (errors raised before streaming)."""
        record = self._pods.record(namespace, pod)
        if record is None:
            raise NotFound(f'pod "{pod}" not found on this kubelet')
        facts = record.facts(self._host_ip)
        if container and container != facts.container:
            raise NotFound(f'container "{container}" is not valid for pod "{pod}"')
        waiting = f'container "{facts.container}" in pod "{pod}" is waiting to start'
        if record.job_id is None:
            raise InvalidInput(f"{waiting}: the Slurm job is not submitted yet")
        backend = self._tenants.backend_of(record) if self._tenants is not None else self._backend
        state = record.state
        if state is None or not state.std_out:
            state = (await backend.states([record.job_id])).get(record.job_id)
        if state is None or not state.std_out:
            raise InvalidInput(f"{waiting}: Slurm job {record.job_id} has no output file yet")
        if state.status in _NOT_STARTED:
            raise InvalidInput(
                f"{waiting}: Slurm job {record.job_id} is {state.status.value} ({state.reason})"
            )
        source = LogSource(path=state.std_out, started=state.start_time, wait_ended=record.ended.wait)
        return stream_logs(backend, source, options)

    def exec_target(self, namespace: str, pod: str) -> executing.Target | None:
        """The job an exec into the pod runs in, and the container's env and directory."""
        record = self._pods.record(namespace, pod)
        if record is None:
            return None
        context = environment.exec_context(record.pod)
        return executing.Target(
            container=record.facts(self._host_ip).container,
            job_id=record.job_id,
            state=record.state,
            env=context.env,
            working_dir=context.working_dir,
            backend=self._tenants.backend_of(record) if self._tenants is not None else None,
        )

    def running(self) -> list[PodJob]:
        """The pods whose job Slurm last reported running: what the stats sample."""
        running: list[PodJob] = []
        for record in self._pods.records():
            if record.job_id is None or record.state is None:
                continue
            if record.state.status not in _RUNNING:
                continue
            running.append(
                PodJob(
                    namespace=record.namespace,
                    name=record.name,
                    uid=record.uid,
                    node=record.node,
                    container=record.facts(self._host_ip).container,
                    job_id=record.job_id,
                    started=record.state.start_time,
                    holder=self._tenants.holder_of(record) if self._tenants is not None else "",
                )
            )
        return running

    def nodes_for(self, path: str) -> list[str]:
        """The nodes a request is authorized on: its pod's or node's, else all served ("" before any)."""
        node = rules.node_of(path)
        if node:
            return [node]
        pod = rules.pod_of(path)
        record = self._pods.record(*pod) if pod else None
        if record is not None and record.node:
            return [record.node]
        return sorted(self._directory.owned) or [""]
