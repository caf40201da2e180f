"""What a Python interpreter does before a program's first line: the ``sys.path`` it builds, the start-up files it
runs, and every shared object mapped meanwhile, each with the file that caused it. Facts only.

CPython starts in this order (``Python/pylifecycle.c`` ``init_interp_main``, ``Modules/main.c``
``pymain_run_python``, 3.8-3.13): the loader maps the interpreter, what it NEEDs and ``LD_PRELOAD``; ``getpath``
computes the first ``sys.path`` (``PYTHONPATH`` entries, then the interpreter's own folders: the stdlib zip, the
stdlib, ``lib-dynload``; ``PYTHONHOME`` moves those); then, unless ``-S``, ``import site`` runs ``site.main()``
(the venv's ``pyvenv.cfg``, the user site, site-packages, every ``.pth`` file of each site folder in sorted
order, its path lines appended and its ``import`` lines executed, then ``sitecustomize`` and ``usercustomize``).
Only after that is the program's folder put first (``''`` for ``-c``, the script's real folder, the current
folder for ``-m``; nothing under ``-P``/``PYTHONSAFEPATH``/``-I``); then the program runs.

`observe` runs the target interpreter (any one: never assumed to be the one running cudnnload) as a child with
``-S`` plus the program's own flags and environment, in the program's folder, and a small script (`_CHILD`)
that installs an audit hook (PEP 578: ``import`` of an extension module and ``ctypes.dlopen`` come just before
a dlopen), wraps the steps of ``site.main`` so each change is credited to the step, ``.pth`` line or customize
module running, calls ``site.main()`` as the real start-up would, and reports. It never imports from the
current folder (the folder ``-c`` puts first is taken out before its first import; nothing is imported after
``site.main()``; the result is written with ``ascii()`` to an in-memory file, read back with
``ast.literal_eval``); a FIFO that start-up code opens is refused and reported rather than waited on; it has a
timeout. A ``.pth`` line, ``sitecustomize`` or ``usercustomize`` that raises is reported, never re-raised here.

`package` and `torch_preload` apply the frameworks' own Python loaders to a ``sys.path`` (the one `observe`
gives, or any other): ``import nvidia.cudnn`` with namespace packages merged across entries (JAX), and the first
entry holding ``nvidia/<lib>/lib/<pattern>`` (PyTorch).

The child differs from the real start-up in what start-up code could only see by looking for it: ``sys.argv`` is
``['-c', FD, '1']``, ``sys.flags.no_site`` is 1, ``sys.stderr`` is a wrapper while site.py runs, ``site``'s
functions are wrappers. It runs as the user running cudnnload: the user site of a set-user-ID program (off,
"setuid") is seen only when the observer runs so. Work done by threads start-up code starts is credited to what
the main thread runs meanwhile. Not modelled: a ``._pth`` file beside the interpreter (it replaces ``sys.path``
and drops ``PYTHONPATH``); what ``-m``'s ``runpy`` imports before the module runs; import hooks that start-up
code installs are reported (`Startup.finders`) but not run by `package`.
"""

from __future__ import annotations

import ast
import functools
import glob
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.children import as_owner, end_group, untrusted
from cudnnload.errors import CudnnloadError, UsageError
from cudnnload.files import path_problem, read_regular
from cudnnload.resolve.access import unblocked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    # What put a sys.path entry there, mapped a shared object or raised:
    #   loader         the dynamic loader, before any Python code ran (the interpreter, its NEEDED, LD_PRELOAD)
    #   program        the program's own folder (the script's, '' for -c, the current one for -m)
    #   pythonpath     a PYTHONPATH entry (text: the entry as written)
    #   interpreter    the interpreter's own folders (stdlib zip, stdlib, lib-dynload; moved by PYTHONHOME)
    #   site-packages  site.py adding a site-packages folder (the venv's, the system's)
    #   user-site      site.py adding the user site folder
    #   pth            a .pth path line (file, line, text)
    #   pth-import     a .pth import line, run by site.py with exec (file, line, text)
    #   sitecustomize, usercustomize   that module, imported by site.py (file)
    #   site           site.py itself, another step (text: the function)
    UserSiteWhy = Literal["enabled", "-S", "no-site", "venv", "-I", "-s", "PYTHONNOUSERSITE", "setuid", "changed"]
    SourceKind = Literal["loader", "program", "pythonpath", "interpreter", "site-packages", "user-site", "pth",
                         "pth-import", "sitecustomize", "usercustomize", "site"]


class StartupFailed(CudnnloadError):
    """The interpreter could not be observed: it is not there, not a Python 3.8+ that answers, or its start-up
    did not end within the timeout. ``why`` says which: "missing", "not-executable", "not-python", "too-old",
    "timeout", "died" (killed by a signal during start-up), "observer" (the observing script itself failed).
    ``step``: where start-up was when it died or hung (`Step`), where the observer said so."""

    def __init__(self, why: str, reason: str, *, path: str, fix: str | None = None, step: Step | None = None) -> None:
        self.why = why
        self.step = step
        super().__init__(reason, path=path, fix=fix)


@dataclass(frozen=True)
class Step:
    """The start-up step an interpreter died or hung in: a ``.pth`` file's line ("pth-import", "pth-path"; "pth"
    while the file is read), sitecustomize or usercustomize (``line``/``text``: the line whose call it was, where a
    dlopen or an extension import announced itself), or another of site.py's steps ("site", ``text``: its name)."""

    kind: SourceKind
    file: str | None = None
    line: int | None = None
    text: str | None = None


@dataclass(frozen=True)
class Source:
    """What did something during start-up: put an entry on sys.path, mapped a shared object, raised."""

    kind: SourceKind
    file: str | None = None  # the file responsible: the .pth, sitecustomize.py, site.py; None for the loader
    line: int | None = None  # the .pth line, from 1
    text: str | None = None  # that line; the PYTHONPATH entry as written; site.py's function


@dataclass(frozen=True)
class PathEntry:
    path: str  # as sys.path holds it ('' is the current folder); a non-string entry's repr when ``usable`` is False
    source: Source
    usable: bool = True  # False: not a string, which the import system skips (PathFinder)


@dataclass(frozen=True)
class PthLine:
    number: int | None  # from 1, as site.py counts in its error message
    text: str
    kind: Literal["path", "import"]
    added: tuple[str, ...]  # the sys.path entries it added (a path line: its folder, unless there already or absent)


