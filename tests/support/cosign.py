"""cosign against a registry on 127.0.0.1, as the release workflow signs (ADR 021).

Key-based, as the workflow signs: a key pair made for the test (``generate-key-pair`` with a
password from the environment), signatures stored beside the image in the registry, no
transparency log (the workflow's ``--tlog-upload=false``; verified with
``--insecure-ignore-tlog``). Registry credentials go in a DOCKER_CONFIG of this object's own,
as the workflow's per-job one, never the user's.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Seconds one cosign call may take (it talks to a registry on loopback only).
TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public: Path
    password: str


class Cosign:
    """The ``cosign`` binary with a private home, DOCKER_CONFIG and no network but loopback."""

    def __init__(self, binary: str, home: Path) -> None:
        self.binary = binary
        self.home = home
        (home / "docker").mkdir(parents=True, exist_ok=True)
        self._env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "DOCKER_CONFIG": str(home / "docker"),
            "TUF_ROOT": str(home / "tuf"),  # never the user's sigstore cache
        }

    def login(self, host: str, user: str, password: str) -> None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        config = self.home / "docker" / "config.json"
        config.write_text(json.dumps({"auths": {host: {"auth": token}}}))
        config.chmod(0o600)

    def run(self, *args: str, password: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary, *args],
            env={**self._env, "COSIGN_PASSWORD": password},
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )

    def generate_key_pair(self, name: str) -> KeyPair:
        directory = self.home / name
        directory.mkdir()
        password = secrets.token_hex(12)
        done = self.run(
            "generate-key-pair", "--output-key-prefix", str(directory / "cosign"), password=password
        )
        assert done.returncode == 0, done.stderr
        return KeyPair(directory / "cosign.key", directory / "cosign.pub", password)

    def sign(self, reference: str, key: KeyPair) -> subprocess.CompletedProcess[str]:
        return self.run(
            "sign", "--yes", "--tlog-upload=false", "--allow-http-registry",
            "--key", str(key.private), reference,
            password=key.password,
        )  # fmt: skip

    def verify(self, reference: str, key: KeyPair) -> subprocess.CompletedProcess[str]:
        return self.run(
            "verify", "--insecure-ignore-tlog=true", "--allow-http-registry",
            "--key", str(key.public), reference,
        )  # fmt: skip
