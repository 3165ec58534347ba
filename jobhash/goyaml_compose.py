"""Composition: libyaml's events -> a node tree, as go-yaml v2's ``parser.go`` builds it.

Events come from PyYAML's libyaml parser (go-yaml v2 is a Go port of libyaml). Also here: the
text of a document (UTF-8 only), the ``\\/`` and ``\\'`` escapes on which the two disagree,
syntax errors worded with their line, and the depth cap (:data:`MAX_VALUE_DEPTH`), checked
while the tree is built, before anything recurses into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from jobhash.errors import UnmirrorableError, ValuesError

_CParser: Any
try:
    from yaml._yaml import CParser as _CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _CParser = None


class _PureParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python event parser, used only when libyaml is missing."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _make_parser(data: str) -> Any:
    if _CParser is None:  # pragma: no cover - PyYAML built without libyaml
        return _PureParser(data)
    return _CParser(data)


#: Deepest nesting of maps and lists jobhash follows, aliases expanded (a real values file
#: is about ten deep). Every later step (decode, merge, copy, hash) recurses once per level,
#: so a value nested ~500 deep behind an alias would end in Python's RecursionError; Helm
#: would render it, jobhash refuses it with this cap instead (``UnmirrorableError``).
MAX_VALUE_DEPTH = 100


@dataclass(eq=False)
class _Node:
    kind: str  # "scalar" | "mapping" | "sequence" | "alias"
    line: int
    tag: str = ""
    value: str = ""
    implicit: bool = False
    children: list[_Node] = field(default_factory=list)
    alias: _Node | None = None


def _decode_text(data: bytes, source: str) -> str:
    """The document as text: UTF-8 only (go-yaml also reads UTF-16, which Helm's "---"
    splitter cannot handle anyway), a leading byte-order mark dropped."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UnmirrorableError(
            "UTF-16 values files are not supported by jobhash",
            source=source,
            fix="save the file as UTF-8",
        )
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise ValuesError(
            f"invalid UTF-8 at byte {err.start}",
            source=source,
            fix="save the file as UTF-8 (helm rejects it too)",
        ) from err


def _check_escapes(raw: str, line: int, source: str) -> None:
    """go-yaml v2 knows no ``\\/`` escape (libyaml 0.2.5 does): Helm fails on it, so do we."""
    index = 0
    while index < len(raw):
        if raw[index] == "\\":
            if raw[index + 1 : index + 2] == "/":
                raise ValuesError(
                    f"line {line}: found unknown escape character (\\/ in a double-quoted "
                    "string; Helm's YAML parser does not know it)",
                    source=source,
                    fix="write / without the backslash",
                )
            index += 2
            continue
        index += 1


def _event_node(event: Any, text: str, source: str, line: int, anchors: dict[str, _Node]) -> _Node:
    """The node go-yaml's parser.go builds for a node-starting event."""
    if isinstance(event, yaml.AliasEvent):
        target = anchors.get(event.anchor or "")
        if target is None:
            raise ValuesError(
                f"line {line}: unknown anchor '{event.anchor}' referenced",
                source=source,
                fix="define the anchor (&name) before using the alias (*name)",
            )
        return _Node("alias", line, value=event.anchor or "", alias=target)
    if isinstance(event, yaml.ScalarEvent):
        if event.style == '"':
            start: Any = event.start_mark
            end: Any = event.end_mark
            _check_escapes(text[start.index : end.index], line, source)
        return _Node(
            "scalar",
            line,
            tag=event.tag or "",
            value=event.value,
            implicit=bool(event.implicit[0]),
        )
    kind = "sequence" if isinstance(event, yaml.SequenceStartEvent) else "mapping"
    return _Node(kind, line, tag=event.tag or "")


def _compose(text: str, source: str, line_offset: int) -> _Node | None:
    """Compose the first document of ``text``; later documents are never read (go-yaml v2)."""
    parser = _make_parser(text)
    anchors: dict[str, _Node] = {}
    heights: dict[int, int] = {}  # id(node) -> levels of maps and lists, aliases expanded
    stack: list[_Node] = []
    root: _Node | None = None
    try:
        while True:
            event = parser.get_event()
            if isinstance(event, yaml.StreamEndEvent | yaml.DocumentEndEvent):
                break
            if isinstance(event, yaml.DocumentStartEvent):
                _check_version(event, source, line_offset)
                continue
            if isinstance(event, yaml.StreamStartEvent):
                continue
            if isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                done = stack.pop()
                _note_height(done, heights, source)
                if not stack:
                    root = done
                continue
            line = event.start_mark.line + 1 + line_offset
            node = _event_node(event, text, source, line, anchors)
            anchor = getattr(event, "anchor", None)
            if anchor is not None and node.kind != "alias":
                anchors[anchor] = node  # a later anchor of the same name wins, as in libyaml
            if stack:
                stack[-1].children.append(node)
            if node.kind in ("mapping", "sequence"):
                stack.append(node)
            elif not stack:
                root = node
    except yaml.MarkedYAMLError as err:
        raise _syntax_error(err, text, source, line_offset) from err
    except yaml.YAMLError as err:
        raise ValuesError(
            f"YAML error: {err}", source=source, fix="save the file as valid UTF-8 YAML"
        ) from err
    return root


def _note_height(node: _Node, heights: dict[int, int], source: str) -> None:
    """Record how many levels ``node`` holds once it is complete, an alias counting as its
    anchor's (without recursion: each child is complete before its parent); refuse a node
    deeper than ``MAX_VALUE_DEPTH`` before anything recurses into it."""
    deepest = 0
    for child in node.children:
        target = child.alias if child.kind == "alias" and child.alias is not None else child
        deepest = max(deepest, heights.get(id(target), 0))
    height = deepest + 1
    heights[id(node)] = height
    if height > MAX_VALUE_DEPTH:
        raise UnmirrorableError(
            f"line {node.line}: maps and lists nested more than {MAX_VALUE_DEPTH} levels deep"
            f" (aliases expanded); jobhash follows at most {MAX_VALUE_DEPTH}",
            source=source,
        )


def _check_version(event: Any, source: str, line_offset: int) -> None:
    if event.version not in (None, (1, 1)):
        raise ValuesError(
            f"line {event.start_mark.line + 1 + line_offset}: found incompatible YAML "
            "document (Helm reads YAML 1.1 only)",
            source=source,
            fix="remove the %YAML directive",
        )


def _syntax_error(
    err: yaml.MarkedYAMLError, text: str, source: str, line_offset: int
) -> ValuesError:
    mark: Any = err.problem_mark or err.context_mark
    where = f"line {mark.line + 1 + line_offset}: " if mark is not None else ""
    if mark is not None and "\\'" in text[mark.index : mark.index + 2]:
        # go-yaml v2 reads \' in a double-quoted string as ', libyaml refuses it.
        return UnmirrorableError(
            f"{where}the escape \\' in a double-quoted string is not supported by jobhash",
            source=source,
            fix="write ' without the backslash",
        )
    return ValuesError(
        f"{where}YAML syntax error: {err.problem or err.context}",
        source=source,
        fix="fix the YAML syntax (helm would fail to parse this file too)",
    )
