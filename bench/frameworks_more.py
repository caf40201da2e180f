"""The real PyTorch and JAX broken in ways tests/test_frameworks_gpu.py does not break them, asked the same ways.

    OUT=DIR python bench/frameworks_more.py [NAME...]     (on the GPU machine, through bench/gpu_run.sh more)

Each breakage changes the installed frameworks or the machine (a sub-library or the shim of another release in the
wheel's folder, a dangling link, an empty file, NVRTC or cuBLAS taken away, /etc/ld.so.preload,
CUDA_VISIBLE_DEVICES=-1, a shim or a sub-library copied into a folder of its own, or into the folder the program runs
in, an empty LD_LIBRARY_PATH entry, a copy of the wheel's package holding only the shim first on PYTHONPATH, one
library's file under another's name, a file cut short or an empty folder in a library's place, another process
holding the GPU's memory)
and is undone after, whatever happens (each moved file back where it was, each written file removed). For each,
the frameworks' own convolution programs run first (the truth); then plain ``doctor``, ``doctor <the framework's
library>``, ``doctor -- <the program>`` and ``explain`` on the program's last lines are asked exactly as the
frameworks test asks them (its `test_every_way_of_asking_agrees_with_what_the_framework_did`), and what disagrees
with the truth is printed. A line per breakage; the records go to ``$OUT/frameworks.jsonl``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tests.test_frameworks_gpu as frameworks  # noqa: E402
from fixtures.scenarios.layouts import foreign_copy  # noqa: E402
from tests.test_frameworks_gpu import Breakage, Machine  # noqa: E402

Change = Callable[[Machine, list[tuple[Path, Path | None]]], None]  # records (path, kept copy or None: written)


def _aside(path: Path, kept: list[tuple[Path, Path | None]]) -> Path:
    copy = Path(tempfile.mkdtemp(prefix="cudnnload-more-")) / path.name
    shutil.move(path, copy)
    kept.append((path, copy))
    return copy


Put = Callable[[Machine, Path, Path], None]  # (machine, the wheel's file set aside, its path): writes what stands there


def _replaced(name: str, put: Put | None = None) -> Change:
    """The wheel's ``name`` set aside and ``put`` in its place (nothing: taken away, the search goes on past the
    wheel's folder, to the system cuDNN)."""
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        copy = _aside(m.wheel / name, kept)
        if put is not None:
            put(m, copy, m.wheel / name)
    return change


def _other_release(m: Machine, copy: Path, path: Path) -> None:
    """The system cuDNN's file of that name (another release of the same major)."""
    shutil.copy2(m.system / path.name, path)


def _sibling(name: str) -> Put:
    """A copy of the wheel's ``name`` (another sub-library: its own soname and exports) under the name set aside."""
    def put(m: Machine, copy: Path, path: Path) -> None:
        shutil.copy2(m.wheel / name, path)
    return put


def _cut(size: int) -> Put:
    """The file's first ``size`` bytes (a download or copy cut short): its ELF header and no more."""
    def put(m: Machine, copy: Path, path: Path) -> None:
        with open(copy, "rb") as whole:
            path.write_bytes(whole.read(size))
        shutil.copymode(copy, path)
    return put


def _directory(m: Machine, copy: Path, path: Path) -> None:
    """An empty folder of the library's name (an unpacking gone wrong): open() succeeds, read() does not."""
    path.mkdir()


def _system_gone(name: str) -> Change:
    """The system cuDNN's ``name`` (the file ld.so.cache lists) set aside, the cache left as it was: stale."""
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        _aside(m.system / name, kept)
    return change


def _dangling(m: Machine, copy: Path, path: Path) -> None:
    path.symlink_to("/nonexistent/" + path.name)


def _emptied(m: Machine, copy: Path, path: Path) -> None:
    shutil.copy2(copy, path)
    os.truncate(path, 0)


def _not_elf(m: Machine, copy: Path, path: Path) -> None:
    """A text file of the same name (a download that saved an error page)."""
    path.write_text("<html><body>403 Forbidden</body></html>\n")


def _loop(m: Machine, copy: Path, path: Path) -> None:
    """A symbolic link to itself (ELOOP)."""
    path.symlink_to(path.name)


def _other_machine(m: Machine, copy: Path, path: Path) -> None:
    """A file of another architecture, as an aarch64 wheel's unpacked on x86-64 is."""
    foreign_copy(copy, path)
    shutil.copymode(copy, path)


