"""Survey the frameworks' real wheels: what in each one decides the cuDNN its process gets.

For every framework and release users still run (``TARGETS``: the newest release of each series in a
range, plus the releases issue 33 names), the wheel is downloaded once from PyPI and read without
installing or importing it:

- each shared library (ELF, or PE for a Windows wheel): its NEEDED (PE: imported and delay-loaded DLLs),
  RPATH and RUNPATH, the cuDNN library names it holds as strings (what it can dlopen: ``libcudnn.so.9``,
  ``cudnn64_9.dll``) and how many of its strings name cuDNN at all (``strings -a FILE | grep -ci cudnn``);
- its Python loader code: each function that names cuDNN, what it opens, whether it loads a library
  (itself or through a function of its module), what a failed load does (raise, ignore, warn, or an
  uncaught exception that propagates), and whether it runs at import;
- its cuDNN pins (``Requires-Dist: nvidia-cudnn-*``), the cuDNN and CUDA versions its build-information
  files state, and the CUDA major its libraries need.

The rows, each with its provenance (wheel file name, sha256, URL, size, date), are written as the
generated module ``cudnnload/resolve/surveyed.py``, read by ``cudnnload.resolve.survey``. A wheel that
cannot be downloaded or read is skipped with a line; no partial row is written.

Regenerate (about 20 GB of wheels, cached; a repeat run reads the cached rows and downloads nothing)::

    .venv/bin/python bench/survey_frameworks.py
    .venv/bin/python bench/survey_frameworks.py --only torch --only onnxruntime-gpu   # some targets again

Wheels and per-wheel rows are cached in ``$CUDNNLOAD_SURVEY_CACHE`` (default ``~/.cache/cudnnload-survey``,
never cudnnload's own cache); ``--drop-wheels`` deletes each wheel once its row is made.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import email.parser
import hashlib
import json
import mmap
import os
import pprint
import re
import shutil
import struct
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cudnnload.errors import ElfError
from cudnnload.resolve.elf import read_elf

PYPI_JSON = "https://pypi.org/pypi/{}/json"
# PyPI's file URLs are https://files.pythonhosted.org/packages/<2 hex>/<2 hex>/<60 hex>/<file name> (a BLAKE2b
# digest path); a mirror may serve them under another prefix, the path after it stays the same.
FILES_HOST = "https://files.pythonhosted.org/packages/"
_BLAKE_PATH = re.compile(r"packages/([0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{60}/[^/]+)$")
OUTPUT = Path(__file__).resolve().parents[1] / "cudnnload" / "resolve" / "surveyed.py"
ROW_FORMAT = 4  # bump when a row's fields change: cached rows of another format are made again
PYTHON_TAG = "cp312"  # the interpreter whose wheels are read when a release has one per interpreter


@dataclass(frozen=True)
class Target:
    """Releases of one distribution to survey: the newest of each series (``per``: "minor" or "major") within
    ``versions``, plus ``also``, for each operating system in ``systems``."""

    distribution: str
    versions: str
    per: str = "minor"
    systems: tuple[str, ...] = ("linux",)
    also: tuple[str, ...] = ()


TARGETS: tuple[Target, ...] = (
    # PyPI holds one build of each torch release per platform: CUDA on Linux, CPU on Windows and macOS. The
    # other CUDA builds (cu126 of 2.11+, cu130 of 2.9-2.10, ...) and the Linux CPU builds are only on
    # download.pytorch.org, which neither this machine nor CI reaches: those rows cannot be surveyed here.
    Target("torch", ">=2.6,<2.16", systems=("linux", "windows")),
    Target("jax-cuda12-pjrt", ">=0.5,<0.13"),
    Target("jax-cuda12-plugin", ">=0.5,<0.13"),
    Target("jax-cuda13-pjrt", ">=0.5,<0.13"),
    Target("jax-cuda13-plugin", ">=0.5,<0.13"),
    Target("onnxruntime-gpu", ">=1.20,<1.32"),
    Target("onnxruntime", ">=1.30,<1.32"),
    Target("tensorflow", ">=2.16,<2.22"),
    # PaddlePaddle 3.x GPU builds are on Paddle's own index only; PyPI's paddlepaddle-gpu ends at 2.6.2.
    Target("paddlepaddle-gpu", ">=2.6,<4"),
    Target("paddlepaddle", ">=3.3,<4"),
    # 4.6.2 and 4.6.3: issue 33 says cuDNN left the Linux libraries between them.
    Target("ctranslate2", ">=4.4,<4.9", systems=("linux", "windows"), also=("4.6.2",)),
    Target("cupy-cuda12x", ">=13,<15", per="major"),
    Target("cupy-cuda13x", ">=13,<15", per="major"),
    Target("nvidia-cudnn-frontend", ">=1.24"),
    # tensorrt-cu12-libs / -cu13-libs are source distributions that download the libraries from NVIDIA's own
    # index at install: only the bindings wheels are on PyPI.
    Target("tensorrt-cu12-libs", ">=10.14"),
    Target("tensorrt-cu13-libs", ">=10.14"),
    Target("tensorrt-cu12-bindings", ">=11.3"),
    Target("tensorrt-cu13-bindings", ">=11.3"),
    Target("transformer-engine", ">=2.20"),
    Target("transformer-engine-cu12", ">=2.18"),
    Target("transformer-engine-cu13", ">=2.18"),
)

SYSTEM_NAME = {"linux": "Linux", "windows": "Windows"}
PLATFORM_OF = {"linux": re.compile(r"^(many)?linux.*_x86_64$"), "windows": re.compile(r"^win_amd64$")}
# strings a library holds: runs of printable ASCII and tab, as ``strings -a`` (at least 4 of them)
_CUDNN = re.compile(rb"[Cc][Uu][Dd][Nn][Nn]")
_PRINTABLE = frozenset(range(0x20, 0x7F)) | {0x09}
_CUDNN_NAME = re.compile(r"(?:lib)?cudnn\w*\.so(?:\.\d+)*|cudnn\w*\.dll", re.IGNORECASE)
_CUDA_NEEDED = re.compile(r"^(?:libcudart\.so|libcublas(?:Lt)?\.so|libnvrtc\.so)\.(\d+)|^cudart64_(\d+)\.dll$")
_CUDA_IN_NAME = re.compile(r"(?:^|-)cu(?:da)?(1\d)(?:x|-|$)")
_LOAD_CALLS = frozenset({"CDLL", "PyDLL", "WinDLL", "LoadLibrary", "LoadLibraryExW", "dlopen", "load_library",
                         "add_dll_directory"})
_WARN_CALLS = frozenset({"warn", "warning", "print", "error", "exception", "info", "debug", "log"})
# a cuDNN file, glob or folder: "libcudnn.so.*[0-9]", "cudnn64_9.dll", "nvidia/cudnn/lib" (not a URL or prose)
_FILE_NAMING = re.compile(r"(?i)^[\w./*\[\]-]*"
                          r"(?:cudnn[\w*.\[\]-]*\.(?:so|dll)[\w.*\[\]-]*|cudnn(?:_jit)?/(?:lib|bin)/?)$")
# the files that state the build's versions: torch/version.py, tensorflow/python/platform/build_info.py,
# onnxruntime/capi/build_and_package_info.py, paddle/version/__init__.py, cupy/.data/_wheel.json
_BUILD_INFO = re.compile(r"(?i)(?:version|build_info|build_and_package_info|_wheel)[^/]*(?:/__init__)?\.(?:py|json)$")
MODULE = "<module>"
_VERSION_KEYS = {"cudnn_version": "cudnn", "cudnn": "cudnn", "cuda_version": "cuda", "cuda": "cuda"}
_VERSION_TEXT = re.compile(r"^\d+(\.\d+)*$")


class SurveyError(Exception):
    """A wheel that cannot be surveyed: no file for the platform, a failed download, an unreadable member."""


# --- the index: which wheels ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WheelFile:
    distribution: str
    version: str
    system: str
    filename: str
    url: str
    sha256: str
    size: int


def pypi_releases(distribution: str) -> dict[str, list[dict[str, object]]]:
    with urllib.request.urlopen(PYPI_JSON.format(distribution), timeout=120) as answer:
        return json.load(answer)["releases"]  # type: ignore[no-any-return]


def chosen_versions(target: Target, releases: dict[str, list[dict[str, object]]]) -> list[Version]:
    """The newest release of each series within the target's range, and the ones it names."""
    specifier = SpecifierSet(target.versions)
    newest: dict[tuple[int, ...], Version] = {}
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if version.is_prerelease or version not in specifier or all(f.get("yanked") for f in files):
            continue
        series = version.release[:2] if target.per == "minor" else version.release[:1]
        if series not in newest or version > newest[series]:
            newest[series] = version
    return sorted(set(newest.values()) | {Version(v) for v in target.also})


