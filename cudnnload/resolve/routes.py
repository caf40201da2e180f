"""How each framework puts cuDNN in its process: the shim whose functions it calls, and the rule that gave it.

The kind of loader comes from the framework's surveyed wheel (`survey.cudnn_load`: the row of the installed release,
else of the nearest surveyed one, and the route says so), applied to what is installed here:

- ``by-path``: a Python loader opens a cuDNN by path. Two are replayed as measured, because what they do around
  the path matters: PyTorch's ``_preload_cuda_deps()`` (torch 2.11, ``torch/__init__.py``; ``_load_global_deps()``
  before 2.10) takes, for each CUDA library, the first ``sys.path`` entry holding ``nvidia/<lib>/lib/<glob>``,
  ``nvidia/cu<N>/lib/<glob>`` or ``<lib>/lib/<glob>`` (``_get_cuda_dep_paths``) and opens it by path with ctypes;
  cuBLASLt and cuBLAS come first and, up to torch 2.13, are required: when either is missing a ValueError stops the
  preload before cuDNN, inside a ``try: ... except Exception: pass`` (2.14 calls it with ``required=False`` and goes
  on). Then ``libtorch_cuda.so``'s DT_NEEDED ``libcudnn.so.9`` is answered by the shim already loaded (its SONAME),
  else searched through its DT_RPATH; a shim of another major that the glob opened (``libcudnn.so.8`` first on
  ``sys.path``) is mapped beside and answers nothing. The JAX CUDA plugin's
  ``_load_nvidia_libraries()`` does ``import nvidia.cudnn`` and opens ``<its __path__[0]>/lib/libcudnn.so.9``,
  errors ignored; XLA then dlopens ``libcudnn.so.9`` by name from ``xla_cuda_plugin.so``. Any other surveyed
  loader by path (cudnn-frontend's ``_dlopen_cudnn()``) is its globs tried on each ``sys.path`` entry in order.
- ``needed``: the library that calls cuDNN NEEDs it, searched from it (ONNX Runtime up to 1.27's CUDA provider,
  TransformerEngine); ``bundled``: that NEEDED names the copy its wheel ships (CTranslate2 up to 4.6.2).
- ``by-name``: the library dlopens ``libcudnn.so.<major>`` by name when it first needs it (ONNX Runtime's CUDA
  provider from 1.28, no NEEDED and no RPATH; TensorFlow's ``dso_loader``): lazy, judged by what the process
  already maps (the rule ``already-loaded``) and by the name search from that library at that moment.
- ``none``: the wheel has nothing to do with cuDNN (CTranslate2 from 4.6.3 on Linux): it is not judged as needing
  one.

A framework no surveyed wheel answers for is judged by the rule of its installed files: the library that NEEDs a
cuDNN, searched from it; the route says it was not surveyed.

Whatever the framework opens, an ``LD_PRELOAD``-ed shim is first in the global scope: the framework's calls
bind to it (measured: torch with the system's ``libcudnn.so.9`` preloaded reports its release). The shim's
own loads of its sub-libraries are discovery's plan, made in the same process model (`process`).
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.resolve import linker
from cudnnload.resolve.access import Access, Unreachable
from cudnnload.resolve.catalog import GENERATIONS, classify
from cudnnload.resolve.consumers import Consumer, Need
from cudnnload.resolve.discovery import Context, chain, distribution_for, lacking, requester, scan, wheel_site
from cudnnload.resolve.sources import Distribution, cudnn_distributions, wheel_lib_folders
from cudnnload.resolve.startup import Source, package, torch_preload
from cudnnload.resolve.survey import CudnnLoad, LoadKind, SurveyMatch, cudnn_load, nearest


@dataclass(frozen=True)
class Closed:
    """A wheel's cuDNN folder on sys.path that the user a process runs as cannot enter: what stops it, that user,
    and the distribution whose RECORD lists a shim there (what the folder holds cannot be seen from here)."""

    stop: Unreachable
    user: int
    holder: Distribution


@dataclass(frozen=True)
class Route:
    """The cuDNN a framework's process calls, and how it got there."""

    consumer: Consumer
    shim: str | None  # the shim whose functions the framework's calls reach; None: it finds none
    how: str  # in words: "by path: torch's _preload_cuda_deps() (the first nvidia/cudnn/lib on sys.path)"
    opened: str | None = None  # the file the framework's own code opened, when a preloaded shim wins over it
    # where that file stops the process (`stops`): the distribution whose wheel folder holds it, (name, version, the
    # site-packages folder), to put it back whole; None for a file of no wheel's
    opened_holder: tuple[str, str, str] | None = None
    variable: str | None = None  # "LD_PRELOAD" when the shim comes from it
    entry: str | None = None  # that variable's entry
    error: str | None = None  # why no shim loads for it
    # what its load by path of ``shim`` does where it neither loads nor fails (`_stops`): the process dies or hangs
    # there, and the framework never looks further
    stops: str | None = None
    # what put the sys.path entry that gave the shim there (a PYTHONPATH entry, the user site, a .pth path line),
    # when the interpreter's start-up was observed; and that entry
    source: Source | None = None
    path_entry: str | None = None
    # what holds the shim under that entry when it is the program's own folder, to take it away there without
    # reaching through a link (`copy_under`)
    copy: tuple[str, tuple[str, ...]] | None = None
    # the surveyed wheel whose loader it was judged by (None: not surveyed), and that loader's kind
    survey: SurveyMatch | None = None
    kind: LoadKind | None = None
    # when it finds none: the first folder on sys.path holding a shim of its major (a wheel's nvidia/cudnn/lib) that
    # its search does not reach, and the functions a program can call to load it (`survey.CudnnLoad.program_calls`)
    unsearched: str | None = None
    # the distribution whose wheel folder that is, (name, version): its pin may not allow it
    unsearched_holder: tuple[str, str] | None = None
    program_calls: tuple[str, ...] = ()
    # when it finds none and no such folder is reachable, or a loader by path finds one only outside sys.path's
    # wheel folders (`_fell_past`): the first wheel folder on sys.path whose RECORD lists a shim of its major that
    # this user cannot search into (`Closed`)
    closed: Closed | None = None
    # when the shim is a copy its wheel bundles (CTranslate2's): the first wheel folder on sys.path holding a shim
    # of that copy's major, whose sub-libraries the bundled shim, alone in its folder, finds only by name
    beside: str | None = None
    # a folder the search for the shim tried before the one it found, holding a shim it passed over (another
    # architecture's, a link loop: ``passed_why``) or none beside other cuDNN files of its major (a wheel's
    # nvidia/cudnn/lib whose libcudnn.so.9 went): had a loadable shim been there, it would have loaded
    passed: str | None = None
    passed_why: str = ""

    @property
    def folder(self) -> str | None:
        return os.path.dirname(self.shim) if self.shim else None

    @property
    def uses_cudnn(self) -> bool:
        """False when its surveyed wheel has nothing to do with cuDNN: it is not judged as needing one."""
        return self.kind != "none"

    @property
    def lazy(self) -> bool:
        """Its cuDNN is opened by name on first use, not at load time: a program that never reaches cuDNN maps none."""
        return self.kind == "by-name"

    @property
    def judged_by(self) -> str:
        """Which surveyed wheel's loader it was judged by, when that is not its own release's."""
        if self.survey is None:
            return f"{self.consumer.label} is a release of no surveyed wheel: judged by what its libraries NEED"
        if self.survey.exact:
            return ""
        row = self.survey.wheel
        return f"judged by the loader of {row.distribution} {row.version}, the nearest surveyed"


