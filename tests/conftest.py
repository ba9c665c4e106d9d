"""Settings every test shares.

Looking for models served on this machine is off: a developer's own Ollama or LM Studio must not
change which model a test gets. Set here, at import, so CLI and server processes the tests start
inherit it too; the discovery tests turn it on with their own settings and ports.
"""

from __future__ import annotations

import os

from tests.environment import DISCOVERY_OFF

os.environ[DISCOVERY_OFF] = "false"
