"""The environment a pip set would make, before it is made: whose bytes each file of the new site-packages holds,
and the cuDNN each framework of the set would get there. Facts only; `judge.before` says what they mean.

Files: pip installs the set one distribution after the other in its installation order (`pipset`); each writes
the files its RECORD lists, over whatever an earlier one wrote (pip's wheel installer replaces an existing file,
``src/pip/_internal/operations/install/wheel.py``: ``replace(...)`` of the temporary file over the target), so
the last writer's bytes stay. Two writers with the same digest change nothing; with different digests the
earlier one's bytes are gone.

Frameworks: each one's loader is read from its surveyed wheel (`survey`; the nearest surveyed release where the
exact one was not, and the answer says so), applied to the new site-packages and, for what lies outside it, to
this machine's linker (`linker`: ``LD_LIBRARY_PATH``, ``ld.so.cache``, the default folders):

- a Python loader that opens ``nvidia/<folder>/lib/<name>`` by path, run at import or from the entry point the
  framework calls itself (PyTorch's ``_preload_cuda_deps``; the JAX CUDA plugin's ``_load_nvidia_libraries``,
  from ``initialize()``, which JAX calls on each plugin it discovers: ``jax/_src/xla_bridge.py``);
- else a library that NEEDs a cuDNN, searched as glibc searches from it: its DT_RPATH, ``LD_LIBRARY_PATH``, its
  DT_RUNPATH, the cache, the default folders; a cuDNN the wheel bundles under another name (auditwheel's
  ``libcudnn-<hash>.so.8.9.7``) is that file, and its sub-libraries are searched from it;
- else a lazy ``dlopen`` by name (``libcudnn.so.<major>``) from the library that calls cuDNN: the one among
  those with CUDA code whose strings name cuDNN most (ONNX Runtime's CUDA provider, TensorFlow's framework
  library), with its own DT_RPATH or DT_RUNPATH.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.resolve import linker
from cudnnload.resolve.catalog import Release, classify, generation, parse_release
from cudnnload.resolve.consumers import SOURCES, Consumer, Need, stated_consumer
from cudnnload.resolve.discovery import Context, release_near
from cudnnload.resolve.ldcache import LdCache
from cudnnload.resolve.pipset import PipSet, Planned
from cudnnload.resolve.survey import CudnnLoad, SurveyMatch, cudnn_load, decides_cudnn, nearest
from cudnnload.resolve.wheelfacts import CudnnBuild, WheelFacts

# The distributions whose files decide a cuDNN (issue 34): cuDNN itself, the cuBLAS and NVRTC it opens.
CUDA_LIBRARIES = ("nvidia-cudnn-", "nvidia-cublas", "nvidia-cuda-nvrtc")
_FULL_VERSION = re.compile(r"\.so\.(\d+\.\d+\.\d+)$")


@dataclass(frozen=True)
class Overwrite:
    """Files two distributions of the set both write, with different bytes: ``last`` is installed later."""

    first: str  # "nvidia-cudnn-cu13 9.24.0.43"
    last: str
    paths: tuple[str, ...]  # relative to site-packages
    same: int  # files both write with the same bytes (harmless)


@dataclass(frozen=True)
class Layout:
    """The new site-packages, as far as the distributions that matter write it."""

    site: str  # absolute: the interpreter's purelib
    owners: Mapping[str, str]  # relative path -> the distribution (name) whose bytes stay
    labels: Mapping[str, str]  # distribution name -> "name version"
    builds: Mapping[str, CudnnBuild]  # cuDNN distribution name -> its release and CUDA
    overwrites: tuple[Overwrite, ...]

    def relative(self, path: str) -> str | None:
        """``path`` (absolute) relative to the site, or None when it lies outside."""
        rel = posixpath.relpath(posixpath.normpath(path), self.site)
        return None if rel.startswith("..") else rel

    def holds(self, path: str) -> bool:
        rel = self.relative(path)
        return rel is not None and rel in self.owners

    def listing(self, folder: str) -> tuple[str, ...]:
        """Names of the files written directly in ``folder`` (absolute)."""
        rel = self.relative(folder)
        if rel is None:
            return ()
        prefix = "" if rel == "." else rel + "/"
        return tuple(sorted(p[len(prefix):] for p in self.owners if p.startswith(prefix) and "/" not in
                            p[len(prefix):]))

    @property
    def staying(self) -> tuple[tuple[str, CudnnBuild], ...]:
        """The cuDNN builds whose library stays on disk (its file is not overwritten), by distribution label."""
        return tuple((self.labels[name], build) for name, build in sorted(self.builds.items())
                     if self.owners.get(build.library) == name)

    def release_of(self, name: str) -> Release | None:
        """A cuDNN distribution's release: read from its library, else its version's first three parts."""
        build = self.builds.get(name)
        if build is not None and build.release is not None:
            return build.release
        try:
            return parse_release(".".join(self.labels[name].split(" ", 1)[1].split(".")[:3]))
        except (KeyError, IndexError, ValueError):
            return None


def matters(planned: Planned, system: str = "linux") -> bool:
    return planned.name.startswith(CUDA_LIBRARIES) or framework_row(planned, system) is not None or \
        planned.name in SOURCES


def framework_row(planned: Planned, system: str = "linux") -> SurveyMatch | None:
    """The surveyed wheel that answers for ``planned`` when it is one that decides a cuDNN (loads one, NEEDs or
    names one, pins one or states its build), else None."""
    match = nearest(planned.name, planned.version, system=system)
    if match is None:
        return None
    return match if decides_cudnn(match.wheel) else None


def layout(pip_set: PipSet, facts: Mapping[str, WheelFacts], site: str) -> Layout:
    """Every file the distributions of ``facts`` write, with the one whose bytes stay (pip's order)."""
    writers: dict[str, list[tuple[str, str | None]]] = {}
    for planned in pip_set.planned:
        known = facts.get(planned.name)
        if known is None:
            continue
        for entry in known.record:
            path = posixpath.normpath(entry.path)
            if not path.startswith("..") and not path.endswith(".dist-info/RECORD"):
                writers.setdefault(path, []).append((planned.name, entry.digest))
    labels = {p.name: p.label for p in pip_set.planned}
    pairs: dict[tuple[str, str], tuple[list[str], int]] = {}
    for path, wrote in writers.items():
        for index, (first, digest) in enumerate(wrote):
            for later, other in wrote[index + 1:]:
                paths, same = pairs.get((first, later), ([], 0))
                if digest is not None and digest == other:
                    pairs[(first, later)] = (paths, same + 1)
                else:
                    pairs[(first, later)] = (paths + [path], same)
    overwrites = tuple(Overwrite(labels[a], labels[b], tuple(sorted(paths)), same)
                       for (a, b), (paths, same) in pairs.items() if paths)
    builds = {name: known.cudnn for name, known in facts.items() if known.cudnn is not None}
    return Layout(site, {path: wrote[-1][0] for path, wrote in writers.items()}, labels, builds, overwrites)


# --- what each framework would get ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """Where a name leads before the install: a file of the new site-packages or of this machine."""

    path: str | None
    rule: str  # "by-path", "rpath", "ld-library-path", "runpath", "ld-cache", "default-dirs", "not-found"
    planned: bool  # a file of the new site-packages (else of this machine, or nothing)


@dataclass(frozen=True)
class CudnnSeen:
    """The cuDNN a framework would call: its shim, whose files it gets, and what is missing around it."""

    shim: str
    rule: str
    distribution: str | None  # the wheel whose graph (ops_infer) it gets; None: a file of this machine
    release: Release | None  # what its cudnnGetVersion would return
    cudart_version: int | None  # the CUDA runtime inside it (cudnnGetCudartVersion)
    bundled: bool  # a cuDNN the framework's own wheel ships under another name
    sublibraries: tuple[tuple[str, Found], ...]  # (file name, where it comes from)
    other_releases: tuple[tuple[str, str, str], ...]  # (file, its distribution, its release) not of ``release``
    cublaslt: tuple[str, Found] | None  # the cuBLASLt its engines open, where cuDNN's build names one

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.shim)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(name for name, found in self.sublibraries if found.path is None)

    @property
    def elsewhere(self) -> tuple[tuple[str, Found], ...]:
        return tuple((name, found) for name, found in self.sublibraries
                     if found.path is not None and posixpath.dirname(found.path) != self.folder)


