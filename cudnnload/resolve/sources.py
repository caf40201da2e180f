"""Where cuDNN may live on this machine: small search steps, run in a declared order.

Each step takes the search context and returns the folders it proposes, each
with the label that says how it was found (``found_via``). Steps only look at
the file system and the environment passed in; they never load anything.
"""

from __future__ import annotations

import csv
import glob
import io
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cudnnload.files import NotRegularFile, read_regular
from cudnnload.resolve.linker import LinkerEnv, split_ld_library_path
from cudnnload.resolve.pythons import along_of, interpreter_of_site

_METADATA_BYTES = 1 << 20  # a header of some KB; the description after it is not read
_RECORD_BYTES = 64 << 20  # torch's RECORD is ~3 MB

CUDNN_DISTRIBUTION_PREFIXES = ("nvidia-cudnn-", "nvidia_cudnn_")


@dataclass(frozen=True)
class Origin:
    folder: str
    found_via: str  # "wheel nvidia-cudnn-cu12 9.28.0.42", "LD_LIBRARY_PATH", "ld.so.cache", ...


@dataclass(frozen=True)
class Distribution:
    """An installed ``nvidia-cudnn-*`` distribution and what its RECORD says."""

    name: str
    version: str
    site: str  # the folder holding the .dist-info
    lib_folders: tuple[str, ...]
    files: tuple[str, ...]  # absolute paths of the shared objects its RECORD lists
    missing: tuple[str, ...]  # listed in RECORD, absent on disk
    requires: tuple[str, ...]
    # what RECORD says of each of those files (PEP 376/627: "sha256=<urlsafe base64, unpadded>", size in bytes)
    sizes: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)
    digests: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    installer: str | None = None  # INSTALLER's first line ("pip", "uv", "conda"): who installed it
    # who installs into ``site`` with pip now, and how (`pythons.interpreter_of_site`)
    pip_env: tuple[str | None, tuple[str, ...]] = (None, ())
    # with --target: the distributions a pip install there must install along (`pythons.along_in_target`)
    along: tuple[str, ...] | None = ()


@dataclass(frozen=True)
class SearchContext:
    environ: Mapping[str, str]
    linker: LinkerEnv  # its ld.so.cache and default folders are searched too
    system: bool = True  # include ld.so.cache, default folders and /usr/local/cuda*
    distributions: tuple[Distribution, ...] = field(default=())


def wheel_lib_folders(sites: Sequence[str]) -> Iterable[str]:
    """The ``nvidia/*/lib`` folders of pip's NVIDIA wheels in ``sites`` (cuDNN, cuBLAS, NVRTC, the CUDA runtime),
    site by site and in name order within one: where torch's and JAX's loaders take them from, by path."""
    for site in sites:
        try:
            packages = sorted(os.listdir(os.path.join(site or ".", "nvidia")))
        except OSError:
            continue
        for package in packages:
            yield os.path.join(site or ".", "nvidia", package, "lib")


def cudnn_distributions(site_paths: Sequence[str]) -> tuple[Distribution, ...]:
    """Every installed nvidia-cudnn-* distribution on ``site_paths``, with its RECORD read.

    Reads ``*.dist-info`` folders directly (PEP 376/627 layout): importlib.metadata would
    cost 50 ms of imports to find a handful of folders by name.
    """
    found: dict[str, Distribution] = {}
    for site in site_paths:
        try:
            names = os.listdir(site or ".")
        except OSError:
            continue
        for entry in sorted(names):
            if not (entry.startswith(CUDNN_DISTRIBUTION_PREFIXES) and entry.endswith(".dist-info")):
                continue
            info = os.path.join(site, entry)
            key = os.path.realpath(info)
            if key not in found:  # the same site reached through two sys.path entries
                dist = _read_dist_info(site, info)
                if dist is not None:
                    found[key] = dist
    return tuple(found.values())


