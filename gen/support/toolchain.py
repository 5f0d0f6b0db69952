"""The external tools behind the Verilog flow: finding them, their versions, running them, caching.

Icarus Verilog (``iverilog``, ``vvp``), Verilator (``verilator``, which needs
``g++`` and ``make`` to build) come from Debian packages; ``make simulators``
installs them.  A missing binary is a :class:`SimulatorError`
that names the package to install, never a silent skip.

Builds are cached under :func:`cache_root` (``$GA2_CACHE_DIR``, else
``$XDG_CACHE_HOME/ga2`` or ``~/.cache/ga2``), one directory per key (a hash of
everything that goes into the build).  Concurrent processes (pytest-xdist
workers, two shells) that want the same key take a file lock, so one builds
and the others reuse; a build is made in a temporary directory and renamed
into place, so a killed build never leaves a half-made entry behind.  Every
entry carries a manifest (:func:`write_manifest`: the SHA-256 of each of its
files, written atomically as the last file before the rename); a reuse checks
it (:func:`check_manifest`) and a damaged entry is rebuilt, said once on stderr.

Child processes (compilers, ``make``, simulations) are started by
:func:`spawn` in a process group of their own and registered, so that an
interrupt of ga2 (``ga2_cli.main`` turns SIGINT/SIGTERM into an exception)
ends the whole group (``verilator_bin``, ``make``, ``g++``, ``vvp``) and the
temporary build directory is removed (:func:`end_all_children`).
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

from ga2_hdl.support.safe_io import atomic_write


class SimulatorError(RuntimeError):
    """A simulator or a tool could not be run (missing binary, failed build, malformed output).

    Defined here, below the simulators, so that the tools' layer needs nothing above it; the
    simulator interface (:mod:`gen.sim.simulator`) re-exports it as its error.
    """


#: part of every cache key: entries of an older layout (no manifest) are never mistaken for damaged ones
CACHE_FORMAT = "manifest-1"
#: manifest of a cache entry: what every file in it must hash to
MANIFEST = "manifest.json"
#: child processes still running (each the leader of its own process group)
_CHILDREN: set[subprocess.Popen] = set()
#: cache entries already reported as damaged in this process (said once)
_REPORTED: set[str] = set()

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


@contextlib.contextmanager
def build_dir(final: Path) -> Iterator[tuple[Path, dict]]:
    """(a temporary directory to build ``final`` in, its metadata for the block to fill); published
    with its manifest when the block ends normally, removed whatever else happens (an error, an
    interrupt)."""
    tmp = new_build_dir(final)
    meta: dict = {}
    try:
        yield tmp, meta
        write_manifest(tmp, meta)
        publish(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def publish(tmp: Path, final: Path) -> None:
    """Move a finished build into place (atomic rename on one file system)."""
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(directory: Path, meta: dict) -> None:
    """The entry's metadata and the SHA-256 of every file in it, written atomically, last."""
    files = {str(p.relative_to(directory)): _sha256(p) for p in sorted(directory.rglob("*"))
             if p.is_file() and p.name != MANIFEST}
    body = {"meta": meta, "files": files}
    body["digest"] = digest(json.dumps(body, sort_keys=True))
    atomic_write(directory / MANIFEST, json.dumps(body, indent=1, sort_keys=True))


def check_manifest(directory: Path) -> tuple[dict | None, str]:
    """(the entry's metadata, "") if ``directory`` is a whole, undamaged cache entry, else (None, why)."""
    path = directory / MANIFEST
    if not directory.is_dir():
        return None, "absent"
    try:
        body = json.loads(path.read_text())
        claimed = body.pop("digest")
        if claimed != digest(json.dumps(body, sort_keys=True)):
            return None, f"{MANIFEST} does not match its own checksum"
        meta, files = body["meta"], body["files"]
        if not isinstance(meta, dict) or not isinstance(files, dict):
            return None, f"{MANIFEST} is malformed"
    except FileNotFoundError:
        return None, f"no {MANIFEST} (an entry from an older ga2, or a build that did not finish)"
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as e:
        return None, f"{MANIFEST} is unreadable ({type(e).__name__}: {e})"
    for name, sha in files.items():
        f = directory / name
        try:
            if _sha256(f) != sha:
                return None, f"{name} does not match its checksum (damaged or truncated)"
        except OSError:
            return None, f"{name} is missing"
    return meta, ""


def reusable(final: Path, kind: str) -> dict | None:
    """The metadata of a valid cache entry, or None; a damaged one is removed and reported once."""
    meta, why = check_manifest(final)
    if meta is not None:
        touch(final)
        return meta
    if final.exists():
        if str(final) not in _REPORTED:
            _REPORTED.add(str(final))
            print(f"ga2: the cached {kind} in {final} is damaged ({why}); rebuilding it", file=sys.stderr,
                  flush=True)
        shutil.rmtree(final, ignore_errors=True)
    return None


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
    for tmp in root.glob(".*"):          # builds killed by SIGKILL (anything else removes its own), long ago
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


# ---------------------------------------------------------------- children

def spawn(cmd: Sequence[str], **kwargs) -> subprocess.Popen:
    """Start ``cmd`` as the leader of a new process group, registered until :func:`end_child`."""
    try:
        proc = subprocess.Popen(list(cmd), start_new_session=True, **kwargs)
    except FileNotFoundError:
        require(cmd[0])
        raise
    _CHILDREN.add(proc)
    return proc


def end_child(proc: subprocess.Popen, grace: float = 2.0) -> bool:
    """End ``proc``'s whole process group (SIGTERM, then SIGKILL); whether any of it was still running."""
    _CHILDREN.discard(proc)
    alive = False
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
            alive = True
        except (ProcessLookupError, PermissionError):
            break                      # the group is gone
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # the leader is gone; give the rest of its group the same signal once more, then stop
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        break
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    return alive


def end_all_children() -> int:
    """End every registered child's process group (after an interrupt); how many were running."""
    return sum(end_child(p) for p in list(_CHILDREN))


@contextlib.contextmanager
def child(cmd: Sequence[str], **kwargs) -> Iterator[subprocess.Popen]:
    """A child process that does not outlive the ``with`` block, however the block ends."""
    proc = spawn(cmd, **kwargs)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            end_child(proc)
        else:
            _CHILDREN.discard(proc)
            try:                            # helpers the leader left behind (make's jobs) go with it
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def run(cmd: Sequence[str], *, cwd: str | os.PathLike | None = None, what: str,
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run a build step; a non-zero exit is a SimulatorError with the tool's output."""
    with child(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
               errors="replace") as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SimulatorError(f"{what} took longer than {timeout} s: {' '.join(cmd)}") from None
    p = subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
    if p.returncode != 0:
        out = (p.stdout + p.stderr).strip()
        tail = "\n".join(out.splitlines()[-40:])
        raise SimulatorError(f"{what} failed (exit status {p.returncode}): {' '.join(cmd)}\n{tail}")
    return p
