"""Helm's value loading: chart defaults, ``-f`` files, ``--set``/``--set-string``, schema.

Mirrors Helm v4.3.1:

* ``pkg/cli/values.Options.MergeValues``: ``-f`` files in order (``loader.MergeMaps``: maps
  merge, anything else replaces), then every ``--set`` in order, then every ``--set-string``
  (all ``--set`` before all ``--set-string``, wherever they stand on the command line);
* ``pkg/strvals`` for the ``--set`` syntax and typing (``3`` is an int64, ``1.5`` a string,
  ``true``/``false``/``null`` typed in any case, ``a.b=1``, ``a[0]=x``, ``a={x,y}``, ``\\``
  escapes, ``,`` between pairs);
* ``pkg/chart/common/util.CoalesceValues``: user values over the chart's ``values.yaml``;
  ``null`` deletes a chart default;
* ``ValidateAgainstSchema``: the coalesced values against ``values.schema.json`` (draft 7,
  Go RE2 regular expressions, so ``$`` never matches before a trailing newline).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobhash import schemacheck
from jobhash.errors import UsageError, ValuesError
from jobhash.gojson import GoValue, clone
from jobhash.goyaml import load_values, merge_maps

if TYPE_CHECKING:
    import jsonschema.exceptions

MAX_INDEX = 65536
MAX_NESTED_NAME_LEVEL = 30

Values = dict[str, GoValue]


# ---------------------------------------------------------------------------------------------
# strvals (--set / --set-string)


class _StrvalsError(Exception):
    """A strvals parse error; the message is Helm's."""


class _NotListError(Exception):
    pass


_KEY_STOP = frozenset("=[,.")
_LIST_ITEM_STOP = frozenset("[.=")
_INT_RE = re.compile(r"[+-]?[0-9]+")