def entry_holding(path: str, entries: Iterable[str]) -> str | None:
    """The first of the sys.path ``entries`` that ``path`` lies in as a wheel's library lies in its site-packages
    (``ENTRY/nvidia/cudnn/lib/libcudnn.so.9``): what a loader searching sys.path for that layout found it
    through. '' (the current folder, for -c) holds such relative paths."""
    parts = posixpath.normpath(path).split("/")
    if len(parts) < 4 or parts[-4] != "nvidia" or parts[-2] != "lib":
        return None
    root = "/".join(parts[:-4]) or ("/" if path.startswith("/") else "")
    return next((entry for entry in entries if (posixpath.normpath(entry) if entry else "") == root), None)


def copy_under(entry: str, shim: str) -> tuple[str, tuple[str, ...]]:
    """What takes away the cuDNN that ``shim`` belongs to from under the sys.path ``entry`` (the shim lies in
    ENTRY/nvidia/PKG/lib) and from nothing else: the first of ENTRY/nvidia, ENTRY/nvidia/PKG and that lib folder
    that is a symbolic link (the link goes, never the files it leads to: a system's or another environment's), else
    the lib folder with the names of the cuDNN files in it. Paths absolute, from this process's folder (the
    program's, for '')."""
    folder = os.path.abspath(os.path.dirname(shim))
    root = os.path.abspath(entry or ".")
    parts = os.path.relpath(folder, root).split(os.sep)
    for depth in range(1, len(parts) + 1):
        path = os.path.join(root, *parts[:depth])
        if os.path.islink(path):
            return path, ()
    try:
        names = sorted(name for name in os.listdir(folder) if name.startswith("libcudnn"))
    except OSError:
        names = [os.path.basename(shim)]
    return folder, tuple(names)