def _read_dist_info(site: str, info: str) -> Distribution | None:
    try:  # the header is at the top; a METADATA is a regular file of some KB (a FIFO would block)
        header = read_regular(os.path.join(info, "METADATA"), _METADATA_BYTES).decode("utf-8", "replace")
    except (OSError, NotRegularFile):
        return None
    header = header.split("\n\n", 1)[0]
    fields: dict[str, list[str]] = {}
    for line in header.splitlines():
        name, sep, value = line.partition(":")
        if sep and not line[:1].isspace():
            fields.setdefault(name.strip(), []).append(value.strip())
    files: list[str] = []
    sizes: dict[str, int] = {}
    digests: dict[str, str] = {}
    try:
        record = read_regular(os.path.join(info, "RECORD"), _RECORD_BYTES).decode("utf-8", "replace")
        for row in csv.reader(io.StringIO(record, newline="")):
            if row and ".so" in os.path.basename(row[0]):
                path = os.path.normpath(os.path.join(site, row[0]))
                files.append(path)
                if len(row) > 2 and row[2].isdigit():
                    sizes[path] = int(row[2])
                if len(row) > 1 and row[1].startswith("sha256="):
                    digests[path] = row[1][len("sha256="):]
    except (OSError, NotRegularFile, csv.Error):
        pass  # no RECORD (a broken install): nothing to check against
    try:
        installer = read_regular(os.path.join(info, "INSTALLER"), 256).decode("utf-8", "replace").strip() or None
    except (OSError, NotRegularFile):
        installer = None
    return Distribution(
        name=fields.get("Name", ["?"])[0],
        version=fields.get("Version", ["?"])[0],
        site=site,
        lib_folders=tuple(sorted({os.path.dirname(f) for f in files})),
        files=tuple(sorted(files)),
        missing=tuple(sorted(f for f in files if not os.path.lexists(f))),
        requires=tuple(fields.get("Requires-Dist", ())),
        sizes=sizes,
        digests=digests,
        installer=installer,
        pip_env=interpreter_of_site(site),
        along=along_of(site, interpreter_of_site(site)),
    )


def _from_distributions(ctx: SearchContext) -> Iterable[Origin]:
    for dist in ctx.distributions:
        for folder in dist.lib_folders:
            yield Origin(folder, f"wheel {dist.name} {dist.version}")


def _from_conda(ctx: SearchContext) -> Iterable[Origin]:
    prefix = ctx.environ.get("CONDA_PREFIX")
    if prefix:
        yield Origin(os.path.join(prefix, "lib"), "CONDA_PREFIX")
    if os.path.isdir(os.path.join(sys.prefix, "conda-meta")) and prefix != sys.prefix:
        yield Origin(os.path.join(sys.prefix, "lib"), "conda environment of this Python")


def _from_variables(ctx: SearchContext) -> Iterable[Origin]:
    for variable in ("CUDNN_PATH", "CUDNN_HOME", "CUDA_HOME", "CUDA_PATH"):
        root = ctx.environ.get(variable)
        if root:
            for sub in ("lib64", "lib", "lib/x64", "targets/x86_64-linux/lib"):
                yield Origin(os.path.join(root, sub), variable)


def _from_cuda_toolkits(ctx: SearchContext) -> Iterable[Origin]:
    if not ctx.system:
        return
    for root in sorted(glob.glob("/usr/local/cuda*")):
        for sub in ("lib64", "targets/x86_64-linux/lib"):
            yield Origin(os.path.join(root, sub), root)


def _from_ld_library_path(ctx: SearchContext) -> Iterable[Origin]:
    for folder in split_ld_library_path(ctx.environ.get("LD_LIBRARY_PATH", "")):
        if folder:
            yield Origin(folder, "LD_LIBRARY_PATH")


def _from_ld_cache(ctx: SearchContext) -> Iterable[Origin]:
    if not ctx.system:
        return
    for entry in ctx.linker.ld_cache.entries:
        if entry.name.startswith("libcudnn"):
            yield Origin(os.path.dirname(entry.path), "ld.so.cache")


def _from_default_dirs(ctx: SearchContext) -> Iterable[Origin]:
    if not ctx.system:
        return
    for folder in ctx.linker.defaults.default_dirs:
        yield Origin(folder, "default linker folder")


SEARCH_STEPS: tuple[Callable[[SearchContext], Iterable[Origin]], ...] = (
    _from_distributions,
    _from_conda,
    _from_variables,
    _from_cuda_toolkits,
    _from_ld_library_path,
    _from_ld_cache,
    _from_default_dirs,
)


def search(ctx: SearchContext) -> tuple[Origin, ...]:
    """Every folder the steps propose, in step order, each folder once with all its labels joined."""
    labels: dict[str, list[str]] = {}
    for step in SEARCH_STEPS:
        for origin in step(ctx):
            folder = os.path.normpath(origin.folder)
            if origin.found_via not in labels.setdefault(folder, []):
                labels[folder].append(origin.found_via)
    return tuple(Origin(folder, ", ".join(via)) for folder, via in labels.items())
