"""wlmvk stage in/out: data movement for the prepare and collect pods."""
