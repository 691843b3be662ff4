"""An in-memory Kubernetes API server for tests and the local demo (see README.md here).

Sub-packages by concept, each importing only those below it (an import-linter contract):

- ``handlers``: the HTTP surface (routes and verbs, discovery, OpenAPI, tables, scale, protobuf);
- ``kubelets``: the proxies to kubelets (logs, exec, node proxy, metrics) and in-process host nodes;
- ``controllers``: the controllers it imitates (scheduler, garbage collector, node lifecycle);
- ``storage``: the store and its watches, CRDs as resource types, the Events bridge;
- ``rules``: what a write goes through (patch semantics, validation, schemas, defaults);
- ``objects``: resource types, ``Status`` errors, selectors, JSON and time values.

``server.ApiServer`` runs the store, the HTTP app and the controllers; ``app`` is
``wlmvk dev apiserver``.
"""
