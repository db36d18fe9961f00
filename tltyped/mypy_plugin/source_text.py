"""A module's source text, read back where mypy's parse keeps only positions."""

from __future__ import annotations


class SourceText:
    """A module's source lines, read when a dim expression must be recovered.

    mypy's parser keeps `[N * 2]` inside an annotation only as "some
    expression" with its position; the text at that position is the dim.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lines: list[str] | None = None

    def span(self, line: int, column: int, end_line: int | None, end_column: int | None) -> list[str]:
        """The text between two positions on one line, read as characters and as UTF-8 bytes."""
        if end_line is None or end_column is None or end_line != line or line < 1 or column < 0:
            return []
        lines = self.lines()
        if line > len(lines):
            return []
        text = lines[line - 1]
        as_bytes = text.encode()[column:end_column].decode(errors="replace")
        return [text[column:end_column], as_bytes]

    def lines(self) -> list[str]:
        """Every line of the module; none when it cannot be read."""
        if self._lines is None:
            try:
                with open(self.path, encoding="utf-8") as source:
                    self._lines = source.read().splitlines()
            except (OSError, UnicodeDecodeError):
                self._lines = []
        return self._lines
