"""Logging: text and JSON formats carry the decision fields; known secrets never appear."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from autoroll.instruments import logs

TOKEN = "tok-0123456789-secret"
HOOK = "hook-secret-abcdef"


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    buffer = io.StringIO()
    yield buffer
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_json_lines_carry_the_decision_fields(stream: io.StringIO) -> None:
    logs.configure(level="info", log_format="json", stream=stream)
    logging.getLogger("autoroll.test").info(
        "decided",
        extra={"deployment": "shop/web", "pod": "web-1", "registry_digest": "sha256:aa"},
    )
    [line] = lines(stream)
    entry = json.loads(line)
    assert entry["message"] == "decided"
    assert entry["level"] == "info"
    assert entry["logger"] == "autoroll.test"
    assert (entry["deployment"], entry["pod"], entry["registry_digest"]) == (
        "shop/web",
        "web-1",
        "sha256:aa",
    )


def test_text_lines_append_fields_as_key_value(stream: io.StringIO) -> None:
    logs.configure(level="info", log_format="text", stream=stream)
    logging.getLogger("autoroll.test").info(
        "decided", extra={"deployment": "shop/web", "reason": "not settled"}
    )
    [line] = lines(stream)
    assert line.endswith('decided deployment=shop/web reason="not settled"')


def test_the_level_filters(stream: io.StringIO) -> None:
    logs.configure(level="warning", log_format="text", stream=stream)
    logging.getLogger("autoroll.test").info("hidden")
    logging.getLogger("autoroll.test").warning("shown")
    assert [line.rsplit(" ", 1)[-1] for line in lines(stream)] == ["shown"]


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_known_secrets_are_redacted_everywhere(stream: io.StringIO, log_format: str) -> None:
    logs.configure(level="debug", log_format=log_format, secrets=[TOKEN, HOOK, ""], stream=stream)
    log = logging.getLogger("autoroll.test")
    log.info("token is %s", TOKEN)
    log.info(f"inline {HOOK}")
    log.info("field", extra={"detail": "x", "reason": f"auth {TOKEN}"})
    try:
        raise RuntimeError(f"request failed with {TOKEN}")
    except RuntimeError:
        log.exception("boom")
    text = stream.getvalue()
    assert TOKEN not in text
    assert HOOK not in text
    assert text.count(logs.REDACTED) >= 4


def test_configure_twice_does_not_double_lines(stream: io.StringIO) -> None:
    logs.configure(level="info", log_format="text", stream=stream)
    logs.configure(level="info", log_format="text", stream=stream)
    logging.getLogger("autoroll.test").info("once")
    assert len(lines(stream)) == 1


@pytest.mark.parametrize(
    ("level", "log_format", "match"),
    [("loud", "text", "LOG_LEVEL='loud'"), ("info", "xml", "LOG_FORMAT='xml'")],
)
def test_bad_settings_name_the_variable(level: str, log_format: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        logs.configure(level=level, log_format=log_format)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_every_extra_field_is_emitted_whatever_its_name(
    stream: io.StringIO, log_format: str
) -> None:
    # identity and duration_seconds were dropped by the old allow-list; any new field too.
    logs.configure(level="info", log_format=log_format, stream=stream)
    logging.getLogger("autoroll.test").info(
        "became leader",
        extra={
            "event": "leader-acquired",
            "identity": "rel-autoroll-0",
            "duration_seconds": 0.5,
            "brand_new_field": "x y",
        },
    )
    [line] = lines(stream)
    if log_format == "json":
        entry = json.loads(line)
        assert entry["message"] == "became leader"
        assert entry["event"] == "leader-acquired"
        assert entry["identity"] == "rel-autoroll-0"
        assert entry["duration_seconds"] == 0.5
        assert entry["brand_new_field"] == "x y"
    else:
        assert " INFO autoroll.test became leader " in line
        for pair in (
            "event=leader-acquired",
            "identity=rel-autoroll-0",
            "duration_seconds=0.5",
            'brand_new_field="x y"',
        ):
            assert pair in line


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_pass_id_is_on_every_line_logged_inside_a_pass_and_only_there(
    stream: io.StringIO, log_format: str
) -> None:
    logs.configure(level="info", log_format=log_format, stream=stream)
    log = logging.getLogger("autoroll.test")
    log.info("before")
    with logs.pass_context("p-1"):
        log.info("inside", extra={"deployment": "shop/web"})
        log.warning("also inside")
    with logs.pass_context("p-2"):
        log.info("next pass")
    log.info("after")
    found = []
    for line in lines(stream):
        if log_format == "json":
            found.append(json.loads(line).get("pass_id"))
        else:
            found.append(line.split("pass_id=")[1].split()[0] if "pass_id=" in line else None)
    assert found == [None, "p-1", "p-1", "p-2", None]


def test_an_exception_is_rendered_below_the_text_line(stream: io.StringIO) -> None:
    logs.configure(level="info", log_format="text", stream=stream)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("autoroll.test").exception("failed", extra={"event": "x"})
    first, *rest = lines(stream)
    assert first.endswith("ERROR autoroll.test failed event=x")
    assert rest[0].startswith("Traceback") and rest[-1] == "RuntimeError: boom"


USER = "robot"
BASIC = "cm9ib3Q6dG9rLzAxMjM0NTY3ODktc2VjcmV0Kys="  # base64("robot:tok/0123456789-secret++")


@pytest.mark.parametrize(
    ("user", "token", "forms"),
    [
        (
            "robot",
            "tok/0123456789-secret++",
            ("tok/0123456789-secret++", "tok%2F0123456789-secret%2B%2B", BASIC),
        ),
        # A token with nothing to percent-encode has one form fewer.
        ("u", "plain", ("plain", "dTpwbGFpbg==")),
        ("u", "", ()),  # nothing to hide: never "" (it would mangle every line)
    ],
)
def test_derived_forms(user: str, token: str, forms: tuple[str, ...]) -> None:
    assert logs.derived_forms(user=user, token=token) == forms


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_the_basic_header_of_user_and_token_is_redacted(
    stream: io.StringIO, log_format: str
) -> None:
    token = "tok/0123456789-secret++"
    secrets = logs.derived_forms(user=USER, token=token)
    logs.configure(level="debug", log_format=log_format, secrets=secrets, stream=stream)
    log = logging.getLogger("autoroll.test")
    log.debug("send: Authorization: Basic %s", BASIC)
    log.debug("GET /token?password=%s", "tok%2F0123456789-secret%2B%2B")
    text = stream.getvalue()
    assert BASIC not in text and "tok%2F" not in text and token not in text
    assert text.count(logs.REDACTED) == 2


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_token_learnt_later_is_redacted_from_then_on(
    stream: io.StringIO, log_format: str
) -> None:
    logs.configure(level="info", log_format=log_format, secrets=[TOKEN], stream=stream)
    log = logging.getLogger("autoroll.test")
    bearer = "eyJhbGciOiJSUzI1NiJ9.issued-by-the-realm.sig"
    logs.redact_also(bearer)
    log.info("retrying with Bearer %s", bearer, extra={"header": f"Bearer {bearer}"})
    assert bearer not in stream.getvalue()
    assert stream.getvalue().count(logs.REDACTED) == 2


def test_the_redactor_keeps_only_the_newest_learnt_secrets() -> None:
    redactor = logs.SecretRedactor(["fixed-secret"])
    for n in range(logs.SecretRedactor.MAX_LEARNT + 10):
        redactor.add(f"learnt-{n:04d}")
    assert redactor.redact("learnt-0000") == "learnt-0000"  # the oldest is forgotten
    newest = f"learnt-{logs.SecretRedactor.MAX_LEARNT + 9:04d}"
    assert redactor.redact(newest) == logs.REDACTED
    assert redactor.redact("fixed-secret") == logs.REDACTED  # configured ones stay
    redactor.add("")  # a no-op, never a pattern matching everything
    assert redactor.redact("plain text") == "plain text"
