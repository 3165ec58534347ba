"""`autoroll --help` names every variable the configuration reads (issue 24).

The variables are found by reading them: ``Config.from_env`` is given a mapping that records
every name asked for (leader election on, so its settings are read too), so a variable added
to the configuration and left out of the help fails here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from autoroll.config import Config
from autoroll.edge.cli import build_parser


class Recording(Mapping[str, str]):
    """A mapping that remembers every key looked up in it."""

    def __init__(self, data: dict[str, str]) -> None:
        self._data = data
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return self._data[key]

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        self.asked.add(key)
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.asked.add(key)
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def variables_read() -> set[str]:
    env = Recording(
        {
            "FORGEJO_HOST": "forgejo.example.org",
            "FORGEJO_USER": "robot",
            "FORGEJO_TOKEN": "token",
            "WEBHOOK_SECRET": "s" * 32,
            "LEADER_ELECTION": "true",
            "LEADER_ELECTION_NAMESPACE": "autoroll",
            "LEADER_ELECTION_LEASE": "autoroll",
            "POD_NAME": "autoroll-0",
        }
    )
    Config.from_env(env)
    return env.asked


def test_the_configuration_reads_the_variables_this_test_expects() -> None:
    assert {"FORGEJO_HOST", "WORKLOAD_KINDS", "REGISTRY_CA_FILE", "ROLL_WINDOW"} <= variables_read()


def test_help_names_every_variable_the_configuration_reads() -> None:
    text = build_parser().format_help().replace("\n", " ")
    words = set(
        text.replace(",", " ").replace("(", " ").replace(")", " ").replace(";", " ").split()
    )
    expanded = set(words)
    # LEADER_ELECTION_{LEASE_DURATION,RENEW_DEADLINE,RETRY_PERIOD}_SECONDS, written once
    for word in words:
        if "{" in word:
            head, _, rest = word.partition("{")
            middle, _, tail = rest.partition("}")
            expanded |= {f"{head}{m}{tail}" for m in middle.split(",")}
    if "LEADER_ELECTION_{LEASE_DURATION" in text:
        expanded |= {
            f"LEADER_ELECTION_{m}_SECONDS"
            for m in ("LEASE_DURATION", "RENEW_DEADLINE", "RETRY_PERIOD")
        }
    missing = sorted(variables_read() - expanded)
    assert missing == [], f"autoroll --help does not name {missing}"
