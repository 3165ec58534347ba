"""Allow ``python -m autoroll``."""

from autoroll.edge.cli import main

raise SystemExit(main())
