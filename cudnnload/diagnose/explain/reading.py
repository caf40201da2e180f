"""What a pasted error text shows, read from the text alone: the messages it holds (`Signal`), and the facts
around them (`Clue`: the platform, the install kind a path shows, the framework, versions, memory or
driver lines). Pure: no file, no environment, no machine is looked at, so the same text reads the same
everywhere.

Each message pattern is the text as the program that prints it writes it; the comment above it names the
source (the library's format string, a framework's source file). The `Error:` part of a message, and any
``X: cannot open shared object file`` inside it, decide which library really failed (`Signal.failed`).
"""

from __future__ import annotations

import itertools
import math
import ntpath
import posixpath
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from cudnnload.diagnose.explain import catalog as messages
from cudnnload.diagnose.explain import gpus
from cudnnload.resolve.catalog import GENERATIONS, SubLibrary

# --- the libraries a message can name -----------------------------------------------------------------

# What a library name (Linux soname, Windows DLL, a path to either) is, for the ranking: the cuDNN shim, a
# cuDNN sub-library, a cuDNN engine library (opened by libcudnn_graph in cuDNN 9), or one of the libraries
# cuDNN or a framework needs. Windows names: cuDNN 8/9's `cudnn64_8.dll`, `cudnn_ops_infer64_8.dll`,
# `cudnn_ops64_9.dll`; CUDA's `nvrtc64_120_0.dll`, `cublasLt64_12.dll`, `cudart64_12.dll`, `nvcuda.dll`.
_LIBRARY_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cudnn-engine", re.compile(r"^(?:lib)?cudnn_(?:engines_\w+?|heuristic)(?:64_\d+\.dll|\.so\b.*|\.dll)$")),
    ("cudnn", re.compile(r"^(?:lib)?cudnn(?:\.so\b.*|64_\d+\.dll|\.dll)$")),
    ("cudnn-sub", re.compile(r"^(?:lib)?cudnn_\w+?(?:64_\d+\.dll|\.so\b.*|\.dll)$")),
    ("nvrtc", re.compile(r"^(?:lib)?nvrtc")),
    ("libcuda", re.compile(r"^(?:libcuda\.so\b.*|nvcuda\.dll)$")),
    ("cublas", re.compile(r"^(?:lib)?cublas")),
    ("cudart", re.compile(r"^(?:lib)?cudart")),
    # the CUDA toolkit's other libraries a framework's GPU build links (cuFFT, cuRAND, cuSPARSE, cuSOLVER, the
    # nvJitLink cuSPARSE 12 needs, and the cuPTI JAX checks): "libcufft.so.11", "cusparse64_12.dll"
    ("cuda-math", re.compile(r"^(?:lib)?(?:cufft|curand|cusparse|cusolver|nvjitlink|cupti)")),
    ("zlib", re.compile(r"^(?:zlibwapi\.dll|libz\.so\b.*)$")),
    ("libstdc++", re.compile(r"^libstdc\+\+")),
    ("glibc", re.compile(r"^(?:libc|libm|libpthread|libdl|librt)\.so\.6$|^ld-linux")),
    ("framework", re.compile(r"onnxruntime_providers_cuda|^libtorch|^_C\.|^libctranslate2|^libpaddle|^libtensorflow"
                             r"|^xla_cuda_plugin|^libcaffe")),
)


CUDNN_CLASSES = ("cudnn", "cudnn-sub", "cudnn-engine")


def library_class(name: str) -> str | None:
    """``"cudnn"``, ``"cudnn-sub"``, ``"cudnn-engine"``, ``"nvrtc"``, ``"libcuda"``, ``"cublas"``, ``"cudart"``,
    ``"cuda-math"``, ``"zlib"``, ``"libstdc++"``, ``"glibc"``, ``"framework"``, or None for a name of none of these."""
    base = ntpath.basename(posixpath.basename(name.strip().strip("'\"`"))).lower()
    return next((kind for kind, pattern in _LIBRARY_CLASSES if pattern.search(base)), None)


# torch/__init__.py on Windows (_load_dll_libraries) lists the DLLs its torch\\lib folder holds and loads each:
# "Error loading "<torch\\lib\\X.dll>" or one of its dependencies" names a file that is there
_TORCH_LISTED = re.compile(r'Error loading "[^"\n]*[\\/]torch[\\/]lib[\\/][^"\\/\n]+\.dll" or one of its '
                           r'dependencies')


def listed_by_torch(signal: Signal) -> str | None:
    """PyTorch's Windows loader could not load a DLL of its own torch\\lib folder, which it found by listing the
    folder (error 126): the file is there, so a DLL it needs is what was not found. The words that say so."""
    found = _TORCH_LISTED.search(signal.line)
    return found.group(0) if found and signal.error == "error 126" else None


def library_major(name: str) -> int | None:
    """The cuDNN major a cuDNN library name belongs to: ``.so.8``, ``64_8.dll``; cuDNN 9's names without a
    number (``libcudnn_graph``, ``libcudnn_cnn.so``) are 9, the ``_infer``/``_train`` ones 8 (catalog)."""
    base = ntpath.basename(posixpath.basename(name)).lower()
    if library_class(base) not in CUDNN_CLASSES:
        return None
    number = re.search(r"\.so\.(\d+)|64_(\d+)\.dll$", base)
    if number:
        return int(number.group(1) or number.group(2))
    stem = re.sub(r"(?:64_\d+)?\.(?:so|dll).*$", "", base).removeprefix("lib")
    for major in (9, 8):
        if any(lib.stem.removeprefix("lib") == stem for lib in GENERATIONS[major].libraries if lib.key != "shim"):
            return major
    return None


# CUDA's own libraries whose file name carries the CUDA major they belong to: libcublas.so.12, libcudart.so.11.0,
# libnvrtc.so.11.2 (every 11.2+), cublas64_12.dll, cudart64_110.dll (11.x), nvrtc64_120_0.dll (12.x); the math
# libraries' numbers are their own (nvidia-cufft-cu12 ships libcufft.so.11)
_CUDA_NAMED = ("cublas", "cudart", "nvrtc")


def cuda_major_of(name: str) -> int | None:
    """The CUDA major a cuBLAS, CUDA runtime or NVRTC file name belongs to (``.so.12``; on Windows ``64_12``, and
    ``64_110``/``64_112_0``/``64_90``: the release's digits, the last being its minor), else None."""
    base = ntpath.basename(posixpath.basename(name)).lower()
    if library_class(base) not in _CUDA_NAMED:
        return None
    found = re.search(r"\.so\.(\d+)|64_(\d+)(?:_\d+)?\.dll$", base)
    if not found:
        return None
    number = int(found.group(1) or found.group(2))
    major = number // 10 if found.group(2) and number >= 20 else number
    return major if 7 <= major <= 13 else None


def serving(function: str) -> SubLibrary | None:
    """The cuDNN 9 (or 8) library whose calls include ``function``: the catalog's examples and calls, then
    the C API table (who owns each prototype in cuDNN 9)."""
    for major in (9, 8):
        for lib in GENERATIONS[major].sublibraries:
            if function in lib.examples or function == lib.version_check or any(
                    call.function == function for call in lib.calls):
                return lib
    from cudnnload.loading.capi import PROTOTYPES

    prototype = PROTOTYPES.get(function)
    return GENERATIONS[9].library(prototype.owner_v9) if prototype else None


# --- versions -----------------------------------------------------------------------------------------

def version_of(text: str) -> tuple[int, ...] | None:
    """A cuDNN version as frameworks print it: ``(9, 19, 0)``, ``8.5.0``, or cudnnGetVersion's integer
    (``7605`` = 7.6.5 up to cuDNN 8; ``90100`` = 9.1.0 from cuDNN 9, cudnn_version.h's CUDNN_VERSION)."""
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    if not numbers:
        return None
    if len(numbers) > 1:
        return tuple(numbers)
    value = numbers[0]
    if value >= 10000:
        return value // 10000, value % 10000 // 100, value % 100
    if value >= 1000:
        return value // 1000, value % 1000 // 100, value % 100
    return (value,)


def dotted(version: tuple[int, ...] | None) -> str:
    return ".".join(str(n) for n in version) if version else "?"


# --- the messages -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Signal:
    """One message of the text that cudnnload knows, and what it says."""

    pattern: str  # the pattern's id
    kind: str  # the message kind the priors are kept for (ranking.PRIORS): "cudnn-not-found", "status:..."
    line: str  # the line of the text it is on
    source: str  # who prints it, and where
    meaning: str
    library: str | None = None  # the library the message names
    failed: str | None = None  # the library that really failed: the one its Error: part names, else `library`
    error: str | None = None  # the Error: part (dlerror's text, a Windows error code)
    status: str | None = None  # a cudnnStatus_t name, without CUDNN_STATUS_
    built: str | None = None  # the cuDNN a framework was built with, dotted
    found: str | None = None  # the cuDNN it found at run time, dotted
    quote: str = ""  # the words of the text that are the message (not the whole line)
    families: tuple[str, ...] = ()  # the causes its catalog entry points to, most likely first (empty: its kind's)
    warning: bool = False  # only a warning or information, not the failure
    entry: str | None = None  # its catalog entry (catalog.Entry.id), where one holds its template

    @property
    def failed_class(self) -> str | None:
        return library_class(self.failed) if self.failed else None


@dataclass(frozen=True)
class Pattern:
    id: str
    regex: re.Pattern[str]
    source: str
    read: Callable[[re.Match[str]], Signal | None]  # None: the match is not about cuDNN after all


def group(found: re.Match[str], *names: str) -> str | None:
    """The first of ``names`` that took part in the match: one pattern, several spellings."""
    return next((value for name in names if (value := found.group(name)) is not None), None)


def _line(found: re.Match[str]) -> str:
    text = found.string
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    return text[start:end if end >= 0 else len(text)].strip()[:400]


# What a dlerror or Windows error says failed: "libnvrtc.so: cannot open shared object file",
# "/x/libnvrtc.so: undefined symbol: nvrtcGetCUBIN", "version `GLIBC_2.27' not found (required by ...)".
# A library name or path as dlerror prints it: starts after a separator (so a long run of name characters is
# tried from one place, not from each), ends in .so and its version numbers.
_NAME = r"(?<![^\s:'\"`()\[\]])[^\s:'\"`()\[\]]*?\.so(?:\.\d+)*"
_CANNOT_OPEN = re.compile(rf"(?P<lib>{_NAME}): cannot open shared object file")
_UNDEFINED = re.compile(rf"(?P<lib>{_NAME}): undefined symbol: (?P<symbol>[^\s,]+)(?:, version (?P<version>\S+))?")
_VERSION_NOT_FOUND = re.compile(r"(?<![^\s:'\"`()\[\]])(?P<dep>[^\s:'\"`()\[\]]+): version "
                                r"`(?P<version>(?:GLIBC|GLIBCXX|CXXABI)_[\d.]+)' not found")


# Windows error 127 (ERROR_PROC_NOT_FOUND) by its code or its English words: a DLL was found, a function it binds to
# was not in the DLL of that name already loaded
PROCEDURE_MISSING = re.compile(r"\b127\b|procedure could not be found")


def _failed_in(error: str | None, default: str | None) -> tuple[str | None, str]:
    """The library an Error: part names, and how it failed: "missing", "undefined-symbol", "too-old"."""
    if error:
        if (found := _VERSION_NOT_FOUND.search(error)):
            return found.group("dep"), "too-old"
        if (found := _UNDEFINED.search(error)):
            return found.group("lib"), "undefined-symbol"
        if (found := _CANNOT_OPEN.search(error)):
            return found.group("lib"), "missing"
        if PROCEDURE_MISSING.search(error):
            return default, "undefined-symbol"
    return default, "missing"


def load_kind(failed: str | None, how: str) -> str:
    """The message kind of a library that failed to load: by what the library is, not by who printed it."""
    kind = library_class(failed) if failed else None
    if how == "too-old":
        return "dependency-load:glibc"
    if how == "undefined-symbol":
        return "dependency-symbol:nvrtc" if kind == "nvrtc" else "symbol-mismatch"
    if kind in ("cudnn", None, "framework"):
        return "cudnn-not-found"
    if kind == "cudnn-sub":
        return "sublibrary-load"
    if kind == "cudnn-engine":
        return "engine-load"
    return f"dependency-load:{kind}"


def _load_signal(pattern: str, found: re.Match[str], source: str, library: str | None, error: str | None,
                 meaning: str) -> Signal | None:
    failed, how = _failed_in(error, library)
    if library_class(library or "") is None and library_class(failed or "") is None:
        return None
    return Signal(pattern, load_kind(failed, how), _line(found), source, meaning, library, failed, error)


def _could_not_load_library(found: re.Match[str]) -> Signal | None:
    library = found.group("lib")
    error = found.group("error") or (f"error code {found.group('code')}" if found.group("code") else None)
    after = found.string[found.end():found.end() + 200]
    # Julia, Python: the Windows message on the next line (Julia's ConsoleLogger starts it with "│")
    if error is None and (windows := re.match(r"[\s│]*(The specified (?:module|procedure) could not be found|Access "
                                              r"is denied)", after)):
        error = windows.group(1)
    return _load_signal("could-not-load-library", found, "the cuDNN 8 shim (libcudnn.so.8, cudnn64_8.dll) before "
                        "it aborts; Julia's and other loaders' dlopen", library, error,
                        f"{library} could not be loaded" + (f": {error}" if error else ""))


def _could_not_locate(found: re.Match[str]) -> Signal | None:
    library = found.group("lib")
    if not library.lower().endswith(".dll"):  # libcudnn.so.8's second line: "Please make sure %s is in your ..."
        return _load_signal("could-not-locate", found, "the cuDNN 8 shim (libcudnn.so.8), after a library it opens "
                            "by name failed to load", library, None, f"{library} could not be loaded by name")
    return _load_signal("could-not-locate", found, "the cuDNN Windows DLLs (cudnn64_8.dll, cudnn64_9.dll): the file "
                        "was found on no folder of the DLL search path", library, None,
                        f"{library} is on no folder Windows searches")


def _unable_to_load_any(found: re.Match[str]) -> Signal | None:
    if found.group("cudart"):
        return Signal("unable-to-load-any", "dependency-load:cudart-frontend", _line(found), "cudnn-frontend's "
                      "run-time loading of the CUDA runtime", "no CUDA runtime library could be loaded", "libcudart.so",
                      "libcudart.so")
    names = [name.strip() for name in (found.group("names") or "").split(",") if name.strip()]
    if not names:
        return None
    library = names[-1]
    return _load_signal("unable-to-load-any", found, "cuDNN 9.0/9.1's shim (sub-libraries) and libcudnn_graph "
                        "(engines): every name of one library failed; the call returns a status", library, None,
                        f"none of the names of {library} could be opened")


def _invalid_handle(found: re.Match[str]) -> Signal | None:
    function = found.group("function")
    if function.startswith("cublasLt"):
        return Signal("invalid-handle", "dependency-load:cublas", _line(found), "the cuDNN 9 shim",
                      f"cuBLASLt ({function}) could not be loaded", "libcublasLt.so", "libcublasLt.so")
    lib = serving(function)
    library = lib.soname if lib else "libcudnn_graph.so.9"
    return Signal("invalid-handle", load_kind(library, "missing"), _line(found), "the cuDNN 9 shim (libcudnn.so.9): "
                  "the library serving the call could not be opened", f"{function} could not be reached: {library} "
                  "did not load", library, library)


def _could_not_load_symbol(found: re.Match[str]) -> Signal | None:
    function = found.group("function")
    error = found.group("error") if found.group("code") is None else f"Error code {found.group('code')}"
    if function.startswith("cublas") and not function.startswith("cublasLt"):
        # cuDNN 8 looks up a cuBLAS function newer cuBLAS 11 releases added (cublasGetSmCountTarget): a cuBLAS older
        # than the one it was built with lacks it, cuDNN says so and goes on ("the pipeline runs despite the
        # error": nanoporetech/medaka#472, auspicious3000/SpeechSplit#73, babysor/MockingBird#735)
        return Signal("could-not-load-symbol", "warning", _line(found), "the cuDNN 8 shim ('Could not load symbol %s "
                      "from %s'), about a cuBLAS function", f"only a warning: {function} is missing from the cuBLAS "
                      f"loaded ({found.group('lib') or 'libcublas'}), older than the one cuDNN was built with; cuDNN "
                      "goes on without it", found.group("lib"), found.group("lib"), error,
                      families=("harmless-warning", "cublas-missing-or-wrong"), warning=True)
    signal = _load_signal("could-not-load-symbol", found, "the cuDNN shims (8: 'Could not load symbol %s from %s', "
                          "9: 'Could not load symbol %s'): a library lacks a function", found.group("lib"), error,
                          f"{function} is missing from the cuDNN library that was loaded")
    if signal is None or signal.kind == "cudnn-not-found":  # the symbol itself is missing: another release
        failed, _ = _failed_in(error, found.group("lib"))
        return Signal("could-not-load-symbol", "symbol-mismatch", _line(found), "the cuDNN shims",
                      f"{function} is missing from the cuDNN library that was loaded",
                      found.group("lib"), failed, error)
    return signal


def _cannot_open(found: re.Match[str]) -> Signal | None:
    library = found.group("lib")
    return _load_signal("cannot-open", found, "glibc's dynamic linker (dlopen's error, or a program NEEDing it)",
                        library, f"{library}: cannot open shared object file", f"no file {library} was found on the "
                        "search path of whoever asked")


def lacks_not_needs(name: str) -> bool:
    """Whether a cuDNN function "undefined" in library ``name`` is one that library lacks, not one it needs. glibc
    names the object it searched: for a relocation the one that needs the symbol, for dlsym the one asked (dl-sym.c).
    cuDNN up to 7 is one library that imports no cuDNN function (cuDNN 8 split it into sub-libraries that import
    each other's), so a cuDNN function undefined in libcudnn.so.5, 6 or 7 is a lookup into it that it lacks."""
    major = library_major(name)
    return library_class(name) == "cudnn" and major is not None and major <= 7


# A C++ symbol of a framework's own namespaces, as the compiler mangles it (a function, a const method, a vtable or
# type info): c10::cuda::SetDevice is _ZN3c104cuda9SetDeviceEi. A library that needs one the framework loaded lacks
# is an extension (flash-attn, xformers, torchvision, a custom op) built against another release of that framework.
_FRAMEWORK_SYMBOL = re.compile(r"^_Z(?:T[VIS])?N?K?(?P<space>3c10|2at|5torch|6caffe2|10tensorflow|3tsl|3xla|6paddle|"
                               r"5phi)(?=\d)")
_SYMBOL_OWNER = {"3c10": "pytorch", "2at": "pytorch", "5torch": "pytorch", "6caffe2": "pytorch",
                 "10tensorflow": "tensorflow", "3tsl": "tensorflow", "3xla": "jax", "6paddle": "paddle",
                 "5phi": "paddle"}
# how the text names each framework (reading's own ids are lower case)
FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "paddle": "Paddle"}


def _extension_abi(found: re.Match[str], library: str, symbol: str) -> Signal | None:
    """A library that needs a C++ symbol of a framework's own (PyTorch's c10::, at::, torch::; TensorFlow's; Paddle's)
    that the framework loaded does not have: it was built against another release (or build) of that framework."""
    space = _FRAMEWORK_SYMBOL.match(symbol)
    if space is None or library_class(library) not in (None, "framework"):  # a framework's own library, or another's
        return None
    owner = _SYMBOL_OWNER[space.group("space")]
    name = FRAMEWORK_NAMES[owner]
    return Signal(f"extension-abi-{owner}", "parts-mismatch", _line(found), "glibc's dynamic linker (elf/dl-lookup.c), "
                  f"loading a compiled extension of {name}", f"{library.rsplit('/', 1)[-1]} needs {symbol}, a C++ "
                  f"symbol of {name}'s own that the {name} installed does not have: the extension was built against "
                  f"another {name} release (or another build of it)", library, library, found.group(0),
                  quote=quote(found.group(0), 160))


def _undefined_symbol(found: re.Match[str]) -> Signal | None:
    library, symbol, version = found.group("lib"), found.group("symbol"), found.group("version")
    if (extension := _extension_abi(found, library, symbol)) is not None:
        return extension
    # a program (not a cuDNN library: their own calls between them are sub-library versions, internal names), or a
    # lookup into a cuDNN that is one library, needing a cuDNN function that no header of the newest release
    # declares: an API that release removed
    if (symbol.startswith("cudnn") and not version and (library_class(library) not in CUDNN_CLASSES
                                                        or lacks_not_needs(library)) and removed_in(symbol)):
        return _removed("undefined-symbol", symbol, found, "glibc's dynamic linker (elf/dl-lookup.c)")
    signal = _load_signal("undefined-symbol", found, "glibc's dynamic linker (elf/dl-lookup.c)", library,
                          found.group(0), f"{library} needs {symbol}" + (f" from {version}" if version else "") +
                          ", which the library loaded does not have")
    if signal is None and version and library_class(version):
        return Signal("undefined-symbol", "symbol-mismatch", _line(found), "glibc's dynamic linker", f"{library} "
                      f"needs {symbol} from {version}", library, version, found.group(0))
    return signal


def _version_not_found(found: re.Match[str]) -> Signal | None:
    needed, by = found.group("version"), found.group("by")
    return Signal("version-not-found", "dependency-load:glibc", _line(found), "glibc's dynamic linker "
                  "(elf/dl-version.c)", f"{by} needs {needed}, newer than the system's {found.group('dep')}",
                  by, found.group("dep"), found.group(0))


_CUDNN_VERSION_NODE = re.compile(r"(?<![^\s:'\"`()\[\]])(?P<dep>[^\s:'\"`()\[\]]+): version "
                                 r"`(?P<version>libcudnn\w*\.so\.(?P<major>\d+))' not found \(required by "
                                 r"(?P<by>[^)]+)\)")


def _cudnn_version_node(found: re.Match[str]) -> Signal:
    needed, dep, major = found.group("version"), found.group("dep"), found.group("major")
    return Signal("cudnn-version-node", "version-other-major", _line(found), "glibc's dynamic linker "
                  "(elf/dl-version.c)", f"{found.group('by')} was linked against {needed} (cuDNN {major}), and the "
                  f"file loaded under that name, {dep}, does not define that version: a cuDNN of another major (or no "
                  f"cuDNN) under cuDNN {major}'s name", dep, dep, found.group(0))


# Windows system error codes (winerror.h) whose text is a catalog entry of its own (dlls/kernelbase/winerror.mc):
# Windows prints that text in the user's language, the code is the same in every one ("[WinError 1455] 页面文件太小").
# 126 and 127 (a module or a procedure not found) are read as a load that failed, by the library it names.
WINDOWS_ERRORS = {
    193: "windows/is-not-a-valid-win32-application",  # ERROR_BAD_EXE_FORMAT
    1114: "windows/a-dynamic-link-library-dll-initialization-routine-failed",  # ERROR_DLL_INIT_FAILED
    1455: "windows/the-paging-file-is-too-small-for-this-operation-to-complete",  # ERROR_COMMITMENT_LIMIT
}


_ANY_DLL = ("1114", "1455")
# PyTorch's own DLLs that need no CUDA library, only Windows' and the Visual C++ runtime (vcruntime140_1.dll,
# msvcp140.dll; torch 2.4.0's fbgemm.dll also libomp140.x86_64.dll, which no Redistributable installs); not
# torch_python.dll, which needs torch.dll and through it torch_cuda.dll and its CUDA and cuDNN DLLs, nor shm.dll,
# which may need torch.dll too
_TORCH_OWN_DLL = re.compile(r"(?i)(?:^|[\\/])(?:c10|fbgemm|torch_cpu|asmjit|uv|libiomp5md)\.dll$")


