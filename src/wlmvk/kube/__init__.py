"""The only layer that talks to Kubernetes (kubernetes_asyncio).

- ``bodies``: raw JSON objects (``Body``), ``Resource`` (group-version-resource), metadata accessors.
- ``client``: ``KubeClient.connect(kubeconfig)`` and get/list/create/replace/patch/patch_status/delete.
- ``watching``: ``watch()`` list+watch with bookmarks, relist on 410 and reconnect with backoff.
- ``events``: ``EventPoster`` (repeats folded into count/lastTimestamp).
- ``leases``: Lease get-or-create and renew.
- ``errors``: HTTP status -> ``core.errors`` (plus ``ResourceExpired``, ``AlreadyExists``).
"""
