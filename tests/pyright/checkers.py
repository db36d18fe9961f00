"""Run pyright and mypy (with the tltyped plugin) as a user would, and read their JSON diagnostics.

Each checker runs in its own process: pyright through its pip package (it
brings its own Node runtime), mypy with tests/typing/mypy.ini, the plugin's
configuration for kernel modules.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MYPY_INI = ROOT / "tests" / "typing" / "mypy.ini"

IN_BODY_QUIET = "# pyright: reportRedeclaration=false"
"""The one line that quiets pyright on a module of in-body kernels (README: Static checks and stubs)."""


@dataclass(frozen=True)
class Diagnostic:
    path: Path
    line: int  # 1-based
    severity: str  # "error", "warning", "information" (pyright) or "error", "note" (mypy)
    rule: str  # pyright's rule or mypy's error code; "" when it has none
    message: str


def pyright(*files: Path, config: Path = ROOT / "pyproject.toml") -> list[Diagnostic]:
    """pyright's diagnostics for `files`, under the project's configuration (or another)."""
    command = [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable, "-p", str(config)]
    done = subprocess.run([*command, *map(str, files)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"pyright gave no JSON report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}") from None
    return [
        Diagnostic(
            Path(d["file"]), d["range"]["start"]["line"] + 1, d["severity"], d.get("rule", ""), d["message"],
        )
        for d in report["generalDiagnostics"]
    ]


def hovers(path: Path, positions: list[tuple[int, int]]) -> list[str]:
    """What an editor shows on hovering each (1-based line, 0-based column) of `path`: pyright's language
    server (the one Pylance is built on), asked over its stdio protocol as an editor asks it."""
    server = subprocess.Popen(
        [sys.executable, "-c", "from pyright.langserver import entrypoint; entrypoint()", "--stdio"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
    )
    assert server.stdin is not None and server.stdout is not None
    stdin, stdout = server.stdin, server.stdout
    deadline = threading.Timer(300, server.kill)  # a server that stops answering ends the reads, never hangs
    deadline.start()

    def send(message: dict[str, object]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        stdin.flush()

    def answer(request_id: int, method: str, params: dict[str, object]) -> object:
        send({"id": request_id, "method": method, "params": params})
        while True:
            length = 0
            while line := stdout.readline().strip():
                name, _, value = line.decode().partition(":")
                length = int(value) if name.lower() == "content-length" else length
            message = json.loads(stdout.read(length))
            if "method" in message and "id" in message:  # the server asks for settings: the venv's Python
                python = [{"pythonPath": sys.executable}] if message["method"] == "workspace/configuration" else None
                send({"id": message["id"], "result": python})
            elif message.get("id") == request_id:
                return message.get("result")

    try:
        answer(0, "initialize", {"processId": os.getpid(), "rootUri": ROOT.as_uri(), "capabilities": {},
                                 "workspaceFolders": [{"uri": ROOT.as_uri(), "name": ROOT.name}]})
        send({"method": "initialized", "params": {}})
        document = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text()}
        send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
        shown = []
        for request_id, (line, column) in enumerate(positions, start=1):
            found = answer(request_id, "textDocument/hover", {
                "textDocument": {"uri": path.as_uri()}, "position": {"line": line - 1, "character": column},
            })
            shown.append(found["contents"]["value"] if isinstance(found, dict) else "")
        return shown
    finally:
        deadline.cancel()
        server.kill()
        server.wait()


def mypy(*files: Path, cache_dir: Path) -> list[Diagnostic]:
    """mypy's diagnostics for `files`, with the plugin, as tests/typing/mypy.ini configures it."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(MYPY_INI), "--output", "json",
         "--cache-dir", str(cache_dir), *map(str, files)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "MYPYPATH": os.pathsep.join([str(ROOT), str(ROOT / "stubs")])},
    )
    found = []
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        found.append(Diagnostic((ROOT / d["file"]).resolve(), d["line"], d["severity"], d["code"] or "", d["message"]))
    if done.returncode not in (0, 1) or (done.returncode == 1 and not found):
        raise AssertionError(f"mypy failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return found


def marked_lines(path: Path, tag: str) -> dict[int, str]:
    """`{line: text}` for each line ending in `# <tag>: <text>`."""
    pattern = re.compile(rf"  # {tag}: (.+)$")
    return {
        number: found.group(1)
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if (found := pattern.search(line))
    }


_ALIAS_EXPANSION = re.compile(r"\bTypedTensor\[DTypeDims\[")


def shown_type(text: str) -> str:
    """A type as either checker prints it, spelled one way: no module prefixes, no `@scope` of TypeVars, and
    a tensor as users write it (`Tensor[float16, M]`: mypy with the plugin prints its `MypyPlugin.Tensor` so,
    pyright's reveal_type prints the alias's expansion, `TypedTensor[DTypeDims[float16, M]]`)."""
    text = re.sub(r"@\w+", "", re.sub(r"\btltyped\.types\.(tensor|dtypes)\.(MypyPlugin\.)?", "", text))
    while found := _ALIAS_EXPANSION.search(text):
        depth, end = 1, found.end()
        while depth:
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            end += 1
        text = f"{text[:found.start()]}Tensor[{text[found.end():end]}{text[end + 1:]}"  # end: the alias's bracket
    return text
