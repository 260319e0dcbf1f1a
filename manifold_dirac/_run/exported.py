"""The start and loop programs of the bundled systems, kept on disk as serialized exports.

A fresh process that has run a system before spends most of its first
``integrate`` call tracing the step map in Python and lowering it to MLIR
(about 0.65 s of the 0.85 s of a heavy top from the persistent compilation
cache): JAX's persistent cache keeps the compiled executable, keyed by the
lowered program, so it cannot be consulted before the program has been
traced and lowered again. This module keeps the lowered program itself
(``jax.export``: serialized StableHLO with its input and output types) in
a directory next to that cache, under a key computed *without tracing*:
a fresh process reads it back, wraps it in a ``jit`` (a cheap lowering:
the module is embedded as it is), and the executable comes from the
persistent cache as before.

The key
-------
A serialized program may serve a call only if everything that went into
tracing it is in the key:

* the system, by the fingerprint the in-process table uses
  (:func:`~manifold_dirac._mechanics.compile_cache.structure_key`: its
  functions by their code, closure values, default arguments and the module
  globals they name, recursively; its constant arrays by value), written
  out in a form that is the same in every process (code objects by their
  file *relative to the package*, name, line, bytecode and constants;
  numbers exactly; arrays by their bytes), and accepted only when every
  piece of it is pinned by the rest of the key: code of this package,
  classes of this package (not local classes) or built-in ones, and the
  modules ``jax*``, ``numpy*``, ``math``, ``operator``, ``functools``, this
  package's. The classes of this package that the fingerprint names are
  written with their bodies as they are at run time (their methods by
  code, their number and string attributes by value), so a class attribute
  or method patched after the files were written changes the key (a
  patched-in function of elsewhere makes the program unkeyed). Module-level
  constants are covered where a fingerprinted function names them, and
  otherwise by the source hash: a module constant of the package patched at
  run time is not seen (switch the layer off to experiment with them).
  A system with a function defined elsewhere (a user's system,
  or a bundled system given a user's function) is **not** keyed: its
  function could call code the fingerprint cannot see (another module's
  function, a method of a user's class), and a stale program would be
  silently wrong. Such systems are traced as before (and their compiled
  executables still come from JAX's persistent cache);
* the scheme, discrete Lagrangian, solver options, composition and the
  program's kind (start or loop, batched or not, with controls or not),
  fingerprinted the same way;
* the tree structure, shapes, dtypes and weak types of the arguments (a
  batch of another size is another program; ``h``, the initial data,
  ``params``, ``stride`` and the step count are arguments, so another value
  is the same program);
* a hash of every ``.py`` file of the package (computed once per process,
  a few milliseconds), the versions of Python, JAX, jaxlib and NumPy, the
  JAX options that change tracing (``jax_enable_x64``, matmul precision,
  rank and dtype promotion), the export platform and this module's
  :data:`FORMAT`.

No absolute path enters the key, so a copied or moved cache directory
hits (the package may also be installed elsewhere).

The fallback
------------
Any failure of this layer is a miss, never an error or a crash: a missing,
truncated or corrupt file (every file carries a SHA-256 of its contents and
its own key), a file of another key, a program that ``jax.export``
cannot serialize, or one that does not load on this platform or jaxlib
(``jax.export`` checks the platform and the serialization version when the
program is lowered, before anything runs) is traced as it would be without
the layer, and the file rewritten. The checks run when the program is
loaded and compiled, before any value of the run is computed. Files are
written to a temporary name and renamed, so a concurrent reader sees a
whole file or none; the directory keeps the :data:`MAX_FILES` most recently
used. The pieces of a file other than the serialized
program (the output tree structure, the recording's field layout) are read
back with an unpickler that only accepts this package's classes, NumPy
dtypes and JAX tree structures.

Set ``MANIFOLD_DIRAC_EXPORT=0`` to switch the layer off; it is off whenever
the persistent compilation cache is (``MANIFOLD_DIRAC_JAX_CACHE=0``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import io
import logging
import os
import pickle
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, cast

import jax
import numpy as np

from .._config import cache_directory
from .._mechanics import compile_cache

__all__ = ["FORMAT", "KINDS", "MAX_FILES", "SUBDIRECTORY", "DiskProgram", "compiler_options", "directory", "key_text",
           "program",
           "source_hash", "static_key", "stats"]

FORMAT = 1
"""Version of the file layout and of the key; a new one makes every older file a miss."""

SUBDIRECTORY = "exported"
"""Where the files live, below the persistent compilation cache directory (JAX's own files are beside it)."""

KINDS = frozenset({"start", "chunk", "chunk_floor"})
"""The programs kept on disk: a run's start and its loop (the one-step program of ``Integrator.step`` is not:
its per-call cost matters more than its first call)."""

MAX_FILES = 2048
"""Files kept in the directory (tens of kB each); beyond it the least recently used are deleted."""

_MAGIC = b"manifold_dirac exported program\n"
_SUFFIX = ".jaxexport"
_PACKAGE = Path(__file__).resolve().parents[1]
_ROOTS = tuple({str(_PACKAGE) + os.sep, os.path.realpath(_PACKAGE) + os.sep})
_PINNED_MODULES = ("jax", "jaxlib", "numpy", "math", "operator", "functools", "builtins", "manifold_dirac")
"""Modules whose content the key pins (package hash, versions): their functions and classes may be keyed by name."""
_GENERATED = ("<", dataclasses.__file__)
"""Where the methods that ``dataclass`` and ``namedtuple`` generate from a class's fields have their code."""
_TRACE_OPTIONS = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_rank_promotion",
                  "jax_numpy_dtype_promotion")

