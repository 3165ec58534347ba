"""What ``scripts/demo.py`` prints: each line stamped with its time, the cluster's changes, and
autoroll's log lines (``LOG_FORMAT=json``) as a newcomer should read them."""

from __future__ import annotations

import json
import time
from datetime import datetime


def say(text: str, *, at: float | None = None) -> None:
    stamp = time.strftime("%H:%M:%S", time.localtime(at))
    print(f"{stamp}  {text}", flush=True)


def cluster(text: str) -> None:
    """A change the cluster made (pods created, Ready, terminating, gone)."""
    say(f"cluster  │ {text}")


def short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12] if digest else "-"


def render(line: str) -> tuple[float | None, str] | None:
    """What a newcomer should read of one autoroll log line (LOG_FORMAT=json), or None.

    Decisions, deletions, warnings and errors are shown; gunicorn's start-up chatter is not.
    A line that is not JSON (a crash, a traceback) is shown as it is.
    """
    try:
        entry = json.loads(line)
    except ValueError:
        return (None, line.rstrip()) if line.strip() else None
    if not isinstance(entry, dict):
        return None, line.rstrip()
    level = str(entry.get("level", "info"))
    event = entry.get("event")
    at = datetime.fromisoformat(entry["ts"]).timestamp() if "ts" in entry else None
    if event == "delete" and not entry.get("dry_run"):
        running, wanted = str(entry.get("running_digest")), str(entry.get("registry_digest"))
        text = (
            f"deleted stale pod {entry.get('pod')}: it runs {short(running)}, "
            f":latest is {short(wanted)}"
        )
        return at, text
    if event == "decision" or level in ("warning", "error", "critical"):
        prefix = "" if level == "info" else f"{level.upper()}: "
        return at, prefix + str(entry.get("message", ""))
    return None


class Echo:
    """Prints autoroll's lines as they arrive; ``idle`` hides routine "current" decisions
    (printed every poll) so they do not scroll over the prompt."""

    def __init__(self) -> None:
        self.idle = False

    def __call__(self, line: str) -> None:
        shown = render(line)
        if shown is None:
            return
        at, text = shown
        if self.idle and ": current (" in text:
            return
        say(f"autoroll │ {text}", at=at)
