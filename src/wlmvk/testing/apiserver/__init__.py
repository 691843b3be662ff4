"""An in-memory Kubernetes API server for tests and the local demo (see README.md here).

``store`` holds the objects and watches; ``handlers`` serves them over HTTP as kubectl
and kubernetes_asyncio expect; ``server.ApiServer`` runs both with the controllers of
``controllers.default_controllers()``; ``app`` is ``wlmvk dev apiserver``.
"""
