"""Every cuDNN on the machine, grouped into installs, each with a verdict and its reasons.

Takes folders from ``sources``, facts about each file from ``elf`` (through the
on-disk memo) and search answers from ``linker``; adds the cuDNN semantics
from ``catalog``: which sub-libraries an install must have, which file the
shim's own ``dlopen`` would get for each, and whether they agree.
"""

from __future__ import annotations

import errno
import os
import platform
import re
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.errors import ElfError, UsageError
from cudnnload.files import NotRegularFile, path_problem, read_regular
from cudnnload.findings import ERROR, INFO, WARNING, Finding
from cudnnload.resolve import linker
from cudnnload.resolve.catalog import (
    DEPENDENCY_SOURCES,
    GENERATIONS,
    Generation,
    Release,
    SubLibrary,
    classify,
    generation,
    parse_release,
)
from cudnnload.resolve.consequences import (
    HANGS,
    KILLS,
    UNLOADABLE,
    Expectation,
    Load,
    Planned,
    Prediction,
    plan_loads,
    predict,
)
from cudnnload.resolve.elf import ElfInfo, max_version
from cudnnload.resolve.elfcache import ElfCache, cache_file, linker_defaults
from cudnnload.resolve.policy import install_findings, search_path_findings
from cudnnload.resolve.sources import Distribution, Origin, SearchContext, cudnn_distributions, search

# Machine this Python runs on, as pyelftools names e_machine.
HOST_MACHINES = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64", "ppc64le": "EM_PPC64"}


@dataclass(frozen=True)
class Candidate:
    """One cuDNN file found on disk."""

    path: str  # as found (symlinks not resolved)
    real_path: str | None  # None for a broken symlink or a loop
    library: str | None  # catalog key: "shim", "ops", "cnn_infer", ...
    elf: ElfInfo | None
    findings: tuple[Finding, ...]

    @property
    def usable(self) -> bool:
        return self.elf is not None and not any(f.severity == ERROR for f in self.findings)


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


@dataclass(frozen=True)
class Install:
    """One folder holding one cuDNN generation."""

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
    findings: tuple[Finding, ...]
    # What an application calling cuDNN would see, call by call (consequences.predict), on a
    # machine with a GPU when libcuda.so.1 was found, else without one.
    expected: tuple[Expectation, ...] = ()

    @property
    def healthy(self) -> bool:
        return not any(f.severity == ERROR for f in self.all_findings)

    @property
    def all_findings(self) -> tuple[Finding, ...]:
        return self.findings + tuple(f for c in self.files for f in c.findings)

    def file(self, key: str) -> Candidate | None:
        return next((c for c in self.files if c.library == key), None)


@dataclass(frozen=True)
class Host:
    machine: str
    glibc: tuple[int, ...] | None
    libstdcxx: str | None  # path of the libstdc++.so.6 that would load
    glibcxx: tuple[int, ...] | None
    cxxabi: tuple[int, ...] | None


@dataclass(frozen=True)
class Inventory:
    host: Host
    installs: tuple[Install, ...]
    findings: tuple[Finding, ...]  # not tied to one install: RECORD conflicts, bad paths
    distributions: tuple[Distribution, ...] = field(default=())

    @property
    def healthy(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings) and all(i.healthy for i in self.installs)


# --- host -----------------------------------------------------------------

def host_facts(env: linker.LinkerEnv, cache: ElfCache) -> Host:
    version = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    glibc = max_version([version.replace(" ", "_")]) if version else None
    stdcxx = linker.resolve("libstdc++.so.6", None, env).path
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
    )


# --- one file ---------------------------------------------------------------

def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def inspect_file(path: str, cache: ElfCache, host: Host | None = None) -> Candidate:
    """One file's candidate record; problems become findings, never exceptions."""
    lib = classify(os.path.basename(path))
    key = lib.key if lib else None
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Candidate(path, None, key, None, (Finding(
                "symlink-loop", ERROR, "symbolic link loop", path, "remove the looping link"),))
        target = os.readlink(path) if os.path.islink(path) else None
        code, message = ("broken-symlink", f"symbolic link to {target}, which does not exist") if target \
            else ("missing-file", exc.strerror or "does not exist")
        return Candidate(path, None, key, None, (Finding(code, ERROR, message, path,
                                                         "reinstall the package that owns it"),))
    try:
        info = cache.inspect(real)
    except ElfError as exc:
        if exc.reason.startswith("not a regular file"):
            return Candidate(path, real, key, None, (Finding(
                "not-a-regular-file", ERROR, exc.reason + (f" ({real})" if real != path else ""), path,
                "remove it: a library is a regular file (glibc's dlopen of a FIFO blocks for ever, of a device "
                "fails)"),))
        code = "empty-file" if exc.reason.startswith("empty file") else "truncated" if "truncated" in exc.reason \
            else "not-elf" if exc.reason == "not an ELF file" else "unreadable" if "ermission" in exc.reason \
            else "damaged-elf"
        return Candidate(path, real, key, None, (Finding(
            code, ERROR, exc.reason, path, "reinstall the package that owns it (pip install --force-reinstall)"),))
    except OSError as exc:
        return Candidate(path, real, key, None, (Finding("unreadable", ERROR, exc.strerror or str(exc), path),))
    return Candidate(path, real, key, info, tuple(_file_findings(path, lib, info, host)))


