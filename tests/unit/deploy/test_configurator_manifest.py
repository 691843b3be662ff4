"""The configurator DaemonSet can share a node with a real kubelet (issue 14.3).

Its arguments are parsed by the kubelet's own command line, as the container
would run them: on the pod's own network (no hostNetwork, so 10250 is the
pod's, not the host kubelet's), advertising the pod's IP, metrics apart and
not on 10255 (the real kubelet's read-only port), callers authenticated
against the cluster CA.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from wlmvk.kubelet import flags

ROOT = Path(__file__).resolve().parents[3]
REAL_KUBELET_PORTS = {10250, 10255}


def daemonset() -> dict[str, Any]:
    docs = yaml.safe_load_all((ROOT / "manifests" / "configurator.yaml").read_text())
    return next(d for d in docs if d and d["kind"] == "DaemonSet")


def test_configurator_runs_on_the_pods_network_with_its_own_ports() -> None:
    spec = daemonset()["spec"]["template"]["spec"]
    assert not spec.get("hostNetwork", False)
    (container,) = spec["containers"]
    env = {
        e["name"]: "{" + e["valueFrom"]["fieldRef"]["fieldPath"] + "}"
        if "valueFrom" in e
        else e.get("value", "")
        for e in container["env"]
    }
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["args"]]
    assert args[0] == "kubelet"
    parsed = flags.parse(args[1:])
    assert parsed.node_ip == "{status.podIP}", "the nodes advertise the pod's own address"
    assert parsed.metrics_port not in REAL_KUBELET_PORTS
    assert parsed.metrics_port != parsed.port
    assert parsed.client_ca == "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    assert (parsed.anonymous_auth, parsed.authorization_mode) == (False, "Webhook")
    assert parsed.leader_elect, "a second labelled agent host of the cluster stands by"
    declared = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert declared == {"kubelet": parsed.port, "metrics": parsed.metrics_port}


def test_the_cluster_is_the_agent_host_unless_wlmvk_cluster_names_one(monkeypatch: Any) -> None:
    """Left empty (as shipped), each agent host serves a cluster named after itself; set, the
    labelled hosts of that cluster share its nodes, one serving and the others standing by."""
    (container,) = daemonset()["spec"]["template"]["spec"]["containers"]
    (shipped,) = [e.get("value", "") for e in container["env"] if e["name"] == "WLMVK_CLUSTER"]
    assert shipped == ""
    monkeypatch.setenv("NODE_NAME", "agent-1")
    for value, cluster in (("", "agent-1"), ("hpc", "hpc")):
        args = [
            a.replace("$(WLMVK_CLUSTER)", value) for a in container["args"] if "$(" not in a or "WLMVK" in a
        ]
        assert flags.parse(args[1:]).cluster_name == cluster
