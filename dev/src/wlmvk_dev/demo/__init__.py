"""``wlmvk dev up``: the whole system on one machine, running the examples end to end."""

from wlmvk_dev.demo.app import main

__all__ = ["main"]
