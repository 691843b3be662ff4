"""The API's objects as values: resource types, ``Status`` errors, selectors, JSON and time.

``resources`` (what a resource type is: :class:`~resources.GVR`, kind, scope, subresources, the
built-in kinds), ``errors`` (every failure as a Kubernetes ``Status``), ``selectors`` and
``fieldlabels`` (label and field selectors, and which field labels each kind accepts),
``jsonvalues`` and ``timestamps`` (deep copies, Kubernetes timestamps). Everything above builds
on these; they import nothing of the server.
"""
