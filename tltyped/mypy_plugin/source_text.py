"""A module's source text, read back where mypy's parse keeps only positions."""

from __future__ import annotations

import ast
import textwrap


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

    def statement(self, line: int, end_line: int | None, column: int) -> ast.stmt | None:
        """The statement at `column` of lines `line` to `end_line` (1-based, inclusive; a line may hold several,
        `L = N * 2; L += 1`), parsed by Python's `ast` as the runtime reads it; None where those lines do not parse
        alone (not the source mypy read). Its line numbers are the module's; its columns those of the lines
        dedented, which order the statements of one line as in the module."""
        lines = self.lines()
        end = end_line or line
        if line < 1 or end > len(lines):
            return None
        text = "\n".join(lines[line - 1 : end])
        dedented = textwrap.dedent(text)
        shift = len(text.split("\n")[0]) - len(dedented.split("\n")[0])  # the indentation dedent took off
        try:
            body = ast.parse(dedented).body
        except SyntaxError:
            return None
        found = next((node for node in body if node.lineno == 1 and node.col_offset == column - shift), None)
        return None if found is None else ast.increment_lineno(found, line - 1)
