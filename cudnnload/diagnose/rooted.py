"""``cudnnload doctor --root DIR``: an unpacked container image or chroot, judged without running it.

The judging runs in a child process that is confined to the root before it reads anything there: chroot(2),
as root, or inside a user namespace of its own otherwise (``unshare(CLONE_NEWUSER)``, where the kernel lends
one). Every path it opens is then the image's, resolved by the kernel: an absolute symbolic link of the image
leads inside it, ``..`` stops at its top, and this machine's files are out of reach. `resolve.rootview` reads
the image's linker and Python there, and `diagnose.doctor` judges it exactly as ``doctor`` judges a Python's
environment, with the probe and every child process left out (`doctor.diagnose` without running).

Nothing of the image runs and nothing is written into it. Everything the child needs is imported before it is
confined; after, an import, a program started, a library loaded with ctypes and a file opened for writing
raise instead. Users and groups are read from the image's ``/etc/passwd`` and ``/etc/group`` as text (glibc's
NSS would load the image's ``libnss_*.so`` to answer). The report comes back through a pipe.
"""

from __future__ import annotations

import builtins
import ctypes
import importlib
import os
import pickle
import pkgutil
import sys
from collections.abc import Callable, Mapping
from typing import Any

from cudnnload.errors import CannotRun, CudnnloadError, UsageError
from cudnnload.resolve.hardware import GpuFacts
from cudnnload.resolve.linker import LinkerDefaults

CLONE_NEWUSER = 0x10000000  # <linux/sched.h>
# What the judging imports lazily somewhere on its way: imported before the child is confined.
_PACKAGES = ("cudnnload.resolve", "cudnnload.judge")
_MODULES = ("cudnnload.diagnose.doctor", "cudnnload.diagnose.targets", "cudnnload.loading.gpu",
            "cudnnload.loading.probe", "packaging.requirements", "packaging.specifiers", "packaging.markers",
            "packaging.version", "packaging.utils", "packaging.tags", "importlib.metadata", "email.parser",
            "email.feedparser", "csv", "glob", "fnmatch", "json", "ast", "concurrent.futures.thread", "textwrap",
            "shlex", "posixpath", "base64", "hashlib", "grp", "pwd", "encodings.idna", "elftools.elf.enums",
            "importlib.machinery", "pathlib", "site", "fcntl", "select", "shutil", "tempfile", "stat", "errno")


def doctor_root(root: str, *, env_file: str | None = None, driver: str | None = None) -> Any:
    """``doctor --root ROOT [--env-file FILE] [--driver VERSION]``: the report of the root, judged from inside it
    with the environment of its config (``env_file``) and the driver the container will get (``driver``)."""
    from cudnnload.diagnose.before import driver_option
    from cudnnload.files import NotRegularFile, read_regular
    from cudnnload.resolve.linker import probe_linker_defaults
    from cudnnload.resolve.rootview import image_environment

    environ: dict[str, str] = {}
    if env_file is not None:
        try:
            text = read_regular(env_file, 1 << 20).decode("utf-8", "replace")
        except NotRegularFile as exc:
            raise UsageError(exc.reason, path=env_file) from None
        except OSError as exc:
            raise UsageError(exc.strerror or str(exc), path=env_file) from None
        environ = image_environment(text, env_file)
    gpu = driver_option(driver)
    return judge_root(root, environ=environ, host=probe_linker_defaults(os.environ), gpu=gpu)


def judge_root(root: str, *, environ: Mapping[str, str], host: LinkerDefaults, gpu: GpuFacts | None) -> Any:
    """The doctor report (`doctor.Report`) of the root at ``root``, judged from inside it. ``environ``: the
    environment its config gives; ``host``: this machine's linker defaults (its CPU's hwcaps); ``gpu``: the
    driver the container will get from the host (None: none). UsageError for a root that is no image."""
    folder = os.path.abspath(root)
    if not os.path.isdir(folder):
        raise UsageError("not a folder" if os.path.exists(folder) else "no such folder", path=root,
                         fix="give the folder an image was unpacked into (docker export | tar -x)")
    if os.path.realpath(folder) == "/":
        raise UsageError("the root of this machine: run plain `cudnnload doctor` instead", path=root)
    return _confined(folder, lambda: _judge(folder, environ, host, gpu))