@dataclass(frozen=True)
class PthFile:
    path: str
    site: str  # the site folder whose listing gave it
    read: bool  # False: site.py could not open it and went on without it
    lines: tuple[PthLine, ...]  # the lines site.py acted on, in order; none after one that raised


@dataclass(frozen=True)
class Trigger:
    """The call just before a shared object appeared: an extension module's import or a ctypes load."""

    event: Literal["import", "ctypes.dlopen"]  # the audit event (PEP 578)
    name: str | None  # the module, or the name given to ctypes (None: the program itself, dlopen(NULL))
    file: str | None = None  # the extension module's file


@dataclass(frozen=True)
class Mapped:
    path: str  # as /proc/self/maps shows it: the real path
    source: Source
    trigger: Trigger | None = None  # None: mapped by the loader, or between two observed calls
    deleted: bool = False  # its name was unlinked after it was mapped (proc(5): " (deleted)")


@dataclass(frozen=True)
class StartupError:
    """An exception raised by start-up code: site.py prints it and goes on, or (``fatal``) it ends start-up."""

    source: Source
    exception: str  # its type
    message: str
    file: str | None  # where it was raised: the .pth, the customize module's file
    line: int | None
    fatal: bool = False  # not an Exception site.py catches (SystemExit, KeyboardInterrupt): the program never runs


@dataclass(frozen=True)
class Customize:
    name: Literal["sitecustomize", "usercustomize"]
    file: str | None  # None: none found (or not looked for: -S, or the user site is off)


@dataclass(frozen=True)
class Finder:
    """An import hook start-up code added: it may answer imports that the folders on sys.path do not decide."""

    where: Literal["meta_path", "path_hooks"]
    name: str  # module.qualname of the finder (or of its class)
    source: Source


@dataclass(frozen=True)
class UserSite:
    path: str | None  # site.USER_SITE; None under -S
    enabled: bool
    # "no-site": site.py failed to import; "venv": pyvenv.cfg without include-system-site-packages; "setuid": the
    # effective uid or gid differs from the real one (site.check_enableusersite; seen only when the observer itself
    # runs so); "changed": start-up code set it
    why: UserSiteWhy


@dataclass(frozen=True)
class Startup:
    """What ``interpreter`` does before the program's first line, run as ``run_as`` with ``flags``."""

    interpreter: str  # the file run: as given, a bare name found on the environment's PATH
    executable: str  # its sys.executable
    version: tuple[int, int, int]
    run_as: str  # "-c", "-m", or the script's path
    flags: tuple[str, ...]
    cwd: str
    path: tuple[PathEntry, ...]  # sys.path when the program's first line runs
    pth_files: tuple[PthFile, ...]  # in the order site.py processed them (sorted per site folder)
    customize: tuple[Customize, ...]
    user_site: UserSite
    prefix: str
    base_prefix: str
    pyvenv_cfg: str | None  # the venv's pyvenv.cfg site.py read; None outside a venv
    system_site_packages: bool | None  # the venv includes the system's site-packages; None outside a venv
    mapped: tuple[Mapped, ...]  # every shared object mapped when the program's first line runs, in order
    removed: tuple[tuple[str, Source], ...]  # entries start-up code took off sys.path, and what did
    errors: tuple[StartupError, ...]
    finders: tuple[Finder, ...]
    blocked: tuple[tuple[str, Source], ...]  # FIFOs start-up opens: the real start-up waits there for a writer
    suffixes: tuple[str, ...]  # module suffixes, in the order its FileFinder tries them
    stderr: str  # what the start-up printed there (site.py's reports of errors)
    unobserved: tuple[str, ...] = ()  # the observer's own errors: what they touched may be credited to the wrong source

    @property
    def sys_path(self) -> tuple[str, ...]:
        """The entries the import system searches (the strings of `path`)."""
        return tuple(entry.path for entry in self.path if entry.usable)

    @property
    def finished(self) -> bool:
        """Whether the program's first line is reached: no fatal error, no FIFO waited on."""
        return not self.blocked and not any(error.fatal for error in self.errors)

    def without(self, lines: frozenset[tuple[str, str]]) -> Startup:
        """This start-up with the start-up lines ``lines`` ((file, line text): a ``.pth`` line's) taken as gone: the
        sys.path entries and the objects mapped that those lines put there are not there (a remove-line fix
        judged on the model: the ``.pth`` import line that put another release's site first)."""
        def gone(source: Source) -> bool:
            return (source.file or "", source.text or "") in lines

        if not lines:
            return self
        return replace(self, path=tuple(e for e in self.path if not gone(e.source)),
                       mapped=tuple(m for m in self.mapped if not gone(m.source)))

    def package(self, name: str) -> Package | None:
        """`package` on this start-up's sys.path, with its interpreter's suffixes and the program's folder."""
        return package(self.sys_path, name, suffixes=self.suffixes, cwd=self.cwd)

    def torch_preload(self, lib_folder: str, pattern: str, *, cuda_major: int | None,
                      torch: tuple[int, int] = (2, 11)) -> str | None:
        """`torch_preload` on this start-up's sys.path, from the program's folder."""
        return torch_preload(self.sys_path, lib_folder, pattern, cuda_major=cuda_major, torch=torch, cwd=self.cwd)


# --- the child -------------------------------------------------------------------------------------------------

