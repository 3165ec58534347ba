"""Secret files for the configuration's tests: a reader over the files a test mounts, and the
problems a bad environment reports, with the secrets never echoed in them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import pytest

from autoroll.config.errors import ConfigError
from autoroll.config.reader import SecretFileError


def mounted(files: Mapping[str, str]) -> Callable[[str], str]:
    """A ``read_file`` for ``Config.from_env``: what ``files`` hold, by path; a path not
    mounted fails as the real reader does."""

    def read(path: str) -> str:
        if path not in files:
            raise SecretFileError(f"cannot read {path!r}: No such file or directory")
        return files[path]

    return read


def reported(build: Callable[[], object], *, never_echoed: Iterable[str] = ()) -> dict[str, str]:
    """Every problem of the ``ConfigError`` that ``build`` must raise, variable -> message;
    none of ``never_echoed`` is in the error's text."""
    with pytest.raises(ConfigError) as info:
        build()
    for secret in never_echoed:
        assert secret not in str(info.value)
    return {p.variable: p.message for p in info.value.problems}