_log = logging.getLogger(__name__)

stats = {"loaded": 0, "exported": 0, "fallback": 0, "unkeyed": 0}
"""Counts in this process: programs loaded from disk, exported (traced) and written, traced without the
layer after a failure of it, and programs of systems that cannot be keyed."""


class _Unkeyable(Exception):
    """A piece of a fingerprint that the rest of the key does not pin."""


def directory() -> Path | None:
    """Where serialized programs are kept (``<persistent cache>/exported``), or None when the layer is off."""
    if os.environ.get("MANIFOLD_DIRAC_EXPORT", "") == "0":
        return None
    d = cache_directory()
    return None if d is None else d / SUBDIRECTORY


@functools.cache
def source_hash() -> str:
    """SHA-256 of every ``.py`` file of the package, by path relative to the package (once per process)."""
    h = hashlib.sha256()
    for p in sorted(_PACKAGE.rglob("*.py")):
        h.update(p.relative_to(_PACKAGE).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


@functools.cache
def _environment() -> bytes:
    import jaxlib

    parts = [f"format {FORMAT}", f"package {source_hash()}", f"python {sys.version}",
             f"jax {jax.__version__}", f"jaxlib {jaxlib.__version__}", f"numpy {np.__version__}",
             f"platform {jax.export.default_export_platform()}"]
    return "\n".join(parts).encode()


def _options() -> bytes:
    return repr(tuple(getattr(jax.config, name, None) for name in _TRACE_OPTIONS)).encode()


# ----------------------------------------------------------------------------- the key
def _pinned(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in _PINNED_MODULES


class _Text(list):
    """The text of a key being written, and the package classes whose bodies it holds already."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[type] = set()


def _write_type(t: type, out: list[str]) -> None:
    if not _pinned(t.__module__) or "<locals>" in t.__qualname__:
        raise _Unkeyable(f"class {t.__module__}.{t.__qualname__}")
    out.append(f"T{t.__module__}:{t.__qualname__};")
    seen = getattr(out, "seen", None)
    if seen is None or t in seen or t.__module__.split(".")[0] != "manifold_dirac":
        return
    seen.add(t)
    # the class body as it is now: a class attribute or method patched at run time changes the key
    for cls in t.__mro__:
        if cls.__module__.split(".")[0] != "manifold_dirac":
            continue
        for name, v in sorted(vars(cls).items()):
            if isinstance(v, (staticmethod, classmethod)):
                v = v.__func__
            elif isinstance(v, property):
                v = (v.fget, v.fset)
            for f in v if isinstance(v, tuple) else (v,):
                if isinstance(f, types.FunctionType):  # by its code (a patched-in function of elsewhere: refused)
                    if not f.__code__.co_filename.startswith(_GENERATED):  # by dataclass or namedtuple
                        out.append(f"A{name}=")
                        _write_code(f.__code__, out)
                elif isinstance(f, (bool, int, float, str)):
                    out.append(f"A{name}=")
                    _write(compile_cache._fp(f, {}, 0), out)


def _package_file(filename: str) -> str:
    for root in _ROOTS:
        if filename.startswith(root):
            return filename[len(root):].replace(os.sep, "/")
    raise _Unkeyable(f"code of {filename}")


def _write_const(c: object, out: list[str]) -> None:
    if isinstance(c, types.CodeType):
        _write_code(c, out)
    elif isinstance(c, tuple):
        out.append(f"({len(c)}")
        for v in c:
            _write_const(v, out)
        out.append(")")
    elif isinstance(c, frozenset):
        out.append("{" + ",".join(sorted(repr(v) for v in c)) + "}")
    elif c is None or c is Ellipsis or isinstance(c, (bool, int, float, complex, str, bytes)):
        out.append(f"c{type(c).__name__}:{c.hex() if isinstance(c, float) else repr(c)};")
    else:
        raise _Unkeyable(f"a constant of type {type(c).__name__}")


def _write_code(c: types.CodeType, out: list[str]) -> None:
    out.append(f"C{_package_file(c.co_filename)}:{c.co_qualname}:{c.co_firstlineno}:{c.co_flags}:"
               f"{c.co_argcount}:{c.co_kwonlyargcount}:{','.join(c.co_names)}:{c.co_code.hex()}(")
    for k in c.co_consts:
        _write_const(k, out)
    out.append(")")


def _write(x: object, out: list[str]) -> None:
    """Append a process-independent text of a fingerprint (``compile_cache._fp``'s output) to ``out``."""
    if isinstance(x, compile_cache._Identity):
        o = x.obj
        if isinstance(o, types.ModuleType) and _pinned(o.__name__):
            out.append(f"M{o.__name__};")
        elif isinstance(o, type):
            _write_type(o, out)
        elif isinstance(o, types.BuiltinFunctionType) and _pinned(getattr(o, "__module__", None) or "builtins"):
            out.append(f"B{o.__module__}:{o.__qualname__};")
        else:
            raise _Unkeyable(f"an object keyed by identity ({type(o).__module__}.{type(o).__qualname__})")
    elif isinstance(x, type):
        _write_type(x, out)
    elif isinstance(x, types.CodeType):
        _write_code(x, out)
    elif isinstance(x, tuple):
        if len(x) == 3 and x[0] == "value":  # a value hashed by __eq__: its repr is not known to be exact
            raise _Unkeyable(f"a value of type {x[1].__module__}.{x[1].__qualname__}")
        out.append(f"({len(x)}")
        for v in x:
            _write(v, out)
        out.append(")")
    elif isinstance(x, np.generic):
        out.append(f"g{x.dtype.str}:{x.tobytes().hex()};")
    elif isinstance(x, bytes):
        out.append(f"b{len(x)}:{x.hex()};")
    elif isinstance(x, float):
        out.append(f"f{x.hex()};")
    elif x is None or isinstance(x, (bool, int, complex, str)):
        out.append(f"{type(x).__name__}:{x!r};")
    else:
        raise _Unkeyable(f"a {type(x).__name__} in a fingerprint")


def key_text(parts: Sequence[object]) -> str:
    """The process-independent text of ``parts`` (system first), or :class:`_Unkeyable` (see the module docstring).

    ``parts[0]`` is fingerprinted by
    :func:`~manifold_dirac._mechanics.compile_cache.structure_key`, the
    others (scheme, rule, options, composition, kind) the same way.
    """
    out = _Text()
    system, *rest = parts
    _write(compile_cache.structure_key(system), out)
    for p in rest:
        _write(compile_cache._fp(p, {}, 0), out)
    return "".join(out)


def static_key(parts: Sequence[object]) -> str | None:
    """The part of the key fixed by the program (system, scheme, rule, options, kind), or None if not keyable."""
    try:
        text = key_text(parts)
    except _Unkeyable as exc:
        _log.debug("not kept on disk: %s", exc)
        return None
    h = hashlib.sha256(_environment())
    h.update(text.encode())
    return h.hexdigest()


def _write_tree(t: jax.tree_util.PyTreeDef, out: list[str]) -> None:
    data = t.node_data()
    if data is None:
        out.append("*" if t.num_leaves == 1 else "N")
        return
    kind, aux = data
    _write_type(kind, out)
    if aux is not None:
        if not isinstance(aux, (list, tuple)) or not all(isinstance(a, (str, int)) for a in aux):
            raise _Unkeyable(f"tree node data of {kind.__qualname__}")
        out.append(repr(tuple(aux)))
    out.append("[")
    for c in t.children():
        _write_tree(c, out)
    out.append("]")


class _Signature(NamedTuple):
    tree: jax.tree_util.PyTreeDef
    avals: tuple[tuple[tuple[int, ...], str, bool], ...]


def _signature(args: tuple) -> tuple[list, _Signature]:
    leaves, tree = jax.tree.flatten(args)
    return leaves, _Signature(tree, tuple(_aval(x) for x in leaves))


def _aval(x: object) -> tuple[tuple[int, ...], str, bool]:
    """``(shape, dtype, weak_type)`` of ``jax.typeof(x)``, read directly from numpy and concrete JAX arrays.

    ``jax.typeof`` costs 3-7 us for a numpy value, and a run's two programs
    take some thirty arguments per ``integrate`` call.
    """
    if isinstance(x, (np.ndarray, np.generic)):
        return tuple(x.shape), jax.dtypes.canonicalize_dtype(x.dtype).str, False
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        return tuple(x.shape), x.dtype.str, bool(x.weak_type)
    if isinstance(x, jax.ShapeDtypeStruct):  # a call's shapes only (DiskProgram.compile_ahead)
        return tuple(x.shape), jax.dtypes.canonicalize_dtype(x.dtype).str, bool(x.weak_type)
    a = jax.typeof(x)
    return tuple(a.shape), a.dtype.str, bool(a.weak_type)


def _full_key(static: str, sig: _Signature) -> str:
    out: list[str] = [static]
    _write_tree(sig.tree, out)
    out.append(repr(sig.avals))
    out.append(_options().decode())
    return hashlib.sha256("".join(out).encode()).hexdigest()


# ----------------------------------------------------------------------------- files
@functools.cache
def _serializable() -> bool:
    """Whether ``jax.export`` can serialize here (it needs the ``flatbuffers`` package)."""
    try:
        from jax._src.export import serialization  # noqa: F401
    except ImportError:
        return False
    return True


class _Unpickler(pickle.Unpickler):
    """Reads back tree structures and dtypes only: this package's classes, NumPy dtypes, JAX trees."""

    _ALLOWED = frozenset({("jaxlib._jax.pytree", "PyTreeDef"), ("jax._src.tree_util", "default_registry"),
                          ("numpy", "dtype"), ("builtins", "tuple"), ("builtins", "list"), ("builtins", "dict")})

    def find_class(self, module: str, name: str) -> object:
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        if module.split(".")[0] == "manifold_dirac":
            obj = super().find_class(module, name)
            if isinstance(obj, type):
                return obj
        raise pickle.UnpicklingError(f"{module}.{name} is not read from an exported program's file")


class _Entry(NamedTuple):
    exported: jax.export.Exported
    out_tree: jax.tree_util.PyTreeDef
    spec: list


def _dump(path: Path, key: str, entry: _Entry) -> None:
    payload = pickle.dumps({"key": key, "exported": bytes(entry.exported.serialize()),
                            "out_tree": entry.out_tree, "spec": entry.spec}, protocol=5)
    data = _MAGIC + hashlib.sha256(payload).digest() + payload
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)  # as JAX's cache files: readable by whoever may read the directory
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _evict(path.parent)


def _evict(where: Path) -> None:
    """Delete the least recently used files beyond :data:`MAX_FILES` (a load marks a file used)."""
    files = [(e.stat().st_mtime, e.path) for e in os.scandir(where) if e.name.endswith(_SUFFIX)]
    if len(files) <= MAX_FILES:
        return
    for _, p in sorted(files)[: len(files) - MAX_FILES]:
        Path(p).unlink(missing_ok=True)


def _load(path: Path, key: str) -> _Entry | None:
    """The entry in ``path`` if it is whole and of ``key``, else None (never raises)."""
    try:
        data = path.read_bytes()
        os.utime(path)  # used: the last to be evicted
    except OSError:
        return None
    try:
        n = len(_MAGIC)
        if data[:n] != _MAGIC or hashlib.sha256(data[n + 32:]).digest() != data[n:n + 32]:
            raise ValueError("truncated or corrupt")
        d = _Unpickler(io.BytesIO(data[n + 32:])).load()
        if d["key"] != key:
            raise ValueError("the file of another key")
        return _Entry(jax.export.deserialize(bytearray(d["exported"])), d["out_tree"], d["spec"])
    except Exception as exc:  # noqa: BLE001  (any unreadable file is a miss)
        _log.debug("ignoring %s: %s", path, exc)
        return None


# ----------------------------------------------------------------------------- the program
class DiskProgram:
    """A program (``build()``, a jitted function) served from disk when its file exists, exported to it otherwise.

    Called like the jitted function. Per argument signature (tree, shapes,
    dtypes), the first call loads the serialized program (or traces and
    exports it, and writes the file), compiles it ahead of time (the
    executable from JAX's persistent cache when it is there) and keeps the
    executable; a failure of any of this falls back to ``build()`` itself.
    ``options`` are the XLA compiler options the jitted function was built
    with (the start's), applied to the loaded or exported program too.
    ``spec`` is the jitted function's ``spec`` list (the recording's layout,
    filled by a trace), filled from the file on a load.
    """

    def __init__(self, static: str, build: Callable[[], Callable], where: Path, options: dict | None = None):
        self._static, self._build, self._where = static, build, where
        self._xla_options = dict(options) if options else None  # XLA compiler options, as the jitted program's
        self._built: Callable | None = None
        self._runs: dict[_Signature, Callable] = {}
        self.spec: list = []
        _register_with_jax(self)

    def cache_clear(self) -> None:
        """Drop the executables (``jax.clear_caches()`` calls this: they are reloaded from disk when next needed)."""
        self._runs.clear()

    def _jitted(self) -> jax.stages.Wrapped:
        """``build()``'s ``jax.jit`` function, built once."""
        if self._built is None:
            self._built = self._build()
        return cast(jax.stages.Wrapped, self._built)

    def _sync_spec(self) -> None:
        """``spec`` filled (in place: callers hold it) from the jitted function's, once that has been traced."""
        built = getattr(self._built, "spec", None)
        if not self.spec and built:
            self.spec.extend(built)

    def _cache_size(self) -> int:
        """Executables held (one per argument signature), as ``jax.jit``'s ``_cache_size``."""
        return len(self._runs)

    def __call__(self, *args: object) -> object:
        leaves, sig = _signature(args)
        run = self._runs.get(sig)
        if run is None:
            run = self._runs[sig] = self._obtain(sig)
        return run(*leaves)

    def compile_ahead(self, *args: object, submit: Callable[[Callable[[], object]], concurrent.futures.Future]) -> None:
        """Lower the program of a call with ``args`` now and compile it with ``submit`` (a thread pool's).

        ``submit(work)`` returns a future of ``work()``; the first call with
        that signature waits for it. A compile that fails there falls back to
        the traced program for this process, as a failed load or export does
        in a call, but the file is not rewritten (it was loaded or written
        before the compile), and an exported program counts in ``stats``
        as exported and as a fallback.
        """
        _, sig = _signature(args)
        if sig not in self._runs:
            self._runs[sig] = self._obtain(sig, lambda work: submit(work).result)

    def _obtain(self, sig: _Signature, when: Callable | None = None) -> Callable:
        """The run of signature ``sig``: loaded, else exported, else traced; compiled now, or ``when(work)``.

        ``when(work)`` returns a function that gives ``work()``'s compiled
        executable when first needed (a future's ``result``); ``None``
        compiles now.
        """
        try:
            key = _full_key(self._static, sig)
        except _Unkeyable as exc:
            _log.debug("not kept on disk: %s", exc)
            stats["unkeyed"] += 1
            return self._traced(sig, when)
        path = self._where / f"{key}{_SUFFIX}"
        entry = _load(path, key) if path.exists() else None
        if entry is not None:
            try:
                run = self._executable(entry, sig, self._xla_options, when, self._fallback(sig))
            except Exception as exc:  # noqa: BLE001  (another platform, jaxlib, CPU: traced again)
                _log.debug("could not load %s: %s", path, exc)
            else:
                if not self.spec and entry.spec:
                    self.spec.extend(entry.spec)
                stats["loaded"] += 1
                return run
        try:
            entry = self._export(sig)
            run = self._executable(entry, sig, self._xla_options, when, self._fallback(sig))
        except Exception as exc:  # noqa: BLE001  (not exportable: the jitted program as it is)
            _log.debug("could not export a program: %s", exc)
            stats["fallback"] += 1
            return self._traced(sig, when)
        stats["exported"] += 1
        try:
            _dump(path, key, entry)
        except Exception as exc:  # noqa: BLE001  # a read-only or full cache directory: the next process traces again
            _log.debug("could not write %s: %s", path, exc)
        return run

    def _traced(self, sig: _Signature, when: Callable | None = None) -> Callable:
        """The jitted program itself (its executables are ``jax.jit``'s); lowered now and compiled by ``when``."""
        fn, tree = self._jitted(), sig.tree
        get = None
        if when is not None:
            lowered = fn.lower(*jax.tree.unflatten(tree, _shapes(sig)))
            self._sync_spec()
            get = when(lowered.compile)  # jax.jit keeps the executable: the call below finds it

        def run(*leaves):
            if get is not None:
                with contextlib.suppress(Exception):  # a failed compile: the call compiles and raises it
                    get()
            out = fn(*jax.tree.unflatten(tree, leaves))
            self._sync_spec()
            return out

        return run

    def _fallback(self, sig: _Signature) -> Callable[[BaseException], Callable]:
        """What a run whose deferred compile failed does: the traced program, from then on."""

        def fall_back(exc: BaseException) -> Callable:
            _log.debug("could not compile a program: %s", exc)
            stats["fallback"] += 1
            run = self._runs[sig] = self._traced(sig)
            return run

        return fall_back

    def _export(self, sig: _Signature) -> _Entry:
        fn, tree = self._jitted(), sig.tree
        if self._xla_options:  # a nested jit may not carry XLA options: its function, traced here
            fn = getattr(fn, "__wrapped__", fn)
        out_trees: list = []

        def flat(*leaves):
            out, out_tree = jax.tree.flatten(fn(*jax.tree.unflatten(tree, leaves)))
            out_trees.append(out_tree)
            return tuple(out)

        exported = jax.export.export(jax.jit(flat))(*_shapes(sig))
        self._sync_spec()
        return _Entry(exported, out_trees[0], list(self.spec))

    @staticmethod
    def _executable(entry: _Entry, sig: _Signature, options: dict | None = None, when: Callable | None = None,
                    fall_back: Callable[[BaseException], Callable] | None = None) -> Callable:
        """The serialized program embedded and lowered; compiled now, or by ``when`` (see :meth:`_obtain`)."""
        with _lapack_initialization(_calls_lapack(bytes(entry.exported.mlir_module_serialized))):
            lowered = jax.jit(entry.exported.call).lower(*_shapes(sig))
        out_tree = entry.out_tree
        if when is None:
            compiled = lowered.compile(compiler_options=options)

            def run(*leaves):
                return jax.tree.unflatten(out_tree, compiled(*leaves))

        else:
            get = when(lambda: lowered.compile(compiler_options=options))

            def run(*leaves):
                try:
                    compiled = get()
                except Exception as exc:  # noqa: BLE001  (as a failed compile in _obtain: the traced program)
                    if fall_back is None:
                        raise
                    return fall_back(exc)(*leaves)
                return jax.tree.unflatten(out_tree, compiled(*leaves))

        return run


_local = threading.local()


@functools.cache
def _lapack_targets() -> tuple[bytes, ...] | None:
    """The names of jaxlib's CPU calls that need LAPACK initialized (``lapack_dgesdd_ffi``, ...), or None if unknown."""
    try:
        from jaxlib.cpu import _lapack

        return tuple(name.encode() for name in _lapack.registrations())
    except Exception:  # noqa: BLE001  # pragma: no cover  (another jaxlib layout: every program initializes it)
        return None


def _calls_lapack(module: bytes) -> bool:
    """Whether a serialized module may call LAPACK: it names one of :func:`_lapack_targets` (True when unknown)."""
    targets = _lapack_targets()
    return targets is None or not targets or any(t in module for t in targets)


@contextlib.contextmanager
def _lapack_initialization(needed: bool) -> Iterator[None]:
    """Embedding a serialized program initializes LAPACK only if the program calls it.

    JAX initializes jaxlib's LAPACK calls whenever it embeds a serialized CPU
    program, which imports SciPy's LAPACK (about 0.1 s of CPU time, a third
    of a first call from the cache, ``benchmarks/first_call.py``), whether
    or not the program has a LAPACK call; a traced program initializes it
    when it lowers one. A program whose module names none of jaxlib's
    LAPACK calls (:func:`_calls_lapack`) does not need it. Only this
    thread's embedding skips it (a thread-local flag read by a wrapper of
    JAX's function); if JAX's or jaxlib's layout is not the one expected,
    nothing is skipped.
    """
    if needed or not _wrap_lapack_initialization():
        yield
        return
    _local.skip_lapack = True
    try:
        yield
    finally:
        _local.skip_lapack = False


@functools.cache
def _wrap_lapack_initialization() -> bool:
    try:
        from jax._src.export import _export as jax_export

        original = jax_export._ensure_backends_initialized
    except (ImportError, AttributeError):  # pragma: no cover  (another JAX layout: LAPACK initialized as JAX does)
        return False

    def ensure_backends_initialized(platforms, *args, **kwargs):
        if getattr(_local, "skip_lapack", False):
            return None
        return original(platforms, *args, **kwargs)

    jax_export._ensure_backends_initialized = ensure_backends_initialized
    return True


def _register_with_jax(program: DiskProgram) -> None:
    """Let ``jax.clear_caches()`` drop the program's executables, as it drops a jitted function's (held weakly)."""
    try:
        from jax._src.util import register_cache
    except ImportError:  # pragma: no cover  (another JAX layout: the executables live as long as the program)
        return
    register_cache(program, "manifold_dirac exported program")


def _shapes(sig: _Signature) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct(s, np.dtype(d), weak_type=w) for s, d, w in sig.avals]


def program(parts: Sequence[object], kind: Hashable, build: Callable[[], Callable]) -> Callable:
    """``build()``, or a :class:`DiskProgram` of it when the layer is on and ``parts`` and ``kind`` can be keyed.

    ``parts`` are what the program is built from (system, scheme, rule,
    solver options, composition); ``kind`` a tuple whose first item names
    the program (:data:`KINDS` are kept on disk).
    """
    where = directory()
    if where is None or not _serializable() or not (isinstance(kind, tuple) and kind and kind[0] in KINDS):
        return build()
    static = static_key((*parts, kind))
    if static is None:
        stats["unkeyed"] += 1
        return build()
    return DiskProgram(static, build, where, compiler_options(kind))


def compiler_options(kind: Hashable) -> dict | None:
    """The XLA compiler options of a program of ``kind``, as its jitted function's.

    The start's: :data:`~.start.START_COMPILER_OPTIONS`; a loop's:
    :func:`~.loop.loop_compiler_options`.
    """
    name = kind[0] if isinstance(kind, tuple) and kind else None
    if name == "start":
        from .start import START_COMPILER_OPTIONS

        return dict(START_COMPILER_OPTIONS)
    if name in ("chunk", "chunk_floor"):
        from .loop import loop_compiler_options

        return loop_compiler_options()
    return None
