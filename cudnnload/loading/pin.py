"""Run an unmodified program with a proven cuDNN pinned: the set preloaded by absolute path.

`run_environment` takes the set `plans` chooses and proves for the request (as `load()` does: the
install given, else the best one), and returns the program's environment: yours, with ``LD_PRELOAD``
naming the set's files by absolute path, leaves first, then your own entries. glibc maps every
LD_PRELOAD object before the program's own libraries, in order (elf/rtld.c ``dl_main``); from then on a
soname already in the process answers every request for it before any search (``_dl_map_object``), so
each ``libcudnn*`` the program or the shim's own ``dlopen`` asks for is the set's file, whatever
``LD_LIBRARY_PATH``, RPATH or ``ld.so.cache`` say (tests/test_run.py shows it with ``LD_DEBUG=libs`` and
the program's ``/proc/self/maps``). Nothing on disk changes. A file that is expected not to load here
(9.28's ``libcudnn_engines_runtime_compiled.so.9`` NEEDs ``libcuda.so.1``, which only the driver gives) is
left out: a preloaded file that cannot be mapped is skipped with a message, but one whose NEEDED is
missing stops the program before it starts (measured: exit 127, "error while loading shared
libraries: libcuda.so.1"). The shim's graph still asks for it when an engine is needed, and gets what
the search gives, as without cudnnload (measured with 9.0 first on LD_LIBRARY_PATH: 9.0's copy fails
to load, undefined symbol of 9.0's graph, and the call returns 1008 SUBLIBRARY_LOADING_FAILED, as it
does there anyway).

A user's LD_PRELOAD entry that maps another cuDNN (directly, or a library it NEEDs: the process model,
`resolve.process`) is refused, or left out with ``replace_preload``: no soname is ever mapped twice.
Every process the program starts inherits LD_PRELOAD, and maps the set too.

`execute` then replaces cudnnload with the program (``os.execve``): the program is the process cudnnload
was, so its exit status, the signals it gets and dies of, its standard streams and its terminal are
exactly what they would be without cudnnload, and nothing of cudnnload is left running. A program that
runs in secure-execution mode (set-user-ID, set-group-ID, file capabilities) is refused: glibc then drops
every LD_PRELOAD entry with a '/' (elf/rtld.c, ``__libc_enable_secure``), and the set would not be loaded.

A warm run (its plan remembered) imports `plans`, `cachedir` and the release records only: no search,
no ELF reading, no probe (bench/bench_preload.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from cudnnload.errors import LoadError, UsageError
from cudnnload.loading.plans import held, proven, refuse
from cudnnload.resolve.records import record
from cudnnload.resolve.versions import Release, VersionRange

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from cudnnload.resolve.discovery import Install


@record
class Pinned:
    """A program's environment with a proven cuDNN pinned, and what was done to get it."""

    environ: dict[str, str]  # yours, with LD_PRELOAD = the set's files, then your own entries
    release: Release
    folder: str
    files: tuple[str, ...]  # the set as preloaded: absolute paths, leaves first, shim last
    removed: tuple[str, ...]  # your LD_PRELOAD entries left out (``replace_preload``): they map another cuDNN
    notes: tuple[str, ...]  # what the choice says (`judge.choose.Choice.notes`)
    cached: bool  # the set's verdict was remembered: nothing was searched or probed


def run_environment(cudnn: str | os.PathLike[str] | Install | None = None, *, version: str | None = None,
                    for_: str | Sequence[str] = (), replace_preload: bool = False,
                    environ: Mapping[str, str] | None = None, use_cache: bool = True,
                    timeout: float = 60.0, command: Sequence[str] = ()) -> Pinned:
    """The environment to run a program in with cuDNN pinned (see the module docstring): ``cudnn`` as for
    `load()` (a folder, a file of one, an `Install`, or None for the best), ``version`` a range,
    ``for_`` the frameworks the program uses, ``command`` the program (a Python of another environment than
    cudnnload's: its wheels and frameworks are searched, `pythons.program_python`). LoadError names the cause when
    the set is incomplete or incoherent, or when your LD_PRELOAD maps another cuDNN (without ``replace_preload``)."""
    env = dict(os.environ if environ is None else environ)
    wanted = VersionRange.parse(version) if version else None
    frameworks = (for_,) if isinstance(for_, str) else tuple(for_)

    def vet(files: tuple[tuple[str, str], ...], release: Release | None, folder: str) -> dict[str, str]:
        return _without_other_cudnn(files, release, folder, env, replace_preload)

    plan, vetted, _, cached = proven(cudnn, wanted, env, vet, frameworks=frameworks, use_cache=use_cache,
                                     timeout=timeout, by_key=False, python=_program_python(command, env))
    files = tuple(os.path.abspath(path) for _, path in plan.files)
    odd = next((path for path in files if " " in path or ":" in path), None)
    if odd is not None:  # ld.so splits LD_PRELOAD on both (rtld.c handle_preload_list)
        raise LoadError("LD_PRELOAD cannot name a file whose path holds a space or a ':'", path=odd,
                        fix="use the install from a folder without them (a symlink to the folder will do)")
    kept, still = vetted.get("LD_PRELOAD"), _entries(vetted)
    removed = tuple(entry for entry in _entries(env) if entry not in still)
    program = {**vetted, "LD_PRELOAD": ":".join(files) + (f":{kept}" if kept else "")}
    return Pinned(program, plan.release, plan.folder, files, removed, plan.choice, cached)