def _file_findings(path: str, lib: SubLibrary | None, info: ElfInfo, host: Host | None) -> Iterable[Finding]:
    if host is not None and (info.elf_class != 64 or info.machine != host.machine):
        yield Finding("foreign-elf", ERROR,
                      f"ELF{info.elf_class} for {info.machine}; this machine needs ELF64 for {host.machine}", path,
                      "install the cuDNN build for this machine's architecture")
        return
    if lib and info.soname and info.soname != lib.soname:
        yield Finding("soname-mismatch", WARNING, f"SONAME is {info.soname}, expected {lib.soname}", path)
    if host is None:
        return
    for prefix, have, what in (("GLIBC_", host.glibc, "glibc"), ("GLIBCXX_", host.glibcxx, "libstdc++"),
                               ("CXXABI_", host.cxxabi, "libstdc++ (C++ ABI)")):
        need = info.max_needed(prefix)
        if need and have and need > have:
            code = "glibc-too-old" if prefix == "GLIBC_" else "libstdcxx-too-old"
            yield Finding(code, ERROR, f"needs {prefix}{_dotted(need)}, this machine's {what} "
                          f"provides {prefix}{_dotted(have)}", path,
                          "use an older cuDNN release or a newer OS image (glibc >= 2.27 for cuDNN 9.28)"
                          if prefix == "GLIBC_" else "install a newer libstdc++ (GCC >= 7) or conda's libstdcxx-ng")


# --- one install --------------------------------------------------------------

_FULL_VERSION = re.compile(r"\.so\.(\d+\.\d+\.\d+)$")


def _scan(folder: str) -> dict[int, list[str]]:
    """cuDNN files in one folder, by generation major. Unknown libcudnn names are kept under 0."""
    found: dict[int, list[str]] = {}
    for name, path, is_link in _entries(folder):
        if not name.startswith("libcudnn") or ".so" not in name:
            continue
        lib = classify(name)
        if lib is None and is_link:
            # libcudnn_ops.so -> libcudnn_ops.so.9: a development link (apt's libcudnn9-dev): a
            # name for a file this scan sees anyway, not a library of its own
            try:
                target = os.path.normpath(os.path.join(folder, os.readlink(path)))
            except OSError:
                target = ""
            if os.path.dirname(target) == os.path.normpath(folder) and classify(os.path.basename(target)):
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


def _release_of(
    files: Sequence[Candidate], folder: str, major: int, dist: Distribution | None, cache: ElfCache | None = None
) -> tuple[Release | None, str | None]:
    """The install's release, from the most to the least direct evidence: its wheel's metadata,
    an exported version constant, a fully versioned file name, then a ``cudnn_version.h`` that
    belongs to the folder (``../include``; the system headers only for a system library folder)."""
    if dist is not None:
        try:
            return parse_release(dist.version), f"{dist.name} {dist.version} metadata"
        except ValueError:
            pass
    constants = [cand for cand in files if cand.elf and cand.elf.release]
    if constants:
        # the release most of the folder's version constants name: one stray sub-library of another
        # release (graph included) is then the mixed one, not the rest of the folder
        counts = Counter(cand.elf.release for cand in constants if cand.elf)
        best = max(counts, key=lambda release: counts[release])
        cand = next(c for c in constants if c.elf and c.elf.release == best)
        return best, f"{cand.elf.release_symbol if cand.elf else ''} in {os.path.basename(cand.path)}"
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
    if linked is not None and linked.real_path and cache is not None:
        release = release_near(linked.real_path, cache)
        if release is not None and release.major == major:
            return release, f"the folder {os.path.dirname(linked.real_path)} the shim links to"
    return None, None


