"""The host node: a kubelet stand-in whose pods run as processes on this machine.

A client of any Kubernetes API server (``wlmvk dev node``; the in-memory API
server runs the same code in-process for ``--host-node``). ``kubelet`` is the
agent (node registration and heartbeat in ``nodes``, one ``pods.PodWorker`` per
pod sharing a ``context.HostContext``, the objects a pod refers to and each
container's launch spec in ``inputs``, the kubelet HTTPS API in ``server``); the pure parts are ``podstatus``
(containers -> pod status), ``env`` (environment and command line), ``volumes``
and ``logs`` (the CRI log format); ``containers`` starts a process through the
``launch`` script (mount namespace, user, exec).
"""