def route(consumer: Consumer, ctx: Context, site_paths: Sequence[str],
          sources: Mapping[str, Source] | None = None) -> Route:
    """The shim ``consumer``'s framework would call in a process with ``ctx``'s environment and what it
    maps first (LD_PRELOAD), ``site_paths`` being its ``sys.path``; ``sources``: what put each sys.path entry
    there (`startup.PathEntry`), to name the one a shim found by path came from."""
    major = consumer.cudnn_major
    soname = f"libcudnn.so.{major}"
    match, load = consumer_load(consumer)
    if load is None:
        found = _from_files(consumer, ctx, site_paths, soname)
    elif load.kind == "none":
        return Route(consumer, None, f"{consumer.label}: nothing of its wheel NEEDs, names, pins or loads cuDNN",
                     survey=match, kind="none")
    elif load.kind == "by-path":
        found = _REPLAYS.get(load.by_path[0].loader.function, _first_on_path)(consumer, load, ctx, site_paths, soname)
    else:
        found = _from_caller(consumer, load, ctx, soname)
    unsearched = _shim_on_path(site_paths, major, ctx) if found.shim is None else None
    beside = _shim_on_path(site_paths, major, ctx) if found.shim is not None and load is not None and \
        load.kind == "bundled" else None
    found = replace(found, survey=match, kind=load.kind if load else None, unsearched=unsearched,
                    unsearched_holder=_holder_of(unsearched) if unsearched is not None else None, beside=beside,
                    closed=_closed_on_path(site_paths, major) if unsearched is None and (
                        found.shim is None or _fell_past(load, found.shim, site_paths)) else None,
                    program_calls=load.program_calls if load else ())
    entry = entry_holding(found.shim, site_paths) if found.shim else None
    if entry is not None and sources is not None and found.shim is not None:
        source = sources.get(entry)
        found = replace(found, source=source, path_entry=entry,
                        copy=copy_under(entry, found.shim) if source is not None and source.kind == "program" else None)
    preloaded = next((p for p in ctx.preloads if p.path and p.soname == soname), None)
    if preloaded is None or preloaded.path is None:
        return _versions_unmet(found, ctx, soname)
    # the same file (glibc compares device and inode, and hands the mapped object back) from the same folder is
    # the object the framework gets; through a link in another folder it is that folder's: its $ORIGIN is there
    same = found.shim is not None and os.path.realpath(preloaded.path) == os.path.realpath(found.shim)
    mapped_from = os.path.dirname(os.path.normpath(preloaded.path))
    if same and mapped_from == os.path.dirname(os.path.normpath(found.shim or "")):
        return _versions_unmet(found, ctx, soname)
    by = f"LD_PRELOAD entry {preloaded.entry}" if preloaded.entry else "the process, already"
    bound = Route(consumer, preloaded.path, f"{by} maps {preloaded.path} before {consumer.framework} loads cuDNN: "
                  f"its calls bind to that shim" + (f", not to {found.shim}" if found.shim else "")
                  + (" (the same file, mapped from another folder: glibc hands that object back for either path, "
                     "and its $ORIGIN is the folder it was mapped from)" if same else ""),
                  opened=found.shim, variable="LD_PRELOAD" if preloaded.entry else None, entry=preloaded.entry,
                  survey=found.survey, kind=found.kind,
                  # another file opened by path is mapped anew, whatever answers its name: one that kills the
                  # process still does (fix differential 3-14309: a sitecustomize line's 9.28 shim in the process,
                  # torch's preload by path of the venv's shim, cut to 4096 bytes: SIGBUS)
                  stops=None if same else found.stops,
                  opened_holder=_site_holder(found.shim) if found.stops is not None and not same and found.shim
                  else None)
    return _versions_unmet(bound, ctx, soname)