_SYSTEM_LIBRARY_FOLDERS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                           "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")


def _header_folders(folder: str) -> tuple[str, ...]:
    own = os.path.normpath(os.path.join(folder, "..", "include"))
    if os.path.normpath(folder) in _SYSTEM_LIBRARY_FOLDERS:  # apt/dnf put the headers here
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
    if dist is not None:
        match = re.search(r"-cu(\d+)$", dist.name)
        if match:
            return int(match.group(1))
    for cand in files:
        if cand.elf and cand.elf.cudart_version:  # the CUDA it was built with (graph, ops_infer, a 7.x shim)
            return cand.elf.cudart_version // 1000
    for cand in files:
        if cand.elf and any(p.endswith("/cu13/lib") for p in cand.elf.runpath):
            return 13
    return None


def _distribution_for(folder: str, dists: Sequence[Distribution]) -> Distribution | None:
    real = os.path.realpath(folder)
    return next((d for d in dists if any(os.path.realpath(f) == real for f in d.lib_folders)), None)


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
    return found and replace(found, origin=os.path.dirname(os.path.realpath(program)))


def _chain(*links: linker.Requester | None) -> linker.Chain:
    return linker.Chain(tuple(link for link in links if link is not None))


def build_install(
    folder: str, major: int, paths: Sequence[str], found_via: str, *, cache: ElfCache, host: Host,
    env: linker.LinkerEnv, dists: Sequence[Distribution] = (),
) -> Install:
    gen = generation(major)
    by_key: dict[str, list[str]] = {}
    for path in paths:
        lib = classify(os.path.basename(path))
        if lib is not None:
            by_key.setdefault(lib.key, []).append(path)
    files = tuple(inspect_file(_pick(by_key[lib.key], lib), cache, host)
                  for lib in gen.libraries if lib.key in by_key)
    dist = _distribution_for(folder, dists)
    release, source = _release_of(files, folder, major, dist, cache)
    findings: list[Finding] = []
    findings += _missing(gen, files, folder, dist)
    findings += _mixed(files, release)
    if dist is not None:
        findings += [Finding("record-missing-file", ERROR, f"{dist.name} {dist.version} lists it in RECORD but "
                             "it is not on disk", path, f"pip install --force-reinstall {dist.name}=={dist.version}")
                     for path in dist.missing]
    shim = next((c for c in files if c.library == "shim"), None)
    # ext and tensor_ir are absent from older releases and then not asked for: only found ones count
    steps = () if gen.major == 7 else tuple(
        step for lib, step in plan(gen, shim.path if shim else None, folder, release, cache, env)
        if step.path or lib.required or _asked_for(lib, shim))
    for step in steps:
        findings += step_findings(step, folder, release)
    deps = _dependencies(gen, files, steps, _cuda_major(dist, files), cache, env)
    findings += [f for step in deps for f in _dependency_findings(step, major)]
    if shim is not None and shim.real_path and os.path.dirname(shim.real_path) != os.path.realpath(folder):
        findings += _symlinked_shim(shim, gen, folder)
    prediction = predict_install(gen, release, files, steps, deps, cache, env)
    shim_fails = bool(prediction.expectations) and prediction.expectations[0].call.kind == "dlopen"
    if (shim_fails or any(f.code == "origin-through-symlink" for f in findings)) and not any(
            c.library not in ("shim", None) for c in files):  # only the shim here, and it is the cause: said once
        findings = [f for f in findings if f.code != "missing-sublibrary"]
    files = tuple(replace(cand, findings=_with_consequences(cand.findings, prediction)) for cand in files)
    told = {c.library for cand in files for f in cand.findings for c in f.consequences}
    said = _with_consequences(findings, prediction, told)
    said += install_findings(folder, found_via, [linker.Requester.from_elf(c.path, c.elf) for c in files if c.elf],
                             steps + deps, env.defaults)  # policy: a risk, never the cause of a failure
    return Install(folder, major, release, source, found_via, f"{dist.name} {dist.version}" if dist else None,
                   _cuda_major(dist, files), files, steps, deps, said + _unexplained(prediction, said, files, folder),
                   prediction.expectations)


def _asked_for(lib: SubLibrary, shim: Candidate | None) -> bool:
    """An optional sub-library the shim asks for all the same: it exports its VersionCheck (ext in 9.28)."""
    return bool(lib.version_check and shim and shim.elf and lib.version_check in shim.elf.version_checks)


