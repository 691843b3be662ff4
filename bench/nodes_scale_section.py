"""docs/performance.md's section of ``kubelet_scale.py``: one kubelet serving many virtual nodes
on the real control plane for a long soak, of one cluster and of 10. bench/run-all runs them as
``kubelet-scale-real`` and ``kubelet-scale-clusters``; the tables come from the script's JSON
(docs/raw/kubelet-scale-real.json, docs/raw/kubelet-scale-clusters.json), never typed.
"""

from __future__ import annotations

from typing import Any

NODES_SCALE = "kubelet-scale-real"
NODES_SCALE_ARGV = ["kubelet_scale.py", "--partitions", "1000", "--minutes", "30", "--pods", "100"]
RSS_GOAL_MB = 400
CLUSTERS_SCALE = "kubelet-scale-clusters"
CLUSTERS_SCALE_ARGV = [
    "kubelet_scale.py", "--clusters", "10", "--partitions", "1000", "--minutes", "30", "--pods", "100"
]  # fmt: skip


def _table(result: dict[str, Any]) -> list[str]:
    plane = result["plane_cpu_s_per_min"]
    rss = f"{result['rss_max_mb']:.0f} / {result['rss_end_mb']:.0f}"
    gaps = " / ".join(
        f"{result[k]:.2f}" for k in ("lease_gap_median_s", "lease_gap_p99_s", "lease_gap_max_s")
    )
    return [
        "| virtual nodes | soak (min) | kubelet RSS max / end (MB, goal <= 400) | Lease gaps read back:"
        " median / p99 / max (s) | gaps > 11 s | gaps > 40 s | node reads not Ready | node status"
        " writes/min | Lease renewals/s | kubelet CPU s/min | kubelet CPU per status tick (ms) |"
        " kube-apiserver / etcd CPU s/min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {result['nodes']} | {result['minutes']:.1f} | {rss} | {gaps}"
        f" | {result['lease_late']} | {result['lease_expired']} | {result['not_ready_reads']}"
        f" | {result['status_writes_per_min']:.0f} | {result['lease_renewals_per_s']:.1f}"
        f" | {result['kubelet_cpu_s_per_min']:.2f} | {result['kubelet_cpu_ms_per_tick']:.0f}"
        f" | {plane['apiserver']:.1f} / {plane['etcd']:.1f} |",
    ]


def _met(result: dict[str, Any]) -> str:
    met = result["rss_max_mb"] <= RSS_GOAL_MB and result["lease_late"] == 0 and result["not_ready_reads"] == 0
    return "met" if met else "not met"


def nodes_scale_section(result: dict[str, Any], clusters: dict[str, Any] | None = None) -> list[str]:
    """The one-cluster run, then the 10-cluster one (``clusters``) when it was run."""
    m = result["machine"]
    writes = result["status_writes"]
    rows = _table(result)
    return [
        f"`bench/kubelet_scale.py --partitions {result['partitions']} --minutes"
        f" {round(result['minutes'])} --pods {result['pods']}`, {m['date']} (load at the start"
        f" {m['load']}; load over the soak: mean {result['load_mean']:.1f}, max {result['load_max']:.1f}):"
        f" slurm-local with {result['partitions']} partitions over its one node"
        " (`WLMVK_SLURM_EXTRA_PARTITIONS`), one red-box, one `wlmvk kubelet` with its default node"
        " timings (Lease renewed every 10 s, lasting 40 s; status heartbeat every 60 s; discovery every"
        " 30 s) on kube-apiserver and etcd (dev/scripts/kube-local), so one virtual node per partition,"
        f" and {result['pods']} held pods (one on each of the first nodes) so the pod status tick"
        f" (every 5 s) has jobs to look at. Every node was Ready {result['registered_s']:.0f} s after"
        " the kubelet started; the soak starts then. The kubelet's resident memory is sampled every"
        f" second ({result['rss_samples']} samples, VmHWM {result['rss_hwm_mb']:.0f} MB); Lease gaps are"
        " the intervals between successive renewTimes of each node's Lease as a watch of"
        " kube-apiserver saw them; every node's Ready condition is read every 10 s; writes and ticks"
        " are the kubelet's own counters (status writes by reason:"
        f" {', '.join(f'{k} {v:.0f}' for k, v in writes.items())}); CPU per status tick is the"
        " kubelet's whole CPU over the soak divided by its pod status ticks. The kubelet's own"
        f" renewal lateness (due time to answer) averaged {result['lateness_mean_s'] * 1000:.0f} ms,"
        f" 99% within {result['lateness_p99_bound_s']} s. Goals (RSS <= {RSS_GOAL_MB} MB, no"
        f" renewal late, no node ever read not Ready): {_met(result)}."
        f" Raw output with every memory sample: `docs/raw/{NODES_SCALE}.txt`.",
        "",
        *rows,
        "",
        *(
            clusters_scale_section(clusters)
            if clusters is not None
            else [
                "Not measured: one kubelet serving several clusters. A `wlmvk kubelet` process serves"
                " the partitions of one cluster (`--cluster-name`, one red-box, and the tenants'"
                " red-boxes of that cluster); 10 clusters of 100 partitions take 10 kubelets, whose"
                " sum this run does not show."
            ]
        ),
    ]


def clusters_scale_section(result: dict[str, Any]) -> list[str]:
    """One kubelet serving several clusters (``--cluster NAME=SOCKET`` each), 1,000 nodes in all."""
    m = result["machine"]
    writes = result["status_writes"]
    return [
        f"`bench/kubelet_scale.py --clusters {result['clusters']} --partitions {result['partitions']}"
        f" --minutes {round(result['minutes'])} --pods {result['pods']}`, {m['date']} (load at the"
        f" start {m['load']}; load over the soak: mean {result['load_mean']:.1f}, max"
        f" {result['load_max']:.1f}): one `wlmvk kubelet` serving {result['clusters']} clusters"
        f" (`--cluster NAME=SOCKET` each), each a red-box of its own in front of the one slurm-local"
        f" with {result['partitions_per_cluster']} partitions (`WLMVK_SLURM_EXTRA_PARTITIONS`), so"
        f" {result['nodes']} virtual nodes in all, with the same node timings and measurements as"
        f" above; the {result['pods']} held pods are spread over the clusters (the first"
        f" {result['pods'] // result['clusters']} nodes of each), and the kubelet's counters, labelled"
        " by cluster, are added up over them. Every node was Ready"
        f" {result['registered_s']:.0f} s after the kubelet started. The kubelet's resident memory is"
        f" sampled every second ({result['rss_samples']} samples, VmHWM {result['rss_hwm_mb']:.0f} MB;"
        " the red-boxes are processes of their own, not counted); status writes by reason:"
        f" {', '.join(f'{k} {v:.0f}' for k, v in writes.items())}; renewal lateness averaged"
        f" {result['lateness_mean_s'] * 1000:.0f} ms, 99% within {result['lateness_p99_bound_s']} s;"
        f" CPU per status tick is the kubelet's whole CPU over its pod status ticks, of all"
        f" {result['clusters']} clusters ({result['status_ticks']:.0f} ticks). Goals (RSS <= {RSS_GOAL_MB}"
        f" MB, no renewal late, no node ever read not Ready): {_met(result)}. Raw output with every"
        f" memory sample: `docs/raw/{CLUSTERS_SCALE}.txt`.",
        "",
        *_table(result),
    ]
