"""User names inside generated Python and C++: made safe, never pasted raw.

A kernel's `__name__` may be any text (`gemm[fp16]`, or text with quotes,
`%`, newlines or `*/`), and a parameter may be named like a C++ keyword
(`new`, `this`, `int`) or like a name TileLang's host code declares
(`stream`, `error_buf`). So a name that becomes code goes through
`identifier` (the kernel) or `c_names` (the kernel's parameters and dims),
and a name that appears inside a C string literal or comment goes through
`c_string`; Python-side text only ever reaches messages.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

_CPP_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
    compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
    default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
    int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast
    struct switch template this thread_local throw true try typedef typeid typename union unsigned using virtual
    void volatile wchar_t while xor xor_eq
""".split())

_DECLARED = frozenset("""
    stream config attribute error_buf ERROR_BUF_SIZE TL_EXPORT call init get_last_error stream_attribute
    init_persisting_l2_cache_size cluster_attr_result TILELANG_CHECK TILELANG_CHECK_LAST_ERROR
    CUTLASS_CUDA_DRIVER_WRAPPER_CALL threadIdx blockIdx blockDim gridDim warpSize dim3 uint uchar ushort ulong
    tl cute cutlass std half half_t bfloat16_t float_e4m3_t float_e5m2_t NULL EOF stdin stdout stderr errno
    assert offsetof min max abs exp exp2 expf log log2 sqrt rsqrt pow tanh sin cos floor ceil round fabs fmaxf
    fminf signbit isnan isinf main
""".split())
"""Names TileLang's host code, the launcher template, CUDA, and the C and Python headers declare."""

_DECLARED_PREFIXES = ("_", "tltyped_", "cuda", "CU", "Py", "PY", "HAVE_", "SIZEOF_", "ALIGNOF_", "WITH_")


def identifier(name: str) -> str:
    """`name` as an identifier of Python and C++ alike (`gemm[fp16]` -> `gemm_fp16_`)."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    if text[0].isdigit() or keyword.iskeyword(text) or text in _CPP_KEYWORDS:
        text = f"_{text}"
    return text


def c_names(names: Iterable[str], reserved: Iterable[str] = ()) -> list[str]:
    """A distinct C identifier for each of `names`, in order: the name itself where that is safe, else a variant.

    A name is kept when it is plain ASCII, names nothing `_DECLARED` or
    `reserved`, starts with no declared prefix and has not been kept
    already; otherwise `gemm[fp16]` becomes `gemm_fp16_`, `new` becomes
    `new_`, `_tl_x` becomes `tl_x`, and a number is added until it is free. (A parameter and a dim may share a
    name in Python; in C they are two variables.)
    """
    reserved = set(reserved)
    kept: set[str] = set()
    wanted = list(names)
    taken = reserved | {n for n in wanted if _is_safe(n)}
    out: list[str] = []
    for name in wanted:
        if _is_safe(name) and name not in reserved and name not in kept:
            kept.add(name)
            out.append(name)
            continue
        base = re.sub(r"[^A-Za-z0-9_]", "_", name).lstrip("_") or "p"
        base = f"p{base}" if base[0].isdigit() else base
        candidate, n = base if base != name else f"{base}_", 1
        while candidate in taken or not _is_safe(candidate):
            candidate, n = f"{base}_{n}", n + 1
        taken.add(candidate)
        out.append(candidate)
    return out


def _is_safe(name: str) -> bool:
    return (
        re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) is not None
        and name not in _CPP_KEYWORDS and name not in _DECLARED and not name.startswith(_DECLARED_PREFIXES)
    )


def c_string(text: str) -> str:
    """`text` as a C string literal, quotes included, that compiles to the same characters.

    Only printable ASCII other than `"`, `\\` and `?` (trigraphs) stays as
    it is; the rest becomes octal escapes, so the literal holds no newline and
    is safe in a `//` comment too. Pass it to a printf-style function as a
    `%s` argument, never as the format.
    """
    out = []
    for byte in text.encode("utf-8", "backslashreplace"):
        ch = chr(byte)
        out.append(f"\\{ch}" if ch in '"\\?' else ch if " " <= ch <= "~" else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