@dataclass(frozen=True)
class Way:
    """How one framework of the set would come to its cuDNN."""

    consumer: Consumer
    survey: SurveyMatch | None  # the surveyed wheel read for its loader (None: not surveyed)
    cuda_major: int | None  # the CUDA major of its own build
    how: str  # in words
    cudnn: CudnnSeen | None
    error: str | None  # why it finds none
    installed: tuple[tuple[int, str], ...] = ()  # (major, folder) of each cuDNN shim the set writes

    def installed_folder(self, major: int) -> str | None:
        return next((folder for shim_major, folder in self.installed if shim_major == major), None)


def ways(pip_set: PipSet, planned_layout: Layout, ctx: Context, system: str = "linux") -> tuple[Way, ...]:
    """Each framework of the set and the cuDNN its loader would give it in the new site-packages (``ctx``: this
    machine's linker, for what lies outside them)."""
    versions = {p.name: p.version for p in pip_set.planned}
    environment = dict(pip_set.environment)
    by_name = {p.name: p for p in pip_set.planned}
    rows = {p.name: match for p in pip_set.planned if (match := framework_row(p, system)) is not None}
    folded = {dep for name in rows.keys() | SOURCES.keys() if name in by_name
              for dep in _requirements(by_name[name]) if dep in rows and dep not in SOURCES and dep != name}
    found = []
    for planned in pip_set.planned:
        if planned.name in folded or (planned.name not in rows and planned.name not in SOURCES):
            continue
        match = rows.get(planned.name)
        helpers = [rows[dep] for dep in _requirements(planned) if dep in folded]
        way = _way(planned, match, helpers, planned_layout, ctx, versions, environment)
        if way is None:
            continue
        found.append(replace(way, installed=_shim_folders(planned_layout)))
    return tuple(found)


