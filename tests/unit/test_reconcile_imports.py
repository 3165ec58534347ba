"""What the reconcile process imports: only what it runs. Every module loaded there is
resident for the process's life and counts against the memory target at 10,000 workloads
(docs/performance.md), so an adapter for a feature that is off is not imported."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import autoroll.edge.reconcile_main, autoroll.edge.server
assert "apprise" not in sys.modules, "imported with no notifications configured"
from autoroll.notify import AppriseNotifier
AppriseNotifier(["json://127.0.0.1:9/hook"])
assert "apprise" in sys.modules
"""


def test_apprise_is_imported_only_when_a_notifier_is_built() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
