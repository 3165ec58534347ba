"""Parity: for generated jobGroups, every Job/CronJob name jobhash predicts is the one
the real `helm template` renders, the full spec hash matches too, and so does the whole
rendered Job spec (a CronJob's whole jobTemplate), labels and annotations of the pod template
included: that is what `jobhash diff` compares to tell a refused update.

The real Helm is the oracle. Each example is one values file written as YAML text (raw YAML
1.1 scalars such as `y`, `on`, `0o17`, `1e3`, `2001-12-14` included, strings with `<>&`,
U+2028, control characters, emoji and other non-ASCII), plus `--set`, `--set-string`,
`--set-json`, `--set-file` and `--set-literal` overrides (given to helm interleaved; both
apply them in Helm's order) and a release name (long ones included). Many groups and jobs go
into one helm call.

When Helm refuses the input (schema, a chart `fail`, a YAML error), jobhash must refuse it too,
and a chart `fail` message jobhash reports must appear in Helm's error. jobhash may refuse
input it cannot mirror (UnmirrorableError); the generator avoids those, and the test checks
they stay rare. Example count: JOBHASH_PARITY_EXAMPLES (default 300).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from jobhash.errors import RenderError, UnmirrorableError, ValuesError
from jobhash.gojson import marshal
from jobhash.goyaml import unmarshal_document
from jobhash.plan import PlanItem, plan
from jobhash.spec import job_group_template_labels
from jobhash.values import ValueSources, load, load_chart
from tests.conftest import require_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "charts" / "autoroll"
EXAMPLES = int(os.environ.get("JOBHASH_PARITY_EXAMPLES", "300"))
# CI replays the same examples (derandomize); set JOBHASH_PARITY_RANDOM=1 to explore new ones.
RANDOM = os.environ.get("JOBHASH_PARITY_RANDOM", "") == "1"
HASH_ANNOTATION = "autoroll.aethnet.se/spec-hash"


# ---------------------------------------------------------------------------------------------
# YAML text: scalars are written by hand so raw YAML 1.1 forms reach Helm unchanged.


@dataclass(frozen=True)
class Raw:
    """A plain (unquoted) YAML scalar, resolved by the parser: `y`, `0o17`, `1e3`, …"""

    text: str


@dataclass(frozen=True)
class Anchored:
    """A value written with an anchor (``&name``), to be reused by an :class:`Alias`."""

    name: str
    value: Any


@dataclass(frozen=True)
class Alias:
    """``*name``: a copy of the anchored value."""

    name: str


MERGE = "<<"  # a dict key written unquoted: a YAML 1.1 merge key


def quote(text: str) -> str:
    """A double-quoted YAML scalar holding exactly ``text``."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF):
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    assert isinstance(value, str)
    return quote(value)


def emit(value: Any, indent: int = 0) -> str:
    """Block-style YAML for nested dicts/lists; every key is double-quoted but ``<<``."""
    pad = "  " * indent
    if isinstance(value, Alias):
        return f"*{value.name}"
    if isinstance(value, Anchored):
        inner = value.value
        if isinstance(inner, dict | list) and inner:
            return f"&{value.name}\n{emit(inner, indent)}"
        return f"&{value.name} {emit(inner, indent)}"
    if isinstance(value, dict):
        if not value:
            return "{}"
        lines = []
        for key, item in value.items():
            name = MERGE if key == MERGE else key.text if isinstance(key, Raw) else quote(key)
            block = (isinstance(item, dict | list) and item) or (
                isinstance(item, Anchored) and isinstance(item.value, dict | list) and item.value
            )
            if block and not isinstance(item, Anchored):
                lines.append(f"{pad}{name}:\n{emit(item, indent + 1)}")
            else:
                lines.append(f"{pad}{name}: {emit(item, indent + 1)}")
        return "\n".join(lines)
    if isinstance(value, list):
        if not value:
            return "[]"
        lines = []
        for item in value:
            if isinstance(item, dict) and item:
                body = emit(item, indent + 1).lstrip()
                lines.append(f"{pad}- {body}")
            elif isinstance(item, list) and item:
                lines.append(f"{pad}-\n{emit(item, indent + 1)}")
            else:
                lines.append(f"{pad}- {emit(item, indent + 1)}")
        return "\n".join(lines)
    return scalar(value)


