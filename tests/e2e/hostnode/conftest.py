"""The scratch directories of the controller end-to-end tests, for the host node's too."""

from tests.e2e.apiserver_controllers.conftest import scratch

__all__ = ["scratch"]
