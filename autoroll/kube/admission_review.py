"""AdmissionReview JSON in, plain data out, and the answer back (pure).

``review_request`` reads an ``admission.k8s.io/v1`` AdmissionReview of a pod CREATE into
``autoroll.core.pinning.PodAdmission``; ``review_response`` writes the answer: always
``allowed``, with the JSONPatch when there is one. Nothing else of the pod is read, and
nothing here raises but ``ReviewError`` (a body that is not a review at all).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from autoroll.core.pinning import CONTAINER_FIELDS, AdmittedContainer, OwnerReference, PodAdmission

API_VERSION: Final = "admission.k8s.io/v1"


class ReviewError(ValueError):
    """The body is not an AdmissionReview request this webhook can answer at all."""


@dataclass(frozen=True, slots=True)
class Review:
    """One request: its uid (echoed in the answer), and the pod when it is a pod CREATE."""

    uid: str
    pod: PodAdmission | None  # None: not a pod CREATE (answered allowed, unchanged)


def review_request(document: Any) -> Review:
    """The request of an AdmissionReview (``ReviewError`` when there is none)."""
    if not isinstance(document, dict) or document.get("kind") != "AdmissionReview":
        raise ReviewError("not an AdmissionReview")
    request = document.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise ReviewError("an AdmissionReview without request.uid")
    uid = request["uid"]
    kind = _dict(request.get("kind"))
    pod = request.get("object")
    if (
        request.get("operation") != "CREATE"
        or kind.get("kind") != "Pod"
        or kind.get("group", "") != ""
        or not isinstance(pod, dict)
        or request.get("subResource")
    ):
        return Review(uid, None)
    return Review(uid, _pod(pod, namespace=str(request.get("namespace") or "")))


def _pod(pod: Mapping[str, Any], *, namespace: str) -> PodAdmission:
    metadata = _dict(pod.get("metadata"))
    spec = _dict(pod.get("spec"))
    owners = tuple(
        OwnerReference(
            api_version=str(o.get("apiVersion", "")),
            kind=str(o.get("kind", "")),
            name=str(o.get("name", "")),
            controller=o.get("controller") is True,
        )
        for o in _list(metadata.get("ownerReferences"))
    )
    containers = tuple(
        AdmittedContainer(
            name=str(c.get("name", "")),
            image=str(c.get("image", "")),
            field=field,
            index=index,
            image_pull_policy=str(c.get("imagePullPolicy") or ""),
        )
        for field in CONTAINER_FIELDS
        for index, c in enumerate(_list(spec.get(field)))
    )
    labels = {str(k): str(v) for k, v in _dict(metadata.get("labels")).items()}
    name = str(metadata.get("name") or metadata.get("generateName") or "")
    return PodAdmission(
        namespace or str(metadata.get("namespace") or ""), name, labels, owners, containers
    )


def review_response(uid: str, patch: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    """The answer: allowed, with ``patch`` as a base64 JSONPatch when it is not empty."""
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        text = json.dumps(list(patch), separators=(",", ":")).encode()
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(text).decode("ascii")
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


__all__ = ["API_VERSION", "Review", "ReviewError", "review_request", "review_response"]