def _windows_load(found: re.Match[str]) -> Signal | None:
    library, code = group(found, "lib", "lib2", "lib3"), group(found, "code", "code2")
    dependency = found.group("dep")
    if code == "126" and library and _TORCH_OWN_DLL.search(library) and not dependency:
        # a DLL of PyTorch's that is there (it lists its torch\lib folder) and needs no CUDA: a runtime of the system
        return Signal("windows-load", "dependency-load:libstdc++", _line(found), "Windows LoadLibrary, error 126, "
                      "from PyTorch's loader (torch/__init__.py, _load_dll_libraries)", f"{library} is there, but a "
                      "DLL it needs from the system is not: the Visual C++ runtime (vcruntime140_1.dll, msvcp140.dll),"
                      " or for torch 2.4.0's fbgemm.dll the OpenMP runtime libomp140.x86_64.dll", library, library,
                      "error 126", quote=found.group(0), families=("glibc-or-libstdcxx-too-old",))
    error = f"error {code}" if code else None
    entry = messages.load().by_id.get(WINDOWS_ERRORS.get(int(code or 0), ""))
    # a DLL that failed its initialisation or its commit is any DLL's failure (PyTorch's c10.dll is no CUDA library)
    if entry is not None and entry.kind and (library_class(library or "") is not None or code in _ANY_DLL):
        return Signal("windows-load", entry.kind, _line(found), f"Windows LoadLibrary, error {code} "
                      f"({entry.template.strip()})", f"{library} was found but could not be loaded: {entry.meaning}",
                      library, library, error, quote=found.group(0), families=entry.families, entry=entry.id)
    if code not in (None, "126", "127"):
        return None
    if dependency:  # ONNX Runtime 1.20+: 'Error loading "X" which depends on "Y" which is missing.'
        return _load_signal("windows-load", found, "ONNX Runtime's provider loader (Windows)", dependency, None,
                            f"{library} needs {dependency}, which is missing")
    return _load_signal("windows-load", found, "Windows LoadLibrary (126: a DLL or one of its dependencies is "
                        "missing; 127: a function is missing: DLLs of two releases)", library, error,
                        f"{library} could not be loaded ({error})")


def _tf_dso(found: re.Match[str]) -> Signal | None:
    library = group(found, "lib", "lib2") or "libcudnn.so"
    error = found.group("error")
    return _load_signal("tf-dso", found, "TensorFlow's dso_loader (1.x: \"Couldn't open CUDA library %s\"; 2.x: "
                        "\"Could not load dynamic library '%s'; dlerror: %s\")", library, error,
                        f"TensorFlow could not open {library}")


def _paddle(found: re.Match[str]) -> Signal | None:
    library = group(found, "lib", "lib2")
    return _load_signal("paddle-dynload", found, "PaddlePaddle's dynamic loader (paddle/phi/backends/dynload/"
                        "dynamic_loader.cc; paddle/utils/DynamicLoader.cpp before)", library,
                        " ".join((group(found, "error", "error2") or "").split()), f"Paddle could not open {library}")


def _dll_directory(found: re.Match[str]) -> Signal:
    error = found.group("error").strip()[:400]
    return Signal("dll-directory-missing", "dll-directory-missing", error, "CPython's os.add_dll_directory", "a "
                  "package added, at import, a DLL folder that does not exist: the folder it computed is not there",
                  error=error, quote=error)


# ONNX Runtime's CUDA provider library that did not load, without the loader's reason: ONNX Runtime checks no
# version, it only loads the provider, which needs cuDNN, cuBLAS and the CUDA runtime of the majors it was built for
_ORT_PROVIDER = ("cudnn-not-installed", "wheel-not-on-linker-path", "wrong-cudnn-major", "libcudart-missing-or-wrong",
                 "cublas-missing-or-wrong", "installed-not-on-search-path")


def _fixed(pattern: str, kind: str, source: str, meaning: str, library: str | None = None
           ) -> Callable[[re.Match[str]], Signal | None]:
    return lambda found: Signal(pattern, kind, _line(found), source, meaning, library, library)


def _jax_component(found: re.Match[str]) -> Signal:
    name = group(found, "name", "name2", "name3") or "CUDA"
    library = "libcudart" if name == "CUDA" else f"lib{name.lower()}"
    kind = load_kind(library, "missing")
    said = ("could not be loaded" if found.group("name") else "is older than the one JAX was built against")
    return Signal("jax-component", kind, _line(found), "JAX's check of the CUDA libraries it uses "
                  "(jax_plugins/cuda/__init__.py)", f"{'the CUDA runtime' if name == 'CUDA' else name} {said}: a "
                  "library of CUDA's, not cuDNN", library, library)


# What each "driver-state" message says of the driver (its group), who prints it, and the result cuInit gives in
# that state (cuda.h's CUresult name)
DRIVER_STATES = {
    "mismatch": ("the driver's kernel module and its libraries are of two releases (updated, not yet rebooted)",
                 "NVML (nvidia-smi, and every program that reads the GPU through it)",
                 "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
    "unknown": ("the CUDA driver failed to start with an unknown error (cudaErrorUnknown): its UVM module is gone or "
                "stale, as after a suspend, or the driver is in a bad state", "PyTorch (c10/cuda/CUDAFunctions.cpp)",
                "CUDA_ERROR_UNKNOWN"),
    "fabric": ("the system is not ready for CUDA (cudaErrorSystemNotReady): on an NVSwitch system, the Fabric "
               "Manager is not running", "the CUDA runtime (cudaGetErrorString)", "CUDA_ERROR_SYSTEM_NOT_READY")}


def _unknown_error(found: re.Match[str]) -> Signal:
    """cudaErrorUnknown as a framework prints a runtime call's failure (PyTorch's C10_CUDA_CHECK "CUDA error: unknown
    error", CuPy's "cudaErrorUnknown: unknown error"): at the first call, the driver's UVM module gone or stale (a
    suspend); later in a run, a GPU that fell off the bus or faulted."""
    meaning, _, result = DRIVER_STATES["unknown"]
    return Signal("cuda-unknown-error", "driver-state", _line(found), "the CUDA runtime (cudaErrorUnknown, 999), as "
                  "PyTorch or CuPy print a call's failure", f"{meaning}; or, later in a run, the GPU fell off the bus "
                  "or faulted (dmesg: Xid 79, 48)", error=result, quote=quote(found.group(0), 160),
                  families=("driver-not-ready", "gpu-hardware-fault", "no-gpu-or-driver"))


def _driver_state(found: re.Match[str]) -> Signal:
    name = next(key for key in DRIVER_STATES if found.group(key))
    meaning, source, result = DRIVER_STATES[name]
    return Signal(f"driver-state-{name}", "driver-state", _line(found), source, meaning, error=result)


# What a failed cuInit says, by its result (cuda.h's CUresult) where the result says more than cuda.h's own
# sentence: the causes it points to, most likely first, and what it means. A result of a driver state
# (`DRIVER_STATES`) means that state; any other result points to the driver not being ready to run CUDA.
_CUINIT_RESULTS = {
    # TensorFlow's and XLA's stand-in for the driver (tsl/cuda/cuda_stub.cc, GetSymbolNotFoundError) answers every
    # call with this result when it could not load libcuda.so.1, and its cuGetErrorName fails too, so they print
    # the number: "failed call to cuInit: UNKNOWN ERROR (303)", after "Could not load dynamic library
    # 'libcuda.so.1'" and before "kernel driver does not appear to be running on this host"
    "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED": (
        ("no-gpu-or-driver", "driver-not-ready"), "the NVIDIA driver's library (libcuda.so.1) could not be loaded: "
        "no NVIDIA driver is installed or visible here (a machine or container without one); the program goes on "
        "without the GPU"),
    # the CUDA toolkit's stub libcuda.so (lib64/stubs, for linking only) loaded in place of the driver's
    "CUDA_ERROR_STUB_LIBRARY": (
        ("no-gpu-or-driver", "driver-not-ready"), "the libcuda.so loaded is the CUDA toolkit's stub (its lib64/stubs "
        "folder, meant for linking only), not the NVIDIA driver's"),
    # cuInit reserves address space for the GPU's memory: an address-space limit fails it (judge.gpu)
    "CUDA_ERROR_OUT_OF_MEMORY": (
        ("address-space-limit", "out-of-memory"), "the driver could not reserve the memory it starts with: an "
        "address-space limit (ulimit -v) or no memory left"),
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": (
        ("driver-too-old", "driver-not-ready"), "a CUDA forward-compatibility libcuda (cuda-compat), used because "
        "the driver is older than the program's CUDA, runs on a GPU that does not support it"),
    # the GPU's compute mode lets no new process use it (EXCLUSIVE_PROCESS and held, or PROHIBITED): cuInit's
    # CUDA_ERROR_DEVICE_UNAVAILABLE, cudaErrorDevicesUnavailable's "CUDA-capable device(s) is/are busy or unavailable"
    "CUDA_ERROR_DEVICE_UNAVAILABLE": (
        ("gpu-unavailable", "driver-not-ready"), "the GPU's compute mode lets no new process use it: EXCLUSIVE_PROCESS "
        "with another process holding it, or PROHIBITED"),
    # cudaErrorInitializationError at the runtime's first call: the driver could not start at all (no NVIDIA kernel
    # module loaded, no GPU, a container without the device files); PyTorch says "you might not have a CUDA gpu"
    "CUDA_ERROR_NOT_INITIALIZED": (
        ("no-gpu-or-driver", "driver-not-ready"), "the CUDA driver could not start: no NVIDIA kernel module is loaded, "
        "no GPU is present, or a container was started without the GPU's device files"),
}


def _torch_init(found: re.Match[str]) -> Signal:
    """PyTorch's words for cudaErrorInitializationError at its first CUDA call: `_CUINIT_RESULTS`'s reading of
    CUDA_ERROR_NOT_INITIALIZED, the result cuInit gives then."""
    families, meaning = _CUINIT_RESULTS["CUDA_ERROR_NOT_INITIALIZED"]
    return Signal("torch-cuda-init", "driver-state", _line(found), "PyTorch (c10/cuda/CUDAFunctions.cpp), for "
                  "cudaErrorInitializationError", meaning, error="CUDA_ERROR_NOT_INITIALIZED",
                  quote=quote(found.group(0), 160), families=families)


def _no_such_device(found: re.Match[str]) -> Signal:
    return Signal("device-index", "device-index", _line(found), "the CUDA runtime (cudaErrorInvalidDevice) or "
                  "PyTorch's check of a device index", "the program asks for a GPU index this process does not have: "
                  "cuda:1 on a machine (or a CUDA_VISIBLE_DEVICES) that shows one GPU",
                  quote=quote(found.group(0), 160))


def _cuinit(found: re.Match[str]) -> Signal | None:
    """A failed cuInit by its result: named (CUDA_ERROR_UNKNOWN) or numbered (UNKNOWN ERROR (303), numba's
    "[999] Call to cuInit"), named from cuda.h's table in the catalog (`catalog.Catalog.driver`)."""
    return _driver_result("cuinit", found, group(found, "name"), group(found, "number", "code"), found.group("words"),
                          "the CUDA driver's cuInit, as TensorFlow/XLA, numba or PyCUDA print its failure")


def _device_count(found: re.Match[str]) -> Signal | None:
    """PyTorch's warning for the CUDA runtime failing at its first call (c10/cuda/CUDAFunctions.cpp, "CUDA
    initialization: Unexpected error from cudaGetDeviceCount(). ... Error %d: %s"), after which torch has no GPU: the
    runtime's cudaError_t, whose numbers for the driver's start are cuda.h's CUresult numbers (35, 100, 802-804,
    999), read as cuInit's result."""
    return _driver_result("device-count", found, None, found.group("number"), found.group("words"),
                          "PyTorch's first CUDA call (cudaGetDeviceCount), as c10/cuda/CUDAFunctions.cpp prints it")


# The CUDA runtime calls a program makes first, which start the driver: their failure is cuInit's result
_DEVICE_START = ("cudaSetDevice", "cudaGetDeviceCount", "cudaGetDevice", "cudaFree", "cudaGetDeviceProperties",
                 "cudaDriverGetVersion", "cudaRuntimeGetVersion")


def _ort_cuda_call(found: re.Match[str]) -> Signal | None:
    """ONNX Runtime's check of a CUDA runtime call (core/providers/cuda/cuda_call.cc: "CUDA failure %d: %s ;
    GPU=%d ; hostname=%s ; file=%s ; line=%d ; expr=%s;"), where the call is one that starts the driver
    (cudaSetDevice as its provider starts): the runtime's number read as cuInit's result, no GPU said as such (a
    driver too old is the catalog's, whose rule reads it). A failure of a later call (a kernel's, a copy's) is the
    catalog's too."""
    if found.group("expr") not in _DEVICE_START:
        return None
    number = found.group("number")
    name = messages.load().driver.get(int(number), (None, ""))[0]
    source = f"ONNX Runtime's CUDA provider (cuda_call.cc), at {found.group('expr')}"
    if name == "CUDA_ERROR_NO_DEVICE":
        return Signal("ort-cuda-call", "driver", _line(found), source, "the process sees no GPU (no driver, "
                      "CUDA_VISIBLE_DEVICES, a container without the NVIDIA runtime)", error=name,
                      quote=quote(found.group(0), 160), families=("no-gpu-or-driver",))
    return _driver_result("ort-cuda-call", found, None, number, found.group("words"), source)


def _driver_result(pattern: str, found: re.Match[str], name: str | None, number: str | None, words: str | None,
                   source: str) -> Signal | None:
    """The driver's start failed with ``name`` or ``number`` (named from cuda.h's table) or ``words``."""
    table = messages.load().driver
    if name in (None, "UNKNOWN_CUDA_ERROR") and number is not None:
        # the runtime's numbers are cuda.h's for the driver's own results; cudaErrorInsufficientDriver (35) has none
        name = table.get(int(number), (None, ""))[0] or ("CUDA_ERROR_INSUFFICIENT_DRIVER" if number == "35" else None)
    if words is not None:
        name = name or {"unknown error": "CUDA_ERROR_UNKNOWN", "cuda driver version is insufficient for cuda runtime "
                        "version": "CUDA_ERROR_INSUFFICIENT_DRIVER"}.get(words.strip().lower())
    if name in ("CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_INSUFFICIENT_DRIVER"):
        return None  # the "no-device" and driver-too-old facts read these
    said = f"{name} ({number})" if name and number else name or (f"result {number}" if number else "an error")
    state = next((key for key, (_, _, result) in DRIVER_STATES.items() if result == name), None)
    if state is not None:
        meaning, _, _ = DRIVER_STATES[state]
        families: tuple[str, ...] = ("driver-not-ready", "no-gpu-or-driver")
    elif name in _CUINIT_RESULTS:
        families, meaning = _CUINIT_RESULTS[name]
    else:
        number_of = {result: n for n, (result, _) in table.items()}
        cuda_h = table.get(number_of.get(name or "", -1) if number is None else int(number), (None, ""))[1]
        meaning = (f"the CUDA driver did not start ({cuda_h.rstrip('.')[:1].lower() + cuda_h.rstrip('.')[1:]})"
                   if cuda_h else "the CUDA driver did not start, with a result this driver does not name: no "
                   "working driver here")
        families = ("driver-not-ready", "no-gpu-or-driver") if cuda_h else ("no-gpu-or-driver", "driver-not-ready")
    return Signal(pattern, "driver-state", _line(found), f"{source}: {said}", meaning, error=name,
                  quote=quote(found.group(0), 160), families=families)


# Each build-without-CUDA message (the "cpu-build" pattern's groups): the framework that prints it, the
# distribution that is then a build without CUDA, and where it prints it
CPU_BUILDS = {"torch": ("pytorch", "torch", "PyTorch (torch/cuda/__init__.py)"),
              "jax": ("jax", "jaxlib", "JAX (jax/_src/xla_bridge.py)"),
              "ort": ("onnxruntime", "onnxruntime",
                      "ONNX Runtime (onnxruntime/capi/onnxruntime_inference_collection.py)"),
              "paddle": ("paddle", "paddlepaddle", "PaddlePaddle (python/paddle/device/__init__.py)")}


def cpu_build_package(framework: str | None) -> str | None:
    """The distribution a framework's build without CUDA is (`CPU_BUILDS`): "torch" for "pytorch"."""
    return next((package for owner, package, _ in CPU_BUILDS.values() if owner == framework), None)


def _cpu_build(found: re.Match[str]) -> Signal:
    name = next(key for key in CPU_BUILDS if found.group(key))
    _, package, source = CPU_BUILDS[name]
    return Signal(f"cpu-build-{name}", "cpu-build", _line(found), source,
                  f"the {package} installed is a build without CUDA: it never looks for cuDNN or the GPU")


# Each message of a framework whose own packages are of releases that do not go together (the "parts-mismatch"
# pattern's groups): the framework, who prints it, and what it says
PARTS_MISMATCHES = {
    "jaxlib_newer": ("jax", "JAX (jax/_src/lib/__init__.py, check_jaxlib_version)",
                     "the jaxlib installed is newer than the jax installed supports"),
    "jaxlib_older": ("jax", "JAX (jax/_src/lib/__init__.py, check_jaxlib_version)",
                     "the jaxlib installed is older than the jax installed needs"),
    "jax_plugin": ("jax", "JAX's CUDA plugin (jax_plugins/xla_cuda12/__init__.py, initialize)",
                   "the CUDA plugin installed (jax-cuda12-plugin) calls a jaxlib function the jaxlib installed lacks: "
                   "the plugin and jaxlib are of different releases"),
    # the plugin's own compiled part (jax-cudaNN-plugin: cuda_plugin_extension, _versions) did not import, so its
    # version check asserts: that package missing beside jax-cudaNN-pjrt, or of another release
    "jax_extension": ("jax", "JAX's CUDA plugin (jax_plugins/xla_cudaNN/__init__.py, _check_cuda_versions)",
                      "the CUDA plugin's compiled part (the jax-cuda12-plugin or jax-cuda13-plugin package) did not "
                      "import: it is missing beside jax-cudaNN-pjrt, or of another release than it and jaxlib"),
    # jax/_src/xla_bridge.py discover_pjrt_plugins: an entry point whose module is gone (an uninstall that left
    # another package's entry point, a half-removed plugin) or that does not import (another jax's plugin)
    "jax_plugin_module": ("jax", "JAX (jax/_src/xla_bridge.py, discover_pjrt_plugins)",
                          "a JAX plugin package is registered but its module is missing or does not import: a "
                          "plugin half removed, or of another release than the jax installed"),
    # torchvision/extension.py _check_cuda_version: the CUDA major torchvision was built with is not torch's
    "torchvision_cuda": ("pytorch", "torchvision (torchvision/extension.py, _check_cuda_version)",
                         "torchvision was built for another CUDA major than the torch installed (from another index "
                         "than torch's)"),
    "torchvision": ("pytorch", "torchvision (torchvision/extension.py, its compiled operators)",
                    "torchvision's compiled operators do not load into the torch installed: torchvision was built for "
                    "another torch release (or another CUDA build of it)"),
}


# the CUDA runtime's and driver's words for CUDA that could not start in this process (cudaErrorInitializationError 3,
# CUDA_ERROR_NOT_INITIALIZED 3), and PyTorch's for it
NOT_STARTED = re.compile(r"(?i)\binitialization error\b|cudaErrorInitializationError|CUDA_ERROR_NOT_INITIALIZED|"
                         r"CUDA driver initialization failed")


# A program's own requirement of a newer GPU than the one it runs on, in its words: flash-attn's "FlashAttention only
# supports Ampere GPUs or newer", Triton's "Triton only supports devices of CUDA Capability >= 7.0", transformers'
# "Bfloat16 is only supported on GPUs with compute capability of at least 8.0", PyTorch's "requires Ampere and
# above": a requirement (only supports, requires, needs) of an architecture or capability at least some value.
_ARCHITECTURES = r"(?:Kepler|Maxwell|Pascal|Volta|Turing|Ampere|Ada(?: Lovelace)?|Hopper|Blackwell)"
# what "only supports" is followed by where it is no limit on the call's values but a release or a GPU: "only supports
# cuDNN 5.1", "only supports Ampere GPUs or newer", "only supports devices of CUDA Capability >= 7.0"
_NOT_A_LIMIT = (rf"\s+(?:cu(?:dnn|da)|version|v?\d|devices?\b|GPUs?\b|(?:compute|CUDA) capabilit|sm_?\d|"
                rf"(?-i:{_ARCHITECTURES}))")
_NEEDS_NEWER_GPU = re.compile(
    r"(?i)\b(?:only supports?|(?:is|are) only supported (?:on|by|for)|supported only (?:on|by|for)|requires?|needs?)\b"
    r"[^.\n]{0,60}?(?:"
    r"(?:compute capability|CUDA capability|\bSM|\bsm_?|\bcc)\s*(?:of\s*)?(?:at least|>=|≥|\+)\s*\d+(?:\.\d)?|"
    r"(?:compute capability|CUDA capability)\s*\d+(?:\.\d)?\s*(?:or (?:higher|newer|later|above)|and "
    r"(?:above|up|newer))|"
    rf"(?-i:{_ARCHITECTURES})(?:[ -](?:GPUs?|architecture|cards?))?\s*(?:or (?:newer|later|higher|above)|and "
    r"(?:above|newer|later|up)|\+))")


def _gpu_requirement(found: re.Match[str]) -> Signal:
    return Signal("gpu-requirement", "gpu", _line(found), "the program's own check of the GPU it runs on",
                  "the program (or a library it uses: flash-attn, Triton, a data type such as bfloat16) needs a newer "
                  "GPU architecture than the one it runs on", quote=quote(found.group(0), 160),
                  families=("gpu-too-old", "unsupported-configuration"))


def _parts_mismatch(found: re.Match[str]) -> Signal:
    name = next(key for key in PARTS_MISMATCHES if found.group(key))
    _, source, meaning = PARTS_MISMATCHES[name]
    return Signal(f"parts-mismatch-{name}", "parts-mismatch", _line(found), source, meaning,
                  quote=quote(found.group(0), 160))


def _gpu_plugin(found: re.Match[str]) -> Signal:
    return Signal("gpu-plugin", "gpu-plugin", _line(found), "JAX (jax/_src/xla_bridge.py, discover_pjrt_plugins)",
                  f"JAX's CUDA plugin ({found.group('module')}) raised while starting, so JAX goes on without the GPU "
                  "(on the CPU); the exception printed after this line says why (JAX_PLATFORMS=cuda makes JAX stop "
                  "on it instead of falling back)", quote=quote(found.group(0), 160))


def _ptxas_newer(found: re.Match[str]) -> Signal:
    return Signal("xla-ptxas-newer", "warning", _line(found), "XLA (xla/service/gpu/nvptx_compiler.cc)",
                  f"only a warning: the driver's CUDA ({found.group('driver')}) is older than the ptxas XLA compiles "
                  f"with ({found.group('ptxas')}), so XLA compiles its kernels one at a time, which is slower, and "
                  "goes on; a newer driver (or CUDA's forward compatibility package) takes the warning away",
                  families=("harmless-warning", "driver-too-old"), warning=True)


def _xla_autotune(found: re.Match[str]) -> Signal:
    if found.group(0).startswith("None"):
        return Signal("xla-autotune", "warning", _line(found), "XLA's convolution autotuner (conv_algorithm_picker.cc)",
                      "only a warning: every algorithm cuDNN's heuristics offered for one convolution failed (for want "
                      "of workspace memory, or none fits the shape on this GPU), so XLA tries its fallback algorithms "
                      "and goes on; compiling is slower, and an error follows only if those fail too",
                      families=("harmless-warning", "out-of-memory", "unsupported-configuration", "gpu-too-new"),
                      warning=True)
    return Signal("xla-autotune", "warning", _line(found), "XLA's convolution autotuner (conv_algorithm_picker.cc)",
                  "XLA ran one convolution with two cuDNN algorithms and their results differ beyond its tolerance; "
                  "it drops that algorithm and goes on (logged as an error, but only a warning unless "
                  "--xla_gpu_crash_on_verification_failures is set): a cuDNN release's bug or loss of precision, or "
                  "a GPU that computes wrongly",
                  families=("harmless-warning", "known-bad-release", "gpu-hardware-fault"), warning=True)