# ---------------------------------------------------------------------------------------------
# Strategies

TRICKY = "<>&\u2028\u2029\x01\x1f\b\f\t\n\r\x7f\x85éß日本😀🙂\"\\'#:,{}[]-. $"
text = st.text(
    alphabet=st.one_of(
        st.sampled_from(TRICKY),
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(min_codepoint=0xA0, max_codepoint=0x2FFFF, exclude_categories=["Cs"]),
    ),
    max_size=12,
)
RAW_SCALARS = [
    "y", "Y", "yes", "n", "NO", "on", "Off", "true", "False", "~", "null",
    "0o17", "0x1F", "017", "08", "0b101", "1e3", "1E3", ".5", "-.5", "1.", "1_000",
    "2001-12-14", "2001-12-14 21:59:43.10", "12:30", "1e400", "-0", "-0.0", "+5",
    "1e21", "1e-7", "9223372036854775807", "123456789012345678901234", "tRue", "abc",
]  # fmt: skip
numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([1e21, 1e-7, -0.0, 0.1, 1.5, 1e20, 100000000.0, 1e300, 5e-324, 1e-6]),
    st.floats(allow_nan=False, allow_infinity=False),
)
env_scalar = st.one_of(text, numbers, st.booleans(), st.sampled_from(RAW_SCALARS).map(Raw))
any_scalar = st.one_of(text, numbers, st.booleans(), st.sampled_from(RAW_SCALARS).map(Raw))
dns_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?\Z")
long_label = st.from_regex(r"\A[a-z]([-a-z0-9]{20,40}[a-z0-9])\Z")
key_name = st.one_of(dns_label, long_label)
env_name = st.from_regex(r"\A[-._a-zA-Z][-._a-zA-Z0-9]{0,10}\Z")
string_map = st.dictionaries(st.from_regex(r"\A[a-z][-a-z0-9./]{0,12}\Z"), text, max_size=3)
nested: st.SearchStrategy[Any] = st.recursive(
    any_scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.from_regex(r"\A[a-zA-Z][a-zA-Z0-9]{0,8}\Z"), children, max_size=3),
    ),
    max_leaves=6,
)
object_map = st.dictionaries(st.from_regex(r"\A[a-zA-Z][a-zA-Z0-9]{0,8}\Z"), nested, max_size=3)
object_list = st.lists(object_map, max_size=2)
argv = st.one_of(text, st.lists(text, max_size=3))
image = st.fixed_dictionaries(
    {},
    optional={
        "repository": st.one_of(st.just("my/migrator"), text.filter(bool)),
        "tag": st.one_of(
            st.sampled_from(["v1", "v2", "sha256:" + "a" * 64, "dev@sha256:" + "b" * 64, ""]),
            text,
            st.sampled_from(["2001-12-14", "1e3", "y"]).map(Raw),
        ),
        "pullPolicy": st.sampled_from(["", "Always", "IfNotPresent", "Never"]),
    },
)
# Unquoted keys that YAML 1.1 resolves to bools, numbers or null before Helm stringifies them.
RAW_KEYS = ["y", "on", "No", ".inf", "-.inf", "1e3", "0x1F", "12", "~", "2001-12-14"]
env = st.dictionaries(
    st.one_of(env_name, st.sampled_from(RAW_KEYS).map(Raw)),
    st.one_of(
        env_scalar,
        st.fixed_dictionaries({"valueFrom": st.just({"secretKeyRef": {"name": "s", "key": "k"}})}),
    ),
    max_size=4,
)
delete_policy = st.one_of(
    st.sampled_from(["BeforeHookCreation", "HookSucceeded", "HookFailed, HookSucceeded", ""]),
    st.lists(st.sampled_from(["BeforeHookCreation", "HookSucceeded", " HookFailed "]), max_size=2),
)
hooks = st.fixed_dictionaries(
    {},
    optional={
        "argocd": st.fixed_dictionaries(
            {},
            optional={
                "hook": st.sampled_from(["PreSync", "Sync"]),
                "deletePolicy": delete_policy,
                "syncWave": st.one_of(st.integers(-5, 5), st.sampled_from(["1", "-2"])),
            },
        ),
        "helm": st.fixed_dictionaries(
            {},
            optional={
                "hook": st.sampled_from(["pre-install,pre-upgrade"]),
                "deletePolicy": st.sampled_from(
                    ["before-hook-creation", "hook-succeeded", "hook-failed,hook-succeeded"]
                ),
                "weight": st.integers(-5, 5),
            },
        ),
    },
)
# The schema's message-only alternative for an imagePullSecrets entry: the schema accepts it, so
# the chart's own check (autoroll.jobs.checkPullSecrets) refuses it, and jobhash must too.
PULL_SECRETS_MESSAGE = json.loads((CHART_DIR / "values.schema.json").read_text(encoding="utf-8"))[
    "definitions"
]["imagePullSecrets"]["items"]["anyOf"][1]["const"]
secret_name = st.sampled_from(["regcred", "other-registry", "a.b", "r1"])


