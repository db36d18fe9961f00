"""The Jinja templates of every generated artifact (fast paths, launchers, stubs) and their one environment.

They sit on the ground floor so that the backend (launchers), the call path
(fast paths) and the stubs all render from below. Jinja is imported on the
first render: a process that finds everything it generates in the disk cache
never imports it.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from typing import Any

from tltyped.templates.names import c_string


@functools.cache
def _environment() -> Any:
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("tltyped", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    environment.filters["c_string"] = c_string
    return environment


GENERATED = "<tltyped "
"""How the file name of generated Python code starts (`<tltyped fast path of gemm>`): its functions are
tltyped's, whatever their closures hold, and are read (by the disk cache's fingerprint) by what they wrap."""


def render(template: str, **context: Any) -> str:
    text: str = _environment().get_template(template).render(**context)
    return text


@functools.cache
def template_digest(template: str) -> str:
    """sha256 of a template's text: what a cached rendering of it must be keyed on, beside its context."""
    return hashlib.sha256(resources.files("tltyped.templates").joinpath(template).read_bytes()).hexdigest()