def canonical_url(url: str, index_url: str) -> str:
    """PyPI's own address of a file, whatever prefix the index that answered put before its digest path."""
    absolute = urllib.parse.urljoin(index_url, url)
    found = _BLAKE_PATH.search(urllib.parse.urlsplit(absolute).path)
    return FILES_HOST + found.group(1) if found else absolute


def _interpreter_rank(filename: str) -> int | None:
    """How well a wheel fits PYTHON_TAG: 0 built for it, 1 stable ABI, 2 pure ``py3``; None: another Python."""
    ranks = []
    for tag in parse_wheel_filename(filename)[3]:
        if tag.interpreter == PYTHON_TAG:
            ranks.append(0)
        elif tag.abi == "abi3" and tag.interpreter.startswith("cp3") and int(tag.interpreter[3:]) <= 12:
            ranks.append(1)
        elif tag.interpreter.startswith("py3") and tag.abi == "none":
            ranks.append(2)
    return min(ranks) if ranks else None


def pick_wheel(target: Target, version: Version, system: str,
               files: Iterable[dict[str, object]], index_url: str) -> WheelFile:
    """The wheel pip would take on ``system`` for PYTHON_TAG (highest build number among equals)."""
    fitting = []
    for entry in files:
        name = str(entry["filename"])
        if entry.get("packagetype") != "bdist_wheel" or entry.get("yanked"):
            continue
        _, _, build, tags = parse_wheel_filename(name)
        rank = _interpreter_rank(name)
        if rank is None or not any(PLATFORM_OF[system].match(tag.platform) or tag.platform == "any" for tag in tags):
            continue
        fitting.append(((rank, -(build[0] if build else 0)), entry))
    if not fitting:
        raise SurveyError(f"PyPI has no {system} wheel of {target.distribution} {version} for {PYTHON_TAG}")
    entry = min(fitting, key=lambda item: item[0])[1]
    digests = entry["digests"]
    assert isinstance(digests, dict)
    return WheelFile(target.distribution, str(version), system, str(entry["filename"]),
                     canonical_url(str(entry["url"]), index_url), str(digests["sha256"]), int(str(entry["size"])))


