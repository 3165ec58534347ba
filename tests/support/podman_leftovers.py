"""What a podman store can leave on the host after its containers are gone: cgroups, mounts
of a crashed container's layers, and the blob-info cache podman writes under
/var/lib/containers even with a store of its own (``image.Podman.close`` removes them)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path
from typing import Final

BLOB_INFO_CACHE: Final = Path("/var/lib/containers")
CGROUP_ROOT: Final = Path("/sys/fs/cgroup")


def remove_cgroups(parent: str) -> None:
    """rmdir ``parent`` (deepest first) in every cgroup hierarchy it was created in."""
    relative = parent.lstrip("/")
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
        top = hierarchy / relative
        if not top.is_dir():
            continue
        for directory in sorted(
            (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
        ):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def unmount_below(root: Path) -> None:
    """Lazily unmount anything still mounted under ``root`` (a crashed container's layers)."""
    prefix = str(root) + "/"
    with contextlib.suppress(OSError):
        targets = [
            line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
        ]
        for target in sorted((t for t in targets if t.startswith(prefix)), reverse=True):
            subprocess.run(["umount", "-l", target], check=False, capture_output=True)


def remove_blob_info_cache() -> None:
    """Remove /var/lib/containers again if it holds nothing but the blob-info cache."""
    cache = BLOB_INFO_CACHE / "cache"
    with contextlib.suppress(OSError):
        if {p.name for p in BLOB_INFO_CACHE.iterdir()} <= {"cache"}:
            if cache.is_dir() and all(p.name.startswith("blob-info-") for p in cache.iterdir()):
                shutil.rmtree(cache)
            BLOB_INFO_CACHE.rmdir()
