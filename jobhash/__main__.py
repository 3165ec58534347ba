"""Allow ``python -m jobhash``."""

from jobhash.cli import main

raise SystemExit(main())