def _site_holder(path: str) -> tuple[str, str, str] | None:
    """(name, version, site-packages folder) of the installed distribution whose wheel folder holds ``path``."""
    folder = os.path.dirname(path)
    holder, site = _holder_of(folder), wheel_site(folder)
    return (*holder, site) if holder is not None and site is not None else None


def _versions_unmet(found: Route, ctx: Context, soname: str) -> Route:
    """``found``, stopping as the framework starts where the shim it binds to does not define a version one of its
    libraries needs of ``soname`` (DT_VERNEED, `discovery.lacking`): dl-version.c fails the import ("version
    `libcudnn.so.9' not found (required by libtorch_python.so)"; the H200, session 43: another cuDNN library copied
    over the wheel's shim, which torch's preload by path opens and its NEEDED then binds to, the same inode)."""
    if found.shim is None or found.stops is not None:
        return found
    for need in found.consumer.needs:
        info = ctx.elf(need.path) if need.soname == soname and os.path.isfile(need.path) else None
        lacks = lacking(info, soname, found.shim, ctx) if info is not None else ()
        if lacks:
            provider = ctx.elf(found.shim)
            return replace(found, stops=f"{os.path.basename(need.path)} needs version {', '.join(lacks)} of {soname}, "
                           f"which that file (SONAME {provider.soname if provider else 'none'}) does not define: the "
                           f"dynamic linker stops the import (\"version `{lacks[0]}' not found\")")
    return found


def consumer_load(consumer: Consumer, system: str = "linux") -> tuple[SurveyMatch | None, CudnnLoad | None]:
    """The surveyed wheel that answers for ``consumer`` (its release, else the nearest surveyed) and how its wheels
    come to their cuDNN: its own row, with the rows of the surveyed distributions it requires installed beside it
    (the JAX CUDA plugin's PJRT wheel, which holds the loader). (None, None) when its distribution was not
    surveyed."""
    match = nearest(consumer.distribution, consumer.version, system=system)
    if match is None:
        return None, None
    helpers = [found.wheel for name, version in consumer.beside
               if (found := nearest(name, version, system=system)) is not None]
    return match, cudnn_load([match.wheel, *helpers])


def _cuda(consumer: Consumer) -> int | None:
    """The CUDA major of the framework's build: its pins' ``-cuNN`` suffix, else its local version (+cu130)."""
    if consumer.pinned_cuda is not None:
        return consumer.pinned_cuda
    local = consumer.version.partition("+cu")[2]
    return int(local[:-1]) if len(local) >= 3 and local.isdigit() else None


def _loads(path: str, ctx: Context) -> bool:
    return _opening(path, ctx) == "found"


