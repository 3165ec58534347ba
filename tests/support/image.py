"""The controller image, built from the committed Dockerfile with podman, cached, pushed.

The interface for every test that needs the image a user gets (tests/image/, and a real
node that pulls it from a local registry before ``helm install``)::

    from tests.support.image import Podman, build_controller_image, push_image

    image = build_controller_image()                  # ControllerImage: .archive, .reference
    pushed = push_image(image, "http://127.0.0.1:5000", "forgejo/autoroll", "latest",
                        user="forgejo", password=token)
    # pushed.reference == "127.0.0.1:5000/forgejo/autoroll:latest", pushed.digest "sha256:..."
    # helm install ... --set image.repository=127.0.0.1:5000/forgejo/autoroll

``build_controller_image`` returns an OCI archive cached under the tool cache by a hash of
the build context (the files ``.dockerignore`` lets in, the Dockerfile, the base image and
the build arguments), so a session with unchanged sources only hashes a few hundred files;
call it once per session (a session-scoped fixture). ``push_image`` copies that archive to
a registry on 127.0.0.1 with skopeo (plain HTTP for ``http://``), with the credentials in a
private auth file, never on a command line. Neither needs a running podman store: pass one
(``Podman``) only to run containers from the image.

How podman is run, and why:

- **Private configuration and storage.** ``Podman`` writes its own ``storage.conf``
  (graphroot, runroot), ``containers.conf`` and ``registries.conf`` into a temp dir and
  points ``CONTAINERS_*`` at them: the machine's container storage and configuration are
  never used, and ``close()`` leaves nothing (containers, mounts, cgroups, files).
- **runc, cgroupfs, no ulimits.** crun fails on hybrid cgroup hosts, systemd may be
  absent, and raising ``nofile`` needs CAP_SYS_RESOURCE, which a CI sandbox may lack.
  Containers get a cgroup parent of their own (removed on close) and conmon none.
- **Nothing is pulled.** No search registries; builds use ``--pull=never``. The base of
  every stage (``PYTHON_IMAGE``) is the Debian root filesystem ``scripts/tools.sh image``
  makes with mmdebstrap (``AUTOROLL_BASE_ROOTFS``), imported here.
- **Build network.** ``--network host`` so pip can fetch the locked wheels, and the host's
  CA bundle mounted read-only over the build container's, so pip trusts what the host
  trusts (a TLS-inspecting egress proxy, for instance). Build-time mounts are not part of
  any layer; tests/image checks the image's bundle is the base's own.
- podman 4 and skopeo 1.9 write a small blob-info cache to /var/lib/containers/cache
  whatever the storage root; when that directory did not exist before, it is removed again.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final
from urllib.parse import urlsplit

from tests.support.image_context import REPO, IgnoreRules, context_files, context_hash
from tests.support.podman_leftovers import (
    BLOB_INFO_CACHE,
    remove_blob_info_cache,
    remove_cgroups,
    unmount_below,
)

#: Where archives are cached: the shared tool cache, beside the tools themselves.
CACHE: Final = Path(os.environ.get("AUTOROLL_TOOLS", Path.home() / ".cache/autoroll-tools"))
#: The name of the built image in every store and archive (the tag is the context hash).
REPOSITORY: Final = "localhost/autoroll"
#: Archives kept in the cache (one per recently built context): older ones go once they
#: have not been used for a while (another checkout may be pushing one right now).
KEEP_ARCHIVES: Final = 3
PRUNE_UNUSED_SECONDS: Final = 6 * 3600
#: Seconds a build may take (cold: every wheel downloaded, on a loaded 2-core machine).
BUILD_TIMEOUT: Final = 1200
HOST_CA_BUNDLE: Final = Path("/etc/ssl/certs/ca-certificates.crt")


class ImageError(RuntimeError):
    """A podman or skopeo step failed; the message carries its output."""


@dataclass(frozen=True, slots=True)
class ControllerImage:
    """The image built from the committed Dockerfile.

    ``archive`` is an OCI archive holding ``reference``; ``build_seconds`` is None when the
    archive came from the cache.
    """

    archive: Path
    reference: str
    context_hash: str
    build_seconds: float | None


@dataclass(frozen=True, slots=True)
class PushedImage:
    """Where ``push_image`` put the image: ``host:port/repository:tag`` and its digest."""

    reference: str
    digest: str


# --------------------------------------------------------------------------------------------
# podman with a private configuration and storage


class Podman:
    """podman (and skopeo) on a private store in ``root``; ``close()`` removes all of it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cgroup_parent = f"/autoroll-podman-{uuid.uuid4().hex[:12]}"
        self._blob_cache_existed = BLOB_INFO_CACHE.exists()
        for name in ("storage", "run", "libpod", "tmp", "cni"):
            (root / name).mkdir(parents=True, exist_ok=True)
        (root / "storage.conf").write_text(
            "[storage]\n"
            'driver = "overlay"\n'
            f'graphroot = "{root / "storage"}"\n'
            f'runroot = "{root / "run"}"\n'
        )
        (root / "containers.conf").write_text(
            "[containers]\n"
            "default_ulimits = []\n"
            "[engine]\n"
            'runtime = "runc"\n'
            'cgroup_manager = "cgroupfs"\n'
            'events_logger = "none"\n'
            'lock_type = "file"\n'
            f'tmp_dir = "{root / "libpod"}"\n'
            "[network]\n"
            f'network_config_dir = "{root / "cni"}"\n'
        )
        (root / "registries.conf").write_text(
            'unqualified-search-registries = []\nshort-name-mode = "enforcing"\n'
        )
        (root / "policy.json").write_text(
            json.dumps({"default": [{"type": "insecureAcceptAnything"}]})
        )
        self.env = {
            **os.environ,
            "CONTAINERS_STORAGE_CONF": str(root / "storage.conf"),
            "CONTAINERS_CONF": str(root / "containers.conf"),
            "CONTAINERS_REGISTRIES_CONF": str(root / "registries.conf"),
            "TMPDIR": str(root / "tmp"),
        }

    @classmethod
    def private(cls) -> Podman:
        """A fresh store in a new temp dir."""
        return cls(Path(tempfile.mkdtemp(prefix="autoroll-podman-")))

    def __enter__(self) -> Podman:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def container_flags(self) -> list[str]:
        """Flags for every ``podman run``/``create``: the store's own cgroup parent."""
        return ["--cgroups=no-conmon", f"--cgroup-parent={self.cgroup_parent}"]

    def run(
        self, *args: str, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``podman ARGS`` on this store; raises ``ImageError`` with its output on failure."""
        return _run(["podman", *args], env=self.env, timeout=timeout, check=check)

    def skopeo(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return _run(
            ["skopeo", "--policy", str(self.root / "policy.json"), *args],
            env=self.env,
            timeout=timeout,
            check=True,
        )

    def has_image(self, reference: str) -> bool:
        return self.run("image", "exists", reference, check=False).returncode == 0

    def close(self) -> None:
        """Remove every container, the cgroups and mounts they left, and the store."""
        try:
            if self.root.exists():
                self.run("rm", "--all", "--force", "--time", "0", check=False, timeout=120)
                self.run("unmount", "--all", check=False, timeout=60)
        finally:
            remove_cgroups(self.cgroup_parent)
            unmount_below(self.root)
            shutil.rmtree(self.root, ignore_errors=True)
            if not self._blob_cache_existed:
                remove_blob_info_cache()


def _run(
    argv: Sequence[str], *, env: Mapping[str, str], timeout: float, check: bool
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        list(argv),
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        raise ImageError(
            f"{' '.join(argv[:3])} ... exited {result.returncode}:\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result


# --------------------------------------------------------------------------------------------
# build, cache, push


def base_image(podman: Podman, env: Mapping[str, str] = os.environ) -> str:
    """The Debian base from ``scripts/tools.sh image``, imported into ``podman`` once."""
    rootfs = env.get("AUTOROLL_BASE_ROOTFS", "")
    reference = env.get("AUTOROLL_BASE_IMAGE", "")
    if not rootfs or not Path(rootfs).is_file() or not reference:
        raise ImageError(
            "no base image: AUTOROLL_BASE_ROOTFS/AUTOROLL_BASE_IMAGE are unset or the tarball is"
            " missing; run `scripts/tools.sh image` and `source .tools/env`"
        )
    if not podman.has_image(reference):
        podman.run("import", "--change", 'CMD ["/bin/sh"]', rootfs, reference, timeout=300)
    return reference


def build_controller_image(
    podman: Podman | None = None,
    *,
    repo: Path = REPO,
    dockerfile: Path | None = None,
    cache_dir: Path | None = None,
    env: Mapping[str, str] = os.environ,
) -> ControllerImage:
    """The runtime image of ``dockerfile`` (default: the committed one), built or cached.

    With ``podman`` given, the image is also present in that store afterwards (built
    there, or loaded from the cached archive), ready for ``podman run``. One build at a time
    per cache (a lock file): two test runs that need the same image (the e2e tier's
    workers, the image tier beside them) build it once, the second one reads the cache.
    """
    cache = (cache_dir or CACHE / "controller-image").resolve()
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _built_or_cached(podman, repo=repo, dockerfile=dockerfile, cache=cache, env=env)


def _built_or_cached(
    podman: Podman | None,
    *,
    repo: Path,
    dockerfile: Path | None,
    cache: Path,
    env: Mapping[str, str],
) -> ControllerImage:
    reference_of_base = env.get("AUTOROLL_BASE_IMAGE", "")
    build_args = {"PYTHON_IMAGE": reference_of_base}
    digest = context_hash(repo, dockerfile=dockerfile, build_args=build_args)
    reference = f"{REPOSITORY}:{digest[:16]}"
    archive = cache / f"{digest[:16]}.oci.tar"
    if archive.is_file():
        archive.touch()  # most recently used: kept by _prune
        if podman is not None and not podman.has_image(reference):
            podman.run("load", "--quiet", "--input", str(archive), timeout=300)
            if not podman.has_image(reference):
                raise ImageError(f"{archive} did not load as {reference}")
        return ControllerImage(archive, reference, digest, None)
    owned = podman is None
    store = podman or Podman.private()
    try:
        started = time.monotonic()
        base = base_image(store, env)
        argv = [
            "build",
            "--pull=never",
            "--network=host",
            "--target=runtime",
            f"--build-arg=PYTHON_IMAGE={base}",
            f"--file={dockerfile or repo / 'Dockerfile'}",
            f"--tag={reference}",
        ]
        if HOST_CA_BUNDLE.is_file():
            argv.append(f"--volume={HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro")
        store.run(*argv, str(repo), timeout=BUILD_TIMEOUT)
        seconds = time.monotonic() - started
        cache.mkdir(parents=True, exist_ok=True)
        partial = cache / f".{digest[:16]}.{uuid.uuid4().hex[:8]}.partial"
        try:
            store.run(
                "save", "--quiet", "--format=oci-archive", f"--output={partial}", reference,
                timeout=600,
            )  # fmt: skip
            partial.replace(archive)
        finally:
            partial.unlink(missing_ok=True)
        _prune(cache)
        return ControllerImage(archive, reference, digest, seconds)
    finally:
        if owned:
            store.close()


def _prune(cache: Path) -> None:
    archives = sorted(cache.glob("*.oci.tar"), key=lambda p: p.stat().st_mtime, reverse=True)
    cutoff = time.time() - PRUNE_UNUSED_SECONDS
    for old in archives[KEEP_ARCHIVES:]:
        with contextlib.suppress(FileNotFoundError):
            if old.stat().st_mtime < cutoff:
                old.unlink()


def push_image(
    image: ControllerImage,
    registry_url: str,
    repository: str,
    tag: str,
    *,
    user: str | None = None,
    password: str | None = None,
    manifest_format: str = "oci",
) -> PushedImage:
    """Copy ``image`` to ``registry_url`` (on 127.0.0.1 only) as ``repository:tag``.

    ``http://`` means plain HTTP (no TLS verification either way for a local registry);
    ``manifest_format`` is ``"oci"`` or ``"v2s2"`` (Docker schema 2: the same config and
    layers under another manifest digest). Returns the pushed reference and its digest.
    """
    parts = urlsplit(registry_url)
    if parts.scheme not in {"http", "https"} or parts.hostname not in {"127.0.0.1", "localhost"}:
        raise ValueError(
            f"registry_url {registry_url!r}: expected http(s)://127.0.0.1:PORT (tests talk to"
            " local registries only)"
        )
    if manifest_format not in {"oci", "v2s2"}:
        raise ValueError(f"manifest_format {manifest_format!r}: expected 'oci' or 'v2s2'")
    host = parts.netloc
    destination = f"{host}/{repository}:{tag}"
    with Podman.private() as store:
        digest_file = store.root / "digest"
        argv = [
            "copy",
            "--quiet",
            f"--format={manifest_format}",
            "--dest-tls-verify=false",
            f"--digestfile={digest_file}",
        ]
        if user is not None:
            auth_file = store.root / "auth.json"
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            auth_file.write_text(json.dumps({"auths": {host: {"auth": token}}}))
            auth_file.chmod(0o600)
            argv.append(f"--dest-authfile={auth_file}")
        store.skopeo(
            *argv, f"oci-archive:{image.archive}:{image.reference}", f"docker://{destination}"
        )
        return PushedImage(destination, digest_file.read_text().strip())


def main() -> int:
    """``python -m tests.support.image``: build (or find) the image and say where it is."""
    image = build_controller_image()
    how = "cached" if image.build_seconds is None else f"built in {image.build_seconds:.0f} s"
    print(f"{image.reference} ({how})\n{image.archive}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "REPO",
    "ControllerImage",
    "IgnoreRules",
    "Podman",
    "PushedImage",
    "base_image",
    "build_controller_image",
    "context_files",
    "context_hash",
    "push_image",
]