# Runs inside the target interpreter (3.8+: sys.addaudithook; written so that 3.6 still parses it and says it is too
# old). It imports nothing but os and stat, which site.py imports first anyway, and those before site runs.
_CHILD = r'''
import sys


def text(value):
    # (value, True) for a string, else (its repr, False): what ascii() writes and ast.literal_eval reads back
    if isinstance(value, str):
        return (value, True)
    try:
        return (repr(value)[:300], False)
    except Exception:
        return (type(value).__name__, False)


def maybe(value):
    return None if value is None else text(value)[0]


def named(hook):
    owner = hook if isinstance(hook, type) else type(hook)
    return "%s.%s" % (getattr(owner, "__module__", "?"), getattr(owner, "__qualname__", owner.__name__))


def message(exc):
    try:
        return text(str(exc))[0][:2000]
    except Exception:
        return type(exc).__name__


def trace(exc):
    frames = []
    tb = getattr(exc, "__traceback__", None)
    while tb is not None:
        frame = tb.tb_frame
        frames.append((text(frame.f_code.co_filename)[0], tb.tb_lineno, text(frame.f_globals.get("__name__"))[0]))
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and isinstance(exc.filename, str):
        frames.append((exc.filename, exc.lineno, None))
    return frames


def observe(fd, run_site, skip):
    # -c puts '' (the current folder) first, but only after site has run (Modules/main.c pymain_run_python; not
    # under -I in 3.8-3.10, nor -P/-I in 3.11+): out before the first import, so nothing comes from that folder
    path0 = not getattr(sys.flags, "safe_path", sys.flags.isolated)
    if path0 and sys.path[:1] == [""]:
        del sys.path[0]
    import os
    import stat

    write, fsdecode, fspath, stat_of, getframe, exc_info = os.write, os.fsdecode, os.fspath, os.stat, sys._getframe, \
        sys.exc_info
    is_fifo, real_open, real_stderr = stat.S_ISFIFO, open, sys.stderr
    out = {"version": tuple(sys.version_info[:3]), "path0": path0, "executable": text(sys.executable)[0]}

    def send(kind, value):
        # one literal a line: ("cause", ...) as each starts and ("leave", None) as each ends, so that a start-up
        # that dies or hangs still says where it was; ("result", {...}) last
        data = (ascii((kind, value)) + "\n").encode("ascii")
        while data:
            data = data[write(fd, data):]

    if not hasattr(sys, "addaudithook"):
        send("result", out)
        return
    machinery = sys.modules["_frozen_importlib_external"]
    out["suffixes"] = list(machinery.EXTENSION_SUFFIXES) + list(machinery.SOURCE_SUFFIXES) + \
        list(machinery.BYTECODE_SUFFIXES)
    out["initial"] = [text(entry) for entry in sys.path]
    causes = [("loader", None, None, None, None)]  # (kind, file, line, text, index in pth)
    stack = [0]
    added, removed, mapped, finders, errors, blocked, pth, pth_stack, reported = [], [], [], [], [], [], [], [], []
    seen = {"path": [text(entry) for entry in sys.path], "maps": set(), "meta_path": list(sys.meta_path),
            "path_hooks": list(sys.path_hooks)}
    state = {"busy": False, "pending": None, "exit": None, "codes": {}}

    def maps():
        with real_open("/proc/self/maps", "rb") as handle:
            data = handle.read()
        found = []
        for line in data.splitlines():
            fields = line.split(None, 5)
            if len(fields) == 6 and b"x" in fields[1] and fields[5][:1] == b"/":
                found.append(fsdecode(fields[5]))
        return found

    def flush():
        # everything since the last flush is the doing of what runs now; a shared object that appeared right
        # after an extension import or a ctypes load announced itself (state["pending"]) is that call's doing
        cause, trigger = stack[-1], state["pending"]
        state["pending"] = None
        now = [text(entry) for entry in sys.path]
        before = set(seen["path"])
        for entry in now:
            if entry not in before:
                added.append((entry, cause))
                before.add(entry)
        kept = set(now)
        removed.extend((entry, cause) for entry in seen["path"] if entry not in kept)
        seen["path"] = now
        for path in maps():
            if path not in seen["maps"]:
                seen["maps"].add(path)
                mapped.append((path, cause, trigger))
        for where in ("meta_path", "path_hooks"):
            current = list(getattr(sys, where))
            finders.extend((where, named(hook), cause) for hook in current
                           if not any(hook is old for old in seen[where]))
            seen[where] = current

    def enter(cause):
        flush()
        causes.append(cause)
        stack.append(len(causes) - 1)
        send("cause", cause)

    def line_starts(kind, frame):
        flush()
        local = frame.f_locals
        number, line = local.get("n"), local.get("line")
        # site.py's message counts from 1: 3.13 enumerates the lines from 1, 3.8-3.12 from 0 and print n+1
        if isinstance(number, int) and sys.version_info < (3, 13):
            number += 1
        top = causes[stack[-1]]
        causes.append(("pth-" + kind, top[1], number, line.rstrip("\r\n") if isinstance(line, str) else None, top[4]))
        stack[-1] = len(causes) - 1
        send("cause", causes[-1])

    def opened(path):
        if isinstance(path, int):
            return None
        path = fsdecode(fspath(path))
        try:
            info = stat_of(path)
        except OSError:
            return None
        if is_fifo(info.st_mode):  # opening it waits for a writer: refused here, reported
            blocked.append((path, stack[-1]))
            return OSError("cudnnload: %s is a FIFO: start-up would wait here for a writer" % path)
        if pth_stack and path == pth[pth_stack[-1]][0]:
            pth[pth_stack[-1]][2] = True
        if causes[stack[-1]][3] == "venv" and path.endswith("pyvenv.cfg"):
            out["pyvenv_cfg"] = path
        return None

    def customize_line():
        # the line of sitecustomize or usercustomize whose call this is (its innermost frame): a fix takes it out
        frame = getframe(2)
        while frame is not None:
            if frame.f_globals.get("__name__") in ("sitecustomize", "usercustomize"):
                return (text(frame.f_code.co_filename)[0], frame.f_lineno)
            frame = frame.f_back
        return None

    def hook(event, args):
        if state["busy"]:
            return
        state["busy"] = True
        refuse = None
        try:
            if state["pending"] is not None:  # the dlopen the last event announced is done by now
                flush()
            if event == "import" and len(args) > 1 and args[1] is not None:  # an extension module, dlopened next
                flush()
                state["pending"] = ("import", text(args[0])[0], text(args[1])[0], customize_line())
                send("trigger", state["pending"])  # a start-up that dies in it still says which call it was
            elif event == "ctypes.dlopen":
                flush()
                state["pending"] = ("ctypes.dlopen", None if args[0] is None else text(fsdecode(args[0]))[0], None,
                                    customize_line())
                send("trigger", state["pending"])
            elif event == "compile" and getframe(1).f_code is state["codes"].get("addpackage"):
                line_starts("import", getframe(1))  # site.addpackage's exec(line): an import line starts
            elif event == "open":
                refuse = opened(args[0])
        except Exception as exc:
            out.setdefault("internal", []).append(text(repr(exc))[0])
        finally:
            state["busy"] = False
        if refuse is not None:
            raise refuse

    def quiet(function, *args):
        # the observer's own work (reading /proc/self/maps is an "open") is not start-up's: the hook ignores it
        busy, state["busy"] = state["busy"], True
        try:
            function(*args)
        finally:
            state["busy"] = busy

    sys.addaudithook(hook)
    quiet(flush)  # what the loader mapped before any Python code: the interpreter, its NEEDED, LD_PRELOAD
    site = None
    if run_site:
        quiet(enter, ("site", None, None, "import site", None))
        try:
            import site
        except BaseException as exc:  # the real interpreter stops too: "Failed to import the site module"
            out["exit"] = (stack[-1], type(exc).__qualname__, message(exc), trace(exc))
    if site is not None:
        out["site"] = maybe(getattr(site, "__file__", None))

        def wrap(name, cause):
            # site.NAME through a wrapper: what happens inside it is credited to cause(*its arguments)
            original = getattr(site, name, None)
            if not callable(original):
                return

            def wrapper(*args, **kwargs):
                quiet(enter, cause(*args, **kwargs))
                try:
                    return original(*args, **kwargs)
                except BaseException:
                    if state["exit"] is None:
                        state["exit"] = stack[-1]
                    raise
                finally:
                    quiet(leave)

            setattr(site, name, wrapper)

        def leave():
            flush()
            send("leave", None)
            owner = causes[stack.pop()][4]
            if owner is not None and pth_stack and pth_stack[-1] == owner:
                pth_stack.pop()

        def pth_file(sitedir, name, *_, **__):
            fullname = text(os.path.join(sitedir, name))[0]
            pth.append([fullname, text(sitedir)[0], False])
            pth_stack.append(len(pth) - 1)
            return ("pth", fullname, None, None, len(pth) - 1)

        reporters = [getattr(site, name).__code__ for name in ("addpackage", "execsitecustomize", "execusercustomize")
                     if hasattr(getattr(site, name, None), "__code__")]
        state["codes"]["addpackage"] = getattr(getattr(site, "addpackage", None), "__code__", None)
        original_makepath = getattr(site, "makepath", None)
        if state["codes"]["addpackage"] is not None and callable(original_makepath):
            def makepath(*paths):
                caller = getframe(1)
                if caller.f_code is state["codes"]["addpackage"]:
                    quiet(line_starts, "path", caller)  # site.addpackage's makepath(sitedir, line): a path line
                return original_makepath(*paths)

            site.makepath = makepath
        # a start-up that died in steps (`_past_the_step`) observed again without them: a .pth file not read, a
        # customize module not imported
        unread = {file for kind, file in skip if kind in ("pth", "pth-path", "pth-import")}
        if unread and callable(getattr(site, "addpackage", None)):
            original_addpackage = site.addpackage

            def addpackage(sitedir, name, known_paths, *rest, **kwargs):
                if text(os.path.join(sitedir, name))[0] in unread:
                    return known_paths
                return original_addpackage(sitedir, name, known_paths, *rest, **kwargs)

            site.addpackage = addpackage
        for kind, _ in skip:
            if kind in ("sitecustomize", "usercustomize") and hasattr(site, "exec" + kind):
                setattr(site, "exec" + kind, lambda: None)
        for name in ("removeduppaths", "venv", "addusersitepackages", "addsitepackages", "execsitecustomize",
                     "execusercustomize"):
            wrap(name, lambda *_, name=name, **__: ("site", None, None, name, None))
        wrap("addpackage", pth_file)

        class Stderr:
            # site.py reports an exception of a .pth line or a customize module on stderr, from inside its except
            # clause: each write from one of those functions records the exception being handled
            def write(self, data):
                if not state["busy"]:
                    state["busy"] = True
                    try:
                        exc = exc_info()[1]
                        if getframe(1).f_code in reporters and exc is not None and \
                                not any(exc is old for old in reported):
                            reported.append(exc)
                            errors.append((stack[-1], type(exc).__qualname__, message(exc), trace(exc)))
                    except Exception as problem:
                        out.setdefault("internal", []).append(text(repr(problem))[0])
                    finally:
                        state["busy"] = False
                return real_stderr.write(data)

            def __getattr__(self, name):
                return getattr(real_stderr, name)

        sys.stderr = Stderr()
        try:
            site.main()
        except BaseException as exc:
            out["exit"] = (state["exit"] if state["exit"] is not None else stack[-1], type(exc).__qualname__,
                           message(exc), trace(exc))
        finally:
            if isinstance(sys.stderr, Stderr):
                sys.stderr = real_stderr
        enabled = site.ENABLE_USER_SITE
        out.update(enable_user_site=None if enabled is None else bool(enabled),
                   user_site=maybe(site.USER_SITE), prefixes=[maybe(prefix) for prefix in site.PREFIXES],
                   customize=[(name, maybe(getattr(sys.modules.get(name), "__file__", None)))
                              for name in ("sitecustomize", "usercustomize")])
    quiet(flush)
    out.update(final=[text(entry) for entry in sys.path], causes=causes, added=added, removed=removed, mapped=mapped,
               finders=finders, errors=errors, blocked=blocked, pth=pth, prefix=text(sys.prefix)[0],
               base_prefix=text(sys.base_prefix)[0], no_user_site=sys.flags.no_user_site,
               isolated=sys.flags.isolated, ignore_environment=sys.flags.ignore_environment)
    send("result", out)


try:
    observe(int(sys.argv[1]), sys.argv[2] == "1", tuple(zip(sys.argv[3::2], sys.argv[4::2])))
except BaseException as exc:
    import os
    os.write(int(sys.argv[1]), (ascii(("failed", text(repr(exc))[0])) + "\n").encode("ascii"))
finally:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    import os
    os._exit(0)  # no atexit handler of start-up code, no finalization: the answer is written
'''


