"""Helm's value loading: chart defaults, ``-f`` files, every ``--set*`` flag, schema.

Mirrors Helm v4.3.1, one step per module:

* ``pkg/cli/values.Options.MergeValues`` (:func:`user_values`): ``-f`` files in order
  (``loader.MergeMaps``: maps merge, anything else replaces), then every ``--set-json``, every
  ``--set``, every ``--set-string``, every ``--set-file``, every ``--set-literal``, each flag's
  occurrences in order (so all ``--set`` come before all ``--set-string``, wherever they stand
  on the command line); one flag is applied by :mod:`jobhash.valueflags`;
* ``pkg/strvals`` for the ``--set`` syntax and typing (:mod:`jobhash.strvals`,
  :mod:`jobhash.strvals_parser`, :mod:`jobhash.strvals_literal`: ``3`` is an int64, ``1.5`` a
  string, ``true``/``false``/``null`` typed in any case, ``a.b=1``, ``a[0]=x``, ``a={x,y}``,
  ``\\`` escapes, ``,`` between pairs); ``--set-json`` values are JSON (numbers float64, an
  empty value null, or a whole ``{...}`` object merged like a values file); ``--set-file``
  values are paths whose content becomes a string; ``--set-literal`` (``literal_parser.go``)
  takes everything after the first ``=`` verbatim, with no escapes, commas or lists;
* ``pkg/chart/common/util.CoalesceValues`` (:mod:`jobhash.coalesce`): user values over the
  chart's ``values.yaml``; ``null`` deletes a chart default;
* ``ValidateAgainstSchema`` (:mod:`jobhash.valueschema`): the coalesced values against
  ``values.schema.json`` (draft 7, Go RE2 regular expressions, so ``$`` never matches before a
  trailing newline).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobhash.coalesce import coalesce
from jobhash.errors import UsageError, ValuesError
from jobhash.gojson import GoValue, Values
from jobhash.goyaml import load_values, merge_maps
from jobhash.strvals import Reader
from jobhash.valueflags import FLAGS, parse_flag
from jobhash.valueschema import _dotted, schema_errors

# ---------------------------------------------------------------------------------------------
# Sources and merging


@dataclass(frozen=True)
class ValueSources:
    """Everything the user passes, in Helm's terms (each flag's occurrences in order)."""

    files: Sequence[Path] = ()
    sets: Sequence[str] = ()
    set_strings: Sequence[str] = ()
    set_jsons: Sequence[str] = ()
    set_files: Sequence[str] = ()
    set_literals: Sequence[str] = ()

    def flags(self) -> list[tuple[str, str]]:
        """``(flag, expression)`` pairs in the order Helm applies them (:data:`FLAGS`)."""
        by_flag = {
            "--set-json": self.set_jsons,
            "--set": self.sets,
            "--set-string": self.set_strings,
            "--set-file": self.set_files,
            "--set-literal": self.set_literals,
        }
        return [(flag, expression) for flag in FLAGS for expression in by_flag[flag]]


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


def user_values(
    sources: ValueSources, *, read_file: Reader | None = None
) -> tuple[Values, _Origin]:
    """``Options.MergeValues``: files, then each ``--set*`` flag in Helm's order (:data:`FLAGS`)."""
    base: Values = {}
    origin = _Origin()
    for path in sources.files:
        current = load_values(_read_file(path), str(path))
        origin.layers.append((str(path), current))
        base = merge_maps(base, current)
    for flag, expression in sources.flags():
        base = parse_flag(flag, expression, base, read_file=read_file)
        origin.layers.append((f"{flag} {expression}", _probe(flag, expression)))
    return base, origin


def _probe(flag: str, expression: str) -> Values:
    """What one flag sets on its own (for error messages only; {} if it needs context)."""
    probe: Values = {}
    try:
        return parse_flag(flag, expression, probe, read_file=lambda _path: "")
    except ValuesError:
        return {}


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
