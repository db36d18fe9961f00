"""The Jinja templates of every generated artifact (fast paths, launchers, stubs) and their one environment.

They sit on the ground floor so that the backend (launchers), the call path
(fast paths) and the stubs all render from below.
"""

from __future__ import annotations

from typing import Any

import jinja2

from tltyped.templates.names import c_string

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("tltyped", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)
_ENV.filters["c_string"] = c_string


def render(template: str, **context: Any) -> str:
    return _ENV.get_template(template).render(**context)