def planned(targets: Iterable[Target]) -> Iterator[WheelFile | SurveyError]:
    for target in targets:
        index_url = PYPI_JSON.format(target.distribution)
        try:
            releases = pypi_releases(target.distribution)
        except OSError as exc:
            yield SurveyError(f"{target.distribution}: PyPI's index cannot be read ({exc})")
            continue
        for version in chosen_versions(target, releases):
            for system in target.systems:
                try:
                    yield pick_wheel(target, version, system, releases.get(str(version), []), index_url)
                except SurveyError as exc:
                    yield exc


# --- the download -----------------------------------------------------------------------------------------


def download(wheel: WheelFile, folder: Path) -> Path:
    """The wheel in ``folder``, downloaded once and checked against PyPI's sha256, with progress on stderr."""
    path = folder / wheel.filename
    if path.exists():
        return path
    partial = path.with_name(path.name + ".part")
    digest = hashlib.sha256()
    done, shown = 0, time.monotonic()
    try:
        with urllib.request.urlopen(wheel.url, timeout=300) as answer, open(partial, "wb") as out:
            while chunk := answer.read(1 << 22):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if time.monotonic() - shown > 2:
                    shown = time.monotonic()
                    print(f"    {done >> 20} of {wheel.size >> 20} MB", file=sys.stderr, flush=True)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise SurveyError(f"download failed: {exc}") from None
    if digest.hexdigest() != wheel.sha256:
        partial.unlink()
        raise SurveyError(f"sha256 {digest.hexdigest()} is not PyPI's {wheel.sha256}")
    partial.rename(path)
    return path


# --- one library ------------------------------------------------------------------------------------------


def cudnn_strings(data: bytes | mmap.mmap) -> tuple[tuple[str, ...], int]:
    """The cuDNN library names among the file's strings, and how many of its strings name cuDNN
    (the count ``strings -a FILE | grep -ci cudnn`` prints)."""
    names: set[str] = set()
    count, last_end = 0, -1
    for match in _CUDNN.finditer(data):
        if match.start() < last_end:  # a second mention inside a string already counted
            continue
        start, end = match.start(), match.end()
        while start > 0 and data[start - 1] in _PRINTABLE:
            start -= 1
        while end < len(data) and data[end] in _PRINTABLE:
            end += 1
        last_end = end
        text = bytes(data[start:end]).decode("ascii")
        count += 1
        names.update(_CUDNN_NAME.findall(text))
    return tuple(sorted(names)), count


