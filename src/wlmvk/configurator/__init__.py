"""The configurator: the DaemonSet that serves a host's red-box as virtual nodes.

The original ran a configurator that started one virtual-kubelet pod per
partition. wlmvk needs no such middleman: the DaemonSet
(manifests/configurator.yaml) runs ``wlmvk kubelet`` itself, one process for
every partition of the host's red-box. Partition discovery (partitions that
appear and vanish become and stop being nodes) lives in
``wlmvk.kubelet.node_controller``; this package stays empty on purpose.
"""
