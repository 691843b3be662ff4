"""Storage and watch: the one source of truth of the in-memory API server.

``store`` is the :class:`~store.Store` every client goes through (the HTTP layer, the
controllers, tests), built from ``buckets`` (resource types, reads, watches, the commit that
tells watchers), ``writes`` (create, update, patch, bind) and ``deletion`` (graceful pod
deletion, finalizers, propagation, namespaces). ``watching`` holds the watches; ``crds``
makes each CustomResourceDefinition a served resource type and ``eventsbridge`` mirrors core
and ``events.k8s.io`` Events, both installed on the store as change hooks.
"""