def pe_imports(data: bytes | mmap.mmap) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A PE file's imported DLLs, delay-loaded DLLs (Microsoft PE format: data directories 1 and 13) and
    section names (``.nv_fatb``: CUDA's fat binary, its name cut to PE's 8 bytes)."""
    def u16(at: int) -> int:
        return int(struct.unpack_from("<H", data, at)[0])

    def u32(at: int) -> int:
        return int(struct.unpack_from("<I", data, at)[0])

    pe = u32(0x3C)
    if bytes(data[pe:pe + 4]) != b"PE\0\0":
        raise SurveyError("not a PE file")
    sections_count, optional_size = u16(pe + 6), u16(pe + 20)
    optional = pe + 24
    directories = optional + (112 if u16(optional) == 0x20B else 96)  # PE32+ or PE32
    sections = [struct.unpack_from("<8sIIII", data, optional + optional_size + 40 * i)
                for i in range(sections_count)]

    def offset(rva: int) -> int:
        for _, virtual_size, address, raw_size, raw_at in sections:
            if address <= rva < address + max(virtual_size, raw_size):
                return int(raw_at + rva - address)
        raise SurveyError(f"PE address {rva:#x} is in no section")

    def name_at(rva: int) -> str:
        at = offset(rva)
        return bytes(data[at:data.find(b"\0", at)]).decode("ascii", "replace")

    def walk(directory: int, entry_size: int, name_field: int) -> tuple[str, ...]:
        rva = u32(directories + 8 * directory)
        if not rva:
            return ()
        names: list[str] = []
        at = offset(rva)
        while any(data[at:at + entry_size]) and len(names) < 4096:
            names.append(name_at(u32(at + name_field)))
            at += entry_size
        return tuple(names)

    return walk(1, 20, 12), walk(13, 32, 4), tuple(s[0].rstrip(b"\0").decode("ascii", "replace") for s in sections)


_FILE_VERSION = re.compile(rb"F\0i\0l\0e\0V\0e\0r\0s\0i\0o\0n\0\0\0(?:\0\0)?((?:[0-9., ]\0)+)")


def pe_file_version(data: bytes | mmap.mmap) -> str | None:
    """The FileVersion string of a PE file's version resource (VS_VERSIONINFO, UTF-16): "9.10.2.21" in
    cuDNN 9's cudnn64_9.dll, "6,14,11,6050" (not cuDNN's release) in cuDNN 8's cudnn64_8.dll."""
    found = _FILE_VERSION.search(data)
    return found.group(1).decode("utf-16-le") if found else None


def library_facts(member: str, path: Path) -> dict[str, object] | None:
    """What one library file says about cuDNN; None for a file that is neither ELF nor PE (a linker script).
    ``cudnn_release``: an ELF cuDNN library's own release (its exported version constant, read by cudnnload's
    ELF reader); ``file_version``: a PE file's FileVersion."""
    with open(path, "rb") as handle:
        head = handle.read(4)
        if head != b"\x7fELF" and head[:2] != b"MZ":
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            names, mentions = cudnn_strings(data)
            if head[:2] == b"MZ":
                needed, delayed, sections = pe_imports(data)
                return {"path": member, "format": "pe", "soname": None, "needed": list(needed),
                        "delay_needed": list(delayed), "rpath": [], "runpath": [], "gpu_code": ".nv_fatb" in sections,
                        "cudnn_names": list(names), "cudnn_mentions": mentions,
                        "cudnn_release": None, "file_version": pe_file_version(data)}
    try:
        info = read_elf(path)
    except ElfError as exc:
        raise SurveyError(f"{member}: {exc}") from None
    return {"path": member, "format": "elf", "soname": info.soname, "needed": list(info.needed), "delay_needed": [],
            "rpath": list(info.rpath), "runpath": list(info.runpath),
            "gpu_code": bool(info.gpu_code and (info.gpu_code.sass or info.gpu_code.ptx)),
            "cudnn_names": list(names), "cudnn_mentions": mentions,
            "cudnn_release": str(info.release) if info.release else None, "file_version": None}


