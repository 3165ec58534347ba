"""One parity example (``test_parity.py``) as both sides get it: the values files, the
``--set``, ``--set-string``, ``--set-json``, ``--set-file`` and ``--set-literal`` overrides
aimed at the generated groups and jobs, and a release name (long ones included)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from jobhash.values import ValueSources
from tests.integration.parity_values import (
    dns_label,
    env_name,
    extra_file,
    groups,
    job_settings,
    long_label,
    share_anchors,
    text,
)
from tests.integration.parity_yaml import emit

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
