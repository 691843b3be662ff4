"""``kubelet.routing``'s merges of several clusters' answers (/metrics/resource, /stats/summary)."""

from __future__ import annotations

from wlmvk.kubelet import routing


def test_resource_metrics_of_several_clusters_are_one_text_each_family_once() -> None:
    east = (
        "# HELP resource_scrape_error [STABLE] 1 if there was an error\n"
        "# TYPE resource_scrape_error gauge\n"
        "resource_scrape_error 0\n"
        "# HELP pod_memory_working_set_bytes [STABLE] memory\n"
        "# TYPE pod_memory_working_set_bytes gauge\n"
        'pod_memory_working_set_bytes{namespace="a",pod="p"} 100 1000\n'
        "# HELP node_memory_working_set_bytes [STABLE] memory\n"
        "# TYPE node_memory_working_set_bytes gauge\n"
        "node_memory_working_set_bytes 100 1000\n"
    )
    west = (
        "# HELP resource_scrape_error [STABLE] 1 if there was an error\n"
        "# TYPE resource_scrape_error gauge\n"
        "resource_scrape_error 1\n"
        "# HELP node_memory_working_set_bytes [STABLE] memory\n"
        "# TYPE node_memory_working_set_bytes gauge\n"
        "node_memory_working_set_bytes 20 2000\n"
    )
    assert routing.merged_texts([east, west]) == (
        "# HELP resource_scrape_error [STABLE] 1 if there was an error\n"
        "# TYPE resource_scrape_error gauge\n"
        "resource_scrape_error 1\n"
        "# HELP pod_memory_working_set_bytes [STABLE] memory\n"
        "# TYPE pod_memory_working_set_bytes gauge\n"
        'pod_memory_working_set_bytes{namespace="a",pod="p"} 100 1000\n'
        "# HELP node_memory_working_set_bytes [STABLE] memory\n"
        "# TYPE node_memory_working_set_bytes gauge\n"
        "node_memory_working_set_bytes 120 1000\n"
    )


def test_summary_node_figures_are_added_up() -> None:
    figures = [
        {"time": "t1", "usageCoreNanoSeconds": 5, "usageNanoCores": 2},
        {"time": "t2", "usageCoreNanoSeconds": 7},
    ]
    assert routing.added_up(figures) == {"time": "t1", "usageCoreNanoSeconds": 12}