def _version_signal(pattern: str, source: str, framework: str, built: str | None, found_text: str, strict: bool,
                    found: re.Match[str]) -> Signal | None:
    want, have = version_of(built or ""), version_of(found_text)
    if not have:
        return None
    if not want:  # the line was cut before the build's version: the check fails for an older runtime
        return Signal(pattern, "version-older", _line(found), source, f"{framework} found cuDNN {dotted(have)}, "
                      "which its build does not accept", found=dotted(have))
    if want[0] != have[0]:
        kind = "version-other-major"
    elif have[:2] < want[:2]:
        kind = "version-older"
    elif strict or have[:2] > want[:2]:
        kind = "version-newer"
    else:
        kind = "version-older"
    return Signal(pattern, kind, _line(found), source, f"{framework} was built with cuDNN {dotted(want)} and found "
                  f"{dotted(have)}", built=dotted(want), found=dotted(have))


def _pytorch_version(found: re.Match[str]) -> Signal | None:
    # "mismatch" (PyTorch 0.4: major.minor must be equal) is strict; "incompatibility" wants a minor >= built
    strict = found.group("word") == "mismatch"
    return _version_signal("pytorch-version", "PyTorch, torch/backends/cudnn/__init__.py: 0.4 \"cuDNN version "
                           "mismatch: PyTorch was compiled against {} but linked against {}\" (integers, equal "
                           "major.minor); 1.x \"cuDNN version incompatibility: ... but linked against {}\"; 2.x "
                           "\"... compiled  against {compile_version} but found runtime version {runtime_version}\"",
                           "PyTorch", found.group("built"), found.group("found"), strict, found)


def _xla_version(found: re.Match[str]) -> Signal | None:
    # TensorFlow 1.x demanded the same "compatibility version" (major.minor); XLA later needs minor >= built
    strict = found.group("compat") is not None
    return _version_signal("xla-version", "TensorFlow/XLA stream_executor/cuda/cuda_dnn.cc: 1.x \"Loaded runtime "
                           "CuDNN library: %u (compatibility version %u) but source was compiled with %u "
                           "(compatibility version %u)\"; later \"Loaded runtime CuDNN library: %s but source was "
                           "compiled with: %s\"", "TensorFlow/JAX (XLA)", found.group("built"), found.group("found"),
                           strict, found)


def _jax_version(found: re.Match[str]) -> Signal | None:
    return _version_signal("jax-version", "JAX, jax_plugins/cuda/__init__.py: \"Outdated cuDNN installation "
                           "found. Version JAX was built against: %d ... Installed version: %d\"; jax/_src/lib/"
                           "__init__.py before: \"Found cuDNN version %d, but JAX was built against version %d, "
                           "which is newer\"", "JAX", group(found, "built", "built2") or "",
                           group(found, "found", "found2") or "", False, found)


def status_of_number(number: int) -> str | None:
    """The cudnnStatus_t name (without CUDNN_STATUS_) of a status as a number: 1-14 are cuDNN 7's and 8's
    (cudnn_ops_infer.h: Caffe's "(4 vs. 0)"), 1001 and up cuDNN 9's (cudnn_graph.h); None for another number."""
    table = GENERATIONS[9 if number >= 1000 else 8].statuses
    name = table.get(number) if number else None
    return name.removeprefix("CUDNN_STATUS_") if name else None


def status_entry(name: str) -> messages.Entry | None:
    """The catalog's entry of ``CUDNN_STATUS_<name>`` (cudnn_graph.h 9.x, cudnn_ops_infer.h 8.x, as
    cudnnGetErrorString spells it): its kind says which class the status is of (a 9.x sub-code such as
    NOT_SUPPORTED_ARCH_MISMATCH in the class of what it means, ARCH_MISMATCH), its families what causes it."""
    return messages.load().by_literal.get(f"CUDNN_STATUS_{name}")


_NAME_QUOTES = "[‘’'\"`]"
# A compiler's or linker's words for a name no header declares: g++ "was not declared in this scope", gcc's C front
# end "'X' undeclared (first use in this function)" and "'X' undeclared here (not in a function)" (c/c-typeck.cc),
# clang "use of undeclared identifier 'X'", MSVC "'X': undeclared identifier", nvcc (EDG) "identifier "X" is
# undefined", ld "undefined reference to `X'".
_UNDECLARED = re.compile(
    rf"{_NAME_QUOTES}(?P<name>cudnn[A-Z]\w*|CUDNN_[A-Z0-9_]+){_NAME_QUOTES}:? (?:was not declared|is undefined|"
    r"does not name a type|has not been declared|undeclared (?:identifier|\(first use|here)|identifier not found)"
    rf"|(?:use of undeclared identifier|identifier|undefined reference to|function) {_NAME_QUOTES}"
    rf"(?P<name2>cudnn[A-Z]\w*|CUDNN_[A-Z0-9_]+){_NAME_QUOTES}(?: is undefined| not found)?")


_SIGNATURE = re.compile(
    r"(?:too (?:few|many) arguments to function|no matching function for call to|incompatible with parameter of "
    r"type|invalid conversion from [^\n]{0,60}? to|cannot convert [^\n]{0,80}? to)\s*[^\n]{0,120}?"
    r"\b(?P<name>cudnn[A-Z]\w*|CUDNN_[A-Z0-9_]+)"
    # nvcc (EDG) names no function: "caffe/util/cudnn.hpp(107): error: too few arguments in function call", in a
    # source file of the program's cuDNN calls
    r"|(?P<source>cudnn[\w-]{0,40}\.(?:hpp|h|cuh|cu|cpp|cc))\(\d{1,6}\): error: too (?:few|many) arguments in "
    r"function call")


def _signature(found: re.Match[str]) -> Signal:
    name = found.group("name") or f"a cuDNN call of {found.group('source')}"
    return Signal("signature", "compile-missing", _line(found), "the compiler", f"the code uses {name} otherwise than "
                  "the cuDNN headers it is built against declare it: it was written for another cuDNN release's API",
                  quote=found.group(0), families=("removed-api", "framework-bug", "version-mismatch-shadowed",
                                                  "wrong-cudnn-major"))


def removed_in(name: str) -> str | None:
    """The cuDNN that no longer declares ``name``, from the headers of the releases read (catalog.api): "9" when
    only cuDNN 8 declares it, "8" when no release read does (cuDNN 8 removed it, or it never was cuDNN's);
    None when the newest release read declares it."""
    catalog = messages.load()
    declared = catalog.declared(name)
    if not catalog.api_releases:
        return None
    newest_major = catalog.api_releases[-1].split(".")[0]
    if any(release.split(".")[0] == newest_major for release in declared):
        return None
    return newest_major if declared else "8"


def _undeclared(found: re.Match[str]) -> Signal | None:
    name = group(found, "name", "name2") or ""
    if removed_in(name) is None:
        # the compiler reached the name, so it read a cudnn.h (a missing header stops the build at the #include):
        # the code calls a function its cuDNN lacks without a version guard, or that header is older than the
        # code needs, or an older copy was found first. A build failing is not a library failing to load: the
        # code's defect comes first
        return Signal("undeclared", "compile-missing", _line(found), "the compiler or linker", f"{name} is "
                      "declared by the newer cuDNN headers, but not by the ones the build saw: an older cuDNN",
                      quote=found.group(0), families=("framework-bug", "runtime-older-than-build",
                                                      "version-mismatch-shadowed", "cudnn-not-installed"))
    return _removed("undeclared", name, found, "the compiler or linker")


def _removed(pattern: str, name: str, found: re.Match[str], source: str) -> Signal:
    """``name``, which the newest cuDNN headers read do not declare, asked for by a build or a library."""
    removed, declared = removed_in(name), messages.load().declared(name)
    last = f" (last declared by cuDNN {declared[-1]})" if declared else " (declared by none of cuDNN 8.5-9.x)"
    return Signal(pattern, "removed-api", _line(found), f"{source}; the cuDNN headers of each release read "
                  f"(catalog.api)", f"{name} is not in cuDNN {removed}'s API{last}: the code calls an API cuDNN "
                  f"{removed} removed", name, quote=found.group(0), families=("removed-api", "wrong-cudnn-major"))


# a status name as cudnn_graph.h and cublas_api.h spell them: words joined by single underscores
_STATUS_NAME = r"[A-Z0-9]+(?:_[A-Z0-9]+)*"


def _status(found: re.Match[str]) -> Signal | None:
    name = found.group("name") or status_of_number(int(found.group("number") or 0)) or ""
    if found.group("camel"):  # libcudnn.py's exception classes: cudnnStatusArchMismatch
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", found.group("camel")).upper()
    if not name or name == "SUCCESS" or "Profiling failure" in _line(found):
        return None  # XLA's autotuner trying one engine: part of "Failed to determine best ... algorithm"
    entry = status_entry(name)
    return Signal("status", entry.kind if entry and entry.kind else "status:OTHER", _line(found), "a cuDNN call's "
                  "status (cudnnStatus_t), as the framework prints it", f"a cuDNN call returned CUDNN_STATUS_{name}",
                  status=name, families=entry.families if entry else ())


# cublasStatus_t (cublas_api.h; the cuBLAS Library User Guide's "cublasStatus_t" says what each means and how to
# correct it), as frameworks print it ("CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
# TensorFlow's "failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED"): the causes of each, most likely
# first. NOT_INITIALIZED: "an error in the CUDA Runtime API called by the cuBLAS routine, or an error in the hardware
# setup" (cublasCreate failing: no memory left for the handle's workspace, a driver or GPU it cannot use, another
# CUDA major's cuBLAS); ALLOC_FAILED: "usually caused by a cudaMalloc() failure"; INVALID_VALUE: "an unsupported
# value or parameter was passed"; ARCH_MISMATCH: "a feature absent from the device architecture"; MAPPING_ERROR:
# "an access to GPU memory space failed"; EXECUTION_FAILED: "the GPU program failed to execute ... often a launch
# failure of the kernel" (no kernel for the GPU, a bad access); INTERNAL_ERROR: "usually caused by a
# cudaMemcpyAsync() failure"; NOT_SUPPORTED: "the functionality requested is not supported".
CUBLAS_CAUSES: dict[str, tuple[str, ...]] = {
    "NOT_INITIALIZED": ("out-of-memory", "cublas-missing-or-wrong", "driver-too-old", "no-gpu-or-driver",
                        "gpu-too-new"),
    "ALLOC_FAILED": ("out-of-memory",),
    "INVALID_VALUE": ("bad-param-usage", "framework-bug", "unsupported-configuration"),
    "ARCH_MISMATCH": ("gpu-too-old", "gpu-too-new"),
    "MAPPING_ERROR": ("out-of-memory", "execution-failed-kernel"),
    "EXECUTION_FAILED": ("gpu-too-new", "framework-bug", "execution-failed-kernel", "out-of-memory",
                         "gpu-hardware-fault"),
    "INTERNAL_ERROR": ("out-of-memory", "cublas-missing-or-wrong", "framework-bug", "execution-failed-kernel"),
    "NOT_SUPPORTED": ("unsupported-configuration", "gpu-too-old", "cublas-missing-or-wrong"),
}


def _cublas_status(found: re.Match[str]) -> Signal | None:
    name = found.group("name")
    if name not in CUBLAS_CAUSES:
        return None
    return Signal("cublas-status", f"cublas-status:{name}", _line(found), "a cuBLAS call's status (cublasStatus_t, "
                  "cublas_api.h), as the framework prints it", f"a cuBLAS call returned CUBLAS_STATUS_{name}",
                  quote=found.group(0), families=CUBLAS_CAUSES[name])


