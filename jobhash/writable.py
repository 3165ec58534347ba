"""Step 0a, characters Helm cannot write: ``autoroll.jobs.checkWritable`` and its helpers.

Checked before any entry is visited, over ``jobDefaults`` and ``jobGroups``
(docs/jobhash-algorithm.md, section 0a). One function per ``define``, named after it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from jobhash.gojson import GoValue
from jobhash.gotemplate import _fail

UNWRITABLE = re.compile("[\x7f-\x9f\ufffe\uffff]|(?s:[\u2028\u2029].*\n|\n.*[\u2028\u2029])")
"""``autoroll.jobs.unwritablePattern``: DEL, the C1 controls, U+FFFE and U+FFFF, and
U+2028/U+2029 in a string that also holds a line break.

Helm's ``toYaml`` renders ``""`` for a value holding one of the first but U+0085 (its YAML
parser refuses them), folds U+0085 (a YAML 1.1 line break, left raw by Go's JSON) into a
space, and may write a multi-line string as a block, in which U+2028/U+2029 read back as line
breaks; so the chart fails instead of rendering an empty Job spec, one that is not the hashed
spec, or YAML that does not parse.
"""


def find_unwritable(value: GoValue, path: str) -> str:
    """``autoroll.jobs.findUnwritable``: path of the first key or string holding an
    :data:`UNWRITABLE` character (maps in sorted key order, lists in order), or ``""``.

    Keep in sync with ``_jobs.tpl`` autoroll.jobs.findUnwritable.
    """
    if isinstance(value, dict):
        for key in sorted(value, key=lambda k: k.encode()):
            child = f"{path}.{key}"
            if UNWRITABLE.search(key):
                return child
            found = find_unwritable(value[key], child)
            if found:
                return found
        return ""
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = find_unwritable(item, f"{path}[{index}]")
            if found:
                return found
        return ""
    if isinstance(value, str) and UNWRITABLE.search(value):
        return path
    return ""


def check_writable(values: Mapping[str, GoValue]) -> None:
    """``autoroll.jobs.checkWritable``: fail naming the path of a key or string under
    jobDefaults or jobGroups that Helm's ``toYaml`` cannot write.

    Keep the message in sync with ``_jobs.tpl`` autoroll.jobs.checkWritable.
    """
    path = find_unwritable(values.get("jobDefaults"), "jobDefaults") or find_unwritable(
        values.get("jobGroups"), "jobGroups"
    )
    if path:
        raise _fail(
            f"{path}: contains DEL (U+007F), a C1 control character (U+0080-U+009F), "
            "U+FFFE/U+FFFF, or U+2028/U+2029 together with a line break, which Helm cannot "
            "write into the rendered YAML as given (toYaml drops the value, folds U+0085 into "
            "a space or line break, or writes a multi-line string as a block where "
            "U+2028/U+2029 read as line breaks); remove that character (an escape such as "
            "\\x7f in a values file is the same character)"
        )