# --- observing ---------------------------------------------------------------------------------------------------

# site.py's steps (`_CHILD` wraps them) that add folders of their own kind; the others are "site"
_STEP_KINDS: dict[str, SourceKind] = {"addsitepackages": "site-packages", "addusersitepackages": "user-site",
                                      "execsitecustomize": "sitecustomize", "execusercustomize": "usercustomize"}
_DELETED = " (deleted)"  # proc(5), as `mapped.read_maps` reads it
_STDERR_BYTES = 64 << 10
# The most of the observer's answer read: start-up code can write to its descriptor too (its number is in
# sys.argv), and 1 GB written there was 3 GB of cudnnload's memory; a real answer is well under 1 MB.
_ANSWER_BYTES = 32 << 20


def observe(interpreter: str | None = None, environ: Mapping[str, str] | None = None, *, run_as: str = "-c",
            flags: Sequence[str] = (), cwd: str | None = None, timeout: float = 20.0, user: int | None = None,
            skip: Sequence[Step] = ()) -> Startup:
    """What ``interpreter`` (default: this one) does before the first line of a program run as ``run_as`` ("-c";
    "-m"; or the script's path, as in ``python SCRIPT``) with the interpreter options ``flags`` (``("-I",)``,
    ``("-s", "-E")`` ...), the environment ``environ`` (default: this process's) and the current folder ``cwd``
    (default: this one). Runs it once, as a child, for at most ``timeout`` seconds; as ``user`` where cudnnload
    runs as root and that start-up is another user's (`children.as_owner`); without the steps ``skip`` (each
    ``.pth`` file, or customize module, a start-up died in: `StartupFailed.step`). Raises StartupFailed when it
    cannot be observed; what start-up code raised is in the result (`Startup.errors`), never raised here."""
    env = dict(os.environ if environ is None else environ)
    folder = os.getcwd() if cwd is None else cwd
    python = _executable(sys.executable if interpreter is None else interpreter, env, folder)
    letters = _letters(flags)
    run_site = "S" not in letters
    raw, stderr = _run(python, env, tuple(flags), folder, run_site, timeout, user, tuple(skip))
    if "final" not in raw:
        raise StartupFailed("too-old", f"Python {'.'.join(map(str, raw.get('version', ())))} has no audit hooks "
                            "(PEP 578, 3.8+): its start-up cannot be observed", path=python)
    return _startup(raw, python=python, env=env, run_as=run_as, flags=tuple(flags), cwd=folder,
                    letters=letters, run_site=run_site, stderr=stderr)


