"""Values parity: jobhash loads values exactly as Helm does, checked below the chart.

A throw-away chart whose only template prints `mustToJson .Values` (base64, so the bytes
survive) is the oracle for jobhash.goyaml + jobhash.values + jobhash.gojson together: YAML 1.1
scalars and keys, anchors and merge keys, multi-document files, `-f` merging, `--set` and
`--set-string` typing and syntax, `--set-json` (key=JSON pairs and whole JSON objects),
`--set-file` (files with commas, braces, non-ASCII, no trailing newline), `--set-literal`,
the order Helm applies the flags in, and null deleting a chart default. The chart's defaults
hold nested maps, lists and nulls. Example count: JOBHASH_VALUES_PARITY_EXAMPLES (default 200).
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from jobhash.coalesce import coalesce
from jobhash.errors import JobhashError, UnmirrorableError
from jobhash.gojson import marshal
from jobhash.values import ValueSources, load_chart, user_values
from tests.conftest import require_tool

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("JOBHASH_VALUES_PARITY_EXAMPLES", "200"))
RANDOM = os.environ.get("JOBHASH_PARITY_RANDOM", "") == "1"

CHART_VALUES = """\
a: {x: 1, w: {p: 2, q: null}, z: [1, 2]}
b: 1
c: null
d: {n: null, keep: k}
e: [a, b]
s: str
"""
TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: oracle
data:
  v: {{ mustToJson .Values | b64enc }}
"""

SCALARS = [
    "y", "Y", "yes", "NO", "on", "OFF", "true", "tRue", "~", "null", "", "0o17", "0x1F",
    "017", "08", "09.5", "0b101", "-0b101", "0b-101", "1e3", ".5", "-.5", "1.", "1_000",
    "._5", ".5_0", "1e400", "1e-400", "-0", "-0.0", "+5", "1e21", "1e-7", ".iNf",
    "18446744073709551615", "9223372036854775808", "123456789012345678901234", "2001-12-14",
    "2001-12-14 21:59:43.10 -5", "12:30:45", "0x", "0x1p3", "abc", "'quoted'", '"dq"',
    '"<>&\\u2028\\x01\\b\\f\\t\\x7f é😀"', "! 123", "!!str 1.5", '!!int "12"', "!!float 3",
    "!custom 5", "|\n    lit\n", ">\n    fold\n    ed\n",
]  # fmt: skip
KEYS = ["a", "b", "k", "1", "1.5", "true", "yes", "0x10", "1e6", "3.14159265358979", "-0.0",
        "2001-12-14", '"k"', '"1"', "on", ".inf", "12345678901234567890", "~"]  # fmt: skip


def flow(scalar: str) -> str:
    """A scalar usable inside a flow collection (block scalars and tags become plain text)."""
    return '"x"' if "\n" in scalar or scalar.startswith("!") or scalar in ("", "~") else scalar


@st.composite
def node(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.integers(0, 9))
    if depth > 1 or kind < 5:
        return draw(st.sampled_from(SCALARS))
    if kind < 7:
        items = draw(st.lists(st.sampled_from(SCALARS).map(flow), max_size=3))
        return "[" + ", ".join(items) + "]"
    pairs = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(SCALARS)), max_size=3))
    return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in pairs) + "}"


@st.composite
def document(draw: st.DrawFn) -> str:
    lines = []
    for key in draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "s", "n", "m"]),
                             min_size=1, max_size=4, unique=True)):  # fmt: skip
        if draw(st.integers(0, 3)) == 0:
            lines.append(f"{key}:")
            for index in range(draw(st.integers(1, 3))):
                lines.append(f"  k{index}: {draw(node(1))}".replace("\n", "\n    "))
        else:
            lines.append(f"{key}: {draw(node())}".replace("\n", "\n  "))
    if draw(st.integers(0, 4)) == 0:
        lines += ["anc: &x {p: 1, q: [1, 2]}", "ali: *x", "mer:", "  <<: *x", "  q: 3"]
    return "\n".join(lines) + "\n"


SET_KEYS = ["a", "b", "c", "d", "e", "s", "a.x", "a.w", "a.w.p", "a.w.q", "a.z", "a.z[0]",
            "a.z[3]", "e[1]", "e[0].k", "n", "n.m", "l[2]", "l[0][1]", "l[1].k", "x\\.y",
            "q\\,r", "", ".a", "a..b", "e[a]", "e[-1]", "a.b.c.d"]  # fmt: skip
SET_VALUES = ["1", "0", "-5", "+5", "007", "1.5", "true", "TRUE", "False", "null", "", "str",
              "{1,x}", "{}", "{a,b", "x\\,y", "a=b", "9223372036854775807",
              "9223372036854775808", "1e3", "0x1F", " sp ", "é", "fal\u017fe"]  # fmt: skip


@st.composite
def set_expression(draw: st.DrawFn, values: list[str] = SET_VALUES) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(SET_KEYS))
        parts.append(
            key if draw(st.integers(0, 19)) == 0 else f"{key}={draw(st.sampled_from(values))}"
        )
    return ",".join(parts)


JSON_VALUES = ["1", "1.5", "-0", "1e21", "100000000000000000000000", '"s"', '"a,b"',
               '[1,"x",null]', '{"k":{"n":1}}', '{"p":2,"q":null}', "null", "", " 2 ", "true",
               '"\\u2028<>&é"', '"\\ud800"', "[]", "{}", "1e-7", "-1.5E+3"]  # fmt: skip
