"""The chart names the same receivers, with the same variables, as the controller reads.

The chart mirrors ``RECEIVERS`` (``autoroll/core/receivers/sources.py``) in three places: the
table of ``autoroll.receiverVariable`` (the Secret's keys and the env), the path-token
sources of ``autoroll.receiverTakesPathToken``, and the schema's enum of ``webhookReceivers``.
A receiver added on one side only fails here, not at a user's install.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from autoroll.core.receivers.auth import Auth
from autoroll.core.receivers.sources import RECEIVERS

CHART = Path(__file__).resolve().parents[2] / "charts" / "autoroll"


def helper(name: str) -> str:
    text = (CHART / "templates" / "_helpers.tpl").read_text()
    start = text.index(f'{{{{- define "{name}" -}}}}')
    return text[start : text.index("{{- end -}}\n\n", start)]


def test_the_charts_variable_of_each_receiver_is_the_controllers() -> None:
    pairs = dict(
        re.findall(r'^\s+"([a-z]+)" "([A-Z_]+)"', helper("autoroll.receiverVariable"), re.M)
    )
    assert pairs == {str(s): r.variable for s, r in RECEIVERS.items()}


def test_the_chart_routes_a_token_in_the_path_for_the_same_sources() -> None:
    listed = re.search(r"\(list ([^)]*)\)", helper("autoroll.receiverTakesPathToken"))
    assert listed is not None
    sources = set(json.loads("[" + listed.group(1).replace('" "', '", "') + "]"))
    assert sources == {str(s) for s, r in RECEIVERS.items() if r.auth is Auth.PATH}


def test_the_schema_offers_exactly_the_receivers() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    offered = schema["properties"]["webhookReceivers"]["items"]["enum"]
    assert offered == [str(s) for s in RECEIVERS]
    secrets = schema["properties"]["secret"]["properties"]["receivers"]["properties"]
    assert list(secrets) == offered
