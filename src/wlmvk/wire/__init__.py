"""The wire: the WLM API's generated messages (``wlmvk._proto``) and the codec to core values.

Only this package and the two ends of the gRPC service import ``wlmvk._proto``: the client
(``wlm.client``) and red-box's service (``redbox.service``, ``redbox.health``); an
import-linter contract keeps it so. Everything else speaks ``core.jobs`` values.
"""
