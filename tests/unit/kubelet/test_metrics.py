from __future__ import annotations

from wlmvk.kubelet.metrics import Counter, Histogram, KubeletMetrics


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
