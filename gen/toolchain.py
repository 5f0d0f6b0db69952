"""The external tools behind the Verilog flow: finding them, their versions, running them, caching.

Icarus Verilog (``iverilog``, ``vvp``), Verilator (``verilator``, which needs
``g++`` and ``make`` to build) come from Debian packages; ``make simulators``
installs them.  A missing binary is a :class:`~gen.simulator.SimulatorError`
that names the package to install, never a silent skip.

Builds are cached under :func:`cache_root` (``$GA2_CACHE_DIR``, else
``$XDG_CACHE_HOME/ga2`` or ``~/.cache/ga2``), one directory per key (a hash of
everything that goes into the build).  Concurrent processes (pytest-xdist
workers, two shells) that want the same key take a file lock, so one builds
and the others reuse; a build is made in a temporary directory and renamed
into place, so a killed build never leaves a half-made entry behind.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

from .simulator import SimulatorError

#: binary -> the Debian package that provides it
DEBIAN_PACKAGE = {
    "iverilog": "iverilog",
    "vvp": "iverilog",
    "verilator": "verilator",
    "g++": "g++",
    "make": "make",
}


def require(binary: str) -> str:
    """The path of ``binary``, or a SimulatorError naming the package that provides it."""
    path = shutil.which(binary)
    if path is None:
        package = DEBIAN_PACKAGE.get(binary, binary)
        raise SimulatorError(
            f"'{binary}' was not found on PATH: install the Debian package '{package}' "
            f"(apt-get install {package}), or run `make simulators` in the repository")
    return path


@functools.lru_cache(maxsize=None)
def _version_of(path: str, args: tuple[str, ...]) -> str:
    try:
        out = subprocess.run([path, *args], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise SimulatorError(f"could not run {path}: {e}") from None
    text = (out.stdout + out.stderr).strip()
    return text.splitlines()[0] if text else "unknown"


def version(binary: str) -> str:
    """The first line of ``binary``'s version output (part of every build key)."""
    args = {"iverilog": ("-V",), "vvp": ("-V",), "verilator": ("--version",)}.get(binary, ("--version",))
    return _version_of(require(binary), args)


def cache_root() -> Path:
    env = os.environ.get("GA2_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ga2"


def digest(*parts: str | bytes) -> str:
    """A short hex key for the concatenation of ``parts`` (each length-prefixed)."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()[:20]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created if needed), held for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached_dir(kind: str, key: str) -> tuple[Path, Path]:
    """(final directory, lock file) of a cache entry."""
    root = cache_root() / kind
    return root / key, root / f"{key}.lock"


def new_build_dir(final: Path) -> Path:
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))


def publish(tmp: Path, final: Path) -> None:
    """Move a finished build into place (atomic rename on one file system)."""
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)


def touch(path: Path) -> None:
    """Mark a cache entry as used now (pruning keeps the most recently used)."""
    try:
        os.utime(path)
    except OSError:
        pass


def prune(kind: str, keep: int = 24) -> None:
    """Remove all but the ``keep`` most recently used entries of one cache kind.

    An entry whose lock another process holds is left alone.
    """
    root = cache_root() / kind
    if not root.is_dir():
        return
    now = time.time()
    for tmp in root.glob(".*"):          # builds that were killed half-way, long ago
        if tmp.is_dir() and now - tmp.stat().st_mtime > 6 * 3600:
            shutil.rmtree(tmp, ignore_errors=True)
    entries = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[keep:]:
        lock = root / f"{old.name}.lock"
        try:
            with open(lock, "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                try:
                    shutil.rmtree(old, ignore_errors=True)
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
        except OSError:
            continue


def run(cmd: Sequence[str], *, cwd: str | os.PathLike | None = None, what: str,
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run a build step; a non-zero exit is a SimulatorError with the tool's output."""
    try:
        p = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
    except FileNotFoundError:
        require(cmd[0])
        raise
    except subprocess.TimeoutExpired:
        raise SimulatorError(f"{what} took longer than {timeout} s: {' '.join(cmd)}") from None
    if p.returncode != 0:
        out = (p.stdout + p.stderr).strip()
        tail = "\n".join(out.splitlines()[-40:])
        raise SimulatorError(f"{what} failed (exit status {p.returncode}): {' '.join(cmd)}\n{tail}")
    return p
