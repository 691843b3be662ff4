"""The Kubernetes version wlmvk implements, stated once.

The kubelet reports it as its Node's ``kubeletVersion`` (``kubectl get nodes``
shows it, and the API server and its controllers read a node's version to
judge what it speaks); the development plane's host node reports it too. It is
the control plane the kubelet is built and tested against: the release pinned
in scripts/kube-versions.env (``KUBE_VERSION``), which tests/unit/kube/test_version.py
holds equal to this constant.
"""

KUBERNETES_VERSION = "v1.36.3"