def is_library(member: str) -> bool:
    base = member.rpartition("/")[2].lower()
    return bool(re.search(r"\.so(\.\d+)*$", base)) or base.endswith((".dll", ".pyd"))


# --- the Python code --------------------------------------------------------------------------------------


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _mentions_cudnn(node: ast.AST) -> list[str]:
    """The names of cuDNN a function holds: its string constants that name cuDNN and are one word (a file
    name, a glob, a folder, a package name), not a message or a docstring."""
    return [text for text in _strings(node)
            if "cudnn" in text.lower() and len(text) <= 100 and not any(c.isspace() for c in text)]


_LOAD_ERRORS = frozenset({"OSError", "EnvironmentError", "IOError", "FileNotFoundError", "Exception", "BaseException"})
_ESCAPES = frozenset({"raise", "propagate"})


def _catches_load_error(handler: ast.ExceptHandler) -> bool:
    """Whether the handler catches what a failed ctypes load raises (OSError): ``except ImportError`` does not."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(kind is None or (isinstance(kind, ast.Name) and kind.id in _LOAD_ERRORS)
               or (isinstance(kind, ast.Attribute) and kind.attr in _LOAD_ERRORS) for kind in kinds)


def _failure(call: ast.Call, parents: dict[ast.AST, ast.AST]) -> str:
    """What a failed load at ``call`` does: the handlers of the innermost ``try`` around it that catch OSError
    decide: "raise" (one raises again), "warn" (one warns, logs or prints), "ignore"; "propagate": none."""
    node: ast.AST = call
    while node in parents:
        parent = parents[node]
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
        handlers = [h for h in parent.handlers if _catches_load_error(h)] if isinstance(parent, ast.Try) else []
        if handlers and node in parent.body:  # type: ignore[attr-defined]
            handled = [n for handler in handlers for statement in handler.body for n in ast.walk(statement)]
            if any(isinstance(n, ast.Raise) for n in handled):
                return "raise"
            if any(isinstance(n, ast.Call) and _callee(n) in _WARN_CALLS for n in handled):
                return "warn"
            return "ignore"
        node = parent
    return "propagate"


def _through(site: str, inner: Iterable[str]) -> list[str]:
    """What a failed load inside a called function does at the call: a failure the callee contains ("ignore",
    "warn") stays as it is; one that leaves it ("raise", "propagate") meets the handler at the call."""
    inner = set(inner)
    return sorted((inner - _ESCAPES) | ({site} if inner & _ESCAPES else set()))


def loader_code(module: str, source: str) -> list[dict[str, object]]:
    """The functions of ``module`` that load cuDNN or name its files. A function counts when it holds a cuDNN
    file name (``libcudnn.so.*[0-9]``, ``cudnn64_9.dll``, a folder), or loads a library and calls a function of
    the module that holds one (onnxruntime's ``preload_dlls`` gets its names from ``_get_nvidia_dll_paths``).
    For each: the names, each load site (the call, itself a loader or a function of the module that loads)
    with what a failed load there does, the module's own calls of the function with what a failure does
    there (torch 2.10+: ``_preload_cuda_deps`` lets errors through, its caller swallows them), and whether it
    runs when the module is imported."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    functions = {node.name: node for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    # what runs for each function, and for the module itself ("<module>": its statements outside definitions,
    # where TransformerEngine calls _load_cuda_library("cudnn"))
    bodies: dict[str, list[ast.AST]] = {name: [node] for name, node in functions.items()}
    bodies[MODULE] = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]

    def own_calls(nodes: Iterable[ast.AST]) -> list[ast.Call]:
        return [n for node in nodes for n in ast.walk(node) if isinstance(n, ast.Call)]

    calls_in = {name: own_calls(nodes) for name, nodes in bodies.items()}
    calls_of: dict[str, list[ast.Call]] = {}
    for call in own_calls([tree]):
        calls_of.setdefault(str(_callee(call)), []).append(call)
    loading: set[str] = {name for name, calls in calls_in.items() if any(_callee(c) in _LOAD_CALLS for c in calls)}
    grown = True
    while grown:  # the functions that load, directly or through the module's other functions
        before = len(loading)
        loading |= {name for name, calls in calls_in.items() if any(_callee(c) in loading for c in calls)}
        grown = len(loading) > before
    outcomes: dict[str, list[str]] = {}

    def outcome(name: str) -> list[str]:
        """What a failed load anywhere inside ``name`` does when it reaches ``name``'s caller."""
        if name not in outcomes:
            outcomes[name] = ["propagate"]  # a recursion's own answer while it is worked out
            outcomes[name] = sorted({o for c in calls_in[name] for o in site_outcome(c, name)})
        return outcomes[name]

    def site_outcome(call: ast.Call, within: str) -> list[str]:
        callee = _callee(call)
        if callee in _LOAD_CALLS:
            return [_failure(call, parents)]
        if callee in loading and callee != within:
            return _through(_failure(call, parents), outcome(str(callee)))
        return []

    holding = {name for name, nodes in bodies.items()
               if any(_FILE_NAMING.search(text) for node in nodes for text in _mentions_cudnn(node))}

    def enclosing(node: ast.AST) -> str:
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name
        return MODULE

    at_import, frontier = {MODULE}, list(calls_in[MODULE])
    while frontier:
        name = _callee(frontier.pop())
        if name in functions and name not in at_import:
            at_import.add(name)
            frontier.extend(calls_in[name])
    found = []
    for name, nodes in bodies.items():
        calls = calls_in[name]
        sites = [c for c in calls if _callee(c) in _LOAD_CALLS or (_callee(c) in loading and _callee(c) != name)]
        # the sites that name cuDNN in their arguments (JAX: _load("cudnn", ["libcudnn.so.9"])), when there are
        # such; else all (torch: _preload_cuda_lib(lib_folder, lib_name) in a loop over a table)
        named = [c for c in sites if any("cudnn" in text.lower() for text in _strings(c))]
        if name not in holding and not named and not (sites and any(_callee(c) in holding for c in calls)):
            continue  # names cuDNN without loading it or naming a file of it: torch.backends.cudnn's API
        callers = [c for c in calls_of.get(name, []) if enclosing(c) != name]
        found.append({
            "module": module, "function": name,
            "names": sorted({text for node in nodes for text in _mentions_cudnn(node)}),
            "load_sites": [{"call": _callee(c), "line": c.lineno, "on_failure": site_outcome(c, name)}
                           for c in named or sites],
            "called_from": [{"call": enclosing(c), "line": c.lineno,
                             "on_failure": _through(_failure(c, parents), outcome(name))} for c in callers],
            "at_import": name in at_import,
        })
    return found


