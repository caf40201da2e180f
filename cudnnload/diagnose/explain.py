"""``cudnnload explain "TEXT"``: a pasted error message, its known causes ranked, and the checks that tell
them apart, run on this machine.

Each pattern is the message as the library that prints it writes it (the source is cited beside it);
each cause carries a check over what discovery finds here (the installs, their plans and findings,
LD_LIBRARY_PATH, the driver). A cause whose check holds comes first, one the check rules out last.
Nothing is loaded: the checks read files and the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cudnnload.errors import UsageError
from cudnnload.judge.inventory import find
from cudnnload.resolve.catalog import GENERATIONS, SubLibrary, classify, parse_release
from cudnnload.resolve.discovery import Install, Inventory
from cudnnload.verdicts import Finding


@dataclass(frozen=True)
class Evidence:
    holds: bool | None  # True: this machine shows the cause; False: it rules it out; None: it cannot tell
    text: str


@dataclass(frozen=True)
class Cause:
    title: str
    why: str  # how this cause produces the message
    fix: str
    evidence: Evidence


@dataclass(frozen=True)
class Match:
    pattern: str  # the pattern's id
    line: str  # the line of the text it matched
    source: str  # who prints this, and where (the string in the library, a framework's source file)
    meaning: str
    causes: tuple[Cause, ...]  # most likely first: confirmed here, then open, then ruled out


@dataclass(frozen=True)
class Explanation:
    text: str
    matches: tuple[Match, ...]

    @property
    def recognized(self) -> bool:
        return bool(self.matches)


# --- what this machine shows --------------------------------------------------------------------------

@dataclass
class Machine:
    """The facts the checks read, gathered once, on first use."""

    environ: Mapping[str, str]
    site_paths: Sequence[str] | None = None  # where pip wheels are looked for (default: this Python's path)
    _inventory: Inventory | None = field(default=None, repr=False)
    _gpu: object | None = field(default=None, repr=False)

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = find(environ=self.environ, site_paths=self.site_paths)
        return self._inventory

    @property
    def gpu(self) -> object:
        if self._gpu is None:
            from cudnnload.loading.gpu import gpu_facts

            self._gpu = gpu_facts(self.environ)
        return self._gpu

    def installs(self, major: int | None = None) -> tuple[Install, ...]:
        return tuple(i for i in self.inventory.installs if major is None or i.major == major)

    def findings(self, *codes: str, major: int | None = None) -> list[tuple[Install, Finding]]:
        return [(i, f) for i in self.installs(major) for f in i.all_findings if f.code in codes]


Check = Callable[[Machine], Evidence]


def _where(found: Sequence[tuple[Install, Finding]]) -> str:
    return "; ".join(f"{f.path or i.folder}: {f.message}" for i, f in found[:3]) + (
        f" (and {len(found) - 3} more)" if len(found) > 3 else "")


def missing_here(lib: SubLibrary | None, soname: str) -> Check:
    def check(machine: Machine) -> Evidence:
        major = lib.major if lib else None
        found = [(i, f) for i, f in machine.findings("missing-sublibrary", "sublibrary-unloadable", major=major)
                 if soname in f.message or soname in (f.path or "")]
        if found:
            return Evidence(True, _where(found))
        if not machine.installs(major):
            return Evidence(None, f"no cuDNN {major or ''} install found here to look in".replace("  ", " "))
        return Evidence(False, f"every cuDNN {major or ''} install found here has {soname}".replace("  ", " "))
    return check


def findings_here(*codes: str, major: int | None = None, about: str | None = None) -> Check:
    def check(machine: Machine) -> Evidence:
        found = [(i, f) for i, f in machine.findings(*codes, major=major)
                 if about is None or about in f.message or about in (f.path or "")]
        if found:
            return Evidence(True, _where(found))
        if not machine.installs(major):
            return Evidence(None, "no cuDNN install found here to look in")
        return Evidence(False, f"no {' or '.join(codes)} in the {len(machine.installs(major))} cuDNN install(s) "
                               "found here")
    return check


def dependency_missing(soname: str) -> Check:
    def check(machine: Machine) -> Evidence:
        found = [(i, f) for i, f in machine.findings("missing-dependency", "no-driver") if soname in f.message]
        if found:
            return Evidence(True, _where(found))
        return Evidence(False if machine.installs() else None,
                        f"{soname} resolves for every cuDNN install found here" if machine.installs()
                        else "no cuDNN install found here to look in")
    return check


def not_on_linker_path(soname: str) -> Check:
    def check(machine: Machine) -> Evidence:
        from cudnnload.resolve import linker

        ctx_env = linker.LinkerEnv.from_environ(machine.environ)
        res = linker.resolve(soname, None, ctx_env)
        lib = classify(soname)
        wheels = [i for i in machine.installs(lib.major if lib else None) if i.distribution]
        if res.path and res.error is None:
            return Evidence(False, f"dlopen(\"{soname}\") from this Python finds {res.path} ({res.rule})")
        if wheels:
            return Evidence(True, f"{soname} is in {wheels[0].folder} ({wheels[0].distribution}), on no linker "
                                  "search path: a program that asks for it by name does not find it")
        return Evidence(True, f"dlopen(\"{soname}\") from this Python finds nothing: {res.error or 'not found'}")
    return check


def no_install(major: int) -> Check:
    def check(machine: Machine) -> Evidence:
        found = machine.installs(major)
        if found:
            return Evidence(False, f"cuDNN {major} is installed here: {found[0].folder}")
        others = machine.installs()
        return Evidence(True, f"no cuDNN {major} here" + (f"; cuDNN {others[0].major} is, in {others[0].folder}"
                                                            if others else ""))
    return check


def ld_library_path_cudnn(release: str | None = None) -> Check:
    """A cuDNN on LD_LIBRARY_PATH (of ``release``, when given: another release there cannot be the one named)."""
    def check(machine: Machine) -> Evidence:
        folders = [f for f in machine.environ.get("LD_LIBRARY_PATH", "").split(":") if f]
        found = [i for i in machine.installs() if i.folder in folders or "LD_LIBRARY_PATH" in i.found_via]
        held = "LD_LIBRARY_PATH holds " + "; ".join(f"cuDNN {i.release} in {i.folder}" for i in found[:3])
        if found and (release is None or any(str(i.release).startswith(release) for i in found)):
            return Evidence(True, held)
        if found:
            return Evidence(None, f"{held}, not {release}")
        return Evidence(False, "no cuDNN on LD_LIBRARY_PATH" if folders else "LD_LIBRARY_PATH is not set")
    return check


def other_release_installed(release: str) -> Check:
    def check(machine: Machine) -> Evidence:
        found = [i for i in machine.installs() if i.release and str(i.release).startswith(release)]
        if found:
            return Evidence(True, "; ".join(f"cuDNN {i.release} in {i.folder} (found via {i.found_via})"
                                            for i in found[:3]))
        return Evidence(False, f"no cuDNN {release} installed here: it came from somewhere cudnnload does not "
                               "search (a framework's own folder?), or it was loaded first by another library")
    return check


def driver_state(want: str) -> Check:
    """``want``: "missing" (no driver or no visible GPU) or "old" (older than the build's CUDA)."""
    def check(machine: Machine) -> Evidence:
        facts = machine.gpu
        found = getattr(facts, "driver_found", False)
        devices = getattr(facts, "devices", ())
        if want == "missing":
            if not found:
                return Evidence(True, getattr(facts, "reason", None) or "no NVIDIA driver")
            hidden = machine.environ.get("CUDA_VISIBLE_DEVICES")
            if not devices:
                return Evidence(True, "the driver shows no GPU" + (f" (CUDA_VISIBLE_DEVICES={hidden!r})"
                                                                   if hidden is not None else ""))
            return Evidence(False, f"the driver is there and shows {len(devices)} GPU(s)")
        if not found:
            return Evidence(None, "no driver here to compare")
        driver = getattr(facts, "driver_cuda", None)
        builds = {i.cuda_major for i in machine.installs() if i.cuda_major}
        if driver and builds and max(builds) > int(str(driver).split(".")[0]):
            return Evidence(True, f"the driver supports CUDA {driver}; a cuDNN here is built for CUDA {max(builds)}")
        return Evidence(False, f"the driver supports CUDA {driver}")
    return check


def unknown(text: str) -> Check:
    return lambda machine: Evidence(None, text)


# --- the messages ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pattern:
    id: str
    regex: re.Pattern[str]
    source: str
    meaning: Callable[[re.Match[str]], str]
    causes: Callable[[re.Match[str]], Sequence[tuple[str, str, str, Check]]]  # (title, why, fix, check)


def _serving(function: str) -> SubLibrary | None:
    """The sub-library whose calls include ``function`` (catalog examples and calls, then the C API table)."""
    for gen in (GENERATIONS[9], GENERATIONS[8]):
        for lib in gen.sublibraries:
            if function in lib.examples or any(call.function == function for call in lib.calls) \
                    or function == lib.version_check:
                return lib
    from cudnnload.loading.capi import PROTOTYPES

    prototype = PROTOTYPES.get(function)
    return GENERATIONS[9].library(prototype.owner_v9) if prototype else None


def _through_symlink(major: int) -> tuple[str, str, str, Check]:
    return ("the shim is reached through a symlink", "$ORIGIN is the link's folder, where the sub-libraries are not",
            "link the whole folder, or put the real folder on LD_LIBRARY_PATH",
            findings_here("origin-through-symlink", major=major))


def _could_not_load_library(m: re.Match[str]) -> list[tuple[str, str, str, Check]]:
    soname, error = m.group("soname"), m.group("error") or ""
    lib = classify(soname)
    soname = f"{lib.stem}.so.{lib.major}" if lib else soname  # the name the shim opens, whatever was quoted
    causes: list[tuple[str, str, str, Check]] = []
    needed = re.match(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file", error)
    if "undefined symbol" in error:
        causes.append(("two cuDNN 8 releases are mixed", f"{soname} binds to symbols of a sibling of its own release; "
                       "a sibling of another release lacks them", "replace the folder with one complete cuDNN 8",
                       findings_here("mixed-release", major=8)))
    if needed and needed.group(1) != soname:
        dep = needed.group(1)
        causes.append((f"{soname} needs {dep}, which is not installed", f"dlopen of {soname} loads its DT_NEEDED "
                       f"{dep} first, and nothing provides it (8.5 and older NEED libcublas.so.11)",
                       f"install what provides {dep}", dependency_missing(dep)))
    if "file too short" in error or "invalid ELF header" in error or "cannot read file data" in error:
        causes.append((f"{soname} is damaged", "the file is cut short or not a library (a Git LFS pointer, an "
                       "interrupted copy)", "reinstall the package that owns it",
                       findings_here("truncated", "not-elf", "empty-file", "damaged-elf", about=soname)))
    causes.append((f"{soname} is missing beside libcudnn.so.8", "the cuDNN 8 shim opens exactly that name, from its "
                   "own RUNPATH $ORIGIN first, and calls abort() when it fails", "reinstall the complete cuDNN 8 (pip "
                   "install --force-reinstall nvidia-cudnn-cu12==8.9.7.29, or the distribution package)",
                   missing_here(lib, soname)))
    causes.append(_through_symlink(8))
    return causes


def _invalid_handle(m: re.Match[str]) -> list[tuple[str, str, str, Check]]:
    function = m.group("function")
    if function.startswith("cublasLt"):
        return [("cuBLASLt is not installed where cuDNN looks", "cuDNN 9.28 loads cuBLASLt to create engine "
                 "heuristics (the first graph-API convolution) and aborts when it cannot",
                 "pip install nvidia-cublas-cu12 (or nvidia-cublas for CUDA 13), the cuDNN wheel's own dependency",
                 dependency_missing("libcublasLt.so"))]
    lib = _serving(function)
    name = lib.soname if lib else "the sub-library that serves it"
    fatal = " and aborts" if lib and lib.key == "graph" else "; the call returns 3009"
    return [
        (f"{name} is missing beside libcudnn.so.9", f"the shim could not dlopen {name}, which serves {function}"
         f"{fatal}", "reinstall the complete cuDNN (pip install --force-reinstall nvidia-cudnn-cu12)",
         missing_here(lib, name) if lib else unknown("run `cudnnload doctor` for the install")),
        (f"{name} is of another cuDNN release", "a sub-library binds to release-private symbols of "
         "libcudnn_graph; one of another release fails to load", "replace the folder with one complete release, "
         "or remove the other cuDNN from LD_LIBRARY_PATH", findings_here("mixed-release", major=9)),
        _through_symlink(9),
        (f"{name} is damaged", "a cut or non-ELF file fails to load", "reinstall the package that owns it",
         findings_here("truncated", "not-elf", "empty-file", "damaged-elf", major=9)),
    ]


def _unable_to_load_any(m: re.Match[str]) -> list[tuple[str, str, str, Check]]:
    names = [name.strip() for name in m.group("names").split(",")]
    lib = next((found for name in names if (found := classify(name))), None)
    name = lib.soname if lib else names[-1]
    causes: list[tuple[str, str, str, Check]] = []
    if lib and lib.key == "engines_runtime_compiled":
        causes.append(("no NVIDIA driver: libcuda.so.1 is missing", "libcudnn_engines_runtime_compiled NEEDs "
                       "libcuda.so.1 (9.28); without a driver it cannot load: expected on a machine without a GPU",
                       "nothing on a machine without a GPU; elsewhere install the NVIDIA driver",
                       driver_state("missing")))
    causes += [
        (f"{name} is missing", f"libcudnn_graph (or the shim, before 9.2) tried every name of {name} and found none",
         "reinstall the complete cuDNN", missing_here(lib, name)),
        (f"{name} comes from another release", "graph searches its RUNPATH after LD_LIBRARY_PATH: a cuDNN of another "
         "release there shadows the engines beside it, and they fail to load with graph",
         "remove the other cuDNN from LD_LIBRARY_PATH", ld_library_path_cudnn()),
        ("two releases mixed in one folder", "engines bind to graph's release-private symbols",
         "replace the folder with one complete release", findings_here("mixed-release", major=9)),
    ]
    return causes


def _cannot_open(m: re.Match[str]) -> list[tuple[str, str, str, Check]]:
    soname = m.group("soname")
    lib = classify(soname)
    major = lib.major if lib else 9
    return [
        (f"cuDNN {major} is not installed", "nothing anywhere provides the name", "pip install nvidia-cudnn-cu12 "
         "(cuDNN 9; nvidia-cudnn-cu12==8.9.7.29 for 8)", no_install(major)),
        (f"{soname} is installed as a pip wheel but on no linker path", "frameworks load the wheel's shim by its full "
         "path; a program (or a library) that asks for the name alone does not find it",
         "export LD_LIBRARY_PATH=<the wheel's nvidia/cudnn/lib>, or cudnnload.load() before the program asks",
         not_on_linker_path(soname)),
        (f"a library {soname} NEEDs is missing (it is there, its dependency is not)", "dlopen reports the first "
         "name it could not open; when that is the library itself, nothing of that name was found",
         "`cudnnload doctor " + soname + "` names what is missing", dependency_missing(soname)),
    ]


def _undefined_symbol(m: re.Match[str]) -> list[tuple[str, str, str, Check]]:
    version = m.group("version")
    return [
        ("two cuDNN releases are mixed", f"a library needs a symbol of {version} that the {version} that loaded "
         "lacks: cuDNN's sub-libraries bind to each other's release-private symbols", "one complete release: "
         "remove the stray files, or the other cuDNN from LD_LIBRARY_PATH", findings_here(
             "mixed-release", "sublibrary-elsewhere")),
        ("another cuDNN was loaded first", f"a {version} already in the process is handed to anyone who asks for "
         "it, whichever folder they are in (the already-loaded rule)", "load one cuDNN per process: "
         "`cudnnload doctor -- YOUR-PROGRAM` shows which came first", ld_library_path_cudnn()),
    ]


def _status(m: re.Match[str]) -> list[tuple[str, str, str, Check]]:
    name = m.group("status").upper()
    if "SUBLIBRARY_VERSION_MISMATCH" in name or name == "CUDNN_STATUS_VERSION_MISMATCH":
        return [("sub-libraries of another release than the shim", "a VersionCheck compares the sub-library's "
                 "release with the shim's", "one complete release", findings_here("mixed-release")),
                ("another cuDNN on LD_LIBRARY_PATH", "a sub-library missing beside the shim is taken from there",
                 "remove it from LD_LIBRARY_PATH", ld_library_path_cudnn())]
    if "NOT_INITIALIZED" in name:
        return [("no NVIDIA driver, or no visible GPU", "cudnnCreate needs a device (cuDNN's reason: "
                 "cudaGetDeviceCount(&count) != cudaSuccess)", "install the driver; in a container run with --gpus "
                 "all; check CUDA_VISIBLE_DEVICES", driver_state("missing")),
                ("the driver is older than the CUDA cuDNN was built with", "cuDNN's static CUDA runtime refuses an "
                 "older driver", "upgrade the driver, or install the cuDNN build for its CUDA", driver_state("old")),
                ("the GPU is out of memory", "cudnnCreate allocates on the device", "free GPU memory (another "
                 "process, a framework's cache)", unknown("check nvidia-smi"))]
    if "SUBLIBRARY_LOADING_FAILED" in name or "SUBLIBRARY_UNAVAILABLE" in name:
        return [("a sub-library could not be loaded", "the shim (3009) or graph (1008, the engines) could not dlopen "
                 "what serves the call", "`cudnnload doctor` names which and why",
                 findings_here("missing-sublibrary", "sublibrary-unloadable", "mixed-release", "missing-dependency")),
                ("no NVIDIA driver (1008 from the graph API)", "9.28's runtime-compiled engines NEED libcuda.so.1",
                 "nothing on a machine without a GPU", driver_state("missing"))]
    if "INTERNAL_ERROR" in name or "EXECUTION_FAILED" in name:
        return [("the GPU ran out of memory", "cuDNN reports a failed device allocation or kernel launch as an "
                 "internal error", "lower the batch size, free memory", unknown("check nvidia-smi")),
                ("the driver is older than cuDNN's CUDA", "kernels built for a newer toolkit fail to load",
                 "upgrade the driver", driver_state("old")),
                ("mixed cuDNN releases", "sub-libraries of different releases disagree on internal structures",
                 "one complete release", findings_here("mixed-release"))]
    return [("see cuDNN's reason", "cuDNN's last error string (cudnnGetLastErrorString, 9.0+) says more",
             "run with CUDNN_LOGLEVEL_DBG=2", unknown("no check for this status"))]


def _version_pair(m: re.Match[str], framework: str) -> list[tuple[str, str, str, Check]]:
    built = ".".join(re.findall(r"\d+", m.group("built")))  # "(9, 10, 2)" or "9.10.2." -> "9.10.2"
    found = ".".join(re.findall(r"\d+", m.group("found")))
    try:
        older = parse_release(found) < parse_release(built)
    except ValueError:
        older = True
    short = ".".join(found.split(".")[:2])
    causes: list[tuple[str, str, str, Check]] = [
        (f"LD_LIBRARY_PATH holds cuDNN {found}", f"{framework} loads the cuDNN the linker finds first; a folder on "
         "LD_LIBRARY_PATH comes before the framework's own", "unset LD_LIBRARY_PATH (or remove the cuDNN folder "
         "from it) for this program", ld_library_path_cudnn(short)),
        (f"another library loaded cuDNN {found} first", "the first cuDNN in the process is the one everybody gets "
         "(another framework imported earlier, a plugin)", "import the framework first, or `cudnnload.load()` its "
         "cuDNN first; `cudnnload doctor -- YOUR-PROGRAM` shows who loaded it", other_release_installed(short)),
    ]
    if older:
        causes.append((f"the installed cuDNN wheel ({found}) is older than the build ({built})", "a pip install of "
                       "another package pinned an older nvidia-cudnn", f"pip install 'nvidia-cudnn-cu12>={built}'",
                       other_release_installed(short)))
    return causes


PATTERNS: tuple[Pattern, ...] = (
    # libcudnn.so.8: "Could not load library %s. Error: %s" (string in the 8.x shims; measured on 8.9.7)
    Pattern("could-not-load-library", re.compile(r"Could not load library (?P<soname>libcudnn\w*\.so(?:\.\d+)*)"
                                                 r"(?:\. Error: (?P<error>.*))?"),
            "the cuDNN 8 shim (libcudnn.so.8), just before it calls abort()",
            lambda m: f"the cuDNN 8 shim could not dlopen {m.group('soname')} and aborts the process",
            _could_not_load_library),
    # libcudnn.so.9: "Invalid handle. Cannot load symbol %s" (9.x shims, cudnn-facts §1.2)
    Pattern("invalid-handle", re.compile(r"Invalid handle\. Cannot load symbol (?P<function>\w+)"),
            "the cuDNN 9 shim (libcudnn.so.9): the library serving the call could not be opened",
            lambda m: f"{m.group('function')} could not be reached: the library serving it did not load (the call "
                      "returns 3009, or aborts when that library is libcudnn_graph or cuBLASLt)", _invalid_handle),
    # 9.0/9.1 shims and 9.28's graph: "Unable to load any of {%s}" (loading-in-the-wild §2; measured)
    Pattern("unable-to-load-any", re.compile(r"Unable to load any of \{(?P<names>[^}]*)\}"),
            "cuDNN 9 (libcudnn_graph for the engines; the shim for sub-libraries in 9.0 and 9.1)",
            lambda m: "none of the names of one library could be opened; the call returns 1008 "
                      "(SUBLIBRARY_LOADING_FAILED; 1001 in 9.0) or 3009", _unable_to_load_any),
    # glibc dlerror, elf/dl-load.c: "%s: cannot open shared object file: No such file or directory"
    Pattern("cannot-open", re.compile(r"(?P<soname>libcudnn[\w.]*\.so[\w.]*): cannot open shared object file"),
            "glibc's dynamic linker (dlopen's error, or a program that NEEDs it failing to start)",
            lambda m: f"no file named {m.group('soname')} was found on the search paths of whoever asked",
            _cannot_open),
    # glibc, elf/dl-lookup.c: "undefined symbol: %s, version %s"
    Pattern("undefined-symbol", re.compile(r"undefined symbol: (?P<symbol>\S+?),? version (?P<version>"
                                           r"lib(?:cudnn|cublas)[\w.]*\.so\.\d+)"),
            "glibc's dynamic linker, loading a cuDNN library",
            lambda m: f"a library needs {m.group('symbol')} from {m.group('version')}, and the one that loaded "
                      "does not have it", _undefined_symbol),
    # cudnnStatus_t names (cudnn_graph.h 9.x, cudnn_ops_infer.h 8.x)
    Pattern("status", re.compile(r"(?P<status>CUDNN_STATUS_[A-Z_]+)"),
            "a cuDNN call's status (cudnnStatus_t), as frameworks print it",
            lambda m: f"a cuDNN call returned {m.group('status')}", _status),
    # torch/backends/cudnn/__init__.py, _init(): "cuDNN version incompatibility: PyTorch was compiled against
    # {compile} but found runtime version {runtime}" (older releases: "but linked against {runtime}")
    Pattern("pytorch-version", re.compile(r"cuDNN version incompatibility: PyTorch was compiled\s+against "
                                          r"(?P<built>\([\d, ]+\)) but (?:found runtime version|linked against) "
                                          r"(?P<found>\([\d, ]+\))"),
            "PyTorch (torch/backends/cudnn/__init__.py), at the first cuDNN use",
            lambda m: f"PyTorch was built with cuDNN {m.group('built')} and the cuDNN it loaded is "
                      f"{m.group('found')}: same major and at least the built minor are needed",
            lambda m: _version_pair(m, "PyTorch")),
    # xla/stream_executor/cuda/cuda_dnn.cc (TensorFlow and JAX): "Loaded runtime CuDNN library: %s but source
    # was compiled with: %s.  CuDNN library needs to have matching major version and equal or higher minor ..."
    Pattern("xla-version", re.compile(r"Loaded runtime CuDNN library: (?P<found>\d+(?:\.\d+)*) but source was "
                                      r"compiled with:? (?P<built>\d+(?:\.\d+)*)"),
            "XLA's stream executor (TensorFlow, JAX): the cuDNN loaded is older than the build",
            lambda m: f"the framework was built with cuDNN {m.group('built')}; the one loaded is {m.group('found')}",
            lambda m: _version_pair(m, "TensorFlow / JAX")),
)


def explain(text: str, *, environ: Mapping[str, str] | None = None,
            site_paths: Sequence[str] | None = None) -> Explanation:
    """The known causes of each cuDNN message in ``text``, ranked by what this machine shows (its
    environment ``environ``, the pip wheels on ``site_paths``; default: this process's)."""
    if not text.strip():
        raise UsageError("nothing to explain: paste the error message", fix='cudnnload explain "Could not load ..."')
    machine = Machine(dict(os.environ if environ is None else environ), site_paths)
    matches: list[Match] = []
    seen: set[tuple[str, str]] = set()
    spans: list[tuple[int, int]] = []  # a message inside another (the dlerror inside "Could not load library") is
    for pattern in PATTERNS:          # that one's detail, not a message of its own
        for found in pattern.regex.finditer(text):
            key = (pattern.id, found.group(0))
            if key in seen or any(start <= found.start() and found.end() <= end for start, end in spans):
                continue
            seen.add(key)
            spans.append(found.span())
            causes = [Cause(title, why, fix, check(machine)) for title, why, fix, check in pattern.causes(found)]
            order = {True: 0, None: 1, False: 2}
            ranked = sorted(enumerate(causes), key=lambda item: (order[item[1].evidence.holds], item[0]))
            matches.append(Match(pattern.id, _line_of(text, found), pattern.source, pattern.meaning(found),
                                 tuple(cause for _, cause in ranked)))
    aborted = re.search(r"(Aborted|IOT instruction)(?: \(core dumped\))?", text)
    if aborted:
        before = [m for m in matches if m.pattern in _ABORTING and text.find(m.line) < aborted.start()]
        if before:
            matches.append(Match("aborted", _line_of(text, aborted), "the shell: the process died of SIGABRT (exit "
                                 "status 134)", f"cuDNN called abort() right after printing: {before[-1].line}",
                                 before[-1].causes))
        else:
            matches.append(Match("aborted", _line_of(text, aborted), "the shell: the process died of SIGABRT",
                                 "the process called abort(); no cuDNN line before it was pasted",
                                 (Cause("cuDNN aborted after a line that was not pasted", "the cuDNN 8 shim, and the "
                                        "9 shim for libcudnn_graph and cuBLASLt, abort after one line on stderr",
                                        "paste the line before it, or run `cudnnload doctor -- YOUR-PROGRAM`",
                                        Evidence(None, "the text holds no cuDNN message")),)))
    return Explanation(text, tuple(matches))


_ABORTING = ("could-not-load-library", "invalid-handle", "undefined-symbol")


def _line_of(text: str, found: re.Match[str]) -> str:
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    return text[start:end if end >= 0 else len(text)].strip()