def _opening(path: str, ctx: Context) -> str:
    outcome, _ = linker.opening(path, ctx.linker)
    return str(outcome)


# What a load by path does where it neither loads nor fails (`linker.opening`'s outcome): glibc maps a file cut
# inside a segment and the process dies of SIGBUS; opening a named pipe blocks for ever. Any other failed dlopen
# raises, and the framework's loader goes on.
_STOPS = {"cut-segments": "mapping it kills the process (SIGBUS: the file ends inside a segment)",
          "fifo": "opening it never returns (a named pipe)"}


def _torch(consumer: Consumer, load: CudnnLoad, ctx: Context, site_paths: Sequence[str], soname: str) -> Route:
    cuda, release = _cuda(consumer), _torch_release(consumer.version)

    def first(folder: str, pattern: str) -> str | None:
        return torch_preload(site_paths, folder, pattern, cuda_major=cuda, torch=release, gone=ctx.linker.is_gone)

    # up to 2.13 each preloaded library is required: a missing cuBLAS raises before cuDNN; from 2.14 the preload
    # after libtorch_global_deps loads is best-effort (_preload_cuda_deps(required=False)) and goes on
    missing = next((name for name in ("libcublasLt", "libcublas") if first("cublas", f"{name}.so.*[0-9]") is None),
                   None) if release < (2, 14) else None
    shim = first("cudnn", "libcudnn.so.*[0-9]") if missing is None else None
    outcome = _opening(shim, ctx) if shim is not None else None
    # the glob takes a shim of any major; one of another major is mapped beside, under its own SONAME, and does not
    # answer libtorch_cuda.so's DT_NEEDED (fix differential 3-8516: torch 2.14 maps a PYTHONPATH folder's
    # libcudnn.so.8 and runs on the libcudnn.so.9 its NEEDED finds)
    found = classify(os.path.basename(shim)) if shim is not None else None
    other = found is not None and f"libcudnn.so.{found.major}" != soname
    if shim is not None and not other and (outcome == "found" or outcome in _STOPS):  # loads, or stops the process
        return Route(consumer, shim, "by path: torch/__init__.py _preload_cuda_deps() opens the first "
                     "nvidia/cudnn/lib/libcudnn.so.* on sys.path", stops=_STOPS.get(outcome or ""))
    fell = (f"torch's preload by path stops before cuDNN ({missing}.so.* is on no sys.path entry)" if missing else
            f"torch's preload by path opens {shim}, another major than its {soname}" if other else
            f"torch's preload by path fails on {shim}" if shim else "no nvidia/cudnn/lib on sys.path holds a "
            "libcudnn.so.* for torch's preload by path")
    needed = _from_caller(consumer, load, ctx, soname)
    return Route(consumer, needed.shim, f"{needed.how} ({fell})", error=needed.error, passed=needed.passed,
                 passed_why=needed.passed_why)


def _jax(consumer: Consumer, load: CudnnLoad, ctx: Context, site_paths: Sequence[str], soname: str) -> Route:
    package = _nvidia_cudnn(site_paths)
    shim = os.path.join(package, "lib", soname) if package else None
    outcome = _opening(shim, ctx) if shim is not None and os.path.exists(shim) and not ctx.linker.is_gone(shim) \
        else None
    if shim is not None and (outcome == "found" or outcome in _STOPS):  # where it loads, or stops the process
        return Route(consumer, shim, "by path: the JAX CUDA plugin's _load_nvidia_libraries() opens "
                     "nvidia.cudnn's lib/" + soname, stops=_STOPS.get(outcome or ""))
    why = f"no {soname} in the nvidia.cudnn package" if package else "no nvidia.cudnn package on sys.path"
    caller = _caller_file(consumer, load)
    asker = requester(caller, ctx.cache) if caller else None
    res = linker.resolve(soname, chain(asker) if asker else None, ctx.linker)
    return _by_name(consumer, res, f"XLA dlopens {soname} from {os.path.basename(caller) if caller else 'JAX'}", why)


