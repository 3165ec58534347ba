"""Read a values file the way Helm v4.3.1 does, down to the Go types of the result.

The Helm path being mirrored::

    loader.LoadValues            split the file on "---" lines (k8s YAMLReader), merge documents
      sigs.k8s.io/yaml.Unmarshal per document:
        go.yaml.in/yaml/v2       YAML 1.1 scalar resolution (resolve.go), anchors, "<<" merges
        convertToJSONableObject  non-string keys -> strings (ints decimal, floats as float32 %g)
        json.Marshal + Unmarshal every number becomes a float64; NaN/Inf are errors

One module per step: :mod:`jobhash.goyaml_compose` (events -> nodes, the depth cap),
:mod:`jobhash.goyaml_resolve` (YAML 1.1 scalars), :mod:`jobhash.goyaml_decode` (nodes -> Go
values -> JSON) and :mod:`jobhash.goyaml_fast` (the common cases without a node tree); this
module splits a file into documents and merges them.

Events come from PyYAML's libyaml parser (goyaml v2 is a Go port of libyaml); everything after
the events (composition, tag resolution, decoding, key conversion) is written in these modules to
follow the Go code, not PyYAML's constructors, which resolve YAML 1.1 differently.

Where libyaml and go-yaml v2 disagree: go-yaml has no ``\\/`` escape (an error here too) but
reads ``\\'`` in a double-quoted string (refused here). Also refused with
:class:`~jobhash.errors.UnmirrorableError`: ``!!binary`` and explicit ``!!timestamp`` tags,
UTF-16 files, and keys that only differ before stringification (``1`` and ``"1"``), for which
Helm's result depends on Go's random map order. tests/integration/test_values_parity.py checks
all of this against Helm's own ``toJson .Values``.
"""

from __future__ import annotations

from typing import Any

from jobhash.errors import ValuesError
from jobhash.gojson import GoValue
from jobhash.goyaml_compose import MAX_VALUE_DEPTH, _compose, _decode_text
from jobhash.goyaml_decode import _Decoder, _to_json_values
from jobhash.goyaml_fast import _fast_unmarshal, _json_unmarshal


def deeper_than(value: Any, cap: int) -> bool:
    """Do maps and lists nest more than ``cap`` levels in ``value``? (Without recursion.)"""
    if type(value) not in (dict, list):
        return cap < 0  # a scalar holds no level
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > cap:
            return True
        children = item.values() if type(item) is dict else item
        stack.extend((c, depth + 1) for c in children if type(c) in (dict, list))
    return False


def unmarshal_document(data: bytes, source: str, line_offset: int = 0) -> dict[str, GoValue]:
    """``sigs.k8s.io/yaml.Unmarshal(data, &map[string]any{})`` for one YAML document."""
    text = _decode_text(data, source)
    fast = _json_unmarshal(text)
    if fast is None:
        fast = _fast_unmarshal(text)
    if fast is not None and not deeper_than(fast, MAX_VALUE_DEPTH):
        return fast
    # Also a value too deep: the full path refuses it, naming the line and the cap.
    return _full_unmarshal(text, source, line_offset)


def _full_unmarshal(text: str, source: str, line_offset: int) -> dict[str, GoValue]:
    """Every case: compose a node tree, decode it as go-yaml does, then the JSON trip."""
    root = _compose(text, source, line_offset)
    if root is None:
        return {}
    decoded = _Decoder(source).unmarshal(root)
    value = _to_json_values(decoded, source, "")
    if value is None:
        return {}
    if not isinstance(value, dict):
        kind = "list" if isinstance(value, list) else type(value).__name__
        raise ValuesError(
            f"the document is a {kind}, not a map of values",
            source=source,
            fix="a values file must be a YAML map (key: value) at the top level",
        )
    return value


def split_documents(data: bytes, source: str) -> list[tuple[bytes, int]]:
    """k8s.io/apimachinery YAMLReader: split on lines that start with ``---``.

    Returns (document bytes, line offset) pairs; empty documents are dropped. A separator
    followed by anything but a comment is an error, as in Helm (``--- {a: 1}`` fails).
    """
    if data and not data.endswith(b"\n"):
        data += b"\n"
    docs: list[tuple[bytes, int]] = []
    buffer: list[bytes] = []
    start = 0
    # LineReader: lines end at "\n"; bufio.ReadLine drops a "\r" right before it.
    lines = [line.removesuffix(b"\r") + b"\n" for line in data.split(b"\n")[:-1]]
    for number, line in enumerate(lines):
        if line.startswith(b"---"):
            rest = line[3:].strip()
            if rest and not rest.startswith(b"#"):
                raise ValuesError(
                    f"line {number + 1}: invalid Yaml document separator: "
                    f"{rest.decode('utf-8', 'replace')}",
                    source=source,
                    fix="put the document content on the line after '---'",
                )
            if buffer:
                docs.append((b"".join(buffer), start))
            buffer = []
            start = number + 1
            continue
        if not buffer:
            start = number
        buffer.append(line)
    if buffer:
        docs.append((b"".join(buffer), start))
    return docs


def merge_maps(base: dict[str, GoValue], over: dict[str, GoValue]) -> dict[str, GoValue]:
    """Helm ``loader.MergeMaps``: maps merge recursively, anything else in ``over`` replaces."""
    out = dict(base)
    for key, value in over.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge_maps(current, value)
        else:
            out[key] = value
    return out


def load_values(data: bytes, source: str) -> dict[str, GoValue]:
    """Helm ``loader.LoadValues``: every document of a values file, merged in order."""
    values: dict[str, GoValue] = {}
    for document, offset in split_documents(data, source):
        values = merge_maps(values, unmarshal_document(document, source, offset))
    return values