PATTERNS: tuple[Pattern, ...] = (
    # libcudnn.so.8 (8.9.7): "Could not load library %s. Error: %s" (a paste may wrap it before "Error:");
    # cudnn64_8.dll: "Could not load library %s. Error code %d" then "Please make sure %s is in your library
    # path!"; Julia: could not load library "PATH"
    Pattern("could-not-load-library", re.compile(
        r"[Cc]ould not load library \"?(?P<lib>[^\s\"]+?)\"?(?:\.[ \t]*(?:\r?\n[ \t]*)?Error: (?P<error>[^\n]*)"
        r"|\. Error code (?P<code>\d+)|\. NULL Error|\.?(?=\s|$))"), "cuDNN 8", _could_not_load_library),
    # cuDNN 8 and 9 on Windows: "Could not locate %s. Please make sure it is in your library path!" (zlibwapi.dll
    # too; cudnn_ops64_9.dll beside "Invalid handle. Cannot load symbol ...")
    Pattern("could-not-locate", re.compile(r"Could not locate (?P<lib>[\w.-]+\.dll)"), "cuDNN", _could_not_locate),
    # the same shim's second line, pasted alone: "Please make sure %s is in your library path!"
    Pattern("make-sure-in-path", re.compile(r"Please make sure (?P<lib>[\w-]{1,60}\.(?:dll|so(?:\.\d+){0,3})) is in "
                                            r"your library path"), "cuDNN 8", _could_not_locate),
    # libcudnn.so.9 (9.0, 9.1) and libcudnn_graph.so.9: "Unable to load any of {%s, %s, %s, %s}";
    # cudnn-frontend: "Unable to load any libcudart.so.* library"
    Pattern("unable-to-load-any", re.compile(r"Unable to load any (?:of \{(?P<names>[^}]*)\}|(?P<cudart>libcudart)"
                                             r"\S* library)"), "cuDNN 9", _unable_to_load_any),
    # libcudnn.so.9: "Invalid handle. Cannot load symbol %s" (every 9.x shim; tests check the wheels)
    Pattern("invalid-handle", re.compile(r"Invalid handle\. Cannot load symbol (?P<function>\w+)"), "cuDNN 9",
            _invalid_handle),
    # libcudnn.so.8: "Could not load symbol %s from %s. Error: %s"; libcudnn.so.9: "Could not load symbol %s.
    # Error: %s"
    # the Windows DLLs of cuDNN 8: "Could not load symbol %s from %s. Error code %d" (GetLastError())
    Pattern("could-not-load-symbol", re.compile(r"Could not load symbol (?P<function>\w+)(?: from (?P<lib>\S+?))?\."
                                                r"(?: Error: (?P<error>[^\n]*)| Error code (?P<code>\d+))"), "cuDNN",
            _could_not_load_symbol),
    # libcudnn_graph.so.9 (9.28): "Cannot load CUDA driver library (libcuda.so.1 / libcuda.so). Ensure the NVIDIA
    # driver is installed ..." and "Could not open libnvrtc for runtime linking. ..."
    Pattern("graph-driver", re.compile(r"Cannot load CUDA driver library \(libcuda\.so\.1 / libcuda\.so\)"),
            "cuDNN 9", _fixed("graph-driver", "dependency-load:libcuda", "libcudnn_graph.so.9 (9.2x)",
                              "cuDNN could not load the driver library libcuda.so.1 / libcuda.so", "libcuda.so.1")),
    Pattern("graph-nvrtc", re.compile(r"Could not open libnvrtc for runtime linking|cannot load libnvrtc"),
            "cuDNN", _fixed("graph-nvrtc", "dependency-load:nvrtc", "libcudnn_graph.so.9 / libcudnn_ops_infer.so.8",
                            "cuDNN could not load NVRTC for its runtime-compiled kernels", "libnvrtc.so")),
    # Python on Windows: "[WinError 126] ... Error loading "X" or one of its dependencies."; ONNX Runtime:
    # "LoadLibrary failed with error 126 "" when trying to load "X"" and 'Error loading "X" which depends on "Y"
    # which is missing.'; Python < 3.8: "ImportError: DLL load failed: The specified module could not be found."
    Pattern("windows-load", re.compile(
        r"\[WinError (?P<code>\d+)\][^\n]*?Error loading \"(?P<lib>[^\"]+)\""
        r"|[Ll]oad[Ll]ibrary failed with error (?P<code2>\d+)[^\n]*?when trying to load \"?(?P<lib2>[^\"\s]+)\"?"
        r"|Error loading \"(?P<lib3>[^\"]+)\" which depends on \"(?P<dep>[^\"]+)\" which is missing"),
        "Windows", _windows_load),
    # ONNX Runtime's words (core/platform/windows/env.cc) cut before the file they name (an issue's title: "FAIL :
    # LoadLibrary failed with error 126"): a provider library of its own that did not load, the file not named
    Pattern("ort-load-unnamed", re.compile(r"[Ll]oad[Ll]ibrary failed with error (?P<code>12[67])\b(?![^\n]*when "
                                           r"trying to load)"), "ONNX Runtime",
            lambda m: Signal("ort-load-unnamed", "cudnn-not-found" if m.group("code") == "126" else "symbol-mismatch",
                             _line(m), "ONNX Runtime's library loader on Windows (core/platform/windows/env.cc), its "
                             "message cut before the file it names", f"a DLL of ONNX Runtime's (its CUDA provider, "
                             f"most often) could not be loaded (error {m.group('code')}: "
                             + ("it, or a DLL it needs, is missing)" if m.group("code") == "126" else
                                "a function it needs is missing: DLLs of two releases)"),
                             error=f"error {m.group('code')}")),
    Pattern("dll-load-failed", re.compile(r"DLL load failed(?: while importing \w+)?: The specified (?P<what>module|"
                                          r"procedure) could not be found"), "Windows",
            lambda m: Signal("dll-load-failed", "cudnn-not-found" if m.group("what") == "module" else
                             "symbol-mismatch", _line(m), "Python on Windows: a DLL an extension module needs (or "
                             "one of its dependencies) is missing", "a DLL the module needs could not be loaded")),
    # CPython's os.add_dll_directory (Modules/posixmodule.c: AddDllDirectory's error as OSError with the path):
    # "FileNotFoundError: [WinError 2] The system cannot find the file specified: 'X'" (3: the path). A package adds,
    # at import, a DLL folder it computed (from its build's CUDA/cuDNN paths, an environment variable) that is not
    # on this machine, and does not check first (torch's __init__ adds only folders that exist): its own code stops
    # the import, before any cuDNN is loaded; else the install it was built to find is not where it looked.
    Pattern("dll-directory-missing", re.compile(r"add_dll_directory\b[^\n]*\n(?:[^\n]*\n){0,4}?(?P<error>[^\n]*?"
                                                r"\[WinError [23]\][^\n]*)"), "CPython on Windows", _dll_directory),
    # TensorFlow stream_executor/dso_loader.cc (1.x) and platform/default/dso_loader.cc (2.x)
    Pattern("tf-dso", re.compile(r"Couldn't open CUDA library (?P<lib>[^\s.]+(?:\.\w+)*?)\.?(?=\s|$)"
                                 r"|Could not load dynamic library '(?P<lib2>[^']+)'; dlerror: (?P<error>[^\n]*)"),
            "TensorFlow", _tf_dso),
    # a TensorFlow that skipped the GPU: tf.config.list_physical_devices('GPU') returns []
    Pattern("tf-no-gpu", re.compile(r"list_physical_devices\(\s*['\"]GPU['\"]\s*\)(?:[^\n]*\n){0,3}[^\n]*"
                                    r"(?:empty list|\[\])"), "TensorFlow",
            _fixed("tf-no-gpu", "framework-no-cudnn", "TensorFlow: tf.config.list_physical_devices('GPU')",
                   "TensorFlow lists no GPU: a CUDA library it needs (cuDNN among them) was not found, so it went "
                   "on without the GPU")),
    # tensorflow/python/platform/self_check.py (Windows, 1.x): "Could not find '%s'. TensorFlow requires that this
    # DLL be installed in a directory that is named in your %%PATH%% environment variable."
    Pattern("tf-self-check", re.compile(r"Could not find '(?P<lib>cudnn64_\d+\.dll)'"), "TensorFlow",
            lambda m: _load_signal("tf-self-check", m, "TensorFlow's self check on Windows "
                                   "(tensorflow/python/platform/self_check.py)", m.group("lib"), None,
                                   f"{m.group('lib')} is in no folder of %PATH%")),
    # tensorrt/__init__.py of TensorRT's Windows wheels without the tensorrt_libs wheel (NVIDIA/TensorRT
    # python/packaging/bindings_wheel), whose find_lib walks %PATH% for nvinfer.dll, cublas64_N.dll, cudnn64_N.dll:
    # "Could not find: {:}. Is it on your PATH?\nNote: Paths searched were:\n{:}"
    Pattern("trt-find-lib", re.compile(r"Could not find: (?P<lib>[\w.-]+\.dll)\. Is it on your PATH\?"), "TensorRT",
            lambda m: _load_signal("trt-find-lib", m, "TensorRT's Python package on Windows (tensorrt/__init__.py, "
                                   "find_lib)", m.group("lib"), None, f"{m.group('lib')} is in no folder of %PATH%")),
    Pattern("tf-no-dso", re.compile(r"Unable to load cuDNN DSO|Cannot dlopen some GPU libraries"), "TensorFlow",
            _fixed("tf-no-dso", "framework-no-cudnn", "TensorFlow (cuda_dnn.cc / gpu_device.cc)",
                   "TensorFlow could not open the cuDNN (or another CUDA) library and goes on without the GPU")),
    # paddle/phi/backends/dynload/dynamic_loader.cc: "The third-party dynamic library (%s) that Paddle depends on
    # is not configured correctly. (error code is %s)"; older paddle/utils/DynamicLoader.cpp: "Failed to find
    # dynamic library: %s (%s) Please specify its path correctly using following ways: ..."
    Pattern("paddle-dynload", re.compile(r"The third-party dynamic library \((?P<lib>[^)]+)\) that Paddle depends on"
                                         r" is not configured correctly\.?\s*\(error code is (?P<error>[^\n]*)"
                                         r"|Failed to find dynamic library: (?P<lib2>\S+)[^(]{0,40}\("
                                         r"(?P<error2>[^)]*)\)"),
            "Paddle", _paddle),
    # torch/__init__.py, _preload_cuda_deps: f"{lib_name} not found in the system path {sys.path}"
    Pattern("torch-preload", re.compile(r"(?<![\w.])(?P<lib>lib\w+\.so[\w.*\[\]-]{0,40}) not found in the system "
                                        r"path"),
            "PyTorch",
            lambda m: Signal("torch-preload", "cudnn-not-found", _line(m), "PyTorch, torch/__init__.py "
                             "_preload_cuda_deps: the nvidia-* wheel it looks for on sys.path is missing",
                             f"torch found no {m.group('lib')} in any nvidia/ folder of sys.path", m.group("lib"),
                             m.group("lib"))),
    # ...and a traceback cut in that function's frame ("_load_global_deps()" then "_preload_cuda_deps(lib_folder,"),
    # its error line lost: the same search, of an nvidia-* wheel it did not name (its ValueError, else the OSError of
    # ctypes.CDLL on the file it found)
    Pattern("torch-preload-frame", re.compile(r"in _load_global_deps\s*\n[^\n]*\n?\s*_preload_cuda_deps\("
                                              r"(?![\s\S]*not found in the system path)"),
            "PyTorch",
            lambda m: Signal("torch-preload-frame", "cudnn-not-found", _line(m), "PyTorch, torch/__init__.py "
                             "_load_global_deps: a traceback that stops in _preload_cuda_deps",
                             "torch failed while it searched sys.path for its nvidia-* wheels' libraries (cuDNN, "
                             "cuBLAS, ...) to load them first; the traceback's own error line is not in the text")),
    # the dynamic linker's own errors come after the loaders that quote them in their Error: part
    # glibc elf/dl-version.c: "%s: version `%s' not found (required by %s)"
    Pattern("version-not-found", re.compile(_VERSION_NOT_FOUND.pattern + r" \(required by (?P<by>[^)]+)\)"), "glibc",
            _version_not_found),
    # the same for one of cuDNN's own version nodes: every export of a cuDNN library is bound to a node named after
    # its SONAME (cudnnCreate@@libcudnn.so.8), the same in every release of a major (cudnn-facts), so a file under
    # that name that lacks it is another major's (ln -s libcudnn.so.9 libcudnn.so.8), or no cuDNN at all
    Pattern("cudnn-version-node", _CUDNN_VERSION_NODE, "glibc", _cudnn_version_node),
    # glibc elf/dl-lookup.c: "%s: undefined symbol: %s, version %s" (", version" only for versioned symbols)
    Pattern("undefined-symbol", _UNDEFINED, "glibc", _undefined_symbol),
    # glibc elf/dl-load.c: "%s: cannot open shared object file: No such file or directory"
    Pattern("cannot-open", _CANNOT_OPEN, "glibc", _cannot_open),
    # pytorch/pytorch torch/backends/cudnn/__init__.py, _init(): 0.4 'cuDNN version mismatch: PyTorch was compiled
    # against {} but linked against {}' (cudnnGetVersion integers; major.minor must be equal); 1.x 'cuDNN version
    # incompatibility: PyTorch was compiled against {} but linked against {}'; 2.x f"cuDNN version incompatibility:
    # PyTorch was compiled  against {compile_version} but found runtime version {runtime_version}" (two spaces)
    Pattern("pytorch-version", re.compile(r"cuDNN version (?P<word>incompatibility|mismatch): PyTorch was compiled"
                                          r"\s+against (?P<built>\([\d, ]+\)|\d+) but (?:found runtime version|linked "
                                          r"against) (?P<found>\([\d, ]+\)|\d+)"), "PyTorch", _pytorch_version),
    # tensorflow stream_executor/cuda/cuda_dnn.cc (1.x): "Loaded runtime CuDNN library: %u (compatibility version
    # %u) but source was compiled with %u (compatibility version %u)"; later TensorFlow and openxla/xla
    # xla/stream_executor/cuda/cuda_dnn.cc: "Loaded runtime CuDNN library: %s but source was compiled with: %s.
    # CuDNN library needs to have matching major version and equal or higher minor version."
    Pattern("xla-version", re.compile(r"Loaded runtime CuDNN library:? (?P<found>[\d.]*\d)(?: \(compatibility version "
                                      r"(?P<compat>\d+)\))? but source was compiled(?: with:? (?P<built>[\d.]*\d))?"),
            "XLA", _xla_version),
    # jax-ml/jax jax_plugins/cuda/__init__.py: "Outdated {name} installation found.\nVersion JAX was built against:
    # {build_version}\nMinimum supported: {min_supported}\nInstalled version: {runtime_version}"; before it
    # jax/_src/lib/__init__.py: "Found {name} version {version}, but JAX was built against version {build_version},
    # which is newer."
    Pattern("jax-version", re.compile(r"Outdated cuDNN installation found\.?\s*Version JAX was built against: "
                                      r"(?P<built>\d+)\s*Minimum supported: \d+\s*Installed version: (?P<found>\d+)"
                                      r"|Found cuDNN version (?P<found2>\d+), but JAX was built against version "
                                      r"(?P<built2>\d+)"), "JAX",
            _jax_version),
    # openxla/xla xla/service/gpu/nvptx_compiler.cc, LOG_FIRST_N(WARNING): "The NVIDIA driver's CUDA version is %d.%d
    # which is older than the ptxas CUDA version (%s)" (2023-2024; later "... than the PTX compiler version %s"), then
    # "XLA is disabling parallel compilation, which may slow down compilation": compiling goes on, one at a time
    Pattern("xla-ptxas-newer", re.compile(r"The NVIDIA driver's CUDA version is (?P<driver>\d+\.\d+) which is older "
                                          r"than the (?:ptxas CUDA|PTX compiler) version \(?(?P<ptxas>\d+(?:\.\d+)+)"),
            "XLA", _ptxas_newer),
    # XLA's convolution autotuner (xla/service/gpu/conv_algorithm_picker.cc, gpu_conv_algorithm_picker.cc before it):
    # LOG(WARNING) "None of the algorithms provided by cuDNN [frontend ]heuristics worked; trying fallback
    # algorithms." and LOG(ERROR) "Results mismatch between different convolution algorithms. This is likely a
    # bug/unexpected loss of precision in cudnn.", after which it marks that algorithm WRONG_RESULT and goes on (unless
    # --xla_gpu_crash_on_verification_failures): both leave the run going, with another algorithm
    Pattern("xla-autotune", re.compile(r"None of the algorithms provided by cuDNN (?:frontend )?heuristics worked"
                                       r"|Results mismatch between different convolution algorithms"), "XLA",
            _xla_autotune),
    # the driver there but not ready to run CUDA: NVML's nvmlErrorString(NVML_ERROR_LIB_RM_VERSION_MISMATCH), which
    # nvidia-smi prints as "Failed to initialize NVML: Driver/library version mismatch"; PyTorch's words for
    # cudaErrorUnknown from cudaGetDeviceCount (c10/cuda/CUDAFunctions.cpp: "CUDA unknown error - this may be due to
    # an incorrectly set up environment, ..."); cudaErrorSystemNotReady (802), cudaGetErrorString's "system not yet
    # initialized", CUDA_ERROR_SYSTEM_NOT_READY in cuda.h
    Pattern("driver-state", re.compile(r"(?P<mismatch>Driver/library version mismatch)"
                                       r"|(?P<unknown>CUDA unknown error - this may be due to an incorrectly set up "
                                       r"environment)"
                                       r"|(?P<fabric>system not yet initialized|cudaErrorSystemNotReady"
                                       r"|CUDA_ERROR_SYSTEM_NOT_READY)"), "the NVIDIA driver", _driver_state),
    # a framework whose own packages do not go together: JAX's check_jaxlib_version ("jaxlib version %s is newer
    # than and incompatible with jax version %s. Please update your jax and/or jaxlib packages."; "jaxlib is version
    # %s, but this version of jax requires version >= %s."), its CUDA plugin calling a jaxlib function of another
    # release, torchvision's operators built for another torch ("operator torchvision::nms does not exist";
    # torchvision/extension.py "Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision
    # versions are incompatible")
    Pattern("parts-mismatch", re.compile(r"(?P<jaxlib_newer>jaxlib version \S+ is newer than and incompatible with jax "
                                         r"version \S+?)\.?(?=\s|$)"
                                         r"|(?P<jaxlib_older>jaxlib is version \S+, but this version of jax requires "
                                         r"version >= \S+?)\.?(?=\s|$)"
                                         r"|(?P<jax_plugin>module 'jaxlib\.xla_client' has no attribute "
                                         r"'generate_pjrt_gpu_plugin_options')"
                                         r"|(?P<jax_extension>assert cuda_versions is not None)"
                                         r"|(?P<jax_plugin_module>Jax plugin configuration error: Plugin module "
                                         r"\S+ (?:could not be loaded|does not exist))"
                                         r"|(?P<torchvision_cuda>Detected that PyTorch and torchvision were "
                                         r"compiled with different CUDA (?:major )?versions)"
                                         r"|(?P<torchvision>operator torchvision::\w+ does not exist|Couldn't load "
                                         r"custom C\+\+ ops\. This can happen if your PyTorch and torchvision "
                                         r"versions are incompatible)"), "a framework", _parts_mismatch),
    # JAX's CUDA plugin raising while it starts (jax/_src/xla_bridge.py discover_pjrt_plugins, logger.exception:
    # "Jax plugin configuration error: Exception when calling %s.initialize()", the exception's traceback after it):
    # JAX goes on without the GPU, and later prints that "a CUDA-enabled jaxlib is not installed", which it is
    Pattern("gpu-plugin", re.compile(r"Jax plugin configuration error: Exception when calling "
                                     r"(?P<module>[\w.]+)\.initialize\(\)"), "JAX", _gpu_plugin),
    # PyTorch's warning for cudaErrorInitializationError (c10/cuda/CUDAFunctions.cpp): "CUDA driver initialization
    # failed, you might not have a CUDA gpu." (after which it has no devices: the failure, not a warning)
    Pattern("torch-cuda-init", re.compile(r"CUDA driver initialization failed, you might not have a CUDA gpu"),
            "PyTorch", _torch_init),
    # a GPU index the process does not have: the CUDA runtime's cudaErrorInvalidDevice ("invalid device ordinal");
    # PyTorch's lazy initialisation "device >= 0 && device < num_gpus INTERNAL ASSERT FAILED" (aten/src/ATen/cuda/
    # CUDAContext.cpp)
    Pattern("device-index", re.compile(r"invalid device ordinal|device >= 0 && device < num_gpus INTERNAL ASSERT "
                                       r"FAILED"), "the CUDA runtime", _no_such_device),
    # the CUDA driver failing to start, by cuInit's result: TensorFlow/XLA (stream_executor/cuda/cuda_driver.cc,
    # cuda_platform.cc) "failed call to cuInit: %s" with cuGetErrorName's name and string ("CUDA_ERROR_UNKNOWN:
    # unknown error"), or "UNKNOWN ERROR (%d)" where that fails (newer XLA wraps it: "failed call to cuInit:
    # INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)"); numba (cudadrv/driver.py) "[%d] Call to
    # cuInit results in %s"; PyCUDA "cuInit failed: %s" with cuGetErrorString's words; JAX's CUDA plugin
    # (jaxlib/cuda/versions_helpers.cc) "operation cuInit(0) failed: %s"
    Pattern("cuinit", re.compile(r"(?:\[(?P<code>-?\d+)\] )?(?:[Ff]ailed call to cuInit|Call to cuInit results in|"
                                 r"cuInit failed|operation cuInit\(0\) failed)[:\s]+"
                                 r"(?:\w+: CUDA error: [Ff]ailed call to cuInit: )?"
                                 r"(?:(?P<name>CUDA_ERROR_[A-Z_]+|UNKNOWN_CUDA_ERROR)"
                                 r"|UNKNOWN ERROR \((?P<number>-?\d+)\)|(?P<words>[a-z][a-z '-]{2,60}))"),
            "the CUDA driver", _cuinit),
    # cudaErrorUnknown as PyTorch (c10/cuda/CUDAException.cpp, "CUDA error: %s") and CuPy ("cudaErrorUnknown: %s")
    # print a runtime call's failure
    Pattern("cuda-unknown-error", re.compile(r"\bCUDA error: unknown error\b|\bcudaErrorUnknown: unknown error\b"),
            "the CUDA runtime", _unknown_error),
    # ONNX Runtime's CUDA provider failing at the call that starts the driver (core/providers/cuda/cuda_call.cc)
    Pattern("ort-cuda-call", re.compile(r"\bCUDA failure (?P<number>\d+): (?P<words>[^;\n]{3,120}?) ; GPU=-?\d+ ;"
                                        r"[^\n]{0,400}?expr=(?P<expr>\w+)"), "ONNX Runtime", _ort_cuda_call),
    # PyTorch's warning for the CUDA runtime failing at its first call, with cudaGetErrorString's words after the
    # number (c10/cuda/CUDAFunctions.cpp): torch has no GPU after it, whatever its logger calls it
    Pattern("device-count", re.compile(r"Unexpected error from cudaGetDeviceCount\(\)[^\n]{0,160}? Error "
                                       r"(?P<number>\d+): (?P<words>[A-Za-z][\w /'-]{2,80})"), "PyTorch",
            _device_count),
    # a framework's build without CUDA asked for the GPU (no cuDNN is looked for at all): torch/cuda/__init__.py
    # `_lazy_init` "Torch not compiled with CUDA enabled"; jax/_src/xla_bridge.py "An NVIDIA GPU may be present on
    # this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."; onnxruntime/capi/
    # onnxruntime_inference_collection.py "Specified provider '{}' is not in available provider names." (the
    # providers compiled in: a CUDA or TensorRT one missing is the CPU package); paddle/device/__init__.py "The device
    # should not be 'gpu', since PaddlePaddle is not compiled with CUDA"
    Pattern("cpu-build", re.compile(r"(?P<torch>Torch not compiled with CUDA enabled)"
                                    r"|(?P<jax>a CUDA-enabled jaxlib is not installed)"
                                    r"|(?P<ort>Specified provider '(?:CUDA|Tensorrt)ExecutionProvider' is not in "
                                    r"available provider names)"
                                    r"|(?P<paddle>PaddlePaddle is not compiled with CUDA)"), "a framework", _cpu_build),
    # the same checks of JAX for CUDA's other libraries (jax_plugins/cuda/__init__.py `_version_check` of "CUDA",
    # "cuFFT", "cuSOLVER", "cuPTI", "cuBLAS", "cuSPARSE"; jax/_src/lib/__init__.py before it): "Unable to load
    # {name}. Is it installed?", "Outdated {name} installation found.", "Found {name} version {version}, but JAX was
    # built against version {build_version}, which is newer." name the library, which is no cuDNN
    Pattern("jax-component", re.compile(r"(?:Unable to load (?P<name>{0})\. Is it installed\?|Outdated (?P<name2>{0}) "
                                        r"installation found|Found (?P<name3>{0}) version \d+, but JAX was built "
                                        r"against version \d+)".format("CUDA|cuFFT|cuSOLVER|cuPTI|cuBLAS|cuSPARSE")),
            "JAX", _jax_component),
    # jax_plugins/cuda/__init__.py: "Unable to load {name}. Is it installed?"
    Pattern("jax-cannot-load", re.compile(r"Unable to load cuDNN\. Is it installed\?"), "JAX",
            _fixed("jax-cannot-load", "framework-no-cudnn", "JAX, jax_plugins/cuda/__init__.py (cudnnGetVersion "
                   "failed)", "JAX could not load cuDNN and falls back to the CPU")),
    # jax_plugins/cuda/__init__.py: "cuDNN 9.10.0 had a binary backward-compatibility issue ..."
    Pattern("jax-known-bad", re.compile(r"cuDNN (?P<bad>[\d.]+) had a binary backward-compatibility issue"), "JAX",
            _fixed("jax-known-bad", "known-bad", "JAX, jax_plugins/cuda/__init__.py",
                   "JAX refuses a cuDNN release known to be broken")),
    # dlib/CMakeLists.txt (davisking/dlib v19.20: "*** Found cuDNN, but it looks like the wrong version so dlib will
    # not use it."; v19.24: "*** Found cuDNN, but we failed to compile the dlib/cmake_utils/test_for_cudnn project."):
    # dlib's test build against the cuDNN found failed, so the cuDNN there is not one that dlib's code compiles with
    Pattern("dlib-cudnn-test", re.compile(r"Found cuDNN, but (?:it looks like the wrong version so dlib will not use "
                                          r"it|we failed to compile the dlib/cmake_utils/test_for_cudnn project)"),
            "dlib", _fixed("dlib-cudnn-test", "refused-version", "dlib's CMake check (dlib/CMakeLists.txt, a test "
                           "build against the cuDNN found)", "dlib found a cuDNN but its test program did not compile "
                           "against it: a cuDNN release dlib's code does not fit (one that removed calls dlib makes, "
                           "or one too old), or a broken install")),
    # xformers/_cpp_lib.py: "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:
    # PyTorch %s with CUDA %s (you have %s)": its compiled part made for another torch (or Python, or CUDA)
    Pattern("xformers-build", re.compile(r"xFormers can't load C\+\+/CUDA extensions\. xFormers was built for"),
            "xFormers", lambda found: Signal("extension-abi-pytorch", "parts-mismatch", _line(found), "xFormers "
                                             "(xformers/_cpp_lib.py)", "xFormers' C++/CUDA extensions were built for "
                                             "another PyTorch (or Python, or CUDA) than the one installed", "xformers",
                                             "xformers", quote=quote(found.group(0), 160))),
    # Triton (python/triton/runtime/errors.py OutOfResources, raised by its compiler's launcher): a kernel's
    # configuration (block sizes, num_stages) asks for more shared memory or registers than this GPU has ("out of
    # resource: shared memory, Required: 131072, Hardware limit: 101376"): torch.compile's, vLLM's, a library's kernel
    Pattern("triton-resources", re.compile(r"out of resource: (?P<what>shared memory|registers|\w+), Required: \d+, "
                                           r"Hardware limit: \d+"), "Triton",
            lambda found: Signal("triton-resources", "catalog", _line(found), "Triton (triton/runtime/errors.py, "
                                 "OutOfResources)", f"a Triton kernel's configuration needs more {found.group('what')} "
                                 "than this GPU has (its block sizes or num_stages were tuned for a GPU with more): "
                                 "smaller blocks or fewer stages fit, or a GPU with more", quote=quote(found.group(0)),
                                 families=("unsupported-configuration", "gpu-too-old"))),
    # a program's own requirement of a newer GPU architecture or compute capability than this one's
    Pattern("gpu-requirement", _NEEDS_NEWER_GPU, "the program", _gpu_requirement),
    # aten/src/ATen/native/cudnn/RNN.cpp: TORCH_CHECK(fn_train, "cudnn RNN backward can only be called in training
    # mode"): a backward pass through a cuDNN RNN in eval mode (model.eval() left on), refused before cuDNN is called
    Pattern("torch-rnn-eval", re.compile(r"cudnn RNN backward can only be called in training mode"), "PyTorch",
            _fixed("torch-rnn-eval", "misuse", "PyTorch, aten/src/ATen/native/cudnn/RNN.cpp",
                   "a backward pass through a cuDNN RNN of a module in eval mode: PyTorch refuses it before cuDNN "
                   "runs")),
    # torch/cuda/__init__.py (_lazy_init): "Cannot re-initialize CUDA in forked subprocess. To use CUDA with
    # multiprocessing, you must use the 'spawn' start method": CUDA started in the parent, then asked for in a child
    # made by fork(), which CUDA cannot run in
    Pattern("cuda-in-fork", re.compile(r"Cannot re-initialize CUDA in forked subprocess"), "PyTorch",
            _fixed("cuda-in-fork", "misuse", "PyTorch, torch/cuda/__init__.py (_lazy_init)",
                   "CUDA was started in the parent process and then asked for in a child it forked (a DataLoader "
                   "worker, a multiprocessing pool): CUDA cannot run in a forked child")),
    # tensorflow stream_executor: errors::Unimplemented("DNN library is not found.") when no DNN support loaded
    Pattern("tf-dnn-not-found", re.compile(r"DNN library is not found"), "TensorFlow",
            _fixed("tf-dnn-not-found", "framework-no-cudnn", "TensorFlow's stream executor "
                   "(Unimplemented: \"DNN library is not found.\")", "TensorFlow has no usable cuDNN: it was not "
                   "loaded, or its version check or initialisation failed earlier in the log")),
    # TensorFlow's fused convolution kernels (core/kernels/conv_ops_fused_impl.h) and XLA's convolution runners
    # (xla/service/gpu/gpu_conv_runner.cc, conv_algorithm_picker.cc): InvalidArgument("No DNN in stream executor.")
    # where stream_exec->AsDnn() is null, the same state as "DNN library is not found."
    Pattern("no-dnn-in-executor", re.compile(r"No DNN in stream executor"), "TensorFlow",
            _fixed("no-dnn-in-executor", "framework-no-cudnn", "TensorFlow and XLA (\"No DNN in stream executor.\": "
                   "the stream executor has no DNN support)", "TensorFlow has no usable cuDNN: it was not loaded, or "
                   "its version check or initialisation failed earlier in the log")),
    # xla/stream_executor/cuda/cuda_dnn.cc: "DNN library initialization failed" (FAILED_PRECONDITION)
    Pattern("xla-dnn-init", re.compile(r"DNN library initialization failed"), "XLA",
            _fixed("xla-dnn-init", "framework-no-cudnn", "XLA (TensorFlow, JAX): cuDNN could not be initialised",
                   "cuDNN was not usable: its version check or cudnnCreate failed earlier in the log")),
    # onnxruntime/python/onnxruntime_pybind_state.cc: "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and
    # CUDA 12.*" (8.* and 11.* before 1.19; "CUDA 13.*"; ", and the latest MSVC runtime" on Windows)
    Pattern("ort-require", re.compile(r"Require cuDNN (?P<major>\d+)\.\* and CUDA (?P<cuda>\d+)\.\*"), "ONNX Runtime",
            lambda m: Signal("ort-require", "framework-no-cudnn", _line(m), "ONNX Runtime "
                             "(onnxruntime_pybind_state.cc): its CUDA provider library failed to load",
                             f"ONNX Runtime's CUDA provider needs cuDNN {m.group('major')} and CUDA "
                             f"{m.group('cuda')}; one of them, or a library they need, did not load",
                             families=_ORT_PROVIDER)),
    # onnxruntime_pybind_state.cc (Windows, CUDA_PATH set): "CUDA_PATH is set but CUDA wasnt able to be loaded. Please
    # install the correct version of CUDA and cuDNN as mentioned in the GPU requirements page"
    Pattern("ort-cuda-path", re.compile(r"CUDA_PATH is set but CUDA wasn'?t able to be loaded"), "ONNX Runtime",
            _fixed("ort-cuda-path", "framework-no-cudnn", "ONNX Runtime (onnxruntime_pybind_state.cc, on Windows "
                   "with CUDA_PATH set): its CUDA provider library failed to load", "ONNX Runtime's CUDA provider "
                   "did not load: the CUDA or cuDNN it was built for, or a library they need, is not the one found")),
    # aten/src/ATen/native/cudnn/Conv_v8.cpp: "GET was unable to find an engine to execute this computation"
    # (heuristics), "FIND was unable to find an engine ..." (benchmark mode)
    Pattern("no-engine", re.compile(r"(?P<mode>GET|FIND) was unable to find an engine to execute this computation"),
            "PyTorch", _fixed("no-engine", "no-engine", "PyTorch, aten/src/ATen/native/cudnn/Conv_v8.cpp",
                              "no cuDNN engine could run this convolution: every candidate failed to build or run")),
    # tensorflow/core/kernels/conv_ops.cc: "Failed to get convolution algorithm. This is probably because cuDNN
    # failed to initialize, so try looking to see if a warning log message was printed above."; XLA's autotuner
    # (xla/service/gpu/conv_algorithm_picker.cc): "Failed to determine best cudnn convolution algorithm for: ..."
    # after one "Profiling failure on cuDNN engine ..." line per engine it tried
    Pattern("conv-algorithm", re.compile(r"Failed to get convolution algorithm"), "TensorFlow",
            _fixed("conv-algorithm", "conv-algorithm", "TensorFlow, core/kernels/conv_ops.cc", "TensorFlow got no "
                   "convolution algorithm from cuDNN, usually because cuDNN failed to initialise")),
    Pattern("xla-autotune", re.compile(r"Failed to determine best cudnn convolution algorithm"), "XLA",
            _fixed("xla-autotune", "conv-algorithm", "XLA's convolution autotuner (TensorFlow, JAX, EXLA; "
                   "xla/service/gpu/conv_algorithm_picker.cc)", "every cuDNN convolution algorithm XLA tried failed")),
    # compilers' and linkers' words for a name nothing declares or defines: gcc "‘X’ was not declared in this
    # scope" / "does not name a type", nvcc (EDG) 'identifier "X" is undefined', clang "use of undeclared
    # identifier 'X'", MSVC C2065/C3861 "'X': undeclared identifier" / "identifier not found", ld "undefined
    # reference to `X'", ctypes "function 'X' not found"; whether cuDNN removed X, its headers say (_undeclared)
    Pattern("undeclared", _UNDECLARED, "compiler", lambda m: _undeclared(m)),
    # compilers' words for a call that does not fit the declaration the cuDNN header gives: gcc "too few arguments to
    # function ‘cudnnStatus_t cudnnSetConvolution2dDescriptor(...)’", "invalid conversion from ‘int’ to
    # ‘cudnnNanPropagation_t’", nvcc 'argument of type "int" is incompatible with parameter of type
    # "cudnnConvolutionFwdAlgo_t"', clang "no matching function for call to 'cudnnX'"
    Pattern("signature", _SIGNATURE, "compiler", lambda m: _signature(m)),
    # cudnnStatus_t names as frameworks print them; Caffe's CUDNN_CHECK: "Check failed: status ==
    # CUDNN_STATUS_SUCCESS (4 vs. 0)"; libcudnn.py: "libcudnn.cudnnStatusArchMismatch". No status name of
    # cudnn_graph.h or cublas_api.h ends in "_": one after the name is the user's Markdown ("_..._" italics)
    Pattern("status", re.compile(rf"CUDNN_STATUS_(?P<name>{_STATUS_NAME})|status == CUDNN_STATUS_SUCCESS "
                                 r"\((?P<number>\d+) vs\. 0\)|cudnnStatus(?P<camel>[A-Z][A-Za-z]+)"), "cuDNN", _status),
    Pattern("cublas-status", re.compile(rf"CUBLAS_STATUS_(?P<name>{_STATUS_NAME})"), "cuBLAS", _cublas_status),
)


