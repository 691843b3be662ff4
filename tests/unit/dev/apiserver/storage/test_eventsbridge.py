"""Events written through either API are visible through both."""

from __future__ import annotations

from wlmvk_dev.apiserver.objects.resources import EVENTS, EVENTS_V1
from wlmvk_dev.apiserver.storage.eventsbridge import to_core, to_events_v1
from wlmvk_dev.apiserver.storage.store import Store

REF = {"kind": "Pod", "namespace": "default", "name": "p1", "uid": "u1"}


def test_events_v1_event_appears_as_core_event_for_describe() -> None:
    store = Store()
    store.create(
        EVENTS_V1,
        {
            "metadata": {"name": "p1.1", "namespace": "default"},
            "regarding": REF,
            "note": "submitted as job 7",
            "reason": "Submitted",
            "type": "Normal",
            "reportingController": "wlmvk/kubelet",
            "reportingInstance": "vm",
            "action": "Submit",
            "eventTime": "2026-12-02T10:00:00.000000Z",
        },
    )
    uid = "involvedObject.uid=u1,involvedObject.name=p1,involvedObject.namespace=default"
    (core,) = store.list(EVENTS, "default", field_selector=uid).items
    assert core["message"] == "submitted as job 7"
    assert core["source"] == {"component": "wlmvk/kubelet"}
    assert core["reportingComponent"] == "wlmvk/kubelet"
    store.delete(EVENTS_V1, "p1.1", "default")
    assert store.list(EVENTS).items == []


def test_core_event_appears_in_events_api_and_updates_follow() -> None:
    store = Store()
    made = store.create(
        EVENTS,
        {
            "metadata": {"name": "p1.2", "namespace": "default"},
            "involvedObject": REF,
            "message": "m",
            "reason": "Started",
            "source": {"component": "kubelet", "host": "vm"},
            "count": 1,
            "firstTimestamp": "2026-12-02T10:00:00Z",
            "lastTimestamp": "2026-12-02T10:00:00Z",
        },
    )
    store.update(EVENTS, {**made, "count": 2})
    (mirrored,) = store.list(EVENTS_V1).items
    assert mirrored["regarding"] == REF
    assert mirrored["deprecatedCount"] == 2
    assert mirrored["deprecatedSource"] == {"component": "kubelet", "host": "vm"}
    assert "reportingController" not in mirrored  # kube-apiserver maps only reportingComponent


def test_conversions_round_trip_the_shared_fields() -> None:
    core = {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": REF,
        "message": "m",
        "reason": "R",
        "type": "Warning",
        "count": 3,
        "source": {"component": "c"},
    }
    back = to_core(to_events_v1(core))
    for key in ("involvedObject", "message", "reason", "type", "count", "source"):
        assert back[key] == core[key]
