"""A const's key text read back as Python writes the value, for people: `cache ls` and the call path's log.

The key text (`fingerprint.Reader.text`) says of every value what it is, so
that two values that compile differently never share a text:
`builtins.tuple:(int:64, str:'a')`. Shown, the kind prefixes go and the
value reads as its repr would: `(64, 'a')`. What the key holds beyond the
value (a function's code digest and closure, an enum's class and value, a
NaN's bits) is left out, as a reader knows the value by its name.
"""

from __future__ import annotations

import re
from typing import Any

# what a key text puts before a value; a dtype's names how it was spelled (`str:'half'`)
_KIND = re.compile(r"dtype:(?:str:)?|enum:|tune:|seen:\d+:|[A-Za-z_][\w.]*:")
_NAMED = ("function:", "class:", "module:")  # shown by name: `function:mod.f source <sha>(code=...)` -> `mod.f`
_EMPTY = {"set:": "set()", "frozenset:": "frozenset()"}  # `{}` would read as a dict
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def shown(text: str) -> str:
    """A const's key text as a reader would write the value: `builtins.tuple:(int:64, str:'a')` -> `(64, 'a')`.

    Each value's kind prefix is dropped (a list's parentheses become
    brackets, a one-element tuple gets its comma back, a frozenset reads
    `frozenset({...})`, a tuned const's space `tune(...)`); quoted text (a
    str's or bytes' repr) and a complex number's parentheses are copied as
    they are; a function, class or module reads as its qualified name (a
    jit function as the function it wraps, one read before in the same key
    too), a dataclass instance or a named tuple as its class's name and its
    values, an enum member as `module.Class.NAME`, any NaN as `nan`.
    """
    out: list[str] = []
    groups: list[list[Any]] = []  # per open bracket: what closes it, whether it needs no comma added
    at_value = True  # where a kind prefix may stand
    container = False  # a tuple's (or list's) parenthesis comes next: the kind before it was one
    i = 0
    while i < len(text):
        kind = _KIND.match(text, i) if at_value else None
        if kind is not None:
            i, at_value, container = _after_kind(text, kind.group(), kind.end(), out, groups)
            continue
        char = text[i]
        if char in "'\"":
            end = _quoted_end(text, i)
            out.append(text[i:end])
            i, at_value = end, False
            continue
        if char in _CLOSERS:  # only a tuple's parenthesis may need a comma added: () has none to add
            groups.append([_CLOSERS[char], char != "(" or not container or text.startswith(")", i + 1)])
        elif char == "," and groups:
            groups[-1][1] = True
        elif char in ")]}" and groups:
            closer, comma = groups.pop()
            char = closer if comma else ",)"
        out.append(char)
        at_value = char in "([{ ="
        container = False
        i += 1
    return "".join(out)


def _after_kind(text: str, kind: str, i: int, out: list[str], groups: list[list[Any]]) -> tuple[int, bool, bool]:
    """Shows what a kind prefix ending at `i` stands for; returns where reading goes on, whether a value (with
    its own prefix) starts there, and whether a parenthesis there is a tuple's."""
    if kind in _NAMED or kind.startswith("seen:"):
        end = _named_end(text, kind, i)
        out.append(re.split(r"[ (]", text[i:end], maxsplit=1)[0])
        return end + text.startswith(":(", end), False, False  # a named tuple's items follow its class (`:(`)
    if kind == "wrapped:":  # wrapped:<the wrapper's class>(<what it wraps>, <the wrapper's state>)
        wrapper = _KIND.match(text, i)
        inner = (_named_end(text, wrapper.group(), wrapper.end()) if wrapper else i) + 1
        out.append(shown(text[inner : _value_end(text, inner)]))
        return _value_end(text, i), False, False
    if kind == "enum:":  # enum:module.Class.NAME:<its class's text>=<the member's value>
        name_end = text.index(":", i)
        out.append(text[i:name_end])
        return _value_end(text, _value_end(text, name_end + 1, stops="=") + 1), False, False
    if kind == "float:" and text.startswith("nan:", i):  # float:nan:<its bits>
        out.append("nan")
        return _value_end(text, i), False, False
    if kind in _EMPTY and text.startswith("{}", i):
        out.append(_EMPTY[kind])
        return i + 2, False, False
    if kind == "tune:":
        out.append("tune")
        return i, True, True
    if kind == "dataclass:":  # dataclass:<its class>(<field>=<value>, ...)
        return i, True, False
    opened = {"builtins.list:": ("[", "]"), "frozenset:": ("frozenset({", "})")}.get(kind)
    if opened is not None and text.startswith(("(", "{"), i):
        out.append(opened[0])
        groups.append([opened[1], True])
        return i + 1, True, False
    return i, False, kind != "complex:"


def _value_end(text: str, i: int, stops: str = ",", pairs: bool = True) -> int:
    """Where the key text of a value that starts at `i` ends: at the first of `stops` (by default the comma after
    it), the `: ` after a dict's key (unless not `pairs`), or the bracket closing what holds it, outside quotes
    and the brackets it opens; else at the end."""
    depth = 0
    while i < len(text):
        char = text[i]
        if char in "'\"":
            i = _quoted_end(text, i)
            continue
        if depth == 0 and (char in stops or char in ")]}" or pairs and text.startswith(": ", i)):
            return i
        depth += (char in "([{") - (char in ")]}")
        i += 1
    return i


def _quoted_end(text: str, i: int) -> int:
    """Where the quoted text (a str's or bytes' repr) that starts at `i` ends, past its closing quote."""
    quote, i = text[i], i + 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _named_end(text: str, kind: str, i: int) -> int:
    """Where the text of a function, class or module that starts at `i` ends: after its name and origin, and the
    parenthesis that follows them where they have one (a function's code; a user's class's or module's
    attributes, which only those read from a source file have). What may follow is another value's text (a
    dataclass's fields, a named tuple's items)."""
    end = _value_end(text, i, stops=",(:")
    has_group = kind == "function:" or " source " in text[i:end]
    if has_group and text.startswith("(", end):
        return _value_end(text, end + 1, stops="", pairs=False) + 1  # past the parenthesis closing it
    return end