def _judge(root: str, environ: Mapping[str, str], host: LinkerDefaults, gpu: GpuFacts | None) -> Any:
    """Inside the root: its view, then doctor's judgement of its Python's environment."""
    from cudnnload.diagnose.doctor import diagnose
    from cudnnload.diagnose.inventory import find
    from cudnnload.diagnose.targets import Resolved, Target
    from cudnnload.judge.before import stale_findings
    from cudnnload.judge.choose import choose_install
    from cudnnload.resolve.discovery import context, python_requester
    from cudnnload.resolve.elfcache import ElfCache
    from cudnnload.resolve.rootview import root_view

    view = root_view(environ, host, ldconfig_at_start=gpu is not None)
    env = {**view.environ, "CUDNNLOAD_NO_CACHE": "1"}  # nothing remembered: the memo would be written in the root
    cache = ElfCache(None)
    executable = python_requester(cache, view.python) if view.python else None
    ctx = context(env, cache=cache, executable=executable, defaults=view.defaults, ld_cache=view.ld_cache,
                  glibc=view.glibc)
    sites = list(view.site_paths)
    inventory = find(environ=env, site_paths=sites, ctx=ctx, python=view.python)
    install, rejected = choose_install(inventory.installs)
    said = f"its {view.python} and its environment" if view.python else "no python3 on its PATH"
    target = Target(root, "python", view.python, f"the root file system {root}: {said}", python=view.python,
                    site_paths=tuple(sites))
    resolved = Resolved(target, ctx, inventory, install, rejected,
                        stale_findings(view.stale, ldconfig_at_start=gpu is not None))
    absent = GpuFacts(bindings="not asked: nothing is run", driver_found=False, driver_version=None, devices=(),
                      error="no-driver", reason="no NVIDIA driver: a container gets the host's through the NVIDIA "
                      "container toolkit (--driver VERSION names the one it will get)",
                      visible_devices=env.get("CUDA_VISIBLE_DEVICES"), kernel_module=None, hardware=())
    return diagnose(resolved, env, site_paths=sites, gpu=gpu or absent)


# --- confinement ---------------------------------------------------------------------------------------------