class _Runes:
    """The rune reader strvals parses from (a bytes.Buffer read with ReadRune)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def read(self) -> str | None:
        if self.pos >= len(self.text):
            return None
        char = self.text[self.pos]
        self.pos += 1
        return char

    def unread(self) -> None:
        self.pos -= 1

    def until(self, stop: frozenset[str]) -> tuple[str, str | None, bool]:
        """``runesUntil``: (text, stop rune, hit EOF); ``\\`` takes the next rune literally."""
        out: list[str] = []
        while True:
            char = self.read()
            if char is None:
                return "".join(out), None, True
            if char in stop:
                return "".join(out), char, False
            if char == "\\":
                escaped = self.read()
                if escaped is None:
                    return "".join(out), None, True
                out.append(escaped)
            else:
                out.append(char)


def _go_equal_fold(text: str, word: str) -> bool:
    """``strings.EqualFold`` for an ASCII ``word``: simple Unicode case folding per rune."""
    if len(text) != len(word):
        return False
    for char, want in zip(text, word, strict=True):
        folded = char.casefold()
        if char != want and (len(folded) != 1 or folded != want):
            return False
    return True


def typed_value(text: str, *, as_string: bool) -> GoValue:
    """strvals ``typedVal``: how one ``--set`` value is typed."""
    if as_string:
        return text
    if _go_equal_fold(text, "true"):
        return True
    if _go_equal_fold(text, "false"):
        return False
    if _go_equal_fold(text, "null"):
        return None
    if text == "0":
        return 0
    if text and text[0] != "0" and _INT_RE.fullmatch(text):
        number = int(text)
        if -(2**63) <= number < 2**63:
            return number
    return text


def _go_kind(value: object) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def _want_list(value: object) -> list[GoValue]:
    if not isinstance(value, list):
        raise _StrvalsError(
            "unable to parse key: interface conversion: interface {} is "
            f"{_go_kind(value)}, not []interface {{}}"
        )
    return value


def _want_map(value: object) -> dict[str, GoValue]:
    if not isinstance(value, dict):
        raise _StrvalsError(
            "unable to parse key: interface conversion: interface {} is "
            f"{_go_kind(value)}, not map[string]interface {{}}"
        )
    return value


def _set(data: dict[str, GoValue], key: str, value: GoValue) -> None:
    if key:
        data[key] = value


def _set_index(items: list[GoValue], index: int, value: GoValue) -> list[GoValue]:
    if index < 0:
        raise _StrvalsError(f"negative {index} index not allowed")
    if index > MAX_INDEX:
        raise _StrvalsError(
            f"index of {index} is greater than maximum supported index of {MAX_INDEX}"
        )
    if len(items) <= index:
        items = items + [None] * (index + 1 - len(items))
    items[index] = value
    return items


class _StrvalsParser:
    """strvals ``parser`` with the string reader (``--set``) or forced strings (``--set-string``).

    Methods return True where the Go code returns ``io.EOF`` (which ends parsing silently) and
    raise :class:`_StrvalsError` for every other error.
    """

    def __init__(self, text: str, data: dict[str, GoValue], *, as_string: bool) -> None:
        self.sc = _Runes(text)
        self.data = data
        self.as_string = as_string

    def reader(self, text: str) -> GoValue:
        return typed_value(text, as_string=self.as_string)

    def parse(self) -> None:
        while not self.key(self.data, 0):
            pass

    def key(self, data: dict[str, GoValue], level: int) -> bool:
        key, last, eof = self.sc.until(_KEY_STOP)
        if eof:
            if not key:
                return True
            raise _StrvalsError(f"key {_go_quote(key)} has no value")
        if last == "[":
            index = self.key_index()
            if index is None:
                return True  # "error parsing index: EOF" wraps io.EOF: Helm stops quietly
            items: list[GoValue] = _want_list(data[key]) if key in data else []
            items, eof = self.list_item(items, index, level)
            _set(data, key, items)
            return eof
        if last == "=":
            try:
                values = self.val_list()
            except EOFError:
                _set(data, key, "")
                return True
            except _NotListError:
                text, _ = self.val()
                _set(data, key, self.reader(text))
                return False
            _set(data, key, values)
            return False
        if last == ",":
            raise _StrvalsError(f"key {_go_quote(key)} has no value (cannot end with ,)")
        # last == "."
        level += 1
        if level > MAX_NESTED_NAME_LEVEL:
            raise _StrvalsError(
                "value name nested level is greater than maximum supported nested level of "
                f"{MAX_NESTED_NAME_LEVEL}"
            )
        inner: dict[str, GoValue] = _want_map(data[key]) if key in data else {}
        eof = self.key(inner, level)
        if not eof and not inner:
            raise _StrvalsError(f"key map {_go_quote(key)} has no value")
        if inner:
            _set(data, key, inner)
        return eof

    def key_index(self) -> int | None:
        text, _, eof = self.sc.until(frozenset("]"))
        if eof:
            return None
        if not _INT_RE.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
            raise _StrvalsError(
                f'error parsing index: strconv.Atoi: parsing "{text}": invalid syntax'
            )
        return int(text)

    def list_item(self, items: list[GoValue], index: int, level: int) -> tuple[list[GoValue], bool]:
        if index < 0:
            raise _StrvalsError(f"negative {index} index not allowed")
        rest, last, eof = self.sc.until(_LIST_ITEM_STOP)
        if rest:
            raise _StrvalsError(f"unexpected data at end of array index: {_go_quote(rest)}")
        if eof:
            return items, True
        if last == "=":
            try:
                values = self.val_list()
            except EOFError:
                return _set_index(items, index, ""), False
            except _NotListError:
                text, _ = self.val()
                return _set_index(items, index, self.reader(text)), False
            return _set_index(items, index, values), False
        if last == "[":
            next_index = self.key_index()
            if next_index is None:
                return items, True
            current: list[GoValue] = []
            if len(items) > index and items[index] is not None:
                current = _want_list(items[index])
            nested, eof = self.list_item(current, next_index, level)
            if eof:
                return items, True
            return _set_index(items, index, nested), False
        # last == "."
        inner: dict[str, GoValue] = {}
        if len(items) > index:
            existing = items[index]
            if isinstance(existing, dict):
                inner = existing
            else:
                items[index] = inner  # indices out of order: Go starts an empty map in place
        if self.key(inner, level):
            return items, True
        return _set_index(items, index, inner), False

    def val(self) -> tuple[str, bool]:
        text, _, eof = self.sc.until(frozenset(","))
        return text, eof

    def val_list(self) -> list[GoValue]:
        first = self.sc.read()
        if first is None:
            raise EOFError
        if first != "{":
            self.sc.unread()
            raise _NotListError
        values: list[GoValue] = []
        while True:
            text, last, eof = self.sc.until(frozenset(",}"))
            if eof:
                raise _StrvalsError("list must terminate with '}'")
            values.append(self.reader(text))
            if last == "}":
                following = self.sc.read()
                if following is not None and following != ",":
                    self.sc.unread()
                return values


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def parse_set(expression: str, dest: dict[str, GoValue], *, as_string: bool = False) -> None:
    """``strvals.ParseInto`` (or ``ParseIntoString``): apply one ``--set`` to ``dest``."""
    flag = "--set-string" if as_string else "--set"
    if any(0xD800 <= ord(char) <= 0xDFFF for char in expression):
        raise UsageError(f"{flag} {expression!r}: the argument is not valid UTF-8")
    try:
        _StrvalsParser(expression, dest, as_string=as_string).parse()
    except _StrvalsError as err:
        raise ValuesError(
            f"failed parsing {flag} data: {err}",
            source=f"{flag} {expression}",
            fix="use key=value pairs separated by commas: a.b=1,list[0]=x,c={x,y}; "
            "escape a literal , . [ = with a backslash",
        ) from err


# ---------------------------------------------------------------------------------------------
# Sources and merging


@dataclass(frozen=True)
class ValueSources:
    """Everything the user passes, in Helm's terms."""

    files: Sequence[Path] = ()
    sets: Sequence[str] = ()
    set_strings: Sequence[str] = ()