@st.composite
def pull_secret(draw: st.DrawFn) -> Any:
    """Mostly a well-formed ``{name: ...}``; now and then a shape the schema or chart refuses."""
    roll = draw(st.integers(0, 19))
    if roll == 0:
        return draw(st.sampled_from(["regcred", PULL_SECRETS_MESSAGE]))
    if roll == 1:
        return {"name": draw(text)}
    if roll == 2:
        return {"name": draw(secret_name), "namespace": "x"}
    return {"name": draw(secret_name)}


task = st.fixed_dictionaries(
    {"name": dns_label},
    optional={"image": image, "command": argv, "args": argv, "env": env},
)
settings_fields: dict[str, st.SearchStrategy[Any]] = {
    "enabled": st.booleans(),
    "image": image,
    "command": argv,
    "args": argv,
    "tasks": st.lists(task, max_size=2),
    "env": env,
    "envSecrets": st.lists(st.sampled_from(["s1", "s2", "db"]), max_size=2),
    "envConfigMaps": st.lists(st.sampled_from(["c1", "c2"]), max_size=2),
    "volumes": object_list,
    "volumeMounts": object_list,
    "resources": object_map,
    "securityContext": object_map,
    "podSecurityContext": object_map,
    "nodeSelector": string_map,
    "affinity": object_map,
    "tolerations": object_list,
    "topologySpreadConstraints": object_list,
    "serviceAccountName": text,
    "imagePullSecrets": st.lists(pull_secret(), max_size=2),
    "restartPolicy": st.sampled_from(["Never", "OnFailure"]),
    "backoffLimit": st.integers(0, 10),
    "activeDeadlineSeconds": st.sampled_from([1, 600, 10**15]),
    "ttlSecondsAfterFinished": st.integers(0, 3600),
    "podAnnotations": string_map,
    "metadataAnnotations": string_map,
    "hashSuffix": st.booleans(),
    "hashIncludePodAnnotations": st.booleans(),
    "hooks": hooks,
    "schedule": st.sampled_from(["", "30 3 * * *", "@daily"]),
    "timeZone": st.just("Etc/UTC"),
    "concurrencyPolicy": st.sampled_from(["Allow", "Forbid", "Replace"]),
    "suspend": st.booleans(),
}


@st.composite
def job_settings(draw: st.DrawFn, fields: int) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(sorted(settings_fields)), max_size=fields))
    return {name: draw(settings_fields[name]) for name in chosen}


