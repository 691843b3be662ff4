"""docs/performance.md's section of ``kubelet_scale.py``: one kubelet serving many virtual nodes
on the real control plane for a long soak. bench/run-all runs it as ``kubelet-scale-real``; the
table comes from the script's JSON (docs/raw/kubelet-scale-real.json), never typed.
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


def nodes_scale_section(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    plane = result["plane_cpu_s_per_min"]
    rss = f"{result['rss_max_mb']:.0f} / {result['rss_end_mb']:.0f}"
    gaps = " / ".join(
        f"{result[k]:.2f}" for k in ("lease_gap_median_s", "lease_gap_p99_s", "lease_gap_max_s")
    )
    writes = result["status_writes"]
    rows = [
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
    met = result["rss_max_mb"] <= RSS_GOAL_MB and result["lease_late"] == 0 and result["not_ready_reads"] == 0
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
        f" renewal late, no node ever read not Ready): {'met' if met else 'not met'}."
        f" Raw output with every memory sample: `docs/raw/{NODES_SCALE}.txt`.",
        "",
        *rows,
        "",
        "Not measured: one kubelet serving several clusters. A `wlmvk kubelet` process serves the"
        " partitions of one cluster (`--cluster-name`, one red-box, and the tenants' red-boxes of that"
        " cluster); 10 clusters of 100 partitions take 10 kubelets, whose sum this run does not show.",
    ]
