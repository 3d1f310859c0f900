"""The emulator's own tests get the ``k8s_emulator`` fixture the way other tests do."""

from tests.k8s_emulator.fixtures import k8s_emulator  # noqa: F401
