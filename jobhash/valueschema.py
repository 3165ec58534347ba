"""Helm v4.3.1 ``ValidateAgainstSchema``: the coalesced values against ``values.schema.json``.

Draft 7 with Go RE2 regular expressions, so ``$`` never matches before a trailing newline.
The yes/no verdict comes from :mod:`jobhash.schemacheck`; jsonschema words the messages.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobhash import schemacheck
from jobhash.gojson import Values

if TYPE_CHECKING:
    import jsonschema.exceptions


@functools.lru_cache(maxsize=256)
def _go_pattern(pattern: str) -> re.Pattern[str]:
    """A JSON-schema pattern compiled with RE2's anchors: ``$`` is the very end of the text."""
    translated: list[str] = []
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            translated.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            char = r"\Z"
        translated.append(char)
        index += 1
    return re.compile("".join(translated))


@functools.cache
def _validator_class() -> Any:
    """Draft 7 with RE2 ``pattern``; jsonschema is imported only when a message is needed
    (its import alone costs more than checking 500 jobs with :mod:`jobhash.schemacheck`)."""
    import jsonschema  # noqa: PLC0415 - deliberately lazy, see above
    import jsonschema.exceptions  # noqa: PLC0415
    import jsonschema.validators  # noqa: PLC0415

    def pattern(
        validator: Any, pattern: str, instance: object, schema: Mapping[str, Any]
    ) -> Iterator[jsonschema.exceptions.ValidationError]:
        if isinstance(instance, str) and not _go_pattern(pattern).search(instance):
            yield jsonschema.exceptions.ValidationError(f"{instance!r} does not match {pattern!r}")

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft7Validator, validators={"pattern": pattern}
    )


_compiled: dict[int, tuple[Mapping[str, Any], schemacheck.Check | None]] = {}


def _fast_check(schema: Mapping[str, Any]) -> schemacheck.Check | None:
    """The compiled yes/no check of ``schema`` (compiled once per schema object)."""
    cached = _compiled.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, schemacheck.compile_schema(schema, _go_pattern))
        _compiled[id(schema)] = cached
    return cached[1]


def _dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(error: jsonschema.exceptions.ValidationError) -> str:
    if error.validator in ("anyOf", "oneOf") and error.context:
        # The const branch of dnsLabelKey carries the human message; prefer it.
        for sub in error.context:
            if sub.validator == "const":
                return f"{error.instance!r} is not allowed: {sub.validator_value}"
        deepest = max(error.context, key=lambda sub: len(sub.absolute_path))
        return deepest.message
    return error.message


def schema_errors(values: Values, schema: Mapping[str, Any]) -> list[tuple[list[str | int], str]]:
    """Every problem ``helm install`` would report, as (key path, message), sorted by path."""
    check = _fast_check(schema)
    if check is not None and check(values):
        return []  # the same verdict jsonschema gives, without building its validator
    validator = _validator_class()(schema)
    found: list[tuple[list[str | int], str]] = []
    for error in validator.iter_errors(values):
        found.append((list(error.absolute_path), _describe(error)))
    found.sort(key=lambda item: (_dotted(item[0]), item[1]))
    return found
