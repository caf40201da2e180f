"""What an application will see when it uses an install: which calls return which status, which abort.

From the plan (which file the shim's and graph's dlopen of each sub-library would get, and what
opening it does) and the catalog (which sub-library serves which calls), without running
anything. The behaviour of the shims was measured on the real wheels with the scenario app
(fixtures/scenarios/app.c, 2026-11-24; tests/test_scenarios.py checks every claim against it):

- cuDNN 9: a sub-library the shim cannot load makes each call it serves return 3009
  CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE after "Invalid handle. Cannot load symbol
  <function>"; the process goes on (9.27, 9.28). libcudnn_graph is the exception: the calls it serves
  (cudnnGetVersion first) print the same line and abort(). The 9.0 shim aborts for every sub-library
  ("Unable to load any of {libcudnn_cnn.so.9.0.0, ...}", then "Invalid handle. Cannot load symbol
  cudnnCnnVersionCheck" and abort(): 9.0 with cnn missing, and with ops missing); a 9.28 shim over 9.0's
  sub-libraries returns 3009, as 9.28 does: the shim decides (`_shim_aborts`). A library graph opens for the engines
  makes cudnnBackendFinalize return 1008 (9.28; 1001 in 9.0) after "Unable to load any of {...}".
  In 9.28, creating an engine heuristic without cuBLASLt aborts ("Invalid handle. Cannot load
  symbol cublasLtGetVersion"); 9.0 does not need it.
- cuDNN 8: a sub-library the shim cannot load aborts the first call it serves, after "Could not
  load library <soname>. Error: <dlerror>"; one of another 8.x release loads, and its VersionCheck
  returns 14 CUDNN_STATUS_VERSION_MISMATCH.
- Any generation: a file whose PT_LOAD segments run past its end kills the process with SIGBUS
  while dlopen maps it, printing nothing; a FIFO where a library is looked for hangs it (glibc's
  open() blocks until something writes to the pipe). A sub-library whose DT_NEEDED cuDNN library is of another
  release fails to load with an undefined symbol (sub-libraries bind to release-private symbols).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from cudnnload.codes import Effect
from cudnnload.resolve.catalog import Call, Generation, Release, SubLibrary, dlopens_at_load
from cudnnload.resolve.discovery import Host, Step, undefined_versions
from cudnnload.resolve.elf import ElfInfo
from cudnnload.verdicts import Consequence

ABORT, HANG, NO_START, SIGBUS, STATUS, WRONG_RELEASE = (Effect.ABORT, Effect.HANG, Effect.NO_START, Effect.SIGBUS,
                                                       Effect.STATUS, Effect.WRONG_RELEASE)
# Why a load fails: the file is missing, or dlopen fails on it (both answered as a status or an abort, by the
# generation), or opening it kills the process (a cut file: SIGBUS) or never returns (a FIFO: it hangs).
MISSING, UNLOADABLE, KILLS, HANGS = "missing", "unloadable", Effect.SIGBUS, Effect.HANG
_ENDS = (KILLS, HANGS)  # the process does not come back from such a load


class FileFacts(Protocol):
    """What the judge may ask of the files (`resolve.discovery.Context` answers, from the ELF memo)."""

    def elf(self, path: str) -> ElfInfo | None: ...

    def unresolved(self, path: str, provider: str, version: str) -> tuple[str, ...] | None: ...

    @property
    def host(self) -> Host: ...

# Measured (fixtures/scenarios): the 9.28 shim's cudnnCreate looks up this graph function, which
# 9.0's graph does not export ("Could not load symbol cudnnGetLibConfig. Error: ...", then abort()).
GRAPH_CONFIG_FUNCTION = "cudnnGetLibConfig"
# 9.0's and 9.1's graphs open their engines in one chain and return 1001 when one is missing; 9.2 to 9.28 return
# 1008 (each release's wheel: bench/cudnn9_releases.py, 9.1.1 cu11 measured 2026-12-01).
FIRST_9_WITHOUT_9_0_BEHAVIOUR = Release(9, 2, 0)
# Creating an engine heuristic once the precompiled engines loaded (`_precompiled_loaded`) opens cuBLASLt from 9.15
# on, and aborts where it is missing ("Invalid handle. Cannot load symbol cublasLtGetVersion"); 9.0 to 9.14 return 0
# without it (each release's wheel without libcublasLt: 9.0, 9.1.1, 9.2.1, 9.7.1, 9.8, 9.10.2, 9.13.1, 9.14 return 0;
# 9.15.0, 9.15.1, 9.16, 9.17.1, 9.19, 9.25.1, 9.27 and 9.28 abort).
FIRST_9_HEURISTIC_NEEDING_CUBLASLT = Release(9, 15, 0)
# A cuDNN 8 shim before 8.9 reads dlerror() after its dlopen of a sub-library succeeded. The initializers that dlopen
# runs may have dlopened something themselves (`discovery.opened_while_loading`): when the last of those failed, its
# error is still there (each dl call clears the one before), and the shim prints "Could not load library
# libcudnn_ops_infer.so.8. Error: libnvrtc.so: cannot open shared object file: ..." and aborts. Measured with the
# 8.5 and 8.6 wheels: 8.5 with cuBLAS 11.10 and no driver (cuBLASLt's libcuda.so.1) at cudnnGetVersion; 8.6 with
# cuBLAS 11.11 (its libnvrtc.so) at cudnnGetVersion, and with libnvrtc.so linked, at cudnnCnnInferVersionCheck (cnn_
# infer's libcuda.so); a later success clears it (cuBLASLt's libcuda.so.1 failed, then its libnvrtc.so loaded: no
# abort). 8.7.0's shim does too (on cuBLASLt's libnvrtc.so, and on its cnn_infer's when cuBLASLt was already in the
# process: `catalog.OPENS_AT_LOAD`); 8.8.1's cnn_infer leaves none (bench/cudnn8_families.py,
# bench/cudnn8_differential.py); 8.9.7's shim does not trip on cnn_infer's.
FIRST_8_WITHOUT_STALE_DLERROR = Release(8, 9, 0)


@dataclass(frozen=True)
class Planned:
    """Where the plan says one sub-library comes from (the parts of a `discovery.Step` that decide its load)."""

    path: str | None
    outcome: str | None  # the linker's: "found", "already-loaded", "cut-segments", "not-elf" ...
    error: str | None
    release: Release | None
    fallback: Planned | None = None  # the file the opener's later names get, when this one fails to load

    @classmethod
    def of(cls, step: Step) -> Planned:
        """From a `discovery.Step` (its fallback too)."""
        return cls(step.path, step.outcome, step.error, step.release,
                   None if step.fallback is None else cls.of(step.fallback))


@dataclass(frozen=True)
class Load:
    """What the first dlopen of one sub-library would do."""

    key: str
    path: str | None  # the file it would get, as opened
    release: Release | None
    fails: str | None  # None: it loads; MISSING, UNLOADABLE (dlopen fails), KILLS (SIGBUS) or HANGS (a FIFO)
    error: str | None  # dlerror's text when it fails (KILLS, HANGS: why the process dies or hangs)
    cause: str | None  # what is wrong, when it fails: this library's key, or what it needs
    # False: its opener never asks for it (graph's engine order, `SubLibrary.after`: the library before it did
    # not load); nothing of it is mapped, and nothing fails because of it
    asked: bool = True
    # the file already in the process (LD_PRELOAD's) its DT_NEEDED bound to, when that is why it fails
    bound_to: str | None = None
    stays_mapped: bool = False  # it fails, yet stays in the process (it loaded, and its opener does not use it)
    # the file the opener got first, which failed to load, and dlerror's text for it, when ``path`` is what its
    # later names then gave (`discovery.Step.fallback`)
    instead_of: str | None = None
    instead_error: str | None = None
    instead_cause: str | None = None  # what made that file fail: its own key (the file), or a dependency's soname
    # another sub-library's object that dlopen gave for this one's name (its SONAME says which), in which the
    # shim then looks for this library's functions
    answered_by: str | None = None


@dataclass(frozen=True)
class Expectation:
    """What one call of an application (a `Call` of the catalog) would do with this install."""

    call: Call
    # "value" (it returns one), "absent" (the shim does not export it), or the `Effect` of its failure: STATUS,
    # ABORT, SIGBUS, HANG, or NO_START (the application's dlopen of the shim fails)
    outcome: str
    status: int | None = None
    value: int | None = None
    message: str | None = None
    cause: str | None = None  # the key or soname whose load decides it, when it is not the healthy result


@dataclass(frozen=True)
class Prediction:
    loads: Mapping[str, Load]
    consequences: Mapping[str, tuple[Consequence, ...]]  # by cause: a sub-library key or a dependency's soname
    expectations: tuple[Expectation, ...]


# --- which sub-library loads -------------------------------------------------------------------------

def plan_loads(gen: Generation, release: Release | None, planned: Mapping[str, Planned],
               missing_dependencies: Mapping[str, str], facts: FileFacts,
               present: Mapping[str, str] | None = None) -> dict[str, Load]:
    """Each sub-library's load, from where the plan says it comes from, in load order. A library
    fails when its file is missing or cannot be opened, when a library it NEEDs is missing
    (``missing_dependencies``: soname -> what was searched), or when a cuDNN library it NEEDs
    fails or is of another release. ``present``: soname -> the file already in the process that answers
    it (LD_PRELOAD's, first in link-map order): a DT_NEEDED of that soname binds to it, whatever file the
    shim's own, more specific name got (the 9.28 shim asks for ``libcudnn_graph.so.9.28.0`` first, which
    no preloaded 9.0 graph answers; its ops then NEEDs ``libcudnn_graph.so.9``, which that graph does:
    measured with LD_DEBUG on the 9.0 and 9.28 wheels)."""
    loads: dict[str, Load] = {}
    for lib in gen.sublibraries:
        step = planned.get(lib.key)
        if step is None:
            continue
        opener = loads.get("graph") if lib.opened_by == "graph" else None
        if opener is not None and opener.fails is not None:  # graph opens it: never asked for
            loads[lib.key] = Load(lib.key, step.path, step.release, opener.fails, opener.error, opener.cause)
            continue
        load = _load_of(lib, step, gen, release, loads, missing_dependencies, facts, present or {})
        if load.fails == UNLOADABLE and not load.stays_mapped and step.fallback is not None and \
                step.fallback.path is not None:
            # dlopen failed: the opener's next name (the bare X.so of a -dev package): it loads, or kills the
            # process, or dlopen gives it and the look-up of the library's functions in it fails (another
            # sub-library's file under that name: it stays mapped, fix differential 3-17745, the cu12 conda
            # runtime_compiled failing for want of libcuda.so.1 and the next name, X.so.9.28, a venv's link to
            # its precompiled engines); else the first file's failure stands (its cause is what is wrong)
            other = _load_of(lib, step.fallback, gen, release, loads, missing_dependencies, facts, present or {})
            if other.fails in (None, KILLS, HANGS) or other.stays_mapped:
                load = replace(other, instead_of=load.path, instead_error=load.error, instead_cause=load.cause)
        loads[lib.key] = load
    graph = loads.get("graph")
    for lib in gen.sublibraries:  # 9.0's graph asks for the engines of its chain whatever the plan says
        if lib.key not in loads and _stops_chain(lib, loads):
            name = lib.names_tried(_graph_release(loads))[-2]
            loads[lib.key] = Load(lib.key, None, None, MISSING,
                                  f"{name}: cannot open shared object file: No such file or directory", lib.key)
    for lib in gen.sublibraries:  # graph's engine order: one it opens only after another has loaded
        gated = loads.get(lib.key)
        after = _opened_after(lib, _graph_release(loads))
        if gated is None or not after or (graph is not None and graph.fails is not None):
            continue  # graph itself fails: nothing of it is asked for, as the loads already say
        gate = loads.get(after)  # None: nowhere (an optional engine library the plan leaves out)
        if gate is None or (gate.fails is not None and gate.fails not in _ENDS) or not gate.asked:
            loads[lib.key] = Load(lib.key, gated.path, gated.release, None, None, None, asked=False)
    return loads


def _load_of(lib: SubLibrary, step: Planned, gen: Generation, release: Release | None, loads: Mapping[str, Load],
             missing_dependencies: Mapping[str, str], facts: FileFacts, present: Mapping[str, str]) -> Load:
    """The first dlopen of ``lib`` from the file ``step`` has (a graph that failed is `plan_loads`'s)."""
    path, outcome, error, own = step.path, step.outcome, step.error, step.release
    if path is None:
        name = lib.names_tried(release)[-1 if gen.major < 9 else -2]
        return Load(lib.key, None, None, MISSING, f"{name}: cannot open shared object file: No such file or directory",
                    lib.key)
    if outcome in ("cut-segments", "fifo"):
        return Load(lib.key, path, own, KILLS if outcome == "cut-segments" else HANGS, error, lib.key)
    if error is not None:
        return Load(lib.key, path, own, UNLOADABLE, error, lib.key)
    info = facts.elf(path)
    if gen.major >= 9 and info is not None and info.soname and info.soname != lib.soname and \
            info.soname.startswith("libcudnn"):
        # another sub-library's file under this one's name (a versioned name linked to ops): dlopen gives it, and
        # its opener's look-up of this library's functions in it fails, each call as if it had not loaded (measured
        # with the scenario app on 9.24: "Could not load symbol cudnnAdvVersionCheck. Error: .../libcudnn_ops.so.9:
        # undefined symbol: cudnnAdvVersionCheck", status 3009, the process goes on; an engine name of graph's
        # leading to ops: cudnnBackendFinalize returns 1008 where the intact engine gives 2000, fix differential 1-1)
        function = lib.version_check or next((c.function for c in lib.calls), lib.key)
        lacks = _binds_itself(info, lib.soname)
        if lacks:
            # its own NEEDED names the name it is loaded under (ops under graph's name NEEDs libcudnn_graph.so.9):
            # glibc answers that with the object itself, which does not define the version needed of it, and the
            # dlopen fails; the opener goes on to its next name (the H200, session 43: the wheel's graph a copy of
            # its ops, and the shim took the system's 9.14 graph through the bare libcudnn_graph.so)
            return Load(lib.key, path, own, UNLOADABLE, f"{path}: version `{lacks[0]}' not found (required by "
                        f"{path})", lib.key)
        # the object glibc names is the one of that SONAME the process has already where it is this very file
        # (glibc finds an object mapped already by its file, a link to it in the same folder); another file of that
        # SONAME is mapped anew (fix differential 3-17745: another CUDA's precompiled engines under this name)
        holder = next((load.path for key, load in loads.items() if load.path and load.fails is None and
                       gen.library(key).soname == info.soname and _same_file(facts, load.path, path)), path)
        return Load(lib.key, path, own, UNLOADABLE, f"{holder}: undefined symbol: {function}", lib.key,
                    stays_mapped=True, answered_by=holder)
    if outcome == "already-loaded" and any(_same_file(facts, path, there) for there in present.values()):
        return _refused(lib, _mapped(lib, path, own, facts, present), loads.get("graph"))
    return _refused(lib, _needs(lib, path, own, release, loads, missing_dependencies, facts, present),
                    loads.get("graph"))


def _mapped(lib: SubLibrary, path: str, release: Release | None, facts: FileFacts, present: Mapping[str, str]
            ) -> Load:
    """The load of a sub-library whose object is in the process already (LD_PRELOAD's, a start-up line's): it
    loaded when it was mapped, its DT_NEEDED bound then to the objects of those names the process holds, and dlopen
    hands it out again without a check of its symbols (bound lazily: a function the other release lacks fails only
    once called). Bound to a library of another release, its check says so (`_expect`). Fix differential 3-18920:
    9.24's ops preloaded and bound to 9.0's graph from LD_LIBRARY_PATH, under the 9.0 shim: the model had its
    symbols missing from 9.0's graph fail its load, and predicted an abort at cudnnOpsVersionCheck; the program
    ran, its checks returning 1002."""
    for key in lib.needs:
        bound = present.get(need_lib_soname(lib, key))
        info = facts.elf(bound) if bound is not None else None
        if info is not None and info.release is not None and release is not None and info.release != release:
            return Load(lib.key, path, release, None, f"{bound} is cuDNN {info.release}'s", key, bound_to=bound)
    return Load(lib.key, path, release, None, None, None)


def _same_file(facts: FileFacts, one: str, other: str) -> bool:
    """Whether two paths lead to one file (the ELF memo reads each at its real path)."""
    first, second = facts.elf(one), facts.elf(other)
    return first is not None and second is not None and first.path == second.path


def _binds_itself(info: ElfInfo, name: str) -> tuple[str, ...]:
    """The versions a file loaded under ``name`` needs of ``name`` that it does not define itself, where its own
    DT_NEEDED names ``name``: glibc matches that NEEDED to the object being loaded (its name as asked for), and
    dl-version.c fails the load (a file without version definitions satisfies every need)."""
    return undefined_versions(info, name, info) if name in info.needed else ()


def _refused(lib: SubLibrary, load: Load, graph: Load | None) -> Load:
    """An optional engine library of another release than graph's that loads all the same: graph maps it and
    goes on without it, as if it had failed (measured with LD_DEBUG: the 9.27 JIT graph maps 9.28's precompiled
    engines from LD_LIBRARY_PATH, runs its initializer, then never asks for heuristic and goes on to the
    runtime-compiled engines)."""
    if not lib.optional or lib.opened_by != "graph" or load.fails is not None or graph is None or \
            graph.fails is not None or not load.release or not graph.release or load.release == graph.release:
        return load
    return Load(lib.key, load.path, load.release, UNLOADABLE, f"{load.path} is cuDNN {load.release}'s, which the "
                f"graph of {graph.release} maps and does not use", lib.key, stays_mapped=True)


def _opened_after(lib: SubLibrary, graph: Release | None) -> str | None:
    """The library graph opens ``lib`` only once it has loaded (`SubLibrary.after`). 9.0's graph opens its engines
    in one chain, precompiled, heuristic, runtime_compiled, and stops at the first that does not load (measured
    with LD_DEBUG on the 9.0 wheel: heuristic or precompiled missing, runtime_compiled is never asked for, and
    cudnnBackendFinalize returns 1001); 9.28's asks for runtime_compiled whatever came before."""
    if lib.key == "engines_runtime_compiled" and graph is not None and graph.major == 9 and \
            graph < FIRST_9_WITHOUT_9_0_BEHAVIOUR:
        return "heuristic"
    return lib.after


def mapped_files(gen: Generation, loads: Mapping[str, Load], shim: str | None, exports: set[str] | None
                 ) -> tuple[str, ...]:
    """The cuDNN files an application that makes every call of the exercise maps, as the prediction has them
    (the shim first, then each sub-library that loads and is asked for): none of a library whose load fails,
    that its opener never asks for (`Load.asked`), or whose only way in is a version check the shim does not
    export (the 9.0 shim has no cudnnSubquadraticOpsVersionCheck and never opens ext)."""
    files = [shim] if shim else []
    for lib in gen.sublibraries:
        load = loads.get(lib.key)
        if load is None or (load.fails is not None and not load.stays_mapped) or not load.asked or not load.path:
            continue
        # its calls, its version check among them: none exported, the shim never opens it
        if lib.opened_by == "shim" and exports is not None and lib.version_check and \
                not any(c.function in exports for c in lib.calls):
            continue
        files.append(load.path)
    return tuple(files)


def _needs(lib: SubLibrary, path: str, release: Release | None, install: Release | None, loads: Mapping[str, Load],
           missing_dependencies: Mapping[str, str], facts: FileFacts, present: Mapping[str, str]) -> Load:
    """The load of a found file, given what it NEEDs. Where two releases meet, the cause is the library of
    the release the install is not (``install``): the stray one, whichever side of the edge it is on."""
    info = facts.elf(path)
    too_old = facts.host.lacking(info) if info else ()
    if too_old:  # dlopen checks the version needs first (elf/dl-version.c): it fails, nothing runs
        prefix, wanted, _ = too_old[0]
        provider = "libc.so.6" if prefix == "GLIBC_" else facts.host.libstdcxx or "libstdc++.so.6"
        return Load(lib.key, path, release, UNLOADABLE, f"{provider}: version `{prefix}"
                    f"{'.'.join(map(str, wanted))}' not found (required by {path})", lib.key)
    for needed in (info.needed if info else ()):
        if needed in missing_dependencies:
            return Load(lib.key, path, release, UNLOADABLE,
                        f"{needed}: cannot open shared object file: No such file or directory", needed)
    for key in lib.needs:
        need = loads.get(key)
        bound = present.get(need_lib_soname(lib, key))
        if bound is not None and (need is None or need.path != bound):  # the object already there answers
            bound_info = facts.elf(bound)
            need = Load(key, bound, bound_info.release if bound_info else None, None, None, None)
        else:
            bound = None
        if need is None:
            continue
        if need.fails is not None:
            return Load(lib.key, path, release, need.fails if need.fails in _ENDS else UNLOADABLE,
                        need.error if need.fails in _ENDS else f"it needs {key}, which cannot load: {need.error}",
                        need.cause)
        # each file's own release: a step's is the one beside it where the file carries none (cnn, the engines)
        need_info = facts.elf(need.path) if need.path else None
        dated = bool(info and info.release and need_info and need_info.release)
        if need.path and not (dated and need.release == release):
            # another release, or one of the two undated: what the linker checks, the symbols this file needs
            # from that library's version node (memoized under both files' stamps)
            unresolved = facts.unresolved(path, need.path, need_lib_soname(lib, key))
            if (unresolved is None and dated) or unresolved:
                symbol = f"{unresolved[0]}, version {need_lib_soname(lib, key)}" if unresolved else \
                    f"(a symbol of cuDNN {release}'s {key}, which {need.path} of {need.release} lacks)"
                if not dated:  # the stray one is whichever is not of the install's release
                    stray = lib.key if install is None or need.release == install else key
                else:
                    stray = lib.key if install is not None and release != install else key
                if bound is not None:
                    stray = key if need.release != install else lib.key
                return Load(lib.key, path, release, UNLOADABLE, f"{path}: undefined symbol: {symbol}", stray,
                            bound_to=bound)
        if bound is not None and need.release is not None and release is not None and need.release != release:
            # it loads, bound to the object already there of another release: its check says so (`_expect`)
            return Load(lib.key, path, release, None, f"{bound} is cuDNN {need.release}'s", key, bound_to=bound)
    return Load(lib.key, path, release, None, None, None)


def need_lib_soname(lib: SubLibrary, key: str) -> str:
    return f"libcudnn_{key}.so.{lib.major}"


# --- what the application sees ----------------------------------------------------------------------

def predict(gen: Generation, release: Release | None, loads: Mapping[str, Load], *,
            missing_dependencies: Mapping[str, str] | None = None, shim: ElfInfo | None = None,
            shim_fails: Load | None = None, facts: FileFacts | None = None, gpu: bool = False,
            opened: Mapping[str, tuple[str, ...]] | None = None, calls: frozenset[str] | None = None) -> Prediction:
    """Every call of ``gen.exercise`` with these loads on a machine with or without a GPU, and a
    `Consequence` per cause of failure. ``shim_fails``: the application's dlopen of the shim itself
    fails (or kills it), and nothing else happens. ``opened``: what each sub-library's first dlopen dlopens as it
    loads (`Install.opened_at_load`; default: what its soname alone says). ``calls``: only the exercise's calls of
    these functions, as a program that makes only those makes them (a call it never makes neither loads what it
    serves nor kills the process before the calls it does make)."""
    if shim_fails is not None:
        opening = Call("dlopen", gen.shim.soname)
        if shim_fails.fails in _ENDS:
            effect = SIGBUS if shim_fails.fails == KILLS else HANG
            ends = shim_ends(gen, shim_fails.path or "", Effect(effect))  # its message: what the checks say ("None")
            return Prediction(loads, {"shim": (ends,)}, (Expectation(opening, effect, message=ends.message,
                                                                     cause="shim"),))
        return Prediction(loads, {shim_fails.cause or "shim": (shim_cannot_load(gen, shim_fails.error or ""),)},
                          (Expectation(opening, NO_START, message=shim_fails.error, cause=shim_fails.cause),))
    missing = dict(missing_dependencies or {})
    exports = set(shim.cudnn_functions) if shim else None
    aborts = _shim_aborts(release, exports)
    graph = loads.get("graph")
    graph_info = facts.elf(graph.path) if facts and graph and graph.path and graph.fails is None else None
    expectations: list[Expectation] = []
    for call in gen.exercise:
        if calls is not None and call.function not in calls:
            continue
        expected = _expect(gen, release, call, loads, missing, exports, graph_info, gpu, opened, aborts)
        expectations.append(expected)
        if expected.outcome in (ABORT, SIGBUS, HANG):
            break
    return Prediction(loads, _consequences(gen, release, loads, missing, exports, graph_info, gpu, opened, aborts),
                      tuple(expectations))


def _expect(gen: Generation, release: Release | None, call: Call, loads: Mapping[str, Load],
            missing: Mapping[str, str], exports: set[str] | None, graph_info: ElfInfo | None,
            gpu: bool, opened: Mapping[str, tuple[str, ...]] | None = None, aborts: bool = False) -> Expectation:
    # a shim that exports no cuDNN function (another library under its name) has none of the calls
    if exports is not None and (call.kind in ("check", "version", "create") or not exports) and \
            call.function not in exports:
        return Expectation(call, "absent")
    for lib in gen.serving(call):
        load = loads.get(lib.key)
        if load is None:
            continue
        if load.fails is not None and _fails_calls(lib, load, loads):
            return _failed_call(gen, release, call, lib, load, _graph_release(loads), aborts)
        if gen.major == 8 and call.kind == "check" and _checks_other_release(lib, load, loads):
            # measured: 8.5's ops_train and adv_infer beside 8.9.7's libraries load, and their checks say so; the
            # 8.5 shim over 8.9.7's whole set passes them (a check compares its library with ops_infer, whatever
            # the shim's release)
            return Expectation(call, STATUS, status=14, cause=lib.key)
        if _ops_of_another_graph(gen, lib, load, loads) and call.kind in ("check", "create"):
            return Expectation(call, STATUS, status=1002, cause=lib.key)
        if _beside_another_ops(gen, lib, load, loads) and (call.kind == "check" or (call.kind == "create"
                                                                                    and lib.key == "adv")):
            return Expectation(call, STATUS, status=1002, cause="ops")
        if _bound_elsewhere(gen, load) and call.kind == "check":
            return Expectation(call, STATUS, status=1002, cause=load.cause)
        stale = _stale_dlerror(gen, release, lib, load, missing, exports, opened)
        if stale is not None:
            return Expectation(call, ABORT, message=_stale_message(lib, stale), cause=stale)
    by = _graph_release(loads) or release
    if call.kind == "heuristic" and gen.major == 9 and (by is None or by >= FIRST_9_HEURISTIC_NEEDING_CUBLASLT) \
            and _precompiled_loaded(loads):
        cublas = next((soname for soname in missing if soname.startswith("libcublasLt")), None)
        if cublas is not None:
            return Expectation(call, ABORT, message="Invalid handle. Cannot load symbol cublasLtGetVersion",
                               cause=cublas)
    graph = loads.get("graph")
    if call.function == "cudnnCreate" and graph_info is not None and graph is not None and exports is not None \
            and _shim_is_newer(exports, graph_info) and GRAPH_CONFIG_FUNCTION not in graph_info.cudnn_functions:
        return Expectation(call, ABORT, message=f"Could not load symbol {GRAPH_CONFIG_FUNCTION}. Error: "
                           f"{graph.path}: undefined symbol: {GRAPH_CONFIG_FUNCTION}", cause="graph")
    if call.kind == "version":
        home = loads.get(gen.serving(call)[0].key) if gen.major > 7 else None
        number = (home.release if home else release)
        return Expectation(call, "value", value=number.number if number else None)
    if call.needs_gpu and not gpu:
        return Expectation(call, STATUS, status=1 if gen.major < 9 else 1001)
    return Expectation(call, STATUS, status=gen.status_code(call.healthy) if call.healthy else 0)


def _checks_other_release(lib: SubLibrary, load: Load, loads: Mapping[str, Load]) -> bool:
    """An 8.x sub-library whose release is not that of a library it needs (ops_infer, for every other one)."""
    for key in lib.needs:
        need = loads.get(key)
        if need is not None and need.fails is None and need.release and load.release and need.release != load.release:
            return True
    return False


def _stale_message(lib: SubLibrary, failed: str) -> str:
    return f"Could not load library {lib.soname}. Error: {failed}: cannot open shared object file: No such file or " \
        "directory"


def _stale_dlerror(gen: Generation, release: Release | None, lib: SubLibrary, load: Load,
                   missing: Mapping[str, str], exports: set[str] | None,
                   opened: Mapping[str, tuple[str, ...]] | None) -> str | None:
    """The library whose failed dlopen, the last of those ``lib``'s first dlopen ran, an 8.x shim before 8.9
    then reads as that dlopen's failure (`FIRST_8_WITHOUT_STALE_DLERROR`); None when there is none. The shim
    carries no release: one without cudnnGetMaxDeviceVersion is before 8.6 (8.5's), one with it is told by the
    install's release (8.6's shim exports what 8.9.7's does). ``opened`` None (a plan made by hand): what the
    sub-library's soname alone says it opens."""
    if gen.major != 8 or load.fails is not None:
        return None
    names = dlopens_at_load(lib.soname) if opened is None else opened.get(lib.key, ())
    if not names or names[-1] not in missing:
        return None
    return names[-1] if reads_stale_dlerror(release, exports) else None


def reads_stale_dlerror(release: Release | None, exports: set[str] | None) -> bool:
    """Whether the cuDNN 8 shim of ``release`` (or of ``exports``: one without cudnnGetMaxDeviceVersion is 8.5's)
    aborts on the error the last dlopen of a sub-library's load left behind (`_stale_dlerror`)."""
    before_8_6 = exports is not None and bool(exports) and _LATER_8_SHIM_FUNCTION not in exports
    return before_8_6 or (release is not None and release < FIRST_8_WITHOUT_STALE_DLERROR)


_LATER_8_SHIM_FUNCTION = "cudnnGetMaxDeviceVersion"


def _ops_of_another_graph(gen: Generation, lib: SubLibrary, load: Load, loads: Mapping[str, Load]) -> bool:
    """9.x's ops of another release than the graph it loaded beside, which it binds to all the same: its version
    check and its calls return 1002 CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (measured: 9.28's ops under the
    9.27 JIT graph, opened by a 9.28 shim or by the JIT one)."""
    graph = _graph_release(loads)
    return gen.major == 9 and lib.key == "ops" and load.fails is None and load.release is not None and \
        graph is not None and load.release != graph


def _beside_another_ops(gen: Generation, lib: SubLibrary, load: Load, loads: Mapping[str, Load]) -> bool:
    """9.x's cnn or adv, which NEED ops, loaded beside an ops of another release (the shim found ops elsewhere: the
    system's through ld.so.cache, a folder on LD_LIBRARY_PATH): bound to it, its version check returns 1002, and
    adv's descriptors too (cnn's are made: cudnnCreateConvolutionDescriptor returns 0). Measured on the H200
    (torch's 9.19 wheel without its ops, beside the system's 9.14) and here (9.26 beside 9.21's ops, 9.21 beside
    9.26's, 9.16 beside 9.19's)."""
    ops = loads.get("ops")
    return gen.major == 9 and "ops" in lib.needs and load.fails is None and load.release is not None and \
        ops is not None and ops.fails is None and ops.release is not None and ops.release != load.release


def _bound_elsewhere(gen: Generation, load: Load) -> bool:
    """9.x's sub-library that loaded bound to an object of another release already in the process (LD_PRELOAD's
    ``libcudnn_ops.so.9`` of 9.28 answers the DT_NEEDED of 9.0's cnn, whose shim opened its own ops by the name
    ``libcudnn_ops.so.9.0.0``): its version check returns 1002, its descriptor calls work (fix differential
    1-913: the 9.0 shim's cnn and adv checks returned 1002 beside a preloaded 9.28 ops, cudnnCreate...Descriptor 0)."""
    return gen.major == 9 and load.fails is None and load.bound_to is not None


def _fails_calls(lib: SubLibrary, load: Load, loads: Mapping[str, Load]) -> bool:
    """Whether ``lib``, which failed to load (``load``), fails the calls it serves: a load that kills or hangs the
    process always; one whose opener goes on without it (`SubLibrary.fails_after`'s library not loaded, an optional
    engine library outside the chain of `_stops_chain`) does not."""
    if load.fails in _ENDS:
        return True
    if lib.fails_after is not None and not _loaded(loads.get(lib.fails_after)):
        return False
    return not lib.optional or _stops_chain(lib, loads)


def _loaded(load: Load | None) -> bool:
    """Whether a library was asked for and loaded (heuristic is not asked for without engines_precompiled)."""
    return load is not None and load.fails is None and load.asked


def _stops_chain(lib: SubLibrary, loads: Mapping[str, Load]) -> bool:
    """Whether an optional engine library that fails to load fails the call too: up to 9.10 it does (`in_engine_chain`),
    cudnnBackendFinalize returning 1001 (9.0's chain) or 1008 after "Unable to load any of {...}", heuristic or
    precompiled missing; 9.13's and later graphs go on without it."""
    if not in_engine_chain(lib, _graph_release(loads)):
        return False
    # heuristic is asked for only once precompiled loaded
    return lib.key == "engines_precompiled" or _loaded(loads.get("engines_precompiled"))


def in_engine_chain(lib: SubLibrary, graph: Release | None) -> bool:
    """Whether the graph of release ``graph`` needs ``lib`` for its engines: 9.0 to 9.10 need precompiled and
    heuristic (9.0's chain, `_opened_after`, returns 1001 without either; 9.2 to 9.10 return 1008 after "Unable to
    load any of {...}"), 9.13 and later do without them (bench/cudnn9_releases.py, each release's wheel)."""
    return lib.key in ("engines_precompiled", "heuristic") and graph is not None and graph.major == 9 and \
        graph < FIRST_9_WITH_OPTIONAL_ENGINES


FIRST_9_WITH_OPTIONAL_ENGINES = Release(9, 13, 0)  # 9.10.2's graph needs them, 9.13.1's does not


def _shim_aborts(release: Release | None, exports: set[str] | None) -> bool:
    """Whether the cuDNN 9 shim aborts, rather than return 3009, for a sub-library other than graph it cannot load
    (both after "Invalid handle. Cannot load symbol ..."). Measured with each release's wheel, one sub-library taken
    away at a time (bench/cudnn9_releases.py): 9.0 to 9.16 abort, 9.17 and later return 3009. The shims of 9.16 and
    9.21 hold the same strings and exports, so the release decides; the shim carries none of its own, and the
    install's is taken, except for a shim of a later release than its folder's, which its exports show (the
    CUDA-graph functions, ``cudnnBackendPopulateCudaGraph``, that 9.0 to 9.2 lack: a 9.28 shim over 9.0's
    sub-libraries returns 3009, as the newest do)."""
    if exports and _LATER_SHIM_FUNCTION not in exports:
        return True
    if exports and release is not None and release < FIRST_9_SHIM_WITH_CUDA_GRAPH:
        return False
    return release is not None and release < FIRST_9_SHIM_RETURNING_3009


_LATER_SHIM_FUNCTION = "cudnnBackendPopulateCudaGraph"
FIRST_9_SHIM_WITH_CUDA_GRAPH = Release(9, 3, 0)  # 9.2.1's shim lacks it, 9.5.1's exports it
FIRST_9_SHIM_RETURNING_3009 = Release(9, 17, 0)  # 9.16.0 aborts, 9.17.1 returns 3009


def _failed_call(gen: Generation, release: Release | None, call: Call, lib: SubLibrary, load: Load,
                 graph: Release | None = None, aborts: bool = False) -> Expectation:
    """What ``call`` does when ``lib``, which serves it, fails to load. Engine failures answer as the graph
    that loads them was built to (``graph``: its release, else the install's)."""
    if load.fails == KILLS:
        return Expectation(call, SIGBUS, message=f"mapping {load.path}, whose file ends inside a segment the dynamic "
                           "linker maps", cause=load.cause)
    if load.fails == HANGS:
        return Expectation(call, HANG, message=f"opening {load.path}, a FIFO: glibc's open() waits for a writer",
                           cause=load.cause)
    if gen.major == 9 and lib.opened_by == "graph":
        by = graph or release
        status = 1008 if by is None or by >= FIRST_9_WITHOUT_9_0_BEHAVIOUR else 1001
        names = ", ".join(lib.names_tried(by))
        # a name dlopen answered (another library's file: it stays mapped) ends graph's search, and graph says
        # nothing (measured, fix differential 3-17745: 1008 and no "Unable to load any of")
        return Expectation(call, STATUS, status=status, message=None if load.stays_mapped else
                           f"Unable to load any of {{{names}}}", cause=load.cause)
    if gen.major == 9 and lib.key != "graph" and not aborts:
        said = f"Could not load symbol {call.function}. Error: {load.answered_by}: undefined symbol: " \
            f"{call.function}" if load.answered_by else f"Invalid handle. Cannot load symbol {call.function}"
        return Expectation(call, STATUS, status=3009, message=said, cause=load.cause)
    if gen.major == 9:
        return Expectation(call, ABORT, message=f"Invalid handle. Cannot load symbol {call.function}", cause=load.cause)
    return Expectation(call, ABORT, message=f"Could not load library {lib.soname}. Error: {load.error}",
                       cause=load.cause)


def _precompiled_loaded(loads: Mapping[str, Load]) -> bool:
    """Whether the first finalize leaves the precompiled engines loaded: only then does creating an engine heuristic
    open cuBLASLt (measured on 9.28 cu13 without cuBLASLt and a stand-in libcuda.so.1: it aborts where only
    heuristic is missing, and returns 0 where engines_precompiled is, alone or with heuristic; the JIT wheels, which
    have none, return 0 with their runtime-compiled engines loaded; in a fresh process the creation returns 0)."""
    return _loaded(loads.get("engines_precompiled"))


def _graph_release(loads: Mapping[str, Load]) -> Release | None:
    graph = loads.get("graph")
    return graph.release if graph is not None and graph.fails is None else None


def _shim_is_newer(exports: set[str], graph: ElfInfo) -> bool:
    """The shim forwards graph-API functions the graph it loads does not have: it was built for a newer graph."""
    return any(name.startswith("cudnnBackend") and name not in graph.cudnn_functions for name in exports)


def _consequences(gen: Generation, release: Release | None, loads: Mapping[str, Load], missing: Mapping[str, str],
                  exports: set[str] | None, graph_info: ElfInfo | None, gpu: bool,
                  opened: Mapping[str, tuple[str, ...]] | None = None, aborts: bool = False
                  ) -> dict[str, tuple[Consequence, ...]]:
    """The consequences of each cause of failure: the calls of every library that fails because of it."""
    found: dict[str, tuple[Consequence, ...]] = {}
    for cause in dict.fromkeys(load.cause for load in loads.values() if load.fails and load.cause):
        failing = [gen.library(load.key) for load in loads.values() if load.cause == cause and load.fails
                   and _fails_calls(gen.library(load.key), load, loads)]
        first = next((c for c in gen.exercise for lib in failing if c in lib.calls), None)
        if first is None:
            continue
        home = next(lib for lib in failing if first in lib.calls)
        expected = _failed_call(gen, release, first, home, loads[home.key], _graph_release(loads), aborts)
        found[cause] = (Consequence(
            calls=_calls_text(failing, gen), effect=Effect(expected.outcome),
            library=cause, status=expected.status,
            status_name=gen.status_name(expected.status) if expected.status is not None else None,
            message=expected.message, first_call=first.function),)
    bound = [load for load in loads.values() if _bound_elsewhere(gen, load)]
    for cause in dict.fromkeys(load.cause for load in bound if load.cause):
        checks = [c.function for load in bound if load.cause == cause for c in gen.library(load.key).calls
                  if c.kind == "check"]
        if checks:
            found[cause] = found.get(cause, ()) + (Consequence(
                calls=" and ".join(checks), effect=STATUS, library=cause, status=1002,
                status_name=gen.status_name(1002), first_call=checks[0]),)
    cublas = next((soname for soname in missing if soname.startswith("libcublasLt")), None)
    by = _graph_release(loads) or release
    if cublas and gen.major == 9 and (by is None or by >= FIRST_9_HEURISTIC_NEEDING_CUBLASLT) \
            and _precompiled_loaded(loads):
        found[cublas] = (Consequence(
            calls="creating an engine heuristic (the first convolution planned through the graph API, as PyTorch "
                  "and JAX plan theirs)", effect=ABORT, library=cublas,
            message="Invalid handle. Cannot load symbol cublasLtGetVersion",
            first_call="cudnnBackendCreateDescriptor"),)
    for lib in gen.sublibraries:  # the first load whose dlopen leaves a stale error stops the process
        load = loads.get(lib.key)
        stale = _stale_dlerror(gen, release, lib, load, missing, exports, opened) if load is not None else None
        if stale is not None:
            found[stale] = (Consequence(
                calls=_calls_text([lib], gen), effect=ABORT, library=stale, message=_stale_message(lib, stale),
                first_call=next((c.function for c in gen.exercise if c in lib.calls), None)),)
            break
    if not gpu and gen.major >= 7:
        status = 1 if gen.major < 9 else 1001
        found["libcuda.so.1"] = found.get("libcuda.so.1", ()) + (Consequence(
            calls="cudnnCreate (cuDNN's reason: \"cudaGetDeviceCount(&count) != cudaSuccess\")", effect=STATUS,
            library="libcuda.so.1", status=status, status_name=gen.status_name(status), first_call="cudnnCreate"),)
    graph = loads.get("graph")
    newer = graph_info is not None and exports is not None and _shim_is_newer(exports, graph_info)
    crash = newer and graph_info is not None and GRAPH_CONFIG_FUNCTION not in graph_info.cudnn_functions
    if graph_info is not None and graph is not None and graph.release and release and graph.release != release:
        found["graph-release"] = (Consequence(
            calls="cudnnGetVersion", effect=WRONG_RELEASE, library="graph", first_call="cudnnGetVersion",
            message=f"it returns {graph.release.number} ({graph.release}, the release of {graph.path}), not "
                    f"{release.number}"),)
    if crash and graph is not None:  # a shim newer than its graph (the graph's release may be the folder's)
        found["graph-release"] = found.get("graph-release", ()) + (Consequence(
            calls="cudnnCreate (every handle)", effect=ABORT, library="graph", first_call="cudnnCreate",
            message=f"Could not load symbol {GRAPH_CONFIG_FUNCTION}. Error: {graph.path}: undefined symbol: "
                    f"{GRAPH_CONFIG_FUNCTION}"),)
    return found


def _calls_text(failing: Sequence[SubLibrary], gen: Generation) -> str:
    """The calls that fail, in words: "cudnnCnnVersionCheck and convolution calls (cudnnCreateConvolutionDescriptor,
    ...)" for each library, or every call when the library every call needs is among them."""
    if any(lib.key in ("graph", "ops_infer", "shim") for lib in failing):
        return "every cuDNN call, from the first one (cudnnGetVersion)"
    parts: list[str] = []
    for lib in failing:
        examples = ", ".join((*lib.examples[:2], "..."))
        check = f"{lib.version_check} and " if lib.version_check else ""
        text = f"{check}{lib.serves} ({examples})" if lib.serves else lib.soname
        if text not in parts:
            parts.append(text)
    return ("the first of " if gen.major == 8 else "") + "; ".join(parts)


def shim_ends(gen: Generation, path: str, effect: Effect) -> Consequence:
    """The application's own dlopen of the shim never comes back: SIGBUS mapping a cut file, or a FIFO's open()
    waiting for a writer."""
    said = f"mapping {path}" if effect is Effect.SIGBUS else f"opening {path}, a FIFO"
    return Consequence(f"dlopen(\"{gen.shim.soname}\")", effect, "shim", message=said)


def shim_cannot_load(gen: Generation, error: str) -> Consequence:
    """The application's own dlopen of the shim (or its DT_NEEDED entry) fails: nothing of cuDNN runs."""
    return Consequence(calls=f"dlopen(\"{gen.shim.soname}\")", effect=NO_START, library="shim",
                       message=f"it fails with \"{error}\"; a program that NEEDs it does not start (\"error while "
                               f"loading shared libraries: {error}\")")


# --- predictions against what happened ---------------------------------------------------------------

@dataclass(frozen=True)
class CallResult:
    """What one call of the exercise gave: a status, a value, no such function in the shim, or (the shim's own
    dlopen) ok or an error with dlerror's text."""

    kind: Literal["status", "value", "missing-symbol", "ok", "error"]
    number: int | None = None  # the status or the value
    text: str | None = None  # dlerror's, for "error"

    def __str__(self) -> str:
        if self.kind in ("status", "value"):
            return f"{self.kind}={self.number}"
        return f"error {self.text}" if self.kind == "error" else self.kind

    @classmethod
    def read(cls, text: str) -> CallResult:
        """The scenario app's printed form of a result ("status=3009", "value=92800", "missing-symbol", "ok",
        "error ..."): the one reader of that format, where the app's output comes in."""
        kind, equals, number = text.partition("=")
        if equals and kind in ("status", "value") and number.lstrip("-").isdigit():
            return cls(kind, int(number))  # type: ignore[arg-type]
        if text.startswith("error"):
            return cls("error", text=text[len("error"):].strip())
        return cls("missing-symbol") if text == "missing-symbol" else cls("ok")


@dataclass(frozen=True)
class Observed:
    """What a run of the exercise showed: each call's result, and how the process ended."""

    results: Mapping[str, CallResult]  # str(call) -> its result; "dlopen" -> the shim's own dlopen
    died_in: str | None  # str(call) running when the process died
    signal: str | None  # "SIGABRT", "SIGBUS"; "hang": still running at the time limit, and killed
    printed: tuple[str, ...]  # what cuDNN and the linker printed (stderr lines)

    def status(self, call: str) -> int | None:
        result = self.results.get(call)
        return result.number if result is not None and result.kind == "status" else None

    def value(self, call: str) -> int | None:
        result = self.results.get(call)
        return result.number if result is not None and result.kind == "value" else None


def disagreements(expected: Sequence[Expectation], truth: Observed) -> list[str]:
    """Where a prediction and an observed run disagree, call by call, in words; [] when they agree."""
    wrong: list[str] = []
    for index, expectation in enumerate(expected):
        call = str(expectation.call)
        result = truth.results.get(call)
        got = str(result) if result is not None else None
        said = f"{call}: predicted {_said(expectation)}"
        if expectation.outcome == NO_START:  # the app's dlopen of the shim, or the program's own start
            refused = result is not None and result.kind == "error" and (expectation.message or "") in (got or "")
            never = got is None and bool(expectation.message) and any(
                (expectation.message or "") in line for line in truth.printed)  # ld.so's line, before main
            if not (refused or never):
                wrong.append(f"{said} ({expectation.message}), got {got}")
            return wrong
        if expectation.outcome in (ABORT, SIGBUS, HANG):
            want = {ABORT: "SIGABRT", SIGBUS: "SIGBUS", HANG: "hang"}[Effect(expectation.outcome)]
            if truth.died_in != call or truth.signal != want:
                wrong.append(f"{said}, but the process {_fate(truth, call)}")
            elif expectation.outcome == ABORT and expectation.message and not any(
                    _same_message(expectation.message, line) for line in truth.printed):
                wrong.append(f"{said}, and cuDNN printed {truth.printed[-1:]} instead")
            if index + 1 < len(expected):
                wrong.append(f"predicted calls after the death at {call}")
            return wrong
        if expectation.outcome == "absent":
            if result is None or result.kind != "missing-symbol":
                wrong.append(f"{said}, got {got or truth.signal}")
        elif expectation.outcome == "value":
            if expectation.value is not None and truth.value(call) != expectation.value:
                wrong.append(f"{said}, got {got or truth.signal}")
        elif truth.status(call) != expectation.status:
            wrong.append(f"{said}, got {got or _fate(truth, call)}")
    if truth.signal:
        wrong.append(f"the process died of {truth.signal} in {truth.died_in}, which was predicted to return")
    return wrong


def _said(expectation: Expectation) -> str:
    if expectation.outcome == STATUS:
        return f"status={expectation.status}"
    if expectation.outcome == "value":
        return f"value={expectation.value}"
    return expectation.outcome


def _fate(truth: Observed, call: str) -> str:
    if truth.signal:
        return f"died of {truth.signal} in {truth.died_in}"
    result = truth.results.get(call)
    return f"returned {result}"


def _same_message(predicted: str, printed: str) -> bool:
    """cuDNN's line as predicted: exact, except that glibc names whichever undefined symbol it meets first."""
    if "undefined symbol:" in predicted and ", version " in predicted:
        head, _, tail = predicted.partition("undefined symbol:")
        version = tail.rpartition(", version ")[2]
        return printed.startswith(head) and printed.endswith(f"version {version}")
    return printed.rstrip(".") == predicted.rstrip(".")