def stated_versions(source: str) -> dict[str, str]:
    """``cuda`` / ``cudnn`` versions a build-information file states: assignments and dict entries named
    cuda_version, cudnn_version, cuda, cudnn whose value is a version (torch/version.py ``cuda = '13.0'``,
    tensorflow's build_info.py ``('cudnn_version', '9')``, onnxruntime's build_and_package_info.py)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    stated: dict[str, str] = {}

    def note(key: str, value: ast.AST | None) -> None:
        if key in _VERSION_KEYS and isinstance(value, ast.Constant) and isinstance(value.value, str) \
                and _VERSION_TEXT.match(value.value):
            stated.setdefault(_VERSION_KEYS[key], value.value)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    note(target.id, node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            note(node.target.id, node.value)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    note(key.value, value)
        elif isinstance(node, ast.Tuple) and len(node.elts) == 2:  # OrderedDict([('cudnn_version', '9'), ...])
            key, value = node.elts
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                note(key.value, value)
    return stated


_STATES_VERSIONS = re.compile(rb"(?i)\bcud(?:a|nn)(?:_version)?['\"]?\s*(?::\s*\w+(?:\[\w+\])?\s*)?[:=,]")


# --- one wheel --------------------------------------------------------------------------------------------


def applies(requirement: Requirement, system: str, extras: Iterable[str]) -> bool:
    """Whether pip installs ``requirement`` with the wheel on ``system`` (any of its extras asked for): torch's
    one METADATA pins CUDA wheels for Linux only, with ``platform_system == "Linux"``."""
    if requirement.marker is None:
        return True
    environment = {"platform_system": SYSTEM_NAME[system], "sys_platform": "linux" if system == "linux" else "win32",
                   "os_name": "posix" if system == "linux" else "nt", "platform_machine": "x86_64",
                   "python_version": PYTHON_TAG[2] + "." + PYTHON_TAG[3:]}
    return any(requirement.marker.evaluate({**environment, "extra": extra}) for extra in ("", *extras))


def cuda_major(distribution: str, libraries: list[dict[str, object]], stated: dict[str, str],
               requires: list[Requirement]) -> tuple[int | None, str]:
    """The CUDA major the wheel is built for, and where that was read: what its libraries NEED first, then its
    build information, its name, and the CUDA wheels it requires on its system."""
    majors = sorted({int(m.group(1) or m.group(2)) for lib in libraries for name in lib["needed"]  # type: ignore[attr-defined]
                     if (m := _CUDA_NEEDED.match(name))})
    if majors:
        return majors[-1], "needed"
    if "cuda" in stated:
        return int(stated["cuda"].split(".")[0]), "build-info"
    if found := _CUDA_IN_NAME.search(distribution):
        return int(found.group(1)), "distribution"
    pins = sorted({int(m.group(1)) for r in requires
                   if (m := re.match(r"nvidia-[\w-]+-cu(\d+)$", canonicalize_name(r.name)))})
    if pins:
        return pins[-1], "requires"
    return None, "none"


def variant(major: int | None, libraries: list[dict[str, object]]) -> str:
    """"cu12", "cu13": built for that CUDA major; "cuda": it carries GPU code but names no CUDA major (CUDA linked
    in statically: CTranslate2); "cpu": no GPU code (a CPU torch still names cuDNN in its operators' names)."""
    if major:
        return f"cu{major}"
    return "cuda" if any(lib["gpu_code"] for lib in libraries) else "cpu"


def survey_wheel(wheel: WheelFile, path: Path, scratch: Path) -> dict[str, object]:
    libraries: list[dict[str, object]] = []
    loaders: list[dict[str, object]] = []
    stated: dict[str, str] = {}
    stated_in: dict[str, str] = {}
    requires: list[str] = []
    extras: list[str] = []
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            member = info.filename
            if member.endswith(".dist-info/METADATA"):
                metadata = email.parser.Parser().parsestr(archive.read(info).decode("utf-8", "replace"))
                requires = metadata.get_all("Requires-Dist") or []
                extras = metadata.get_all("Provides-Extra") or []
            elif is_library(member):
                with tempfile.NamedTemporaryFile(dir=scratch) as copy:
                    with archive.open(info) as source:
                        shutil.copyfileobj(source, copy, 1 << 22)  # streamed: libraries can be GBs
                    copy.flush()
                    facts = library_facts(member, Path(copy.name))
                if facts is not None:
                    libraries.append(facts)
            elif member.endswith((".py", ".json")) and info.file_size < (4 << 20):
                raw = archive.read(info)
                if member.endswith(".py") and b"cudnn" in raw.lower():
                    loaders.extend(loader_code(member, raw.decode("utf-8", "replace")))
                if _BUILD_INFO.search(member) and _STATES_VERSIONS.search(raw):
                    text = raw.decode("utf-8", "replace")
                    found = stated_versions(text) if member.endswith(".py") else _json_versions(text)
                    for key, value in found.items():
                        if key not in stated:
                            stated[key], stated_in[key] = value, member
    cudnn_requires = [r for r in requires if canonicalize_name(Requirement(r).name).startswith("nvidia-cudnn")]
    parsed = [Requirement(r) for r in requires]
    major, major_from = cuda_major(wheel.distribution, libraries, stated,
                                   [r for r in parsed if applies(r, wheel.system, extras)])
    return {
        "distribution": wheel.distribution, "version": wheel.version, "system": wheel.system,
        "variant": variant(major, libraries), "cuda_major": major, "cuda_major_from": major_from,
        "cudnn_requires": cudnn_requires,
        "build_cudnn": stated.get("cudnn"), "build_cudnn_from": stated_in.get("cudnn"),
        "build_cuda": stated.get("cuda"), "build_cuda_from": stated_in.get("cuda"),
        "libraries": sorted(libraries, key=lambda lib: str(lib["path"])),
        "loaders": sorted(loaders, key=lambda code: (str(code["module"]), str(code["function"]))),
        "wheel": wheel.filename, "sha256": wheel.sha256, "url": wheel.url, "size": wheel.size,
        "surveyed": datetime.date.today().isoformat(), "format": ROW_FORMAT,
    }


def _json_versions(text: str) -> dict[str, str]:
    """The same keys in a JSON build-information file (CuPy's ``.data/_wheel.json``), at any depth."""
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    stated: dict[str, str] = {}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in _VERSION_KEYS and isinstance(inner, str) and _VERSION_TEXT.match(inner):
                    stated.setdefault(_VERSION_KEYS[key], inner)
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(document)
    return stated


# --- the run ----------------------------------------------------------------------------------------------


def cache_root(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("CUDNNLOAD_SURVEY_CACHE") or Path.home() / ".cache" / "cudnnload-survey")


def row_for(wheel: WheelFile, cache: Path, drop_wheel: bool) -> dict[str, object]:
    """The wheel's row, from the row cache or surveyed now."""
    cached = cache / "rows" / f"{wheel.filename}.json"
    if cached.exists():
        row = json.loads(cached.read_text())
        if row.get("format") == ROW_FORMAT and row.get("sha256") == wheel.sha256:
            return row  # type: ignore[no-any-return]
    (cache / "wheels").mkdir(parents=True, exist_ok=True)
    (cache / "scratch").mkdir(parents=True, exist_ok=True)
    path = download(wheel, cache / "wheels")
    try:
        row = survey_wheel(wheel, path, cache / "scratch")
    except (OSError, zipfile.BadZipFile, SurveyError, struct.error, ValueError) as exc:
        raise SurveyError(f"unreadable: {exc}") from None
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(row, indent=1))
    if drop_wheel:
        path.unlink()
    return row