def this_python(environ: Mapping[str, str] | None = None) -> Startup | None:
    """This interpreter's start-up in ``environ``, run as ``-c`` in the current folder; None when it cannot be
    observed (the caller then falls back to this process's own sys.path)."""
    try:
        return observe(None, environ, cwd=os.getcwd())
    except (StartupFailed, OSError):
        return None


def _executable(given: str, env: Mapping[str, str], cwd: str) -> str:
    """The file the program's ``exec`` runs: a bare name searched on the environment's PATH, a relative path taken
    from the program's folder (as POSIX subprocess does with ``cwd``). StartupFailed when there is none."""
    import shutil

    if "/" not in given:
        found = shutil.which(given, path=env.get("PATH", os.defpath))
        if found is None:
            raise StartupFailed("missing", "not found on PATH", path=given, fix="give the path of a python executable")
        return found
    return os.path.join(cwd, given)


@dataclass(frozen=True)
class Invocation:
    """A Python command line, as `observe` takes it."""

    interpreter: str
    flags: tuple[str, ...]  # the interpreter's own options, before the program
    run_as: str  # "-c", "-m", "-" (standard input, or interactive), or the script


def invocation(argv: Sequence[str]) -> Invocation:
    """``argv`` (``["python3", "-I", "train.py", "--lr", "1"]``) read as the interpreter reads its command line."""
    flags, _, program = _options(argv[1:])
    return Invocation(argv[0], tuple(flags), program or "-")


def _options(words: Sequence[str]) -> tuple[list[str], set[str], str | None]:
    """CPython's command line up to the program (Python/getopt.c, 3.8-3.13: short options clustered, -c and -m end
    them and take the next word, -W and -X take a value in the same word or the next, "--" ends them): the option
    words, the one-letter options among them, and the program ("-c", "-m", "-" or the script; None: none came)."""
    flags: list[str] = []
    letters: set[str] = set()
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return flags, letters, words[index + 1] if index + 1 < len(words) else None
        if word == "-" or not word.startswith("-"):
            return flags, letters, word
        index += 1
        if word.startswith("--"):  # --check-hash-based-pycs MODE, --help ...
            flags.append(word)
            if word == "--check-hash-based-pycs" and index < len(words):
                flags.append(words[index])
                index += 1
            continue
        flags.append(word)
        for at, letter in enumerate(word[1:], start=1):
            if letter in "cm":
                flags[-1:] = [word[:at]] if at > 1 else []
                return flags, letters, "-" + letter
            if letter in "WX":
                if at == len(word) - 1 and index < len(words):
                    flags.append(words[index])
                    index += 1
                break
            letters.add(letter)
    return flags, letters, None


def _letters(flags: Sequence[str]) -> frozenset[str]:
    """The one-letter options in ``flags`` (`_options`); UsageError when they hold a program: it is ``run_as``."""
    words, letters, program = _options(flags)
    if program is not None or len(words) != len(flags):
        raise UsageError(f"{' '.join(flags)}: the program is given as run_as, not among the options",
                         fix='run_as="-c", "-m" or the script')
    return frozenset(letters)


def _run(python: str, env: Mapping[str, str], flags: tuple[str, ...], cwd: str, run_site: bool,
         timeout: float, user: int | None = None, skip: tuple[Step, ...] = ()) -> tuple[dict[str, Any], str]:
    """Run `_CHILD` under ``python`` (as ``user``, `observe`): its result, and what it wrote on stderr."""
    problem = path_problem(python)
    if problem is not None:  # a venv whose base interpreter is gone: "symbolic link to ..., which does not exist"
        raise StartupFailed("missing" if problem[0] in ("missing", "broken-symlink") else "not-executable",
                            problem[1], path=python, fix="give the path of a python executable")
    if os.path.isdir(python) or not os.access(python, os.X_OK):
        raise StartupFailed("not-executable", "not an executable file", path=python,
                            fix="give the path of a python executable (a venv's bin/python)")
    if not os.path.isdir(cwd):
        raise UsageError("not a folder: the program's current folder must be one", path=cwd)
    answer = os.memfd_create("cudnnload-startup")
    errors = os.memfd_create("cudnnload-startup-stderr")
    try:
        command = [python, "-S", *flags, "-c", _CHILD, str(answer), "1" if run_site else "0",
                   *(word for step in skip for word in (step.kind, step.file or ""))]
        # a FIFO preloaded: start-up never comes (the model says so); what start-up code leaves running is ended
        with untrusted(unblocked(env)) as (child_env, _):
            try:
                child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                                         cwd=cwd, env=child_env, pass_fds=(answer,), start_new_session=True,
                                         **as_owner(user))  # type: ignore[call-overload]
            except OSError as exc:
                raise StartupFailed("not-python" if exc.errno == 8 else "not-executable",  # ENOEXEC
                                    exc.strerror or str(exc), path=python) from None
            try:
                ended = _exits(child, timeout)
            finally:  # also when interrupted: its session is its own, Ctrl-C at the terminal does not reach it
                end_group(child)
            if not ended:
                step = _running(_lines(answer))
                raise StartupFailed("timeout", f"its start-up did not end within {timeout:g} s"
                                    + _where(step), path=python, step=step) from None
        lines, stderr = _lines(answer), _read(errors, _STDERR_BYTES).decode(errors="replace")
    finally:
        os.close(answer)
        os.close(errors)
    result = next((value for kind, value in lines if kind == "result"), None)
    failed = next((value for kind, value in lines if kind == "failed"), None)
    if failed is not None:
        raise StartupFailed("observer", f"the observing script failed under it: {failed}{_where(_running(lines))}",
                            path=python)
    if not isinstance(result, dict):
        died = child.returncode is not None and child.returncode < 0
        step = _running(lines) if died else None
        # what it said last; of a Python that failed, its "Fatal Python error" line (its frames follow it)
        said = [line.strip() for line in stderr.splitlines() if line.strip()]
        last = next((line for line in said if line.startswith("Fatal Python error")), said[-1] if said else "")
        raise StartupFailed("died" if died else "not-python",
                            (f"it died of {_signal_name(-child.returncode)} during start-up{_where(step)}" if died else
                             f"its start-up ended with no answer, exit status {child.returncode}"
                             + (f": {last[:300]}" if last else "")), path=python, step=step)
    return result, stderr


