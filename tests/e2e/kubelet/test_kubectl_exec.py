"""``kubectl exec`` into a running Slurm job, end to end (issue 16.2), on both control planes.

The real kubectl, an API server, the kubelet's exec API, red-box as the job
owner (uid 1000) running ``srun --overlap`` in the pod's job on real Slurm.
kubectl v1.36 speaks WebSocket v5 by default and SPDY/3.1 with
``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`` (``CLIENTS``). The in-memory API
server passes either through to the kubelet, as kube-apiserver v1.36 does for
our Nodes, which declare ``ExtendWebSocketsToKubelet`` as a real kubelet's do
(before v1.36, or with ``--no-websockets-to-kubelet``, kube-apiserver translates the
WebSocket into SPDY/3.1 for the kubelet: test_exec_apiserver_routes.py; the evidence is
in ``kubelet/api/exec/spdyframes.py``). So the kubelet's WebSocket and SPDY transports are
both driven.
A command's stdout, stderr and exit code come back, run with the container's
env and workingDir; an interactive shell is
driven through a pseudo-terminal; a job that is not running, a finished pod,
a pod that is not there, and a caller without rights are refused with a
clear error.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from tests.e2e.kubelet.test_api_access import client_context
from tests.e2e.kubelet.test_kubelet import wait_phase
from tests.fixtures.apiserver import KUBECTL, RealApiServer, failure_status, upgrade_refused_line
from tests.fixtures.shared_dirs import SharedDir
from wlmvk.core import names
from wlmvk.kube.bodies import PODS

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.kubectl,
    pytest.mark.kube_any(subject="pods/exec: the API server's upgrade and proxy to the kubelet"),
]

SLEEP = "sleep 600"

CLIENTS = {"websocket": {}, "spdy": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}}
"""kubectl's two remote command clients and the environment that picks each."""


async def job_state(stack: Stack, name: str, reason: str) -> str | None:
    """The pod's job id once its container waits for ``reason``."""
    pod = await stack.kube.get(PODS, name, namespace="default")
    annotations = pod["metadata"].get("annotations") or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    waiting = (statuses[0].get("state") or {}).get("waiting") or {}
    job_id = annotations.get(names.ANNOTATION_JOB_ID)
    return job_id if job_id and waiting.get("reason") == reason else None


async def running_pod(stack: Stack, script: str = SLEEP) -> str:
    name = unique("exec")
    await stack.kube.create(PODS, job_pod(name, script), namespace="default")
    await wait_phase(stack, name, "Running")
    return name


