"""``python -m wlmvk.redbox``: the red-box daemon (same as ``red-box``)."""

from __future__ import annotations

import sys

from wlmvk.redbox.app import main

sys.exit(main(sys.argv[1:]))
