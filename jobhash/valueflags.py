"""One ``--set*`` flag applied as Helm v4.3.1 ``pkg/cli/values.Options.MergeValues`` does.

:data:`FLAGS` is the order Helm applies them in, after every ``-f`` file, whatever their order
on the command line: every ``--set-json``, every ``--set``, every ``--set-string``, every
``--set-file``, every ``--set-literal``. ``--set-json`` takes ``key=<JSON>`` pairs or one whole
``{...}`` object, merged like a values file; ``--set-file`` reads a local path as Helm's
``readFile`` would (:func:`helm_path_problem` says why Helm would not).
"""

from __future__ import annotations

import re
from pathlib import Path

from jobhash.errors import UnmirrorableError, UsageError, ValuesError
from jobhash.gojson import GoValue
from jobhash.gotemplate import GO_SPACE
from jobhash.goyaml import merge_maps
from jobhash.strvals import Reader, _StrvalsError, decode_json_object, typed_value
from jobhash.strvals_literal import _LiteralParser
from jobhash.strvals_parser import _StrvalsParser

FLAGS = ("--set-json", "--set", "--set-string", "--set-file", "--set-literal")
"""Every value flag, in the order ``MergeValues`` applies them (after all ``-f`` files)."""

_SYNTAX_FIX = (
    "use key=value pairs separated by commas: a.b=1,list[0]=x,c={x,y}; escape a literal , . [ = "
    "with a backslash"
)
_FIXES = {
    "--set": _SYNTAX_FIX,
    "--set-string": _SYNTAX_FIX,
    "--set-file": "use key=path pairs separated by commas: a.b=config.txt; escape a literal "
    ", . [ = with a backslash",
    "--set-json": 'use key=<JSON> pairs separated by commas (a.b=[1,2],c={"d":true},e="text") '
    'or one JSON object ({"a":{"b":1}}); quote strings as JSON does',
    "--set-literal": "use one key=value per flag; everything after the first = is the value",
}


def parse_flag(
    flag: str, expression: str, dest: dict[str, GoValue], *, read_file: Reader | None = None
) -> dict[str, GoValue]:
    """Apply one occurrence of ``flag`` to ``dest`` as ``MergeValues`` does; returns the values
    (a new map for a ``--set-json`` object, which is merged like a values file, else ``dest``).

    ``read_file`` gives a ``--set-file`` path's content (see :func:`read_set_file`).
    """
    if any(0xD800 <= ord(char) <= 0xDFFF for char in expression):
        raise UsageError(f"{flag} {expression!r}: the argument is not valid UTF-8")
    try:
        if flag == "--set-json":
            trimmed = expression.strip(GO_SPACE)
            if trimmed.startswith("{"):
                return merge_maps(dest, decode_json_object(trimmed))
            _StrvalsParser(expression, dest, reader=_typed, json_values=True).parse()
        elif flag == "--set-literal":
            _LiteralParser(expression, dest).parse()
        elif flag == "--set-file":
            _StrvalsParser(expression, dest, reader=read_file or read_set_file).parse()
        else:
            reader = _as_string if flag == "--set-string" else _typed
            _StrvalsParser(expression, dest, reader=reader).parse()
    except _StrvalsError as err:
        raise ValuesError(
            f"failed parsing {flag} data: {err}", source=f"{flag} {expression}", fix=_FIXES[flag]
        ) from err
    return dest


def _typed(text: str) -> GoValue:
    return typed_value(text, as_string=False)


def _as_string(text: str) -> GoValue:
    return text


def parse_set(expression: str, dest: dict[str, GoValue], *, as_string: bool = False) -> None:
    """``strvals.ParseInto`` (or ``ParseIntoString``): apply one ``--set`` to ``dest``."""
    parse_flag("--set-string" if as_string else "--set", expression, dest)


_GETTER_SCHEMES = ("http", "https", "oci")  # Helm v4's built-in getters (plugins add more)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def helm_path_problem(path: str) -> str | None:
    """Why Helm's ``readFile`` would not read ``path`` as a local file, or None.

    Helm parses the path as a URL first (``net/url.Parse``) and fails on what that refuses:
    control characters, a leading ``:``, a colon in the first segment of a relative path, a
    ``%`` not followed by two hex digits (outside the query); a scheme with a getter (http,
    https, oci) is downloaded instead. ``-`` is stdin. Not mirrored: the host checks of a
    ``//host/...`` path (such a path is refused by neither side here).
    """
    if path.strip(GO_SPACE) == "-":
        return "- means standard input to Helm; jobhash does not read it, so write it to a file"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        return "Helm refuses it: net/url: invalid control character in URL"
    url, _, fragment = path.partition("#")
    if url.startswith(":"):
        return "Helm refuses it: missing protocol scheme"
    scheme = _SCHEME.match(url)
    rest = url[scheme.end() :] if scheme else url
    if scheme and scheme.group(1).lower() in _GETTER_SCHEMES:
        return (
            f"Helm downloads {scheme.group(1).lower()}:// paths; jobhash reads only local files, "
            "so download it and pass the local path"
        )
    rest = rest.split("?", 1)[0]
    if scheme and not rest.startswith("/"):
        return None  # an opaque URL: Helm reads the file of that name
    if not scheme and not rest.startswith("/") and ":" in rest.split("/", 1)[0]:
        return "Helm refuses it: first path segment in URL cannot contain colon"
    if _BAD_ESCAPE.search(rest) or _BAD_ESCAPE.search(fragment):
        return "Helm refuses it: invalid URL escape (a % must start %XX)"
    return None


def read_set_file(path: str) -> GoValue:
    """Helm's ``--set-file`` reader: the file's bytes as a string (relative to the working dir)."""
    problem = helm_path_problem(path)
    if problem:
        raise UsageError(f"--set-file: cannot read {path!r}: {problem}")
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise UsageError(
            f"--set-file: cannot read {path!r} ({err.strerror}); check the path after the ="
        ) from err
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnmirrorableError(
            f"--set-file {path}: the file is not valid UTF-8 (byte {err.start}); Helm would "
            "pass the raw bytes on, which jobhash cannot reproduce",
            fix="store text files as UTF-8 (or base64-encode binary content)",
        ) from err
