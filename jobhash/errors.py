"""The errors jobhash reports. Every one names where the problem is and how to fix it.

::

    JobhashError                 base; the CLI prints str(error), never a traceback
    ├── UsageError               a bad command line (exit 2): unknown chart dir, missing file
    └── ValuesError            the values are wrong for Helm (exit 1): parse, schema, template
        ├── RenderError        the chart's own ``fail`` would stop ``helm template``
        └── UnmirrorableError         Helm accepts it, but jobhash cannot reproduce the result
                                 exactly; rejected instead of guessed
"""

from __future__ import annotations


class JobhashError(Exception):
    """Base of every error jobhash reports to a user."""


class UsageError(JobhashError):
    """The command line itself is wrong (exit code 2)."""


class ValuesError(JobhashError):
    """Values Helm would reject, or that break the chart (exit code 1).

    ``source`` is a file name or ``--set``/``--set-string``; ``path`` the dotted key path.
    """

    def __init__(self, message: str, *, source: str = "", path: str = "", fix: str = "") -> None:
        self.message = message
        self.source = source
        self.path = path
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        where = ": ".join(part for part in (self.source, self.path) if part)
        text = f"{where}: {self.message}" if where else self.message
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class RenderError(ValuesError):
    """The chart's template would ``fail`` with this message (mirrored verbatim)."""


class UnmirrorableError(ValuesError):
    """Helm would accept this input, but jobhash cannot reproduce Helm exactly, so it refuses."""
