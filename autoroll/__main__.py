"""Allow ``python -m autoroll``."""

from autoroll.cli import main

raise SystemExit(main())
