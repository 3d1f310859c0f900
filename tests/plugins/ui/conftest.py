"""The pages are served by the plugin app of the API tests: the same fixture."""

from tests.plugins.api.conftest import api

__all__ = ["api"]