def _shim_folders(planned_layout: Layout) -> tuple[tuple[int, str], ...]:
    """(major, folder) of each cuDNN shim the new site-packages holds (a wheel's ``lib``)."""
    return tuple((lib.major, posixpath.join(planned_layout.site, posixpath.dirname(path)))
                 for path in sorted(planned_layout.owners)
                 if (lib := classify(posixpath.basename(path))) is not None and lib.key == "shim")


def _requirements(planned: Planned) -> list[str]:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = []
    for text in planned.requires:
        try:
            names.append(str(canonicalize_name(Requirement(text).name)))
        except InvalidRequirement:
            continue
    return names


def _way(planned: Planned, match: SurveyMatch | None, helpers: Sequence[SurveyMatch], planned_layout: Layout,
         ctx: Context, versions: Mapping[str, str], environment: Mapping[str, str]) -> Way | None:
    """The framework's way to its cuDNN; None for a distribution of a framework that was not surveyed and pins
    no cuDNN (jaxlib beside a CUDA plugin: the plugin is the one that loads it)."""
    site = planned_layout.site
    source = SOURCES.get(planned.name)
    framework = source.framework if source is not None else planned.name
    row = match.wheel if match is not None else None
    needs = tuple(Need(soname, posixpath.join(site, lib.path)) for lib in (row.libraries if row else ())
                  for soname in lib.cudnn_needed if classify(soname) is not None)
    consumer = stated_consumer(framework, planned.name, planned.version, site, planned.requires, versions, needs,
                               environment=environment, stated_build=row.build_cudnn if row else None,
                               stated_from=f"{row.build_cudnn_from} in its wheel" if row and row.build_cudnn_from
                               else "")
    if row is None and not consumer.pins:
        return None
    if row is None:
        return Way(consumer, None, None, "not surveyed", None, f"{planned.label} is a release of no surveyed wheel: "
                   "its loader is not known")
    cuda = row.cuda_major or next((h.wheel.cuda_major for h in helpers if h.wheel.cuda_major), None)
    load = cudnn_load([row, *(h.wheel for h in helpers)])
    loaded = _by_path(load, planned_layout, consumer.cudnn_major)
    if loaded is not None:
        how, shim = loaded
        return Way(consumer, match, cuda, how, _seen(shim, "by-path", planned_layout, ctx), None)
    caller = load.caller
    if caller is None:
        return Way(consumer, match, cuda, "no library of its wheel calls cuDNN", None, None)
    asker = posixpath.join(site, caller.path)
    needed, bundled = load.needed, load.bundled
    if needed is not None and bundled is not None:
        shim = posixpath.join(site, bundled.path)
        return Way(consumer, match, cuda, f"{posixpath.basename(caller.path)} NEEDs {needed}, a cuDNN its wheel "
                   "bundles", _seen(shim, "bundled", planned_layout, ctx, bundled=(bundled.rpath, bundled.runpath)),
                   None)
    soname = needed or f"libcudnn.so.{consumer.cudnn_major}"
    result = _search(soname, asker, caller.rpath, caller.runpath, planned_layout, ctx)
    how = f"{posixpath.basename(caller.path)} NEEDs {soname}" if needed else \
        f"{posixpath.basename(caller.path)} dlopens {soname} by name when it first needs it"
    if result.path is None:
        return Way(consumer, match, cuda, how, None, f"no {soname} on its search path (its RPATH or RUNPATH, "
                   "LD_LIBRARY_PATH, ld.so.cache, the default folders)")
    return Way(consumer, match, cuda, f"{how}: found via {result.rule}", _seen(result.path, result.rule,
                                                                              planned_layout, ctx), None)


