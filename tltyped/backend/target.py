"""Which GPU architecture to compile for.

In order: `tl.jit(target=...)` (unless it is TileLang's `"auto"` or
`"cuda"`), the `TLTYPED_TARGET` environment variable, then the compute
capability of the device holding the call's tensors. Targets
are TileLang's dicts, e.g. `{"kind": "cuda", "arch": "sm_90a"}`.
"""

from __future__ import annotations

import os
import re
from typing import Any, Union

import torch

from tltyped.errors import TargetError
from tltyped.types.values import describe

TargetLike = Union[str, dict[str, Any], None]
ENV_VAR = "TLTYPED_TARGET"

_ARCH = re.compile(r"^(?:cuda)?[\s:]*(?:-arch=)?(sm_\d{2,3}[a-z]?)$")
_NAME_AN_ARCH = "name a CUDA architecture such as 'sm_90a' or 'sm_80'"


SHARED_MEMORY_PER_BLOCK = {  # bytes a block may opt in to, by compute capability (CUDA's programming guide)
    "70": 96 << 10, "72": 96 << 10, "75": 64 << 10, "80": 163 << 10, "86": 99 << 10, "87": 163 << 10,
    "89": 99 << 10, "90": 227 << 10, "100": 227 << 10,
}


def shared_memory_limit(target: dict[str, Any]) -> int | None:
    """The most shared memory one block of the target may use, where known."""
    found = re.match(r"sm_(\d+)", str(target.get("arch", "")))
    return SHARED_MEMORY_PER_BLOCK.get(found.group(1)) if found else None


DETECTED = frozenset({"auto", "cuda"})
"""TileLang's targets meaning "the GPU at hand": the same as giving none."""


def explicit(target: TargetLike) -> TargetLike:
    """The target a decorator names, or None where it names TileLang's detected one (`target="auto"`)."""
    return None if isinstance(target, str) and target.strip() in DETECTED else target


def normalize(target: str | dict[str, Any]) -> dict[str, Any]:
    """`"sm_90a"`, `"cuda -arch=sm_90a"` or a target dict with an "arch" -> a target dict."""
    if isinstance(target, dict):
        if target.get("kind", "cuda") != "cuda" or not _ARCH.match(str(target.get("arch", ""))):
            raise TargetError(f"target {describe(target)} needs kind 'cuda' and an 'arch' such as 'sm_90a'")
        return {"kind": "cuda", **target}
    found = _ARCH.match(target.strip()) if isinstance(target, str) else None
    if found is None:
        raise TargetError(f"unknown target {describe(target)}; {_NAME_AN_ARCH}")
    return {"kind": "cuda", "arch": found.group(1)}


def arch_of(device: torch.device) -> str:
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


def resolve(explicit: TargetLike, device: torch.device | None) -> dict[str, Any]:
    if explicit is not None:
        return normalize(explicit)
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        try:
            return normalize(from_env)
        except TargetError:
            raise TargetError(f"{ENV_VAR}={from_env!r} is not a target: {_NAME_AN_ARCH}") from None
    if device is not None and device.type == "cuda":
        return normalize(arch_of(device))
    if torch.cuda.is_available():
        return normalize(arch_of(torch.device("cuda", torch.cuda.current_device())))
    raise TargetError(
        "no CUDA GPU is visible, so the compile target cannot be detected; name one with "
        f"tl.jit(target='sm_90a') or the {ENV_VAR} environment variable (e.g. {ENV_VAR}=sm_90a)"
    )
