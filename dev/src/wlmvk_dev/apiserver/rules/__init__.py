"""What kube-apiserver does to a write before storing it, as functions of values.

``patching`` (merge, strategic merge, JSON patch, server-side apply), ``validation`` (the
built-in kinds' rules with the real messages), ``schema`` (custom resources' OpenAPI schemas:
validation and pruning), ``strategies`` (defaults on create, a pod's grace period) and ``qos``
(a pod's quality-of-service class). The store applies them; they import only ``objects``.
"""
