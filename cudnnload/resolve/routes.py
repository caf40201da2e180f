"""How each framework puts cuDNN in its process: the shim whose functions it calls, and the rule that gave it.

A framework does not load cuDNN the way a plain program does; each has its own loader, read from its
source (the versions named are the ones measured on the GPU machine, 2026-11-24):

- PyTorch (torch 2.11, ``torch/__init__.py``): ``_load_global_deps()`` opens ``libtorch_global_deps.so`` and
  then ``_preload_cuda_deps()``, which for each CUDA library takes the first ``sys.path`` entry holding
  ``nvidia/<lib>/lib/<glob>``, ``nvidia/cu<N>/lib/<glob>`` or ``<lib>/lib/<glob>`` (``_get_cuda_dep_paths``)
  and opens that file by path with ctypes. cuBLASLt and cuBLAS come first and are required: when either is
  missing a ValueError stops the preload before cuDNN, inside a ``try: ... except Exception: pass``. Then
  ``from torch._C import *`` maps ``libtorch_cuda.so``, whose DT_NEEDED ``libcudnn.so.9`` is answered by the
  shim already loaded (its SONAME), else searched through its DT_RPATH (``$ORIGIN/../../nvidia/cudnn/lib``
  first), ``LD_LIBRARY_PATH`` and ``ld.so.cache``.
- JAX (the ``jax_plugins/xla_cuda13`` plugin, ``_load_nvidia_libraries``): ``import nvidia.cudnn`` and
  ``ctypes.cdll.LoadLibrary(<its __path__[0]>/lib/libcudnn.so.9)``, errors ignored; XLA then dlopens
  ``libcudnn.so.9`` by name from ``xla_cuda_plugin.so`` (no DT_NEEDED on cuDNN; its DT_RPATH lists
  ``$ORIGIN/../../nvidia/cudnn/lib``).
- ONNX Runtime: ``libonnxruntime_providers_cuda.so`` NEEDs ``libcudnn.so.9`` (searched from it);
  ``onnxruntime.preload_dlls()`` loads the wheel's by path first, but only when the program calls it.
- TensorFlow: ``tsl/platform/default/dso_loader.cc`` dlopens ``libcudnn.so.<major>`` by name from its own
  library (``libtensorflow_framework.so.2``, whose RPATH lists the nvidia wheels' folders).

Whatever the framework opens, an ``LD_PRELOAD``-ed shim is first in the global scope: the framework's calls
bind to it (measured: torch with the system's ``libcudnn.so.9`` preloaded reports its release). The shim's
own loads of its sub-libraries are discovery's plan, made in the same process model (`process`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.resolve import linker
from cudnnload.resolve.catalog import classify
from cudnnload.resolve.consumers import Consumer
from cudnnload.resolve.discovery import Context, chain, requester
from cudnnload.resolve.startup import Source, package, torch_preload


@dataclass(frozen=True)
class Route:
    """The cuDNN a framework's process calls, and how it got there."""

    consumer: Consumer
    shim: str | None  # the shim whose functions the framework's calls reach; None: it finds none
    how: str  # in words: "by path: torch's _preload_cuda_deps() (the first nvidia/cudnn/lib on sys.path)"
    opened: str | None = None  # the file the framework's own code opened, when a preloaded shim wins over it
    variable: str | None = None  # "LD_PRELOAD" when the shim comes from it
    entry: str | None = None  # that variable's entry
    error: str | None = None  # why no shim loads for it
    # what put the sys.path entry that gave the shim there (a PYTHONPATH entry, the user site, a .pth path line),
    # when the interpreter's start-up was observed; and that entry
    source: Source | None = None
    path_entry: str | None = None

    @property
    def folder(self) -> str | None:
        return os.path.dirname(self.shim) if self.shim else None


def route(consumer: Consumer, ctx: Context, site_paths: Sequence[str],
          sources: Mapping[str, Source] | None = None) -> Route:
    """The shim ``consumer``'s framework would call in a process with ``ctx``'s environment and what it
    maps first (LD_PRELOAD), ``site_paths`` being its ``sys.path``; ``sources``: what put each sys.path entry
    there (`startup.PathEntry`), to name the one a shim found by path came from."""
    major = consumer.cudnn_major
    soname = f"libcudnn.so.{major}"
    found = _FRAMEWORK_LOADS.get(consumer.framework, _needed)(consumer, ctx, site_paths, soname)
    entry = next((path for path in site_paths if path and found.shim
                  and found.shim.startswith(path.rstrip("/") + "/")), None)
    if entry is not None and sources is not None:
        found = replace(found, source=sources.get(entry), path_entry=entry)
    preloaded = next((p for p in ctx.preloads if p.path and p.soname == soname), None)
    if preloaded is None or preloaded.path is None or os.path.realpath(preloaded.path) == os.path.realpath(
            found.shim or ""):
        return found
    by = f"LD_PRELOAD entry {preloaded.entry}" if preloaded.entry else "the process, already"
    return Route(consumer, preloaded.path, f"{by} maps {preloaded.path} before {consumer.framework} loads cuDNN: "
                 f"its calls bind to that shim" + (f", not to {found.shim}" if found.shim else ""),
                 opened=found.shim, variable="LD_PRELOAD" if preloaded.entry else None, entry=preloaded.entry)