def predict_install(gen: Generation, release: Release | None, files: Sequence[Candidate], steps: Sequence[Step],
                    deps: Sequence[Step], cache: ElfCache, env: linker.LinkerEnv, *,
                    gpu: bool | None = None) -> Prediction:
    """What an application would see with this install (`consequences`): the loads the plan makes,
    and a consequence per cause of failure; on a machine with a usable GPU when ``gpu`` (default:
    when libcuda.so.1 was found)."""
    def elf_of(path: str) -> ElfInfo | None:
        try:
            return cache.inspect(os.path.realpath(path))
        except (OSError, ElfError):
            return None

    planned = {step.library: Planned(step.path, step.outcome, step.error, step.release) for step in steps}
    missing = {step.library: step.library for step in deps if step.path is None}
    shim = next((c for c in files if c.library == "shim"), None)
    if gpu is None:
        gpu = any(step.library == "libcuda.so.1" and step.path for step in deps)
    loads = {} if gen.major == 7 else plan_loads(gen, release, planned, missing, elf_of)
    return predict(gen, release, loads, missing_dependencies=missing, shim=shim.elf if shim else None,
                   shim_fails=_shim_load(shim, missing, env), elf_of=elf_of, gpu=gpu)


def _shim_load(shim: Candidate | None, missing: Mapping[str, str], env: linker.LinkerEnv) -> Load | None:
    """Why the application's own dlopen of the shim fails, if it does: the file, or a library it NEEDs."""
    if shim is None:
        return None
    if shim.elf is None or (shim.real_path and linker.opening(shim.path, env)[0] != "found"):
        outcome, error = linker.opening(shim.path, env)
        problem = error or next((f.message for f in shim.findings if f.severity == ERROR), "it cannot be read")
        fails = KILLS if outcome == "cut-segments" else HANGS if outcome == "fifo" else UNLOADABLE
        return Load("shim", shim.path, None, fails, problem, "shim")
    needed = next((name for name in shim.elf.needed if name in missing), None)
    if needed is not None:
        return Load("shim", shim.path, None, UNLOADABLE,
                    f"{needed}: cannot open shared object file: No such file or directory", needed)
    return None


_WOULD_LOAD = re.compile(r" would load (\w+) from ")


def subjects(finding: Finding) -> tuple[str, ...]:
    """What a finding is about: a sub-library's key (and "<key>-release", for what its release does), or
    a dependency's soname; () when it is about neither."""
    if finding.code == "origin-through-symlink":
        return ("graph", "ops_infer")  # what the shim opens first, through the link's $ORIGIN
    if finding.code in ("missing-dependency", "no-driver"):  # about what the file at the path needs
        soname = next((word for word in finding.message.replace(",", " ").split() if word.startswith("lib")), None)
        return (soname,) if soname else ()
    named = classify(os.path.basename(finding.path or ""))
    if named is not None:
        return (named.key, f"{named.key}-release")
    loads = _WOULD_LOAD.search(finding.message)
    if loads is not None:
        return (loads.group(1), f"{loads.group(1)}-release")
    return ()


def _with_consequences(findings: Sequence[Finding], prediction: Prediction,
                       told: set[str] | None = None) -> tuple[Finding, ...]:
    """The findings, each with what the user will see because of it (info findings get theirs too: the
    no-driver one says what a machine without a GPU shows)."""
    out = []
    said = set(told or ())  # each cause's consequences go with the first finding that names it
    for finding in findings:
        causes = [cause for cause in subjects(finding) if cause in prediction.consequences and cause not in said]
        said.update(causes)
        found = tuple(c for cause in causes for c in prediction.consequences[cause])
        out.append(replace(finding, consequences=found) if found else finding)
    return tuple(out)


def _unexplained(prediction: Prediction, findings: Sequence[Finding], files: Sequence[Candidate],
                 folder: str) -> tuple[Finding, ...]:
    """A finding for each cause of failure no other finding carries, so that none goes unsaid."""
    said = {c.library for f in [*findings, *(f for c in files for f in c.findings)] for c in f.consequences}
    first = prediction.expectations[0] if prediction.expectations else None
    if first is not None and first.outcome in ("abort", "sigbus", "fails"):
        return ()  # the first call already dies of a cause a finding names: nothing else is reached
    extra = []
    for cause, consequences in prediction.consequences.items():
        load = prediction.loads.get(cause)
        if cause in said or load is None:
            continue
        extra.append(Finding("sublibrary-unloadable", ERROR, f"{cause} would not load: {load.error}",
                             load.path or folder, "replace the folder with one complete cuDNN release", consequences))
    return tuple(extra)


