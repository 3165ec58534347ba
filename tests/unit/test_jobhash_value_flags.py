"""--set-json, --set-file and --set-literal, and the order Helm applies every value flag in.

Each row's expected JSON is what `helm template` (v4.3.1) printed for `mustToJson .Values` with
a chart that has no defaults, the same flags and the same two files (f1 = "hi\\n", f2 = "x,y");
ERROR rows are the ones Helm refused. tests/integration/test_values_parity.py checks generated
flags against the real helm as well.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobhash.errors import UnmirrorableError, UsageError, ValuesError
from jobhash.gojson import marshal
from jobhash.valueflags import FLAGS, helm_path_problem
from jobhash.values import ValueSources, user_values

FIELDS = {
    "--set": "sets",
    "--set-string": "set_strings",
    "--set-json": "set_jsons",
    "--set-file": "set_files",
    "--set-literal": "set_literals",
}


def load_flags(*pairs: tuple[str, str]) -> str:
    by_field: dict[str, list[str]] = {}
    for flag, expression in pairs:
        by_field.setdefault(FIELDS[flag], []).append(expression)
    values, _ = user_values(ValueSources(**by_field))  # type: ignore[arg-type]
    return marshal(values)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "f1").write_text("hi\n", encoding="utf-8")
    (tmp_path / "f2").write_text("x,y", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # Helm reads --set-file paths relative to the working dir
    return tmp_path


J, S, STR, F, L = "--set-json", "--set", "--set-string", "--set-file", "--set-literal"
ROWS: list[tuple[list[tuple[str, str]], str]] = [
    ([(J, "a=1,b=,c=[1,2]")], '{"a":1,"b":null,"c":[1,2]}'),
    ([(J, 'a={"x":{"y":[true,null,"s"]}},b="q,r"')], '{"a":{"x":{"y":[true,null,"s"]}},"b":"q,r"}'),
    ([(J, 'a[1]=2,a[0]="z"')], '{"a":["z",2]}'),
    ([(J, "a.b = 1")], '{"a":{"b ":1}}'),
    ([(J, "a= 1 ,b=2")], '{"a":1,"b":2}'),
    ([(J, '{"a":{"b":1}}'), (J, '{"a":{"c":2}}')], '{"a":{"b":1,"c":2}}'),
    ([(J, "[1]")], "{}"),
    ([(J, "a=100000000000000000000000")], '{"a":1e+23}'),
    ([(J, "a=-0.0")], '{"a":-0}'),
    ([(J, 'a="\\u2028<>&"')], '{"a":"\\u2028\\u003c\\u003e\\u0026"}'),
    ([(J, 'a[1]="\\ud800x"')], '{"a":[null,"\ufffdx"]}'),  # a lone surrogate is U+FFFD
    ([(J, '{"a":1}'), (J, "a.b=2")], "ERROR"),
    ([(J, '{"a":1} x')], "ERROR"),
    ([(J, "a=1.5e,b=2")], "ERROR"),
    ([(J, "a=1.,b=2")], "ERROR"),
    ([(J, "a=2,b=1.")], "ERROR"),  # Python's decoder alone would stop before the "."
    ([(J, "a=1e.b=2")], "ERROR"),
    ([(J, "a=1e5e")], "ERROR"),
    ([(J, "a=01")], "ERROR"),
    ([(J, "a=truex")], "ERROR"),
    ([(J, "a=1e400")], "ERROR"),
    ([(J, "a=NaN")], "ERROR"),
    ([(J, "a")], "ERROR"),
    ([(L, "a.b=x,y={z}")], '{"a":{"b":"x,y={z}"}}'),
    ([(L, "a\\.b=1")], '{"a\\\\":{"b":"1"}}'),  # no escapes in literal keys
    ([(L, "a[1]=x")], '{"a":[null,"x"]}'),
    ([(L, "a=true")], '{"a":"true"}'),
    ([(L, "a=")], '{"a":""}'),
    ([(L, "=x")], "{}"),
    ([(L, "a[0]")], '{"a":[]}'),
    ([(L, "a[x]=1")], "ERROR"),
    ([(L, "a.b=1"), (S, "a=1")], "ERROR"),  # --set first: a is an int, not a map
    ([(F, "a=f1,b=f2")], '{"a":"hi\\n","b":"x,y"}'),
    ([(F, "a={f1,f2}")], '{"a":["hi\\n","x,y"]}'),
    ([(F, "a=")], '{"a":""}'),
    ([(F, "a=f\\1")], '{"a":"hi\\n"}'),
    # Helm's order: -f, --set-json, --set, --set-string, --set-file, --set-literal.
    ([(S, "a=1"), (J, "a=2")], '{"a":1}'),
    ([(J, "a=2"), (S, "a=1")], '{"a":1}'),
    ([(STR, "a=s"), (S, "a=1")], '{"a":"s"}'),
    ([(F, "a=f1"), (STR, "a=s")], '{"a":"hi\\n"}'),
    ([(L, "a=lit"), (F, "a=f1")], '{"a":"lit"}'),
    ([(L, "a=lit"), (J, "a=2"), (S, "a=3"), (STR, "a=4"), (F, "a=f1")], '{"a":"lit"}'),
]


@pytest.mark.parametrize(("pairs", "expected"), ROWS)
def test_value_flags_match_helm(files: Path, pairs: list[tuple[str, str]], expected: str) -> None:
    if expected == "ERROR":
        with pytest.raises(ValuesError) as caught:
            load_flags(*pairs)
        assert "failed parsing --set" in str(caught.value)
        assert "fix:" in str(caught.value)
    else:
        assert load_flags(*pairs) == expected


def test_flags_are_applied_in_helms_order() -> None:
    assert FLAGS == ("--set-json", "--set", "--set-string", "--set-file", "--set-literal")


def test_errors_name_the_flag_and_the_expression(files: Path) -> None:
    with pytest.raises(ValuesError) as caught:
        load_flags((J, "a=tru"))
    assert caught.value.source == "--set-json a=tru"
    assert "key=<JSON>" in caught.value.fix
    with pytest.raises(ValuesError) as caught:
        load_flags((L, "a"))
    assert caught.value.source == "--set-literal a"
    assert 'key "a" has no value' in caught.value.message


def test_a_missing_set_file_is_a_usage_error_naming_the_path(files: Path) -> None:
    with pytest.raises(UsageError, match=r"--set-file: cannot read 'nope' \(No such file"):
        load_flags((F, "a=nope"))


def test_a_set_file_that_is_not_utf8_is_refused(files: Path) -> None:
    (files / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(UnmirrorableError, match="not valid UTF-8"):
        load_flags((F, "a=bin"))


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("f1", None),
        ("./x:y", None),  # the first segment is "."
        ("x:y/z", None),  # scheme "x", opaque: Helm reads the file "x:y/z"
        ("b/c:d", None),
        ("/abs/p%41th", None),
        ("q?x=%zz", None),  # the query is not unescaped
        ("x%zz", "invalid URL escape"),
        ("f#%z", "invalid URL escape"),
        (":x", "missing protocol scheme"),
        ("1a:b", "first path segment in URL cannot contain colon"),
        ("tab\there", "invalid control character"),
        ("https://example.org/v.txt", "jobhash reads only local files"),
        ("OCI://registry/x", "jobhash reads only local files"),
        (" - ", "standard input"),
    ],
)
def test_set_file_paths_helm_would_not_read(path: str, problem: str | None) -> None:
    found = helm_path_problem(path)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_set_file_errors_from_url_parsing(files: Path) -> None:
    with pytest.raises(UsageError, match="invalid URL escape"):
        load_flags((F, "a=x%zz"))