async def kubectl_with(
    stack: Stack, client: str, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run kubectl with the remote command client ``client`` (one of ``CLIENTS``)."""
    argv, env = kubectl_command(stack)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        *args,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env, **CLIENTS[client]},
    )
    out, err = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None), 120)
    assert proc.returncode is not None
    return subprocess.CompletedProcess([*argv, *args], proc.returncode, out.decode(), err.decode())


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_a_command_returns_its_output_and_exit_code(stack: Stack, client: str) -> None:
    name = await running_pod(stack)
    done = await kubectl_with(stack, client, "exec", name, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (done.returncode, done.stdout, done.stderr) == (
        3,
        "out\n",
        "err\ncommand terminated with exit code 3\n",
    )
    ok = await kubectl_with(stack, client, "exec", name, "-c", "main", "--", "id", "-u")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "1000\n", "")


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_stdin_reaches_the_command(stack: Stack, client: str) -> None:
    name = await running_pod(stack)
    done = await kubectl_with(
        stack, client, "exec", "-i", name, "--", "sh", "-c", "tr a-z A-Z", input="hello\nslurm\n"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "HELLO\nSLURM\n", "")


async def test_the_command_gets_the_containers_env_and_working_dir(
    stack: Stack, shared_dir: SharedDir
) -> None:
    """As kubectl exec into a container: its env (fieldRefs resolved) and workingDir, not red-box's."""
    workdir = shared_dir("exec-workdir-")
    name = unique("exec")
    body = job_pod(name, SLEEP)
    body["spec"]["containers"][0].update(
        env=[
            {"name": "GREETING", "value": "it's a, b=c"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        workingDir=str(workdir),
    )
    await stack.kube.create(PODS, body, namespace="default")
    await wait_phase(stack, name, "Running")
    done = await kubectl_with(
        stack,
        "websocket",
        "exec",
        name,
        "--",
        "sh",
        "-c",
        'printf "%s|%s|%s\\n" "$GREETING" "$POD_NAME" "$(pwd -P)"',
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"it's a, b=c|{name}|{workdir}\n", "")


def kubectl_command(stack: Stack) -> tuple[list[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    api = stack.apiserver
    if isinstance(api, RealApiServer):
        env.update(KUBECONFIG=str(api.real.admin), HOME=str(api.home))
        return [str(api.real.kubectl)], env
    env.update(KUBECONFIG=str(api.kubeconfig), HOME=str(api.home))
    return [KUBECTL], env


class Terminal:
    """A process on a pseudo-terminal that the test types into and reads from."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int, cols: int) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.execvpe(argv[0], argv, env)
        self.resize(rows, cols)
        self.seen = b""

    def resize(self, rows: int, cols: int) -> None:
        """As a terminal window resized: kubectl hears SIGWINCH."""
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def expect(self, pattern: str, timeout: float = 60) -> re.Match[bytes]:
        deadline = time.monotonic() + timeout
        while not (found := re.search(pattern.encode(), self.seen)):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} not seen within {timeout} s: {self.seen!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{pattern!r} not seen before the end: {self.seen!r}")
                self.seen += chunk
        return found

    def wait(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                while select.select([self.fd], [], [], 0)[0] and (chunk := os.read(self.fd, 65536)):
                    self.seen += chunk
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.1)
        raise AssertionError(f"kubectl still running after {timeout} s: {self.seen!r}")

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


@contextlib.contextmanager
def terminal(argv: list[str], env: dict[str, str], rows: int = 30, cols: int = 100) -> Iterator[Terminal]:
    term = Terminal(argv, env, rows, cols)
    try:
        yield term
    finally:
        term.close()


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_an_interactive_shell_on_a_terminal(stack: Stack, client: str) -> None:
    name = await running_pod(stack)
    argv, env = kubectl_command(stack)
    env.update(CLIENTS[client])

    def session() -> tuple[int, bytes]:
        command = [*argv, "exec", "-it", name, "--", "env", "PS1=job$ ", "sh"]
        with terminal(command, env, rows=30, cols=100) as term:
            term.expect(r"job\$ $")
            term.type("echo $((6 * 7)); stty size; tty\n")
            found = term.expect(r"42\r\n(\d+ \d+)\r\n/dev/pts/\d+\r\n")
            assert found.group(1) == b"30 100", "the terminal has kubectl's size"
            term.resize(40, 120)
            time.sleep(1)  # kubectl passes the new size on when SIGWINCH reaches it
            term.type("stty size\n")
            term.expect(r"\r\n40 120\r\n")
            term.type("exit 5\n")
            return term.wait(), term.seen

    code, seen = await asyncio.to_thread(session)
    assert code == 5, seen


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_a_job_that_is_not_running_is_refused_clearly(stack: Stack, client: str) -> None:
    name = unique("held")
    held = job_pod(name, SLEEP)
    held["metadata"]["annotations"] = {names.ANNOTATION_BATCH: f"#!/bin/sh\n#SBATCH --hold\n{SLEEP}\n"}
    await stack.kube.create(PODS, held, namespace="default")
    job_id = await eventually(lambda: job_state(stack, name, "JobHeldUser"))
    done = await kubectl_with(stack, client, "exec", name, "--", "true")
    refusal = f'container "main" in pod "{name}" is not running: Slurm job {job_id} is PENDING (JobHeldUser)'
    if (
        isinstance(stack.apiserver, RealApiServer)
        and client == "websocket"
        and stack.apiserver.real.server_minor() < 36
    ):
        # Before v1.36 the Node declares nothing: kube-apiserver's StreamTranslator dials the
        # kubelet with SPDY itself and reports the refusal it reads as is.
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {refusal}\n")
    else:
        # Passed through (SPDY; a WebSocket to a v1.36 Node declaring ExtendWebSocketsToKubelet;
        # the in-memory plane), the kubelet's refusal, a Status, is read by kubectl itself.
        assert (done.returncode, done.stdout, done.stderr) == (
            1,
            "",
            upgrade_refused_line(refusal, "BadRequest"),
        )


async def test_a_finished_pod_is_refused_by_kubectl(stack: Stack) -> None:
    name = unique("done")
    await stack.kube.create(PODS, job_pod(name, "true"), namespace="default")
    await wait_phase(stack, name, "Succeeded")
    done = await stack.kubectl("exec", name, "--", "true")
    assert (done.returncode, done.stderr) == (
        1,
        "error: cannot exec into a container in a completed pod; current phase is Succeeded\n",
    )


async def test_the_kubelet_refuses_what_it_does_not_run(stack: Stack, tmp_path: Path) -> None:
    url = f"https://127.0.0.1:{stack.kubelet.port}/exec/default/no-such-pod/main?command=true&output=1"
    cert = stack.apiserver.kubelet_client  # what the API server presents to kubelets
    async with aiohttp.ClientSession() as session:
        async with session.get(url, ssl=client_context(*cert), headers={"Connection": "Upgrade"}) as reply:
            assert (reply.status, await reply.json()) == (
                404,
                failure_status(404, "NotFound", 'pod "no-such-pod" not found on this kubelet'),
            )
        async with session.get(url.replace("command=true&", ""), ssl=client_context(*cert)) as reply:
            assert (reply.status, await reply.json()) == (
                400,
                failure_status(
                    400, "BadRequest", "exec needs a command: no 'command' query parameter was given"
                ),
            )
