"""``/metrics/resource`` text from usage samples (pure), read back with Prometheus' own text parser
(prometheus_client) and with metrics-server v0.8.0's rules (pkg/scraper/client/resource/decode.go)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.kubelet.api.stats import resource_metrics
from wlmvk.kubelet.api.stats.ledger import CpuLedger
from wlmvk.kubelet.api.stats.summary import PodJob

T0 = datetime(2026, 12, 3, 15, 0, tzinfo=UTC)
T0_MS = 1_796_310_000_000
SAMPLED = T0 + timedelta(seconds=40)
DEBUG, CPU = "slurm-c-debug", "slurm-c-cpu"


def pod(name: str, job: int, node: str = DEBUG, started: datetime | None = T0) -> PodJob:
    return PodJob("default", name, f"uid-{name}", node, "job", JobId(job), started)


def usage(job: int, cpu: float, memory: int, at: datetime = SAMPLED) -> JobUsage:
    return JobUsage(JobId(job), timedelta(seconds=cpu), memory, at)


PODS = [pod("a", 1), pod("b", 2, CPU), pod("pending", 3)]
USAGE = {JobId(1): usage(1, 30, 2048), JobId(2): usage(2, 5.5, 1024, SAMPLED - timedelta(seconds=1))}
LEDGER = CpuLedger().advance(PODS, USAGE)


def render(nodes: list[str], **overrides: object) -> str:
    args: dict[str, object] = dict(nodes=nodes, pods=PODS, usage=USAGE, ledger=LEDGER, sampled=SAMPLED)
    args.update(overrides)
    return resource_metrics.render(**args)  # type: ignore[arg-type]


def test_the_text_of_one_node_as_the_kubelet_writes_it() -> None:
    assert int(T0.timestamp() * 1000) == T0_MS
    at = T0_MS + 40_000
    assert render([DEBUG]) == "\n".join(
        [
            "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container"
            " in core-seconds",
            "# TYPE container_cpu_usage_seconds_total counter",
            f'container_cpu_usage_seconds_total{{container="job",namespace="default",pod="a"}} 30.0 {at}',
            "# HELP container_memory_working_set_bytes [STABLE] Current working set of the container"
            " in bytes",
            "# TYPE container_memory_working_set_bytes gauge",
            f'container_memory_working_set_bytes{{container="job",namespace="default",pod="a"}} 2048 {at}',
            "# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch"
            " in seconds",
            "# TYPE container_start_time_seconds gauge",
            f'container_start_time_seconds{{container="job",namespace="default",pod="a"}} {T0_MS / 1000!r}',
            "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node"
            " in core-seconds",
            "# TYPE node_cpu_usage_seconds_total counter",
            f"node_cpu_usage_seconds_total 30.0 {at}",
            "# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes",
            "# TYPE node_memory_working_set_bytes gauge",
            f"node_memory_working_set_bytes 2048 {at}",
            "# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod"
            " in core-seconds",
            "# TYPE pod_cpu_usage_seconds_total counter",
            f'pod_cpu_usage_seconds_total{{namespace="default",pod="a"}} 30.0 {at}',
            "# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes",
            "# TYPE pod_memory_working_set_bytes gauge",
            f'pod_memory_working_set_bytes{{namespace="default",pod="a"}} 2048 {at}',
            "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics,"
            " 0 otherwise",
            "# TYPE resource_scrape_error gauge",
            "resource_scrape_error 0",
            "",
        ]
    )


def parsed(text: str) -> dict[str, tuple[str, dict[tuple[tuple[str, str], ...], tuple[float, float | None]]]]:
    """family -> (type, {sorted labels: (value, timestamp in s)}), by prometheus_client's parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        samples = {}
        for sample in family.samples:
            stamp = float(sample.timestamp) if sample.timestamp is not None else None
            samples[tuple(sorted(sample.labels.items()))] = (sample.value, stamp)
        out[family.name] = (family.type, samples)
    return out


def test_every_node_together_parsed_by_prometheus() -> None:
    families = parsed(render([DEBUG, CPU]))
    a = (("container", "job"), ("namespace", "default"), ("pod", "a"))
    b = (("container", "job"), ("namespace", "default"), ("pod", "b"))
    at, b_at = SAMPLED.timestamp(), (SAMPLED - timedelta(seconds=1)).timestamp()
    # prometheus_client names a counter's family without its _total suffix.
    assert families["container_cpu_usage_seconds"] == ("counter", {a: (30.0, at), b: (5.5, b_at)})
    assert families["container_memory_working_set_bytes"] == ("gauge", {a: (2048, at), b: (1024, b_at)})
    start = T0.timestamp()
    assert families["container_start_time_seconds"] == ("gauge", {a: (start, None), b: (start, None)})
    assert families["pod_cpu_usage_seconds"][1][(("namespace", "default"), ("pod", "b"))] == (5.5, b_at)
    assert families["node_cpu_usage_seconds"] == ("counter", {(): (35.5, at)})
    assert families["node_memory_working_set_bytes"] == ("gauge", {(): (3072, at)})
    assert families["resource_scrape_error"] == ("gauge", {(): (0, None)})


