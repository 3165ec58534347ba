"""tests/support/image.py without podman: the build context it hashes and its guards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.image import (
    REPO,
    ControllerImage,
    IgnoreRules,
    context_files,
    context_hash,
    push_image,
)


def test_the_context_is_what_the_dockerfile_copies_and_nothing_of_tests_or_docs() -> None:
    relative = {path.relative_to(REPO).as_posix() for path in context_files()}
    assert {"pyproject.toml", "README.md", "requirements/runtime.txt", "autoroll/edge/cli.py"} <= (
        relative
    )
    assert "charts/autoroll/templates/_jobs.tpl" in relative
    assert not any(
        name.startswith(("tests/", "docs/", "bench/", "examples/", "charts/autoroll/tests/"))
        or "__pycache__" in name
        or name.endswith(".pyc")
        for name in relative
    )


def test_every_copy_source_of_the_dockerfile_is_in_the_context() -> None:
    included = IgnoreRules.parse((REPO / ".dockerignore").read_text()).included
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                assert source in included, f"{source} is copied but .dockerignore leaves it out"


def test_the_hash_follows_the_context_the_dockerfile_and_the_build_args(tmp_path: Path) -> None:
    (tmp_path / ".dockerignore").write_text("*\n!app\n**/__pycache__\napp/skip\n")
    (tmp_path / "Dockerfile").write_text("FROM base\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print(1)\n")
    (tmp_path / "app" / "skip").write_text("not in the context\n")
    (tmp_path / "outside.txt").write_text("not in the context\n")

    def digest(**args: str) -> str:
        return context_hash(tmp_path, build_args=args or {"PYTHON_IMAGE": "base"})

    first = digest()
    (tmp_path / "app" / "skip").write_text("changed\n")
    (tmp_path / "outside.txt").write_text("changed\n")
    assert digest() == first
    assert digest(PYTHON_IMAGE="other") != first
    (tmp_path / "app" / "main.py").write_text("print(2)\n")
    second = digest()
    assert second != first
    (tmp_path / "Dockerfile").write_text("FROM base\nCOPY app /app\n")
    assert digest() != second


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("!app\n", "first rule must be `*`"),
        ("*\n**/__pycache__\n!app\n", "must come before the exclusions"),
    ],
)
def test_an_ignore_file_outside_the_supported_shape_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        IgnoreRules.parse(text)


@pytest.mark.parametrize(
    "url", ["https://registry.example.org", "http://10.0.0.1:5000", "ftp://127.0.0.1:5000"]
)
def test_push_image_talks_to_local_registries_only(url: str) -> None:
    image = ControllerImage(Path("/nonexistent.tar"), "localhost/autoroll:x", "x", None)
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        push_image(image, url, "a/b", "latest")
