"""Unit tests of the process model and the frameworks' routes, each rule on its own.

`resolve.process` (what LD_PRELOAD and a running process map first), `resolve.routes` (which shim each
framework's own loader gets: torch's preload by path and its cuBLAS prerequisite, the JAX plugin's
``import nvidia.cudnn``, the NEEDED rule, a preloaded shim winning), `judge.routes` (which calls count as
failing, which findings a framework reaches) and `judge.choose.need`. The real wheels' files are used where a
file must load; the rest is data.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from cudnnload.codes import ActionKind, Code, Effect, Severity, SubjectKind
from cudnnload.judge.choose import choose_for, need
from cudnnload.judge.consequences import Expectation
from cudnnload.judge.routes import Served, call_fails, scope, serve
from cudnnload.resolve.access import Access, Unreachable
from cudnnload.resolve.catalog import Call, Release
from cudnnload.resolve.consumers import Consumer, Need, Pin
from cudnnload.resolve.discovery import context
from cudnnload.resolve.process import Preload, loaded_names, preloaded
from cudnnload.resolve.routes import Route, _closed_on_path, _cuda, _nvidia_cudnn, route
from cudnnload.verdicts import Finding, Subject
from tests.wheels import lib_folder, site_folder

BASE = {key: value for key, value in os.environ.items() if key not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
NEW, OLD = "cu12-9.28.0.42", "cu12-9.0.0.312"


# Each framework as a surveyed release installs it (its loader is read from that row): the JAX CUDA plugin with
# the PJRT wheel it requires, which holds the loader; ONNX Runtime 1.22, whose CUDA provider NEEDs cuDNN.
RELEASES = {"torch": ("torch", "2.11.0", ()),
            "jax": ("jax-cuda13-plugin", "0.12.0.1", (("jax-cuda13-pjrt", "0.12.0.1"),)),
            "onnxruntime": ("onnxruntime-gpu", "1.22.0", ())}


def consumer(framework: str = "torch", *, version: str | None = None, site: str = "/site",
             pins: tuple[Pin, ...] = (), needs: tuple[Need, ...] = (), build: Release | None = None,
             build_major: int | None = None) -> Consumer:
    distribution, release, beside = RELEASES.get(framework, (framework, "2.11.0", ()))
    return Consumer(framework, distribution, version or release, site, pins, needs, build, build_major, "test",
                    beside=beside)


# --- resolve.process -------------------------------------------------------------------------------------

def test_a_bare_name_in_ld_preload_is_searched_like_a_needed_entry() -> None:
    """``LD_PRELOAD=libcudnn_graph.so.9`` (no '/') is looked up on LD_LIBRARY_PATH, as ld.so does."""
    old = lib_folder(OLD)
    ctx = context({**BASE, "LD_PRELOAD": "libcudnn_graph.so.9", "LD_LIBRARY_PATH": str(old)})
    first = ctx.preloads[0]
    assert (first.name, first.path, first.entry) == ("libcudnn_graph.so.9", str(old / "libcudnn_graph.so.9"),
                                                     "libcudnn_graph.so.9")
    assert first.soname == "libcudnn_graph.so.9"


def test_an_entry_given_twice_is_mapped_once() -> None:
    graph = str(lib_folder(OLD) / "libcudnn_graph.so.9")
    ctx = context({**BASE, "LD_PRELOAD": f"{graph} {graph}"})
    assert [p.path for p in ctx.preloads].count(graph) == 1


def test_a_running_processs_file_is_credited_to_the_entry_that_names_it(tmp_path: Path) -> None:
    """``doctor --pid``: the maps list the real path; LD_PRELOAD named it through a link. The file is the
    entry's (so a fix can name the entry), mapped once, and what it NEEDs comes from the same entry."""
    old = lib_folder(OLD)
    link = tmp_path / "ops.so"
    link.symlink_to(old / "libcudnn_ops.so.9")
    ctx = context(BASE)
    items = preloaded({"LD_PRELOAD": str(link)}, ctx.linker, ctx.elf, mapped=[str(old / "libcudnn_ops.so.9")])
    ops = [item for item in items if item.path == str(old / "libcudnn_ops.so.9")]
    assert len(ops) == 1 and ops[0].entry == str(link)
    graph = next(item for item in items if item.path and item.path.endswith("libcudnn_graph.so.9"))
    assert graph.entry == str(link)


def test_a_mapped_file_no_entry_names_keeps_no_entry() -> None:
    graph = str(lib_folder(NEW) / "libcudnn_graph.so.9")
    ctx = context(BASE)
    (item,) = preloaded({}, ctx.linker, ctx.elf, mapped=[graph])
    assert (item.path, item.entry, item.soname) == (graph, None, "libcudnn_graph.so.9")


def test_loaded_names_answer_to_soname_asked_name_and_path_not_to_a_file_name_never_asked_for() -> None:
    """_dl_name_match_p compares l_name and the names asked for (rule already-loaded); a running process's file,
    whose request is unknown, answers its file name too."""
    items = [Preload("libx.so", "/l/libx.so.1.2", "libx.so", soname="libx.so.1"), Preload("gone.so", None, "gone.so"),
             Preload("liby.so.2", "/l/liby.so.2.0", None)]
    assert loaded_names(items) == {"libx.so.1": "/l/libx.so.1.2", "libx.so": "/l/libx.so.1.2",
                                   "/l/libx.so.1.2": "/l/libx.so.1.2", "liby.so.2": "/l/liby.so.2.0",
                                   "/l/liby.so.2.0": "/l/liby.so.2.0", "liby.so.2.0": "/l/liby.so.2.0"}


