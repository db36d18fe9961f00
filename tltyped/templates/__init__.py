"""The Jinja templates of every generated artifact (fast paths, launchers, stubs) and their one environment.

They sit on the ground floor so that the backend (launchers), the call path
(fast paths) and the stubs all render from below.
"""

from __future__ import annotations

from typing import Any

import jinja2

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("tltyped", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)


def c_string(text: str) -> str:
    """`text` as a C string literal: printable ASCII as is, everything else as octal escapes of its UTF-8.

    Generated C passes such literals to printf-style functions as `%s`
    arguments, never as the format itself.
    """
    out = []
    for byte in str(text).encode():
        if chr(byte) in '"\\?':
            out.append("\\" + chr(byte))
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


_ENV.filters["c_string"] = c_string


def render(template: str, **context: Any) -> str:
    return _ENV.get_template(template).render(**context)