def _confined(root: str, work: Callable[[], Any]) -> Any:
    """``work()`` run in a child confined to ``root``; its result, or its error raised here."""
    _prepare()
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: confined, sealed, judged, answered, gone
        os.close(reading)
        try:
            _enter(root)
            _seal()
            answer: tuple[str, Any] = ("ok", work())
        except CudnnloadError as exc:
            answer = (type(exc).__name__, (exc.reason, exc.path, exc.fix))
        except BaseException as exc:  # noqa: BLE001 (answered as one line; the parent decides)
            answer = ("internal", f"{type(exc).__name__}: {exc}")
        try:
            data = pickle.dumps(answer)
        except Exception as exc:  # noqa: BLE001
            data = pickle.dumps(("internal", f"the report could not be sent: {exc}"))
        with os.fdopen(writing, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(writing)
    with os.fdopen(reading, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise CannotRun(f"the confined reader of {root} ended without an answer (status {status})")
    kind, value = pickle.loads(data)  # noqa: S301 (our own child's answer, through our own pipe)
    if kind == "ok":
        return value
    if kind == "internal":
        raise CannotRun(f"judging {root} failed: {value}")
    reason, path, fix = value
    raise (UsageError if kind == "UsageError" else CannotRun)(reason, path=path, fix=fix)


def _prepare() -> None:
    """Import, before the child is confined, everything its work imports on the way."""
    for package in _PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.iter_modules(module.__path__, package + "."):
            importlib.import_module(info.name)
    for name in _MODULES:
        importlib.import_module(name)


def _enter(root: str) -> None:
    """chroot(2) into ``root`` (in a user namespace of this process's own when it is not root)."""
    if os.geteuid() != 0:
        uid, gid = os.geteuid(), os.getegid()
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUSER) != 0:
            raise CannotRun(f"cannot confine the reader to the root: unshare(CLONE_NEWUSER) failed "
                            f"({os.strerror(ctypes.get_errno())})", fix="run as root, or allow unprivileged user "
                            "namespaces (sysctl kernel.unprivileged_userns_clone=1; Ubuntu: "
                            "kernel.apparmor_restrict_unprivileged_userns=0)")
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    try:
        os.chroot(root)
    except PermissionError as exc:  # a root this user may not enter: the caller's to fix, not cudnnload's
        raise UsageError(f"this user cannot enter it ({exc.strerror})", path=root,
                         fix="give a root you can read, or run as its owner") from None
    except OSError as exc:
        raise CannotRun(f"cannot confine the reader to the root: chroot failed ({exc.strerror})",
                        path=root) from None
    os.chdir("/")


class _Refused(ImportError):
    pass


class _NoImports:
    """A meta path finder that refuses every import: the image's own Python files are never imported."""

    @staticmethod
    def find_spec(name: str, *_: object) -> None:
        raise _Refused(f"{name} was not imported before the reader was confined to the root")


def _refuse(what: str) -> Callable[..., Any]:
    def refused(*_: object, **__: object) -> Any:
        raise CannotRun(f"{what} inside the root is refused: nothing of the image runs")

    return refused


def _seal() -> None:
    """From here on: no import, no program, no library loaded, no file written; users and groups from the image's
    own files."""
    sys.meta_path.insert(0, _NoImports())  # type: ignore[arg-type]
    import subprocess

    subprocess.Popen = _refuse("starting a program")  # type: ignore[assignment,misc]
    for name in ("posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe", "system", "fork",
                 "mkdir", "makedirs", "rename", "replace", "remove", "unlink", "rmdir", "symlink", "link",
                 "chmod", "truncate"):
        if hasattr(os, name):
            setattr(os, name, _refuse(f"os.{name}"))
    ctypes.CDLL.__init__ = _refuse("loading a library")  # type: ignore[method-assign]
    real_open, real_os_open = builtins.open, os.open
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def read_only(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(letter in mode for letter in "wax+"):
            raise CannotRun(f"writing {file} inside the root is refused")
        return real_open(file, mode, *args, **kwargs)

    def os_read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & writes:
            raise CannotRun(f"writing {path} inside the root is refused")
        return real_os_open(path, flags, *args, **kwargs)

    builtins.open = read_only
    os.open = os_read_only
    _image_accounts()


def _image_accounts() -> None:
    """``pwd`` and ``grp`` answered from the image's /etc/passwd and /etc/group, read as text."""
    import grp
    import pwd

    def table(path: str, fields: int) -> list[list[str]]:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                rows = [line.rstrip("\n").split(":") for line in handle if line.strip() and not line.startswith("#")]
        except OSError:
            return []
        return [row for row in rows if len(row) >= fields and row[2].isdigit()]

    def user(uid: int) -> pwd.struct_passwd:
        for row in table("/etc/passwd", 7):
            if int(row[2]) == uid:
                return pwd.struct_passwd((row[0], row[1], int(row[2]), int(row[3] or 0), row[4], row[5], row[6]))
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    def groups() -> list[grp.struct_group]:
        return [grp.struct_group((row[0], row[1], int(row[2]), [m for m in row[3].split(",") if m]))
                for row in table("/etc/group", 4)]

    def group(gid: int) -> grp.struct_group:
        found = next((g for g in groups() if g.gr_gid == gid), None)
        if found is None:
            raise KeyError(f"getgrgid(): gid not found: {gid}")
        return found

    pwd.getpwuid = user  # type: ignore[assignment]
    grp.getgrgid = group  # type: ignore[assignment]
    grp.getgrall = groups  # type: ignore[assignment]