def _nvidia_cudnn(site_paths: Sequence[str]) -> str | None:
    """The folder ``import nvidia.cudnn`` gives (its ``__path__[0]``, where the JAX plugin opens
    ``lib/libcudnn.so.9``), as the import system finds it (`startup.package`: namespace portions merged, a later
    regular package winning over them)."""
    found = package(site_paths, "nvidia.cudnn")
    return found.folders[0] if found is not None and found.folders else None


def _torch_release(version: str) -> tuple[int, int]:
    """(major, minor) of a torch version ("2.11.0+cu130"); torch's loaders changed at 2.7 and 2.9."""
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (2, 11)


def _first_on_path(consumer: Consumer, load: CudnnLoad, ctx: Context, site_paths: Sequence[str],
                   soname: str) -> Route:
    """A surveyed Python loader by path (cudnn-frontend's ``_dlopen_cudnn()``): the first ``sys.path`` entry holding
    a shim of the major under one of its globs; else what its library that calls cuDNN gets."""
    major = int(soname.rpartition(".")[2])
    for entry in site_paths:
        for found in load.by_path:
            for pattern in found.globs:
                for path in sorted(glob.glob(os.path.join(glob.escape(entry or "."), pattern))):
                    if ctx.linker.is_gone(path):
                        continue
                    lib = classify(os.path.basename(path))
                    if lib is not None and lib.key == "shim" and lib.major == major and _loads(path, ctx):
                        return Route(consumer, path, f"by path: {found.loader.module} {found.loader.function}() "
                                     f"opens the first {pattern} on sys.path")
    fell = f"no {' or '.join(g for f in load.by_path for g in f.globs)} on sys.path"
    if load.caller is None:
        res = linker.resolve(soname, None, ctx.linker)
        return _by_name(consumer, res, f"{consumer.framework} opens {soname} by name", fell)
    return _from_caller(consumer, load, ctx, soname, fell)


def _shim_on_path(site_paths: Sequence[str], major: int, ctx: Context) -> str | None:
    """The first ``nvidia/<folder>/lib`` on ``site_paths`` that holds ``libcudnn.so.<major>`` (not gone in the
    model's world) that the loader can map here, beside every sub-library a framework's calls need (none of them
    gone either: a distribution the repair uninstalls takes them all): a shim of
    another machine, or no ELF, is passed over by any search that reaches it, so its folder is no place to point one
    at (its wheel is put back instead); nor is the JIT wheel's, which ships no ops, cnn or adv, and fails every
    legacy call a framework makes (fix differential 3-6756: torch was pointed at it)."""
    needed = [lib.soname for lib in GENERATIONS[major].sublibraries if lib.required] if major in GENERATIONS else []
    for entry in site_paths:
        for shim in sorted(glob.glob(os.path.join(glob.escape(entry or "."), "nvidia", "*", "lib",
                                                  f"libcudnn.so.{major}"))):
            folder = os.path.dirname(shim)
            if not ctx.linker.is_gone(shim) and os.path.isfile(shim) and ctx.passed_over(shim) is None and all(
                    os.path.exists(path) and not ctx.linker.is_gone(path)
                    for path in (os.path.join(folder, name) for name in needed)):
                return folder
    return None


def _holder_of(folder: str) -> tuple[str, str] | None:
    """(name, version) of the installed distribution whose wheel folder ``folder`` is; None for no wheel's."""
    site = wheel_site(folder)
    holder = distribution_for(folder, cudnn_distributions((site,))) if site else None
    return (holder.name, holder.version) if holder is not None else None


def _fell_past(load: CudnnLoad | None, shim: str, site_paths: Sequence[str]) -> bool:
    """Whether a loader by path found ``shim`` only after its search of sys.path found none: it lies in no wheel
    folder there (a copy on LD_LIBRARY_PATH its library's NEEDED met instead); a wheel folder closed to this user,
    which the search passed over, comes first once open."""
    return load is not None and load.kind == "by-path" and entry_holding(shim, site_paths) is None