def test_a_preload_that_is_not_elf_is_ignored_with_ld_sos_words(tmp_path: Path) -> None:
    junk = tmp_path / "junk.so"
    junk.write_text("not an ELF file\n")
    ctx = context({**BASE, "LD_PRELOAD": str(junk)})
    assert ctx.preloads[0].path is None
    assert "cannot be preloaded" in (ctx.preloads[0].error or "") and "ignored" in (ctx.preloads[0].error or "")


# --- resolve.routes ---------------------------------------------------------------------------------------

def test_import_nvidia_cudnn_crosses_namespace_packages_but_not_a_regular_one(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    (first / "nvidia" / "cublas").mkdir(parents=True)  # a namespace package without cudnn
    (second / "nvidia" / "cudnn").mkdir(parents=True)
    assert _nvidia_cudnn([str(first), str(second)]) == str(second / "nvidia" / "cudnn")
    (first / "nvidia" / "__init__.py").write_text("")  # a regular package: the search stops there
    assert _nvidia_cudnn([str(first), str(second)]) is None
    assert _nvidia_cudnn([str(tmp_path / "none")]) is None


@pytest.mark.parametrize(("pins", "version", "cuda"), [
    ((Pin("nvidia-cudnn-cu12", "==9.10.2.21", (), None),), "2.8.0", 12),
    ((), "2.11.0+cu130", 13),
    ((), "2.5.1+cu124", 12),
    ((), "2.11.0", None),
    ((), "2.11.0+cpu", None),
])
def test_the_cuda_major_of_a_build_from_its_pin_else_its_local_version(pins: tuple[Pin, ...], version: str,
                                                                       cuda: int | None) -> None:
    assert _cuda(consumer(pins=pins, version=version)) == cuda


def test_the_cudnn_major_a_framework_asks_for() -> None:
    assert consumer(needs=(Need("libcudnn.so.8", "/t/lib.so"),), build_major=9).cudnn_major == 8
    assert consumer(build_major=8).cudnn_major == 8
    assert consumer(pins=(Pin("nvidia-cudnn-cu11", "<9,>=8.5", (), None),)).cudnn_major == 8
    assert consumer().cudnn_major == 9


def _wheel_site(tmp_path: Path, *, cudnn: str = "cudnn", cublas: tuple[str, ...] = ("libcublasLt.so.12",
                                                                                    "libcublas.so.12")) -> Path:
    """A site-packages with the 9.28 wheel's files under nvidia/<cudnn>/lib and cuBLAS stand-ins."""
    site = tmp_path / "site"
    shutil.copytree(lib_folder(NEW), site / "nvidia" / cudnn / "lib", copy_function=os.link)
    (site / "nvidia" / "cublas" / "lib").mkdir(parents=True)
    for name in cublas:
        (site / "nvidia" / "cublas" / "lib" / name).write_bytes(b"")
    return site


def test_torch_opens_the_first_wheels_shim_by_path(tmp_path: Path) -> None:
    site = _wheel_site(tmp_path)
    got = route(consumer(site=str(site)), context(BASE), [str(site)])
    assert got.shim == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert got.how.startswith("by path: torch/__init__.py _preload_cuda_deps()") and got.error is None


def test_torch_cu13_finds_the_shim_in_nvidia_cu13_lib(tmp_path: Path) -> None:
    """torch 2.11 +cu130 also globs ``nvidia/cu13/lib`` (the CUDA 13 wheels' shared folder)."""
    site = _wheel_site(tmp_path, cudnn="cu13")
    got = route(consumer(site=str(site), version="2.11.0+cu130"), context(BASE), [str(site)])
    assert got.shim == str(site / "nvidia" / "cu13" / "lib" / "libcudnn.so.9")


def test_torchs_preload_stops_before_cudnn_without_cublaslt(tmp_path: Path) -> None:
    """No cuBLASLt on sys.path: _preload_cuda_deps raises before cuDNN (and the error is swallowed); the
    shim is then what libtorch_cuda.so's NEEDED search finds, and the route says why."""
    site = _wheel_site(tmp_path, cublas=("libcublas.so.12",))
    elsewhere = lib_folder(OLD)
    got = route(consumer(site=str(site)), context({**BASE, "LD_LIBRARY_PATH": str(elsewhere)}), [str(site)])
    assert "libcublasLt.so.* is on no sys.path entry" in got.how
    assert got.shim != str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")


def test_torch_2_14s_preload_goes_on_to_cudnn_without_cublas(tmp_path: Path) -> None:
    """From torch 2.14 the preload after libtorch_global_deps loads is best-effort
    (``_preload_cuda_deps(required=False)``): no cuBLAS on sys.path, and the wheel's shim is still opened by path."""
    site = _wheel_site(tmp_path, cublas=())
    got = route(consumer(site=str(site), version="2.14.1"), context(BASE), [str(site)])
    assert got.shim == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert got.how.startswith("by path: torch/__init__.py _preload_cuda_deps()")


def test_a_shim_of_another_major_first_on_sys_path_does_not_answer_torchs_needed(tmp_path: Path) -> None:
    """A PYTHONPATH folder holding the cuDNN 8 wheel comes first on sys.path (fix differential 3-8516): torch's
    glob ``libcudnn.so.*[0-9]`` opens its libcudnn.so.8 there, mapped under its own SONAME, and libtorch_cuda.so's
    DT_NEEDED libcudnn.so.9 is searched for as if nothing had been preloaded: the real torch 2.14.1 runs on it."""
    site = _wheel_site(tmp_path)
    deps = tmp_path / "pydeps"
    shutil.copytree(lib_folder("cu12-8.9.7.29"), deps / "nvidia" / "cudnn" / "lib", copy_function=os.link)
    shutil.copytree(site / "nvidia" / "cublas", deps / "nvidia" / "cublas")
    elsewhere = lib_folder(OLD)
    got = route(consumer(site=str(site), version="2.14.1"), context({**BASE, "LD_LIBRARY_PATH": str(elsewhere)}),
                [str(deps), str(site)])
    assert got.shim == str(elsewhere / "libcudnn.so.9")
    assert f"opens {deps / 'nvidia' / 'cudnn' / 'lib' / 'libcudnn.so.8'}, another major" in got.how


class _Closed(Access):
    """This user's view where ``folder`` may not be searched (the suite runs as root, who may search any)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(user=65534)
        self.folder = str(folder)

    def unreachable(self, path: str, _hops: int = 0) -> Unreachable | None:
        return Unreachable(self.folder, True, 0, "root") if path.startswith(self.folder + "/") else None


def _recorded_site(tmp_path: Path) -> tuple[Path, Path]:
    """A site holding torch's wheels, nvidia-cudnn-cu12 9.28 with a RECORD that lists its shim: the site and the
    cuDNN folder."""
    site = _wheel_site(tmp_path)
    info = site / "nvidia_cudnn_cu12-9.28.0.42.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: nvidia-cudnn-cu12\nVersion: 9.28.0.42\n\n")
    (info / "RECORD").write_text("nvidia/cudnn/lib/libcudnn.so.9,,\nnvidia/cudnn/lib/libcudnn_graph.so.9,,\n")
    return site, site / "nvidia" / "cudnn" / "lib"


def test_a_wheel_folder_the_user_cannot_enter_is_recorded_and_opened_with_its_wheel_put_back(tmp_path: Path) -> None:
    """torch's pinned wheel's folder 0700 to nobody (fix differential 1-1331): its search by path passes over it and
    finds no cuDNN. The route records the folder and the distribution whose RECORD lists a shim there; the fix
    opens it (as its owner) and puts the wheel back whole, not the reinstall alone, which leaves the mode."""
    site, folder = _recorded_site(tmp_path)
    closed = _closed_on_path([str(site)], 9, _Closed(folder))
    assert closed is not None and (closed.stop.path, closed.user) == (str(folder), 65534)
    assert closed.holder.name == "nvidia-cudnn-cu12" and _closed_on_path([str(site)], 8, _Closed(folder)) is None
    pinned = consumer(site=str(site), pins=(Pin("nvidia-cudnn-cu12", "==9.28.0.42", (), "9.28.0.42"),))
    got = Route(pinned, None, "no cuDNN", error="libcudnn.so.9: not found", closed=closed)
    served = serve(got, None, context(BASE), gpu=False, device_count=0, environ=BASE, python=None)
    (finding,) = [f for f in served.findings if f.code is Code.CONSUMER_BROKEN]
    kinds = [a.do for a in finding.fix.actions]
    assert kinds[:2] == [ActionKind.CHMOD, ActionKind.PIP_INSTALL] and ActionKind.DELETE in kinds
    assert finding.fix.actions[0].path == str(folder)
    # a wheel there that the framework's pin does not allow: the folder opened, and the pinned wheel installed
    other = consumer(site=str(site), pins=(Pin("nvidia-cudnn-cu12", "==9.24.0.43", (), "9.28.0.42"),))
    served = serve(replace(got, consumer=other), None, context(BASE), gpu=False, device_count=0, environ=BASE,
                   python=None)
    (finding,) = [f for f in served.findings if f.code is Code.CONSUMER_BROKEN]
    assert [a.do for a in finding.fix.actions] == [ActionKind.CHMOD, ActionKind.PIP_INSTALL]
    assert finding.fix.actions[1].requirements == ("nvidia-cudnn-cu12==9.24.0.43",)


def test_a_loader_by_path_that_passed_over_its_closed_wheel_folder_is_fixed_by_opening_it(tmp_path: Path) -> None:
    """torch as nobody, its wheel's folder 0700, a lone shim in the working folder found through an empty
    LD_LIBRARY_PATH entry (fix differential 3-9269): its preload by path passes over the closed folder, its NEEDED
    meets the lone shim and its calls fail. The route records the closed folder though it found a shim, and the fix
    of the failing calls opens it (torch then finds its own first), not the lone shim's install put back whole."""
    from cudnnload.diagnose.inventory import judged_install_of

    site, folder = _recorded_site(tmp_path)
    lone = tmp_path / "work"
    lone.mkdir()
    os.link(lib_folder(NEW) / "libcudnn.so.9", lone / "libcudnn.so.9")
    ctx = context({**BASE, "LD_LIBRARY_PATH": str(lone)})
    closed = _closed_on_path([str(site)], 9, _Closed(folder))
    torch = consumer(site=str(site))
    got = Route(torch, str(lone / "libcudnn.so.9"), "libtorch_cuda.so NEEDs libcudnn.so.9", closed=closed,
                kind="by-path")
    install = judged_install_of(str(lone / "libcudnn.so.9"), ctx, "test")
    served = serve(got, install, ctx, gpu=False, device_count=0, environ=BASE, python=None)
    failing = [f for f in served.findings if f.code is Code.FRAMEWORK_CALLS_FAIL]
    assert failing and all(f.fix.actions[0].do is ActionKind.CHMOD and f.fix.actions[0].path == str(folder)
                           for f in failing), failing
    # a shim the loader found in a wheel folder on sys.path is what it found first: nothing closed to record
    assert not _fell_past_for(torch, str(folder / "libcudnn.so.9"), [str(site)])
    assert _fell_past_for(torch, str(lone / "libcudnn.so.9"), [str(site)])


def test_a_release_older_than_the_build_met_past_a_closed_wheel_folder_is_fixed_by_opening_it(tmp_path: Path) -> None:
    """torch as nobody, its wheel's folder 0700, a partial copy of 9.0 first on LD_LIBRARY_PATH (fix differential
    3-9138): torch refuses 9.0 as older than its build; the fix opens its own folder, where it finds its own first,
    and does not only put the closed folder's wheel back, which leaves it closed."""
    from cudnnload.diagnose.inventory import judged_install_of

    site, folder = _recorded_site(tmp_path)
    copy = tmp_path / "app" / "lib"
    copy.mkdir(parents=True)
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
        os.link(lib_folder(OLD) / name, copy / name)
    ctx = context({**BASE, "LD_LIBRARY_PATH": str(copy)})
    torch = consumer(site=str(site), build=Release(9, 24, 0))
    got = Route(torch, str(copy / "libcudnn.so.9"), "libtorch_cuda.so NEEDs libcudnn.so.9",
                closed=_closed_on_path([str(site)], 9, _Closed(folder)), kind="by-path")
    served = serve(got, judged_install_of(str(copy / "libcudnn.so.9"), ctx, "test"), ctx, gpu=False, device_count=0,
                   environ=BASE, python=None)
    (older,) = [f for f in served.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD]
    assert older.fix.actions[0].do is ActionKind.CHMOD and older.fix.actions[0].path == str(folder), older.fix


def _cut_in_copy(tmp_path: Path, name: str) -> Path:
    """A copy (hard links) of the 9.28 wheel's folder with ``name`` cut at 4096 bytes, inside a PT_LOAD segment; the
    cut file's path."""
    folder = tmp_path / "lib"
    shutil.copytree(lib_folder(NEW), folder, copy_function=os.link)
    cut = folder / name
    data = cut.read_bytes()[:4096]
    cut.unlink()
    cut.write_bytes(data)
    return cut


def test_a_shim_cut_inside_a_segment_fails_a_framework_whatever_calls_it_makes(tmp_path: Path) -> None:
    """torch's NEEDED meets a shim cut at 4096 bytes, inside a PT_LOAD segment (fix differential 3-9362): the load
    itself kills the process (SIGBUS), before any of the functions torch calls; torch fails on it, and the shim's
    errors are torch's, not warnings "their calls load it and work"."""
    from cudnnload.diagnose.inventory import judged_install_of

    shim = _cut_in_copy(tmp_path, "libcudnn.so.9")
    ctx = context({**BASE, "LD_LIBRARY_PATH": str(shim.parent)})
    got = Route(consumer(), str(shim), "libtorch_cuda.so NEEDs libcudnn.so.9", kind="by-path")
    served = serve(got, judged_install_of(str(shim), ctx, "test"), ctx, gpu=False, device_count=0, environ=BASE,
                   python=None)
    assert not served.works
    (failing,) = [f for f in served.findings if f.code is Code.FRAMEWORK_CALLS_FAIL]
    assert "libcudnn.so.9 kills the process (SIGBUS)" in failing.message
    assert str(shim) in served.reached


def test_a_sublibrary_cut_short_fails_only_the_framework_whose_calls_load_it(tmp_path: Path) -> None:
    """libcudnn_ops cut at 4096 bytes (the H200, session 43, breakage ops-cut-short): torch's convolution never
    loads it and ran; JAX's cudnnCreateTensorDescriptor loads it and JAX died of SIGBUS. The exercise dies at
    cudnnOpsVersionCheck, a call neither makes: each framework is judged on its own calls, in its own order."""
    from cudnnload.diagnose.inventory import judged_install_of

    ops = _cut_in_copy(tmp_path, "libcudnn_ops.so.9")
    shim = str(ops.parent / "libcudnn.so.9")
    ctx = context({**BASE, "LD_LIBRARY_PATH": str(lib_folder("cublas-cu12-12.9.1.4"))})  # the heuristic's cuBLASLt
    install = judged_install_of(shim, ctx, "test")
    fared = {framework: serve(Route(consumer(framework), shim, "by path", kind="by-path"), install, ctx, gpu=False,
                              device_count=0, environ=BASE, python=None) for framework in ("torch", "jax")}
    assert fared["torch"].works and not fared["jax"].works
    (failing,) = [f for f in fared["jax"].findings if f.code is Code.FRAMEWORK_CALLS_FAIL]
    assert "cudnnCreateTensorDescriptor" in failing.message and "SIGBUS" in failing.message, failing.message
    assert str(ops) in fared["jax"].reached and str(ops) not in fared["torch"].reached


def test_a_shim_that_lacks_the_version_torchs_libraries_need_stops_torch_as_the_real_loader_does(
        tmp_path: Path) -> None:
    """Another cuDNN library (graph) copied over the wheel's shim (the H200, session 43, breakage shim-is-graph):
    torch's preload by path opens it, and libtorch's NEEDED binds to that object (the same inode), which does not
    define the version node ``libcudnn.so.9``: the import fails. A library linked against the real shim stands for
    libtorch_cuda.so; the real loader says the same."""
    import subprocess
    import sys

    from tests.stubs import linked_to_shim

    site = _wheel_site(tmp_path)
    folder = site / "nvidia" / "cudnn" / "lib"
    (tmp_path / "torch" / "lib").mkdir(parents=True)
    caller = linked_to_shim(tmp_path / "torch" / "lib" / "libtorch_cuda.so", folder)
    (folder / "libcudnn.so.9").unlink()
    shutil.copy2(folder / "libcudnn_graph.so.9", folder / "libcudnn.so.9")
    real = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(caller)!r})"], capture_output=True,
                          text=True, env={**BASE, "LD_LIBRARY_PATH": ""}, check=False)
    assert "version `libcudnn.so.9' not found" in real.stderr, real.stderr

    torch = replace(consumer(site=str(site)), needs=(Need("libcudnn.so.9", str(caller)),))
    got = route(torch, context(BASE), [str(site)])
    assert got.shim == str(folder / "libcudnn.so.9") and got.stops is not None
    assert "version `libcudnn.so.9' not found" in got.stops and "libcudnn_graph.so.9" in got.stops, got.stops
    whole = route(torch, context(BASE), [str(_wheel_site(tmp_path / "whole"))])
    assert whole.stops is None