def _expected(gen: Generation, files: Sequence[Candidate]) -> tuple[SubLibrary, ...]:
    """Sub-libraries this install must have: required ones, plus those the shim asks for by VersionCheck."""
    shim = next((c for c in files if c.library == "shim" and c.elf), None)
    checks = set(shim.elf.version_checks) if shim and shim.elf else set()
    return tuple(lib for lib in gen.sublibraries if lib.required or (lib.version_check in checks))


def _missing(gen: Generation, files: Sequence[Candidate], folder: str,
             dist: Distribution | None = None) -> Iterable[Finding]:
    present = {c.library for c in files}
    if "shim" not in present:
        yield Finding("missing-shim", WARNING if gen.major == 9 else ERROR,
                      f"no {gen.shim.soname} in this folder: only the sub-libraries are here", folder,
                      "install the complete cuDNN package")
    if gen.major == 7:
        return
    for lib in _expected(gen, files):
        if lib.key not in present:
            yield Finding("missing-sublibrary", ERROR, f"{lib.soname} is missing", os.path.join(folder, lib.soname),
                          f"reinstall the complete cuDNN: pip install --force-reinstall {dist.name}=={dist.version}"
                          if dist else "reinstall the complete cuDNN (pip install --force-reinstall "
                          "nvidia-cudnn-cuXX, or the distribution package that owns this folder)")


def _mixed(files: Sequence[Candidate], release: Release | None) -> Iterable[Finding]:
    for cand in files:
        if release and cand.elf and cand.elf.release and cand.elf.release != release:
            yield Finding("mixed-release", ERROR, f"is cuDNN {cand.elf.release}, the rest of the folder is {release}",
                          cand.path, "replace the folder with one complete release; sub-libraries bind to "
                          "each other's release-private symbols and fail to load across releases")


def plan(gen: Generation, shim_path: str | None, folder: str, release: Release | None, cache: ElfCache,
         env: linker.LinkerEnv) -> tuple[tuple[SubLibrary, Step], ...]:
    """Simulate the shim's dlopen of each sub-library, and graph's of the engines (v9); every
    sub-library gets a step, found or not. ``shim_path``: the shim as opened (None: there is none)."""
    shim_req = requester(shim_path, cache) if shim_path else None
    graph_req: linker.Requester | None = None
    graph_release = release
    steps: list[tuple[SubLibrary, Step]] = []
    for lib in gen.sublibraries:
        # A dlopen'd object has no loader (glibc l_loader): the shim's calls search with the
        # shim's own paths, graph's calls with graph's, plus the executable's RPATH (linker.Chain).
        # Each asks for the names of its own release: a 9.0 graph under a 9.28 shim asks for X.so.9.0.0.
        opener = shim_req if lib.opened_by == "shim" else graph_req
        names = lib.names_tried(release if lib.opened_by == "shim" else graph_release)
        res = linker.resolve_many(names, _chain(opener), env)
        step = make_step(lib.key, opener.path if opener else None, names, res, folder, cache, env)
        if lib.key == "graph" and res.path:
            graph_req, graph_release = requester(res.path, cache), step.release or release
        steps.append((lib, step))
    return tuple(steps)


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
              folder: str | None, cache: ElfCache, env: linker.LinkerEnv, *,
              found: tuple[str, str] | None = None) -> Step:
    """A Step from a linker answer; ``found`` (path, rule) overrides it (a shim found by path)."""
    path, rule = found or (res.path, res.rule)
    release = release_near(path, cache) if path else None
    inside = bool(path and folder) and os.path.realpath(os.path.dirname(path or "")) == os.path.realpath(folder or "")
    return Step(key, requested_by, names, path, rule, inside, release, condensed_trail(res, env.defaults.subdirs),
                "found" if found else res.outcome, None if found else res.error)


def condensed_trail(res: linker.Resolution, subdirs: Sequence[str]) -> tuple[str, ...]:
    """The search trail, one line per (rule, folder, name). glibc tries every folder with each
    hwcaps subfolder first (``subdirs``, up to 18: linker.LinkerDefaults); an attempt there is
    shown only when something was in it."""
    nested = tuple("/" + s.rstrip("/") for s in subdirs if s)
    lines: dict[tuple[str, str, str], str] = {}
    for attempt in res.trail:
        folder, name = os.path.split(attempt.path)
        if attempt.outcome in ("absent", "no-dir") and folder.endswith(nested):
            continue
        lines.setdefault((attempt.rule, folder, name), f"{attempt.rule}: {attempt.path} ({attempt.outcome})")
    return tuple(lines.values())


