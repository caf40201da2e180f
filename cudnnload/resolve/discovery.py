"""Every cuDNN on the machine as facts: the files, grouped into installs (one folder, one generation), what
each file is, which file the shim's own ``dlopen`` would get for each sub-library, and what RECORD says.

Takes folders from ``sources``, facts about each file from ``elf`` (through the on-disk memo) and
search answers from ``linker``; adds the cuDNN layout from ``catalog``. Nothing here says whether
anything is wrong: `cudnnload.judge` turns these facts into findings (`judge.judged.Judged`: an install with
its verdict).
"""

from __future__ import annotations

import errno
import mmap
import os
import platform
import re
import stat
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from cudnnload.cachedir import stamp
from cudnnload.codes import Code
from cudnnload.errors import ElfError
from cudnnload.files import NotRegularFile, open_regular, path_problem, read_regular, record_digest
from cudnnload.resolve import linker
from cudnnload.resolve.catalog import (
    GENERATIONS,
    Generation,
    OpensAtLoad,
    Release,
    SubLibrary,
    bundled_copy,
    classify_bundled,
    cudnn_pin,
    distribution_cuda,
    generation,
    nvrtc_soname,
    opens_entry,
    parse_release,
)
from cudnnload.resolve.consumers import bundled_folders, site_pins
from cudnnload.resolve.elf import ElfInfo, max_version, read_dynamic_symbols
from cudnnload.resolve.elfcache import ElfCache, linker_defaults, open_cache
from cudnnload.resolve.ldcache import LdCache
from cudnnload.resolve.process import (
    PRELOAD_FILE,
    Preload,
    loaded_names,
    preload_entries,
    preload_file_entries,
    preload_file_lines,
    preloaded,
    read_preload_file,
    without_lines,
)
from cudnnload.resolve.pythons import along_of, interpreter_of_site, seen_elsewhere, shell_site
from cudnnload.resolve.sources import (
    Distribution,
    Origin,
    SearchContext,
    cudnn_distributions,
    search,
    wheel_lib_folders,
)
from cudnnload.resolve.startup import Source

# Machine this Python runs on, as pyelftools names e_machine.
HOST_MACHINES = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64", "ppc64le": "EM_PPC64"}


@dataclass(frozen=True)
class Candidate:
    """One cuDNN file found on disk, and what it is."""

    path: str  # as found (symlinks not resolved)
    real_path: str | None  # None for a broken symlink or a loop
    library: str | None  # catalog key: "shim", "ops", "cnn_infer", ...
    elf: ElfInfo | None  # None when it cannot be read as ELF: then ``problem`` says why
    problem: Code | None = None  # MISSING_FILE, EMPTY_FILE, TRUNCATED, NOT_A_REGULAR_FILE, ...
    reason: str | None = None  # the reader's words for the problem
    size: int | None = None  # bytes on disk (links followed), for RECORD
    digest: str | None = None  # its sha256 as RECORD writes it, when asked for (`--verify`)


@dataclass(frozen=True)
class Step:
    """What the run-time linker would give one requested library, and why."""

    library: str  # catalog key, or the dependency's soname
    requested_by: str | None  # path of the object that asks
    names_tried: tuple[str, ...]
    path: str | None
    rule: str  # linker rule that chose it: "rpath", "runpath", "ld-cache", ... or "not-found"
    inside_install: bool
    release: Release | None
    trail: tuple[str, ...] = ()
    outcome: str | None = None  # what opening the file does: "found", "already-loaded", or why it fails
    error: str | None = None  # dlerror's text when the file was picked but cannot load (or kills the process)
    entry: str | None = None  # the entry, as written, of ``variable`` that gave it
    # "LD_LIBRARY_PATH" (found through it), or where the preload that put it in the process is written ("LD_PRELOAD"
    # or "/etc/ld.so.preload": already loaded)
    variable: str | None = None
    # What the opener gets from its later names when its dlopen of this file fails after the linker picked it
    # (a NEEDED missing, an undefined symbol): cuDNN 9's shim and graph go on to the next name, and the bare
    # ``X.so`` a -dev package or a CUDA image puts in ld.so.cache answers (measured on the H200 machine: the
    # system's libcudnn_cnn.so after the wheel's cnn failed to bind). None: no other file answers them.
    fallback: Step | None = None
    # version nodes the requester needs from this library that the file found does not define: the load fails
    # (dl-version.c "version `X' not found (required by Y)"); a provider without any version definitions has none
    lacks: tuple[str, ...] = ()
    undecided: str | None = None  # why the linker model cannot decide this lookup (a glibc it does not know)
    soname: str | None = None  # the DT_SONAME of the file found (a versioned name may lead to another library's)
    # a dependency not found: a file of that name in a pip wheel's lib folder of a site this environment names (its
    # LD_LIBRARY_PATH's wheel folders, the install's own site), which the search does not reach
    elsewhere: str | None = None
    real_path: str | None = None  # ``path`` with its links followed: the file the process maps


@dataclass(frozen=True)
class Record:
    """What a pip distribution's RECORD says of one of the install's files, beside what is on disk."""

    path: str
    size: int | None  # RECORD's size
    on_disk: int | None  # None: missing
    digest_differs: bool | None = None  # with ``verify``: the sha256 differs; None: not checked


@dataclass(frozen=True)
class Install:
    """One folder holding one cuDNN generation, as facts (`judge.installs.Judged` adds the verdict)."""

    folder: str
    major: int
    release: Release | None
    release_source: str | None
    found_via: str
    distribution: str | None  # "nvidia-cudnn-cu12 9.28.0.42"
    cuda_major: int | None  # the CUDA the build targets (cu12 -> 12), where known
    files: tuple[Candidate, ...]
    plan: tuple[Step, ...]  # the shim's (and graph's) run-time dlopen of each sub-library
    dependencies: tuple[Step, ...]  # libz, libcuda, cuBLASLt, NVRTC
    records: tuple[Record, ...] = ()  # RECORD against the disk, for the files of its distribution here
    site: str | None = None  # the site-packages folder of its distribution (pip's --target for a reinstall)
    # what the application's own dlopen of the shim (as opened) does: the linker's outcome and error
    opening: tuple[str, str | None] | None = None
    # who installs into ``site`` with pip, and how (`pythons.interpreter_of_site`): its environment's interpreter,
    # and the options that choose that folder (--user, --target); never cudnnload's own interpreter by default
    pip_env: tuple[str | None, tuple[str, ...]] = (None, ())
    # for a ``site`` pip installs into with --target (no interpreter of its own): the distributions a pip install
    # there must install along (`pythons.along_in_target`); None where its nvidia folder holds what none lists
    along: tuple[str, ...] | None = ()
    # files of the folder no RECORD lists, named as the loaders of its distribution's release try first
    # (``libcudnn_ops.so.9.24.0``, ``.so.9.24``: the shim's and graph's dlopen names, cudnn-facts): they shadow the
    # distribution's own files whatever is reinstalled
    shadowing: tuple[str, ...] = ()
    # a pip wheel's folder no installed distribution owns (its wheel uninstalled, another's files copied in), or
    # one whose distribution is of another major than its shim (a cuDNN 9 shim copied into an 8.5 wheel's folder):
    # ``site`` and ``pip_env`` are then that folder's site's, and this is the cuDNN wheel the distributions
    # installed there require (`consumers.site_pins`; of the shim's major where a distribution owns the folder), when
    # they require one
    wanted: str | None = None
    # NVIDIA's wheels the interpreter of ``site`` counts as installed from its other folders (its user site,
    # PYTHONPATH; `pythons.seen_elsewhere`): pip asked to install one of them into ``site`` puts nothing there
    elsewhere: tuple[str, ...] = ()
    # per sub-library, in load order, what the initializers of its first dlopen dlopen (`opened_while_loading`)
    opened_at_load: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # a folder no distribution owns whose shim is a link to a pip wheel's file (``ln -s .../nvidia/cudnn/lib/
    # libcudnn.so.9 links/``): the folder that file is in, as its distribution's install (its pip facts only, no
    # files or plan): the link's target is put back by putting that wheel back
    shim_owner: Install | None = None
    # a shim a wheel bundles alone (auditwheel's ``<package>.libs/libcudnn-<hash>.so.N``): the interpreter of the
    # site-packages that folder is in, and the CUDA major the wheel's own libraries beside it were built for (the
    # cuBLAS they name: `built_for_cuda`), each None where not known (`_bundler`)
    bundler: tuple[str | None, int | None] | None = None

    def file(self, key: str) -> Candidate | None:
        return next((c for c in self.files if c.library == key), None)


@dataclass(frozen=True)
class Host:
    machine: str
    glibc: tuple[int, ...] | None
    libstdcxx: str | None  # path of the libstdc++.so.6 that would load
    glibcxx: tuple[int, ...] | None
    cxxabi: tuple[int, ...] | None
    libstdcxx_entry: str | None = None  # the LD_LIBRARY_PATH entry, as written, that gave that libstdc++

    def foreign(self, info: ElfInfo) -> bool:
        """Whether ``info`` is an ELF of another class or machine than this host's (glibc's open_verify passes over
        it in a search and refuses it by path)."""
        return info.elf_class != 64 or info.machine != self.machine

    def lacking(self, info: ElfInfo) -> tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]:
        """Each of GLIBC_, GLIBCXX_ and CXXABI_ whose newest version the file needs is newer than this machine's:
        (prefix, needed, the host's); dlopen fails on the first ("version `GLIBCXX_3.4.32' not found")."""
        found = []
        for prefix, have in (("GLIBC_", self.glibc), ("GLIBCXX_", self.glibcxx), ("CXXABI_", self.cxxabi)):
            need = info.max_needed(prefix)
            if need and have and need > have:
                found.append((prefix, need, have))
        return tuple(found)


