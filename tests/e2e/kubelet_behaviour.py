"""How the simulated kubelet's runtime treats a container: the ``Behaviour`` knobs.

They stand apart from the kubelet's thread because tests build them (and their annotation)
without one, and the pure status builder reads them.

Knobs (``Behaviour``), chosen per pod by annotation, else per digest, else per image string:

- ``crash_loop``: the container never becomes Ready; ``restartCount`` grows; waiting
  ``CrashLoopBackOff`` (a run-to-completion pod fails instead).
- ``ready_after``: seconds from container start to Ready (slow readiness probe).
- ``pull_seconds``: seconds in ``ContainerCreating`` with no imageID (``math.inf``: forever).
- ``report_child``: imageID carries the platform child digest of an index (CRI-O has done so);
  needs a ``resolve_child`` callable.
- ``keep_old_digest``: the runtime keeps reporting the digest this node first saw for the image.
- ``terminate_seconds``: how long a deleted pod stays Terminating.
- ``run_seconds``: for ``restartPolicy`` Never/OnFailure pods (Jobs), time until exit 0.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

BEHAVIOUR_ANNOTATION = "kubelet.e2e.autoroll/behaviour"


@dataclass(frozen=True)
class Behaviour:
    """How the simulated runtime treats a container (see the module docstring)."""

    crash_loop: bool = False
    ready_after: float = 0.0
    pull_seconds: float = 0.0
    report_child: bool = False
    keep_old_digest: bool = False
    terminate_seconds: float = 0.0
    run_seconds: float = 0.5

    @classmethod
    def from_annotation(cls, text: str) -> Behaviour:
        """Parse the pod annotation (a JSON object of fields); a bad one is a ValueError."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{BEHAVIOUR_ANNOTATION}: not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{BEHAVIOUR_ANNOTATION}: expected a JSON object, got {text!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"{BEHAVIOUR_ANNOTATION}: unknown field(s) {unknown}; expected some of "
                f"{sorted(known)}"
            )
        return cls(**data)

    def annotation(self) -> str:
        """The annotation value that selects this behaviour for one pod."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)