def step_findings(step: Step, folder: str, release: Release | None) -> Iterable[Finding]:
    """``mixed-release`` or ``sublibrary-elsewhere`` when a planned load leaves the install's folder;
    ``sublibrary-unloadable`` when the file it would get from there cannot be loaded."""
    if step.path is None or step.inside_install:
        return
    opener = os.path.basename(step.requested_by) if step.requested_by else "the shim"
    stray = os.path.dirname(step.path)
    if step.error is not None:
        yield Finding("sublibrary-unloadable", ERROR, f"{opener} would load {step.library} from {step.path} "
                      f"(via {step.rule}), which cannot load: {step.error}", step.path,
                      f"remove or replace {step.path}")
        return
    fix = (f"remove {stray} from LD_LIBRARY_PATH" if step.rule == "ld-library-path"
           else f"remove the stray cuDNN in {stray}, or complete this install")
    if release and step.release and step.release != release:
        yield Finding("mixed-release", ERROR, f"{opener} would load {step.library} from {step.path} "
                      f"(cuDNN {step.release}, found via {step.rule}), not this install's {release}", folder, fix)
    else:
        yield Finding("sublibrary-elsewhere", WARNING, f"{opener} would load {step.library} from {step.path} "
                      f"(via {step.rule}), outside this install", folder, fix)


def _symlinked_shim(shim: Candidate, gen: Generation, folder: str) -> Iterable[Finding]:
    if all(os.path.lexists(os.path.join(folder, lib.soname)) for lib in gen.sublibraries if lib.required):
        return
    yield Finding("origin-through-symlink", ERROR,
                  f"the shim is a symbolic link to {shim.real_path}; $ORIGIN is the folder of the link "
                  f"({folder}), where the sub-libraries are not", shim.path,
                  f"link the whole folder, or add {os.path.dirname(shim.real_path or '')} to LD_LIBRARY_PATH")


def _dependencies(gen: Generation, files: Sequence[Candidate], plan: Sequence[Step], cuda: int | None,
                  cache: ElfCache, env: linker.LinkerEnv) -> tuple[Step, ...]:
    """Non-cuDNN libraries the install needs: DT_NEEDED ones, and those cuDNN dlopens itself."""
    steps: dict[str, Step] = {}
    # the install's own files, then what the plan loads from elsewhere (LD_LIBRARY_PATH ...)
    loading = [(cand.path, cand.elf) for cand in files if cand.elf is not None]
    mine = {os.path.realpath(path) for path, _ in loading}
    for step in plan:
        if step.path and step.error is None and os.path.realpath(step.path) not in mine:
            try:
                loading.append((step.path, cache.inspect(os.path.realpath(step.path))))
            except (OSError, ElfError):
                continue
    for path, info in loading:
        req = linker.Requester.from_elf(path, info)
        for needed in info.needed:
            if needed in steps or needed.startswith("libcudnn") or needed in SYSTEM_LIBRARIES:
                continue
            res = linker.resolve(needed, _chain(req), env)
            steps[needed] = make_step(needed, path, (needed,), res, os.path.dirname(path), cache, env)
    # cuBLASLt is dlopened (not NEEDED) by cuDNN >= 8.9 / 9 (cudnn-facts §1.1); its major is the CUDA major.
    # The library that asks is the graph (cnn_infer in 8.x) the plan loads, wherever it comes from.
    opener = next((step.path for step in plan if step.library in ("graph", "cnn_infer") and step.path), None) or \
        next((c.path for c in files if c.library in ("graph", "cnn_infer") and c.elf), None)
    opener_req = requester(opener, cache) if opener else None
    if opener is not None and opener_req is not None and cuda and gen.major >= 8:
        for soname in (f"libcublasLt.so.{cuda}", f"libnvrtc.so.{cuda}"):
            if soname not in steps:
                res = linker.resolve(soname, _chain(opener_req), env)
                steps[soname] = make_step(soname, opener, (soname,), res, os.path.dirname(opener), cache, env)
    return tuple(steps.values())


# Always present with glibc and the compiler runtime; not worth a search each.
SYSTEM_LIBRARIES = frozenset({
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libgcc_s.so.1",
    "libstdc++.so.6", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
})


