from __future__ import annotations

import pytest

from tests.unit.kubelet.podbodies import pod
from wlmvk.core import names
from wlmvk.kubelet import flags
from wlmvk.kubelet.node import addresses
from wlmvk.kubelet.pods.records import job_id_of, slim


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("NODE_NAME", "HOST_NAME", "NODE_IP"):
        monkeypatch.delenv(var, raising=False)
    parsed = flags.parse([])
    assert parsed.red_box_socket == "/var/run/syslurm/red-box.sock"
    assert parsed.node_ip == addresses.default_node_ip()  # test_node_addresses: which one
    assert (parsed.listen_host, parsed.port) == ("0.0.0.0", 10250)
    # Metrics apart, on loopback, and not on 10255, the real kubelet's legacy read-only port.
    assert (parsed.metrics_host, parsed.metrics_port) == ("127.0.0.1", 10262)
    assert (parsed.anonymous_auth, parsed.authentication_token_webhook) == (False, True)
    assert parsed.authorization_mode == "Webhook"
    assert (parsed.status_interval, parsed.discovery_interval) == (5.0, 30.0)
    assert (parsed.lease_duration, parsed.lease_renew_interval, parsed.node_status_interval) == (
        40,
        10.0,
        60.0,
    )
    assert parsed.max_pods == 1000
    assert parsed.cluster_name  # the host name
    assert parsed.agent_host == ""
    assert parsed.websockets_to_kubelet is True
    assert flags.parse(["--no-websockets-to-kubelet"]).websockets_to_kubelet is False


def test_the_daemonset_environment_names_the_agent_host_and_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "worker-7")
    monkeypatch.setenv("NODE_IP", "10.0.0.7")
    parsed = flags.parse([])
    assert (parsed.agent_host, parsed.cluster_name, parsed.node_ip) == ("worker-7", "worker-7", "10.0.0.7")
    explicit = flags.parse(["--cluster-name", "hpc", "--agent-host", "login", "--node-ip", "10.0.0.9"])
    assert (explicit.agent_host, explicit.cluster_name, explicit.node_ip) == ("login", "hpc", "10.0.0.9")


def test_flags() -> None:
    parsed = flags.parse(
        ["--status-interval", "1", "--discovery-interval", "2", "--max-pods", "50", "--client-ca", "/ca.pem",
         "--tls-cert", "/c.pem", "--tls-key", "/k.pem", "--jobs-root", "/jobs", "--submissions", "4"]
    )  # fmt: skip
    assert (parsed.status_interval, parsed.discovery_interval, parsed.max_pods) == (1.0, 2.0, 50)
    assert (parsed.client_ca, parsed.tls_cert, parsed.tls_key) == ("/ca.pem", "/c.pem", "/k.pem")
    assert (parsed.jobs_root, parsed.submissions) == ("/jobs", 4)


def test_a_sites_gpu_names() -> None:
    parsed = flags.parse(["--gpu-name", "nvidia.com/a100=a100", "--gpu-name", " example.com/h100 = h100 "])
    assert parsed.gpu_names == (("nvidia.com/a100", "a100"), ("example.com/h100", "h100"))
    assert flags.parse([]).gpu_names == ()


@pytest.mark.parametrize("bad", ["a100", "nvidia.com/a100=", "a100=a100", "nvidia.com/a100=gpu:a100"])
def test_a_gpu_name_that_is_not_resource_equals_type_is_refused(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        flags.parse(["--gpu-name", bad])
    assert exited.value.code == 2
    assert f"--gpu-name wants RESOURCE=TYPE (nvidia.com/a100=a100), not {bad!r}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, ("--nv",)), ("--rocm", ("--rocm",)), ("--nv --nvccli", ("--nv", "--nvccli")), ("", ())],
)
def test_a_sites_sif_gpu_flags(given: str | None, expected: tuple[str, ...]) -> None:
    argv = [] if given is None else [f"--sif-gpu-flags={given}"]  # its value starts with --
    assert flags.parse(argv).sif_gpu_flags == expected


def test_a_sif_gpu_flag_that_is_not_an_option_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        flags.parse(["--sif-gpu-flags=--nv ;reboot"])
    assert exited.value.code == 2
    assert "--sif-gpu-flags: SIF runtime GPU flag ';reboot': expected an option" in capsys.readouterr().err


def test_the_any_gpu_resource_cannot_name_a_type(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        flags.parse(["--gpu-name", "nvidia.com/gpu=a100"])
    assert (
        "--gpu-name: nvidia.com/gpu asks for any GPU; name a resource of one type" in capsys.readouterr().err
    )


def test_red_box_per_tenant_user() -> None:
    parsed = flags.parse(["--red-box", "alice=/run/a.sock", "--red-box=bob=/run/b=c.sock"])
    assert parsed.red_boxes == (("alice", "/run/a.sock"), ("bob", "/run/b=c.sock"))
    assert flags.parse([]).red_boxes == ()


@pytest.mark.parametrize("argv", [["--red-box", "alice"], ["--red-box", "root=/s"], ["--red-box", "=/s"],
                                  ["--red-box", "a=/s", "--red-box", "a=/t"]])  # fmt: skip
def test_red_box_flags_that_name_no_user_socket_pair_are_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        flags.parse(argv)
    assert "--red-box" in capsys.readouterr().err


def test_job_id_annotation() -> None:
    assert job_id_of(pod()) is None
    assert job_id_of(pod(metadata={"annotations": {names.ANNOTATION_JOB_ID: "42"}})) == 42
    assert job_id_of(pod(metadata={"annotations": {names.ANNOTATION_JOB_ID: "x"}})) is None


def test_slim_keeps_what_the_kubelet_needs() -> None:
    body = pod(metadata={"managedFields": [{"manager": "kubectl"}], "annotations": {"a": "b"}})
    body["status"] = {"phase": "Running", "conditions": [{"type": "Ready"}], "containerStatuses": [{}]}
    kept = slim(body)
    assert "managedFields" not in kept["metadata"]
    assert kept["metadata"]["annotations"] == {"a": "b"}
    assert kept["spec"] == body["spec"]
    assert kept["status"] == {"phase": "Running"}
    assert slim(pod())["status"] == {"phase": "Pending"}
