"""The transport-free half of kubectl exec: the kubelet's query and the final status."""

from __future__ import annotations

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.kubelet.api.exec.requests import ExecRequest, exit_status, parse_exec_query


def test_query_as_kubectl_sends_it() -> None:
    query = {
        "command": ["sh", "-c", "echo out; exit 3"],
        "stdin": ["true"],
        "stdout": ["true"],
        "stderr": ["true"],
        "tty": ["true"],
    }
    assert parse_exec_query("ns", "pod", "job", query) == ExecRequest(
        namespace="ns",
        pod="pod",
        container="job",
        command=("sh", "-c", "echo out; exit 3"),
        stdin=True,
        stdout=True,
        stderr=True,
        tty=True,
    )


def test_query_flags_as_the_api_server_forwards_them() -> None:
    # What kube-apiserver v1.36.3 sent a kubelet for `kubectl exec -it` (captured: api/exec/spdyframes.py).
    query = {"command": ["sh"], "error": ["1"], "input": ["1"], "output": ["1"], "tty": ["1"]}
    request = parse_exec_query("ns", "p", "c", query)
    assert (request.stdin, request.stdout, request.stderr, request.tty) == (True, True, True, True)
    query = {"command": ["true"], "output": ["1"], "tty": ["0"]}
    request = parse_exec_query("ns", "p", "c", query)
    assert (request.stdin, request.stdout, request.stderr, request.tty) == (False, True, False, False)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"stdout": ["1"]}, "exec needs a command: no 'command' query parameter was given"),
        ({"command": [""], "stdout": ["1"]}, "exec needs a command: no 'command' query parameter was given"),
        ({"command": ["a\x00b"], "stdout": ["1"]}, "exec command words cannot contain NUL bytes"),
        ({"command": ["true"]}, "you must specify at least one of stdin, stdout, stderr"),
    ],
)
def test_bad_queries_are_refused(query: dict[str, list[str]], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_exec_query("ns", "p", "c", query)
    assert caught.value.message == message


def test_success_status() -> None:
    assert exit_status(0) == {"metadata": {}, "status": "Success"}


def test_non_zero_exit_status_carries_the_code_as_client_go_reads_it() -> None:
    assert exit_status(3) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: exit status 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }


def test_a_command_that_never_ended_is_a_failure_with_its_message() -> None:
    assert exit_status(None, "job 12 is PENDING, not running") == {
        "metadata": {},
        "status": "Failure",
        "message": "job 12 is PENDING, not running",
        "reason": "InternalError",
        "code": 500,
    }
