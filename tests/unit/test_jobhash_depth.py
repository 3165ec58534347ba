"""Values nested past jobhash's depth cap: one clear line naming the source, never a traceback.

Every step after parsing (decode, merge, copy, hash) recurses once per level, so a value
~500 levels deep, written out or behind a YAML alias, used to end in ``RecursionError``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from jobhash.cli import main
from jobhash.errors import UnmirrorableError
from jobhash.goyaml import deeper_than, load_values
from jobhash.goyaml_compose import MAX_VALUE_DEPTH


def seq(depth: int) -> str:
    return "[" * depth + "]" * depth


def flow_map(depth: int) -> str:
    return "{a: " * depth + "1" + "}" * depth


# The root map is one level: ``x: <n levels>`` is n + 1 deep.
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("behind-an-alias", f"x: &deep {seq(500)}\ny: *deep\n"),
        ("written-out", f"x: {seq(500)}\n"),
        ("a-map-behind-an-alias", f"a: &m {flow_map(500)}\nb: {{c: *m}}\n"),
        (
            "shallow-anchor-deep-use",
            f"a: &m [1]\nb: {'[' * (MAX_VALUE_DEPTH - 1)}*m{']' * (MAX_VALUE_DEPTH - 1)}\n",
        ),
        ("as-json", '{"x": ' + seq(500) + "}"),
        ("one-past-the-cap", f"x: {seq(MAX_VALUE_DEPTH)}\n"),
    ],
)
def test_a_value_past_the_cap_is_refused_naming_the_file_and_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    code = main(["names", "--release", "rel", "-f", str(path)], io.StringIO())
    err = capsys.readouterr().err
    assert code == 1  # invalid values, as every values file jobhash refuses (README)
    assert "Traceback" not in err
    [line] = err.splitlines()  # one line
    assert str(path) in line
    assert f"more than {MAX_VALUE_DEPTH} levels deep" in line


def test_a_value_at_the_cap_is_loaded() -> None:
    values = load_values(f"x: {seq(MAX_VALUE_DEPTH - 1)}\n".encode(), "at-cap.yaml")
    assert not deeper_than(values, MAX_VALUE_DEPTH)
    assert deeper_than(values, MAX_VALUE_DEPTH - 1)


def test_the_alias_expansion_counts_towards_the_depth() -> None:
    # Each part alone is shallow; the anchor's 60 levels under the alias's 60 are not.
    text = f"a: &m {seq(60)}\nb: {'[' * 60}*m{']' * 60}\n"
    with pytest.raises(UnmirrorableError, match=f"more than {MAX_VALUE_DEPTH} levels"):
        load_values(text.encode(), "mixed.yaml")


def test_a_set_json_value_past_the_cap_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["names", "--release", "rel", "--set-json", f"x={seq(5000)}"], io.StringIO())
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    assert "--set-json" in err and f"more than {MAX_VALUE_DEPTH} levels deep" in err


@pytest.mark.parametrize(
    ("value", "cap", "deeper"),
    [
        ({}, 1, False),
        ({"a": [1, {"b": []}]}, 3, True),
        ({"a": [1, {"b": []}]}, 4, False),
        ([[[[]]]], 3, True),
    ],
)
def test_deeper_than(value: object, cap: int, deeper: bool) -> None:
    assert deeper_than(value, cap) is deeper