def _program_python(command: Sequence[str], env: Mapping[str, str]) -> tuple[str, tuple[str, ...]] | None:
    """The program's interpreter and its sys.path, when it is a Python of another environment than this one's
    (`pythons.program_python`; its start-up observed once, as its command line starts it); None otherwise."""
    from cudnnload.resolve.pythons import program_python

    python = program_python(command, env)
    if python is None:
        return None
    from cudnnload.resolve.startup import StartupFailed, invocation, observe

    how = invocation(list(command))
    try:
        started = observe(how.interpreter, env, run_as="-c" if how.run_as == "-" else how.run_as, flags=how.flags)
    except (StartupFailed, OSError) as exc:
        raise LoadError(f"{python} does not answer, so what its program loads is unknown ({exc})", path=python,
                        fix="run it with a working Python, or give the cuDNN to load (--cudnn)") from None
    return python, tuple(started.sys_path)


def _without_other_cudnn(files: tuple[tuple[str, str], ...], release: Release | None, folder: str,
                         env: dict[str, str], replace: bool) -> dict[str, str]:
    """``env`` with the user's LD_PRELOAD entries that map another cuDNN left out (``replace``), or
    LoadError naming the first. The process model sees the set first, as the program will (an entry that
    NEEDs ``libcudnn.so.9`` then gets the set's shim: that is no other cuDNN)."""
    if not _entries(env):
        return env
    pinned = ":".join(path for _, path in files)
    findings = held(files, release, folder, {**env, "LD_PRELOAD": f"{pinned}:{env['LD_PRELOAD']}"})
    if not findings or not replace:
        refuse(findings)
        return env
    gone = {f.subject.entry for f in findings if f.subject.variable == "LD_PRELOAD"}
    kept = [entry for entry in _entries(env) if entry not in gone]
    vetted = {**env, "LD_PRELOAD": ":".join(kept)} if kept else {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    refuse(held(files, release, folder, {**vetted, "LD_PRELOAD": ":".join([pinned, *kept])}))
    return vetted


def _entries(env: Mapping[str, str]) -> tuple[str, ...]:
    """LD_PRELOAD's entries (`resolve.process.preload_entries`, imported only when there are any)."""
    if not env.get("LD_PRELOAD", "").strip(" :"):
        return ()
    from cudnnload.resolve.process import preload_entries

    return preload_entries(env)


def execute(command: Sequence[str], environ: Mapping[str, str], *, closed: Sequence[int] = (),
            pinning: bool = True) -> NoReturn:
    """Replace this process with ``command`` (found on ``environ``'s PATH, as execvp does) run in ``environ``
    (a `Pinned`'s, or the caller's own when nothing is pinned: ``pinning`` False), with the standard streams
    ``closed`` (the caller's ``2>&-``: cudnnload held them on /dev/null) closed again. UsageError, before
    anything runs, when it cannot be found or executed, or, pinning, would run in secure-execution mode."""
    if not command:
        raise UsageError("no program to run after --", fix="cudnnload run [--cudnn PATH] -- COMMAND [ARGS...]")
    path = _program(command[0], environ)
    from cudnnload.resolve.access import Access

    secure = Access().secure_mode(path) if pinning else None
    if secure is not None:
        raise UsageError(f"{secure}: it runs in secure-execution mode, where glibc ignores every LD_PRELOAD entry "
                         "with a '/', so the pinned cuDNN would not be loaded", path=path,
                         fix="pin cuDNN in a program of your own that it starts, or use cudnnload.load() inside it")
    cleared = _env_clearing(command) if pinning and os.path.basename(path) == "env" else None
    if cleared is not None:
        import shlex

        raise UsageError(f"env's {cleared} takes LD_PRELOAD away from the program it starts, so the pinned cuDNN "
                         "would not be loaded", path=path,
                         fix="put cudnnload after env's part: env [OPTIONS] [NAME=VALUE...] "
                             f"{shlex.quote(sys.executable)} -m cudnnload run [OPTIONS] -- PROGRAM [ARGS...]")
    away = _elsewhere(command, os.path.basename(path)) if pinning else None
    if away is not None:
        raise UsageError(f"it starts the program {away}, where this process's LD_PRELOAD does not reach, so the "
                         "pinned cuDNN would not be loaded", path=path,
                         fix="run cudnnload where the program runs: LAUNCHER ... -- cudnnload run [OPTIONS] -- "
                             "PROGRAM [ARGS...]")
    import signal

    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across execve: the program
    # gets the defaults back, as subprocess.Popen gives its children (restore_signals)
    for signo in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(signo, signal.SIG_DFL)
    held = {fd: os.dup(fd) for fd in closed}  # to say why, should the exec fail
    for fd in closed:
        os.close(fd)
    try:
        os.execve(path, list(command), dict(environ))
    except OSError as exc:
        for fd, copy in held.items():
            os.dup2(copy, fd)
        raise UsageError(f"cannot run it: {exc.strerror or exc}", path=path) from None


def _env_clearing(command: Sequence[str]) -> str | None:
    """The part of an ``env`` command line (GNU coreutils' and busybox's options) that takes LD_PRELOAD away from
    the program it runs: ``-i`` (``--ignore-environment``, a lone ``-``), ``-u LD_PRELOAD`` (``--unset``), or an
    ``LD_PRELOAD=...`` of its own; None when there is none (the part before the program only)."""
    words = list(command[1:])
    while words:
        word = words.pop(0)
        if word in ("-", "--ignore-environment"):
            return word
        if word in ("--unset", "--chdir", "--split-string"):
            word = f"{word}={words.pop(0) if words else ''}"
        if word.startswith("--"):
            if word == "--":
                break
            if word == "--unset=LD_PRELOAD":
                return word
            continue
        if word.startswith("-"):
            for at, flag in enumerate(word[1:], 1):
                if flag == "i":
                    return word
                if flag in "uCS":  # the rest of the word, else the next, is its argument
                    argument = word[at + 1:] or (words.pop(0) if words else "")
                    if flag == "u" and argument == "LD_PRELOAD":
                        return f"{word} LD_PRELOAD" if word[at + 1:] == "" else word
                    break
            continue
        if word.partition("=")[0] == "LD_PRELOAD":
            return word
        if "=" not in word:
            break
    return None


# launchers whose program is started by another process than this one's children, in an environment of its own:
# (the verb after which, where any, "" for every use; the options that keep it here, or pass LD_PRELOAD on)
_ELSEWHERE = {
    "ssh": ("", "on another machine", ()),
    "docker": ("run exec", "in a container", ()), "podman": ("run exec", "in a container", ()),
    "kubectl": ("run exec", "in a pod", ()),
    # systemd-run's service gets the manager's environment; --scope runs it from here; -E passes a variable on
    "systemd-run": ("", "as a service of the service manager", ("--scope", "-E", "--setenv")),
}


def _elsewhere(command: Sequence[str], name: str) -> str | None:
    """Where a launcher in ``command`` (named ``name``) starts the program, when that is not this process's child
    in its environment (`_ELSEWHERE`); None for every other program."""
    verbs, where, kept = _ELSEWHERE.get(name, ("-", "", ()))
    if not where:
        return None
    words = list(command[1:])
    if any(word == option or word.startswith(f"{option}=") or (option == "-E" and word.startswith("-E"))
           for word in words for option in kept):
        return None
    # (its verb among its first words: ``docker run``, ``docker container run``)
    return where if not verbs or set(verbs.split()) & set([w for w in words if not w.startswith("-")][:2]) else None


def _program(name: str, env: Mapping[str, str]) -> str:
    """The file ``name`` runs: itself when it has a '/', else the first executable file of that name in
    the PATH's folders (execvp's search; its default PATH when there is none)."""
    if "/" in name:
        if not os.path.exists(name):
            raise UsageError("no such program", path=name)
        return name
    for folder in os.get_exec_path(dict(env)):
        path = os.path.join(folder or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise UsageError("command not found on PATH", path=name)