def _fell_past_for(torch: Consumer, shim: str, site_paths: list[str]) -> bool:
    from cudnnload.resolve.routes import _fell_past, consumer_load

    return _fell_past(consumer_load(torch)[1], shim, site_paths)


def test_a_preloaded_shim_wins_over_the_frameworks_own(tmp_path: Path) -> None:
    site = _wheel_site(tmp_path)
    old_shim = str(lib_folder(OLD) / "libcudnn.so.9")
    got = route(consumer(site=str(site)), context({**BASE, "LD_PRELOAD": old_shim}), [str(site)])
    assert (got.shim, got.variable, got.entry) == (old_shim, "LD_PRELOAD", old_shim)
    assert got.opened == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert "its calls bind to that shim" in got.how


def test_jax_opens_nvidia_cudnns_shim_by_path(tmp_path: Path) -> None:
    site = _wheel_site(tmp_path)
    got = route(consumer("jax", site=str(site)), context(BASE), [str(site)])
    assert got.shim == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert "_load_nvidia_libraries()" in got.how


def test_jax_without_the_wheel_says_what_xla_searched(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    got = route(consumer("jax", site=str(empty)), context(BASE), [str(empty)])
    assert "no nvidia.cudnn package on sys.path" in got.how
    if got.shim is None:
        assert got.error


def test_a_needed_name_that_finds_no_cudnn_file_is_an_error(tmp_path: Path) -> None:
    """The generic rule (ONNX Runtime): the framework library's NEEDED searched from it; a file that is no
    cuDNN under that name gives no shim."""
    folder = tmp_path / "lib"
    folder.mkdir()
    got = route(consumer("onnxruntime", needs=(Need("libcudnn.so.9", str(folder / "provider.so")),)),
                context({**BASE, "LD_LIBRARY_PATH": str(tmp_path / "nothing")}), [])
    assert got.shim is None and got.error


# --- judge.routes -----------------------------------------------------------------------------------------

CHECK = Call("check", "cudnnOpsVersionCheck")
CREATE = Call("create", "cudnnCreate", healthy="CUDNN_STATUS_NOT_INITIALIZED", needs_gpu=True)


@pytest.mark.parametrize(("expected", "fails"), [
    (Expectation(CHECK, "value", value=1), False),
    (Expectation(CHECK, "absent"), False),
    (Expectation(CHECK, Effect.STATUS.value, status=0), False),
    (Expectation(CHECK, Effect.STATUS.value, status=1008, cause="ops"), True),
    (Expectation(CREATE, Effect.STATUS.value, status=1001), False),  # its healthy answer without a GPU
    (Expectation(CREATE, Effect.STATUS.value, status=1001, cause="graph"), True),
    (Expectation(CHECK, Effect.ABORT.value, cause="graph"), True),
    (Expectation(CHECK, Effect.NO_START.value), True),
])
def test_which_calls_count_as_failing(expected: Expectation, fails: bool) -> None:
    assert call_fails(expected) is fails


def _served(reached: set[str], label: str = "torch") -> Served:
    return Served(Route(consumer(label), "/w/libcudnn.so.9", "test"), None, None, (), (), frozenset(reached))


def _error(path: str, library: str | None = None, kind: SubjectKind = SubjectKind.FILE) -> Finding:
    return Finding(Code.MISSING_SUBLIBRARY, "x is missing", Subject(kind, path, library))


def test_scope_leaves_findings_alone_without_frameworks() -> None:
    finding = _error("/w/libcudnn_cnn.so.9", "cnn")
    assert scope([finding], []) == (finding,)


def test_an_error_no_framework_reaches_becomes_a_warning_said_so() -> None:
    (scoped,) = scope([_error("/w/libcudnn_cnn.so.9", "cnn")], [_served({"/w/libcudnn.so.9", "/w/graph"})])
    assert scoped.severity is Severity.WARNING
    assert scoped.message.endswith("(not reached by torch 2.11.0: their calls do not load it)")


def test_an_error_about_the_shim_a_working_framework_calls_is_a_warning_and_one_that_fails_keeps_it() -> None:
    """A 9.14 shim copied over the wheel's 9.19 (the H200): JAX calls it and works (its record mismatch is said,
    as a warning of what JAX loads); torch, which stops at its version check, keeps the error."""
    shim = "/w/libcudnn.so.9"
    mismatch = Finding(Code.RECORD_MISMATCH, "not the file that was installed", Subject(SubjectKind.DISTRIBUTION,
                                                                                          shim, "shim"))
    (scoped,) = scope([mismatch], [_served(set(), "jax")])
    assert scoped.severity is Severity.WARNING and scoped.message.endswith(": their calls load it and work)")
    stops = Finding(Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD, "torch stops", Subject(SubjectKind.CONSUMER, "/site"))
    failing = replace(_served({shim}), findings=(stops,))
    (kept,) = scope([mismatch], [_served(set(), "jax"), failing])
    assert kept.severity is Severity.ERROR


@pytest.mark.parametrize("reached", ["/w/libcudnn_graph.so.9", "/w/graph"])
def test_an_error_reached_by_path_or_by_folder_and_key_stays_an_error(reached: str) -> None:
    (scoped,) = scope([_error("/w/libcudnn_graph.so.9", "graph")], [_served({reached})])
    assert scoped.severity is Severity.ERROR


def test_an_install_finding_is_reached_through_its_folder_and_library() -> None:
    (scoped,) = scope([_error("/w", "graph", SubjectKind.INSTALL)], [_served({"/w/graph"})])
    assert scoped.severity is Severity.ERROR


def test_findings_about_no_file_keep_their_severity() -> None:
    finding = Finding(Code.CONSUMER_BROKEN, "torch finds no cuDNN", Subject(SubjectKind.CONSUMER, "/site"))
    assert scope([finding], [_served(set())]) == (finding,)


def test_no_cudnn_found_is_a_warning_when_the_frameworks_load_their_own() -> None:
    finding = Finding(Code.NO_CUDNN, "no cuDNN found", Subject(SubjectKind.PROGRAM, "/usr/bin/python3"))
    if finding.severity is not Severity.ERROR:
        pytest.skip("no-cudnn is not an error here")
    (scoped,) = scope([finding], [_served({"/w/libcudnn.so.9"})])
    assert scoped.severity is Severity.WARNING and scoped.message.endswith("torch 2.11.0 load their own")


# --- judge.choose ------------------------------------------------------------------------------------------

def test_need_says_the_build_rule_and_the_pins() -> None:
    pinned = consumer(build=Release(9, 19, 0), pins=(Pin("nvidia-cudnn-cu13", "==9.19.0.56", (), None),))
    assert need(pinned) == ("torch 2.11.0: cuDNN 9.x >= 9.19 (its build, 9.19.0), "
                            "nvidia-cudnn-cu13==9.19.0.56")
    assert need(consumer("tensorflow", build_major=9)) == "tensorflow 2.11.0: cuDNN 9"
    assert need(consumer("onnxruntime")) == "onnxruntime-gpu 1.22.0: any cuDNN"


def test_choose_for_without_installs_refuses_with_the_needs() -> None:
    choice = choose_for([], consumers=[consumer(build=Release(9, 19, 0))])
    assert choice.install is None
    assert choice.rejected[-1] == "the frameworks need: torch 2.11.0: cuDNN 9.x >= 9.19 (its build, 9.19.0)"


# --- verdicts.Fix: the JSON contract with alternatives ----------------------------------------------------

def test_a_fix_with_an_alternative_says_both_and_keeps_them_apart_in_json() -> None:
    from cudnnload.verdicts import fix, remove_entry, run

    cure = fix(remove_entry("LD_PRELOAD", "/opt/old/libcudnn.so.9"),
               alternatives=[run(["cudnnload", "run", "--for", "torch", "--"])])
    assert cure.text == "remove /opt/old/libcudnn.so.9 from LD_PRELOAD; or " + str(cure.alternatives[0])
    assert cure.json() == {"text": cure.text,
                           "actions": [{"do": "env-remove-entry", "variable": "LD_PRELOAD",
                                        "entry": "/opt/old/libcudnn.so.9"}],
                           "alternatives": [{"do": "run", "argv": ["cudnnload", "run", "--for", "torch", "--"]}]}
    assert "alternatives" not in fix(remove_entry("LD_PRELOAD", "/x")).json()
    assert fix().json() == {"text": None, "actions": []} and not fix()


# --- diagnose.observe: a run's own verdict -----------------------------------------------------------------

def _seen(returncode: int | None = 0, *, signal: str | None = None, messages: tuple[str, ...] = (),
          shims: tuple[str, ...] = (), processes: int = 1, stderr: tuple[str, ...] = ()) -> object:
    from cudnnload.diagnose.lddebug import Opened
    from cudnnload.diagnose.observe import Observation

    libraries = tuple(Opened(path, os.path.basename(path), "/app", "dlopen", "direct-path", None, True)
                      for path in shims)
    return Observation(("/usr/bin/app", "--x"), returncode, signal, False, 0.1, libraries, (), (), messages, (),
                       None, processes, stderr_tail=stderr)


def test_a_run_that_ended_well_demotes_what_it_did_not_hit() -> None:
    from cudnnload.diagnose.observe import _as_run

    finding = _error("/w/libcudnn_cnn.so.9", "cnn")
    (said,) = _as_run([finding], _seen(0), {})  # type: ignore[arg-type]
    assert said.severity is Severity.WARNING and "(not hit by this run: app ended with status 0)" in said.message


def test_a_run_that_printed_cudnns_loading_error_keeps_it() -> None:
    from cudnnload.diagnose.observe import _as_run

    finding = _error("/w/libcudnn_cnn.so.9", "cnn")
    seen = _seen(0, messages=("Could not load library libcudnn_cnn.so.9",))
    assert _as_run([finding], seen, {}) == (finding,)  # type: ignore[arg-type]
    assert _as_run([finding], _seen(1), {}) == (finding,)  # type: ignore[arg-type]


def test_the_headline_of_a_healthy_run_names_the_cudnn_and_the_workers() -> None:
    from cudnnload.diagnose.observe import _headline

    seen = _seen(0, shims=("/w/libcudnn.so.9",), processes=3)
    assert _headline(seen, [], [], {}) == "app ran with cuDNN from /w (3 processes)"  # type: ignore[arg-type]


def test_a_run_out_of_the_logs_sight_is_named_by_what_its_maps_showed_in_the_headline_and_the_finding() -> None:
    """A program that replaced itself with one started without the log's switches (``env -i``): where the maps'
    sampler caught only a cuDNN sub-library, the headline names its folder, and the run is then not said to be
    wholly unseen (session 60's note: the headline took any cuDNN file, the finding a shim only)."""
    from cudnnload.diagnose.observe import _headline, _run_findings

    unseen = replace(_seen(0), unwatched="its log ends as python3 starts")  # type: ignore[type-var]
    caught = replace(unseen, unlogged=("/w/libcudnn_graph.so.9",))  # type: ignore[type-var]
    ctx = context(environ={})
    assert _headline(caught, [], [], {}).startswith("app ran with cuDNN from /w (seen in its maps")  # type: ignore
    assert Code.PROGRAM_UNWATCHED not in {f.code for f in _run_findings(caught, {}, [], ctx)}  # type: ignore
    assert "what it loaded is not known" in _headline(unseen, [], [], {})  # type: ignore[arg-type]
    assert Code.PROGRAM_UNWATCHED in {f.code for f in _run_findings(unseen, {}, [], ctx)}  # type: ignore


def test_the_headline_of_a_failing_run_puts_the_cause_and_the_variable_first() -> None:
    from cudnnload.diagnose.observe import _headline
    from cudnnload.verdicts import fix, remove_entry

    cause = Finding(Code.MIXED_RELEASE, "is cuDNN 9.0.0, the rest of the folder is 9.28.0",
                    Subject(SubjectKind.FILE, "/old/libcudnn_graph.so.9", "graph"),
                    fix(remove_entry("LD_PRELOAD", "/old/libcudnn_graph.so.9")))
    line = _headline(_seen(None, signal="SIGABRT"), [cause], [], {})  # type: ignore[arg-type]
    assert line == ("app stopped (died of SIGABRT): is cuDNN 9.0.0, the rest of the folder is 9.28.0, because "
                    "LD_PRELOAD holds /old/libcudnn_graph.so.9")


def test_the_headline_without_a_finding_reads_the_programs_stderr() -> None:
    from cudnnload.diagnose.observe import _headline

    seen = _seen(1, stderr=("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: "
                            "cannot open shared object file: No such file or directory",))
    line = _headline(seen, [], [], {})  # type: ignore[arg-type]
    assert line.startswith("app exited with status 1 with no cuDNN; its last lines read as: ")


def test_a_log_ending_inside_a_lookup_is_a_miss_only_when_the_process_ended_by_itself() -> None:
    """glibc stops at a file it opened and cannot use ("file too short"): a program's start exits 127 there and
    the log ends inside that lookup (fix differential 1-440); a process killed at the deadline hung there."""
    from cudnnload.diagnose.lddebug import parse

    lines = ["7:\tfile=libcudnn.so.9 [0];  needed by /bin/program [0]\n", "7:\tfind library=libcudnn.so.9 [0]; "
             "searching\n", "7:\t search path=/x\t\t(LD_LIBRARY_PATH)\n", "7:\t  trying file=/x/libcudnn.so.9\n"]
    log = parse(lines)[7]
    assert log.missed == () and log.unfinished is not None and log.unfinished.name == "libcudnn.so.9"
    assert log.stuck_opening == "/x/libcudnn.so.9"


def test_a_miss_of_another_major_than_the_library_that_loaded_is_a_miss() -> None:
    """torch's libcublas.so.13 looked up in vain beside a cuDNN's libcublas.so.12 (fix differential 1-451)."""
    from cudnnload.diagnose.observe import _stem_major

    assert _stem_major("/a/libcublas.so.12.9.1.4") == ("libcublas", "12")
    assert _stem_major("libcublas.so.13") == ("libcublas", "13") and _stem_major("libcudnn.so") == ("libcudnn", "")


def test_misses_are_grouped_by_major_and_the_one_the_program_printed_comes_first() -> None:
    """torch's preload glob failing on a ``libcudnn.so.8`` by path, then ``libtorch_python.so`` missing the
    ``libcudnn.so.9`` its ImportError names (fix differential 3-18279): two groups, the printed one first; a bare
    name joins its asker's last versioned miss (the v9 shim's X.so.9 then X.so)."""
    from types import SimpleNamespace

    from cudnnload.diagnose.lddebug import Missed
    from cudnnload.diagnose.observe import _failed_lookups

    missed = (Missed("/v/nvidia/cudnn/lib/libcudnn.so.8", "/p/_ctypes.so", "dlopen", ()),
              Missed("libcudnn.so.9", "/v/torch/lib/libtorch_python.so", "needed", ("/v/torch/lib/libcudnn.so.9",)),
              Missed("libcudnn_graph.so.9", "/s/libcudnn.so.9", "dlopen", ()),
              Missed("libcudnn_graph.so", "/s/libcudnn.so.9", "dlopen", ()))
    seen = SimpleNamespace(libraries=(), reused=(), missed=missed, stderr_tail=(
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",))
    groups = _failed_lookups(seen)  # type: ignore[arg-type]
    assert list(groups) == [("libcudnn", "9"), ("libcudnn", "8"), ("libcudnn_graph", "9")]
    assert [m.name for m in groups["libcudnn_graph", "9"]] == ["libcudnn_graph.so.9", "libcudnn_graph.so"]


def test_a_folder_whose_sublibraries_the_repair_takes_away_is_no_place_to_point_a_framework(tmp_path: Path) -> None:
    """`_shim_on_path` in a world where the repair has uninstalled a distribution: its shim may stay (another
    distribution's record lists it too) while its ops goes; that folder no longer holds what a framework's calls
    need, in the model's world as on disk."""
    from cudnnload.resolve.routes import _shim_on_path

    site = _wheel_site(tmp_path)
    folder = site / "nvidia" / "cudnn" / "lib"
    assert _shim_on_path([str(site)], 9, context(BASE)) == str(folder)
    gone = frozenset({str(folder / "libcudnn_ops.so.9")})
    assert _shim_on_path([str(site)], 9, context(BASE, gone=gone)) is None


@pytest.mark.parametrize(("pin", "first"), [(Pin("nvidia-cudnn-cu13", "==9.24.0.43", (), None), ActionKind.PIP_INSTALL),
                                            (Pin("nvidia-cudnn-cu12", "==9.28.0.42", (), None), ActionKind.ENV_SET)])
def test_a_copy_its_search_does_not_reach_is_pointed_at_only_when_its_pin_allows_it(
        tmp_path: Path, pin: Pin, first: ActionKind) -> None:
    """Fix differential 3-8695: torch (cu13, pinned to 9.24) finds no cuDNN, and the user site holds cu12's 9.28
    wheel, which its search does not reach. Pointing torch at it (LD_LIBRARY_PATH) gives it a wheel its pin does
    not allow, whose cuBLAS 12 is missing too: the pinned wheel is put back first, the folder kept as the
    alternative. Where the copy is a wheel the pin allows, LD_LIBRARY_PATH stays first."""
    user = tmp_path / "user"
    shutil.copytree(site_folder(NEW), user, copy_function=os.link, ignore=shutil.ignore_patterns(".unpacked"))
    folder = str(user / "nvidia" / "cudnn" / "lib")
    torch = consumer(site=str(tmp_path / "venv"), version="2.14.1", pins=(pin,))
    from cudnnload.resolve.routes import _holder_of

    holder = _holder_of(folder)
    assert holder == ("nvidia-cudnn-cu12", "9.28.0.42")
    got = Route(torch, None, "no cuDNN", error="libcudnn.so.9: not found", unsearched=folder, unsearched_holder=holder)
    served = serve(got, None, context(BASE), gpu=False, device_count=0, environ=BASE, python=None)
    (finding,) = [f for f in served.findings if f.code is Code.CONSUMER_BROKEN]
    assert finding.fix.actions[0].do is first
    if first is ActionKind.PIP_INSTALL:
        assert finding.fix.actions[0].requirements == ("nvidia-cudnn-cu13==9.24.0.43",)
        assert [a.do for a in finding.fix.alternatives][:1] == [ActionKind.ENV_SET]
        assert "nvidia-cudnn-cu12 9.28.0.42" in str(finding.fix.note)