def _dependency_findings(step: Step, major: int) -> Iterable[Finding]:
    if step.path is not None:
        return
    folders = list(dict.fromkeys(line.split(": ", 1)[1].rsplit("/", 1)[0] for line in step.trail))
    where = f"searched {', '.join(folders)}" if folders else "not found by the linker"
    source = DEPENDENCY_SOURCES.get(step.library, "install the package that provides it")
    if step.library == "libcuda.so.1":
        yield Finding("no-driver", INFO, "libcuda.so.1 (the NVIDIA driver) is not installed: "
                      "libcudnn_engines_runtime_compiled cannot load and no handle can be created; expected on a "
                      "machine without an NVIDIA GPU", step.requested_by, "install the NVIDIA driver")
    elif step.library.startswith(("libcublasLt", "libnvrtc")):
        severity = ERROR if step.library.startswith("libcublasLt") else WARNING
        yield Finding("missing-dependency", severity, f"cuDNN dlopens {step.library} at run time and it would not "
                      f"be found ({where})", step.requested_by, source)
    else:
        yield Finding("missing-dependency", ERROR, f"needs {step.library}, which would not be found ({where})",
                      step.requested_by, source)


# --- the whole machine ---------------------------------------------------------

def _explicit(paths: Sequence[str]) -> tuple[list[Origin], list[Finding], dict[tuple[str, int], list[str]]]:
    """User-given files and folders: folders are searched; a file stands for the install it belongs to,
    its folder's files of its generation, with the file itself as given (a symlinked shim stays one:
    its $ORIGIN is the link's folder). What cannot be one (missing, a link to nothing or in a loop, a
    device, a FIFO, a /proc file, a file not named libcudnn*) is an error finding, read in no way."""
    origins: list[Origin] = []
    findings: list[Finding] = []
    given: dict[tuple[str, int], list[str]] = {}
    for raw in paths:
        path = os.path.abspath(raw)
        problem = _given_problem(path)
        if problem is not None:
            findings.append(Finding(problem[0], ERROR, problem[1], path))
        elif os.path.isdir(path):
            if not any(_scan(path)):
                findings.append(Finding("no-cudnn", ERROR, "no cuDNN library (libcudnn*.so.7, .8 or .9) in this "
                                        "folder", path))
            origins.append(Origin(path, "given on the command line"))
        elif not os.path.basename(path).startswith("libcudnn"):
            findings.append(Finding("no-cudnn", ERROR, "not a cuDNN library (its name is not libcudnn*)", path))
        else:
            lib = classify(os.path.basename(path))
            given.setdefault((os.path.dirname(path), lib.major if lib else 0), []).append(path)
    return origins, findings, given


# What files.path_problem says of a path, as a finding code.
_PATH_CODES = {"missing": "missing-file", "broken-symlink": "broken-symlink", "symlink-loop": "symlink-loop",
               "permission": "unreadable", "not-regular": "not-a-regular-file"}


def _given_problem(path: str) -> tuple[str, str] | None:
    """(code, reason) when a path given on the command line cannot be read as a file or folder."""
    problem = path_problem(path)
    return (_PATH_CODES[problem[0]], problem[1]) if problem is not None else None


def _record_conflicts(dists: Sequence[Distribution]) -> Iterable[Finding]:
    owners: dict[str, list[Distribution]] = {}
    for dist in dists:
        for path in dist.files:
            owners.setdefault(os.path.realpath(path), []).append(dist)
    for path, claim in sorted(owners.items()):
        if len(claim) > 1:
            names = " and ".join(sorted(f"{d.name} {d.version}" for d in claim))
            yield Finding("record-conflict", ERROR, f"claimed by {names}: one overwrote the other's file", path,
                          f"pip uninstall {' '.join(sorted(d.name for d in claim))}, then install exactly one")


@dataclass(frozen=True)
class Context:
    """The process a load would happen in: its environment, what ld.so would see there (LD_LIBRARY_PATH,
    ld.so.cache, the executable, what is already mapped), the host's glibc and libstdc++, the ELF memo."""

    environ: Mapping[str, str]
    cache: ElfCache
    linker: linker.LinkerEnv
    host: Host


def context(environ: Mapping[str, str] | None = None, *, use_cache: bool = True,
            executable: linker.Requester | None = None, loaded: Mapping[str, str] | None = None,
            cache: ElfCache | None = None) -> Context:
    """A process started now with ``environ``; ``executable`` (default: this Python) is its main program.
    ``cache``: an ELF memo already open (another context's), instead of reading it again."""
    env_vars = dict(os.environ if environ is None else environ)
    cache = cache or ElfCache(cache_file(env_vars) if use_cache else None)
    link_env = linker.LinkerEnv.from_environ(env_vars, loaded=loaded, executable=executable or python_requester(cache),
                                             defaults=linker_defaults(cache, env_vars))
    return Context(env_vars, cache, link_env, host_facts(link_env, cache))