# --- what a text still says about cuDNN when no message above is on the line ------------------------------

# A version in any framework's words: 8.9.0, 7605, v5.1, (8, 7, 0).
_ANY_VERSION = r"(?:\(\s*\d+(?:\s*,\s*\d+)+\s*\)|v?\d+(?:\.\d+)*)"
_CUDNN_WORD = r"(?:cu[Dd][Nn][Nn]\s*(?:(?:runtime\s+)?version\s*)?)?"
# The build's cuDNN and the one loaded, however a program words its check: TensorRT's logger "TensorRT was linked
# against cuDNN 8.9.0 but loaded cuDNN 8.8.0" (8.x) and "was compiled against cuDNN 7.5.0 but is linked against
# cuDNN 7.0.5" (5.x); Paddle's gpu_resources.cc "The installed Paddle is compiled with CUDNN 8.4, but CUDNN version
# in your machine is 8.2"; Caffe2's common_cudnn.h "cuDNN compiled (7102) and runtime (7005) versions mismatch";
# wrappers that reword PyTorch's or XLA's check. Only where no known message is on the line.
_VERSION_PAIR = re.compile(
    rf"(?i)\b(?:compiled|built|linked)\s+(?:with|against)[:\s]+{_CUDNN_WORD}(?P<built>{_ANY_VERSION})[^\n]{{0,80}}?"
    rf"\b(?:but|while|whereas)\b[^\n]{{0,60}}?\b(?:loaded|found|linked against|running (?:with|against)|is|runtime)"
    rf"[:\s]+{_CUDNN_WORD}(?P<found>{_ANY_VERSION})"
    rf"|\b(?:loaded|found|runtime|installed)\b[^\n]{{0,30}}?cu[Dd][Nn][Nn][^\n]{{0,20}}?(?P<found2>{_ANY_VERSION})"
    rf"[^\n]{{0,60}}?\b(?:compiled|built)\s+(?:with|against)[:\s]+{_CUDNN_WORD}(?P<built2>{_ANY_VERSION})"
    rf"|cu[Dd][Nn][Nn] compiled \((?P<built3>\d+)\) and runtime \((?P<found3>\d+)\) versions mismatch"
    # OpenCV's cuda4dnn: "cuDNN reports version 8201 which does not match with the version 8000 with which OpenCV
    # was built" (the found version first, the built one after "the version ... with which")
    rf"|cu[Dd][Nn][Nn] reports version (?P<found4>{_ANY_VERSION})[^\n]{{0,60}}?\bthe version (?P<built4>"
    rf"{_ANY_VERSION}) with which")

# cudnnStatus_t in words, as wrappers print it (Mocha.jl "ERROR: Arch mismatch", "Not initialized"), and cuDNN's
# initialisation failing in words ("Failed to initialize cuDNN", "could not create cudnn handle": what
# CUDNN_STATUS_NOT_INITIALIZED means, cudnn_graph.h): read only in a text that names cuDNN and holds no message above.
_STATUS_WORDS = re.compile(r"(?i)\b(?P<words>arch(?:itecture)?[ _]mismatch|not[ _]initiali[sz]ed|bad[ _]param(?:eter)?"
                           r"|execution[ _]failed|internal[ _]error|not[ _]supported|alloc(?:ation)?[ _]failed"
                           r"|mapping[ _]error)\b|(?P<init>fail(?:ed|s|ure)? to (?:initiali[sz]e|init) (?:the )?cudnn"
                           r"|cudnn (?:initiali[sz]ation|init) failed|(?:could ?n[o']t|cannot|unable to|failed to) "
                           r"create (?:a |the )?cudnn handle)")
_STATUS_OF_WORDS = (("arch", "ARCH_MISMATCH"), ("not init", "NOT_INITIALIZED"), ("bad", "BAD_PARAM"),
                    ("execution", "EXECUTION_FAILED"), ("internal", "INTERNAL_ERROR"), ("not supp", "NOT_SUPPORTED"),
                    ("alloc", "ALLOC_FAILED"), ("mapping", "MAPPING_ERROR"))

# What an unknown text says it is about: a cuDNN library that did not load, a cuDNN function a library lacks, a
# cuDNN version that does not fit. The words of loaders, linkers and people ("could not find", "missing", "entry
# point", "link error").
_LOAD_WORDS = re.compile(r"(?i)\b(?:could ?n[o']t|cannot|can't|unable to|failed to|fails? to|error)\b[^\n]{0,40}?"
                         r"\b(?:load|open|find|locate)|\bnot (?:be )?(?:found|loaded)\b|\bmissing\b|\bno such file\b"
                         # the same in the words of Chinese, Japanese and Korean users ("找不到cudnn64_8.dll",
                         # "cudnn64_8.dll が見つかりません", "찾을 수 없습니다")
                         r"|找不到|无法找到|未找到|没有找到|无法加载|加载失败|缺少|缺失|見つかりません|見つからない"
                         r"|読み込めません|ロードできません|찾을 수 없|로드할 수 없")
# Words of a person about a library file that a program wants or that is not there, beside its name on one line:
# "it asks for the cudnn_8.dll instead of cudnn_9.dll", "TensorFlow needs libcudnn.so.8", "the image has no
# libcudnn.so.8", "cudnn64_7.dll 依赖问题" (a dependency problem), "没有cudnn64_8.dll". A text with no known message
# that names a cuDNN library this way is about that file: where it is, and which one.
_FILE_WORDS = re.compile(r"(?i)\b(?:asks?|asked|asking|looks?|looked|looking|search(?:es|ed|ing)?)\s+for\b"
                         r"|\b(?:requires?|required|needs?|needed|wants?|wanted|depends?\s+on|depending\s+on|linked"
                         r"\s+(?:against|to|with))\b|\b(?:ha(?:ve|s|d)|there\s+(?:is|are|was|were)|contains?|with)\s+no\b"
                         r"|\b(?:does\s*n[o']t|do\s*n[o']t|did\s*n[o']t)\s+(?:have|contain|ship|include)\b|\bwithout\b"
                         r"|依赖|需要|没有|不存在")
# A load verb whose object is not a library: "Failed to find any forward convolution algorithm" (MXNet's
# cudnn_convolution-inl.h), "could not find a suitable cudnn algorithm", "failed to load the model"; and the CUDA
# error string "named symbol not found" (cudaErrorSymbolNotFound, CUDA_ERROR_NOT_FOUND), a symbol the runtime or
# the driver lacks, not a library.
_NOT_A_LIBRARY = re.compile(r"(?i)\b(?:find|load|locate|open)\s+(?:a|an|any|the)?\s*(?:[\w-]+\s+){0,3}?(?:algorithms?|"
                            r"engines?|plans?|kernels?|configs?|configurations?|workspace|model|weights|checkpoint)\b"
                            r"|\bsymbol not found\b")
_LINK_WORDS = re.compile(r"(?i)\blink(?:er|ing)?\b|entry point|procedure|\bsymbol\b|undefined|unresolved|dll error")
# Words that say a version does not fit, not only that there is one (an issue template's "cuDNN version: 8.9" says
# nothing of a mismatch).
# (a mismatch of results, shapes, sizes or types is not one of versions)
_VERSION_WORDS = re.compile(r"(?i)(?<!results )(?<!result )(?<!shape )(?<!size )(?<!type )(?<!dimension )mismatch"
                            r"|incompatib|not compatible|(?:does ?n[o']t|not) match|\btoo (?:old|new)\b"
                            r"|(?:older|newer|wrong|different|another) (?:cudnn )?version|\bversion\b[^\n]{0,40}?\b"
                            r"(?:but|while|whereas|instead|expected|required|needed|wanted)\b|(?:requires?|needs?"
                            r"|expects?|(?:built|compiled) (?:for|with|against)) (?:cudnn )?(?:version )?v?\d")
_CUDNN_FUNCTION = re.compile(r"\b(cudnn[A-Z]\w+)")
# Words of a build that failed, from its tools or its person: CMake's "CMake Error", make's "make: *** [...] Error 1",
# nvcc's, the linker's "undefined reference to" and "collect2: error", MSVC's "error C2065:", "build error",
# "failed to compile", "编译不通过"/"编译失败"/"编译错误" (it does not compile).
_BUILD_WORDS = re.compile(r"(?i)\bCMake Error\b|\bbuild (?:error|fail\w*)|\bfail(?:s|ed)? to (?:build|compile)"
                          r"|\bcompil(?:e|ation|ing|er) (?:error|fail\w*)|make(?:\[\d+\])?: \*\*\*|\bnvcc\b[^\n]{0,60}"
                          r"\berror\b|collect2: error|undefined reference to|\berror C\d{4}\b"
                          r"|编译(?:不通过|失败|错误|出错|报错)")
# A program that says which cuDNN versions it does not take: a build's check ("cuDNN version >= 8 is not yet
# supported", a CMake message) or a runtime one ("cuDNN 9 is not supported by this build"). The program was written
# for other cuDNN releases: their API, or their major. Read before the status words, whose "not supported" it holds.
_UNSUPPORTED_VERSION = re.compile(r"(?i)\bcudnn\s*(?:v(?:er(?:sion)?)?\.?\s*)?(?:[<>]=?\s*|=\s*)?v?\d+(?:\.\d+)*\s+"
                                  r"(?:is\s+|are\s+)?(?:(?:still\s+)?not\s+(?:yet\s+)?supported|unsupported)"
                                  r"|\bunsupported\s+cudnn\s+version")
# TensorFlow's cuda_dnn.cc before 1.x looked each cuDNN function up in the library it had opened and stopped with
# "could not find <function> in cudnn DSO; dlerror: ...": the cuDNN loaded lacks a function the build calls (users
# reword it: "<function> cudnn DSO dlerror"). The function may be named without its "cudnn" prefix.
_DSO_LOOKUP = re.compile(r"(?i)(?:could not find\s+)?(?<!\w)(?P<name>\w+)\s+(?:in\s+)?cudnn\s+DSO\b[;:,]?\s*dlerror")


def library_file(stem: str) -> re.Pattern[str]:
    """A library named as a file whose name starts with ``stem`` (a pattern), with or without "lib", ending ".so",
    ".so.N..." or ".dll"; only ASCII name characters around it: a CJK sentence runs into it without a space
    ("找不到cudnn64_8.dll"); a full stop after it ends the sentence ("instead of cudnn64_9.dll.")."""
    return re.compile(rf"(?i)(?<![A-Za-z0-9_.-])(?:lib)?(?:{stem})[A-Za-z0-9_.-]*?(?:\.so(?:\.\d+)*|\.dll)"
                      r"(?![A-Za-z0-9_]|\.[A-Za-z0-9_])")


_CUDNN_LIBRARY = library_file("cudnn")


# A cuDNN version in a sentence of any program: 8.9.0, v5.1, 5.x, cudnnGetVersion's integer (7605, 90100), (8, 7, 0);
# not part of a path, a file's line number or a name (the look-arounds), nor another product's version (`_OTHERS`).
_NUMBER = re.compile(r"(?<![\w.:/\\-])(?:\(\s*\d+(?:\s*,\s*\d+)+\s*\)|v?\d+(?:\.(?:\d+|x|\*))*)(?![\w/\\]|\.\w)")
_OTHERS = re.compile(r"(?i)\b(?:cuda|cu|nvcc|python|py|torch|pytorch|tensorflow|tf|jax|paddle|onnxruntime|gcc|glibc"
                     r"|driver|ubuntu|centos|debian|windows|win|macos|sm|capability|line|gpu|rtx|gtx|tesla|code"
                     r"|error|status|errno)\b\W{0,3}$")
# The words that say whose version follows (the last such word before a number): the one the program wants (built,
# compiled for, required, expected, at least, a header's) or the one it found (loaded, installed, the runtime's,
# "yours is"). "linked against" says either (TensorRT's is the build's, PyTorch's the runtime's): `_VERSION_PAIR`.
_WANTS = re.compile(r"(?i)\b(?:for|compiled|built|requires?|required|needs?|needed|expects?|expected|wants?|wanted"
                    r"|least|minimum|header|headers|update to|upgrade to)\b|>=?|≥")
# "was" as a check reports the version it rejected: Theano's "cuDNN Version is too old. Update to v5, was 3007."
_HAS = re.compile(r"(?i)\b(?:loaded|found|got|runtime|installed|have|has|is|was|detected|using|current|library"
                  r"|yours)\b")


def _role(before: str) -> str | None:
    """Whose version a number is, from the words between it and the number before it: "wants", "has" or None."""
    last = max(((found.start(), role) for role, pattern in (("wants", _WANTS), ("has", _HAS))
                for found in pattern.finditer(before)), default=None)
    return last[1] if last else None


_CUDNN_LINE = re.compile(r"(?im)^[^\n]*cudnn[^\n]*$")
# A check's sentence names two or three versions: the numbers of a line past these are a listing's, not a check's.
VERSIONS_PER_LINE = 8


def _versions_in(line: str) -> list[tuple[tuple[int, ...], str | None, str]]:
    """The cuDNN versions a line of a program's words holds, each with whose it is (`_role`) and as written."""
    shown: list[tuple[tuple[int, ...], str | None, str]] = []
    at = 0
    for found in itertools.islice(_NUMBER.finditer(line), VERSIONS_PER_LINE):
        before, at = line[at:found.start()], found.end()
        version = version_of(found.group(0))
        # a lone digit is a cuDNN major only right after the word ("cuDNN 5", "cudnn v7") or a check's "update to v5"
        lone = (re.fullmatch(r"v?\d", found.group(0))
                and not re.search(r"(?i)(?:cudnn|update to|upgrade to)\W*$", before))
        if version is None or lone or _OTHERS.search(before) or not 2 <= version[0] <= 9:
            continue
        shown.append((version, _role(before), found.group(0)))
    return shown


def _version_check(text: str) -> Signal | None:
    """A line that names cuDNN and says which version the program wants and which it found, in words no known
    message has ("These bindings are for cuDNN 5.x ... the loaded cuDNN is version: 6020", "needs at least 7.0,
    found 6.0.21"): the check's kind from the numbers themselves (`_version_signal`: another major, an older or a
    newer minor), not from the words. Where the words give one version's side only, a line that says the versions
    do not fit gives the other version the other side."""
    for named in _CUDNN_LINE.finditer(text):
        line = named.group(0)
        shown = _versions_in(line)
        wants = next((written for _, role, written in shown if role == "wants"), None)
        has = next((written for _, role, written in shown if role == "has"), None)
        unsided = [written for _, role, written in shown if role is None]
        if len(shown) == 2 and len(unsided) == 1 and _VERSION_WORDS.search(line):
            wants, has = wants or unsided[0], has or unsided[0]
        if wants and has and version_of(wants) != version_of(has):
            return _version_signal("cudnn-named", "the text (no known message): a program's check of the cuDNN "
                                   "version it wants against the one it found, in its own words", "the program",
                                   wants, has, False, named)
    return None


def _version_pair(found: re.Match[str]) -> Signal | None:
    built = group(found, "built", "built2", "built3", "built4") or ""
    have = group(found, "found", "found2", "found3", "found4") or ""
    return _version_signal("version-pair", "a framework's check of the cuDNN it was built with against the one "
                           "it loaded, in its own words (TensorRT, Paddle, Caffe2, wrappers)", "the program", built,
                           have, False, found)


# A cuDNN status as a bare number in a wrapper's words: "cuDNN error 4", "CUDNN failure 3: ...", "cudnnCreate failed:
# 1", "cudnn status code 2000" (the name of cuDNN, then a word of failure, then the number, on one line)
_STATUS_NUMBER = re.compile(r"(?i)\bcudnn\w*[^\n]{0,40}?\b(?:error|status|failure|failed|returned)\b[ :=#]{0,3}"
                            r"(?:code[ :=#]{0,3})?\(?(?P<number>\d{1,4})\b(?![.\d])")

# The patterns of `_unknown_text`: guesses from the words of a text that holds no known message.
GUESSES = ("cudnn-named", "status-words", "library-named")


def _unknown_text(text: str) -> Signal | None:
    """For a text that names cuDNN but holds no message above: what it is about, from its words (a status, a
    library that did not load, a function a library lacks, a version that does not fit; else only that it names
    cuDNN), so that the ranking can offer the usual causes of that kind of failure rather than nothing. None for a
    text that does not name cuDNN."""
    if not re.search(r"(?i)cudnn", text):
        return _dependency_named(text)
    if (refused := _UNSUPPORTED_VERSION.search(text)):
        return Signal("cudnn-named", "refused-version", _line(refused), "the text (no known message)",
                      "the program says it does not support this cuDNN version: it was written for other cuDNN "
                      "releases", quote=refused.group(0))
    if (lookup := _DSO_LOOKUP.search(text)):
        return Signal("cudnn-named", "api-missing", _line(lookup), "the text (no known message)",
                      f"{lookup.group('name')} was looked up in the cuDNN library loaded and is not there: a cuDNN "
                      "without that function was found", quote=lookup.group(0))
    if (number := _STATUS_NUMBER.search(text)) and (name := status_of_number(int(number.group("number")))):
        entry = status_entry(name)
        return Signal("status-words", entry.kind if entry and entry.kind else "status:OTHER", _line(number),
                      "a cuDNN status as a number (a wrapper's message)",
                      f"a cuDNN call failed: \"{number.group(0)}\" is CUDNN_STATUS_{name}", status=name,
                      families=entry.families if entry else ())
    if (status := _STATUS_WORDS.search(text)):
        words = (status.group("words") or "not init").lower().replace("_", " ")
        name = next(name for prefix, name in _STATUS_OF_WORDS if words.startswith(prefix))
        entry = status_entry(name)
        return Signal("status-words", entry.kind if entry and entry.kind else "status:OTHER", _line(status),
                      "a cuDNN status in words (a wrapper's message)", f"a cuDNN call failed: {status.group(0)}",
                      status=name, families=entry.families if entry else ())
    library = next((found for found in _CUDNN_LIBRARY.finditer(text) if _FILE_WORDS.search(_line(found))),
                   None) if not _LOAD_WORDS.search(text) else _CUDNN_LIBRARY.search(text)
    if library:
        name = library.group(0)
        return Signal("cudnn-named", load_kind(name, "missing"), _line(library), "the text (no known message)",
                      f"{name} is named next to words of a library that did not load, or that a program "
                      "wants", name, name)
    said = next((line for line in text.splitlines() if re.search(r"(?i)cudnn", line) and _LOAD_WORDS.search(line)
                 and not _NOT_A_LIBRARY.search(line)), None)
    if said is not None:  # "cuDNN not found", "Could not find cuDNN", "cudnn is missing": the library, unnamed
        return Signal("cudnn-named", "cudnn-not-found", said.strip()[:400], "the text (no known message)",
                      "the text says that cuDNN did not load, without naming the file")
    function = _CUDNN_FUNCTION.search(text)
    if function and _LINK_WORDS.search(text):
        if removed_in(function.group(1)) is not None:
            return _removed("cudnn-named", function.group(1), function, "the text (no known message)")
        return Signal("cudnn-named", "api-missing", _line(function), "the text (no known message)",
                      f"{function.group(1)} is named next to words of a link or load failure: a cuDNN without that "
                      "function was found", quote=function.group(1))
    if (check := _version_check(text)) is not None:
        return check
    if (version := _VERSION_WORDS.search(text)):
        return Signal("cudnn-named", "version-unclear", _line(version), "the text (no known message)",
                      "the text is about a cuDNN version that does not fit")
    if (build := _BUILD_WORDS.search(text)):
        return Signal("cudnn-named", "compile-missing", _line(build), "the text (no known message)",
                      "a build that names cuDNN failed: the code was written for another cuDNN's API, or the build "
                      "does not find the cuDNN it was told of", quote=build.group(0))
    named = re.search(r"(?i)cudnn", text)
    assert named is not None
    return Signal("cudnn-named", "cudnn-mentioned", _line(named), "the text (no known message)",
                  "the text names cuDNN, but no message of it and no words of a failure cudnnload can read")


# Any library named as a file; one cuDNN needs is one of `DEPENDENCY_CLASSES` (`library_class`).
_ANY_LIBRARY = library_file(r"[A-Za-z0-9_]")
DEPENDENCY_CLASSES = ("nvrtc", "libcuda", "cublas", "cudart", "cuda-math", "zlib")


# a program's own preloading of the libraries it ships (vs-mlrt's "failed to preload X, errno 127")
_PRELOAD_FAILED = re.compile(r"(?i)\b(?:could ?n[o']t|cannot|unable to|failed to|fails? to)\s+preload\b")


def _dependency_named(text: str) -> Signal | None:
    """For a text that does not name cuDNN and holds no message above: a library cuDNN needs named on a line with
    words of a library that did not load ("vstrt: failed to preload ...\\cublas64_11.dll, errno 127"), else None."""
    for line in text.splitlines():
        name = next((found.group(0) for found in _ANY_LIBRARY.finditer(line)
                     if library_class(found.group(0)) in DEPENDENCY_CLASSES), None)
        if name and (_LOAD_WORDS.search(line) or _PRELOAD_FAILED.search(line)):
            return Signal("library-named", load_kind(name, "missing"), line.strip()[:400], "the text (no known "
                          "message)", f"{name} is named next to words of a library that did not load", name, name)
    return None


# --- the facts around the messages --------------------------------------------------------------------

@dataclass(frozen=True)
class Clue:
    """A fact the text shows, with the line of the text that shows it."""

    name: str
    quote: str


# "used to work fine with 5.2, does not work with 6.0", "does not work anymore with 6.0 (worked with 5.2)"
_REGRESSION = (r"(?i)\b(?:used to work|work(?:ed|s))(?: fine| well)? (?:with|in|on|under) {release}\d+(?:\.\w+)+"
               r"[^\n]{{0,80}}?(?:\bbut\b|does ?n[o']t|not work|fails?\b|broke|no longer)"
               r"|\b(?:does ?n[o']t|not|no longer) work(?:s|ing)? (?:any ?more )?(?:with|in|on|since|after) {release}"
               r"\d+(?:\.\w+)+[^\n]{{0,60}}?\b(?:worked|works|used to work)\b")

