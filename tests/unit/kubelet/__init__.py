"""Unit tests of ``wlmvk.kubelet``, laid out as its sub-packages: ``api/`` (with ``auth/``, ``exec/``,
``stats/``), ``node/``, ``pods/``; at the top, the whole kubelet against a fake red-box and the
modules of the package's own top (settings, metrics, standby)."""
