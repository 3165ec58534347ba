"""YAML text for the parity examples (``test_parity.py``), written by hand: plain scalars such as
``y``, ``0o17`` or ``1e3``, anchors, aliases and merge keys reach Helm exactly as written, which
a YAML library's dumper would quote or resolve away."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
