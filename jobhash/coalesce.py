"""Helm v4.3.1 ``pkg/chart/common/util.CoalesceValues``: user values over the chart's defaults.

The user's values win; a user's ``null`` deletes a chart default (the default is gone, not
restored).
"""

from __future__ import annotations

from jobhash.gojson import GoValue, Values, clone


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