def _by_path(load: CudnnLoad, planned_layout: Layout, major: int) -> tuple[str, str] | None:
    """A Python loader that opens a cuDNN by path before cuDNN is called (`survey.CudnnLoad`): the first
    ``sys.path`` entry (the new site-packages) holding one of its globs."""
    for found in load.by_path:
        for pattern in found.globs:
            place = posixpath.join(planned_layout.site, posixpath.dirname(pattern))
            name = posixpath.basename(pattern)
            hits = [n for n in planned_layout.listing(place) if fnmatch.fnmatchcase(n, name)
                    and (lib := classify(n)) is not None and lib.key == "shim" and lib.major == major]
            if hits:
                return (f"by path: {found.loader.module} {found.loader.function}() opens {pattern}",
                        posixpath.join(place, hits[0]))
    return None


def _search(name: str, asker: str, rpath: tuple[str, ...], runpath: tuple[str, ...], planned_layout: Layout,
            ctx: Context) -> Found:
    """glibc's order from ``asker`` (its DT_RPATH, LD_LIBRARY_PATH, its DT_RUNPATH, ld.so.cache, the default
    folders), with the folders inside the new site-packages read from the layout and the rest from this
    machine (`linker`, its rules; dl-load.c _dl_map_object)."""
    owner = linker.Requester(asker, rpath, runpath)
    defaults = ctx.linker.defaults
    if not runpath:
        hit = _in_folders(name, linker.expand_all(rpath, owner, defaults), "rpath", planned_layout)
        if hit is not None:
            return hit
    env = ctx.linker
    library_path = replace(env, ld_cache=LdCache("", ""), defaults=replace(defaults, default_dirs=()))
    first = linker.resolve(name, None, library_path)
    if first.found:
        return Found(first.path, first.rule, False)
    hit = _in_folders(name, linker.expand_all(runpath, owner, defaults), "runpath", planned_layout)
    if hit is not None:
        return hit
    last = linker.resolve(name, None, replace(env, ld_library_path=(), executable=None))
    return Found(last.path, last.rule, False) if last.found else Found(None, "not-found", False)