def test_a_node_with_no_running_job_reports_zero_and_its_retired_cpu() -> None:
    ledger = LEDGER.advance([pod("b", 2, CPU)], {JobId(2): usage(2, 6, 1024)})  # a's job ended
    families = parsed(render([DEBUG], pods=[pod("b", 2, CPU)], ledger=ledger))
    assert "container_cpu_usage_seconds" not in families
    assert families["node_cpu_usage_seconds"][1] == {(): (30.0, SAMPLED.timestamp())}
    assert families["node_memory_working_set_bytes"][1] == {(): (0, SAMPLED.timestamp())}


def test_an_error_says_so_and_nothing_else() -> None:
    text = render([DEBUG], error=True)
    assert text == (
        "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics,"
        " 0 otherwise\n# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n"
    )


def test_no_start_time_when_the_job_has_none_and_labels_escaped() -> None:
    odd = PodJob('we"ird\\ns', "p\nq", "u", DEBUG, "job", JobId(9), None)
    ledger = CpuLedger().advance([odd], {JobId(9): usage(9, 1, 10)})
    text = render([DEBUG], pods=[odd], usage={JobId(9): usage(9, 1, 10)}, ledger=ledger)
    assert "container_start_time_seconds" not in text
    assert 'pod_cpu_usage_seconds_total{namespace="we\\"ird\\\\ns",pod="p\\nq"} 1.0' in text
    labels = next(iter(parsed(text)["pod_cpu_usage_seconds"][1]))
    assert dict(labels) == {"namespace": 'we"ird\\ns', "pod": "p\nq"}


# metrics-server v0.8.0's decodeBatch, restated: which lines it reads and how it splits labels.
def metrics_server_decode(
    text: str,
) -> tuple[dict[str, float] | None, dict[tuple[str, str, str], dict[str, float]]]:
    node: dict[str, float] = {}
    containers: dict[tuple[str, str, str], dict[str, float]] = {}

    def label(labels: str, key: str) -> str:  # bytes.Index(labels, `key="`) up to the next quote
        start = labels.index(f'{key}="') + len(key) + 2
        return labels[start : labels.index('"', start)]

    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.fullmatch(r"([a-z_]+)(\{.*\})? (\S+)(?: (\d+))?", line)
        assert match, line
        name, labels, value = match.group(1), match.group(2) or "", float(match.group(3))
        stamp = float(match.group(4)) if match.group(4) else None
        if name in ("node_cpu_usage_seconds_total", "node_memory_working_set_bytes"):
            node[name] = value
            node["timestamp"] = stamp or 0
        elif name.startswith("container_"):
            key = (label(labels, "namespace"), label(labels, "pod"), label(labels, "container"))
            containers.setdefault(key, {})[name] = value
    complete = (
        node.get("timestamp")
        and node.get("node_cpu_usage_seconds_total")
        and node.get("node_memory_working_set_bytes")
    )
    return (node if complete else None), containers


def test_metrics_server_reads_the_node_and_each_container() -> None:
    node, containers = metrics_server_decode(render([DEBUG, CPU]))
    assert node == {
        "node_cpu_usage_seconds_total": 35.5,
        "node_memory_working_set_bytes": 3072,
        "timestamp": SAMPLED.timestamp() * 1000,
    }
    assert containers[("default", "b", "job")] == {
        "container_cpu_usage_seconds_total": 5.5,
        "container_memory_working_set_bytes": 1024,
        "container_start_time_seconds": T0.timestamp(),
    }


def test_metrics_server_drops_an_idle_node() -> None:
    """A node with no running job has no working set: metrics-server keeps no point for it."""
    node, containers = metrics_server_decode(render([DEBUG], pods=[], ledger=CpuLedger()))
    assert (node, containers) == (None, {})


@pytest.mark.parametrize("node", ["slurm-c-debug", "a.b"])
def test_each_node_has_its_own_path(node: str) -> None:
    assert resource_metrics.node_path(node) == f"/metrics/resource/{node}"