PROVENANCE = ("wheel", "sha256", "url", "size", "surveyed")


def render(rows: list[dict[str, object]]) -> str:
    """The generated module: one dict a row, shaped like ``cudnnload.resolve.survey.SurveyedWheel``."""
    for row in rows:
        row.pop("format", None)
        row["provenance"] = {key: row.pop(key) for key in PROVENANCE}
    body = pprint.pformat(tuple(rows), width=120, sort_dicts=False)
    return (f'"""Generated by bench/survey_frameworks.py on {datetime.date.today().isoformat()}: do not edit.\n\n'
            "What each surveyed framework wheel says about cuDNN, read from the wheel itself (see that script's\n"
            'docstring for the fields and the regeneration command); read through cudnnload.resolve.survey."""\n'
            "# ruff: noqa: E501\n\n"
            f"ROWS = {body}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=None,
                        help="wheel and row cache (default: $CUDNNLOAD_SURVEY_CACHE or ~/.cache/cudnnload-survey)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--only", action="append", default=[], help="survey only this distribution (repeatable); "
                        "the other rows are kept from the output file")
    parser.add_argument("--drop-wheels", action="store_true", help="delete each wheel once its row is made")
    args = parser.parse_args(argv)
    cache = args.cache or cache_root()
    chosen = {canonicalize_name(name) for name in args.only}
    targets = [t for t in TARGETS if not chosen or canonicalize_name(t.distribution) in chosen]
    rows: list[dict[str, object]] = []
    if chosen and args.output.exists():
        namespace: dict[str, object] = {}
        exec(compile(args.output.read_text(), str(args.output), "exec"), namespace)  # our own generated file
        rows = [{**row, **row.pop("provenance"), "format": ROW_FORMAT}  # back to the flat cached form
                for row in map(dict, namespace["ROWS"])  # type: ignore[call-overload]
                if canonicalize_name(str(row["distribution"])) not in chosen]
    plan = list(planned(targets))
    wheels = [w for w in plan if isinstance(w, WheelFile)]
    for problem in (p for p in plan if isinstance(p, SurveyError)):
        print(f"skipped: {problem}", flush=True)
    for number, wheel in enumerate(wheels, start=1):
        label = f"[{number}/{len(wheels)}] {wheel.distribution} {wheel.version} {wheel.system} ({wheel.size >> 20} MB)"
        print(label, flush=True)
        started = time.monotonic()
        try:
            row = row_for(wheel, cache, args.drop_wheels)
        except SurveyError as exc:
            print(f"skipped: {wheel.filename}: {exc}", flush=True)
            continue
        rows.append(row)
        libraries, loaders = row["libraries"], row["loaders"]
        assert isinstance(libraries, list) and isinstance(loaders, list)
        print(f"    {row['variant']}, {len(libraries)} libraries, {len(loaders)} loader functions, "
              f"{time.monotonic() - started:.1f} s", flush=True)
    rows.sort(key=lambda r: (canonicalize_name(str(r["distribution"])), Version(str(r["version"])), str(r["system"])))
    args.output.write_text(render(rows))
    print(f"{len(rows)} rows written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