def _cuda(consumer: Consumer) -> int | None:
    """The CUDA major of the framework's build: its pins' ``-cuNN`` suffix, else its local version (+cu130)."""
    for pin in consumer.pins:
        suffix = pin.distribution.rpartition("-cu")[2]
        if suffix.isdigit():
            return int(suffix)
    local = consumer.version.partition("+cu")[2]
    return int(local[:-1]) if len(local) >= 3 and local.isdigit() else None


def _loads(path: str, ctx: Context) -> bool:
    outcome, _ = linker.opening(path, ctx.linker)
    return outcome == "found"


def _torch(consumer: Consumer, ctx: Context, site_paths: Sequence[str], soname: str) -> Route:
    cuda, release = _cuda(consumer), _torch_release(consumer.version)

    def first(folder: str, pattern: str) -> str | None:
        return torch_preload(site_paths, folder, pattern, cuda_major=cuda, torch=release)

    missing = next((name for name in ("libcublasLt", "libcublas") if first("cublas", f"{name}.so.*[0-9]") is None),
                   None)
    shim = first("cudnn", "libcudnn.so.*[0-9]") if missing is None else None
    if shim is not None and _loads(shim, ctx):
        return Route(consumer, shim, "by path: torch/__init__.py _preload_cuda_deps() opens the first "
                     "nvidia/cudnn/lib/libcudnn.so.* on sys.path")
    fell = (f"torch's preload by path stops before cuDNN ({missing}.so.* is on no sys.path entry)" if missing else
            f"torch's preload by path fails on {shim}" if shim else "no nvidia/cudnn/lib on sys.path for torch's "
            "preload by path")
    needed = _needed(consumer, ctx, site_paths, soname)
    return Route(consumer, needed.shim, f"{needed.how} ({fell})", error=needed.error)


def _jax(consumer: Consumer, ctx: Context, site_paths: Sequence[str], soname: str) -> Route:
    package = _nvidia_cudnn(site_paths)
    shim = os.path.join(package, "lib", soname) if package else None
    if shim is not None and os.path.exists(shim) and _loads(shim, ctx):
        return Route(consumer, shim, "by path: the JAX CUDA plugin's _load_nvidia_libraries() opens "
                     "nvidia.cudnn's lib/" + soname)
    plugin = sorted(glob.glob(os.path.join(glob.escape(consumer.site), "jax_plugins", "xla_cuda*",
                                           "xla_cuda_plugin.so")))
    asker = requester(plugin[0], ctx.cache) if plugin else None
    res = linker.resolve(soname, chain(asker) if asker else None, ctx.linker)
    why = f"no {soname} in the nvidia.cudnn package" if package else "no nvidia.cudnn package on sys.path"
    return _by_name(consumer, res, f"XLA dlopens {soname} from {os.path.basename(plugin[0]) if plugin else 'JAX'}",
                    why)


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


def _needed(consumer: Consumer, ctx: Context, site_paths: Sequence[str], soname: str) -> Route:
    """The framework library that NEEDs the shim, searched from it (the generic rule)."""
    need = next((n for n in consumer.needs if n.soname == soname), consumer.needs[0] if consumer.needs else None)
    asker = requester(need.path, ctx.cache) if need else None
    res = linker.resolve(need.soname if need else soname, chain(asker) if asker else None, ctx.linker)
    what = f"{os.path.basename(need.path)} NEEDs {need.soname}" if need else f"{consumer.framework} opens {soname}"
    return _by_name(consumer, res, what, None)


def _tensorflow(consumer: Consumer, ctx: Context, site_paths: Sequence[str], soname: str) -> Route:
    if consumer.needs:
        return _needed(consumer, ctx, site_paths, soname)
    framework = sorted(glob.glob(os.path.join(glob.escape(consumer.site), "tensorflow", "libtensorflow_framework.so*")))
    asker = requester(framework[0], ctx.cache) if framework else None
    res = linker.resolve(soname, chain(asker) if asker else None, ctx.linker)
    return _by_name(consumer, res, f"TensorFlow's dso_loader dlopens {soname}", None)


def _by_name(consumer: Consumer, res: linker.Resolution, what: str, why: str | None) -> Route:
    how = f"{what}: found via {res.rule}" + (f" ({why})" if why else "")
    if res.path is None or res.error is not None:
        return Route(consumer, res.path if res.error else None, how, error=res.error or f"{res.name}: not found")
    if classify(os.path.basename(res.path)) is None and res.rule != "already-loaded":
        return Route(consumer, None, how, error=f"{res.path} is not a cuDNN shim")
    return Route(consumer, res.path, how)


_FRAMEWORK_LOADS = {"torch": _torch, "jax": _jax, "tensorflow": _tensorflow}
