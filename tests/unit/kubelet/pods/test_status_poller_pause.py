"""The status poller's cadence (status_poller.pause): ticks start one interval apart."""

from __future__ import annotations

import pytest

from wlmvk.kubelet.pods.poller import pause


@pytest.mark.parametrize(
    ("started", "ended", "interval", "wait"),
    [
        (100.0, 100.3, 5.0, 4.7),  # a 0.3 s tick: the next one starts 5 s after this one did
        (100.0, 100.0, 5.0, 5.0),
        (100.0, 104.9, 5.0, 1.0),  # never closer than a fifth of the interval
        (100.0, 112.0, 5.0, 1.0),  # a tick longer than the interval
        (0.0, 0.05, 0.2, 0.15),
    ],
)
def test_the_next_tick_starts_one_interval_after_this_one(
    started: float, ended: float, interval: float, wait: float
) -> None:
    assert pause(started, ended, interval) == pytest.approx(wait)