def _signal_name(number: int) -> str:
    """"SIGBUS (signal 7)"; a number no signal of this system has, as it is."""
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"


def _exits(child: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether the child ends within ``timeout`` seconds. Waits on a pidfd (Linux 5.3+): Popen.wait with a
    timeout polls with sleeps of up to 50 ms, a third of the whole answer's budget."""
    import select

    try:
        fd = os.pidfd_open(child.pid)
    except OSError:
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    finally:
        os.close(fd)


def _read(fd: int, limit: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _lines(fd: int) -> list[tuple[str, object]]:
    """The child's literals, one a line; a line cut short (the child killed while writing) ends the list."""
    found = []
    for line in _read(fd, _ANSWER_BYTES).decode("ascii", errors="replace").splitlines():
        try:
            kind, value = ast.literal_eval(line)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            break
        found.append((kind, value))
    return found


def _where(step: Step | None) -> str:
    """Where a start-up that never ended was (`_running`), in words."""
    if step is None:
        return ""
    if step.kind in ("pth", "pth-path", "pth-import"):
        return f", in {step.file}" + (f" line {step.line} ({step.text!r})" if step.line is not None else "")
    if step.kind in ("sitecustomize", "usercustomize"):
        return f", importing {step.kind}" + (f" ({step.file} line {step.line})" if step.line is not None else "")
    return f", in site.py's {step.text}()"


def _running(lines: Sequence[tuple[str, object]]) -> Step | None:
    """The .pth line or step running when the child's announcements stop (`_CHILD`: a line replaces its file or the
    line before, a step or file ends with "leave"); in a customize module, the line of the last dlopen or extension
    import it announced."""
    running: list[tuple[Any, ...]] = []
    trigger: Any = None
    for kind, value in lines:
        if kind == "leave" and running:
            running.pop()
        elif kind == "cause" and isinstance(value, tuple) and value[0] in ("pth-path", "pth-import") and running:
            running[-1] = value  # a line takes the place of its file, or of the line before it
        elif kind == "cause" and isinstance(value, tuple):
            running.append(value)
        if kind in ("cause", "leave"):
            trigger = None
        elif kind == "trigger":
            trigger = value
    if not running or not all(isinstance(v, (str, int, type(None))) for v in running[-1][:4]):
        return None
    kind, file, line, text = running[-1][:4]
    # start-up code can write to the observer's descriptor too: a file named here is one of its own kind (a .pth
    # file, the customize module), never another a fix would then edit, and its line is read only from a small
    # regular file (`_line_of`: not a FIFO, not /dev/zero)
    if kind in ("pth", "pth-path", "pth-import"):
        return Step(kind, file, line, text) if isinstance(file, str) and file.endswith(".pth") else None
    step = _STEP_KINDS.get(str(text))
    if step not in ("sitecustomize", "usercustomize"):
        return Step("site", text=text)
    called = trigger[3] if isinstance(trigger, tuple) and len(trigger) > 3 else None
    if not (isinstance(called, tuple) and len(called) == 2 and isinstance(called[0], str)
            and isinstance(called[1], int) and os.path.basename(called[0]) == f"{step}.py"):
        return Step(step)
    return Step(step, called[0], called[1], _line_of(called[0], called[1]))


def _line_of(path: str, number: int, limit: int = 1 << 20) -> str | None:
    """Line ``number`` (from 1) of the regular file ``path`` of at most ``limit`` bytes; None otherwise."""
    try:
        data = read_regular(path, limit + 1)
    except (OSError, CudnnloadError):
        return None
    if len(data) > limit:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[number - 1] if 0 < number <= len(lines) and lines[number - 1].strip() else None


def _startup(raw: dict[str, Any], *, python: str, env: Mapping[str, str], run_as: str, flags: tuple[str, ...],
             cwd: str, letters: frozenset[str], run_site: bool, stderr: str) -> Startup:
    """The child's raw record (`_CHILD`) made into facts: each change credited to its source."""
    customize = {name: file for name, file in raw.get("customize", ())}
    for cause, _, _, frames in [*raw["errors"], *([raw["exit"]] if "exit" in raw else [])]:
        name = _STEP_KINDS.get(raw["causes"][cause][3] or "")
        if name in ("sitecustomize", "usercustomize") and customize.get(name) is None:
            customize[name] = _raised_in(frames, name)[0]  # it raised: gone from sys.modules, named by its frames
    sources = [_source(cause, raw, customize) for cause in raw["causes"]]
    initial = _initial(raw, env, cwd)
    latest = {tuple(entry): cause for entry, cause in raw["added"]}  # the last addition is the one that stands
    path = [PathEntry(_path0(run_as, cwd), Source("program", text=run_as))] if raw["path0"] else []
    for text, usable in raw["final"]:
        cause = latest.get((text, usable))
        source = initial.get(text, Source("site", raw.get("site"))) if cause is None else sources[cause]
        if cause is not None and raw["causes"][cause][3] == "removeduppaths":  # site made an entry absolute
            source = next((initial[entry] for entry in initial
                           if os.path.abspath(os.path.join(cwd, entry)) == text), source)
        path.append(PathEntry(text, source, usable))
    system_site = (raw["base_prefix"] in raw.get("prefixes", ())) if raw.get("pyvenv_cfg") else None
    errors = [_error(cause, kind, message, frames, sources) for cause, kind, message, frames in raw["errors"]]
    if "exit" in raw:
        cause, kind, message, frames = raw["exit"]
        errors.append(_error(cause, kind, message, frames, sources, fatal=True))
    return Startup(
        interpreter=python, executable=raw["executable"], version=tuple(raw["version"]), run_as=run_as, flags=flags,
        cwd=cwd, path=tuple(path), pth_files=_pth_files(raw), user_site=_user_site(raw, letters, run_site,
                                                                                  system_site),
        customize=tuple(Customize(name, customize.get(name)) for name in ("sitecustomize", "usercustomize")),
        prefix=raw["prefix"], base_prefix=raw["base_prefix"], pyvenv_cfg=raw.get("pyvenv_cfg"),
        system_site_packages=system_site,
        mapped=tuple(_mapped(path_text, sources[cause], trigger) for path_text, cause, trigger in raw["mapped"]),
        removed=tuple((text, sources[cause]) for (text, _), cause in raw["removed"]),
        errors=tuple(errors), finders=tuple(Finder(where, name, sources[cause]) for where, name, cause in
                                            raw["finders"]),
        blocked=tuple((file, sources[cause]) for file, cause in raw["blocked"]), suffixes=tuple(raw["suffixes"]),
        stderr=stderr, unobserved=tuple(raw.get("internal", ())))


def _source(cause: Sequence[Any], raw: Mapping[str, Any], customize: Mapping[str, str | None]) -> Source:
    kind, file, line, text, _ = cause
    if kind == "loader":
        return Source("loader")
    if kind in ("pth", "pth-path"):
        return Source("pth", file, line, text)
    if kind == "pth-import":
        return Source("pth-import", file, line, text)
    step = _STEP_KINDS.get(text, "site")
    if step in ("sitecustomize", "usercustomize"):
        return Source(step, customize.get(step))
    return Source(step, raw.get("site"), text=text)


def _initial(raw: Mapping[str, Any], env: Mapping[str, str], cwd: str) -> dict[str, Source]:
    """Where each entry of the first sys.path (getpath's, before site) comes from: the first ones from PYTHONPATH
    (3.8-3.10 keep each as written, 3.11+ getpath.py makes it absolute: checked, not assumed), the rest the
    interpreter's own folders."""
    items = env.get("PYTHONPATH", "").split(os.pathsep) if env.get("PYTHONPATH") and not \
        raw["ignore_environment"] else []
    home = env.get("PYTHONHOME") if not raw["ignore_environment"] else None
    found: dict[str, Source] = {}
    for index, (entry, _) in enumerate(raw["initial"]):
        item = items[index] if index < len(items) else None
        if item is not None and entry in (item, os.path.normpath(os.path.join(cwd, item))):
            found.setdefault(entry, Source("pythonpath", text=item))
        else:
            found.setdefault(entry, Source("interpreter", raw["executable"], text=f"PYTHONHOME={home}" if home
                                           else None))
    return found


def _path0(run_as: str, cwd: str) -> str:
    """What the program puts first (Python/pathconfig.c ``_PyPathConfig_ComputeSysPath0``): '' for -c and stdin,
    the current folder for -m, else the script's folder with every symbolic link resolved (realpath)."""
    if run_as in ("-c", "-"):
        return ""
    if run_as == "-m":
        return cwd
    return os.path.dirname(os.path.realpath(os.path.join(cwd, run_as)))


def _pth_files(raw: Mapping[str, Any]) -> tuple[PthFile, ...]:
    lines: dict[int, list[PthLine]] = {}
    for index, (kind, _, number, text, owner) in enumerate(raw["causes"]):
        if kind in ("pth-path", "pth-import") and owner is not None:
            added = tuple(entry for (entry, _), cause in raw["added"] if cause == index)
            lines.setdefault(owner, []).append(PthLine(number, text or "", "path" if kind == "pth-path" else "import",
                                                       added))
    return tuple(PthFile(file, site, read, tuple(lines.get(index, ()))) for index, (file, site, read) in
                 enumerate(raw["pth"]))


def _raised_in(frames: Sequence[Sequence[Any]], module: str) -> tuple[str | None, int | None]:
    """The file and line of ``module`` where an exception was raised: its deepest frame in the traceback, or the
    file a SyntaxError names."""
    for file, line, name in reversed(frames):
        if name == module or name is None:
            return file, line
    return None, None


def _error(cause: int, kind: str, message: str, frames: Sequence[Sequence[Any]], sources: Sequence[Source],
           fatal: bool = False) -> StartupError:
    source = sources[cause]
    if source.kind in ("pth", "pth-import"):
        file, line = source.file, source.line
    else:
        file, line = _raised_in(frames, source.kind) if source.kind in ("sitecustomize", "usercustomize") else \
            (frames[-1][0], frames[-1][1]) if frames else (None, None)
    return StartupError(source, kind, message, file or source.file, line, fatal)


def _mapped(text: str, source: Source, trigger: Sequence[Any] | None) -> Mapped:
    deleted = text.endswith(_DELETED)
    at = trigger[3] if trigger and len(trigger) > 3 else None
    if at is not None and source.kind in ("sitecustomize", "usercustomize"):
        source = _customize_line(source, at[0], at[1])
    return Mapped(text[:-len(_DELETED)] if deleted else text, source,
                  Trigger(trigger[0], trigger[1], trigger[2]) if trigger else None, deleted)


def _customize_line(source: Source, file: str, number: int) -> Source:
    """``source`` (a customize module) with the line whose call mapped an object, when taking that line out (every
    line equal to it, as a remove-line fix does) leaves a module that still compiles: a line of its own, not part
    of a statement that spans lines nor the only statement of a block; else as it was (the code said in words)."""
    if source.file is not None and os.path.realpath(source.file) != os.path.realpath(file):
        return source
    try:
        stat = os.stat(file)
    except OSError:
        return source
    line = _line_alone(file, number, (stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return source if line is None else Source(source.kind, file, number, line)


@functools.lru_cache(maxsize=32)
def _line_alone(file: str, number: int, stamp: tuple[int, int, int]) -> str | None:
    """Line ``number`` of ``file`` when the module compiles without it (and it is code), else None. Read and
    compiled once per version of the file (``stamp``), not once per object one call of it mapped."""
    try:
        with open(file, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
        line = lines[number - 1]
        compile("\n".join(each for each in lines if each != line) + "\n", file, "exec")
    except (OSError, IndexError, SyntaxError, ValueError):
        return None
    return None if not line.strip() or line.strip().startswith("#") else line


def _user_site(raw: Mapping[str, Any], letters: frozenset[str], run_site: bool,
               system_site: bool | None) -> UserSite:
    """Whether site.py added the user site, and why not (site.py ``venv``, ``check_enableusersite``)."""
    if not run_site or "enable_user_site" not in raw:
        return UserSite(None, False, "-S" if not run_site else "no-site")
    enabled = raw["enable_user_site"]
    why: UserSiteWhy
    if enabled:
        why = "enabled"
    elif system_site is False:
        why = "venv"
    elif raw["no_user_site"]:
        why = "-I" if raw["isolated"] else "-s" if "s" in letters else "PYTHONNOUSERSITE"
    else:
        why = "setuid" if enabled is None else "changed"
    return UserSite(raw["user_site"], bool(enabled), why)


# --- the frameworks' Python loaders, applied to a sys.path --------------------------------------------------------

@dataclass(frozen=True)
class Package:
    """What ``import NAME`` gives, found as the import system finds it, without running any of its code."""

    name: str
    folders: tuple[str, ...]  # its __path__, in order: JAX opens ``folders[0]/lib/libcudnn.so.9``
    init: str | None  # a regular package's __init__ file; None for a namespace package (its folders merged)


def package(sys_path: Sequence[str], name: str, *, suffixes: Sequence[str] | None = None,
            cwd: str | None = None) -> Package | None:
    """The package ``import name`` (dotted: ``nvidia.cudnn``) gives on ``sys_path``; None when there is none, or a
    module (not a package) stands in its way. ``suffixes``: the interpreter's module suffixes in the order its
    FileFinder tries them (`Startup.suffixes`; default: this interpreter's); ``cwd``: the folder '' stands for.

    The rules of importlib's PathFinder and FileFinder (``importlib/_bootstrap_external.py``, 3.3-3.13), for
    each part of the name over the folders of the part before (sys.path for the first): an entry whose
    ``PART/__init__<suffix>`` is a file is a regular package and ends the search; else a file ``PART<suffix>`` is
    a module and ends it (no package: ``import nvidia.cudnn`` then fails); else a folder ``PART`` is one portion of
    a namespace package, and the search goes on. Portions merge in sys.path order, but a regular package on a
    later entry wins over every portion before it (the 9.0 wheels ship ``nvidia/__init__.py``, later ones do
    not). Zip files on sys.path (zipimport) are not searched here: no shared object loads from one."""
    if suffixes is None:
        from importlib import machinery

        suffixes = [*machinery.EXTENSION_SUFFIXES, *machinery.SOURCE_SUFFIXES, *machinery.BYTECODE_SUFFIXES]
    root = os.getcwd() if cwd is None else cwd
    folders: Sequence[str] = sys_path
    found: Package | None = None
    parts = name.split(".")
    for depth, part in enumerate(parts):
        found = _find(folders, ".".join(parts[:depth + 1]), part, tuple(suffixes), root)
        if found is None:
            return None
        folders = found.folders
    return found


def _find(folders: Sequence[str], name: str, part: str, suffixes: tuple[str, ...], cwd: str) -> Package | None:
    portions: list[str] = []
    for entry in folders:
        folder = os.path.join(cwd, entry) if entry else cwd  # FileFinder: a relative entry is from the current folder
        if not os.path.isdir(folder):  # FileFinder takes folders only (zip files are zipimport's)
            continue
        inside = os.path.join(folder, part)
        init = next((suffix for suffix in suffixes if os.path.isfile(os.path.join(inside, "__init__" + suffix))), None)
        if init is not None:
            return Package(name, (inside,), os.path.join(inside, "__init__" + init))
        if any(os.path.isfile(os.path.join(folder, part + suffix)) for suffix in suffixes):
            return None
        if os.path.isdir(inside):
            portions.append(inside)
    return Package(name, tuple(portions), None) if portions else None


def torch_preload(sys_path: Sequence[str], lib_folder: str, pattern: str, *, cuda_major: int | None,
                  torch: tuple[int, int] = (2, 11), cwd: str | None = None,
                  gone: Callable[[str], bool] | None = None) -> str | None:
    """The file PyTorch's ``_preload_cuda_deps`` opens for one library (``"cudnn"``, ``"libcudnn.so.*[0-9]"``) on
    ``sys_path``: the first of the entry's candidates, on the first entry that has any; None when none has.
    ``cuda_major``: ``torch.version.cuda``'s major (None for a CPU build); ``cwd``: the folder relative entries
    ('') stand for (default: this process's).

    Each entry's candidates, in torch/__init__.py's order (``_get_cuda_dep_paths``), each a ``glob.glob`` in
    directory order (unsorted, as torch takes them): ``ENTRY/nvidia/<lib_folder>/lib/<pattern>`` (every release;
    2.6 skips an entry without ``nvidia/``); then ``ENTRY/nvidia/cu<cuda_major>/lib/<pattern>`` (the CUDA 13 wheels'
    shared folder: pytorch#163661, picked onto release/2.9); then ``ENTRY/<lib_folder>/lib/<pattern>``
    (pytorch#149808, picked onto release/2.7). Entries are used as written, glob characters included. ``gone``:
    whether a file is taken away in the world judged (`linker.LinkerEnv.is_gone`): the glob does not see it."""
    places: list[tuple[str, ...]] = [("nvidia", lib_folder, "lib")]
    if torch >= (2, 9) and cuda_major is not None:
        places.append(("nvidia", f"cu{cuda_major}", "lib"))
    if torch >= (2, 7):
        places.append((lib_folder, "lib"))
    for entry in sys_path:
        for place in places:
            matches = glob.glob(os.path.join(entry, *place, pattern), root_dir=cwd)
            matches = [m for m in matches if gone is None or not gone(m)]
            if matches:
                return matches[0] if cwd is None or os.path.isabs(matches[0]) else os.path.join(cwd, matches[0])
    return None