# (name, pattern, flags): the first match is quoted. Names are what ranking.RULES read.
_CLUES: tuple[tuple[str, str], ...] = (
    ("windows", r"\b\w+\.dll\b|\[WinError \d+\]|\b[A-Z]:\\\w|Error code 12[67]|LoadLibrary|\bWindows\b"
                r"|(?i:0xC0000409)|-1073740791|\b3221226505\b"
                r"|\bWIN(?:DOWS|10|11)\b|\bWin ?1[01]\b|[_-]windows[_-]"),
    ("wsl", r"/usr/lib/wsl\b|\bWSL2?\b|microsoft-standard"),
    ("linux", r"\blib\w+\.so\b|/usr/(?:local/)?lib|/home/\w|\b(?:Ubuntu|CentOS|Debian|Fedora|Linux|AlmaLinux|RHEL)"
              r"\b"),
    ("macos", r"\.dylib\b|\bmacOS\b|\bDarwin\b"),
    ("conda", r"(?:ana|mini)conda\d?|[/\\]envs[/\\]|\bconda (?:install|create|env|activate)\b|CONDA_PREFIX"
              r"|conda-forge|\[conda\]"),
    ("pip-wheel", r"site-packages[/\\]nvidia[/\\]cu\w+|nvidia[-_]cudnn[-_]cu\d+|tensorflow\[and-cuda\]|jax\[cuda\d*"
                  r"(?:_pip)?\]|cuda\d+_pip"),
    ("venv", r"\bvenv\b|\.venv/|virtualenv"),
    ("pip-wheel-installed", r"nvidia[-_]cudnn[-_]cu\d+\S*\s+(?:\d|installed)|Successfully installed[^\n]*nvidia-cudnn|"
                            r"site-packages[/\\]nvidia[/\\]cudnn"),
    ("system-cuda", r"/usr/local/cuda(?:-[\d.]+)?/|/usr/lib/x86_64-linux-gnu/libcudnn|/lib/x86_64-linux-gnu/"
                    r"libcudnn|\blibcudnn\d(?:-cuda-\d+)?\b|apt(?:-get)? install[^\n]*cudnn"),
    ("program-files", r"Program Files\\NVIDIA"),
    ("hpc-module", r"\bmodule load\b|/(?:public/)?apps?/(?:cuda|cudnn)|Cluster-Apps|\d\) cudnn/|\bcudnn/v?\d"),
    ("ld-library-path-cudnn", r"LD_LIBRARY_PATH[:=]\s*[^\n]*(?:[Cc][Uu][Dd][Nn][Nn]|[Cc][Uu][Dd][Aa])[^\n]*"),
    ("ld-library-path", r"LD_LIBRARY_PATH"),
    ("pytorch", r"\btorch\b|PyTorch|\bpytorch\b"),
    ("tensorflow", r"\btensorflow\b|TensorFlow|\bkeras\b|tf\.config|\btf\.\w"),
    ("jax", r"\bjax(?:lib)?\b|\bJAX\b|XlaRuntimeError"),
    # the JAX CUDA plugin (jax-cuda12-plugin, jax-cuda13-plugin): it opens the nvidia wheels' libraries by path
    ("jax-cuda-plugin", r"jax_plugins[/\\.]xla_cuda\d+|jax[-_]cuda\d+[-_]plugin"),
    ("onnxruntime", r"onnxruntime|ONNXRuntime|ONNX Runtime|CUDAExecutionProvider"),
    ("ctranslate2", r"ctranslate2|CTranslate2|faster[_-]whisper|whisperx|WhisperModel|whisper[_-]ctranslate2"),
    ("paddle", r"\bpaddle\w*|Paddle"),
    ("caffe", r"\bcaffe\b|Caffe|Check failed: status == CUDNN_STATUS_SUCCESS"),
    ("julia", r"\.julia[/\\]|\bjulia>|CUDA\.jl|\bFlux\b"),
    # the CUDA runtime's "out of memory" (cudaErrorMemoryAllocation), XLA's "Out of memory while trying to allocate",
    # cuBLAS's and cuDNN's ALLOC_FAILED
    ("out-of-memory", r"(?i:out of memory)|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|\bOOM\b"
                      r"|RESOURCE_EXHAUSTED|CUDNN_STATUS_ALLOC_FAILED|CUBLAS_STATUS_ALLOC_FAILED"),
    # a line stating the GPU's memory ("GPU memory: 3.99 GiB") is a device property, not talk of running out; "failed
    # to allocate" alone does not say which memory (a host buffer, a workspace: TensorFlow's GPU allocator says
    # CUDA_ERROR_OUT_OF_MEMORY in the same line)
    # the batch talked of in words ("reducing the batch size", "works with batchsize up to 41"), not a name in code
    # (batch_size=, batch_sizes): a batch too large for the memory, or for what the call supports
    ("batch-size", r"(?i)\bbatch[ -]?size\b|\bbatchsize\b|\b(?:big|large|huge) batch(?:es)?\b"),
    ("memory-hint", r"(?i:GPU memory)(?!:?\s*[\d.]+\s*[GM]i?B)|allow_growth|"
                    r"memory growth|PREALLOCATE|"
                    r"(?<!\d)\d{1,4} ?G(?:B|iB)? (?:of )?(?:GPU )?memory|with \d{1,4}G\b|-ll:fsize|"
                    r"reserve[sd]? [^\n]*memory|failed to allocate"),
    # PyTorch (c10/cuda): "The NVIDIA driver on your system is too old (found version %d)"
    ("driver-too-old", r"insufficient driver version|driver version is insufficient|CUDA driver version is "
                       r"insufficient|driver too old|older than the CUDA|driver\b[^\n]{0,30}?\bis too old"),
    # openxla/xla stream_executor/cuda/cuda_dnn.cc, CudnnSupport::Init: "There was an error before creating cudnn
    # handle (%d): %s : %s", the CUDA runtime's last error (cudaPeekAtLastError) before cudnnCreate; 500,
    # cudaErrorSymbolNotFound, there is the runtime finding no entry point it needs in the driver: an older driver
    ("runtime-symbol-missing", r"error before creating cudnn handle \(500\)|before creating cudnn handle[^\n]{0,20}"
                               r"cudaErrorSymbolNotFound"),
    ("no-driver", r"libcuda\.so\.1: cannot open|Couldn't open CUDA library libcuda|was unable to find libcuda\.so"
                  r"|could not open driver version path|no NVIDIA driver|NVIDIA driver (?:is )?not (?:installed|found)"
                  r"|nvidia-smi: command not found|NVIDIA-SMI has failed"),
    # TensorFlow's and XLA's cuda_diagnostics.cc after a failed cuInit: no NVIDIA kernel module is loaded here
    ("no-kernel-driver", r"kernel driver does not appear to be running on this host|/proc/driver/nvidia/version "
                         r"does not exist|/dev/nvidia0 does not exist"),
    # the driver found no GPU this process may use: the CUDA runtime's cudaErrorNoDevice (100, "no CUDA-capable device
    # is detected", the catalog's cuda-runtime entry) and the driver API's CUDA_ERROR_NO_DEVICE (cuda.h), which
    # TensorFlow logs as "failed call to cuInit: CUDA_ERROR_NO_DEVICE"
    # the driver's words for no GPU this process may use; or CUDA_VISIBLE_DEVICES set so that it sees none: empty,
    # -1, or a list whose first entry is neither an index nor a GPU-/MIG- UUID (CUDA reads the list up to the first
    # entry it cannot parse: "[1,2,3]" hides every GPU; CUDA C Programming Guide, CUDA Environment Variables); not a
    # shell's or a template's variable ("$GPU", "%GPU%", "{gpu}")
    # torch/cuda/__init__.py (_lazy_init) "No CUDA GPUs are available": the runtime counted no device
    # XLA's GetGpuXlaClient (xla/pjrt/gpu/gpu_helpers.cc) "No visible GPU devices." (JAX: "Unable to
    # initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.")
    ("no-device", r"no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice"
                  r"|No CUDA GPUs are available|No visible GPU devices"
                  r"|\bCUDA_VISIBLE_DEVICES=(?:-1\b|[\"']{2}|(?![\"']?(?:\d|GPU-|MIG-|[$%{<]))[\"']?[^\s\"',;]+)"),
    # the GPU itself too old, not its driver ("your GPU driver is too old" is the driver's)
    ("gpu-too-old", r"(?:GPU|GeForce|Quadro|Tesla|TITAN)(?:(?!driver)[^\n]){0,40}too old|no longer supports this GPU"),
    # the GPU generations a text names (gpus.GENERATIONS): gpu-new, gpu-turing, gpu-before-volta, gpu-old-name
    *gpus.clues(),
    # the CUDA a build is for (ranking.gpu_newer_than_cuda): torch's "+cu113", collect_env's "CUDA used to build
    # PyTorch: 11.3", conda's "cudatoolkit=11.3" and "pytorch-cuda=11.8"
    ("build-cuda", r"\+cu\d{2,3}\b|CUDA used to build PyTorch: \d+\.\d+|(?:cudatoolkit|pytorch-cuda)[= ]+\d+\.\d+"),
    # nvcc's "Unsupported gpu architecture 'compute_86'": the CUDA that builds the code has no kernels for that GPU
    ("no-kernel-image", r"no kernel image is available|is not compatible with the current PyTorch installation|"
                        r"CUDA capability sm_\d+ is not compatible|Unsupported gpu architecture"
                        # NVRTC's and ptxas's words for the same (CuPy, PyTorch's fusers; XLA's ptxas: "Value
                        # 'sm_90a' is not defined for option 'gpu-name'"): a CUDA compiler older than the GPU
                        r"|invalid value for --gpu-architecture|is not defined for option 'gpu-name'"),
    # the architectures a build has kernels for: torch/cuda/__init__.py's "The current PyTorch install supports CUDA
    # capabilities sm_50 sm_60 ...", a build's "arch list: sm_50 sm_60"
    ("arch-list", r"(?i:supports CUDA capabilities|arch(?:itecture)?s?[ _]list:?)(?:\s*(?:sm|compute)_\d+)+"),
    ("cuda-before-10", r"\bCUDA(?: version)?[:= ]+[1-9]\.\d\b|\bcuda ?[89]\.\d\b|\bcu9\d\b|cudatoolkit=9"),
    ("cuda-old", r"\bCUDA(?: version)?[:= ]+(?:[1-9]|10)\.\d\b|\bcuda ?(?:[89]|10)\.\d\b|\bcu(?:9\d|10\d)\b|"
                 r"cudatoolkit=(?:9|10)|built for a CUDA older"),
    ("poetry", r"\bpoetry\b"),
    # a framework's build without CUDA shown by its version or its build facts: a PyTorch wheel's local version
    # "+cpu", torch.utils.collect_env's "CUDA used to build PyTorch: None", conda's cpuonly package, tensorflow-cpu
    ("cpu-wheel", r"\b\d+\.\d+(?:\.\d+)?\+cpu\b|CUDA used to build PyTorch: None|torch\.version\.cuda\W{1,6}None\b"
                  r"|\bcpuonly\b|\btensorflow-cpu\b"),
    ("lib64-site-packages", r"lib64/python[\d.]+/site-packages"),
    # a frozen app's traceback names torch's modules by relative path (PyInstaller); symlink farms
    ("bundled-symlink", r"[Pp]y[Ii]nstaller|_MEIPASS|/_internal/|\bbazel\b|runfiles|/nix/store|symlink farm|"
                        r"File \"torch/"),
    ("arm64", r"\baarch64\b|\barm64\b|\bsbsa\b|\bJetson\b|\bGH200\b|\bGrace\b"),
    ("large-tensor", r"2\s*\*\*\s*31|2\^31|\bINT_MAX\b|int32 index|64-bit index|too large|large (?:tensor|input)|"
                     r"works with batch ?size up to|starts failing at"),
    ("groups", r"\bgroups?=\s*\d{3,}|depthwise|group count|parameter group is too big|too many groups"),
    # ...or a shape printed with a 0 among its dimensions: Theano's "Inputs shapes: [(0, 5, 6, 8), ...]" and
    # "shapes=0 1 1 1", PyTorch's "torch.Size([0, 3, 224, 224])"
    ("zero-size", r"feature_map_count: 0|\bcount: 0\b|size 0\b|zero (?:channels|batch|size)|empty (?:batch|tensor|"
                  r"input)|0 channels|shape \[0|\b[Ss]hapes?\W{0,4}(?:\d{1,9}(?:, ?| ))?\b0(?:, ?| |\)|\])"
                  r"|\bSize\(\[(?:\d{1,9}, ){0,7}0[,\]]"),
    ("bf16", r"\bbf16\b|bfloat16"),
    # a limit a message names on what the call was given: a dimension, a size, an alignment ("hidden_dim should be
    # multiple of 8", "head dim must be at most 256", "only supports NHWC"); not a release ("only supports cuDNN 5.1")
    ("limit", r"(?i)\b(?:should|must|has to|needs? to) be (?:less|smaller|greater|larger|at most|at least|no "
              r"(?:more|larger|greater) than|(?:a )?multiples? of|divisible by|aligned)(?![^\n]{0,30}?\b(?:as new|as "
              r"old|newer|older|version|release|cu(?:dnn|da))\b)|\bonly supports?\b(?!" + _NOT_A_LIMIT + ")|"
              r"\bis only supported (?:for|with|when)\b(?!" + _NOT_A_LIMIT + ")"),
    ("aborted", r"Aborted(?: \(core dumped\))?|IOT instruction|core dumped|0xC0000409"),
    # a Windows program that ended with no message of its own: NTSTATUS 0xC0000409 (a fast fail, which abort() is
    # on Windows; -1073740791 as a signed exit status), a debugger's "Unhandled exception at ... (cudnn64_8.dll):
    # Fatal program exit requested", or the user's "crashes without any error"
    ("silent-exit", r"(?i:0xC0000409)|-1073740791|\b3221226505\b|Fatal program exit requested|请求了严重的程序退出|闪退"
                    r"|(?i:\bcrash(?:es|ed)?\b[^\n]{0,60}?\b(?:without|no|not)\b[^\n]{0,25}?\b(?:error|exception"
                    r"|message)|\b(?:exits?|exited|quits?|closes?|stops?)\b (?:silently|without (?:any )?(?:error"
                    r"|message|output)))"),
    # a cuDNN 8 DLL named as the module a Windows process ended in: Event Viewer's "Faulting module name:
    # cudnn64_8.dll" (in the system's language: "错误模块名称:", "Name des fehlerhaften Moduls:"), a debugger's
    # "Unhandled exception at 0x00007FFF7138420D (cudnn64_8.dll) in app.exe: Fatal program exit requested"
    ("cudnn-8-module", r"(?i:(?:(?<!\w)modul|模块|モジュール)[^\n:：]{0,24}[:：][ \t]*(?:lib)?cudnn(?:_[a-z]{1,8})"
                       r"{0,2}64_8\.dll|\b0x[0-9a-f]{8,16}[ \t]*\([ \t]*(?:lib)?cudnn(?:_[a-z]{1,8}){0,2}64_8\.dll"
                       r"[ \t]*\))"),
    # a cuDNN release from 8.3 to 8.9 named: on Windows, each needs zlibwapi.dll
    ("cudnn-8-zlib", r"(?i:cudnn[\w\s.:=-]{0,25}?(?<![\d.])v?8\.[3-9](?![\d])"
                     r"|cudnn[^\n]{0,30}?(?<![\d.])8\.[3-9]\.\d)"),
    # the program stopped on an error: Python's traceback, a C++ exception that ended it, a fatal signal
    ("stopped", r"Traceback \(most recent call last\)|terminate called after throwing|Fatal Python error"
                r"|Segmentation fault|core dumped|段错误|核心已转储"),
    # NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors): 48 (double-bit ECC), 63/64 (ECC page retirement),
    # 74 (NVLink), 79 (fallen off the bus), 92/94/95 (ECC) are the GPU's; 13 (graphics engine exception), 31 (memory
    # page fault), 43 and 45 are as often a program's bad access or a driver's, so any other Xid is only a hint
    ("hardware", r"uncorrectable ECC|ECC_UNCORRECTABLE|fallen off the bus|GPU is lost|\bXid\b[^\n]{0,40}?\b(?:48|6[34]"
                 r"|74|79|9[245])\b"),
    ("xid", r"\bXid\b"),
    ("paging-file", r"WinError 1455\]|os error 1455|error 1455\b|ERROR_COMMITMENT_LIMIT"),
    # an address-space limit named: `ulimit -v`, RLIMIT_AS, a batch system's virtual-memory limit (Slurm, PBS, SGE)
    ("address-limit", r"ulimit -[a-zA-Z]*v\b|\bRLIMIT_AS\b|virtual memory (?:limit|exceeded)|\bh_vmem\b|\bvmem="
                      r"|\bVSZ limit|address[- ]space limit"),
    # the CUDA runtime's cudaErrorAssert ("device-side assert triggered"): a kernel's own assertion failed (an index
    # or a label out of range); the context is lost, and every later error (a cuDNN status) follows from it
    ("device-assert", r"device-side assert(?:ion)? triggered|cudaErrorAssert|Assertion `[^`\n]{1,200}` failed"),
    # a child process made by fork(): Python 3.12's warning on forking a threaded process, multiprocessing's fork
    # start method in a traceback (popen_fork.py; not process.py, which spawn's children show too), a pool's forked
    # worker, a DataLoader worker (fork is its default on Linux); CUDA started in the parent cannot run there
    # (PyTorch refuses it in words of its own: "Cannot re-initialize CUDA in forked subprocess")
    ("forked-child", r"use of fork\(\) may lead to deadlocks|popen_fork\.py|\bForkPoolWorker\b|\bForkProcess\b"
                     r"|DataLoader worker \(pid|\bforked (?:sub)?process|\bos\.fork\(\)"),
    # TensorFlow 1.0-1.4 "could not create cudnn handle: %s", 1.15-2.x and XLA "Could not create cudnn handle: %s"
    # (stream_executor/cuda/cuda_dnn.cc; the catalog holds both releases' templates)
    ("handle-create", r"[Cc]ould not create cudnn handle|cudnnCreate\b"),
    # the log says that cuDNN itself was loaded: TensorFlow 2.x platform/default/dso_loader.cc "Successfully opened
    # dynamic library %s", 1.x stream_executor/dso_loader.cc "successfully opened CUDA library %s locally", XLA
    # cuda_dnn.cc "Loaded cuDNN version %d"
    # ...and the reverse: the log says a GPU library did not open, and the framework went on without the GPU
    # (gpu_device.cc "Cannot dlopen some GPU libraries", after tsl's DsoLoader::MaybeTryDlopenGPULibraries, which only
    # dlopens; 1.x cuda_dnn.cc "Unable to load cuDNN DSO"): nothing was checked, so no version check is what failed
    ("gpu-libraries-not-opened", r"Cannot dlopen some GPU libraries|Unable to load cuDNN DSO"),
    ("cudnn-opened", r"[Ss]uccessfully opened (?:dynamic|CUDA) library (?:lib)?cudnn(?:\.so|64_)|Loaded cuDNN "
                     r"version \d+"),
    ("known-bad", r"had a binary backward-compatibility issue|known (?:to be )?(?:bad|broken) (?:cuDNN|release)"),
    # the text says it worked with an earlier release and fails with a later one: a regression of that release
    # (cuDNN's where the release it names is cuDNN's)
    # a program's development build: a nightly ("torch==2.6.0.dev20240914+cu121", "tf-nightly", "pytorch-nightly") or
    # a build from its main branch ("2.4.0a0+git4c97193", NGC's "1.5.0a0+3bbb36e"): its own code not yet released
    ("prerelease", r"(?i)\b\d+\.\d+\.\d+(?:\.dev\d{8}|a0\+(?:git)?[0-9a-f]{7})|\b(?:tf|torch|pytorch|jax|paddle)[-_]"
                   r"nightly\b|\bnightly (?:build|release|wheel)s?\b"),
    # a framework's cuDNN attention path: PyTorch's scaled_dot_product_attention routed to cuDNN (aten/src/ATen/
    # native/cudnn/MHA.cpp, transformers/cuda/sdp_utils.cpp; torch 2.3 on, the default backend in 2.5.0 and taken
    # back in 2.5.1), new code whose failures were the framework's own in the tuning reports
    ("attention", r"scaled_dot_product_attention|\bSDPA\b|cudnn/MHA\.cpp|sdp_utils\.cpp|cudnn_attention"),
    # the user says the same call runs with cuDNN turned off: cuDNN disabled (a build without it, PyTorch's
    # torch.backends.cudnn.enabled = False), another engine (Caffe's engine: CAFFE): the call and its inputs are valid,
    # cuDNN's handling of them is what fails
    ("runs-without-cudnn", r"(?i)(?:\b(?:disabl\w*|without|turn\w* off|switch\w* off)\s+(?:the\s+)?cudnn\b"
                           r"|cudnn\.enabled\s*=\s*False|\bengine\s*[:=]\s*caffe\b|USE_CUDNN\s*[:=]?\s*(?:0|OFF)\b)"
                           r"(?:(?!\bstill\b|\bsame (?:error|issue|problem|crash)|n't\b|\bnot\b|\bno longer\b)"
                           r"[^\n]){0,80}?"
                           r"(?:\bworks?\b|\bworked\b|\bfine\b|disappear|\bno (?:more )?errors?\b|\bsolve[sd]?\b"
                           r"|\bfixe[sd]\b|\bruns? (?:fine|well|ok)\b)"
                           r"|(?<!n't )(?<!not )\b(?:works?|worked|runs? (?:fine|well|ok))\b[^\n]{0,40}?"
                           r"\b(?:without|disabl\w*)\s+(?:the\s+)?cudnn\b"),
    # the same call failed only now and then, or after running a while: "randomly", "sometimes", "after a few
    # hours", "works for some minutes"
    ("intermittent", r"(?i)\b(?:randomly|intermittent(?:ly)?|sporadic(?:ally)?|occasionally|sometimes|at random"
                     r"|after (?:a while|some (?:time|minutes|hours|epochs|iterations|steps))|after (?:\d+|several"
                     r"|many|a few|some) (?:minutes|hours|epochs|iterations|steps|batches|frames)|(?:works?|worked"
                     r"|running|runs?|ran) (?:fine |well |ok |normally )?for (?:a while|some (?:time|minutes|hours)"
                     r"|\d+ (?:minutes|hours|epochs|iterations|steps))|not (?:always|every time))"),
    ("regression", _REGRESSION.format(release=r"[^\n]{0,30}?")),
    ("cudnn-regression", _REGRESSION.format(release=r"(?:the )?cudnn\s*v?")),
)
_CLUE_PATTERNS = tuple((name, re.compile(pattern)) for name, pattern in _CLUES)

FRAMEWORKS = ("pytorch", "tensorflow", "jax", "onnxruntime", "ctranslate2", "paddle", "caffe", "julia")


@dataclass(frozen=True)
class Build:
    """A framework release the text names, and the cuDNN major that release is built for."""

    framework: str
    release: str
    cudnn_major: int
    bundles: bool  # it brings that cuDNN along (torch's nvidia-cudnn pin) rather than needing it installed
    cudnn: tuple[int, int] | None = None  # the cuDNN major.minor the release was built with, where its notes say
    cuda: tuple[int, int] | None = None  # the CUDA the release was built for, where its notes say


