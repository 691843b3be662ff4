"""The wire: the WLM API's messages <-> core values, in two ways that live here and nowhere else.

Every rpc's messages are betterproto's generated classes (``wlmvk._proto``), read and
written by ``codec``, ``execs``, ``usage``, ``associations`` and ``uploads``: the API's
definition, and the reference every hand-written path is tested against. The rpcs a pod
costs on every submission and every status tick (SubmitJob, SubmitJobs, JobStates) are
read and written straight from their bytes instead (``protowire``, ``submits``,
``batches``, ``states``): as message objects they cost red-box and the kubelet most of
their CPU (each module says what was measured). What those write is byte for byte what
the classes would, so any client of the API reads it.

Only this package and the two ends of the gRPC service import ``wlmvk._proto``: the client
(``redboxclient.client``, ``redboxclient.observing``) and red-box's service; an
import-linter contract keeps it so. Everything else speaks ``core`` values.
"""
