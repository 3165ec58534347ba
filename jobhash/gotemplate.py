"""Go template and Sprig primitives as the chart's templates see them.

Values use the Go types Helm hands the template (:mod:`jobhash.gojson`). Template semantics
that matter and are reproduced here: Sprig ``get`` returns ``""`` for a missing key, ``default``
treats every empty value (``0``, ``false``, ``""``, ``[]``, ``{}``) as missing, and every
``mustToJson | mustFromJson`` round trip turns each number into a float64.

Every ``fail`` in the template raises :class:`~jobhash.errors.RenderError` with the template's
message, verbatim (:func:`_fail`, which adds the fix).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobhash.errors import RenderError
from jobhash.gojson import GoValue

GoMap = dict[str, GoValue]

# unicode.IsSpace: Latin-1 spaces plus the White_Space property (not U+001C..U+001F).
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
GO_SPACE += "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def go_get(mapping: Mapping[str, GoValue], key: str) -> GoValue:
    """Sprig ``get``: the value, or ``""`` when the key is missing."""
    return mapping.get(key, "")


def go_empty(value: object) -> bool:
    """Sprig ``empty`` (also Go template falsiness): nil, false, 0, "" and empty collections."""
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    if isinstance(value, str | list | dict):
        return len(value) == 0
    return False


def go_default(value: GoValue, fallback: GoValue) -> GoValue:
    """Sprig ``default``: ``fallback`` when ``value`` is empty."""
    return fallback if go_empty(value) else value


def go_kind(value: object) -> str:
    """Sprig ``kindOf`` for the types values can hold."""
    if value is None:
        return "invalid"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "slice"
    return "map"


def go_trim_space(text: str) -> str:
    """Sprig ``trim`` (``strings.TrimSpace``)."""
    return text.strip(GO_SPACE)


def json_round_trip(value: GoValue) -> Any:
    """``mustToJson | mustFromJson``: a deep copy in which every int64 became a float64.

    Computed without the text detour (this runs several times per job): Go writes an int64
    in decimal and reads it back with ParseFloat, which rounds like Python's ``float(int)``;
    floats, strings and bools come back unchanged (shortest round-trip formatting).
    """
    kind = type(value)  # exact-type dispatch first: this is the hottest function of a plan
    if kind is dict:
        return {key: json_round_trip(item) for key, item in value.items()}  # type: ignore[union-attr]
    if kind is str or kind is float or kind is bool or value is None:
        return value
    if kind is list:
        return [json_round_trip(item) for item in value]  # type: ignore[union-attr]
    if isinstance(value, dict):
        return {key: json_round_trip(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_round_trip(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fail(message: str) -> RenderError:
    return RenderError(message, fix=_fix_for(message))


def _fix_for(message: str) -> str:
    if "Helm cannot write" in message:
        return "delete the character, or spell it differently (it is never valid in a manifest)"
    if "image.repository" in message:
        return "set image.repository on jobDefaults, the group, the job or the task"
    if "name suffix" in message:
        return "use a shorter job key (or group key); the release name part is what shrinks"
    if "hashSuffix is true" in message:
        return "remove the hook, or set hashSuffix: false on the group"
    if "null is not allowed" in message:
        return "remove the key or give it a value"
    if "is already used by an earlier task" in message:
        return 'give every task of the job its own name, other than "main"'
    if "DNS-1123 label" in message:
        return "use lowercase letters, digits and '-', starting and ending with a letter or digit"
    if ".imagePullSecrets" in message:
        return "write each entry as {name: <Secret name>}, e.g. imagePullSecrets: [{name: regcred}]"
    return "see docs/jobhash-algorithm.md and values.yaml for the allowed form"
