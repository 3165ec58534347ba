"""The controller image's build context, as podman sends it: the files ``.dockerignore``
lets in, and one hash over them, the Dockerfile and the build arguments (the image cache's
key in ``image.py``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """``.dockerignore`` in the one shape the project uses: ``*``, ``!path``s, exclusions."""

    included: tuple[str, ...]
    excluded: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        lines = [
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if not lines or lines[0] != "*":
            raise ValueError(".dockerignore: the first rule must be `*` (an explicit context)")
        included: list[str] = []
        excluded: list[str] = []
        for line in lines[1:]:
            if line.startswith("!"):
                if excluded:
                    raise ValueError(f".dockerignore: {line!r} must come before the exclusions")
                included.append(line[1:].strip("/"))
            else:
                excluded.append(line.strip("/"))
        return cls(tuple(included), tuple(excluded))

    def is_excluded(self, relative: str) -> bool:
        parts = relative.split("/")
        for pattern in self.excluded:
            if pattern.startswith("**/"):
                if any(fnmatch.fnmatchcase(part, pattern[3:]) for part in parts):
                    return True
            elif relative == pattern or relative.startswith(pattern + "/"):
                return True
        return False


def context_files(repo: Path = REPO) -> list[Path]:
    """The files podman sends as the build context, sorted (what the Dockerfile can copy)."""
    rules = IgnoreRules.parse((repo / ".dockerignore").read_text())
    files: set[Path] = set()
    for entry in rules.included:
        path = repo / entry
        candidates = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for candidate in candidates:
            relative = candidate.relative_to(repo).as_posix()
            if not rules.is_excluded(relative):
                files.add(candidate)
    return sorted(files)


def context_hash(
    repo: Path = REPO, *, dockerfile: Path | None = None, build_args: Mapping[str, str]
) -> str:
    """sha256 over the Dockerfile, .dockerignore, every context file and the build args."""
    digest = hashlib.sha256()
    dockerfile = dockerfile or repo / "Dockerfile"
    for name, data in (
        ("Dockerfile", dockerfile.read_bytes()),
        (".dockerignore", (repo / ".dockerignore").read_bytes()),
        ("build-args", json.dumps(dict(sorted(build_args.items()))).encode()),
    ):
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    for path in context_files(repo):
        data = path.read_bytes()
        mode = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"{path.relative_to(repo).as_posix()}\0{mode}{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
