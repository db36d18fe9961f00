"""The tour: compile the seed kernels, show what tltyped knows and checks, run them on a GPU.

    python examples/demo.py

Without a GPU it compiles for sm_90a (or $TLTYPED_TARGET) and stops before
running; with one it also runs every kernel and checks it against torch.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TLTYPED_TARGET", "sm_90a")

from examples.add import add  # noqa: E402
from examples.gemm import gemm  # noqa: E402
from examples.gemm_in_body import gemm as gemm_in_body  # noqa: E402
from examples.softmax import softmax  # noqa: E402

DEVICE = "cuda" if HAS_GPU else "meta"


def heading(text: str) -> None:
    print(f"\n{'=' * 78}\n{text}\n{'=' * 78}")


def excerpt(text: str, needle: str, lines: int = 6) -> str:
    rows = text.splitlines()
    at = next((i for i, row in enumerate(rows) if needle in row), 0)
    return "\n".join(row.strip()[:110] for row in rows[at : at + lines])


def show_kernel(title: str, fn: object, *args: torch.Tensor) -> None:
    heading(title)
    print("signature:  ", fn.signature)  # type: ignore[attr-defined]
    dispatcher = fn._dispatcher  # type: ignore[attr-defined]
    call = [*args, *(p.default for p in fn.signature.params[len(args):])]  # type: ignore[attr-defined]
    print("static key: ", dispatcher.key(*call))
    start = time.perf_counter()
    lowered = fn.lower(*args)  # type: ignore[attr-defined]
    print(f"lowered for {lowered.target['arch']} in {time.perf_counter() - start:.2f} s")
    print("TIR (head):\n" + textwrap.indent("\n".join(lowered.tir.splitlines()[:9]), "    "))
    print("CUDA (Hopper tensor cores: wgmma):\n" + textwrap.indent(excerpt(lowered.cuda_source, "tl::wgmma_", 2), "    "))
    start = time.perf_counter()
    kernel = fn.compile(*args)  # type: ignore[attr-defined]
    how = "nvcc" if kernel.compiled else "disk cache"
    print(f"built ({how}) in {time.perf_counter() - start:.2f} s; outputs: {[o.shape for o in kernel.outputs]}")


def show_checks() -> None:
    heading("Checks at call time (each is a clear Python error, never a crash)")
    a = torch.empty(1024, 512, dtype=torch.float16, device=DEVICE)
    bad_calls: dict[str, Callable[[], object]] = {
        "wrong dtype": lambda: gemm.lower(a.float(), torch.empty(512, 256, dtype=torch.float16, device=DEVICE)),
        "K disagrees": lambda: gemm.lower(a, torch.empty(256, 256, dtype=torch.float16, device=DEVICE)),
        "wrong rank": lambda: gemm.lower(a[0], torch.empty(512, 256, dtype=torch.float16, device=DEVICE)),
        "CPU tensor": lambda: gemm(torch.empty(1024, 512, dtype=torch.float16), torch.empty(512, 256, dtype=torch.float16)),
        "missing arg": lambda: gemm_in_body(a, a),  # type: ignore[call-arg]
        "unhashable const": lambda: gemm.lower(a, torch.empty(512, 256, dtype=torch.float16, device=DEVICE), [128]),  # type: ignore[arg-type]
    }
    for what, call in bad_calls.items():
        try:
            call()
            print(f"{what:>17}: (no error?)")
        except (TypeError, ValueError) as exc:
            print(f"{what:>17}: {type(exc).__name__}: {exc}")


def show_stubs() -> None:
    heading("Generated stubs (python -m tltyped.stubs examples.interleave): what IDEs see")
    import examples.interleave
    from tltyped.stubs import render_stub

    print(render_stub(examples.interleave))


STATIC_EXAMPLE = """\
from typing import Literal
import tltyped as tl
from examples.gemm import gemm

def use(a: tl.Tensor[tl.float16, Literal[1024], Literal[512]],
        b: tl.Tensor[tl.float16, Literal[256], Literal[128]],
        c: tl.Tensor[tl.float32, Literal[512], Literal[128]]) -> None:
    reveal_type(gemm(a, c.half()))
    gemm(a, b)   # K: 512 vs 256
    gemm(a, c)   # B must be float16
"""


def show_static_checks() -> None:
    heading("Static checks: mypy with plugins = tltyped.mypy_plugin, on a caller of the seed GEMM")
    import tempfile

    try:
        from mypy import api as mypy_api
    except ImportError:
        print("(mypy is not installed here; ./scripts/demo.sh installs it)")
        return
    print(textwrap.indent(STATIC_EXAMPLE, "    "))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "caller.py"
        path.write_text(STATIC_EXAMPLE)
        os.environ["MYPYPATH"] = str(ROOT)
        config = ROOT / "tests" / "typing" / "mypy.ini"
        stdout, _, _ = mypy_api.run(["--config-file", str(config), "--cache-dir", str(Path(tmp) / "cache"), str(path)])
    print(textwrap.indent(stdout.replace(str(path), "caller.py"), "    "))


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def run_on_gpu() -> None:
    heading("Running on " + torch.cuda.get_device_name())
    a = torch.randn(2048, 1024, dtype=torch.float16, device="cuda")
    b = torch.randn(1024, 1536, dtype=torch.float16, device="cuda")
    c = gemm(a, b)
    print(f"gemm (signature form)   rel err {rel_err(c, a.double() @ b.double()):.2e}")
    c2 = torch.full((2048, 1536), float("nan"), device="cuda")
    gemm_in_body(a, b, c2)
    print(f"gemm (in-body form)     rel err {rel_err(c2, a.double() @ b.double()):.2e}")
    x, y = torch.randn(100_003, dtype=torch.float16, device="cuda"), torch.randn(100_003, dtype=torch.float16, device="cuda")
    z = torch.empty_like(x)
    add(x, y, z)
    print(f"add (dyn length)        rel err {rel_err(z, x.double() + y.double()):.2e}")
    s = torch.randn(777, 512, device="cuda")
    print(f"softmax (dyn rows)      rel err {rel_err(softmax(s), torch.softmax(s.double(), 1)):.2e}")
    for fn in (gemm, gemm_in_body, add, softmax):
        print(f"{fn.__name__:>8}.cache_info() = {fn.cache_info()}")
    start = time.perf_counter()
    for _ in range(10_000):
        add(x, y, z)
    torch.cuda.synchronize()
    print(f"cached call of add: {(time.perf_counter() - start) / 10_000 * 1e6:.2f} us")


def main() -> None:
    m, k, n = 1024, 512, 256
    show_kernel(
        "Seed GEMM, signature form (K dyn)", gemm,
        torch.empty(m, k, dtype=torch.float16, device=DEVICE), torch.empty(k, n, dtype=torch.float16, device=DEVICE),
    )
    show_kernel(
        "Seed GEMM, in-body form (the second seed, verbatim)", gemm_in_body,
        torch.empty(m, k, dtype=torch.float16, device=DEVICE), torch.empty(k, n, dtype=torch.float16, device=DEVICE),
        torch.empty(m, n, dtype=torch.float32, device=DEVICE),
    )
    heading("Generated fast path of the signature-form GEMM")
    print(gemm.fast_path_source)
    show_checks()
    show_static_checks()
    show_stubs()
    if HAS_GPU:
        run_on_gpu()
    else:
        print("\nNo GPU here: kernels were compiled for", os.environ["TLTYPED_TARGET"], "but not run.")


if __name__ == "__main__":
    main()
