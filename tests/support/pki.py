"""A private CA made for one test: what a self-hosted Forgejo's TLS looks like.

Made with the ``openssl`` command (no Python dependency): a self-signed CA, and a server
certificate it signs for the given DNS names and IP addresses. Nothing here is trusted by
the system; a test hands ``ca_cert`` to whatever should trust it.
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PrivateCA:
    """Paths of one CA and one server certificate (PEM) it signed."""

    ca_cert: Path
    server_cert: Path  # the leaf, then the CA: the chain a server presents
    server_key: Path


def _openssl(*args: str) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise RuntimeError("openssl is not on PATH (apt-get install openssl)")
    subprocess.run([binary, *args], check=True, capture_output=True, timeout=60)


def make_private_ca(
    directory: Path, *, names: tuple[str, ...] = ("127.0.0.1", "localhost")
) -> PrivateCA:
    """A new CA in ``directory`` and a server certificate for ``names`` (IPs or DNS names)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = directory / "ca.key", directory / "ca.crt"
    key, csr, leaf = directory / "server.key", directory / "server.csr", directory / "leaf.crt"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(ca_key), "-out", str(ca_cert), "-days", "2", "-subj", "/CN=autoroll test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _openssl(
        "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={names[0]}",
    )  # fmt: skip
    sans = ",".join(f"IP:{n}" if _is_ip(n) else f"DNS:{n}" for n in names)
    extensions = directory / "leaf.ext"
    extensions.write_text(
        f"subjectAltName={sans}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key),
        "-CAcreateserial", "-out", str(leaf), "-days", "2", "-extfile", str(extensions),
    )  # fmt: skip
    chain = directory / "server.crt"
    chain.write_bytes(leaf.read_bytes() + ca_cert.read_bytes())
    return PrivateCA(ca_cert=ca_cert, server_cert=chain, server_key=key)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
