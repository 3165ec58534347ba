"""The fit of memory and pass time against size (issue 28), on hand-made results."""

from __future__ import annotations

from typing import Any

import pytest

from bench.scale_fit import fit, points, section, verdict


def _cell(deployments: int, *, rss_kib: int, wall: float) -> dict[str, Any]:
    passes = [{"wall_s": wall * 2, "cpu_s": wall}, {"wall_s": wall, "cpu_s": wall / 2}]
    return {
        "deployments": deployments,
        "images": 50,
        "pods": 3 * deployments,
        "control_plane_kib": {"etcd": 1000 * deployments // 10, "kube-apiserver": 1000},
        "results": {
            "cached": {
                "passes": passes,
                "cache": {"sync_s": deployments / 1000},
                "peak_rss_kib": rss_kib,
            }
        },
    }


def _results(*sizes: int) -> dict[str, Any]:
    # 50 MB + 10 MB per 1,000 Deployments; 0.5 s of pass per 1,000.
    return {
        "scale": [
            _cell(n, rss_kib=int((50 + 10 * n / 1000) * 1e6 / 1024), wall=0.5 * n / 1000)
            for n in sizes
        ]
    }


def test_a_straight_line_is_found_exactly() -> None:
    line = fit([1, 2, 4], [3, 5, 9])
    assert line is not None and line.a == pytest.approx(1) and line.b == pytest.approx(2)
    assert line.at(10) == pytest.approx(21)
    assert fit([5], [1]) is None and fit([5, 5], [1, 2]) is None


def test_the_fit_predicts_50000_and_100000_and_says_it_is_a_fit() -> None:
    text = section(_results(500, 2000, 10000))
    rows = [line for line in text.splitlines() if line.startswith("| 50,000")]
    (row,) = rows
    assert "**fit**" in row and "| 550 |" in row  # 50 + 10 * 50 MB
    assert "| 25.00 |" in row  # the warm pass: 0.5 s per 1,000
    assert "near **1050 MB**" in text and "A fit, not a measurement." in text
    _name, met, detail = verdict(_results(500, 2000, 10000))
    assert met is None and "not measured (largest measured: 10,000)" in detail
    assert "550 MB" in detail and "a fit" in detail


def test_a_measured_50000_is_the_row_itself() -> None:
    results = _results(500, 2000, 10000)
    results["giant"] = [_cell(50000, rss_kib=600_000, wall=30.0)]
    assert [p.deployments for p in points(results)] == [500, 2000, 10000, 50000]
    _, met, detail = verdict(results)
    assert met is True and "measured at 50,000" in detail
    text = section(results)
    assert (
        next(line for line in text.splitlines() if line.startswith("| 50,000")).count("measured")
        == 1
    )
    assert any(line.startswith("| 100,000") and "**fit**" in line for line in text.splitlines())


def test_one_size_is_not_a_fit() -> None:
    _, met, detail = verdict(_results(500))
    assert met is None and "fewer than two sizes" in detail
