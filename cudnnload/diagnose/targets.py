"""What ``cudnnload doctor TARGET`` is pointed at, and the cuDNN install that target would load.

TARGET is any of: a cuDNN library file of any generation (the install it belongs to, as that file
would load it); a folder; a consumer, that is a shared object or a program that is not cuDNN
(``libtorch_cuda.so``, a C++ program: its cuDNN found by its own DT_NEEDED entries and RPATH or
RUNPATH, as glibc would); a bare soname (``libcudnn.so.9``: what ``dlopen`` of that name from this
environment gets); or, with ``--python PATH``, another interpreter or venv. Nothing is loaded here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.errors import ElfError, UsageError
from cudnnload.files import path_problem
from cudnnload.findings import ERROR, Finding
from cudnnload.loading.loader import choose_install
from cudnnload.resolve import linker
from cudnnload.resolve.catalog import GENERATIONS, classify
from cudnnload.resolve.consequences import shim_cannot_load
from cudnnload.resolve.discovery import Context, Install, Inventory, context, find, install_of, python_requester
from cudnnload.resolve.elfcache import ElfCache, cache_file
from cudnnload.resolve.policy import search_path_findings, setuid_findings
from cudnnload.resolve.which import consumer_generations, shim_for

_SONAME = re.compile(r"^lib[\w.+-]*\.so(\.\d+)*$")
_ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True)
class Target:
    """What was diagnosed, and how its cuDNN was found."""

    given: str | None  # as typed; None: this Python's environment
    kind: str  # "environment", "library", "folder", "program", "shared-object", "soname" or "python"
    path: str | None  # the file, folder or interpreter, absolute
    description: str  # one line for people
    shim: str | None = None  # the shim the target loads, as opened, when that is how its cuDNN was found
    how: str | None = None  # the rule that found it: "rpath (from ...)", "ld-library-path", "ld-cache" ...
    python: str | None = None  # the interpreter whose environment it is (--python), else None: this one
    site_paths: tuple[str, ...] | None = None  # where its pip distributions and frameworks are


@dataclass(frozen=True)
class Resolved:
    """A target, the installs it concerns, the one it would load, and what was found on the way."""

    target: Target
    ctx: Context
    inventory: Inventory
    install: Install | None
    rejected: tuple[str, ...]  # why load() would pass over the others (the environment and folders)
    findings: tuple[Finding, ...] = field(default=())


def resolve_target(given: str | None, *, python: str | None = None, environ: Mapping[str, str] | None = None,
                   site_paths: Sequence[str] | None = None) -> Resolved:
    """Read TARGET (or ``--python``); UsageError, naming it and the reason, when it cannot be one."""
    env = dict(os.environ if environ is None else environ)
    if python is not None:
        if given is not None:
            raise UsageError("give a TARGET or --python, not both", fix="cudnnload doctor --python PATH")
        return _python(python, env)
    if given is None:
        ctx = context(env)
        inventory = find(environ=env, site_paths=site_paths, ctx=ctx)
        install, rejected = choose_install(inventory.installs)
        target = Target(None, "environment", None, "this Python and its environment", site_paths=(
            tuple(site_paths) if site_paths is not None else None))
        return Resolved(target, ctx, inventory, install, rejected)
    path = os.path.abspath(given)
    problem = path_problem(path)
    if problem is not None and problem[0] == "missing" and "/" not in given and _SONAME.match(given):
        return _soname(given, env)
    if problem is not None:
        raise UsageError(problem[1], path=given, fix="give a cuDNN library, a folder, a program or a shared "
                         "object that uses cuDNN, or a soname such as libcudnn.so.9")
    if os.path.isdir(path):
        ctx = context(env)
        inventory = find([path], environ=env, ctx=ctx)
        install, rejected = choose_install(inventory.installs)
        install = install or next(iter(inventory.installs), None)
        return Resolved(Target(given, "folder", path, f"the folder {path}"), ctx, inventory, install, rejected)
    lib = classify(os.path.basename(path))
    if lib is not None:
        ctx = context(env)
        inventory = find([path], environ=env, ctx=ctx)
        install = next(iter(inventory.installs), None)
        what = "shim" if lib.key == "shim" else f"{lib.key} sub-library"
        return Resolved(Target(given, "library", path, f"the cuDNN {lib.major} {what} {path}"),
                        ctx, inventory, install, ())
    return _consumer(given, path, env)


def _consumer(given: str, path: str, env: Mapping[str, str]) -> Resolved:
    """A program or shared object that uses cuDNN: its cuDNN as its own DT_NEEDED or dlopen would get it."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise UsageError(exc.strerror or str(exc), path=given) from None
    if head != _ELF_MAGIC:
        raise UsageError("not an ELF file: not a cuDNN library, a program or a shared object", path=given)
    cache = ElfCache(cache_file(env))
    try:
        info = cache.inspect(os.path.realpath(path))
    except (OSError, ElfError) as exc:
        raise UsageError(getattr(exc, "reason", str(exc)), path=given) from None
    program = bool(info.interpreter)
    consumer = linker.Requester.from_elf(path, info)
    if program:  # the main program: its $ORIGIN is its resolved folder, its RPATH serves every load
        consumer = replace(consumer, origin=os.path.dirname(os.path.realpath(path)))
    ctx = context(env, executable=consumer if program else None, cache=cache)
    needed = [name for name in info.needed if classify(name) is not None]
    kind = "program" if program else "shared-object"
    asks = f"NEEDs {', '.join(needed)}" if needed else "NEEDs no cuDNN (it may dlopen one by name)"
    searched = search_path_findings(ctx.linker, consumer)  # its own search lists, and the environment's
    for major in consumer_generations(path, ctx):
        gen = GENERATIONS[major]
        step = shim_for(gen, path, consumer, ctx)
        if step.path is None:
            continue
        install = install_of(step.path, ctx, f"as {os.path.basename(path)} loads it ({step.rule})")
        target = Target(given, kind, path, f"the {kind.replace('-', ' ')} {path}, which {asks}", step.path,
                        step.rule + (f" from {step.requested_by}" if step.rule in ("rpath", "runpath") else ""))
        inventory = Inventory(ctx.host, (install,) if install else (), searched)
        secure = setuid_findings(consumer, ctx.linker.defaults, step.path) if program else ()
        return Resolved(target, ctx, inventory, install, (), secure)
    soname = needed[0] if needed else "libcudnn.so.9"
    asked = classify(soname)
    gen = GENERATIONS[asked.major if asked else 9]
    error = f"{soname}: cannot open shared object file: No such file or directory"
    consequence = shim_cannot_load(gen, error)
    finding = Finding("not-found", ERROR, f"{os.path.basename(path)} {'NEEDs' if needed else 'asks for'} {soname}, "
                      "which its search (RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache, the default folders) does not "
                      "find", path, "install cuDNN where the program looks (pip install nvidia-cudnn-cu12), or add "
                      "its folder to LD_LIBRARY_PATH", (consequence,))
    target = Target(given, kind, path, f"the {kind.replace('-', ' ')} {path}, which {asks}")
    secure = setuid_findings(consumer, ctx.linker.defaults) if program else ()
    return Resolved(target, ctx, Inventory(ctx.host, (), searched), None, (), (finding, *secure))