# TensorFlow's "Tested build configurations" (tensorflow/docs site/en/install/source.md, Linux GPU): the cuDNN each
# release was built with, major.minor; before 1.13 the table gives the major alone.
TENSORFLOW_CUDNN: dict[tuple[int, int], tuple[int, int]] = {
    (1, 13): (7, 4), (1, 14): (7, 4), (1, 15): (7, 4), (2, 0): (7, 4), (2, 1): (7, 6), (2, 2): (7, 6), (2, 3): (7, 6),
    (2, 4): (8, 0), **{(2, minor): (8, 1) for minor in range(5, 12)}, (2, 12): (8, 6), (2, 13): (8, 6),
    (2, 14): (8, 7), (2, 15): (8, 9), (2, 16): (8, 9), (2, 17): (8, 9),
    **{(2, minor): (9, 3) for minor in range(18, 22)},
}
# The cuDNN each torch release's Linux wheel pins (Requires-Dist nvidia-cudnn-cu11/cu12, read off PyPI's metadata on
# 2026-12-02 for 1.13.1 to 2.7.1, and off the surveyed wheels, cudnnload.resolve.survey, from 2.8 on): the cuDNN
# major.minor a torch of that release brings.
TORCH_CUDNN: dict[tuple[int, int], tuple[int, int]] = {
    (1, 13): (8, 5), (2, 0): (8, 5), (2, 1): (8, 9), (2, 2): (8, 9), (2, 3): (8, 9), (2, 4): (9, 1), (2, 5): (9, 1),
    (2, 6): (9, 1), (2, 7): (9, 5), (2, 8): (9, 10), (2, 9): (9, 10), (2, 10): (9, 10), (2, 11): (9, 19),
    (2, 12): (9, 20), (2, 13): (9, 20), (2, 14): (9, 24), (2, 15): (9, 26),
}
# ... and the CUDA each release was built for (the same table; 1.5-1.12: CUDA 9, 1.0-1.4: CUDA 8).
TENSORFLOW_CUDA: dict[tuple[int, int], tuple[int, int]] = {
    **{(1, minor): (8, 0) for minor in range(0, 5)}, **{(1, minor): (9, 0) for minor in range(5, 13)},
    (1, 13): (10, 0), (1, 14): (10, 0), (1, 15): (10, 0), (2, 0): (10, 0), (2, 1): (10, 1), (2, 2): (10, 1),
    (2, 3): (10, 1), (2, 4): (11, 0), **{(2, minor): (11, 2) for minor in range(5, 12)}, (2, 12): (11, 8),
    (2, 13): (11, 8), (2, 14): (11, 8), (2, 15): (12, 2), (2, 16): (12, 3), (2, 17): (12, 3),
    **{(2, minor): (12, 5) for minor in range(18, 22)},
}


# How a release is written after a program's name: pip list's columns, pip freeze's "==", a wheel's "-", an issue
# template's or torch.utils.collect_env's "PyTorch version: 2.5.1", "CTranslate2 version: 4.4.0", "torch: 2.4.0".
_RELEASE = r"(?:[ \t]+version)?(?:[ \t]*(?:==|[:=：])[ \t]*|[ \t]+|-)v?(\d+)\.(\d+)(?:\.\d+)*"

def _torch_cudnn(release: tuple[int, int], variant: str | None) -> int | None:
    """The cuDNN major a torch release brings: from 1.13 on the one its wheels pin (`TORCH_CUDNN`). Before 1.13
    the binaries carry cuDNN by their CUDA variant (pytorch/builder common/install_cuda.sh, 2020-02 to 2022-11:
    CUDA 10.2 builds with libcudnn7 7.6.5.32, CUDA 11.x builds with cuDNN 8): a "+cu102", "cu101", "cuda10.2"
    variant is cuDNN 7, an 11.x one 8; without a variant, 1.8-1.12 (whose default wheels were CUDA 10.2 on Linux
    and 11.x elsewhere) say no major, and 1.7 and earlier 7."""
    if release >= min(TORCH_CUDNN):  # pinned: the table's, a release newer than it its last
        return TORCH_CUDNN.get(release, TORCH_CUDNN[max(TORCH_CUDNN)])[0]
    if variant:
        return 8 if int(variant.replace(".", "")[:2]) >= 11 else 7
    return None if release >= (1, 8) else 7


# The cuDNN major of a framework's release, from its release notes and wheel pins: torch (_torch_cudnn); ONNX
# Runtime's CUDA 12 packages use cuDNN 9 from 1.19 on, 8 before ("CUDA Execution Provider requirements");
# CTranslate2 4.5.0 moved from cuDNN 8 to 9 (its release notes). tests/test_explain.py checks them against the
# surveyed wheels. A conda build string or a local version label may follow the release: "+cu102", "py3.8_cuda10.2_
# cudnn7.6.5_0" (whose cuDNN major is read as written).
_VARIANT = r"(?:\+cu(?P<cu>\d+)|[ \t]+\S*?cuda(?P<cuda>\d+\.\d+)_cudnn(?P<cudnn>\d+))?"
_BUILDS: tuple[tuple[str, str, Callable[[tuple[int, int], str | None], int | None], bool], ...] = (
    # not torch.utils.collect_env's "CUDA used to build PyTorch: 10.2" (a CUDA version; _builds reads it as the variant)
    ("pytorch", rf"(?<!build )\b(?:py)?torch{_RELEASE}{_VARIANT}", _torch_cudnn, True),
    # a package (onnxruntime-gpu) or a release archive's name (onnxruntime-win-x64-cuda12-1.17.1)
    ("onnxruntime", rf"\bonnx[ _]?runtime(?:[-_][A-Za-z]\w*){{0,4}}?{_RELEASE}\b",
     lambda v, _: 9 if v >= (1, 19) else 8, False),
    ("ctranslate2", rf"\bctranslate2{_RELEASE}", lambda v, _: 9 if v >= (4, 5) else 8, False),
    # tensorflow.org/install/source#gpu ("Tested build configurations"): 1.0-1.2 cuDNN 5.1, 1.3-1.4 6, 1.5-2.3 7,
    # 2.4-2.17 8, 2.18+ 9
    ("tensorflow", rf"\btensorflow(?:[-_]gpu)?{_RELEASE}\b",
     lambda v, _: 9 if v >= (2, 18) else 8 if v >= (2, 4) else 7 if v >= (1, 5) else 6 if v >= (1, 3) else 5, False),
    # jaxlib's CUDA wheels name the cuDNN they were built for: jaxlib-0.4.7+cuda11.cudnn82, +cuda12.cudnn91
    ("jax", r"jaxlib\S*?(?:==|-|[ \t]+)[\d.]+\+cuda\d+\.cudnn(\d)(\d)", lambda v, _: v[0], False),
)


# torch.utils.collect_env: "CUDA used to build PyTorch: 10.2" (the variant of the release it prints beside)
_BUILT_WITH_CUDA = re.compile(r"CUDA used to build PyTorch: (\d+\.\d+)")


def _builds(text: str) -> tuple[Build, ...]:
    found = []
    for framework, pattern, major_of, bundles in _BUILDS:
        match = re.search(pattern, text, re.IGNORECASE | re.ASCII)  # ASCII: "安装了torch 2.0" is torch 2.0
        if not match:
            continue
        release = (int(match.group(1)), int(match.group(2)))
        named = match.groupdict()
        built_with = _BUILT_WITH_CUDA.search(text) if framework == "pytorch" else None
        variant = named.get("cu") or named.get("cuda") or (built_with.group(1) if built_with else None)
        major = int(named["cudnn"]) if named.get("cudnn") else major_of(release, variant)
        if major is not None:
            tensorflow = framework == "tensorflow"
            cudnn = (TENSORFLOW_CUDNN.get(release) if tensorflow else
                     TORCH_CUDNN.get(release) if framework == "pytorch" else None)
            found.append(Build(framework, f"{release[0]}.{release[1]}", major, bundles, cudnn,
                               TENSORFLOW_CUDA.get(release) if tensorflow else None))
    return tuple(found)


@dataclass(frozen=True)
class Reading:
    """Everything the text shows: its messages (the first the one the ranking starts from), the facts around
    them, and what they add up to."""

    signals: tuple[Signal, ...]
    clues: tuple[Clue, ...]
    platform: str | None  # "linux", "windows", "wsl", "macos"
    cudnn_major: int | None
    cuda: tuple[int, ...] | None  # (12,) or (11, 8)
    frameworks: tuple[str, ...]  # in the order the text names them
    builds: tuple[Build, ...] = ()  # the framework releases the text names, with the cuDNN major each uses
    stated: tuple[int, ...] | None = None  # the cuDNN version the user says is installed ("cuDNN: 8.1.1")
    paths: tuple[str, ...] = ()  # paths of libraries the text shows (Linux or Windows)
    capability: tuple[int, int] | None = None  # the GPU's compute capability the text shows
    wanted: int | None = None  # the cuDNN major the messages show (a library's name, a version check), not stated
    wheel: tuple[int, ...] | None = None  # the nvidia-cudnn wheel's version that pip's output in the text shows
    files: tuple[str, ...] = ()  # cuDNN libraries the text shows on the machine (a listing, a path), not its messages'
    toolkit: tuple[int, ...] | None = None  # the CUDA the text names, but not nvidia-smi's (the driver's newest)
    named: tuple[str, ...] = ()  # cuDNN libraries the text names outside its known messages' lines, in any words
    toolkit_check: tuple[str, str] | None = None  # (the CUDA toolkit's, the framework's build's) of a toolkit check

    @property
    def primary(self) -> Signal | None:
        return self.signals[0] if self.signals else None

    def has(self, name: str) -> bool:
        return any(clue.name == name for clue in self.clues)

    def quote(self, name: str) -> str:
        return next((clue.quote for clue in self.clues if clue.name == name), "")

    @property
    def framework(self) -> str | None:
        """The program that loaded cuDNN: a framework whose own message is in the text, else the first named."""
        for signal in self.signals:
            owner = _OWNER.get(signal.pattern)
            if owner:
                return owner
        return self.frameworks[0] if self.frameworks else None


# A pattern only one framework prints says who loaded cuDNN.
_OWNER = {
    "pytorch-version": "pytorch", "no-engine": "pytorch", "torch-preload": "pytorch",
    "torch-preload-frame": "pytorch", "jax-version": "jax",
    "jax-cannot-load": "jax", "jax-known-bad": "jax", "tf-dso": "tensorflow", "tf-no-dso": "tensorflow",
    "tf-no-gpu": "tensorflow", "tf-self-check": "tensorflow", "tf-dnn-not-found": "tensorflow",
    "conv-algorithm": "tensorflow", "ort-require": "onnxruntime", "ort-load-unnamed": "onnxruntime",
    "jax-component": "jax", "gpu-plugin": "jax",
    **{f"cpu-build-{name}": owner for name, (owner, _, _) in CPU_BUILDS.items()},
    **{f"parts-mismatch-{name}": owner for name, (owner, _, _) in PARTS_MISMATCHES.items()},
    "paddle-dynload": "paddle",
    "torch-rnn-eval": "pytorch", "cuda-in-fork": "pytorch",
    **{f"extension-abi-{owner}": owner for owner in set(_SYMBOL_OWNER.values())},
}

# Which messages are the cause and which the consequence, when a text holds several: a library that failed
# to load comes before the version check or status that follows from it; the Error: part's library first. CUDA's
# math libraries (cuFFT, ...) are no library cuDNN needs: a framework lists them beside cuDNN, which comes first.
_PRECEDENCE = ("removed-api", "toolkit-", "dependency-", "unloadable", "paging-file", "symbol-mismatch", "engine-load",
               "sublibrary-load", "cudnn-not-found", "windows-load", "dependency-load:cuda-math", "compile-missing",
               "version-", "known-bad",
               "status:ARCH_MISMATCH", "status:SUBLIBRARY", "hardware", "oom", "misuse", "status:", "cublas-status:",
               "no-engine", "conv-algorithm", "framework-no-cudnn", "driver", "gpu", "catalog")
# ...and after every other kind: a framework's message that it could not start its GPU part or goes on without the
# GPU, which it prints after (or instead of) the message that says why: JAX's CUDA plugin raising at start, then
# JAX's "a CUDA-enabled jaxlib is not installed. Falling back to cpu.", which it prints after that failure too.
# Behind another message they are its consequence, and bring no causes of their own (ranking.by_score).
CONSEQUENCES = ("gpu-plugin", "cpu-build")


def _precedence(signal: Signal) -> int:
    """A message's rank among the text's: its kind's place in _PRECEDENCE; a warning after every error, except a
    version check's: a program warns that the cuDNN it loaded is not the one it was built with because later
    calls may fail (Paddle's gpu_resources.cc: "which may cause serious incompatible bug"), so a failure after it
    is read as its consequence."""
    matching = [(len(prefix), index) for index, prefix in enumerate(_PRECEDENCE) if signal.kind.startswith(prefix)]
    place = max(matching)[1] if matching else len(_PRECEDENCE)  # the most specific prefix's place
    if signal.kind in CONSEQUENCES:
        place = len(_PRECEDENCE) + 1 + CONSEQUENCES.index(signal.kind)
    after_errors = signal.warning and not signal.kind.startswith("version-")
    return place + (len(_PRECEDENCE) + len(CONSEQUENCES) + 1 if after_errors else 0)


# A log that repeats one error thousands of times says no more than its first few.
MATCHES_PER_PATTERN = 20


def _signals(text: str) -> Iterator[tuple[int, int, Signal]]:
    """(where in the text it starts and ends, the message) for each message a pattern reads."""
    spans: list[tuple[int, int]] = []  # a dlerror inside "Could not load library X. Error: ..." is that
    for pattern in PATTERNS:          # message's Error: part, not a message of its own
        for found in itertools.islice(pattern.regex.finditer(text), MATCHES_PER_PATTERN):
            if any(start <= found.start() and found.end() <= end for start, end in spans):
                continue
            signal = pattern.read(found)
            if signal is not None:
                spans.append(found.span())
                yield found.start(), found.end(), replace(signal, quote=signal.quote or quote(found.group(0)))


def quote(text: str, limit: int = 200) -> str:
    """The words of a message as quoted evidence: one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _wraps_an_error(text: str, match: messages.Match, errors: list[messages.Match]) -> bool:
    """A message that prints an error code's words in its last field (CTranslate2's curated "CUDA failed with error
    %s") or a derived entry's words that print them right after (PyTorch's "CUDA driver error: %s" before "invalid
    device context"): what failed is the error's, which is read in its place."""
    entry = match.entry
    if entry.as_error or (entry.curated and not entry.ends_in_field):
        return False
    return any(match.start <= error.start and error.start - match.end <= _WRAPPED
               and "\n" not in text[match.start:error.start] for error in errors)


# the most characters between a message's words and the error code's words it prints after them (": ", " (8) : ")
_WRAPPED = 12


def _catalog_signals(text: str, matches: list[messages.Match], taken: list[tuple[int, int]]
                     ) -> Iterator[tuple[int, Signal]]:
    """A message for each catalog entry the text holds that no pattern above already read (a pattern reads the
    names and versions in it; the catalog knows every other message its sources print)."""
    errors = [m for m in matches if m.entry.as_error]
    for match in matches:
        entry = match.entry
        if entry.boilerplate or not (entry.families or entry.warning):
            continue
        if any(start < match.end and match.start < end for start, end in taken):
            continue
        if _wraps_an_error(text, match, errors):
            continue
        # a derived entry's load, read by the library the text names after its words
        said, named = (match.text, None) if entry.kind else _named_load(entry, _said_after(text, match.start))
        kind = entry.kind or (named[0] if named else None)
        failed = named[1] if named else None
        if kind and kind.startswith(_LOAD_KINDS) and _names_only_others(said):
            if _WARNING_LINE.search(_line_at(text, match.start)):  # a warning: the program went on without it
                yield match.start, _gone_past(text, match, "a library that is not cuDNN's nor one it needs could not "
                                              "be loaded, and the program's log marks it as a warning")
            elif (provider := _OTHER_PROVIDER_LIBRARY.search(said)):  # logged as an error, and gone past all the same
                yield match.start, _gone_past(text, match, f"ONNX Runtime could not load its {provider.group(1)} "
                                              "provider library (or what that needs, such as TensorRT's libnvinfer), "
                                              "not the CUDA one that cuDNN serves; the session goes on with the next "
                                              "provider of its list: install that provider's libraries only to use it")
            continue
        if entry.kind and (provider := _OTHER_PROVIDER.search(match.text)):
            yield match.start, _gone_past(text, match, f"ONNX Runtime could not create the {provider.group(0)}, not "
                                          "the CUDA one that cuDNN serves, and goes on with the next provider of the "
                                          "session's list")
            continue
        versions = (f"{entry.versions[0]}" if len(entry.versions) == 1 else
                    f"{entry.versions[0]} to {entry.versions[-1]}") if entry.versions else "?"
        yield match.start, Signal(
            f"catalog:{entry.id}", kind or ("warning" if entry.warning else "catalog"),
            _line_at(text, match.start), f"{entry.source}, {entry.file} ({versions})", entry.meaning,
            library=failed or _own_load(entry, match.text), failed=failed,
            quote=quote(match.text), families=() if named else entry.families, warning=entry.warning,
            entry=entry.id)


# The kinds of a library that failed to load (load_kind).
_LOAD_KINDS = ("cudnn-not-found", "sublibrary-load", "engine-load", "dependency-load:")
_LIBRARY_NAME = re.compile(r"(?<![\w.+-])[\w.+-]+\.(?:so(?:\.\d+)*|dll)\b", re.IGNORECASE)


def _gone_past(text: str, match: messages.Match, meaning: str) -> Signal:
    """A catalog message about something other than cuDNN that the program went on past: only a warning."""
    return Signal(f"catalog:{match.entry.id}", "warning", _line_at(text, match.start), match.entry.source, meaning,
                  quote=quote(match.text), families=("harmless-warning",), warning=True, entry=match.entry.id)


# An ONNX Runtime execution provider other than CUDA's, as its "Failed to create %s" names it
# (onnxruntime_pybind_state.cc): TensorRT's, OpenVINO's, DirectML's, ROCm's. The session falls back to the next
# provider of its list, and cuDNN is only ever loaded for the CUDA one.
_OTHER_PROVIDER = re.compile(r"\b(?!CUDA)[A-Z][A-Za-z]{0,30}ExecutionProvider\b")
# ...and its library, which ONNX Runtime's provider bridge (provider_bridge_ort.cc) logs at error level when it cannot
# be loaded, before going on: "Failed to load library libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.10"
_OTHER_PROVIDER_LIBRARY = re.compile(r"onnxruntime_providers_(?!cuda|shared)([a-z]+)")


def _said_after(text: str, start: int) -> str:
    """The rest of the line from ``start`` (`_said_before`'s other half)."""
    end = text.find("\n", start)
    return text[start:end if end >= 0 else len(text)]


def _named_load(entry: messages.Entry, said: str) -> tuple[str, tuple[str, str] | None]:
    """(``said``, (the kind of the load that failed, the library)) for a message whose causes the catalog derived
    from its loading words alone (not curated: ONNX Runtime's "dlopen failed for %s" names no library of its own),
    read from the first library ``said`` names: "dlopen failed for libcublasLt.so.12" is cuBLAS missing, not cuDNN;
    None in place of the pair where no library is named or the entry is not such a message."""
    if entry.curated or "cudnn-not-installed" not in entry.families:
        return said, None
    return said, _first_load(said)


def _first_load(said: str) -> tuple[str, str] | None:
    """(the load kind of the first library ``said`` names, that library), or None where it names none."""
    found = _LIBRARY_NAME.search(said)
    return (load_kind(found.group(0), "missing"), found.group(0)) if found else None


def _own_load(entry: messages.Entry, said: str) -> str | None:
    """The library a load message of the catalog names where it is of the kind the entry is about (CTranslate2's
    "Library cublas64_12.dll is not found or cannot be loaded"): the file it asked for, whose name tells the major
    it wants (the fix's); None otherwise. Not what failed: its causes stay the curated entry's."""
    if not entry.kind or not entry.kind.startswith(_LOAD_KINDS):
        return None
    load = _first_load(said)
    return load[1] if load is not None and load[0] == entry.kind else None


def _names_only_others(said: str) -> bool:
    """A loader's message that names libraries, none of them cuDNN, one it needs, or a framework's own (TensorFlow's
    "Could not load dynamic library 'libnvinfer.so.7'": TensorRT, which TensorFlow can do without): not a cuDNN
    library that failed to load."""
    names = _LIBRARY_NAME.findall(said)
    # CUDA's own libraries (libcufft, libcusolver, ...: cufft64_11.dll) are a framework's GPU libraries, not optional
    return bool(names) and all(library_class(name) is None and not re.match(r"(?i)(?:lib)?cu", name)
                               for name in names)


# A tensor's shape as programs and people print it: "1x1x65536x65536", "[64, 3, 8192, 8192]", "torch.Size([...])",
# "(N, C, H, W)" with numbers; cuDNN's tensor descriptors and many of its engines index with 32-bit integers, so a
# tensor of 2**31 elements or more is one they do not support (the large-tensor clue's words, computed).
_SHAPE = re.compile(r"\b\d+(?:\s*[x×]\s*\d+){2,}\b|[\[(]\s*\d+(?:\s*,\s*\d+){2,}\s*[\])]")


def _large_shape(text: str) -> str | None:
    """The first shape in ``text`` of 2**31 elements or more."""
    for found in itertools.islice(_SHAPE.finditer(text), 200):
        elements = math.prod(int(n) for n in re.findall(r"\d+", found.group(0)))
        if elements >= 2**31:
            return f"{found.group(0)} ({elements:,} elements, 2**31 or more)"
    return None


# XLA's cuda_dnn.cc, after cudnnCreate failed: "Memory usage: %d bytes free, %d bytes total." (the GPU's memory when
# the handle could not be made, printed so that running out of it can be told from the rest).
_MEMORY_USAGE = re.compile(r"Memory usage: (?P<free>\d+) bytes free, (?P<total>\d+) bytes total")


def _memory_at_failure(text: str) -> tuple[Clue, ...]:
    """"memory-exhausted" where the GPU had under a twentieth of its memory free when cuDNN failed to start,
    "memory-free" where it had 30 % or more (JAX preallocates 75 % of it by default)."""
    found = _MEMORY_USAGE.search(text)
    if found is None or not int(found.group("total")):
        return ()
    share = int(found.group("free")) / int(found.group("total"))
    said = f"{found.group(0)} ({share:.0%} free)"
    return (Clue("memory-exhausted", said),) if share < 0.05 else (Clue("memory-free", said),) if share >= 0.3 else ()


# The exception that ended a Python traceback (Lib/traceback.py: "Traceback (most recent call last):", the frames,
# then "TYPE: words" at the line's start), of a type the program's own code raises (a shape, a key, a name, a file of
# its own) and in words that name no GPU, CUDA, cuDNN or library: where that is the last error of a text whose
# message of a failed load came before it, the program went on past the load and stopped on something else. Not
# IndexError (an empty list of GPUs indexed, after TensorFlow went on without them), nor OSError, ImportError or
# RuntimeError, which carry the loaders' and the frameworks' own messages.
_TRACEBACK = "Traceback (most recent call last)"
_OWN_EXCEPTION = re.compile(r"(?m)^(?:[\w.]+\.)?(?:ValueError|TypeError|KeyError|AttributeError|NameError"
                            r"|FileNotFoundError|ZeroDivisionError|NotImplementedError|AssertionError"
                            r"|UnboundLocalError|RecursionError|JSONDecodeError|UnicodeDecodeError|KeyboardInterrupt)"
                            r"\b(?::[^\n]*)?$")
_ABOUT_GPU_OR_LIBRARY = re.compile(r"(?i)gpu|cuda|cudnn|cublas|nvidia|device|driver|\.so\b|\.dll\b|librar|\bload"
                                   r"|dlopen|provider")
_ANY_EXCEPTION = re.compile(r"(?m)^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b(?::[^\n]*)?$")


