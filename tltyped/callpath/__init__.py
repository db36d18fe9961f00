"""The call path: the generated fast path and the dispatcher that owns it."""
