"""Configuration of the notifications and of the quarantine's record: off and in memory unless
set, URLs read from a file and never shown, bad settings named.
"""

from __future__ import annotations

import pytest

from autoroll.config import Config
from tests.support.config_env import BASE, problems

# --- notifications and the quarantine's record ---------------------------------------------------

SLACK = "slack://T000/B000/XXXXsecretXXXX"


def test_notifications_are_off_and_the_quarantine_in_memory_unless_set() -> None:
    cfg = Config.from_env(BASE)
    assert not cfg.notifications.enabled and cfg.notifications.throttle_seconds == 60
    assert {k.value for k in cfg.notifications.happenings} == {
        "started",
        "done",
        "halted",
        "quarantined",
    }
    assert cfg.quarantine.configmap is None


def test_notify_urls_come_from_a_file_and_are_never_shown() -> None:
    files = {"/run/urls": f"# chat\n{SLACK}\n\njson://127.0.0.1:9/hook\n"}
    cfg = Config.from_env(
        BASE | {"NOTIFY_URLS_FILE": "/run/urls", "NOTIFY_EVENTS": "halted, quarantined"},
        read_file=files.__getitem__,
    )
    assert cfg.notifications.url_lines() == [SLACK, "json://127.0.0.1:9/hook"]
    assert {k.value for k in cfg.notifications.happenings} == {"halted", "quarantined"}
    view = cfg.redacted()
    assert view["NOTIFY_URLS"] == "<2 redacted>"
    assert "XXXXsecret" not in repr(cfg) + str(view)


@pytest.mark.parametrize(
    ("env", "variable", "says"),
    [
        ({"NOTIFY_URLS": f"{SLACK}\nnot a url"}, "NOTIFY_URLS", "URL 2 is not an Apprise URL"),
        ({"NOTIFY_URLS": "# only a comment"}, "NOTIFY_URLS", "holds no URL"),
        ({"NOTIFY_EVENTS": "started,rolled"}, "NOTIFY_EVENTS", "expected some of started"),
        ({"NOTIFY_THROTTLE_SECONDS": "-1"}, "NOTIFY_THROTTLE_SECONDS", "0 (no throttle) to 3600"),
        ({"QUARANTINE_CONFIGMAP": "Bad_Name"}, "QUARANTINE_CONFIGMAP", "a ConfigMap name"),
        ({"QUARANTINE_CONFIGMAP": "autoroll-quarantine"}, "QUARANTINE_NAMESPACE", "required"),
    ],
)
def test_a_bad_notification_or_quarantine_setting_names_the_variable(
    env: dict[str, str], variable: str, says: str
) -> None:
    found = problems(BASE | env)
    assert set(found) == {variable}
    assert says in found[variable]
    assert "XXXXsecret" not in found[variable] and "not a url" not in found[variable]
