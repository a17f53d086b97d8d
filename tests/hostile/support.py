"""What the hostile-input tests share: a good EDF to damage, the command runner (optionally under an
address-space limit), and the check that an error is one line, not a traceback."""

from __future__ import annotations

import functools
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgpack
from example_kernels import KERNELS

from furiosa_opt.cli.new import create
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import FORMAT_VERSION, HEADER, MAGIC

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(sys.executable)
TOOL = PYTHON.with_name("furiosa-opt")
GIB = 1 << 30


@functools.cache
def good_edf(name: str = "constant_add") -> bytes:
    result = compile_kernel(KERNELS[name])
    assert result.ok, result.diagnostics
    return result.edf


def body_of(data: bytes) -> dict:
    return msgpack.unpackb(data[HEADER.size :], raw=False)


def rewrite(data: bytes, edit: Callable[[dict], object]) -> bytes:
    """The EDF with its body edited and its header (length, checksum) made valid again."""
    body = body_of(data)
    edit(body)
    packed = msgpack.packb(body, use_bin_type=True)
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(packed), hashlib.sha256(packed).digest()) + packed


@dataclass
class Done:
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def run(
    args: list[str | Path],
    cwd: Path,
    *,
    limit: int | None = None,
    timeout: float = 300,
    **env: str,
) -> Done:
    """Run a command; `limit` caps its address space (RLIMIT_AS) before it starts. It must not print a
    traceback."""

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "NO_COLOR": "1", **env}
    start = time.perf_counter()
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limited,
    )
    result = Done(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)
    assert "Traceback" not in result.text, result.text
    return result


def one_line_error(done: Done, *fragments: str, code: int = 1) -> str:
    """The single `error…` line a refusal prints on stderr (nothing else, no traceback), with `fragments`."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.code == code, done.text
    assert len(lines) == 1 and lines[0].startswith("error"), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def shared_folder() -> Path:
    """A fresh folder for a module's worth of tests (the caller removes it)."""
    return Path(tempfile.mkdtemp(prefix="furiosa-hostile-"))


def scaffold(parent: Path, prefix: str = "hz") -> tuple[Path, str]:
    """The base template scaffolded (`furiosa-opt new`) under a unique import name."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    return create(name, parent), name
