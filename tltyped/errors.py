"""Every error tltyped raises: one family under `tl.Error`, each also of the builtin kind it is.

`except tl.Error` catches whatever tltyped raises; `except TypeError` still
catches a wrong argument type, as it would from any Python function. Errors
of torch's own are torch's (`torch.OutOfMemoryError` when an output does not
fit), and a kernel body's own exception is the cause of the KernelBuildError
that names its line.

This module imports nothing: the mypy plugin and the lowest layers raise
these too. One class here is no `Error`: `UnsupportedSetup` ends the mypy
process, as SystemExit does.
"""

from __future__ import annotations


class Error(Exception):
    """The base of every error tltyped raises."""


# -- a call, or an argument of tltyped's API ------------------------------------------------


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type, kind or count: a float where a tensor belongs, a tensor of another dtype."""


class ArgumentValueError(Error, ValueError):
    """An argument of the right type that cannot be used: a disagreeing dim, another device, an overlap."""


# -- a kernel's definition and build -----------------------------------------------------


class DefinitionError(Error, TypeError):
    """A kernel definition tltyped cannot accept, reported at decoration (or when its annotations are read)."""


class Undefined(DefinitionError):
    """An annotation uses a name that nothing defines (not the body, the function's module or its closure)."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


class DimSyntaxError(Error, ValueError):
    """A dim written outside the dim grammar (tltyped/types/dim_grammar.py)."""


class UndeclaredDim(DimSyntaxError):
    """A name used as a dim that nothing declares; each form's reader says how to declare one."""

    def __init__(self, name: str) -> None:
        super().__init__(f"dim `{name}` is used but never declared")
        self.name = name


class KernelBuildError(Error, RuntimeError):
    """The kernel cannot be built for these arguments: its body failed (an ElaborationError), or what it builds
    could never launch (an extent out of CUDA's range, more shared memory than a block has)."""


class ElaborationError(KernelBuildError):
    """Running the kernel body (or a lazy-style factory) for these arguments failed, or built what its annotations
    deny; the message names the user's source line. TileLang raises these before anything compiles, so
    `par_compile(ignore_error=True)` raises them too."""


class LoweringError(Error, RuntimeError):
    """TileLang/TVM rejected the kernel while lowering it."""


class CompileError(Error, RuntimeError):
    """A compiler rejected a generated source, or could not be run."""


class TargetError(Error, RuntimeError):
    """No target was named and none can be detected, or the one named is not a target."""


class TuningError(Error, RuntimeError):
    """No candidate of a tuning space could be built and run; the message lists each one's error."""


class LaunchError(Error, RuntimeError):
    """A kernel cannot be launched: no CUDA device, a device that cannot be made current, a TMA descriptor the
    driver refuses."""


class AutogradError(Error, RuntimeError):
    """A gradient through a kernel with no registered backward (at `backward()`), or a call autograd would record
    to a kernel that writes an argument (at the call): never a silently missing gradient."""


class CacheWarning(Error, UserWarning):
    """The kernel cache held something unusable, or cannot be used; tltyped rebuilt or fell back."""


# -- internal: handled inside tltyped --------------------------------------------------------


class UnusableCache(Error, OSError):
    """The cache directory cannot be used safely (caught: the process falls back to a private folder)."""


class CacheRemoved(UnusableCache):
    """The staging folder of a build was removed while the build wrote into it: the cache was removed (`rm -rf`)
    under the process. Not the build's fault, nor a full disk's: the cache builds it once more, in the cache
    folder made again; removed again, the build goes to the private fallback as for any unusable cache."""


class ABIError(Error, RuntimeError):
    """A lowered kernel's parameters are not what its signature implies: a bug in tltyped or TileLang."""


class Deferred(Error):
    """An annotation needs values known only at a call: these const parameters, or names not yet defined
    (caught: the annotation is read again at the call)."""

    def __init__(self, consts: frozenset[str]) -> None:
        super().__init__(sorted(consts))
        self.consts = consts


class UnsupportedSetup(SystemExit):
    """mypy runs where the plugin's rewrite cannot hold (another mypy version, `--num-workers`): mypy stops.

    Not an `Error`: it ends the mypy process, and mypy reports any Exception a plugin raises as its own
    internal error."""

    def __init__(self, message: str) -> None:
        super().__init__(f"tltyped.mypy_plugin: {message}")
