"""``StreamedList`` reads what ``list_page`` reads, one item at a time (issue 28)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoroll.kube.lists import list_page
from autoroll.kube.streamed_lists import StreamedList


def streamed(body: bytes | str) -> tuple[list[dict[str, Any]], str, str]:
    page = StreamedList(body)
    items = list(page.items())
    return items, page.continue_token, page.resource_version


def whole(body: bytes | str) -> tuple[list[dict[str, Any]], str, str]:
    page = list_page(body)
    return page.items, page.continue_token, page.resource_version


def test_items_metadata_and_managed_fields_as_list_page_reads_them() -> None:
    body = json.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "42", "continue": "next"},
            "items": [
                {"metadata": {"name": "a", "managedFields": [{"manager": "kubelet"}]}},
                "not an object",
                {"metadata": {"name": "b"}, "spec": {"x": [1, {"managedFields": 1}]}},
            ],
        }
    ).encode()
    assert streamed(body) == (
        [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}, "spec": {"x": [1, {}]}}],
        "next",
        "42",
    )
    assert streamed(body) == whole(body)


def test_items_are_handed_on_before_the_rest_is_parsed() -> None:
    page = StreamedList('{"items": [{"a": 1}, {"b": 2}, oops]}')
    items = page.items()
    assert next(items) == {"a": 1}
    assert next(items) == {"b": 2}
    with pytest.raises(ValueError, match="not JSON"):
        next(items)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>", "not JSON"),
        (b"", "not JSON"),
        (b'{"items": {"a": 1}}', "items are not a list"),
        (b"[1, 2]", "not a list"),
        (b'{"items": [1, 2}', "not JSON"),
        (b'{"items": []} trailing', "not JSON"),
        (b'{"items": [], }', "not JSON"),
        (b"{1: 2}", "not JSON"),
    ],
)
def test_what_is_not_a_list_answer_is_refused(body: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        streamed(body)


@pytest.mark.parametrize("body", [b'{"kind": "PodList", "items": null}', b"{}", b" { } "])
def test_no_items_is_an_empty_page(body: bytes) -> None:
    assert streamed(body) == ([], "", "")


_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "b", "managedFields", "é", '"q"']), inner, max_size=3
        )
    ),
    max_leaves=8,
)


@given(
    items=st.lists(_values, max_size=5),
    extra=st.dictionaries(st.sampled_from(["kind", "apiVersion", "zzz"]), _values, max_size=3),
    metadata=st.fixed_dictionaries(
        {}, optional={"continue": st.text(max_size=4), "resourceVersion": st.text(max_size=4)}
    ),
    order=st.permutations(["items", "metadata", "extra"]),
    indent=st.sampled_from([None, 0, 2]),
)
def test_streaming_reads_exactly_what_parsing_the_whole_page_reads(
    items: list[Any],
    extra: dict[str, Any],
    metadata: dict[str, str],
    order: list[str],
    indent: int | None,
) -> None:
    parts: dict[str, Any] = {}
    for part in order:
        if part == "items":
            parts["items"] = items
        elif part == "metadata":
            parts["metadata"] = metadata
        else:
            parts.update(extra)
    body = json.dumps(parts, indent=indent, ensure_ascii=indent is None)
    assert streamed(body) == whole(body)
    assert streamed(body.encode()) == whole(body.encode())