@st.composite
def groups(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group in draw(st.lists(key_name, min_size=1, max_size=4, unique=True)):
        settings_ = draw(job_settings(3))
        # Most groups get an image so that most entries render.
        if draw(st.integers(0, 9)) < 8:
            settings_["image"] = {"repository": "my/migrator", "tag": draw(st.sampled_from(
                ["v1", "v2", "sha256:" + "c" * 64]))}  # fmt: skip
        jobs = draw(st.lists(key_name, min_size=1, max_size=4, unique=True))
        settings_["jobs"] = {job: draw(job_settings(4)) for job in jobs}
        out[group] = settings_
    return out


release_names = st.one_of(
    st.sampled_from(["demo", "autoroll", "my-autoroll-prod", "r"]),
    st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?\Z"),
    st.from_regex(r"\A[a-z]{1,10}\.[a-z]{1,10}\Z"),
)
set_text = text.filter(lambda s: "\x00" not in s)


def set_escape(value: str) -> str:
    """Escape a --set value so strvals reads it back verbatim."""
    escaped = value.replace("\\", "\\\\").replace(",", "\\,")
    return "\\" + escaped if escaped.startswith("{") else escaped


def key_escape(key: str) -> str:
    out = []
    for char in key:
        out.append("\\" + char if char in "\\.[],=" else char)
    return "".join(out)


# --set-file contents (named @N in an expression, replaced by the file's path per example).
FILE_CONTENTS = ["v3", "with,comma", "line\n", "", "é😀 <>&", "true", "3", "1.5"]
JSON_VALUES = ['"v4"', "7", "1.5", "true", "null", '"a,b"', '["x","y"]', '"<>&\\u2028"',
               "1e21", "-0", '{"k":"v"}', "[]"]  # fmt: skip
#: JSON strings: what --set-json mostly sends to the string fields, so most examples render.
JSON_TEXT = ['"v4"', '"a,b"', '"<>&\\u2028"', '"007"']


@dataclass(frozen=True)
class Overrides:
    sets: list[str] = field(default_factory=list)
    set_strings: list[str] = field(default_factory=list)
    set_jsons: list[str] = field(default_factory=list)
    set_files: list[str] = field(default_factory=list)
    set_literals: list[str] = field(default_factory=list)


@st.composite
def overrides(draw: st.DrawFn, jobgroups: dict[str, Any]) -> Overrides:
    out = Overrides()
    entries = [(g, j) for g, body in jobgroups.items() for j in body["jobs"]]
    for _ in range(draw(st.integers(0, 4))):
        group, job = draw(st.sampled_from(entries))
        flag = draw(st.integers(0, 9))
        # --set-file and --set-literal give strings: aim them mostly at string fields, so
        # most examples still render (a string backoffLimit only tests the schema again).
        text_targets = [
            f"jobGroups.{group}.image.tag",
            f"jobGroups.{group}.jobs.{job}.env.{{name}}",
            "jobDefaults.env.{name}",
            f"jobGroups.{group}.jobs.{job}.command",
            f"jobGroups.{group}.jobs.{job}.args[0]",
            f"jobGroups.{group}.jobs.{job}.podAnnotations.{{name}}",
            f"jobGroups.{group}.jobs.{job}.imagePullSecrets[0].name",
        ]
        targets = [
            *text_targets,
            f"jobGroups.{group}.jobs.{job}.backoffLimit",
            f"jobGroups.{group}.hashSuffix",
            "fullnameOverride",
            "nameOverride",
        ]
        target = draw(st.sampled_from(text_targets if flag >= 7 else targets))
        key = target.replace("{name}", key_escape(draw(env_name)))
        if flag < 3:
            value = draw(
                st.one_of(
                    st.sampled_from(
                        [
                            "3",
                            "-5",
                            "007",
                            "1.5",
                            "true",
                            "FALSE",
                            "0",
                            "v9",
                            "null",
                            "9223372036854775807",
                            "-9223372036854775808",
                            "{a,b}",
                        ]
                    ),
                    set_text.map(set_escape),
                )
            )
            out.sets.append(f"{key}={value}")
        elif flag < 5:
            out.set_strings.append(f"{key}={set_escape(draw(set_text))}")
        elif flag < 7:
            if draw(st.integers(0, 4)) == 0:  # the whole-object form, merged like a file
                whole = {"jobGroups": {group: {"image": {"tag": "j1"}}}}
                out.set_jsons.append(json.dumps(whole))
            else:
                # Mostly a JSON string for a string field; any JSON value now and then.
                textual = target in text_targets and draw(st.integers(0, 3)) > 0
                choices = JSON_TEXT if textual else JSON_VALUES
                out.set_jsons.append(f"{key}={draw(st.sampled_from(choices))}")
        elif flag < 9:
            index = draw(st.integers(0, len(FILE_CONTENTS) - 1))
            out.set_files.append(f"{key}=@{index}")
        elif "\\" not in key:  # a literal key has no escapes: only keys without a backslash
            out.set_literals.append(f"{key}={draw(set_text)}")
    return out


@dataclass
class Case:
    release: str
    values: dict[str, Any]
    flags: Overrides = field(default_factory=Overrides)
    extra: list[dict[str, Any]] = field(default_factory=list)  # later -f files
    documents: int = 1  # the first file split into this many YAML documents

    def sources(self, directory: Path, files: list[Path]) -> ValueSources:
        """The value sources, with every --set-file placeholder turned into a written file."""
        for index, content in enumerate(FILE_CONTENTS):
            (directory / f"file-{index}").write_text(content, encoding="utf-8")
        set_files = [
            re.sub(r"@(\d)", lambda m: str(directory / f"file-{m.group(1)}"), expression)
            for expression in self.flags.set_files
        ]
        return ValueSources(
            files=files,
            sets=self.flags.sets,
            set_strings=self.flags.set_strings,
            set_jsons=self.flags.set_jsons,
            set_files=set_files,
            set_literals=self.flags.set_literals,
        )

    def files(self, directory: Path) -> list[Path]:
        """Write the values files; the first may be split into several documents."""
        paths = []
        first = directory / "values.yaml"
        if self.documents > 1 and len(self.values) > 1:
            keys = list(self.values)
            cut = max(1, len(keys) // 2)
            parts = [dict(list(self.values.items())[:cut]), dict(list(self.values.items())[cut:])]
            first.write_text("\n---\n".join(emit(p) for p in parts) + "\n", encoding="utf-8")
        else:
            first.write_text(emit(self.values) + "\n", encoding="utf-8")
        paths.append(first)
        for index, extra in enumerate(self.extra):
            path = directory / f"extra-{index}.yaml"
            path.write_text(emit(extra) + "\n", encoding="utf-8")
            paths.append(path)
        return paths


@st.composite
def cases(draw: st.DrawFn) -> Case:
    jobgroups = draw(groups())
    values: dict[str, Any] = {"controller": {"enabled": False}, "jobGroups": jobgroups}
    if draw(st.booleans()):
        values["jobDefaults"] = draw(job_settings(3))
    if draw(st.integers(0, 9)) == 0:
        # A 63-character label: the name budget cuts it, often right after a "-".
        full = st.just("x-" * 31 + "x")
        values["fullnameOverride"] = draw(st.one_of(dns_label, long_label, full))
    if draw(st.integers(0, 9)) == 0:
        # DNS-1123 labels (the schema refuses others), some that YAML would read as another
        # type if the chart did not quote the label, and now and then a refused one.
        odd = st.sampled_from(["on", "y", "0", "123", "a: b", "Ünï"])
        values["nameOverride"] = draw(st.one_of(dns_label, odd))
    if draw(st.integers(0, 4)) == 0:
        share_anchors(draw, jobgroups)
    flags = draw(overrides(jobgroups))
    extra = draw(st.lists(extra_file(jobgroups), max_size=2))
    documents = draw(st.sampled_from([1, 1, 2]))
    return Case(draw(release_names), values, flags, extra, documents)


def share_anchors(draw: st.DrawFn, jobgroups: dict[str, Any]) -> None:
    """Anchor the first group's image and reuse it: as an alias and through a merge key."""
    names = list(jobgroups)
    first = jobgroups[names[0]]
    if "image" not in first:
        return
    first["image"] = Anchored("img", first["image"])
    for other in names[1:]:
        if draw(st.booleans()):
            jobgroups[other]["image"] = Alias("img")
        else:
            jobgroups[other]["image"] = {MERGE: Alias("img"), "tag": "merged"}


# What a later -f file may do: delete chart defaults with null, deep-merge into groups.
DEFAULT_KEYS = ["image", "env", "restartPolicy", "hashSuffix", "command", "hooks", "tasks",
                "imagePullSecrets"]  # fmt: skip


@st.composite
def extra_file(draw: st.DrawFn, jobgroups: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    choice = draw(st.integers(0, 4))
    if choice == 4:
        # top-level nulls delete the chart's defaults entirely
        out = {key: None for key in draw(st.lists(st.sampled_from(["jobDefaults", "jobGroups"])))}
    elif choice == 0:
        out["jobDefaults"] = {key: None for key in draw(st.lists(st.sampled_from(DEFAULT_KEYS)))}
    elif choice == 1:
        out["jobDefaults"] = draw(job_settings(2))
    else:
        group = draw(st.sampled_from(sorted(jobgroups)))
        job = draw(st.sampled_from(sorted(jobgroups[group]["jobs"])))
        out["jobGroups"] = {group: {"jobs": {job: draw(job_settings(2))}}}
        if choice == 3:
            out["jobGroups"][group]["image"] = draw(image)
    return out


# ---------------------------------------------------------------------------------------------
# The two sides


@dataclass(frozen=True)
class Rendered:
    ok: bool
    names: frozenset[tuple[str, str, str]]  # (kind, name, full spec hash)
    error: str
    unmirrorable: bool = False
    template_fail: bool = False
    # (kind, name) -> the JSON of the Job .spec, or of the CronJob's whole jobTemplate
    specs: dict[tuple[str, str], str] = field(default_factory=dict)


FLAG_FIELDS = (
    ("--set-literal", "set_literals"),
    ("--set-file", "set_files"),
    ("--set-string", "set_strings"),
    ("--set", "sets"),
    ("--set-json", "set_jsons"),
)  # reversed: Helm must sort them itself


def render_helm(helm: str, case: Case, sources: ValueSources) -> Rendered:
    command = [helm, "template", case.release, str(CHART_DIR)]
    for path in sources.files:
        command += ["-f", str(path)]
    for flag, name in FLAG_FIELDS:
        for expression in getattr(sources, name):
            command += [flag, expression]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        return Rendered(False, frozenset(), result.stderr)
    return Rendered(
        True, frozenset(manifest_names(result.stdout)), "", specs=manifest_specs(result.stdout)
    )


_KIND = re.compile(r"^kind: (Job|CronJob)$", re.MULTILINE)
_NAME = re.compile(r'^metadata:\n  name: "(.*)"$', re.MULTILINE)  # written with quote
_FULL_HASH = re.compile(
    r"^    autoroll\.aethnet\.se/spec-hash: \"?([0-9a-f]{64})\"?$", re.MULTILINE
)
_SHORT_HASH = re.compile(r"^    autoroll\.aethnet\.se/spec-hash: \"([0-9a-f]{8})\"$", re.MULTILINE)


def manifest_names(stream: str) -> set[tuple[str, str, str]]:
    """(kind, name, hash) of every Job/CronJob in `helm template` output.

    Read with regular expressions, not a YAML parser, so a document the YAML side would read
    differently cannot hide a wrong name; the full hash is taken as its 8-character label when
    the annotations are missing.
    """
    found = set()
    for document in re.split(r"^---$", stream, flags=re.MULTILINE):
        kind = _KIND.search(document)
        if kind is None:
            continue
        name = _NAME.search(document)
        assert name is not None, document
        full = _FULL_HASH.search(document)
        short = _SHORT_HASH.search(document)
        assert short is not None, document
        found.add((kind.group(1), name.group(1), full.group(1) if full else short.group(1)))
    return found


def manifest_specs(stream: str) -> dict[tuple[str, str], str]:
    """(kind, name) -> Go JSON of the Job's spec / the CronJob's jobTemplate, read back the way
    Helm and Kubernetes read YAML (go-yaml, numbers as float64: jobhash.goyaml)."""
    found = {}
    for document in re.split(r"^---$", stream, flags=re.MULTILINE):
        if _KIND.search(document) is None:
            continue
        body = document.split("\n", 1)[1] if document.startswith("\n#") else document
        doc = unmarshal_document(body.encode("utf-8"), "helm output")
        meta = doc["metadata"]
        assert isinstance(meta, dict) and isinstance(doc["spec"], dict), doc
        part = doc["spec"] if doc["kind"] == "Job" else doc["spec"]["jobTemplate"]
        found[(str(doc["kind"]), str(meta["name"]))] = marshal(part)
    return found


def rendered_part(item: PlanItem) -> str:
    """jobhash's Job spec, or the CronJob's jobTemplate (its labels, then the Job spec)."""
    spec = item.job_spec()
    if item.kind == "Job":
        return marshal(spec)
    labels = job_group_template_labels(item.group, item.job, item.hash)
    return marshal({"metadata": {"labels": labels}, "spec": spec})


CHART = load_chart(CHART_DIR)
# pull_secrets: rendered entries whose pod spec has imagePullSecrets (the key is exercised).
STATS = {"examples": 0, "rendered": 0, "refused": 0, "unmirrorable": 0, "entries": 0,
         "pull_secrets": 0}  # fmt: skip


def render_jobhash(case: Case, sources: ValueSources) -> Rendered:
    try:
        items = plan(load(CHART, sources).values, release=case.release, chart_name=CHART.name)
    except UnmirrorableError as err:
        return Rendered(False, frozenset(), str(err), unmirrorable=True)
    except RenderError as err:
        return Rendered(False, frozenset(), err.message, template_fail=True)
    except ValuesError as err:
        return Rendered(False, frozenset(), str(err))
    return Rendered(
        True,
        frozenset((i.kind, i.name, i.hash) for i in items),
        "",
        specs={(i.kind, i.name): rendered_part(i) for i in items},
    )


@pytest.fixture(scope="module")
def helm() -> str:
    return require_tool("helm")


@pytest.mark.timeout(1200)  # hundreds of helm runs; the suite default is 300 s
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)  # fmt: skip
@given(case=cases())
def test_jobhash_names_equal_helm_template(helm: str, tmp_path: Path, case: Case) -> None:
    files = case.files(tmp_path)
    for path in files:
        note(f"{path.name}:\n{path.read_text(encoding='utf-8')}")
    sources = case.sources(tmp_path, files)
    note(f"flags: {case.flags}")
    ours = render_jobhash(case, sources)
    STATS["examples"] += 1
    if ours.unmirrorable:
        STATS["unmirrorable"] += 1
        return
    theirs = render_helm(helm, case, sources)
    assert ours.ok == theirs.ok, (
        f"helm {'rendered' if theirs.ok else 'failed'} but jobhash "
        f"{'rendered' if ours.ok else 'failed'}:\njobhash: {ours.error}\nhelm: {theirs.error}"
    )
    if ours.ok:
        STATS["rendered"] += 1
        STATS["entries"] += len(ours.names)
        STATS["pull_secrets"] += sum('"imagePullSecrets":' in spec for spec in ours.specs.values())
        helm_short = {entry for entry in theirs.names if len(entry[2]) == 8}
        ours_comparable = {
            (kind, name, digest[:8]) if (kind, name, digest[:8]) in helm_short else entry
            for entry in ours.names
            for kind, name, digest in [entry]
        }
        assert ours_comparable == theirs.names
        assert ours.specs == theirs.specs
    else:
        STATS["refused"] += 1
        if ours.template_fail:
            # The chart's own fail message, verbatim (Helm may wrap it in template context).
            assert ours.error in theirs.error.replace("\n", " ")


def test_parity_stats_are_meaningful() -> None:
    """Runs after the property test (file order): most examples must really render."""
    if STATS["examples"] == 0:
        pytest.skip("the parity property test did not run in this session")
    assert STATS["examples"] >= EXAMPLES
    # Measured 30-46% rendered across sessions (the rest are refusals both sides agree on).
    assert STATS["rendered"] >= STATS["examples"] // 4, STATS
    assert STATS["unmirrorable"] <= STATS["examples"] // 20, STATS
    if EXAMPLES >= 300:  # the locked tier's count; the lowest tier's 100 drew none (measured)
        assert STATS["pull_secrets"] > 0, STATS
    print(f"parity stats: {STATS}")