def _stopped_on_its_own_error(text: str, signals: Sequence[Signal]) -> tuple[Clue, ...]:
    """"stopped-on-its-own-error" where the text's last exception ends a Python traceback that comes after its first
    message, is of a type the program's own code raises, and names no GPU, CUDA or library (`_OWN_EXCEPTION`)."""
    start = text.rfind(_TRACEBACK)
    if start < 0 or not signals:
        return ()
    endings = list(_ANY_EXCEPTION.finditer(text, start))
    if not endings:
        return ()
    last = endings[-1]
    ending = last.group(0).strip()
    if not _OWN_EXCEPTION.fullmatch(last.group(0)) or _ABOUT_GPU_OR_LIBRARY.search(ending):
        return ()
    first = text.find(signals[0].line.strip()[:200])
    if first < 0 or first >= last.start() or any(ending in signal.line for signal in signals):
        return ()
    return (Clue("stopped-on-its-own-error", ending[:200]),)


# PyTorch's out-of-memory message (c10/cuda/CUDACachingAllocator.cpp): "Tried to allocate 20.00 MiB (GPU 0; 7.79
# GiB total capacity; ...)", from 2.1 "... GPU 0 has a total capacity of 23.65 GiB of which ..."
_TRIED = re.compile(r"Tried to allocate (?P<size>\d+(?:\.\d+)?) ?(?P<unit>[KMGT])i?B")
_CAPACITY = re.compile(r"(?<!\d)(?P<size>\d+(?:\.\d+)?) ?(?P<unit>[KMGT])i?B total capacity|total capacity of "
                       r"(?P<size2>\d+(?:\.\d+)?) ?(?P<unit2>[KMGT])i?B")
_UNIT = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
# No GPU has had 256 GiB of memory (the largest, B200-class, about 192 GB): a request above it fits none.
_LARGEST_GPU = 256 * 2**30


def _allocation_beyond_gpu(text: str) -> tuple[Clue, ...]:
    """"allocation-beyond-gpu" where the program asked for more memory than the GPU has in all (or than any GPU has):
    no batch size makes that fit; the size asked for is the defect (a workspace or a tensor computed wrong, or a
    configuration cuDNN does not support), not a GPU that filled up."""
    tried = _TRIED.search(text)
    if tried is None:
        return ()
    asked = float(tried.group("size")) * _UNIT[tried.group("unit")]
    capacity = _CAPACITY.search(text)
    total = (float(capacity.group("size") or capacity.group("size2"))
             * _UNIT[capacity.group("unit") or capacity.group("unit2")]) if capacity else _LARGEST_GPU
    if asked <= total:
        return ()
    return (Clue("allocation-beyond-gpu", f"{tried.group(0)}, more than the GPU's "
                                          f"{capacity.group(0) if capacity else 'largest memory of any GPU'}"),)


def _line_at(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start:end if end >= 0 else len(text)].strip()[:400]


def _said_before(text: str, start: int) -> str:
    """What the line holding ``start`` says before it."""
    return text[text.rfind("\n", 0, start) + 1:start]


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span's characters but its newlines turned into spaces (a framework's generic advice
    is not evidence of anything)."""
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for index in range(start, end):
            if chars[index] != "\n":
                chars[index] = " "
    return "".join(chars)


# nvidia-smi's header line: "| NVIDIA-SMI 566.03   Driver Version: 566.03   CUDA Version: 12.7 |" names the newest CUDA
# the driver runs, not a CUDA that is installed
_NVIDIA_SMI_HEADER = re.compile(r"(?im)^[^\n]*Driver Version[^\n]*$")


def _cuda_version(text: str) -> tuple[int, ...] | None:
    """The CUDA version the text names: a wheel tag (cu121), ORT's "CUDA 12.*", "CUDA: 11.2", a toolkit path."""
    for pattern in (r"\+cu(\d\d)(\d)\b", r"\bcu(\d\d)(\d)\b", r"\bcu(\d\d)\b", r"\bcuda(\d\d)_(?:pip|local)\b",
                    r"CUDA (\d+)\.\*", r"\bCUDA(?: [Vv]ersion)?[:：= ]+(\d+)\.(\d)", r"\bcuda[-/ ]?(\d+)\.(\d)\b",
                    r"release (\d+)\.(\d)", r"cudatoolkit=(\d+)(?:\.(\d))?", r"nvidia[-_]cudnn[-_]cu(\d+)",
                    r"\bCUDA_VERSION=(\d+)\.(\d)", r"\bCUDA (\d+)\b"):
        found = re.search(pattern, text, re.IGNORECASE | re.ASCII)  # "是cuda11.8": a CJK letter is no word
        if found:
            numbers = tuple(int(group) for group in found.groups() if group)
            if numbers and 7 <= numbers[0] <= 13:
                return numbers
    return None


# The version a cuDNN header defines, as `grep CUDNN_MAJOR -A 2` prints cudnn.h (cuDNN 7) or cudnn_version.h (8+).
_HEADER_VERSION = re.compile(r"#define CUDNN_MAJOR\s+(\d+)\s+#define CUDNN_MINOR\s+(\d+)(?:\s+#define "
                             r"CUDNN_PATCHLEVEL\s+(\d+))?")


# "cuDNN: 8.1.1", "cudnn is 9.13", "cuDNN version is 8.9", "CUDNN：8.9.1" (a full-width colon), "CuDNN 7.1.4",
# "cudnn v5.1", "cudnn9", Docker's "CUDNN_VERSION=8.9.0.131" and "NV_CUDNN_VERSION 8.9.0.131", a conda build string
# "py3.10_cuda11.8_cudnn8.7.0_0", "libcudnn8" (Debian's package), the folder of NVIDIA's cuDNN 9 Windows installer,
# C:\Program Files\NVIDIA\CUDNN\v9.1 (cuDNN installation guide, Windows), a module's "cudnn/v8.9"; not a library's
# name (cudnn64_8.dll, libcudnn_ops.so.9), nor an identifier (an app's folder "cudnn8_compat", which may be missing).
_STATED = re.compile(r"(?i)(?<![a-z])cudnn(?:[_\s]*(?:ver(?:sion)?|v)\.?|[/\\]v)?(?:\s+(?:is|was))?[:：= /-]*"
                     r"(\d+(?:\.\d+)*)(?![\d.]*\*)(?!_[a-z])"
                     r"(?!\w*\.(?:dll|so)\b)|\blibcudnn(\d)\b|\blibcudnn\d?[ \t]+v?(\d+\.\d+(?:\.\d+)*)")


def _stated_cudnn(context: str) -> tuple[int, ...] | None:
    """The cuDNN version the text says is there, outside the messages (`_STATED`), or the defines of the cuDNN
    header it printed; the first that is a cuDNN version (4 to 9)."""
    if (header := _HEADER_VERSION.search(context)):
        return tuple(int(n) for n in header.groups() if n)
    for found in _STATED.finditer(context):
        numbers = tuple(int(n) for n in next(g for g in found.groups() if g).split(".") if n)
        if numbers and 4 <= numbers[0] <= 9:
            return numbers
    return None


# The cuDNN wheel's version as pip prints it: `pip list` "nvidia-cudnn-cu12   9.1.0.70", `pip freeze` and
# requirements "nvidia-cudnn-cu12==9.1.0.70", `pip install` "Successfully installed ... nvidia-cudnn-cu12-9.1.0.70"
# and "Requirement already satisfied: nvidia-cudnn-cu11==8.9.2.26 in ...", `pip show` "Name: nvidia-cudnn-cu12"
# then "Version: 9.1.0.70"; the wheel's file name as pip downloads it, "nvidia_cudnn_cu12-9.1.0.70-py3-none-...whl".
_WHEEL_VERSION = re.compile(r"(?i)\bnvidia[-_]cudnn[-_]cu\d+(?:==|>=|~=|-|[ \t]+|\s*\n\s*Version:\s*)v?(\d+(?:\.\d+)+)")


def _wheel_version(context: str) -> tuple[int, ...] | None:
    found = _WHEEL_VERSION.search(context)
    return tuple(int(n) for n in found.group(1).split(".")) if found else None


# A line that says a file is absent ("ls: cannot access", "find: ... No such file", ldd's "=> not found"), asks
# for one (the cuDNN 8 shim's "Please make sure %s is in your library path!", libcudnn.so.8's strings), or names a
# file the loader only tried (glibc's LD_DEBUG=libs "trying file=", "find library=", "search path=") shows no file.
_NO_FILE = re.compile(r"(?i)cannot access|no such file|not found|cannot open|could ?n[o']t|unable to|missing|failed"
                      r"|make sure|trying file=|find library=|search path=")
# A listing's line: `ls -l` ("lrwxrwxrwx 1 root root 17 Jan 1 libcudnn.so.9 -> libcudnn.so.9.1.0"), or one that
# starts with the file's name (`ls -1`, `ldconfig -p` "libcudnn.so.8 (libc6,x86-64) => /usr/lib/...").
_LISTING = re.compile(r"^\s*(?:[-dlcbps][-rwxsStT]{9}[.+@]?\s|(?:lib)?cudnn\w*\.(?:so|dll))", re.IGNORECASE)


def _files_shown(context: str) -> tuple[str, ...]:
    """The cuDNN libraries the text shows on the machine outside its messages' lines: a path (a folder, then the
    name) or a listing's line (`ls`, `find`, `ldconfig -p`, `/proc/PID/maps`); not a name in a sentence, which may
    ask where the file is, nor a line saying a file is absent. On a line that holds a path, a bare name is that
    path's (ldd's and ldconfig's "libcudnn.so.8 => /x/libcudnn.so.8")."""
    shown: list[str] = []
    for line in context.splitlines():
        if "cudnn" not in line.lower() or _NO_FILE.search(line):  # (the name's test first: a long line is quick)
            continue
        found = [(folder, name) for folder, name in _shown_files(line) if library_major(name)]
        paths = [folder + name for folder, name in found if folder]
        shown += paths or ([name for _, name in found] if _LISTING.match(line) else [])
    return tuple(dict.fromkeys(shown))


# The characters no path written in a log holds (a quote, a bracket, a comma, ldd's "=>"), besides white space.
_NOT_PATH = frozenset("'\"`(){}[],=>")


def _shown_files(line: str) -> list[tuple[str, str]]:
    """Each cuDNN library's name on ``line`` with the folder written just before it ("" for none): the path's
    characters back to the previous name or a character no path holds, when they end in a slash. Each name is found
    once and its folder read back from it, so a line of any length is read in time linear in it."""
    files: list[tuple[str, str]] = []
    after = 0  # where the previous name ended: a folder does not reach back over it
    for found in _CUDNN_LIBRARY.finditer(line):
        start = found.start()
        while start > after and line[start - 1] not in _NOT_PATH and not line[start - 1].isspace():
            start -= 1
        folder = line[start:found.start()]
        files.append((folder if folder.endswith(("/", "\\")) else "", found.group(0)))
        after = found.end()
    return files


# The GPU's compute capability as programs print it: PyTorch "which is of cuda capability 3.0", TensorFlow 1.x
# "major: 3 minor: 0", 2.x "computeCapability: 7.5", JAX "has CUDA compute capability 5.2", "sm_35", a person's
# "Compute Capability is 2.1"; the first one is the device's (a minimum named after it is not).
_CAPABILITY = re.compile(r"(?i)\b(?:compute|cuda)[ _-]?capability(?:\s+(?:is|of|=))?[\s:=]*(?:sm_?)?(?P<major>\d+)"
                         r"(?:\.(?P<minor>\d))?\b|\bmajor: (?P<major2>\d+) minor: (?P<minor2>\d+)\b")


def _capability(text: str) -> tuple[int, int] | None:
    found = _CAPABILITY.search(text)
    if not found:
        return None
    major, minor = group(found, "major", "major2") or "", group(found, "minor", "minor2")
    if minor is None and len(major) in (2, 3):  # sm_35, sm_120
        major, minor = major[:-1], major[-1]
    return (int(major), int(minor or 0)) if 1 <= int(major) <= 12 else None


# The two CUDA versions a check before building an extension printed: the toolkit's and the framework's, as
# torch's cpp_extension says them ("The detected CUDA version (12.1) mismatches the version that was used to compile
# PyTorch (11.8)", over two lines before torch 2.6; torch 2.10+ raises the message unformatted with them after it:
# "', '12.1', '11.8')") and DeepSpeed's op builder ("Installed CUDA version 12.1 does not match the version torch was
# compiled with 11.8")
_TOOLKIT_CHECK = re.compile(r"detected CUDA version \((?P<toolkit>\d+\.\d+)\)\s+(?:has a minor version mismatch|"
                            r"mismatches) the version that was used to compile\s*PyTorch \((?P<torch>\d+\.\d+)"
                            r"|Installed CUDA version (?P<toolkit2>\d+\.\d+) does not match the version torch was "
                            r"compiled with (?P<torch2>\d+\.\d+)"
                            r"|mismatches the version[^\n]*?['\"], ['\"](?P<toolkit3>\d+\.\d+)['\"], "
                            r"['\"](?P<torch3>\d+\.\d+)")


def _toolkit_check(text: str) -> tuple[str, str] | None:
    if (found := _TOOLKIT_CHECK.search(text)) is None:
        return None
    toolkit, framework = (g for g in found.groups() if g)
    return toolkit, framework


# A library's path: /x/y/libcudnn_ops.so.9, C:\\x\\cudnn_ops64_9.dll
_PATH = re.compile(r"(?<![\w.+@~/-])(?:/[\w.+@~-]+)+?/lib[\w+-][\w.+-]*?\.so(?:\.\d+)*(?![\w.])"
                   r"|(?<![\w\\])[A-Za-z]:\\(?:[^\\\"'\n<>|]+\\)+?[\w.-]+?\.dll\b")


def read(text: str) -> Reading:
    """What ``text`` shows, from the text alone: its messages (the patterns above, then the catalog's), and the
    facts around them, read after the catalog's boilerplate (a framework's generic advice) is taken out."""
    matches = messages.load().matches(text)
    spans = list(_signals(text))
    taken = [(start, end) for start, end, _ in spans]
    structured = [(start, _with_entry(signal, start, end, matches)) for start, end, signal in spans]
    known = structured + list(_catalog_signals(text, matches, taken))
    lines = {signal.line for _, signal in known}
    pairs = [(pair, signal) for pair in _VERSION_PAIR.finditer(text) if (signal := _version_pair(pair)) is not None]
    numbers = {_line(pair): signal for pair, signal in pairs}
    known = [(at, _with_numbers(signal, numbers.get(signal.line))) for at, signal in known]
    known += [(pair.start(), _with_entry(signal, *pair.span(), matches)) for pair, signal in pairs
              if _line(pair) not in lines]
    if not known and (guess := _unknown_text(text)) is not None:
        known.append((0, guess))
    later_calls = [at for at, signal in known if signal.kind.startswith("status:")]
    found = sorted(((at, _logged_as_warning(signal, any(call > at for call in later_calls))) for at, signal in known),
                   key=lambda item: (_precedence(item[1]), item[0]))
    unique = list({(s.kind, s.failed, s.status, s.line): s for _, s in reversed(found)}.values())[::-1]
    evidence = _blank(text, [(m.start, m.end) for m in matches if m.entry.boilerplate])
    clues = tuple(Clue(name, _clue_quote(found_clue)) for name, pattern in _CLUE_PATTERNS
                  if (found_clue := _affirmed(pattern, evidence)))
    if not any(clue.name == "large-tensor" for clue in clues) and (large := _large_shape(evidence)):
        clues += (Clue("large-tensor", large),)
    clues += _memory_at_failure(evidence) + _allocation_beyond_gpu(evidence) + _stopped_on_its_own_error(evidence,
                                                                                                         unique)
    names = {clue.name for clue in clues}
    platform = next((name for name in ("wsl", "windows", "macos", "linux") if name in names), None)
    majors = [major for signal in unique for name in (signal.failed, signal.library) if name
              and (major := library_major(name))]
    majors += [version[0] for signal in unique for number in (signal.built, signal.found)
               if number and (version := version_of(number)) and version[0] in (7, 8, 9)]
    ort = re.search(r"Require cuDNN (\d+)\.\*", text)
    lines = {signal.line for signal in unique}
    # what the user wrote before a message on its own line counts too ("link leads to cuDNN 9.0.0 which throws
    # error (...Could not find: cudnn64_8.dll...)"); the message's own words, and what follows them, do not
    before = [_said_before(evidence, start) for start in sorted({*(a for a, _ in taken), *(m.start for m in matches)})]
    stated = _stated_cudnn("\n".join([*(line for line in evidence.splitlines() if line.strip()[:400] not in lines),
                                       *before]))
    # pip's output and listings on a line of a known message are that message's; a guess's line is the text's own
    messages_lines = {signal.line for signal in unique if signal.pattern not in GUESSES}
    context = "\n".join(line for line in evidence.splitlines() if line.strip()[:400] not in messages_lines)
    # a guess's line that names the library it is about asks for that file ("cudnn64_7.dll 依赖问题"): not a listing
    asked = {signal.line for signal in unique if signal.pattern in GUESSES and signal.failed}
    listed = "\n".join(line for line in context.splitlines() if line.strip()[:400] not in asked)
    wanted = majors[0] if majors else int(ort.group(1)) if ort else None
    major = wanted or (stated[0] if stated and stated[0] in (7, 8, 9) else None)
    frameworks = tuple(sorted((name for name in FRAMEWORKS if name in names),
                              key=lambda name: text.find(next(c.quote for c in clues if c.name == name))))
    paths = tuple(dict.fromkeys(found_path.group(0) for found_path in _PATH.finditer(text)))
    return Reading(tuple(unique), clues, platform, major, _cuda_version(evidence), frameworks, _builds(evidence),
                   stated, paths, wanted=wanted, capability=_capability(evidence), wheel=_wheel_version(context),
                   files=_files_shown(listed), toolkit=_cuda_version(_NVIDIA_SMI_HEADER.sub("", evidence)),
                   named=tuple(dict.fromkeys(found.group(0) for found in _CUDNN_LIBRARY.finditer(context))),
                   toolkit_check=_toolkit_check(text))


# The severity a logger writes at the start of a line (a warning's or information's: W or I), or a warning's own
# words on it: TensorRT's logger "[W] "
# (samples/common/logger.h, Severity::kWARNING); ONNX Runtime's "[W:onnxruntime:" (core/common/logging/sinks/
# ostream_sink.cc); glog and absl "W0604 12:34:56.789012 " (TensorFlow, XLA, Paddle, Caffe: the first letter is the
# severity); TensorFlow's tsl logging "2024-01-01 12:00:00.000000: W "; Python's warnings module "...: UserWarning: "
# (Lib/warnings.py, formatwarning) and logging's "WARNING:name:" (logging.BASIC_FORMAT); Julia's "┌ Warning:";
# PyTorch's TORCH_WARN, which torch/csrc/Exceptions.cpp (PyWarningHandler) ends in "(Triggered internally at
# FILE:LINE.)", which errors never carry.
_WARNING_LINE = re.compile(r"\[[WI]\] |\[[WI]:|\[(?:WARN(?:ING)?|INFO)\]|^[WI]\d{4} \d\d:\d\d:\d\d"
                           r"|^\d{4}-\d\d-\d\d[ T][\d:.]+:? [WI] |\b[A-Z]\w*Warning: |\b(?:WARNING|INFO):"
                           r"|^(?:[┌│]\s*)?(?:Warning|Info):|\(Triggered internally at")


# The kinds of a library that failed to load, or of a framework going on without cuDNN: a program that logs such
# a failure at warning level carries on without the GPU (TensorFlow's gpu_device.cc: "Cannot dlopen some GPU
# libraries ... Skipping registering GPU devices"; ONNX Runtime's "Failed to create CUDAExecutionProvider", after
# which the session runs on the CPUExecutionProvider), and running without it is the failure the user reports; so
# is a framework's build without CUDA falling back to the CPU (JAX's "Falling back to cpu", a UserWarning of ONNX
# Runtime's for the CUDA provider it lacks), and PyTorch warning that CUDA did not start ("CUDA initialization:
# CUDA unknown error ... Setting the available devices to be zero"), and JAX going on without a plugin that did not
# start or whose module is gone ("Jax plugin configuration error: Plugin module %s does not exist", a warning).
_DEGRADED = ("cudnn-not-found", "sublibrary-load", "engine-load", "dependency-", "symbol-mismatch",
             "framework-no-cudnn", "cpu-build", "driver-state", "gpu-plugin", "parts-mismatch")


# The loads without which no cuDNN call can be made: cuDNN's own shim, and the CUDA runtime a framework loads
# before it (TensorFlow's cudart stub: "Could not load dynamic library 'libcudart.so.11.0' ... Ignore above cudart
# dlerror if you do not have a GPU set up").
_BEFORE_ANY_CALL = ("cudnn-not-found", "dependency-load:cudart")


def _logged_as_warning(signal: Signal, call_after: bool = False) -> Signal:
    """A message on a line that its logger marks as a warning or information is only that, whatever it says,
    except a load that failed (`_DEGRADED`): the program went on without what it could not load. Where a cuDNN
    call's status follows it in the text (``call_after``), the program did not go on without cuDNN: a load that
    every cuDNN call needs first (`_BEFORE_ANY_CALL`), logged as a warning, was then found after all (another
    attempt, another process of the paste) and is not what stopped it."""
    if not _WARNING_LINE.search(signal.line):
        return signal
    if signal.kind.startswith(_DEGRADED) and not (call_after and signal.kind.startswith(_BEFORE_ANY_CALL)):
        return signal
    return replace(signal, warning=True)


def _with_numbers(signal: Signal, pair: Signal | None) -> Signal:
    """A version check's message that the catalog knows (its template holds no numbers the ranking reads) with
    the versions built and found that the version pair on its line reads, and the kind they make."""
    if pair is None or not signal.kind.startswith("version-") or signal.built or signal.found:
        return signal
    return replace(signal, kind=pair.kind, built=pair.built, found=pair.found)


def _with_entry(signal: Signal, start: int, end: int, matches: list[messages.Match]) -> Signal:
    """``signal`` with the catalog entry its words hold: where it comes from, whether it is a warning (its own
    entry is, or it is quoted inside a line the catalog knows as a warning: a status one autotuning candidate
    returned), and the causes its source means by it where the entry is of the signal's own kind (a pattern that
    reads the library of an Error: part as another kind, "Could not load library X. Error: libnvrtc.so...", keeps
    its kind's causes)."""
    entry = next((m.entry for m in matches if start <= m.start < end and not m.entry.boilerplate
                  and (m.entry.families or m.entry.warning)), None)
    inside = any(m.entry.warning and m.start < start and end <= m.end for m in matches)
    if entry is None:
        return replace(signal, warning=True) if inside else signal
    families = signal.families or (entry.families if entry.kind == signal.kind else ())
    return replace(signal, entry=entry.id, warning=signal.warning or entry.warning or inside, families=families)


# A fact the words deny is not shown: "it is not an out of memory problem", "no OOM", "the driver isn't too old".
_DENIED = re.compile(r"(?i)(?:\bnot|n't|\bno|\bnever|\bwithout)\s+(?:(?:an?|the|any|really|even|because of)\s+)?$")


def _affirmed(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``text`` that the words just before it do not deny."""
    for found in pattern.finditer(text):
        start = text.rfind("\n", 0, found.start()) + 1
        if not _DENIED.search(text[max(start, found.start() - 30):found.start()]):
            return found
    return None


def _clue_quote(found: re.Match[str]) -> str:
    """What a fact's pattern matched, with a few words around it: the evidence, not its whole line."""
    line = _line(found)
    at = line.find(found.group(0))
    if at < 0:
        return quote(found.group(0), 160)
    start, end = max(0, at - 40), min(len(line), at + len(found.group(0)) + 40)
    return quote(("…" if start else "") + line[start:end] + ("…" if end < len(line) else ""), 160)