@dataclass
class _Origin:
    """Which source set each top-level value, for error messages."""

    layers: list[tuple[str, Values]] = field(default_factory=list)

    def source_of(self, path: Sequence[str | int]) -> str:
        for name, values in reversed(self.layers):
            if _has_path(values, path):
                return name
        return "chart values.yaml"


def key_path(dotted: str) -> list[str | int]:
    """``a.b[0].c`` -> ``["a", "b", 0, "c"]`` (the form error messages use)."""
    parts: list[str | int] = []
    for piece in dotted.split("."):
        name, *indexes = piece.split("[")
        if name:
            parts.append(name)
        parts.extend(int(index.rstrip("]")) for index in indexes if index.rstrip("]").isdigit())
    return parts


def _has_path(values: GoValue, path: Sequence[str | int]) -> bool:
    """Did this source set ``path`` (or a scalar/list where the path continues)?"""
    node = values
    for part in path:
        if isinstance(node, dict):
            if not isinstance(part, str) or part not in node:
                return False
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return True
    return True


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise UsageError(
            f"{path}: cannot read values file ({err.strerror}); check the -f path"
        ) from err


def user_values(sources: ValueSources) -> tuple[Values, _Origin]:
    """``Options.MergeValues``: files, then every --set, then every --set-string."""
    base: Values = {}
    origin = _Origin()
    for path in sources.files:
        current = load_values(_read_file(path), str(path))
        origin.layers.append((str(path), current))
        base = merge_maps(base, current)
    for flag, expressions in (("--set", sources.sets), ("--set-string", sources.set_strings)):
        as_string = flag == "--set-string"
        for expression in expressions:
            parse_set(expression, base, as_string=as_string)
            origin.layers.append((f"{flag} {expression}", _probe(expression, as_string)))
    return base, origin


def _probe(expression: str, as_string: bool) -> Values:
    """What one --set sets on its own (for error messages only; {} if it needs context)."""
    probe: Values = {}
    try:
        parse_set(expression, probe, as_string=as_string)
    except ValuesError:
        return {}
    return probe


def _clean_nil(values: dict[str, GoValue]) -> None:
    for key in [key for key, value in values.items() if value is None]:
        del values[key]
    for value in values.values():
        if isinstance(value, dict):
            _clean_nil(value)


