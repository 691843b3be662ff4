"""An in-memory Kubernetes API server for tests and the local demo (see README.md here).

REST core: ``store`` (objects, resourceVersions, deletion rules) with ``watching``
(watches), ``selectors``, ``patching``, ``validation``, ``strategies`` (create defaults),
``crds`` + ``schema`` (custom resources), ``eventsbridge`` (core and events.k8s.io Events);
``handlers`` serves it over HTTP with ``discovery``, ``openapi``, ``tables``, ``scale`` and
``protobuf`` (kubectl's imperative bodies); ``server.ApiServer`` runs it with the
controllers of ``controllers.default_controllers()``; ``app`` is ``wlmvk dev apiserver``.
Controllers (scheduler, gc, nodelifecycle, logproxy and their helpers) build on the store;
``hostkubelet`` runs host nodes (``wlmvk_dev.hostnode``) as clients over HTTP.
"""