def _gone(pattern: str) -> Change:
    """Every file matching ``pattern`` in a ``site-packages/nvidia/*/lib`` folder (``cuda_nvrtc``, ``cublas``;
    CUDA 13's wheels share ``cu13``) taken away; none found is an error, not a healthy case."""
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        found = sorted(m.site.glob(f"nvidia/*/lib/{pattern}"))
        if not found:
            raise FileNotFoundError(f"no nvidia/*/lib/{pattern} under {m.site}")
        for path in found:
            _aside(path, kept)
    return change


def _dist_info_gone(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
    """The cuDNN wheel's .dist-info taken away (its files stay): pip no longer knows it is installed."""
    for info in sorted(m.site.glob("nvidia_cudnn_cu*.dist-info")):
        _aside(info, kept)


def _etc_preload(name: str) -> Change:
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        path = Path("/etc/ld.so.preload")
        if path.exists():
            _aside(path, kept)
        path.write_text(f"{m.system / name}\n")
        kept.append((path, None))
    return change


# What undoes a change that is no file: a mount taken away (`changed` runs each, last first, before the files)
UNDO: list[Callable[[], None]] = []


def _noexec_mount(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
    """The wheel's folder mounted over itself ``noexec``, as a venv on a file system mounted so is (a container's
    volume, a hardened /home or /tmp): every file there and whole, and the kernel refuses to map their code."""
    folder = str(m.wheel)
    subprocess.run(["mount", "--bind", folder, folder], check=True, capture_output=True)
    UNDO.append(lambda: subprocess.run(["umount", folder], check=False, capture_output=True) and None)
    subprocess.run(["mount", "-o", "remount,bind,noexec", folder], check=True, capture_output=True)


SCRATCH = Path(tempfile.gettempdir()) / "cudnnload-more"  # the folders a breakage plants, removed after

_TORCH_HOLDER = """
import sys, time, torch
keep, blocks = int(sys.argv[1]), []
while torch.cuda.mem_get_info()[0] - keep >= 2**21:
    blocks.append(torch.empty(min(torch.cuda.mem_get_info()[0] - keep, 2**30), dtype=torch.uint8, device="cuda"))
print("ready", flush=True)
time.sleep(3600)
"""
_JAX_HOLDER = """
import time, jax.numpy as jnp
jnp.ones(8).block_until_ready()
print("ready", flush=True)
time.sleep(3600)
"""


def _holder(source: str, *argv: str, environ: dict[str, str] | None = None) -> Change:
    """Another process holding the GPU's memory while the programs run (ended after): PyTorch's allocations leaving
    ``argv[0]`` bytes free, or a JAX process as it starts with ``environ``."""
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        held = subprocess.Popen([sys.executable, "-c", source, *argv], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, **(environ or {})})
        def stop() -> None:
            held.kill()
            held.wait()
        UNDO.append(stop)
        assert held.stdout is not None and held.stdout.readline().strip() == "ready", "the holder did not start"
    return change


def _planted(folder: str, names: tuple[str, ...], source: Callable[[Machine], Path]) -> Change:
    """Copies of ``names`` from ``source`` (the wheel's folder, the system's) in ``SCRATCH/folder``: a shim or a
    sub-library copied somewhere by hand. ``folder`` "" is the folder the programs run in (an empty
    LD_LIBRARY_PATH entry's)."""
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        where = SCRATCH / folder if folder else Path(tempfile.gettempdir())
        if folder:
            shutil.rmtree(SCRATCH, ignore_errors=True)  # a run cut short left it
            where.mkdir(parents=True)
            kept.append((SCRATCH, None))
        for name in names:
            if (where / name).exists():
                _aside(where / name, kept)
            shutil.copy2(source(m) / name, where / name)
            kept.append((where / name, None))
    return change


def _linked(folder: str, name: str) -> Change:
    """A symbolic link in ``SCRATCH/folder`` to the wheel's ``name``: a file mapped through it has the link's folder
    as its $ORIGIN."""
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        shutil.rmtree(SCRATCH, ignore_errors=True)  # a run cut short left it
        (SCRATCH / folder).mkdir(parents=True)
        kept.append((SCRATCH, None))
        (SCRATCH / folder / name).symlink_to(m.wheel / name)
    return change


def _bare_names(folder: str) -> Change:
    """The system cuDNN's sub-libraries under their bare names (libcudnn_graph.so, ...: what a -dev package links) in
    ``SCRATCH/folder``: the shim asks for them only after its versioned names fail."""
    def change(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
        shutil.rmtree(SCRATCH, ignore_errors=True)  # a run cut short left it
        (SCRATCH / folder).mkdir(parents=True)
        kept.append((SCRATCH, None))
        for library in sorted(m.system.glob("libcudnn_*.so.9")):
            (SCRATCH / folder / library.name.removesuffix(".9")).symlink_to(library)
    return change


def _shadowing_wheel(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
    """A copy of the wheel's package folder (``nvidia/cudnn``: its ``__init__.py`` where it has one) holding only
    the shim, in a folder that comes first on PYTHONPATH: ``nvidia.cudnn``'s first path is there."""
    shutil.rmtree(SCRATCH, ignore_errors=True)  # a run cut short left it
    nvidia = SCRATCH / "shadow" / "nvidia"
    (nvidia / "cudnn" / "lib").mkdir(parents=True)
    kept.append((SCRATCH, None))
    for init in ("__init__.py", "cudnn/__init__.py"):
        if (m.wheel.parents[1] / init).exists():
            shutil.copy2(m.wheel.parents[1] / init, nvidia / init)
    shutil.copy2(m.wheel / "libcudnn.so.9", nvidia / "cudnn" / "lib" / "libcudnn.so.9")


def _site_hook(m: Machine, kept: list[tuple[Path, Path | None]]) -> None:
    """A ``sitecustomize.py`` in a folder first on PYTHONPATH that maps the system's shim with ctypes as Python
    starts: code planted in the interpreter's start, before any framework loads its own cuDNN."""
    shutil.rmtree(SCRATCH, ignore_errors=True)  # a run cut short left it
    (SCRATCH / "site-hook").mkdir(parents=True)
    kept.append((SCRATCH, None))
    (SCRATCH / "site-hook" / "sitecustomize.py").write_text(
        f"import ctypes\nctypes.CDLL({str(m.system / 'libcudnn.so.9')!r}, mode=ctypes.RTLD_GLOBAL)\n")


def _first_on_pythonpath(folder: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, (str(folder), str(frameworks.REPO),
                                                        os.environ.get("PYTHONPATH"))))}


def _wheel(m: Machine) -> Path:
    return m.wheel


def _system(m: Machine) -> Path:
    return m.system


MORE: tuple[tuple[Breakage, Change | None], ...] = (
    (Breakage("other-release-ops", "libcudnn_ops"), _replaced("libcudnn_ops.so.9", _other_release)),
    (Breakage("other-release-graph", "libcudnn_graph"), _replaced("libcudnn_graph.so.9", _other_release)),
    (Breakage("dangling-adv", "libcudnn_adv"), _replaced("libcudnn_adv.so.9", _dangling)),
    (Breakage("empty-graph", "libcudnn_graph"), _replaced("libcudnn_graph.so.9", _emptied)),
    (Breakage("nvrtc-gone", "nvrtc"), _gone("libnvrtc*")),
    (Breakage("cublaslt-gone", "cublasLt"), _gone("libcublasLt.so*")),
    (Breakage("etc-preload-system-graph", "ld.so.preload"), _etc_preload("libcudnn_graph.so.9")),
    (Breakage("cuda-visible-minus-one", "CUDA_VISIBLE_DEVICES", lambda m: {"CUDA_VISIBLE_DEVICES": "-1"}), None),
    # added 2026-12-03 (session 36), never run before their first run on the GPU machine
    (Breakage("other-release-shim", "libcudnn.so.9"), _replaced("libcudnn.so.9", _other_release)),
    (Breakage("lonely-shim-on-library-path", "LD_LIBRARY_PATH",
              lambda m: {"LD_LIBRARY_PATH": str(SCRATCH / "lonely-shim")}),
     _planted("lonely-shim", ("libcudnn.so.9",), _wheel)),
    (Breakage("system-graph-alone-on-library-path", "LD_LIBRARY_PATH",
              lambda m: {"LD_LIBRARY_PATH": str(SCRATCH / "graph-only")}),
     _planted("graph-only", ("libcudnn_graph.so.9",), _system)),
    (Breakage("empty-entry-system-ops-in-cwd", "LD_LIBRARY_PATH", lambda m: {"LD_LIBRARY_PATH": ":"}),
     _planted("", ("libcudnn_ops.so.9",), _system)),
    (Breakage("pythonpath-wheel-copy-shim-only", "cudnnload-more",
              lambda m: _first_on_pythonpath(SCRATCH / "shadow")), _shadowing_wheel),
    # added 2026-12-04 (session 40), never run before their first run on the GPU machine
    (Breakage("shim-gone", "libcudnn.so.9"), _replaced("libcudnn.so.9")),
    (Breakage("ops-gone", "libcudnn_ops"), _replaced("libcudnn_ops.so.9")),
    (Breakage("heuristic-gone", "libcudnn_heuristic"), _replaced("libcudnn_heuristic.so.9")),
    (Breakage("adv-gone", "libcudnn_adv"), _replaced("libcudnn_adv.so.9")),
    (Breakage("preload-nonexistent", "LD_PRELOAD",
              lambda m: {"LD_PRELOAD": "/nonexistent/libcudnn_graph.so.9"}), None),
    (Breakage("cudart-gone", "cudart"), _gone("libcudart.so*")),
    (Breakage("cuda-visible-out-of-range", "CUDA_VISIBLE_DEVICES", lambda m: {"CUDA_VISIBLE_DEVICES": "7"}), None),
    (Breakage("sitecustomize-maps-system-shim", "sitecustomize",
              lambda m: _first_on_pythonpath(SCRATCH / "site-hook")), _site_hook),
    (Breakage("jax-platforms-cpu", "JAX_PLATFORMS", lambda m: {"JAX_PLATFORMS": "cpu"}), None),
    (Breakage("shim-not-elf", "libcudnn.so.9"), _replaced("libcudnn.so.9", _not_elf)),
    (Breakage("shim-symlink-loop", "libcudnn.so.9"), _replaced("libcudnn.so.9", _loop)),
    (Breakage("shim-other-machine", "libcudnn.so.9"), _replaced("libcudnn.so.9", _other_machine)),
    (Breakage("ops-other-machine", "libcudnn_ops"), _replaced("libcudnn_ops.so.9", _other_machine)),
    (Breakage("cudnn-dist-info-gone", "nvidia-cudnn"), _dist_info_gone),
    # added 2026-12-04 (session 41), never run before its first run on the GPU machine
    (Breakage("wheel-on-noexec-mount", "noexec"), _noexec_mount),
    # added 2026-12-04 (session 43), never run before their first run on the GPU machine
    (Breakage("cnn-is-ops", "libcudnn_cnn"), _replaced("libcudnn_cnn.so.9", _sibling("libcudnn_ops.so.9"))),
    (Breakage("graph-is-directory", "libcudnn_graph"), _replaced("libcudnn_graph.so.9", _directory)),
    (Breakage("heuristic-other-release", "libcudnn_heuristic"),
     _replaced("libcudnn_heuristic.so.9", _other_release)),
    (Breakage("precompiled-other-release", "libcudnn_engines_precompiled"),
     _replaced("libcudnn_engines_precompiled.so.9", _other_release)),
    (Breakage("preload-wheel-graph", "LD_PRELOAD",
              lambda m: {"LD_PRELOAD": str(m.wheel / "libcudnn_graph.so.9")}), None),
    (Breakage("library-path-wheel", "LD_LIBRARY_PATH", lambda m: {"LD_LIBRARY_PATH": str(m.wheel)}), None),
    (Breakage("library-path-is-a-file", "LD_LIBRARY_PATH",
              lambda m: {"LD_LIBRARY_PATH": str(m.wheel / "libcudnn.so.9")}), None),
    (Breakage("nvrtc-builtins-gone", "nvrtc"), _gone("libnvrtc-builtins*")),
    (Breakage("system-shim-gone-cache-stale", "libcudnn.so.9"), _system_gone("libcudnn.so.9")),
    (Breakage("cudnn-log-to-missing-folder", "CUDNN_LOGDEST_DBG",
              lambda m: {"CUDNN_LOGLEVEL_DBG": "2", "CUDNN_LOGDEST_DBG": "/nonexistent/cudnn/log.txt"}), None),
    (Breakage("graph-is-ops", "libcudnn_graph"), _replaced("libcudnn_graph.so.9", _sibling("libcudnn_ops.so.9"))),
    (Breakage("shim-is-graph", "libcudnn.so.9"), _replaced("libcudnn.so.9", _sibling("libcudnn_graph.so.9"))),
    (Breakage("ops-cut-short", "libcudnn_ops"), _replaced("libcudnn_ops.so.9", _cut(4096))),
    (Breakage("graph-other-machine", "libcudnn_graph"), _replaced("libcudnn_graph.so.9", _other_machine)),
    (Breakage("precompiled-is-directory", "libcudnn_engines_precompiled"),
     _replaced("libcudnn_engines_precompiled.so.9", _directory)),
    (Breakage("preload-system-heuristic", "LD_PRELOAD",
              lambda m: {"LD_PRELOAD": str(m.system / "libcudnn_heuristic.so.9")}), None),
    (Breakage("preload-system-ops", "LD_PRELOAD", lambda m: {"LD_PRELOAD": str(m.system / "libcudnn_ops.so.9")}),
     None),
    # added 2026-12-04 (session 43, second batch), never run before their first run on the GPU machine
    (Breakage("ops-is-cnn", "libcudnn_ops"), _replaced("libcudnn_ops.so.9", _sibling("libcudnn_cnn.so.9"))),
    (Breakage("shim-is-ops", "libcudnn.so.9"), _replaced("libcudnn.so.9", _sibling("libcudnn_ops.so.9"))),
    (Breakage("precompiled-is-heuristic", "libcudnn_engines_precompiled"),
     _replaced("libcudnn_engines_precompiled.so.9", _sibling("libcudnn_heuristic.so.9"))),
    (Breakage("adv-is-ops", "libcudnn_adv"), _replaced("libcudnn_adv.so.9", _sibling("libcudnn_ops.so.9"))),
    (Breakage("preload-wheel-shim-through-link", "LD_PRELOAD",
              lambda m: {"LD_PRELOAD": str(SCRATCH / "link" / "libcudnn.so.9")}), _linked("link", "libcudnn.so.9")),
    (Breakage("library-path-system-bare-names", "LD_LIBRARY_PATH",
              lambda m: {"LD_LIBRARY_PATH": str(SCRATCH / "bare")}), _bare_names("bare")),
    # added 2026-12-05 (session 50), never run before their first run on the GPU machine: another process holding
    # the GPU's memory (bench/gpu_memory_held.py measured where the frameworks stop)
    (Breakage("gpu-memory-held", "holds", explained=("out-of-memory",)), _holder(_TORCH_HOLDER, str(256 << 20))),
    (Breakage("gpu-memory-mostly-held", ""), _holder(_TORCH_HOLDER, str(4 << 30))),
    (Breakage("gpu-memory-held-by-jax", "XLA_PYTHON_CLIENT_PREALLOCATE", explained=("out-of-memory",)),
     _holder(_JAX_HOLDER, environ={"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.995"})),
)


@contextlib.contextmanager
def changed(m: Machine, change: Change | None) -> Iterator[None]:
    kept: list[tuple[Path, Path | None]] = []
    try:
        if change is not None:
            change(m, kept)
        yield
    finally:
        while UNDO:
            UNDO.pop()()
        for path, copy in reversed(kept):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.is_symlink() or path.exists():
                path.unlink()
            if copy is not None:
                shutil.move(copy, path)
                shutil.rmtree(copy.parent, ignore_errors=True)


def main(names: list[str]) -> int:
    machine = frameworks.this_machine()
    if isinstance(machine, str):
        print(f"nothing to break: {machine}", file=sys.stderr)
        return 2
    failed = 0
    for breakage, change in MORE:
        if names and breakage.name not in names:
            continue
        started = time.monotonic()
        try:
            with changed(machine, change), tempfile.TemporaryDirectory() as tmp:
                frameworks.test_every_way_of_asking_agrees_with_what_the_framework_did(
                    machine, replace(breakage), Path(tmp))
            verdict = "agrees"
        except AssertionError as exc:
            failed += 1
            verdict = f"DISAGREES: {exc}"
        except Exception as exc:  # noqa: BLE001 - a breakage the harness cannot make or ask about is said
            failed += 1
            verdict = f"ERROR: {type(exc).__name__}: {exc}"
        print(f"{breakage.name:28s} {time.monotonic() - started:6.1f} s  {verdict[:1500]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
