"""A measuring child (``bench.tick``) carries what the reconcile process carries and nothing of
the HTTP edge: its peak RSS is reported as autoroll's, and the reconcile process never imports
gunicorn, Flask or the admission webhook's certificates (``tests/unit/test_reconcile_imports.py``
holds the process to the first half). Before, importing one constant from
``autoroll.edge.server`` put about 20 MB of them into every figure."""

from __future__ import annotations

import subprocess
import sys

from bench.child import REPO_ROOT

PROBE = """
import sys
import bench.tick, autoroll.edge.reconcile_main
edge = sorted({m.split(".")[0] for m in sys.modules} & {"flask", "gunicorn", "werkzeug", "jinja2"})
assert not edge, edge
assert "autoroll.edge.server" not in sys.modules
"""


def test_the_measuring_child_imports_nothing_of_the_http_edge() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
