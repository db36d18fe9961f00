"""A quoted annotation, `B: "T.Tensor[[K * 2, M], T.float16]"`, with each part placed where it is written.

mypy parses a string annotation as the annotation it holds, but gives every
part of it the string's position. The rewrite reads a dim that is no name or
int (`K * 2`, `A.shape[1]`) as the module's text at the dim's position
(source_text.py), so each part is given back its own place: where the string
is written as it reads (one literal, no escape), a part's place in the string
is its place in the module, on the string's lines. Where it is not, no part's
place is known, and the annotation is left unread rather than guessed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from mypy.fastparse import parse_type_comment
from mypy.types import TupleType, Type, TypeList, UnboundType

_Place = tuple[int, int, int, int]  # line, column, end line, end column


def placed(typ: Type, lines: list[str]) -> Type | None:
    """`typ` with each part at its place in the module (the module's `lines`): itself where it is not written as
    a string; None for a string whose parts' places are unknown (an escape, a concatenation)."""
    if typ.end_line is None or typ.end_column is None or not 1 <= typ.line <= typ.end_line <= len(lines):
        return typ
    written = lines[typ.line - 1 : typ.end_line]
    for unit in (str, bytes):  # mypy's columns count characters or UTF-8 bytes, as SourceText.span reads them
        literal = _literal(written, typ.column, typ.end_column, unit)
        if literal is None:
            continue
        segment, value = literal
        prefix = len(segment) - len(segment.lstrip("rRuU"))
        quote = 3 if segment[prefix : prefix + 3] in ('"""', "'''") else 1
        if segment[prefix + quote : len(segment) - quote] != value:  # an escape, a concatenation: not the module's text
            return None
        at = _places(value, typ.line, typ.column + prefix + quote, unit)
        if at is None:
            return None
        node, place = at
        return typ if _place(typ, node, place) else None
    return typ


def written_at(text: str, line: int, column: int, unit: type[str] | type[bytes]) -> Type | None:
    """The annotation mypy would parse from `text`, an expression the module writes at `column` (in `unit`s) of
    `line` other than as an annotation (the value of `Bt = T.Tensor[[8, 4], T.float16]`, which `B: Bt` names), with
    each part at its place there, as `placed` gives a string's; None for text that is no annotation."""
    try:
        _, typ = parse_type_comment(f"({text})", line=line, column=column, errors=None)
    except (SyntaxError, ValueError):
        return None
    at = _places(text, line, column, unit)
    if typ is None or at is None:
        return None
    node, place = at
    return typ if _place(typ, node, place) else None


def _literal(written: list[str], column: int, end_column: int, unit: type[str] | type[bytes]) -> tuple[str, str] | None:
    """The text spanning `written` from `column` to `end_column` (in `unit`s) and the string it holds, if it is a
    string literal; None if it is not."""
    first, last = _in(written[0], unit), _in(written[-1], unit)
    if len(written) == 1:
        segment = first[column:end_column]
    else:
        segment = "\n".join([first[column:], *written[1:-1], last[:end_column]])
    try:
        node = ast.parse(segment.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if segment != segment.strip() or not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return None
    return segment, node.value


def _in(line: str, unit: type[str] | type[bytes]) -> str:
    """A line as indexed in `unit`s: characters, or UTF-8 bytes (read back as one character each)."""
    return line if unit is str else line.encode().decode("latin-1")


def _places(
    value: str, line: int, column: int, unit: type[str] | type[bytes],
) -> tuple[ast.expr, Callable[[ast.expr], _Place]] | None:
    """The annotation `value` holds, parsed as mypy parses it (in parentheses), and the module place of each of its
    nodes, for a string whose text starts at `column` of `line`; None for none (no opening, or no expression)."""
    if column < 0:
        return None
    try:
        node = ast.parse(f"({value})", mode="eval").body
    except (SyntaxError, ValueError):
        return None
    held = f"({value})".split("\n")

    def offset(lineno: int, col_offset: int) -> tuple[int, int]:
        """ast's line and byte offset in the parenthesised string, as the module's line and column."""
        counted = held[lineno - 1].encode()[:col_offset].decode(errors="replace") if unit is str else "x" * col_offset
        return line + lineno - 1, (column + len(counted) - 1 if lineno == 1 else len(counted))

    def place(part: ast.expr) -> _Place:
        return (*offset(part.lineno, part.col_offset), *offset(part.end_lineno or part.lineno, part.end_col_offset or 0))

    return node, place


def _place(typ: Type, node: ast.expr, place: Callable[[ast.expr], _Place]) -> bool:
    """Give `typ` and each part of it the place of the node it was parsed from, walking both as mypy's parser
    reads one from the other; False where they do not match."""
    line, column, end_line, end_column = place(node)
    typ.set_line(line, column, end_line, end_column)
    nodes: list[ast.expr]
    parts: list[Type]
    if isinstance(typ, UnboundType) and typ.args:
        if not isinstance(node, ast.Subscript):
            return False
        nodes, parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice], list(typ.args)
    elif isinstance(typ, TypeList):
        if not isinstance(node, ast.List):
            return False
        nodes, parts = node.elts, typ.items
    elif isinstance(typ, TupleType):
        if not isinstance(node, ast.Tuple):
            return False
        nodes, parts = node.elts, typ.items
    else:
        return True
    return len(nodes) == len(parts) and all(_place(part, found, place) for part, found in zip(parts, nodes))
