"""wlmvk's development tools, a distribution apart from the product (``wlmvk-dev``).

The in-memory Kubernetes API server (``apiserver``: the fast embedded control plane
of the tests and the demo, its fidelity measured against kube-apiserver), a host node
that runs pods as local processes (``hostnode``), the one-command demo (``demo``) and the
generator of the CRDs' manifests (``crdmanifests``); dev/README.md maps every folder.
None of it ships in the wlmvk wheel or image: it runs pod commands on the machine.
"""