def _coalesce_tables(dst: dict[str, GoValue], src: dict[str, GoValue]) -> None:
    """``coalesceTablesFullKey`` with merge=false: dst (the user's) wins; null deletes."""
    src_non_nil = {key for key, value in src.items() if value is not None}
    for key, value in dst.items():
        if value is None:
            src[key] = None
    for key, value in src.items():
        if key in dst and dst[key] is None and key in src_non_nil:
            del dst[key]
        elif key not in dst:
            dst[key] = value
        elif isinstance(value, dict):
            current = dst[key]
            if isinstance(current, dict):
                _coalesce_tables(current, value)
            # else: Helm warns "cannot overwrite table with non table" and keeps the user's


def coalesce(chart_values: Values, user: Values) -> Values:
    """``CoalesceValues`` for a chart without dependencies (``coalesceValues``)."""
    result = clone(user)
    defaults = clone(chart_values)
    for key, default in defaults.items():
        if key in result:
            value = result[key]
            if value is None:
                del result[key]
            elif isinstance(value, dict) and isinstance(default, dict):
                _clean_nil(default)
                _coalesce_tables(value, default)
        elif default is not None:
            if isinstance(default, dict):
                _clean_nil(default)
            result[key] = default
    return result


# ---------------------------------------------------------------------------------------------
# Schema validation


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


# ---------------------------------------------------------------------------------------------
# The chart


@dataclass(frozen=True)
class Chart:
    """What jobhash reads from a chart directory."""

    directory: Path
    name: str
    values: Values
    schema: Mapping[str, Any] | None


def load_chart(directory: Path) -> Chart:
    """Read Chart.yaml (name), values.yaml (defaults) and values.schema.json (if present)."""
    chart_yaml = directory / "Chart.yaml"
    if not chart_yaml.is_file():
        raise UsageError(
            f"{directory}: not a chart directory (no Chart.yaml); pass --chart charts/autoroll"
        )
    metadata = load_values(chart_yaml.read_bytes(), str(chart_yaml))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise UsageError(f"{chart_yaml}: name is missing; this is not the autoroll chart")
    values_file = directory / "values.yaml"
    values = (
        load_values(values_file.read_bytes(), str(values_file)) if values_file.is_file() else {}
    )
    schema_file = directory / "values.schema.json"
    schema: Mapping[str, Any] | None = None
    if schema_file.is_file():
        try:
            schema = json.loads(schema_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise UsageError(f"{schema_file}: not valid JSON ({err})") from err
    return Chart(directory=directory, name=name, values=values, schema=schema)


@dataclass(frozen=True)
class LoadedValues:
    """The values a template sees as ``.Values``, plus where each came from."""

    values: Values
    origin: _Origin


def load(chart: Chart, sources: ValueSources) -> LoadedValues:
    """Helm's whole value pipeline; raises :class:`ValuesError` listing every schema problem."""
    user, origin = user_values(sources)
    values = coalesce(chart.values, user)
    if chart.schema is not None:
        problems = schema_errors(values, chart.schema)
        if problems:
            lines = [
                f"- {origin.source_of(path)}: {_dotted(path) or '(top level)'}: {message}"
                for path, message in problems
            ]
            fix = (
                "change each listed key to the form documented for it in the chart's "
                "values.yaml (helm install/template would refuse these values)"
            )
            controller = values.get("controller")
            if any(path and path[0] in ("forgejo", "image") for path, _ in problems) and not (
                isinstance(controller, dict) and controller.get("enabled") is False
            ):
                fix += "; values that only configure jobGroups can set controller.enabled=false"
            raise ValuesError(
                "values don't meet the chart's values.schema.json:\n" + "\n".join(lines),
                fix=fix,
            )
    return LoadedValues(values=values, origin=origin)


def find_chart(explicit: Path | None) -> Path:
    """The chart directory: ``--chart``, else the chart shipped in the package (a wheel),
    else ``charts/autoroll`` of the source checkout this package runs from (editable install).
    """
    if explicit is not None:
        if not (explicit / "Chart.yaml").is_file():
            raise UsageError(f"--chart {explicit}: no Chart.yaml there; pass the chart directory")
        return explicit
    here = Path(__file__).resolve().parent
    for candidate in (here / "_chart", here.parent / "charts" / "autoroll"):
        if (candidate / "Chart.yaml").is_file():
            return candidate
    raise UsageError("cannot find the autoroll chart; pass --chart DIR")
