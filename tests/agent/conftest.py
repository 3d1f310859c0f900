"""The agent runs from its own folder (a script, with that folder on ``sys.path``, in a pod or
beside a local node), so its modules import each other by their bare names; tests import them
the same way."""

import sys

from hooks.local.local_process import AGENT_DIR

if str(AGENT_DIR) not in sys.path:
    sys.path.insert(0, str(AGENT_DIR))