def _closed_on_path(site_paths: Sequence[str], major: int, access: Access | None = None) -> Closed | None:
    """The first wheel folder (``nvidia/<name>/lib``) on ``site_paths`` whose distribution's RECORD lists
    ``libcudnn.so.<major>`` there and that this user cannot reach (the folder, or one above it inside the site, not
    searchable): a search by path passes over it, so the framework finds none, whatever the folder holds."""
    access = access or Access()
    for entry in site_paths:
        dists: tuple[Distribution, ...] | None = None  # the entry's RECORDs, read once, where a folder is closed
        for folder in wheel_lib_folders((entry,)):
            shim = os.path.join(folder, f"libcudnn.so.{major}")
            stop = access.unreachable(shim)
            if stop is None or not stop.folder or not stop.path.startswith(os.path.join(entry or ".", "nvidia")):
                continue
            dists = cudnn_distributions((entry,)) if dists is None else dists
            holder = next((d for d in dists if shim in d.files), None)
            if holder is not None:
                return Closed(stop, access.user, holder)
    return None


def _caller_file(consumer: Consumer, load: CudnnLoad) -> str | None:
    """The installed file of the library that calls cuDNN, where it is installed."""
    if load.caller is None:
        return None
    path = os.path.join(consumer.site, load.caller.path)
    return path if os.path.isfile(path) else None


def _from_caller(consumer: Consumer, load: CudnnLoad, ctx: Context, soname: str, why: str | None = None) -> Route:
    """What the library that calls cuDNN gets: its NEEDED (as installed: the consumer's own reading of its files,
    else the surveyed name), searched from it at load time; a copy its wheel bundles; else its dlopen by name when
    it first needs cuDNN, searched from it at that moment (what the process maps already answers first)."""
    caller = _caller_file(consumer, load)
    need = next((n for n in consumer.needs if caller and os.path.realpath(n.path) == os.path.realpath(caller)), None)
    if need is None and load.needed is not None:
        need = next((n for n in consumer.needs if n.soname == load.needed), None) or \
            (Need(load.needed, caller) if caller else None)
    asking = need.path if need else caller
    asker = requester(asking, ctx.cache) if asking else None
    # the objects that NEED the caller, up to the one Python opens: glibc searches their DT_RPATH after the caller's
    # own when it has no RUNPATH (CTranslate2's libctranslate2 has none: its bundled cuDNN is found through the
    # RPATH of the extension module that NEEDs it, _ext's $ORIGIN/../ctranslate2.libs)
    loaders = [requester(path, ctx.cache) for path in _loaded_by(consumer, load)] if asker is not None else []
    res = linker.resolve(need.soname if need else load.needed or soname, chain(asker, *loaders) if asker else None,
                         ctx.linker)
    who = os.path.basename(asking or (load.caller.path if load.caller else consumer.framework))
    named = need.soname if need else load.needed
    if named is not None and load.bundled is not None:
        what = f"{who} NEEDs {named}, a cuDNN its wheel bundles"
    elif named is not None:
        what = f"{who} NEEDs {named}"
    else:
        what = f"{who} dlopens {soname} by name when it first needs cuDNN"
    return _by_name(consumer, res, what, why, bundled=load.bundled is not None)


def _loaded_by(consumer: Consumer, load: CudnnLoad) -> list[str]:
    """The installed files of the surveyed libraries that NEED the caller, each NEEDed by the next (glibc's
    ``l_loader`` links, up to the object Python opens); an extension module surveyed for another Python is its
    namesake built for this one (``_ext.cpython-312-...so`` for ``_ext.cpython-311-...so``)."""
    found: list[str] = []
    current = load.caller
    while current is not None and current.soname and len(found) < 8:
        parent = next((lib for row in load.rows for lib in row.libraries
                       if lib.format == "elf" and current.soname in lib.needed), None)
        path = _installed(consumer, parent.path) if parent is not None else None
        if parent is None or path is None or path in found:
            break
        found.append(path)
        current = parent
    return found