@dataclass(frozen=True)
class Given:
    """A path given on the command line that cannot be searched or read as one (its `Code` and why)."""

    path: str
    code: Code
    reason: str


@dataclass(frozen=True)
class Inventory:
    """What was found: the installs, the distributions that claim files, and what could not be searched
    (`judge.judged.JudgedInventory` adds the verdicts)."""

    host: Host
    installs: tuple[Install, ...]
    distributions: tuple[Distribution, ...] = field(default=())
    given: tuple[Given, ...] = ()  # the given paths that are no file or folder to read
    unknown: tuple[str, ...] = ()  # libcudnn* files of no known generation


@dataclass(frozen=True)
class Context:
    """The process a load would happen in: its environment, what ld.so would see there (LD_LIBRARY_PATH,
    ld.so.cache, the executable, what is already mapped), the host's glibc and libstdc++, the ELF memo."""

    environ: Mapping[str, str]
    cache: ElfCache
    linker: linker.LinkerEnv
    host: Host
    verify: bool = False  # compute each RECORD-listed file's sha256 (remembered under its stamp)
    # what the process maps before the program asks for anything (LD_PRELOAD and what it NEEDs, a running
    # process's files), in glibc's order (`process.preloaded`)
    preloads: tuple[Preload, ...] = ()
    # the site-packages of the Python environment the shell has active, and who installs into it (`pythons.shell_site`)
    shell_site: str | None = None
    shell_pip: tuple[str | None, tuple[str, ...]] = (None, ())

    def preload_entry(self, path: str) -> str | None:
        """The preload entry that put the file at ``path`` in the process, if one did."""
        return next((p.entry for p in self.preloads if p.path == path and p.entry is not None), None)

    def preload_source(self, path: str) -> str:
        """Where the preload that put the file at ``path`` in the process is written: "LD_PRELOAD" or the preload
        file (rule ld-so-preload)."""
        return next((p.source for p in self.preloads if p.path == path and p.entry is not None), "LD_PRELOAD")

    def elf(self, path: str) -> ElfInfo | None:
        """The file at ``path`` read as ELF (links followed), or None when it cannot be."""
        try:
            return self.cache.inspect(os.path.realpath(path))
        except (OSError, ElfError):
            return None

    def passed_over(self, path: str) -> str | None:
        """Why the loader would not map the file at ``path`` on this host, in words: one this user cannot read, not
        an ELF it can read, or one of another class or machine (glibc's ``open_verify`` passes over it in a search
        and refuses it by path); None where it is no such file, or one it maps."""
        if not os.path.isfile(path):
            return None
        try:
            info = self.cache.inspect(os.path.realpath(path))
        except ElfError as exc:
            return f"not a library the loader can map ({exc.reason})"
        except OSError as exc:
            return f"not readable here ({exc.strerror or exc})"
        if self.host.foreign(info):
            return f"ELF{info.elf_class} for {info.machine}, not this machine's {self.host.machine}"
        return None

    def unresolved(self, path: str, provider: str, version: str, *, at_start: bool = False
                   ) -> tuple[str, ...] | None:
        """What ``path`` needs from ``version`` that ``provider`` lacks (the first is what dlopen's error
        names when glibc meets it first); None when either file cannot be read. ``at_start``: only what a
        program's lazily bound start resolves (`elf.DynamicSymbols.functions`)."""
        # "at-load": what a start binds, by the relocations that name it (`elf.DynamicSymbols.functions`)
        key = ("unresolved-at-load" if at_start else "unresolved", *_stamped(path), *_stamped(provider), version)
        known = self.cache.recall(key, "tuple[str, ...]")
        if isinstance(known, tuple):
            return known
        try:
            found = read_dynamic_symbols(path).unresolved(version, read_dynamic_symbols(provider), at_start=at_start)
        except (OSError, ElfError):
            return None
        self.cache.remember(key, tuple(found))
        return tuple(found)

    def unresolved_at_start(self, path: str, provider: str, version: str) -> tuple[str, ...] | None:
        return self.unresolved(path, provider, version, at_start=True)


def _stamped(path: str) -> tuple[str, int, int, int, int, int]:
    """What a fact of the file at ``path`` (a digest, the symbols it lacks) is remembered under: its real path
    and `cachedir.stamp`, the change time included (bytes written in place with the mtime put back)."""
    try:
        return (os.path.realpath(path), *stamp(path))
    except OSError:
        return path, -1, -1, -1, -1, -1


def context(environ: Mapping[str, str] | None = None, *, use_cache: bool = True,
            executable: linker.Requester | None = None, loaded: Mapping[str, str] | None = None,
            cache: ElfCache | None = None, verify: bool = False, mapped: Sequence[str] = (),
            started: Mapping[str, Source] | None = None, defaults: linker.LinkerDefaults | None = None,
            ld_cache: LdCache | None = None, glibc: tuple[int, ...] | None = None,
            gone: frozenset[str] = frozenset(), unstarted: frozenset[tuple[str, str]] = frozenset()) -> Context:
    """A process started now with ``environ``; ``executable`` (default: this Python) is its main program.
    What it maps first is modelled (`process.preloaded`): ``mapped`` (a running process's files), then
    LD_PRELOAD and what it NEEDs; ``loaded`` adds names the program itself loaded since (name -> path).
    ``cache``: an ELF memo already open (another context's), instead of reading it again. ``started``: what a
    Python interpreter's start-up maps (path -> the start-up file that did, `startup.observe`), mapped first.
    ``defaults``, ``ld_cache`` and ``glibc``: another system's linker, cache and C library than this machine's (an
    image's: `resolve.rootview`), given instead of asked of the real ld.so. ``gone``: files a change not yet made
    takes away (a distribution uninstalled): absent from what this process finds. ``unstarted``: lines of start-up
    files (file, line text) a change not yet made takes out; the preload file's are not read."""
    env_vars = os.environ.copy() if environ is None else dict(environ)  # (`recall` notes what is read of it)
    cache = cache or (open_cache(env_vars) if use_cache else ElfCache(None))
    link_env = linker.LinkerEnv.from_environ(env_vars, loaded=loaded, executable=executable or python_requester(cache),
                                             defaults=defaults or linker_defaults(cache, env_vars))
    link_env = replace(link_env, ld_cache=ld_cache) if ld_cache is not None else link_env
    link_env = replace(link_env, gone=gone) if gone else link_env
    # another system's C library decides which of the loader's rules hold (`rules`), and whether the model knows it
    link_env = replace(link_env, glibc=(glibc[0], glibc[1])) if glibc is not None and len(glibc) >= 2 else link_env
    site = shell_site(env_vars)
    facts = Context(env_vars, cache, link_env, host_facts(link_env, cache, glibc), verify, shell_site=site,
                    shell_pip=interpreter_of_site(site) if site else (None, ()))
    return _mapping_first(facts, mapped, loaded, started, unstarted)


def without_preload(environ: Mapping[str, str], ctx: Context) -> Context:
    """The process of ``environ`` started without LD_PRELOAD, on ``ctx``'s ELF memo, linker, cache and C library
    (what a framework's own search gives, the preload left out)."""
    return context({k: v for k, v in environ.items() if k != "LD_PRELOAD"}, cache=ctx.cache,
                   defaults=ctx.linker.defaults, ld_cache=ctx.linker.ld_cache, glibc=ctx.host.glibc)


def _mapping_first(facts: Context, mapped: Sequence[str], loaded: Mapping[str, str] | None,
                   started: Mapping[str, Source] | None,
                   unstarted: frozenset[tuple[str, str]] = frozenset()) -> Context:
    """``facts`` (a process before it maps anything) with what it maps first: ``started`` (what a Python start-up
    maps), ``mapped``, then LD_PRELOAD and the preload file, and what they NEED; ``loaded`` added after."""
    mapped = [*(started or {}), *mapped]
    # /etc/ld.so.preload: almost never there (one access() to know)
    text = without_lines(read_preload_file(), {line for file, line in unstarted if file == PRELOAD_FILE})
    file_entries = preload_file_entries(text)
    preloads = preloaded(facts.environ, facts.linker, facts.elf, mapped, facts.unresolved_at_start, file_entries,
                         started, preload_file_lines(text)) if mapped or file_entries or preload_entries(
                             facts.environ) else ()
    if not preloads:
        return facts
    names = {**loaded_names(preloads), **(loaded or {})}
    return replace(facts, linker=replace(facts.linker, loaded=names), preloads=preloads)


def started_context(ctx: Context, started: Mapping[str, Source]) -> Context:
    """``ctx``, a process started afresh (no files mapped, no names loaded but its preloads'), with what a Python
    interpreter's start-up maps first (``started``: path -> the start-up file that did, `startup.observe`): the
    same linker, host and ELF memo, its preloads modelled again after those files."""
    if not started:
        return ctx
    before = replace(ctx, linker=replace(ctx.linker, loaded={}), preloads=())
    return _mapping_first(before, (), None, started)


# --- host -----------------------------------------------------------------

