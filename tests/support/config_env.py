"""The smallest valid environment for ``Config.from_env`` (``BASE``) and ``problems``, which
reads back every problem one bad environment reports, for the configuration's tests.
"""

from __future__ import annotations

import pytest

from autoroll.config import Config
from autoroll.config.errors import ConfigError

TOKEN = "tok-0123456789-very-secret"


HOOK = "hook-secret-0123456789abcdef"


BASE = {
    "FORGEJO_HOST": "forgejo.example:3000",
    "FORGEJO_USER": "robot",
    "FORGEJO_TOKEN": TOKEN,
    "WEBHOOK_SECRET": HOOK,
}


def problems(env: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        Config.from_env(env)
    return {p.variable: p.message for p in info.value.problems}
