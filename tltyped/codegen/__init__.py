"""Jinja templates (templates/*.j2) and their renderers: fast paths, launchers, stubs."""