def host_facts(env: linker.LinkerEnv, cache: ElfCache, glibc: tuple[int, ...] | None = None) -> Host:
    """The C library (``glibc``: another system's, else this process's) and the libstdc++ ``env`` would load, as
    a DT_NEEDED entry asks for it (and the LD_LIBRARY_PATH entry that puts it first, when one does)."""
    version = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") and glibc is None else None
    glibc = glibc or (max_version([version.replace(" ", "_")]) if version else None)
    found = linker.resolve("libstdc++.so.6", None, env, how="needed")
    stdcxx = found.path
    defs: tuple[str, ...] = ()
    if stdcxx:
        try:
            defs = cache.inspect(stdcxx).version_defs
        except (OSError, ElfError):
            defs = ()
    return Host(
        machine=HOST_MACHINES.get(platform.machine(), platform.machine()),
        glibc=glibc,
        libstdcxx=stdcxx,
        glibcxx=max_version(d for d in defs if d.startswith("GLIBCXX_")),
        cxxabi=max_version(d for d in defs if d.startswith("CXXABI_")),
        libstdcxx_entry=search_entry(stdcxx, found.rule, env) if stdcxx else None,
    )


# --- one file ---------------------------------------------------------------

def inspect_file(path: str, cache: ElfCache) -> Candidate:
    """One file's facts; a file that cannot be read says why (``problem``), never raises."""
    lib = classify_bundled(os.path.basename(path))
    key = lib.key if lib else None
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Candidate(path, None, key, None, Code.SYMLINK_LOOP, "symbolic link loop")
        target = os.readlink(path) if os.path.islink(path) else None
        if target:
            return Candidate(path, None, key, None, Code.BROKEN_SYMLINK, f"symbolic link to {target}, which does "
                             "not exist")
        return Candidate(path, None, key, None, Code.MISSING_FILE, exc.strerror or "does not exist")
    try:
        size = os.stat(real).st_size
    except OSError:
        size = None
    try:
        info = cache.inspect(real)
    except ElfError as exc:
        reason = exc.reason + (f" ({real})" if exc.code is Code.NOT_A_REGULAR_FILE and real != path else "")
        return Candidate(path, real, key, None, exc.code, reason, size)
    except OSError as exc:
        return Candidate(path, real, key, None, Code.UNREADABLE, exc.strerror or str(exc), size)
    if key is None and info.soname and (named := classify_bundled(info.soname)) is not None:
        key = named.key  # a cuDNN file under another name (a shim preloaded as libmyshim.so): its SONAME says
    return Candidate(path, real, key, info, size=size)


def classify_file(path: str, cache: ElfCache) -> SubLibrary | None:
    """The catalog's library a file is: by its name, else by the SONAME it carries (a cuDNN shim copied under
    another name, put in LD_PRELOAD: its contents say what it is)."""
    lib = classify_bundled(os.path.basename(path))
    if lib is not None:
        return lib
    try:
        soname = cache.inspect(os.path.realpath(path)).soname
    except (OSError, ElfError):
        return None
    return classify_bundled(soname) if soname else None


# --- one folder ---------------------------------------------------------------

_FULL_VERSION = re.compile(r"\.so\.(\d+\.\d+\.\d+)$")


def scan(folder: str) -> dict[int, list[str]]:
    """cuDNN files in one folder, by generation major. Unknown libcudnn names are kept under 0."""
    found: dict[int, list[str]] = {}
    for name, path, is_link in _entries(folder):
        if not name.startswith("libcudnn") or ".so" not in name:
            continue
        lib = classify_bundled(name)
        if lib is None and is_link:
            # libcudnn_ops.so -> libcudnn_ops.so.9: a development link (apt's libcudnn9-dev): a
            # name for a file this scan sees anyway, not a library of its own
            try:
                target = os.path.normpath(os.path.join(folder, os.readlink(path)))
            except OSError:
                target = ""
            if os.path.dirname(target) == os.path.normpath(folder) and classify_bundled(os.path.basename(target)):
                continue
        found.setdefault(lib.major if lib else 0, []).append(path)
    return found


def _entries(folder: str) -> list[tuple[str, str, bool]]:
    """(name, path, is a symbolic link) of what is in ``folder``, by name. A folder that can be searched but
    not listed (mode 0311) is asked for each name cuDNN's loaders open, one ``lstat`` each, as glibc
    finds a file there: by ``open()`` of the exact name, never by listing (dl-load.c open_path)."""
    try:
        return sorted(((e.name, e.path, e.is_symlink()) for e in os.scandir(folder)), key=lambda e: e[0])
    except PermissionError:
        if not os.access(folder, os.X_OK):
            return []
    except OSError:
        return []
    named = []
    for name in dict.fromkeys(n for gen in GENERATIONS.values() for lib in gen.libraries
                              for n in (lib.soname, f"{lib.stem}.so")):
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        named.append((name, path, stat.S_ISLNK(info.st_mode)))
    return sorted(named)


def _pick(paths: Sequence[str], lib: SubLibrary) -> str:
    """Of several names for one library (X.so.9 -> X.so.9.28.0), the one the linker asks for."""
    by_name = {os.path.basename(p): p for p in paths}
    return by_name.get(lib.soname) or max(paths, key=len)


def _release_of(files: Sequence[Candidate], folder: str, major: int, dist: Distribution | None,
                cache: ElfCache) -> tuple[Release | None, str | None]:
    """The install's release, from the most to the least direct evidence: its wheel's metadata,
    an exported version constant, a fully versioned file name, then a ``cudnn_version.h`` that
    belongs to the folder (``../include``; the system headers only for a system library folder)."""
    if dist is not None:
        try:
            return parse_release(dist.version), f"{dist.name} {dist.version} metadata"
        except ValueError:
            pass
    # a library of another major under this major's name (``ln -s libcudnn_ops.so.9 libcudnn_ops_infer.so.8``) says
    # nothing of the release the shim is: it is a stray, however many of them there are
    constants = [cand for cand in files if cand.elf and cand.elf.release and cand.elf.release.major == major]
    if constants:
        return _most_named(constants)
    for cand in files:  # libcudnn.so.7 -> libcudnn.so.7.6.5: the link's target names the release
        for name in (cand.path, cand.real_path or ""):
            match = _FULL_VERSION.search(name)
            if match:
                return parse_release(match.group(1)), f"file name {os.path.basename(name)}"
    for include in _header_folders(folder):
        header = _header_release(include)
        if header and header.major == major:
            return header, f"{include}/cudnn_version.h"
    linked = next((c for c in files if c.library == "shim" and c.real_path
                   and os.path.dirname(c.real_path) != os.path.realpath(folder)), None)
    if linked is not None and linked.real_path:
        release = release_near(linked.real_path, cache)
        if release is not None and release.major == major:
            return release, f"the folder {os.path.dirname(linked.real_path)} the shim links to"
    others = [cand for cand in files if cand.elf and cand.elf.release]
    return _most_named(others) if others else (None, None)


def _most_named(constants: Sequence[Candidate]) -> tuple[Release, str]:
    """The release most of the folder's version constants name: one stray sub-library of another release (graph
    included) is then the mixed one, not the rest of the folder."""
    counts = Counter(cand.elf.release for cand in constants if cand.elf and cand.elf.release)
    best = max(counts, key=lambda release: counts[release])
    cand = next(c for c in constants if c.elf and c.elf.release == best)
    return best, f"{cand.elf.release_symbol if cand.elf else ''} in {os.path.basename(cand.path)}"


# The system's library folders (the linker's default folders on the distributions cudnnload meets)
SYSTEM_LIBRARY_FOLDERS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                          "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")


def _header_folders(folder: str) -> tuple[str, ...]:
    own = os.path.normpath(os.path.join(folder, "..", "include"))
    if os.path.normpath(folder) in SYSTEM_LIBRARY_FOLDERS:  # apt/dnf put the headers here
        return own, "/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"
    return (own,)


def _header_release(include: str) -> Release | None:
    for name in ("cudnn_version.h", "cudnn_version_v9.h", "cudnn_version_v8.h"):
        try:  # a header of a few KB
            text = read_regular(os.path.join(include, name), 1 << 20).decode("utf-8", "replace")
        except (OSError, NotRegularFile):
            continue
        parts = [re.search(rf"#define CUDNN_{part}\s+(\d+)", text) for part in ("MAJOR", "MINOR", "PATCHLEVEL")]
        if all(parts):
            return Release(*(int(p.group(1)) for p in parts if p))
    return None


def _cuda_major(dist: Distribution | None, files: Sequence[Candidate]) -> int | None:
    """The CUDA major the files were built for: what they say (the CUDA runtime graph, ops_infer or a 7.x shim
    was built with; files of another distribution may have replaced the ones RECORD names), else the
    distribution's name (``-cu12``), else a RUNPATH into the CUDA 13 wheels' folder."""
    for cand in files:
        if cand.elf and cand.elf.cudart_version:
            return cand.elf.cudart_version // 1000
    if dist is not None and (cuda := distribution_cuda(dist.name)) is not None:
        return cuda
    for cand in files:
        if cand.elf and any(p.endswith("/cu13/lib") for p in cand.elf.runpath):
            return 13
    return None


def _cuda_of_graph(steps: Sequence[Step], ctx: Context) -> int | None:
    """The CUDA major of the graph the plan loads from elsewhere (a folder that holds only a shim, or a link to
    one: its sub-libraries and their cuBLASLt come from where the search finds them)."""
    graph = next((step.path for step in steps if step.library == "graph" and step.path and step.error is None), None)
    info = ctx.elf(graph) if graph else None
    return info.cudart_version // 1000 if info is not None and info.cudart_version else None


