"""The HTTP surface: aiohttp routes from Kubernetes paths and verbs to the store.

``rest`` builds the application (routes, the ``Status`` middleware, the resource verbs and
watches); ``discovery`` and ``openapi`` describe what is served; ``tables`` (with ``jsonpath``
for CRD printer columns) answers ``kubectl get``'s Table requests; ``scale`` serves the
``scale`` subresource; ``protobuf`` decodes the bodies of kubectl's imperative commands.
"""
