"""The registry session: which roots it trusts, and what a refused certificate means.

A self-hosted Forgejo is often served with a certificate from the organisation's own CA. The
session trusts the system roots and certifi's bundle (what ``requests`` trusts alone) plus,
when ``REGISTRY_CA_FILE`` names one, that CA: in addition, never instead, so a registry that
moves to a public certificate keeps working. ``HTTPS_PROXY``/``NO_PROXY`` are honoured by
``requests`` itself (``trust_env``), and nothing here turns that off.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.utils import DEFAULT_CA_BUNDLE_PATH

#: Where a user sets the CA the registry's certificate chains to (chart value, variable).
CA_FIX_HINT = (
    "set the chart value caBundle (caBundle.configMap, caBundle.secret or caBundle.pem;"
    " REGISTRY_CA_FILE for the plain process) to the CA that signed the registry's certificate"
)


class _TrustingAdapter(HTTPAdapter):
    """An adapter whose connections verify against one prepared ``SSLContext``."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        proxy_kwargs["ssl_context"] = self._context
        return super().proxy_manager_for(proxy, **proxy_kwargs)


def trust_context(ca_file: str | None) -> ssl.SSLContext:
    """A verifying context: system roots, certifi's bundle and ``ca_file`` when given."""
    context = ssl.create_default_context()
    context.load_verify_locations(cafile=DEFAULT_CA_BUNDLE_PATH)
    if ca_file is not None:
        context.load_verify_locations(cafile=ca_file)
    return context


def registry_session(ca_file: str | None) -> requests.Session:
    """The session the registry client is given; plain ``requests`` trust without a CA file."""
    session = requests.Session()
    if ca_file is not None:
        session.mount("https://", _TrustingAdapter(trust_context(ca_file)))
    return session


def proxies_in_use(env: Mapping[str, str]) -> str:
    """The proxy variables ``requests`` will honour, for the startup log: user info in a
    proxy URL is replaced (it is a credential), NO_PROXY shown as given."""
    shown = []
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"):
        value = env.get(name) or env.get(name.lower())
        if value:
            parts = urlsplit(value)
            if parts.username or parts.password:
                value = parts._replace(
                    netloc="<redacted>@" + parts.netloc.rpartition("@")[2]
                ).geturl()
            shown.append(f"{name}={value}")
    return " ".join(shown) or "none"


def untrusted_message(exc: BaseException, *, ca_file: str | None) -> str:
    """What a failed certificate verification says: the cause, what is trusted, the fix."""
    trusted = (
        f"the default roots and REGISTRY_CA_FILE={ca_file}" if ca_file else "the default roots only"
    )
    return f"certificate not trusted ({_reason(exc)}); trusted: {trusted}; {CA_FIX_HINT}"


def is_untrusted(exc: BaseException) -> bool:
    """Whether a ``requests`` failure is a certificate the session refused to verify."""
    text = str(exc)
    return isinstance(exc, requests.exceptions.SSLError) and (
        "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text
    )


def _reason(exc: BaseException) -> str:
    text = str(exc)
    for marker in ("certificate verify failed: ", "CERTIFICATE_VERIFY_FAILED"):
        start = text.find(marker)
        if start >= 0:
            return text[start : start + 120].split(" (_ssl", maxsplit=1)[0].rstrip("')\" ")
    return type(exc).__name__