def _soname(name: str, env: Mapping[str, str]) -> Resolved:
    """What dlopen(``name``) from this Python, in this environment, gets."""
    ctx = context(env)
    searched = search_path_findings(ctx.linker)
    res = linker.resolve(name, None, ctx.linker)
    lib = classify(name)
    if res.path is None or res.error is not None:
        gen = GENERATIONS[lib.major if lib else 9]
        error = res.error or f"{name}: cannot open shared object file: No such file or directory"
        finding = Finding("not-found", ERROR, f"dlopen(\"{name}\") from this Python would fail: {error}", name,
                          "add the folder that holds it to LD_LIBRARY_PATH, or load it by its full path (as PyTorch "
                          "and JAX load the pip wheel's)", (shim_cannot_load(gen, error),))
        target = Target(name, "soname", None, f"dlopen(\"{name}\") from this Python")
        return Resolved(target, ctx, Inventory(ctx.host, (), searched), None, (), (finding,))
    install = install_of(res.path, ctx, f"dlopen(\"{name}\") ({res.rule})")
    target = Target(name, "soname", res.path, f"dlopen(\"{name}\") from this Python", res.path, res.rule)
    return Resolved(target, ctx, Inventory(ctx.host, (install,) if install else (), searched), install, ())


_SYS_PATH = "import json, sys; print(json.dumps([sys.executable, sys.path]))"


def _python(python: str, env: Mapping[str, str]) -> Resolved:
    """Another interpreter (or a venv's folder): its sys.path, its executable, its frameworks."""
    candidates = [python] if not os.path.isdir(python) else [
        os.path.join(python, "bin", name) for name in ("python", "python3")]
    interpreter = next((path for path in candidates if os.path.isfile(path) and os.access(path, os.X_OK)), None)
    if interpreter is None:
        raise UsageError("no Python interpreter there", path=python, fix="give a python executable or a venv folder")
    try:
        done = subprocess.run([interpreter, "-c", _SYS_PATH], capture_output=True, text=True, timeout=60, env=dict(env),
                              cwd="/", check=False)
        executable, site_paths = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        raise UsageError("not a Python interpreter that answers (sys.path could not be read)", path=python) from None
    cache = ElfCache(cache_file(env))
    ctx = context(env, executable=python_requester(cache, executable), cache=cache)
    inventory = find(environ=env, site_paths=site_paths, ctx=ctx)
    install, rejected = choose_install(inventory.installs)
    target = Target(python, "python", executable, f"the Python {executable} and its environment",
                    python=executable, site_paths=tuple(site_paths))
    return Resolved(target, ctx, inventory, install, rejected)
