from __future__ import annotations

from wlmvk.kubelet.metrics import Counter, Histogram, KubeletMetrics, render_clusters


def test_exposition_format() -> None:
    counter = Counter("c_total", "help text")
    counter.inc(method='a"b')
    counter.inc(2, method='a"b')
    assert counter.render() == [
        "# HELP c_total help text",
        "# TYPE c_total counter",
        'c_total{method="a\\"b"} 3',
    ]
    histogram = Histogram("h_seconds", "latency", buckets=(0.1, 1.0))
    histogram.observe(0.05, m="x")
    histogram.observe(0.5, m="x")
    lines = histogram.render()
    assert 'h_seconds_bucket{m="x",le="0.1"} 1' in lines
    assert 'h_seconds_bucket{m="x",le="1"} 2' in lines
    assert 'h_seconds_bucket{m="x",le="+Inf"} 2' in lines
    assert 'h_seconds_count{m="x"} 2' in lines


def test_kubelet_metrics_render_pods_by_phase() -> None:
    metrics = KubeletMetrics(lambda: {"Running": 2, "Pending": 1})
    text = metrics.render()
    assert 'wlmvk_kubelet_pods{phase="Running"} 2' in text
    assert text.endswith("\n")


def test_several_clusters_metrics_are_labelled_by_cluster_each_family_once() -> None:
    east = KubeletMetrics(lambda: {"Running": 2})
    west = KubeletMetrics(lambda: {})
    east.lease_renewals.inc()
    west.lease_renewals.inc(3)
    west.wlm_calls.observe(0.2, method="cancel")
    lines = render_clusters([("east", east), ("west", west)]).splitlines()
    assert lines.count("# TYPE wlmvk_kubelet_node_lease_renewals_total counter") == 1
    start = lines.index("# TYPE wlmvk_kubelet_node_lease_renewals_total counter")
    assert lines[start + 1 : start + 3] == [
        'wlmvk_kubelet_node_lease_renewals_total{cluster="east"} 1',
        'wlmvk_kubelet_node_lease_renewals_total{cluster="west"} 3',
    ]
    assert 'wlmvk_kubelet_pods{cluster="east",phase="Running"} 2' in lines
    assert 'wlmvk_kubelet_wlm_call_seconds_bucket{cluster="west",method="cancel",le="0.25"} 1' in lines
    assert 'wlmvk_kubelet_wlm_call_seconds_count{cluster="west",method="cancel"} 1' in lines
    # One cluster: the text as it always was, no cluster label.
    assert "cluster=" not in east.render()