def _installed(consumer: Consumer, surveyed: str) -> str | None:
    """The installed file of a surveyed library (its path under site-packages), or its namesake for this Python."""
    path = os.path.join(consumer.site, surveyed)
    if os.path.isfile(path):
        return path
    tagged = re.sub(r"\.cpython-\d+-", ".cpython-*-", surveyed)
    if tagged == surveyed:
        return None
    return next(iter(sorted(glob.glob(os.path.join(glob.escape(consumer.site), tagged)))), None)


def _from_files(consumer: Consumer, ctx: Context, site_paths: Sequence[str], soname: str) -> Route:
    """A framework no surveyed wheel answers for: the library of it that NEEDs a cuDNN, searched from it."""
    need = next((n for n in consumer.needs if n.soname == soname), consumer.needs[0] if consumer.needs else None)
    asker = requester(need.path, ctx.cache) if need else None
    res = linker.resolve(need.soname if need else soname, chain(asker) if asker else None, ctx.linker)
    what = f"{os.path.basename(need.path)} NEEDs {need.soname}" if need else f"{consumer.framework} opens {soname}"
    return _by_name(consumer, res, what, "not surveyed")


def _by_name(consumer: Consumer, res: linker.Resolution, what: str, why: str | None, bundled: bool = False) -> Route:
    passed, passed_why = _passed(res)
    how = f"{what}: found via {res.rule}" + (f", past {passed} (its {res.name} {passed_why})" if passed else "") + (
        f" ({why})" if why else "")
    if res.path is None or res.error is not None:
        return Route(consumer, res.path if res.error else None, how, error=res.error or f"{res.name}: not found",
                     passed=passed, passed_why=passed_why)
    if classify(os.path.basename(res.path)) is None and res.rule != "already-loaded" and not bundled:
        return Route(consumer, None, how, error=f"{res.path} is not a cuDNN shim", passed=passed,
                     passed_why=passed_why)
    return Route(consumer, res.path, how, passed=passed, passed_why=passed_why)


# What the search does with a file it tries and goes past (`linker.Outcome`), in words
_PASSED_OVER = {"absent": "is missing, beside other cuDNN files of its major", "broken-symlink": "is a dangling link",
                "no-access": "cannot be opened by this user", "wrong-class": "is a 32-bit file",
                "wrong-machine": "is built for another architecture", "symlink-loop": "is a symbolic link loop",
                "open-error": "cannot be opened"}


def _passed(res: linker.Resolution) -> tuple[str | None, str]:
    """The first folder the search for a shim tried, before the file it picked, whose shim it went past (a file
    it skips, or none there beside other cuDNN files of its major: the install the shim was taken from), and
    why."""
    found = classify(res.name)
    if found is None:
        return None, ""
    listed: set[str] = set()
    for attempt in res.trail[:_PASSED_LOOKS]:
        if attempt.path == res.path:
            break
        why = _PASSED_OVER.get(attempt.outcome)
        folder = os.path.dirname(attempt.path)
        if why is None:
            continue
        if attempt.outcome == "absent":
            if folder in listed:
                continue
            listed.add(folder)
            if not _holds_others(folder, res.name, found.major):
                continue
        return os.path.normpath(folder), why
    return None, ""


# How many of the search's first candidates `_passed` looks at: the folders a framework's own RPATH names come first;
# an LD_LIBRARY_PATH of thousands of entries is not listed folder by folder
_PASSED_LOOKS = 64


def _holds_others(folder: str, name: str, major: int) -> bool:
    return any(os.path.basename(path) != name for path in scan(folder).get(major, ()))


# The surveyed Python loaders by path replayed as measured (module docstring), by the function the survey names;
# any other is `_first_on_path`.
_REPLAYS = {"_preload_cuda_deps": _torch, "_load_global_deps": _torch, "_load_nvidia_libraries": _jax}