# Helm refuses these: Go's scanner fails where Python's decoder would stop early or go on.
BAD_JSON_VALUES = ["1e400", "tru", "1.", "1e", "1.5e+", "01", '"x"y', '{"bad"', "NaN", "-"]
JSON_OBJECTS = ['{"a":{"x":2,"w":{"p":null}}}', '{"e":[1]}', ' {"b":{"c":1}} ', '{"bad"',
                '{"a":1} x', '{"s":"\\u00e9"}']  # fmt: skip
# File contents for --set-file; the expression names them by index.
FILE_CONTENTS = ["plain", "with,comma", "line\n", "", "{x,y}", "é😀 <>&", "true", "3"]
LITERAL_VALUES = ["x,y=z", "{a,b}", "true", "3", "", "a\\,b", " sp ", "é"]


@st.composite
def json_expression(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(JSON_OBJECTS))
    bad = draw(st.integers(0, 5)) == 0
    return draw(set_expression(BAD_JSON_VALUES if bad else JSON_VALUES))


@st.composite
def file_expression(draw: st.DrawFn) -> str:
    """key=<placeholder>: ``@N`` stands for the N-th file's absolute path (set per example)."""
    parts = []
    for _ in range(draw(st.integers(1, 2))):
        key = draw(st.sampled_from(SET_KEYS))
        indexes = draw(st.lists(st.integers(0, len(FILE_CONTENTS) - 1), min_size=1, max_size=2))
        paths = [f"@{index}" for index in indexes]
        value = paths[0] if len(paths) == 1 and draw(st.booleans()) else "{" + ",".join(paths) + "}"
        parts.append(f"{key}={value}")
    return ",".join(parts)


@st.composite
def literal_expression(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from([k for k in SET_KEYS if "\\" not in k]))
    return f"{key}={draw(st.sampled_from(LITERAL_VALUES))}"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chart = tmp_path_factory.mktemp("oracle")
    (chart / "templates").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: oracle\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(CHART_VALUES)
    (chart / "templates" / "cm.yaml").write_text(TEMPLATE)
    return chart


@pytest.fixture(scope="module")
def helm() -> str:
    return require_tool("helm")


FLAG_FIELDS = (
    ("--set", "sets"),
    ("--set-string", "set_strings"),
    ("--set-json", "set_jsons"),
    ("--set-file", "set_files"),
    ("--set-literal", "set_literals"),
)


def helm_values(helm: str, chart: Path, sources: ValueSources) -> str:
    command = [helm, "template", "r", str(chart)]
    for path in sources.files:
        command += ["-f", str(path)]
    # Interleaved on purpose: Helm applies them by kind, not by position.
    for flag, field in reversed(FLAG_FIELDS):
        for expression in getattr(sources, field):
            command += [flag, expression]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        return "ERROR " + result.stderr
    match = re.search(r"^  v: (\S+)$", result.stdout, re.MULTILINE)
    assert match is not None, result.stdout
    return base64.b64decode(match.group(1)).decode("utf-8")


@pytest.mark.timeout(1200)  # hundreds of helm runs; the suite default is 300 s
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    case=st.tuples(
        st.lists(st.lists(document(), min_size=1, max_size=2), max_size=2),
        st.lists(set_expression(), max_size=2),
        st.lists(set_expression(), max_size=1),
        st.lists(json_expression(), max_size=2),
        st.lists(file_expression(), max_size=1),
        st.lists(literal_expression(), max_size=1),
    )
)
def test_values_equal_helms_to_json(
    helm: str,
    oracle: Path,
    tmp_path: Path,
    case: tuple[list[list[str]], list[str], list[str], list[str], list[str], list[str]],
) -> None:
    documents, sets, strings, jsons, set_files, literals = case
    STATS["examples"] += 1
    files = []
    for index, docs in enumerate(documents):
        path = tmp_path / f"values-{index}.yaml"
        path.write_text("---\n".join(docs), encoding="utf-8")
        note(f"{path.name}:\n{path.read_text(encoding='utf-8')}")
        files.append(path)
    for index, content in enumerate(FILE_CONTENTS):
        (tmp_path / f"file-{index}").write_text(content, encoding="utf-8")
    set_files = [
        re.sub(r"@(\d)", lambda m: str(tmp_path / f"file-{m.group(1)}"), expression)
        for expression in set_files
    ]
    note(f"flags: {sets=} {strings=} {jsons=} {set_files=} {literals=}")
    sources = ValueSources(
        files=files,
        sets=sets,
        set_strings=strings,
        set_jsons=jsons,
        set_files=set_files,
        set_literals=literals,
    )
    chart = load_chart(oracle)
    try:
        user, _ = user_values(sources)
        ours = marshal(coalesce(chart.values, user))
    except UnmirrorableError:
        STATS["unmirrorable"] += 1
        return  # refused on purpose (documented limit)
    except JobhashError as err:
        ours = f"ERROR {err}"
    theirs = helm_values(helm, oracle, sources)
    if ours.startswith("ERROR") or theirs.startswith("ERROR"):
        assert ours.startswith("ERROR") and theirs.startswith("ERROR"), (ours, theirs)
        STATS["refused"] += 1
        for flag, _ in FLAG_FIELDS:  # the error names the flag Helm names
            if f"failed parsing {flag} data" in theirs:
                assert f"failed parsing {flag} data" in ours, (ours, theirs)
    else:
        assert ours == theirs
        STATS["equal"] += 1


STATS = {"examples": 0, "equal": 0, "refused": 0, "unmirrorable": 0}


def test_values_parity_stats_are_meaningful() -> None:
    """Runs after the property test: most examples must load on both sides."""
    if STATS["examples"] == 0:
        pytest.skip("the values parity property test did not run in this session")
    assert STATS["equal"] >= STATS["examples"] // 3, STATS
    assert STATS["unmirrorable"] <= STATS["examples"] // 10, STATS
    print(f"values parity stats: {STATS}")