def distribution_for(folder: str, dists: Sequence[Distribution], files: Sequence[Candidate] | None = None
                      ) -> Distribution | None:
    """The distribution whose files ``folder`` holds. Two may claim it (cu12 then cu13 installed into one
    environment): the one whose RECORD sizes the files on disk match is the one installed last, whose files
    they are. ``files``: the folder's files as found; None: their sizes read from the disk here."""
    real = os.path.realpath(folder)
    claiming = [d for d in dists if any(os.path.realpath(f) == real for f in d.lib_folders)]
    if len(claiming) < 2:
        return claiming[0] if claiming else None
    sizes = {os.path.realpath(c.path): c.size for c in files} if files is not None else \
        {os.path.realpath(p): _size_on_disk(p) for d in claiming for p in d.sizes}
    return max(claiming, key=lambda d: sum(sizes.get(os.path.realpath(p)) == size for p, size in d.sizes.items()))


def _size_on_disk(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def requester(path: str, cache: ElfCache) -> linker.Requester | None:
    """The object opened as ``path`` (symlinks kept: they decide $ORIGIN), or None when unreadable."""
    try:
        info = cache.inspect(os.path.realpath(path))
    except (OSError, ElfError):
        return None
    return linker.Requester.from_elf(path, info)


def python_requester(cache: ElfCache, executable: str | None = None) -> linker.Requester | None:
    """This Python (or another interpreter) as the executable of the process that loads cuDNN (its RPATH
    counts, e.g. conda's). An executable's $ORIGIN is its resolved folder (/proc/self/exe), unlike a library's.
    """
    program = executable or sys.executable
    found = requester(program, cache)
    return found and replace(found, origin=os.path.dirname(os.path.realpath(program)), program=True)


def chain(*links: linker.Requester | None) -> linker.Chain:
    return linker.Chain(tuple(link for link in links if link is not None))


# --- one install --------------------------------------------------------------

def build_install(folder: str, major: int, paths: Sequence[str], found_via: str, ctx: Context,
                  dists: Sequence[Distribution] = ()) -> Install:
    """The facts of one install: its files (``paths``, one per library), release, the shim's plan and the
    dependencies, and RECORD against the disk. A shim under another major's name (``ln -s libcudnn.so.9
    libcudnn.so.8``) is an install of the major its contents say: it opens that generation's libraries."""
    renamed = _renamed_shim(paths, major, ctx.cache)
    if renamed is not None:
        shim_path, major = renamed
        paths = [p for p in scan(folder).get(major, []) if _key(p) != "shim"] + [shim_path]
    gen = generation(major)
    by_key: dict[str, list[str]] = {}
    for path in paths:
        lib = classify_file(path, ctx.cache)
        if lib is not None:
            by_key.setdefault(lib.key, []).append(path)
    files = tuple(inspect_file(_pick(by_key[lib.key], lib), ctx.cache) for lib in gen.libraries if lib.key in by_key)
    dist = distribution_for(folder, dists, files)
    release, source = _release_of(files, folder, major, dist, ctx.cache)
    shim = next((c for c in files if c.library == "shim"), None)
    # ext and tensor_ir are absent from older releases and then not asked for: only found ones count
    foreign = shim is not None and shim.elf is not None and not_cudnn(shim.elf)  # it opens none of cuDNN's libraries
    planned = () if gen.major == 7 or foreign else plan(gen, shim.path if shim else None, folder, release, ctx)
    graph = next((step for lib, step in planned if lib.key == "graph"), None)
    steps = tuple(step for lib, step in planned if step.path or lib.required or asked_for(lib, shim, graph))
    cuda = _cuda_major(dist, files) or _cuda_of_graph(steps, ctx)
    opening = linker.opening(shim.path, ctx.linker) if shim is not None and shim.real_path else None
    deps = dependencies(gen, files, steps, cuda, ctx)
    owned = _owner(folder, shim, dists) if dist is None else None
    # a shim linked into a wheel's folder from one no distribution owns: the files of that wheel its plan maps are
    # judged against the wheel's RECORD (fix differential 3-8607: 9.28's tensor_ir in 9.24's wheel, mapped through
    # the link, and cudnnBackendFinalize returned 1002)
    records = _records(folder, files, dist, ctx) if owned is None else _records(
        owned[1], files, owned[0], ctx, only={os.path.realpath(s.path) for s in steps if s.path})
    return replace(_pip_install(folder, major, dist, release, cuda, ctx.environ), release_source=source,
                   found_via=found_via, files=files, plan=steps, dependencies=deps, records=records, opening=opening,
                   shim_owner=_shim_owner(owned, major, ctx) if owned is not None else None,
                   opened_at_load=opened_while_loading(gen, steps, deps, ctx) if gen.major == 8 else (),
                   bundler=_bundler(folder, ctx) if shim is not None and bundled_copy(os.path.basename(shim.path))
                   else None)


def _bundler(folder: str, ctx: Context) -> tuple[str | None, int | None]:
    """For a shim a wheel bundles alone in ``folder`` (its ``<package>.libs``): the interpreter of the site-packages
    that folder is in (None where it is in none, or that is no environment's), and the CUDA major the wheel's other
    libraries there name a cuBLAS of (CTranslate2's ``libctranslate2-<hash>.so`` names ``libcublas.so.12``)."""
    python = interpreter_of_site(os.path.dirname(folder))[0]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    cuda = next((major for name in names if ".so" in name and classify_bundled(name) is None
                 for major in (built_for_cuda(os.path.join(folder, name), ctx.cache),) if major), None)
    return (python if python and os.path.isabs(python) else None), cuda


def _pip_install(folder: str, major: int, dist: Distribution | None, release: Release | None,
                 cuda: int | None, environ: Mapping[str, str]) -> Install:
    """What pip knows of ``folder``: its distribution, the site it is in and who installs there, what must be
    installed along, what that pip counts as installed from its other folders (``environ``: the program's, whose
    HOME and PYTHONPATH say which), the files that would shadow it once put back (no files or plan yet)."""
    site = dist.site if dist else cudnn_wheel_site(folder)
    head = dist.version.split(".")[0] if dist else ""
    owned = int(head) if head.isdigit() else None  # the major of the folder's distribution
    wanted = None if site is None or owned == major else next(
        (pin.requirement for pin in site_pins(site)
         if dist is None or (read := cudnn_pin(pin.requirement)) is not None and read.major == major), None)
    pip_env = interpreter_of_site(site) if site else (None, ())
    return Install(folder, major, release, None, "", f"{dist.name} {dist.version}" if dist else None, cuda, (), (),
                   (), site=site, pip_env=pip_env, along=along_of(site, pip_env) if site else (),
                   shadowing=_shadowing(folder, dist, release), wanted=wanted,
                   elsewhere=tuple(sorted(name for name in seen_elsewhere(site, environ) if name.startswith("nvidia-")))
                   if site and pip_env[0] else ())


def _owner(folder: str, shim: Candidate | None, dists: Sequence[Distribution]) -> tuple[Distribution, str] | None:
    """The pip wheel whose file ``folder``'s shim links to, when the link leaves the folder, and that file's
    folder."""
    if shim is None or shim.real_path is None or os.path.dirname(shim.real_path) == os.path.realpath(folder):
        return None
    real = os.path.dirname(shim.real_path)
    if not any(os.path.realpath(f) == real for d in dists for f in d.lib_folders) and \
            (site := wheel_site(real)) is not None:  # a wheel's folder no search found: its RECORD and its name
        dists = cudnn_distributions([site])
    # of the distributions installed there (cu11's 8.x and cu12's 9.x share nvidia/cudnn/lib), one that ships it
    owner = distribution_for(real, [d for d in dists if shim.real_path in map(os.path.realpath, d.files)], (shim,))
    return None if owner is None else (owner, real)


def _shim_owner(owned: tuple[Distribution, str], major: int, ctx: Context) -> Install:
    """The install of the pip wheel a shim links to (`_owner`)."""
    owner, real = owned
    release, _ = _release_of((), real, major, owner, ctx.cache)
    return _pip_install(real, major, owner, release, _cuda_major(owner, ()), ctx.environ)


def not_cudnn(info: ElfInfo) -> bool:
    """Another library under a cuDNN name (``cp libz.so.1 libcudnn.so.9``): its SONAME is no cuDNN library's and it
    exports no cudnn* function."""
    return not info.cudnn_functions and classify_bundled(info.soname or "") is None


def _key(path: str) -> str | None:
    lib = classify_bundled(os.path.basename(path))
    return lib.key if lib else None


def _renamed_shim(paths: Sequence[str], major: int, cache: ElfCache) -> tuple[str, int] | None:
    """(the path, the major its SONAME says) of the shim among ``paths`` named as ``major``'s whose SONAME is the
    shim's of another major; None when there is none, or it cannot be read."""
    for path in paths:
        named = classify_bundled(os.path.basename(path))
        if named is None or named.key != "shim" or named.major != major:
            continue
        try:
            soname = cache.inspect(os.path.realpath(path)).soname
        except (OSError, ElfError):
            return None
        held = classify_bundled(soname) if soname else None
        return (path, held.major) if held is not None and held.key == "shim" and held.major != major else None
    return None


def _shadowing(folder: str, dist: Distribution | None, release: Release | None) -> tuple[str, ...]:
    """The files of ``folder`` no RECORD of ``dist`` lists whose names the loaders of its release try before the
    files it ships (``STEM.so.M.m.p`` and ``STEM.so.M.m``)."""
    if dist is None or release is None:
        return ()
    tried = (f".so.{release.major}.{release.minor}.{release.patch}", f".so.{release.major}.{release.minor}")
    here = os.path.realpath(folder)
    listed = {os.path.basename(path) for path in dist.files if os.path.realpath(os.path.dirname(path)) == here}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    return tuple(os.path.join(folder, name) for name in names if name.startswith("libcudnn")
                 and name.endswith(tried) and name not in listed)


def asked_for(lib: SubLibrary, shim: Candidate | None, graph: Step | None = None) -> bool:
    """A sub-library that not every release has, asked for all the same: the shim exports its VersionCheck (ext in
    9.28); or graph opens it (``graph``: graph's step, found) and no call of graph's goes on without it: `plan`
    keeps its step only where graph's file names it (engines_tensor_ir: without it cudnnBackendFinalize returns
    1008 after "Unable to load any of {libcudnn_engines_tensor_ir.so...}", measured on 9.21 cu12, 9.24 cu13 and 9.28
    cu12 and cu13 once engines_runtime_compiled loaded; 9.0's graph names none, and 9.20's asks for it and goes on
    without it: `SubLibrary.needed_from`). Not for a graph already in the process (a preload, a running process's
    mapping): what it asks for later is judged as the process holds it, as before."""
    if lib.version_check:
        return bool(shim and shim.elf and lib.version_check in shim.elf.version_checks)
    return lib.opened_by == "graph" and not lib.optional and graph is not None and graph.path is not None and \
        graph.rule != "already-loaded" and (
            lib.needed_from is None or graph.release is None or graph.release >= lib.needed_from)


def _records(folder: str, files: Sequence[Candidate], dist: Distribution | None, ctx: Context,
             only: set[str] | None = None) -> tuple[Record, ...]:
    """RECORD's size (and with ``ctx.verify`` its sha256) of each file of the distribution in ``folder`` (``only``:
    of those, the files at these real paths)."""
    if dist is None:
        return ()
    here = os.path.realpath(folder)
    sizes = {os.path.realpath(c.path): c.size for c in files}
    out = []
    for path in dist.files:
        if os.path.realpath(os.path.dirname(path)) != here or (only is not None and os.path.realpath(path) not in only):
            continue
        on_disk = sizes.get(os.path.realpath(path))
        if on_disk is None:
            try:
                on_disk = os.stat(path).st_size
            except OSError:
                on_disk = None
        differs = None
        if ctx.verify and on_disk is not None and path in dist.digests:
            differs = _digest(path, ctx.cache) != dist.digests[path]
        out.append(Record(path, dist.sizes.get(path), on_disk, differs))
    return tuple(out)


def _digest(path: str, cache: ElfCache) -> str | None:
    """The file's sha256 as RECORD writes it (urlsafe base64, unpadded), remembered under its stamp."""
    key = ("sha256", *_stamped(path))
    known = cache.recall(key, "str")
    if isinstance(known, str):
        return known
    value = record_digest(path)
    if value is not None:
        cache.remember(key, value)
    return value


def plan(gen: Generation, shim_path: str | None, folder: str, release: Release | None,
         ctx: Context) -> tuple[tuple[SubLibrary, Step], ...]:
    """Simulate the shim's dlopen of each sub-library, and graph's of the engines (v9); every
    sub-library gets a step, found or not. ``shim_path``: the shim as opened (None: there is none)."""
    shim_req = requester(shim_path, ctx.cache) if shim_path else None
    graph_req: linker.Requester | None = None
    graph_release = release
    # the shim asks for the names of its own build: the release its code formats them with (`ElfInfo.
    # names_release`: a 9.14 shim copied over 9.19's asks for libcudnn_graph.so.9.14.0, measured on the H200), else
    # that of the folder its file is in (a shim reached through a symbolic link: its $ORIGIN is still the link's)
    real = os.path.realpath(shim_path) if shim_path else None
    if real and (own := _names_release(real, ctx.cache)) is not None:
        release = own
    elif shim_path and real and os.path.dirname(real) != os.path.realpath(os.path.dirname(shim_path)):
        release = release_near(real, ctx.cache) or release
    steps: list[tuple[SubLibrary, Step]] = []
    for lib in gen.sublibraries:
        # A dlopen'd object has no loader (glibc l_loader): the shim's calls search with the
        # shim's own paths, graph's calls with graph's, plus the executable's RPATH (linker.Chain).
        # Each asks for the names of its own release: a 9.0 graph under a 9.28 shim asks for X.so.9.0.0.
        opener = shim_req if lib.opened_by == "shim" else graph_req
        if not lib.required and opener is not None and lib.stem not in _named_by(opener.path, ctx.cache, lib.stem):
            continue  # its opener's release never asks for it (9.0's graph and engines_tensor_ir; 9.0's shim, ext)
        names = lib.names_tried(release if lib.opened_by == "shim" else graph_release)
        res = linker.resolve_many(names, chain(opener), ctx.linker)
        step = make_step(lib.key, opener.path if opener else None, names, res, folder, ctx)
        if not step.inside_install and step.path and real and os.path.realpath(os.path.dirname(step.path)) == \
                os.path.dirname(real):
            step = replace(step, inside_install=True)  # the folder the shim's own file is in: its install's
        if res.found and res.name in names[:-1]:
            step = replace(step, fallback=_fallback(lib.key, opener, names[names.index(res.name) + 1:], res, folder,
                                                    ctx))
        if lib.key == "graph" and res.path:
            graph_req, graph_release = requester(res.path, ctx.cache), step.release or release
        steps.append((lib, step))
    return tuple(steps)


def _names_release(path: str, cache: ElfCache) -> Release | None:
    try:
        return cache.inspect(path).names_release
    except (OSError, ElfError):
        return None


def _named_by(path: str, cache: ElfCache, stem: str) -> tuple[str, ...]:
    """The libcudnn_* names the opener's file holds (`ElfInfo.opens`); ``(stem,)`` when they cannot be read, so
    that an unreadable opener is taken to ask for it."""
    try:
        named = cache.inspect(os.path.realpath(path)).opens
    except (OSError, ElfError):
        return (stem,)
    return named or (stem,)


def _fallback(key: str, opener: linker.Requester | None, rest: tuple[str, ...], picked: linker.Resolution,
              folder: str, ctx: Context) -> Step | None:
    """The step of the opener's names after the one that picked ``picked``, when they lead to another file."""
    later = linker.resolve_many(rest, chain(opener), ctx.linker)
    if later.path is None or os.path.realpath(later.path) == os.path.realpath(picked.path or ""):
        return None  # nothing else answers (the same file again fails again)
    return make_step(key, opener.path if opener else None, rest, later, folder, ctx)


def release_near(path: str, cache: ElfCache) -> Release | None:
    """The release of the file at ``path``: its own version constant, else that of the graph or
    ops library beside it (the shim, cnn, the engines and heuristic carry none, cudnn-facts §2)."""
    folder = os.path.dirname(path)
    for candidate in (path, *(os.path.join(folder, name) for name in (
            "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_ops_infer.so.8"))):
        try:
            release = cache.inspect(os.path.realpath(candidate)).release
        except (OSError, ElfError):
            continue
        if release:
            return release
    return None


def make_step(key: str, requested_by: str | None, names: tuple[str, ...], res: linker.Resolution,
              folder: str | None, ctx: Context, *, found: tuple[str, str] | None = None) -> Step:
    """A Step from a linker answer; ``found`` (path, rule) overrides it (a shim found by path)."""
    path, rule = found or (res.path, res.rule)
    release = release_near(path, ctx.cache) if path else None
    inside = bool(path and folder) and os.path.realpath(os.path.dirname(path or "")) == os.path.realpath(folder or "")
    entry = search_entry(path, rule, ctx.linker) if path and not found else None
    variable = "LD_LIBRARY_PATH" if entry is not None else None
    if path and rule == "already-loaded" and (preloaded_by := ctx.preload_entry(path)) is not None:
        entry, variable = preloaded_by, ctx.preload_source(path)
    trail = condensed_trail(res, ctx.linker.defaults.subdirs)
    return Step(key, requested_by, names, path, rule, inside, release, trail, "found" if found else res.outcome,
                None if found else res.error, entry, variable, undecided=res.undecided,
                soname=_soname_of(path, ctx.cache) if path else None,
                real_path=os.path.realpath(path) if path else None)


def _soname_of(path: str, cache: ElfCache) -> str | None:
    try:
        return cache.inspect(os.path.realpath(path)).soname
    except (OSError, ElfError):
        return None


def search_entry(path: str, rule: str, env: linker.LinkerEnv) -> str | None:
    """The LD_LIBRARY_PATH entry, as written, whose folder (or a hwcaps subfolder of it) held ``path``;
    None for another rule. An empty entry (the current directory) is returned as ""."""
    if rule != "ld-library-path":
        return None
    folder = os.path.normpath(os.path.dirname(path))
    for text in env.ld_library_path:
        expanded = linker.expand(text, env.executable, env.defaults) if text else ""
        if expanded is None:
            continue
        base = os.path.normpath(expanded or ".")
        if folder == base or any(folder == os.path.normpath(os.path.join(base, sub)) for sub in env.defaults.subdirs):
            return text
    return None


def condensed_trail(res: linker.Resolution, subdirs: Sequence[str]) -> tuple[str, ...]:
    """The search trail, one line per (rule, folder, name): "rpath: /x/libz.so.1 (absent)". glibc tries every
    folder with each hwcaps subfolder first (``subdirs``, up to 18: linker.LinkerDefaults); an attempt there is
    shown only when something was in it. What the search passed over or stopped at for a reason of its own (a
    foreign ELF, a loop, an entry that is a file, a secure-mode drop, a file this user may not read) names the
    rule that decided it: "ld-library-path: /x/libz.so.1 (no-access, rule open-eacces)"."""
    nested = tuple("/" + s.rstrip("/") for s in subdirs if s)
    lines: dict[tuple[str, str], str] = {}
    for attempt in res.trail:
        if attempt.outcome in ("absent", "no-dir") and attempt.path.rpartition("/")[0].endswith(nested):
            continue
        plain = attempt.outcome in ("found", "absent", "no-dir") or not attempt.by
        said = attempt.outcome if plain else f"{attempt.outcome}, rule {attempt.by}"
        lines.setdefault((attempt.rule, attempt.path), f"{attempt.rule}: {attempt.path} ({said})")
    return tuple(lines.values())


def dependencies(gen: Generation, files: Sequence[Candidate], plan: Sequence[Step], cuda: int | None,
                 ctx: Context) -> tuple[Step, ...]:
    """The install's closure outside cuDNN: what its files NEED (libstdc++, libgcc_s, libz ...) and what cuDNN
    dlopens itself (libcuda, cuBLASLt, NVRTC and NVRTC's builtins), and in turn what those NEED, breadth first as
    ld.so maps them (rule start-order). Each is looked up from the object that asks, with that object's own
    search (its DT_RPATH chain or DT_RUNPATH), and its version needs are checked against the copy found first
    (`Step.lacks`). The first lookup of a name decides it: later ones get that object (rule already-loaded)."""
    steps: dict[str, Step] = {}
    # the install's own files, then what the plan loads from elsewhere (LD_LIBRARY_PATH ...)
    loading = [(cand.path, cand.elf) for cand in files if cand.elf is not None]
    mine = {os.path.realpath(path) for path, _ in loading}
    for step in plan:
        if step.path and step.error is None and os.path.realpath(step.path) not in mine:
            info = ctx.elf(step.path)
            if info is not None:
                loading.append((step.path, info))
    _closure([(path, info, chain(linker.Requester.from_elf(path, info))) for path, info in loading], steps, ctx)
    # What cuDNN dlopens itself, each asked for by the file that opens it: (soname, that file's requester).
    dlopened: list[tuple[str, linker.Requester | None]] = []
    # What a loaded file dlopens as it loads (catalog.OPENS_AT_LOAD: cuDNN 8's cnn_infer opens the driver's
    # libcuda.so.1, and the 8.5 shim then trips on the dlerror() it leaves: `judge.consequences`)
    for path, info in loading:
        dlopened += [(name, requester(path, ctx.cache)) for name in opens_at_load(path, info, ctx)]
    # cuBLASLt is dlopened (not NEEDED) by cuDNN >= 8.9 / 9 (cudnn-facts §1.1); its major is the CUDA major.
    # The library that asks is the graph (cnn_infer in 8.x) the plan loads, wherever it comes from; in 9.x it is
    # the precompiled engine library that opens cuBLASLt (its file names libcublasLt.so.12 or .13; graph's names
    # none: `cublaslt_name` reads it), the one of its own CUDA through its own RUNPATH: cu12's engines in a cu13
    # folder open libcublasLt.so.12 (measured: the differential test's cublaslt class); only one graph will use: of
    # graph's own release (another release's it maps and leaves, `judge`). The 9.13 cu13 wheel's engines name
    # libcublasLt.so.13 with a RUNPATH that has no cu13 entry, so the name is read, not told by the RUNPATH.
    opener = next((step.path for step in plan if step.library in ("graph", "cnn_infer") and step.path), None) or \
        next((c.path for c in files if c.library in ("graph", "cnn_infer") and c.elf), None)
    opener_req = requester(opener, ctx.cache) if opener else None
    graph_release = next((step.release for step in plan if step.library == "graph" and step.path), None)
    engines = next((step.path for step in plan if step.library == "engines_precompiled" and step.path
                    and step.error is None and step.release == graph_release), None) if gen.major >= 9 else None
    engines_req = requester(engines, ctx.cache) if engines else None
    if opener_req is not None and cuda and gen.major >= 8:
        named = cublaslt_name(engines, ctx.cache) if engines and engines_req else None
        lt_cuda = (cuda_near(engines, ctx.cache) or cuda) if engines and engines_req else cuda
        dlopened += [(named or f"libcublasLt.so.{lt_cuda}", engines_req or opener_req)]
        versioned = _nvrtc_name(files, plan, gen.major, cuda, ctx)
        dlopened += [(versioned, opener_req)] if versioned else []
    for soname, asker in dlopened:
        if asker is not None and soname not in steps:
            _dlopened(soname, asker, steps, ctx)
            nvrtc = steps[soname]
            builtins = nvrtc_builtins(nvrtc.path, ctx.cache) if soname.startswith("libnvrtc.") and nvrtc.path else None
            # NVRTC dlopens the builtins of its own minor release when it compiles (its strings name
            # "libnvrtc-builtins.so.12.9") and, when they load, the driver, with its own RUNPATH ($ORIGIN and an
            # empty element: the current folder) (measured with LD_DEBUG on the 12.9 and 13.5 wheels)
            nvrtc_req = requester(nvrtc.path, ctx.cache) if nvrtc.path is not None else None
            if builtins is not None and nvrtc_req is not None and builtins not in steps:
                _dlopened(builtins, nvrtc_req, steps, ctx)
                if steps[builtins].path is not None and steps[builtins].error is None and "libcuda.so.1" not in steps:
                    _dlopened("libcuda.so.1", nvrtc_req, steps, ctx)
    sites = _named_sites(files, ctx)
    return tuple(replace(step, elsewhere=_in_wheels(step.library, sites, cuda)) if step.path is None and sites
                 else step for step in steps.values())


def _named_sites(files: Sequence[Candidate], ctx: Context) -> tuple[str, ...]:
    """The site-packages folders this environment names: those of the wheel folders on LD_LIBRARY_PATH, of
    the install's own files, and of the Python environment the shell has active (a framework's cuBLAS there)."""
    found = (wheel_site(os.path.dirname(c.path)) for c in files)
    return tuple(dict.fromkeys(site for site in (*search_path_sites(ctx.linker.ld_library_path), *found,
                                                 ctx.shell_site) if site and os.path.isdir(site)))


def _in_wheels(soname: str, sites: Sequence[str], cuda: int | None = None) -> str | None:
    """A file named ``soname`` in a pip wheel's ``nvidia/*/lib`` folder of ``sites`` (cuBLAS, NVRTC, the CUDA
    runtime: what pip ships), the first found; for an unversioned name (``libnvrtc.so``, which no wheel ships),
    the library of CUDA ``cuda`` that a link of that name would lead to (``libnvrtc.so.11.2``)."""
    folders = tuple(wheel_lib_folders(sites))
    found = next((path for folder in folders if os.path.isfile(path := os.path.join(folder, soname))), None)
    if found is not None or not soname.endswith(".so") or cuda is None:
        return found
    versioned = re.compile(re.escape(soname) + rf"\.{cuda}(\.\d+)*$")
    return next((os.path.join(folder, name) for folder in folders for name in _names_in(folder)
                 if versioned.match(name) and os.path.isfile(os.path.join(folder, name))), None)


def _names_in(folder: str) -> list[str]:
    """The names in ``folder``, sorted; none where it is no folder or cannot be read."""
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


# In every process before anything else: the C library and the loader (libdl, libpthread, librt are part of libc
# from glibc 2.34; the interpreter NEEDs libm). Not searched; GLIBC_ needs are the host's (`Host.lacking`).
ALWAYS_LOADED = frozenset({"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                           "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"})


def _closure(queue: list[tuple[str, ElfInfo, linker.Chain]], steps: dict[str, Step], ctx: Context) -> None:
    """Breadth first from ``queue`` (each object with its chain): each DT_NEEDED outside cuDNN and the C library,
    looked up from the object that needs it, and what that NEEDs in turn."""
    while queue:
        path, info, links = queue.pop(0)
        for needed in info.needed:
            if needed in steps or needed.startswith("libcudnn") or needed in ALWAYS_LOADED:
                continue
            res = linker.resolve(needed, links, ctx.linker, how="needed")
            steps[needed] = replace(make_step(needed, path, (needed,), res, os.path.dirname(path), ctx),
                                    lacks=lacking(info, needed, res.path, ctx))
            found = ctx.elf(res.path) if res.found and res.path and res.rule != "already-loaded" else None
            if found is not None and res.path is not None:
                queue.append((res.path, found, linker.Chain((linker.Requester.from_elf(res.path, found),
                                                             *links.links))))
                _opened_as_it_loads(res.path, found, steps, ctx)


def _dlopened(soname: str, asker: linker.Requester, steps: dict[str, Step], ctx: Context) -> None:
    """A library cuDNN (or NVRTC) dlopens, looked up from ``asker``, then what it NEEDs (a dlopen'd object has no
    loader: its chain starts at it)."""
    res = linker.resolve(soname, chain(asker), ctx.linker)
    steps[soname] = make_step(soname, asker.path, (soname,), res, os.path.dirname(asker.path), ctx)
    info = ctx.elf(res.path) if res.found and res.path and res.rule != "already-loaded" else None
    if info is not None and res.path is not None:
        _closure([(res.path, info, chain(linker.Requester.from_elf(res.path, info)))], steps, ctx)
        _opened_as_it_loads(res.path, info, steps, ctx)  # cuBLASLt opens the driver as it loads


def _opened_as_it_loads(path: str, info: ElfInfo, steps: dict[str, Step], ctx: Context) -> None:
    """What the library at ``path`` dlopens as it loads (`opens_at_load`), each looked up from it."""
    for name in opens_at_load(path, info, ctx):
        if name not in steps:
            _dlopened(name, linker.Requester.from_elf(path, info), steps, ctx)


def lacking(info: ElfInfo, needed: str, provider: str | None, ctx: Context) -> tuple[str, ...]:
    """The versions ``info``'s file needs from ``needed`` (DT_VERNEED) that ``provider``, the file that answers
    that name, does not define: dl-version.c then fails the load ("version `X' not found"). A provider without
    version definitions satisfies every need (rule version-no-verdef)."""
    if provider is None or not any(need.library == needed for need in info.version_needs):
        return ()
    return undefined_versions(info, needed, ctx.elf(provider))


def undefined_versions(info: ElfInfo, needed: str, found: ElfInfo | None) -> tuple[str, ...]:
    """The versions ``info``'s file needs from ``needed`` that ``found``, the object that answers that name, does not
    define (rule version-no-verdef: an object without version definitions satisfies every need)."""
    if found is None or not found.version_defs:
        return ()
    wanted = next((need.versions for need in info.version_needs if need.library == needed), ())
    return tuple(version for version in wanted if version not in found.version_defs)


# Where cuDNN keeps the name of the NVRTC it dlopens at run time (for its runtime-compiled engines), per major: a
# printf format, "libnvrtc.so.%d" (the CUDA major: 9.x for CUDA 12 and 13, 8.9's ops_infer) or "libnvrtc.so.%d.%d"
# (9.1 for CUDA 11: NVRTC's soname there is 11.2 from CUDA 11.2 on). 8.5's files hold neither: it opens only the
# unversioned libnvrtc.so (`catalog.OPENS_AT_LOAD`).
_NVRTC_HOLDER = {9: "graph", 8: "ops_infer"}


def _nvrtc_name(files: Sequence[Candidate], plan: Sequence[Step], major: int, cuda: int,
                ctx: Context) -> str | None:
    """The versioned NVRTC the install dlopens at run time, told by the format its file holds (`_NVRTC_HOLDER`,
    the one its plan loads, else its own); None where that file holds none (or cannot be read)."""
    key = _NVRTC_HOLDER.get(major)
    path = next((step.path for step in plan if step.library == key and step.path and step.error is None), None) or \
        next((c.path for c in files if c.library == key and c.elf), None)
    if path is None:
        return None
    if holds(path, b"libnvrtc.so.%d.%d", ctx.cache):
        return nvrtc_soname(cuda)
    return f"libnvrtc.so.{cuda}" if holds(path, b"libnvrtc.so.%d", ctx.cache) else None


def opens_at_load(path: str, info: ElfInfo, ctx: Context) -> tuple[str, ...]:
    """What the file at ``path`` dlopens as it loads (`catalog.OPENS_AT_LOAD`)."""
    entry = _opens(path, info, ctx)
    return entry.names if entry is not None else ()


def _opens(path: str, info: ElfInfo, ctx: Context, release: Release | None = None) -> OpensAtLoad | None:
    """The entry of `catalog.OPENS_AT_LOAD` of the file at ``path``, told by its soname, its release (``release``
    where the file carries none) and, where a release of it is told only by its contents, a name the file holds."""
    return opens_entry(info.soname or "", info.release or release, partial(holds, path, cache=ctx.cache))


def cublaslt_name(path: str, cache: ElfCache | None = None) -> str | None:
    """The cuBLASLt a cuDNN engine library dlopens, as the file names it ("libcublasLt.so.13"), or None where it
    names none (read once per file: ``cache``)."""
    def read(data: mmap.mmap) -> str | None:
        at = data.find(b"\0libcublasLt.so.")
        if at < 0:
            return None
        end = data.find(b"\0", at + 1, at + 40)
        name = bytes(data[at + 1:end]).decode("ascii", "replace") if end > 0 else ""
        return name if _CUBLASLT.fullmatch(name) else None

    return _read_once(("cublasLt",), path, read, cache, _CUBLASLT)


_CUBLASLT = re.compile(r"libcublasLt\.so\.\d+")


def holds(path: str, name: bytes, cache: ElfCache | None = None) -> bool:
    """Whether the file at ``path`` holds ``name`` as a NUL-terminated string of its own (read once per file and
    name: ``cache``)."""
    def read(data: mmap.mmap) -> str:
        return "yes" if data.find(b"\0" + name + b"\0") >= 0 else "no"

    return _read_once(("holds", name.decode("ascii", "replace")), path, read, cache, ("yes", "no")) == "yes"


def _read_once(kind: tuple[str, ...], path: str, read: Callable[[mmap.mmap], str | None],
               cache: ElfCache | None, answers: tuple[str, ...] | re.Pattern[str] | None = None) -> str | None:
    """What ``read`` finds in the bytes of the file at ``path`` (mapped, not read whole), remembered in ``cache``
    under ``kind`` and the file's stamp when it finds something; None when it finds nothing or the file cannot be
    read (a regular file only: a FIFO put in its place would block an open). A remembered answer that is none of
    ``answers`` (where ``read`` gives only those, or only what that pattern matches whole) is a memo of another
    shape: read again."""
    key = (*kind, *_stamped(path))
    known = cache.recall(key, "str") if cache is not None else None
    if isinstance(known, str) and (answers is None or (answers.fullmatch(known) is not None
                                                       if isinstance(answers, re.Pattern) else known in answers)):
        return known
    try:
        with open_regular(path) as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = read(data)
    except (OSError, ValueError, NotRegularFile):
        return None
    if found is not None and cache is not None:
        cache.remember(key, found)
    return found


def opened_while_loading(gen: Generation, plan: Sequence[Step], deps: Sequence[Step],
                         ctx: Context) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """For each sub-library of the plan, in the shim's load order, what the initializers its first dlopen runs
    dlopen, in the order they run: those of the libraries it maps first (what it NEEDs outside cuDNN that no
    sub-library before it mapped, each after what it NEEDs: ld.so's order), then its own; "" after the names of a
    library that reads the error of its own failed dlopen (`OpensAtLoad.leaves_error`): none is left then. A cuDNN 8
    shim before 8.9 reads dlerror() after that dlopen succeeded: when the last of these failed, it aborts with its
    error (`judge.consequences`)."""
    where = {step.library: step.path for step in deps if step.path}
    # what the process holds before the shim's loads (a preload's, already loaded) runs no initializer then
    mapped: set[str] = {step.library for step in deps if step.rule == "already-loaded"}
    opened: list[tuple[str, tuple[str, ...]]] = []
    for lib in gen.sublibraries:
        step = next((s for s in plan if s.library == lib.key and s.path and s.error is None), None)
        info = ctx.elf(step.path) if step is not None and step.path else None
        if step is None or step.path is None or info is None:
            continue
        if step.rule == "already-loaded":  # in the process before: the shim's dlopen runs no initializer
            opened.append((lib.key, ()))
            continue
        order = _mapped_anew([n for n in info.needed if not n.startswith("libcudnn") and n not in ALWAYS_LOADED],
                             where, mapped, ctx)
        entries = [*(_opens(path, found, ctx) for path, found in order), _opens(step.path, info, ctx, step.release)]
        # each name in the order they run; "" where the library read the error itself (none is left then)
        names = [name for entry in entries if entry is not None
                 for name in (*entry.names, *(() if entry.leaves_error else ("",)))]
        opened.append((lib.key, tuple(names)))
        mapped |= {found.soname or path for path, found in order}
    return tuple(opened)


def _mapped_anew(needed: Sequence[str], where: Mapping[str, str | None], mapped: set[str],
                 ctx: Context) -> list[tuple[str, ElfInfo]]:
    """What a dlopen of a file that NEEDs ``needed`` maps that ``mapped`` does not hold, found where ``where``
    says (soname -> path), each after what it NEEDs: the order ld.so runs their initializers."""
    order: list[tuple[str, ElfInfo]] = []
    seen: set[str] = set()

    def visit(soname: str) -> None:
        path = where.get(soname)
        found = ctx.elf(path) if path else None
        if soname in mapped or soname in seen or path is None or found is None:
            return
        seen.add(soname)
        for name in found.needed:
            visit(name)
        order.append((path, found))

    for name in needed:
        visit(name)
    return order


def nvrtc_builtins(nvrtc: str, cache: ElfCache | None = None) -> str | None:
    """The builtins library NVRTC at ``nvrtc`` dlopens when it compiles: ``libnvrtc-builtins.so.MAJOR.MINOR`` of its
    own release, the name its file holds (its error messages: "failed to open libnvrtc-builtins.so.12.9"), read
    once per file (``cache``); None when the file holds none."""
    def read(data: mmap.mmap) -> str | None:
        at = data.find(b"libnvrtc-builtins.so.")
        found = re.match(rb"libnvrtc-builtins\.so\.\d+\.\d+", data[at:at + 40]) if at >= 0 else None
        return found.group().decode() if found else None

    return _read_once(("nvrtc-builtins",), nvrtc, read, cache)


def built_for_cuda(path: str, cache: ElfCache | None = None) -> int | None:
    """The CUDA major a program's library was built for, told by the cuBLAS it names (CTranslate2 dlopens
    "libcublas.so.12"); None where it names none."""
    return next((major for major in (13, 12, 11) if holds(path, f"libcublas.so.{major}".encode(), cache)), None)


def cuda_near(path: str, cache: ElfCache) -> int | None:
    """The CUDA major a cuDNN engine library was built for. It carries no CUDA runtime constant; its RUNPATH
    tells CUDA 13 (every library of a cu13 wheel searches ``$ORIGIN/../../cu13/lib``, cu12's and cu11's do not),
    and the graph beside it the rest: a wheel's file without that entry beside a CUDA 13 graph is another build's
    (cu12's engines copied into a cu13 folder). A file with no wheel RUNPATH (a system or conda package) is of
    the graph beside it."""
    try:
        runpath = cache.inspect(os.path.realpath(path)).runpath
    except (OSError, ElfError):
        return None
    if any(p.endswith("/cu13/lib") for p in runpath):
        return 13
    wheel = any(p.endswith("/cublas/lib") for p in runpath)
    try:
        version = cache.inspect(os.path.realpath(os.path.join(os.path.dirname(path), "libcudnn_graph.so.9"))
                                ).cudart_version
    except (OSError, ElfError):
        version = None
    near = version // 1000 if version else _wheel_cuda(os.path.dirname(path))
    if near is None and wheel:  # a wheel's file without the CUDA 13 entry, and nothing beside it to tell more
        return 12
    return 12 if near == 13 and wheel else near


def _wheel_cuda(folder: str) -> int | None:
    """The CUDA major a pip wheel's folder was installed for, by its distribution's name (nvidia_cudnn_cu12-...)."""
    site = wheel_site(folder)
    if site is None:
        return None
    try:
        names = os.listdir(site)
    except OSError:
        return None
    majors = {int(m.group(1)) for name in names if (m := re.match(r"nvidia_cudnn_cu(\d+)-.*\.dist-info$", name))}
    return majors.pop() if len(majors) == 1 else None


# --- the whole machine ---------------------------------------------------------

def install_of(path: str, ctx: Context, found_via: str, dists: Sequence[Distribution] = ()) -> Install | None:
    """The facts of the install the cuDNN file at ``path`` belongs to, as that file would load it: its
    folder's files of its generation, with ``path`` itself as opened (not resolved: a symlinked shim's
    $ORIGIN is the link's folder). None when the file is of no known cuDNN generation."""
    lib = classify_file(path, ctx.cache)
    if lib is None:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    scanned = scan(folder).get(lib.major, [])
    same_key = {p for p in scanned if (other := classify_bundled(os.path.basename(p))) and other.key == lib.key}
    paths = [p for p in scanned if p not in same_key] + [os.path.abspath(path)]
    if not dists and (site := wheel_site(folder)) is not None:  # a wheel's folder: its RECORD and its name
        dists = cudnn_distributions([site])
    return build_install(folder, lib.major, paths, found_via, ctx, dists)


def wheel_site(folder: str) -> str | None:
    """The site-packages folder of a pip wheel's ``.../nvidia/cudnn/lib`` (``cudnn_jit``, ``cu13`` ...), where
    its ``.dist-info`` is; None for a folder of another shape."""
    folder = os.path.normpath(folder)
    owner = os.path.dirname(folder)
    if os.path.basename(folder) != "lib" or not os.path.basename(owner).startswith(("cudnn", "cu")) \
            or os.path.basename(os.path.dirname(owner)) != "nvidia":
        return None  # a tarball's /opt/cudnn-9.0.0/lib, CUDA's /usr/local/cuda/lib: no wheel's, and no site above
    return os.path.normpath(os.path.join(folder, "..", "..", ".."))


def cudnn_wheel_site(folder: str) -> str | None:
    """The site-packages folder of a cuDNN wheel's folder (``SITE/nvidia/cudnn/lib``, ``cudnn_jit``), when that
    site exists: where pip installs the wheel back when no distribution owns the folder any more."""
    site = wheel_site(folder)
    owner = os.path.basename(os.path.dirname(os.path.normpath(folder)))
    return site if site is not None and owner.startswith("cudnn") and os.path.isdir(site) else None


def search_path_sites(entries: Sequence[str]) -> tuple[str, ...]:
    """The site-packages folders of the pip wheel folders among search-path ``entries`` (LD_LIBRARY_PATH's),
    in their order, each once; relative entries name no site."""
    return tuple(dict.fromkeys(site for entry in entries if entry.startswith("/") and (site := wheel_site(entry))))


def gather(paths: Sequence[str] = (), *, ctx: Context, site_paths: Sequence[str] | None = None,
           system: bool | None = None) -> Inventory:
    """The facts of every cuDNN install on the machine (or only under ``paths`` when given). ``system``
    (default: True unless ``paths`` are given) adds the ld.so cache, the default linker folders and
    /usr/local/cuda*; ``site_paths`` (default ``sys.path``) is where pip distributions are looked for. A
    given file stands for the install it belongs to. Nothing is loaded, nothing is judged."""
    origins, given_problems, given = _explicit(paths)
    searching = not paths
    sites = list(sys.path if site_paths is None else site_paths) if searching or site_paths else []
    # a given .../site-packages/nvidia/cudnn/lib folder (or a file in one): read its wheel's metadata too
    folders = [o.folder for o in origins] + [folder for folder, _ in given]
    sites += [site for folder in folders if (site := wheel_site(folder)) is not None]
    gone = ctx.linker.gone  # a world where distributions were uninstalled: their files and metadata are not there
    dists = tuple(d for d in cudnn_distributions(sites) if not gone or not d.files
                  or not all(ctx.linker.is_gone(f) for f in d.files)) if sites else ()
    if searching:
        search_ctx = SearchContext(ctx.environ, ctx.linker, system=True if system is None else system,
                                   distributions=dists)
        origins += search(search_ctx)
        origins += [Origin(folder, via) for folder, via in bundled_folders(sites)]
    installs: list[Install] = []
    unknown: list[str] = []
    seen: set[tuple[str, int]] = set()
    for origin in origins:
        for major, files in scan(origin.folder).items():
            files = [f for f in files if not ctx.linker.is_gone(f)]
            real = (os.path.realpath(origin.folder), major)
            if not files:
                continue
            if real in seen:
                continue
            seen.add(real)
            if major == 0:  # libcudnn* names no generation knows (libcudnn.so.6, libcudnn_foo.so)
                unknown += files
            else:
                installs.append(build_install(origin.folder, major, files, origin.found_via, ctx, dists))
    for (folder, major), files in given.items():
        if major == 0:
            unknown += files
            continue
        if (os.path.realpath(folder), major) in seen:
            continue
        seen.add((os.path.realpath(folder), major))
        shim = next((path for path in files if (lib := classify_bundled(os.path.basename(path))) and lib.key == "shim"),
                    files[0])
        installs += [install for install in [install_of(shim, ctx, "given on the command line", dists)] if install]
    ctx.cache.save()
    return Inventory(ctx.host, tuple(installs), tuple(dists), tuple(given_problems), tuple(unknown))


def _explicit(paths: Sequence[str]) -> tuple[list[Origin], list[Given], dict[tuple[str, int], list[str]]]:
    """User-given files and folders: folders are searched; a file stands for the install it belongs to,
    its folder's files of its generation, with the file itself as given (a symlinked shim stays one:
    its $ORIGIN is the link's folder). What cannot be one (missing, a link to nothing or in a loop, a
    device, a FIFO, a /proc file, a file not named libcudnn*, a folder without cuDNN) is a `Given`."""
    origins: list[Origin] = []
    problems: list[Given] = []
    given: dict[tuple[str, int], list[str]] = {}
    for raw in paths:
        path = os.path.abspath(raw)
        problem = path_problem(path)
        if problem is not None:
            problems.append(Given(path, _PATH_CODES[problem[0]], problem[1]))
        elif os.path.isdir(path):
            if not any(scan(path)):
                problems.append(Given(path, Code.NO_CUDNN, "no cuDNN library (libcudnn*.so.7, .8 or .9) in this "
                                      "folder"))
            origins.append(Origin(path, "given on the command line"))
        elif not os.path.basename(path).startswith("libcudnn"):
            problems.append(Given(path, Code.NO_CUDNN, "not a cuDNN library (its name is not libcudnn*)"))
        else:  # by its name, else by the name of the file it links to (the unversioned libcudnn.so of a -dev package)
            lib = classify_bundled(os.path.basename(path)) or classify_bundled(os.path.basename(os.path.realpath(path)))
            if lib is None:
                problems.append(Given(path, Code.NO_CUDNN, "no cuDNN library: a libcudnn file of no known cuDNN "
                                      "generation (7, 8, 9), nor a link to one"))
                continue
            given.setdefault((os.path.dirname(path), lib.major), []).append(path)
    return origins, problems, given


# What files.path_problem says of a path, as a code.
_PATH_CODES = {"missing": Code.MISSING_FILE, "broken-symlink": Code.BROKEN_SYMLINK, "symlink-loop": Code.SYMLINK_LOOP,
               "permission": Code.UNREADABLE, "not-regular": Code.NOT_A_REGULAR_FILE}