def _in_folders(name: str, folders: Iterable[str], rule: str, planned_layout: Layout) -> Found | None:
    for folder in folders:
        path = posixpath.normpath(posixpath.join(folder, name))
        if planned_layout.relative(path) is not None:
            if planned_layout.holds(path):
                return Found(path, rule, True)
        elif os.path.isfile(path):
            return Found(path, rule, False)
    return None


def _seen(shim: str, rule: str, planned_layout: Layout, ctx: Context,
          bundled: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> CudnnSeen:
    """The cuDNN behind ``shim``: the release its graph (ops_infer) gives, the files of other releases beside it,
    each sub-library the shim opens and where it comes from (its own DT_RPATH or DT_RUNPATH: the wheel's, as read;
    ``bundled``: the framework wheel's copy, as surveyed; this machine's file's), and the cuBLASLt its engines
    open."""
    planned = planned_layout.holds(shim)
    match = _FULL_VERSION.search(shim)
    lib = classify(posixpath.basename(shim))
    major = lib.major if lib else int(match.group(1).split(".")[0]) if match else 9
    gen = generation(major)
    folder = posixpath.dirname(shim)

    def owner(name: str) -> str | None:
        return planned_layout.owners.get(planned_layout.relative(posixpath.join(folder, name)) or "")

    graph_key = "graph" if major >= 9 else "ops_infer"
    graph_name = next(s.soname for s in gen.libraries if s.key == graph_key) if major >= 8 else None
    graph_owner = owner(graph_name) if planned and graph_name and bundled is None else None
    build = planned_layout.builds.get(graph_owner or "") if graph_owner else None
    shim_build = planned_layout.builds.get(owner(posixpath.basename(shim)) or "") if planned else None
    elf = ctx.elf(shim) if not planned else None
    rpath, runpath = bundled or ((shim_build.shim_rpath, shim_build.shim_runpath) if shim_build else
                                 (elf.rpath, elf.runpath) if elf else ((), ()))
    sublibraries = tuple((sub.soname, _search(sub.soname, shim, rpath, runpath, planned_layout, ctx))
                         for sub in gen.sublibraries if sub.required)
    if bundled is not None:
        release, cudart = (parse_release(match.group(1)) if match else None), None
    elif planned:
        release = planned_layout.release_of(graph_owner) if graph_owner else None
        cudart = build.cudart_version if build else None
    else:
        graph_path = next((found.path for name, found in sublibraries if name == graph_name and found.path), shim)
        release = release_near(graph_path, ctx.cache) if graph_path else None
        info = ctx.elf(graph_path) if graph_path else None
        cudart = info.cudart_version if info else None
        if release is None and match:
            release = parse_release(match.group(1))
    others = tuple((name, planned_layout.labels[who], str(other))
                   for name in planned_layout.listing(folder) if classify(name) is not None
                   and (who := owner(name)) is not None and who != graph_owner
                   and (other := planned_layout.release_of(who)) is not None and other != release) if planned else ()
    cublaslt = _cublaslt(folder, graph_name or "", build, planned_layout, ctx) if build else None
    return CudnnSeen(shim, rule, planned_layout.labels.get(graph_owner) if graph_owner else None, release, cudart,
                     bundled is not None, sublibraries, others, cublaslt)


def _cublaslt(folder: str, graph: str, build: CudnnBuild, planned_layout: Layout,
              ctx: Context) -> tuple[str, Found] | None:
    """The cuBLASLt a wheel's engine library opens (``libcublasLt.so.<its CUDA major>``, cudnn-facts §1.1), searched
    from it with the RUNPATH the wheel's libraries carry (``$ORIGIN/../../cublas/lib``; cu13 adds
    ``$ORIGIN/../../cu13/lib``)."""
    if build.cudart_version is None:
        return None
    soname = f"libcublasLt.so.{build.cudart_version // 1000}"
    return soname, _search(soname, posixpath.join(folder, graph), (), build.runpath, planned_layout, ctx)