def install_of(path: str, ctx: Context, found_via: str, dists: Sequence[Distribution] = ()) -> Install | None:
    """The install the cuDNN file at ``path`` belongs to, as that file would load it: its folder's files of
    its generation, with ``path`` itself as opened (not resolved: a symlinked shim's $ORIGIN is the
    link's folder). None when the file is of no known cuDNN generation."""
    lib = classify(os.path.basename(path))
    if lib is None:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    scanned = _scan(folder).get(lib.major, [])
    same_key = {p for p in scanned if (other := classify(os.path.basename(p))) and other.key == lib.key}
    paths = [p for p in scanned if p not in same_key] + [os.path.abspath(path)]
    return build_install(folder, lib.major, paths, found_via, cache=ctx.cache, host=ctx.host, env=ctx.linker,
                         dists=dists)


def find(
    paths: Sequence[str] = (),
    *,
    environ: Mapping[str, str] | None = None,
    site_paths: Sequence[str] | None = None,
    system: bool | None = None,
    use_cache: bool = True,
    ctx: Context | None = None,
) -> Inventory:
    """Every cuDNN install on the machine (or only under ``paths`` when given), with verdicts.

    ``system`` (default: True unless ``paths`` are given) adds the ld.so cache, the default
    linker folders and /usr/local/cuda*; ``site_paths`` (default ``sys.path``) is where pip
    distributions are looked for; ``ctx`` (default: this Python in ``environ``) is the process the
    loads are judged for. A given file stands for the install it belongs to. Nothing is loaded.
    """
    ctx = ctx or context(environ, use_cache=use_cache)
    origins, findings, given = _explicit(paths)
    searching = not paths
    sites = list(sys.path if site_paths is None else site_paths) if searching or site_paths else []
    # a given .../site-packages/nvidia/cudnn/lib folder (or a file in one): read its wheel's metadata too
    folders = [o.folder for o in origins] + [folder for folder, _ in given]
    sites += [os.path.normpath(os.path.join(folder, "..", "..", "..")) for folder in folders
              if folder.endswith(os.path.join("nvidia", "cudnn", "lib"))]
    dists = cudnn_distributions(sites) if sites else ()
    if searching:
        search_ctx = SearchContext(ctx.environ, ctx.linker, system=True if system is None else system,
                                   distributions=dists)
        origins += search(search_ctx)
    installs: list[Install] = []
    seen: set[tuple[str, int]] = set()
    for origin in origins:
        for major, files in _scan(origin.folder).items():
            real = (os.path.realpath(origin.folder), major)
            if real in seen:
                continue
            seen.add(real)
            installs += _installs_for(origin.folder, major, files, origin.found_via, ctx, dists, findings)
    for (folder, major), files in given.items():
        if major == 0 or (os.path.realpath(folder), major) in seen:
            installs += _installs_for(folder, 0, files, "given on the command line", ctx, dists, findings) \
                if major == 0 else []
            continue
        seen.add((os.path.realpath(folder), major))
        shim = next((path for path in files if (lib := classify(os.path.basename(path))) and lib.key == "shim"),
                    files[0])
        installs += [install for install in [install_of(shim, ctx, "given on the command line", dists)] if install]
    findings += _record_conflicts(dists)
    findings += search_path_findings(ctx.linker)
    ctx.cache.save()
    return Inventory(ctx.host, tuple(installs), tuple(findings), tuple(dists))


def _installs_for(folder: str, major: int, files: list[str], found_via: str, ctx: Context,
                  dists: Sequence[Distribution], findings: list[Finding]) -> list[Install]:
    if major == 0:
        # libcudnn* names no generation knows (libcudnn.so.6, libcudnn_foo.so): report each file
        findings += [Finding("unknown-library", WARNING, "a libcudnn file of no known cuDNN generation "
                             "(7, 8, 9)", path) for path in files]
        return []
    return [build_install(folder, major, files, found_via, cache=ctx.cache, host=ctx.host, env=ctx.linker,
                          dists=dists)]


def inspect(paths: Sequence[str], *, environ: Mapping[str, str] | None = None, use_cache: bool = True) -> Inventory:
    """Inventory and verdicts for the given files and folders only."""
    if not paths:
        raise UsageError("inspect() needs at least one file or folder")
    return find(paths, environ=environ, system=False, use_cache=use_cache)
