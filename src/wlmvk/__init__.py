"""wlmvk: Slurm partitions as Kubernetes nodes, pods as Slurm jobs.

``__version__`` is wlmvk's version, stated here only: pyproject.toml reads it (setuptools'
``attr:``), the virtual nodes report it, CHANGELOG.md's newest entry and the release tag
``v<version>`` name it.
"""

__version__ = "0.1.0"
