"""``--cluster NAME=SOCKET``: one kubelet serving several clusters, each error naming its flag."""

from __future__ import annotations

import pytest

from wlmvk.kubelet import flags
from wlmvk.kubelet.settings import ClusterSettings


def test_each_cluster_gets_its_settings() -> None:
    parsed = flags.parse(
        ["--cluster", "hpc=/run/hpc.sock", "--cluster", "gpu_2=/run/g=2.sock",
         "--red-box", "hpc:alice=/run/a.sock", "--red-box", "gpu_2:bob=/run/b.sock"]
    )  # fmt: skip
    assert parsed.clusters == (
        ClusterSettings("hpc", "/run/hpc.sock", (("alice", "/run/a.sock"),)),
        ClusterSettings("gpu_2", "/run/g=2.sock", (("bob", "/run/b.sock"),)),
    )
    served = parsed.served()
    assert [(s.cluster_name, s.red_box_socket, s.red_boxes, s.clusters) for s in served] == [
        ("hpc", "/run/hpc.sock", (("alice", "/run/a.sock"),), ()),
        ("gpu_2", "/run/g=2.sock", (("bob", "/run/b.sock"),), ()),
    ]
    # What is not per cluster is the same for each.
    assert {(s.port, s.status_interval, s.kubeconfig) for s in served} == {(10250, 5.0, None)}


def test_one_cluster_is_served_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("NODE_NAME", "HOST_NAME"):
        monkeypatch.delenv(var, raising=False)
    parsed = flags.parse(["--cluster-name", "hpc", "--red-box-socket", "/run/rb.sock", "--red-box", "a=/a"])
    assert parsed.clusters == ()
    assert parsed.served() == (parsed,)
    assert (parsed.cluster_name, parsed.red_box_socket, parsed.red_boxes) == (
        "hpc",
        "/run/rb.sock",
        (("a", "/a"),),
    )
    assert flags.parse(["--red-box-socket", ""]).red_box_socket == ""
    assert flags.parse([]).red_box_socket == "/var/run/syslurm/red-box.sock"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--cluster", "hpc"], "--cluster 'hpc': expected NAME=SOCKET, NAME letters, digits, '-' and '_'"),
        (["--cluster", "hpc="], "--cluster 'hpc=': expected NAME=SOCKET, NAME letters, digits, '-' and '_'"),
        (["--cluster", "=/s"], "--cluster '=/s': expected NAME=SOCKET, NAME letters, digits, '-' and '_'"),
        (
            ["--cluster", "a.b=/s"],
            "--cluster 'a.b=/s': expected NAME=SOCKET, NAME letters, digits, '-' and '_'",
        ),
        (["--cluster", "hpc=/a", "--cluster", "hpc=/b"], "--cluster: cluster hpc is given twice"),
        # The same nodes: slurm-hpc-<partition> lowercased.
        (["--cluster", "hpc=/a", "--cluster", "HPC=/b"], "--cluster: cluster HPC is given twice"),
        (
            ["--cluster", "hpc=/a", "--cluster-name", "hpc"],
            "--cluster and --cluster-name exclude each other: each --cluster NAME=SOCKET names its cluster"
            " and its red-box's socket",
        ),
        (
            ["--red-box-socket", "/a", "--cluster", "hpc=/a"],
            "--cluster and --red-box-socket exclude each other: each --cluster NAME=SOCKET names its cluster"
            " and its red-box's socket",
        ),
        (
            ["--cluster", "hpc=/a", "--cluster", "gpu=/b", "--red-box", "alice=/s"],
            "--red-box 'alice=/s': with --cluster, expected NAME:USER=SOCKET, NAME one of the --cluster"
            " names (hpc, gpu)",
        ),
        (
            ["--cluster", "hpc=/a", "--red-box", "other:alice=/s"],
            "--red-box 'other:alice=/s': with --cluster, expected NAME:USER=SOCKET, NAME one of the"
            " --cluster names (hpc)",
        ),
        (
            ["--cluster", "hpc=/a", "--red-box", "hpc:root=/s"],
            "--red-box 'root=/s': expected USER=SOCKET, USER a Slurm user other than root",
        ),
        (
            ["--cluster", "hpc=/a", "--red-box", "hpc:a=/s", "--red-box", "hpc:a=/t"],
            "--red-box: user a is given twice",
        ),
    ],
)
def test_cluster_flags_refused(argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        flags.parse(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"wlmvk kubelet: error: {error}"


def test_the_same_tenant_user_may_have_a_red_box_on_each_cluster() -> None:
    parsed = flags.parse(
        ["--cluster", "a=/a", "--cluster", "b=/b", "--red-box", "a:u=/ua", "--red-box", "b:u=/ub"]
    )
    assert [c.red_boxes for c in parsed.clusters] == [(("u", "/ua"),), (("u", "/ub"),)]
