"""Each framework judged on the cuDNN its own loader gives it (`resolve.routes`, `judge.routes`), on CPU.

A site-packages is built as pip leaves it for PyTorch: the real cuDNN and cuBLAS wheels (hard-linked), and a
``torch`` whose ``libtorch_cuda.so`` (gcc-built) NEEDs ``libcudnn.so.9`` with torch's DT_RPATH
(``$ORIGIN/../../nvidia/cudnn/lib``) and whose ``torch._C`` says it was built with cuDNN 9.28. Then the ways
users break it, each against what PyTorch itself does on the GPU machine (tests/test_frameworks_gpu.py, and
bench/results/2026-11-24-h100-frameworks.md): what torch gets, whether doctor calls it healthy, and the fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cudnnload.codes import ActionKind, Code
from cudnnload.diagnose.doctor import Report, doctor
from cudnnload.resolve.catalog import Release
from fixtures.scenarios.layouts import foreign_copy
from tests.wheels import lib_folder, site_folder

ROOT = Path(__file__).resolve().parent.parent

BASE = {key: value for key, value in os.environ.items() if key not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
TORCH_C = """
class _cudnn:
    @staticmethod
    def getCompileVersion():
        return (9, 28, 0)
"""


@pytest.fixture(scope="module")
def libtorch_cuda(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared object with torch's DT_RPATH and DT_NEEDED libcudnn.so.9 (linked against a stub)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in for libtorch_cuda.so")
    folder = tmp_path_factory.mktemp("libtorch")
    source = folder / "empty.c"
    source.write_text("int cudnnload_test_symbol;\n")
    stub = folder / "libcudnn.so.9"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", stub, source, "-Wl,-soname,libcudnn.so.9"], check=True)
    built = folder / "libtorch_cuda.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", built, source, "-Wl,--no-as-needed", "-Wl,--disable-new-dtags",
                    "-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/cublas/lib",
                    f"-L{folder}", "-l:libcudnn.so.9"], check=True)
    return built


@pytest.fixture(scope="module")
def stub_libcuda(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Path]:
    """A folder with a libcuda.so.1 of the six functions 9.28's runtime-compiled engines import (all returning
    100, CUDA_ERROR_NO_DEVICE): graph then loads its engines on a CPU machine (cudnn-facts §5)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the libcuda stub")
    folder = tmp_path_factory.mktemp("libcuda")
    source = folder / "cuda.c"
    source.write_text("".join(f"int {name}(void) {{ return 100; }}\n" for name in (
        "cuGetErrorString", "cuModuleGetFunction", "cuModuleLoadData", "cuModuleUnload", "cuTensorMapEncodeIm2col",
        "cuTensorMapEncodeTiled")))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", folder / "libcuda.so.1", source, "-Wl,-soname,libcuda.so.1"],
                   check=True)
    return lambda: folder


@pytest.fixture
def site(tmp_path: Path, libtorch_cuda: Path) -> Path:
    """site-packages with the 9.28 cu12 wheel, cuBLAS 12 and a torch built with 9.28 that pins that wheel."""
    out = tmp_path / "site"
    for tag in ("cu12-9.28.0.42", "cublas-cu12-12.9.1.4"):
        shutil.copytree(site_folder(tag), out, copy_function=os.link, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".unpacked"))
    (out / "torch" / "lib").mkdir(parents=True)
    shutil.copy(libtorch_cuda, out / "torch" / "lib" / "libtorch_cuda.so")
    (out / "torch" / "__init__.py").write_text("")
    (out / "torch" / "_C.py").write_text(TORCH_C)
    info = out / "torch-2.11.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n"
                                   'Requires-Dist: nvidia-cudnn-cu12==9.28.0.42; platform_system == "Linux"\n')
    (info / "RECORD").write_text("torch/__init__.py,,\ntorch/_C.py,,\ntorch/lib/libtorch_cuda.so,,\n"
                                 "torch-2.11.0.dist-info/METADATA,,\ntorch-2.11.0.dist-info/RECORD,,\n")
    return out


def without_cudnn_wheels(paths: list[str]) -> list[str]:
    """``paths`` less the folders holding a pip cuDNN (`make demo` installs one into the venv the suite runs
    in): an install torch accepts there would answer a test about there being none."""
    import glob

    return [p for p in paths if not glob.glob(os.path.join(glob.escape(p or "."), "nvidia_cudnn*.dist-info"))]


def run(site: Path, tmp_path: Path, **environ: str) -> Report:
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), **environ}
    return doctor(env, site_paths=[str(site)])


def torch_check(report: Report) -> str:
    return next(c.summary for c in report.checks if c.name == "torch")


def errors(report: Report) -> list[str]:
    return [f.code.value for f in report.findings if f.severity == "error" and f.code not in (Code.NO_DRIVER,)]


def test_torch_gets_its_wheel_by_path_and_is_healthy(site: Path, tmp_path: Path) -> None:
    report = run(site, tmp_path)
    said = torch_check(report)
    assert said.startswith(f"torch 2.11.0 gets cuDNN 9.28.0 from {site}/nvidia/cudnn/lib (by path"), said
    assert "_preload_cuda_deps" in said
    assert errors(report) == []


OLD = "cu12-9.0.0.312"


@pytest.mark.parametrize("preloaded", ["libcudnn.so.9", "libcudnn_graph.so.9"])
def test_ld_preload_of_another_release_is_what_torch_gets_and_its_entry_the_fix(site: Path, tmp_path: Path,
                                                                                 preloaded: str) -> None:
    """GPU machine: torch stops with "cuDNN version incompatibility ... found runtime version (9, 14, 0)"
    whether the system's shim or its graph is preloaded. The fix takes the entry away; where the preloaded shim is
    the only cuDNN that programs asking for it by name get (and it loads whole), it does so for torch's Python
    alone, the removal for everyone kept as the alternative (without it they would get none: the fix
    differential's 1-695)."""
    entry = str(lib_folder(OLD) / preloaded)
    report = run(site, tmp_path, LD_PRELOAD=entry)
    assert "gets cuDNN 9.0.0" in torch_check(report)
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert older.severity == "error"
    assert older.fix is not None
    removal = (ActionKind.ENV_REMOVE_ENTRY, "LD_PRELOAD", entry)
    if preloaded == "libcudnn_graph.so.9":  # no program gets a shim through it: it goes for everyone
        assert [(a.do, a.variable, a.entry) for a in older.fix.actions] == [removal]
    else:
        assert [(a.do, a.argv[:3]) for a in older.fix.actions] == [(ActionKind.RUN, ("env", "-u", "LD_PRELOAD"))]
        assert removal in [(a.do, a.variable, a.entry) for a in older.fix.alternatives]
        assert "would get none" in older.fix.note
    assert not report.healthy


@pytest.mark.parametrize("removed", ["libcudnn_cnn.so.9", "libcudnn_ops.so.9", "libcudnn_adv.so.9",
                                     "libcudnn_engines_precompiled.so.9", "libcudnn_heuristic.so.9"])
def test_a_sublibrary_torch_never_loads_is_a_warning_not_its_failure(site: Path, tmp_path: Path,
                                                                     removed: str) -> None:
    """GPU machine: torch's convolution runs with any of these removed from its wheel."""
    (site / "nvidia" / "cudnn" / "lib" / removed).unlink()
    report = run(site, tmp_path)
    assert "gets cuDNN 9.28.0" in torch_check(report)
    assert errors(report) == [], [f.message for f in report.findings if f.severity == "error"]
    about = [f for f in report.findings if removed in (f.subject.path or "")]
    assert about and all(f.severity == "warning" for f in about)


@pytest.mark.parametrize("removed", ["libcudnn_engines_runtime_compiled.so.9", "libcudnn_engines_tensor_ir.so.9"])
def test_the_runtime_compiled_or_tensor_ir_engines_missing_stop_torchs_convolution(
        site: Path, tmp_path: Path, stub_libcuda: Callable[[], Path], removed: str) -> None:
    """GPU machine: "cudnnFinalize failed ... CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED". 9.28's graph names
    engines_tensor_ir and asks for it once runtime_compiled loaded: without it cudnnBackendFinalize returns 1008
    (the fix differential's 3-20, on 9.24; measured on 9.28 cu12 and cu13 with the libcuda stub)."""
    (site / "nvidia" / "cudnn" / "lib" / removed).unlink()
    report = run(site, tmp_path, LD_LIBRARY_PATH=str(stub_libcuda()))
    fails = next(f for f in report.findings if f.code is Code.FRAMEWORK_CALLS_FAIL)
    assert "cudnnBackendFinalize returns 1008" in fails.message
    assert fails.fix is not None and fails.fix.actions[0].do is ActionKind.PIP_INSTALL
    assert not report.healthy


def test_the_wheel_gone_torch_takes_what_the_search_finds_and_the_pin_is_the_fix(site: Path, tmp_path: Path) -> None:
    shutil.rmtree(site / "nvidia" / "cudnn")
    report = run(site, tmp_path, LD_LIBRARY_PATH=str(lib_folder(OLD)))
    said = torch_check(report)
    assert "gets cuDNN 9.0.0" in said and "ld-library-path" in said, said
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    # (the test's site is a folder of no interpreter, pip's --target: what its nvidia folder holds comes along)
    assert older.fix is not None and older.fix.actions[0].requirements[-1] == "nvidia-cudnn-cu12==9.28.0.42"


def test_the_wheels_graph_missing_torch_gets_the_searched_one_and_the_wheel_is_put_back(site: Path,
                                                                                         tmp_path: Path) -> None:
    """GPU machine: the wheel's graph removed, the shim loads the system's 9.14 graph from ld.so.cache."""
    (site / "nvidia" / "cudnn" / "lib" / "libcudnn_graph.so.9").unlink()
    report = run(site, tmp_path, LD_LIBRARY_PATH=str(lib_folder(OLD)))
    assert "gets cuDNN 9.0.0" in torch_check(report)
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert older.fix is not None
    assert older.fix.actions[0].do is ActionKind.PIP_INSTALL and "--force-reinstall" in older.fix.actions[0].options
    assert Release(9, 0, 0) == next(f for f in report.frameworks if f.framework == "torch").release


def _shim_gone(lib: Path) -> None:
    (lib / "libcudnn.so.9").unlink()


def _shim_a_loop(lib: Path) -> None:
    (lib / "libcudnn.so.9").unlink()
    (lib / "libcudnn.so.9").symlink_to("libcudnn.so.9")


def _shim_of_another_machine(lib: Path) -> None:
    # (foreign_copy unlinks first: the site's file is a hard link to the test cache's)
    foreign_copy(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9", lib / "libcudnn.so.9")


@pytest.mark.parametrize(("change", "why"), [(_shim_gone, "is missing, beside other cuDNN files of its major"),
                                             (_shim_a_loop, "is a symbolic link loop"),
                                             (_shim_of_another_machine, "is built for another architecture")],
                         ids=["gone", "loop", "other-machine"])
def test_the_wheels_shim_passed_over_is_named_as_where_torchs_search_looked_first(
        site: Path, tmp_path: Path, change: Callable[[Path], None], why: str) -> None:
    """GPU machine (bench/results/2026-12-04-h200-more-*.md: shim-gone, shim-symlink-loop, shim-other-machine): the
    wheel's libcudnn.so.9 taken away, a link to itself, or an aarch64 file; libtorch_cuda.so's search goes past the
    wheel's folder to the system's 9.14 and torch stops on it. torch's error names the shim and the folder its search
    tried first; where pip's RECORD lists the file, that finding is an error of its own."""
    lib = site / "nvidia" / "cudnn" / "lib"
    change(lib)
    report = run(site, tmp_path, LD_LIBRARY_PATH=str(lib_folder(OLD)))
    said = torch_check(report)
    assert "gets cuDNN 9.0.0" in said and f"past {lib} (its libcudnn.so.9 {why})" in said, said
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert f"the search tries {lib} first, and its libcudnn.so.9 {why}" in older.message, older.message
    assert older.fix is not None and "--force-reinstall" in older.fix.actions[0].options
    about = [f for f in report.findings if f.subject.path == str(lib / "libcudnn.so.9")]
    assert about and all(f.severity == "error" for f in about if f.code.value.startswith("record-")), about


# --- doctor -- COMMAND: what the program really mapped, its end, and the cause in one line first ---------------

PROGRAM = """
import ctypes, sys
ctypes.CDLL(sys.argv[1])  # libtorch_cuda.so: its DT_NEEDED brings the shim through its DT_RPATH
version = ctypes.CDLL("libcudnn.so.9").cudnnGetVersion()
if version < 92800:  # torch/backends/cudnn/__init__.py's check, in its words
    sys.exit(f"RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 28, 0) but found "
             f"runtime version {version}")
"""


def run_program(site: Path, tmp_path: Path, workers: int = 0, **environ: str) -> object:
    from cudnnload.diagnose.observe import diagnose_program

    script = tmp_path / "train.py"
    script.write_text(PROGRAM if not workers else PROGRAM.replace("import ctypes, sys", (
        "import ctypes, subprocess, sys\n"
        f"if len(sys.argv) < 3:\n    sys.exit(max(subprocess.Popen([sys.executable, *sys.argv, 'w']).wait() "
        f"for _ in range({workers})))")))
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), **environ}
    return diagnose_program([sys.executable, str(script), str(site / "torch/lib/libtorch_cuda.so")], environ=env,
                            timeout=60)


def test_a_framework_is_judged_on_the_shim_of_its_own_major_not_the_first_one_mapped(site: Path,
                                                                                    tmp_path: Path) -> None:
    """The program maps a cuDNN 8 shim by path first (torch's preload glob takes a PYTHONPATH folder's
    libcudnn.so.8: fix differential 3-16990), then libtorch_cuda.so, whose NEEDED libcudnn.so.9 the cuDNN 8 shim
    does not answer: torch runs on its own 9.28. It is judged on that one, not on the first shim of the process."""
    eight = lib_folder("cu12-8.9.7.29") / "libcudnn.so.8"
    script = tmp_path / "train.py"
    script.write_text(f"import ctypes\nctypes.CDLL({str(eight)!r})\n" + PROGRAM)
    from cudnnload.diagnose.observe import diagnose_program

    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    report = diagnose_program([sys.executable, str(script), str(site / "torch/lib/libtorch_cuda.so")], environ=env,
                              timeout=60)
    assert report.observation.ok, report.observation
    used = next(u for u in report.frameworks if u.framework == "torch")
    assert os.path.normpath(used.shim or "") == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"), used
    assert used.release is not None and used.release[:2] == (9, 28), used
    assert Code.CONSUMER_NEEDS_OTHER_MAJOR not in {f.code for f in report.findings}, report.findings


def test_a_failing_run_says_the_framework_the_cause_and_the_variable_first(site: Path, tmp_path: Path) -> None:
    entry = str(lib_folder(OLD) / "libcudnn_graph.so.9")
    report = run_program(site, tmp_path, LD_PRELOAD=entry)
    assert report.headline.startswith("torch stopped (exited with status 1): torch 2.11.0 was built with cuDNN "
                                      "9.28.0"), report.headline
    assert f"because LD_PRELOAD holds {entry}" in report.headline
    assert [(u.framework, u.release) for u in report.frameworks] == [("torch", Release(9, 0, 0))]
    assert not report.healthy


def test_a_healthy_run_names_the_release_and_folder_it_used(site: Path, tmp_path: Path) -> None:
    report = run_program(site, tmp_path)
    assert report.headline == f"{Path(sys.executable).name} ran with cuDNN 9.28.0 from {site}/nvidia/cudnn/lib"
    assert report.healthy


def test_a_run_that_ends_well_is_healthy_and_what_it_did_not_hit_is_a_warning(site: Path, tmp_path: Path) -> None:
    """GPU machine: torch's convolution runs with libcudnn_cnn.so.9 gone from its wheel."""
    (site / "nvidia" / "cudnn" / "lib" / "libcudnn_cnn.so.9").unlink()
    report = run_program(site, tmp_path)
    assert report.healthy
    about = [f for f in report.findings if "libcudnn_cnn" in (f.subject.path or "")]
    assert about and all(f.severity == "warning" and "not hit by this run" in f.message for f in about)


def test_workers_are_summed_up_not_said_one_by_one(site: Path, tmp_path: Path) -> None:
    report = run_program(site, tmp_path, workers=4, LD_PRELOAD=str(lib_folder(OLD) / "libcudnn_graph.so.9"))
    assert report.observation.processes == 5
    assert len(report.comparisons) == 1
    assert report.headline.startswith("torch stopped")


def test_a_preloaded_shim_is_named_as_the_cause_of_a_failing_run(site: Path, tmp_path: Path) -> None:
    """GPU machine: LD_PRELOAD of the system's libcudnn.so.9; torch's calls bind to it."""
    entry = str(lib_folder(OLD) / "libcudnn.so.9")
    report = run_program(site, tmp_path, LD_PRELOAD=entry)
    assert report.headline.startswith("torch stopped"), report.headline
    assert f"because LD_PRELOAD holds {entry}" in report.headline


# --- choosing for the frameworks: load(for_=...), cudnnload run --for ------------------------------------------

def _pinned_torch(site: Path, build: str, pin: str) -> None:
    (site / "torch" / "_C.py").write_text(TORCH_C.replace("(9, 28, 0)", build))
    metadata = site / "torch-2.11.0.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("nvidia-cudnn-cu12==9.28.0.42", pin))


def test_the_choice_follows_the_frameworks_pin_over_the_newest_release(site: Path, tmp_path: Path) -> None:
    """Both wheels on the path; torch (built with 9.0) pins 9.0.0.312: that one, though 9.28 is newer."""
    from cudnnload.loading.pin import run_environment

    _pinned_torch(site, "(9, 0, 0)", "nvidia-cudnn-cu12==9.0.0.312")
    older = site_folder(OLD)
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "path", [str(site), str(older), *without_cudnn_wheels(sys.path)])
        pinned = run_environment(for_="torch", environ=env)
    assert pinned.folder == str(older / "nvidia" / "cudnn" / "lib")
    assert any("chosen for torch 2.11.0" in note for note in pinned.notes)


def test_no_install_the_framework_accepts_is_refused_with_its_need_and_each_release(site: Path,
                                                                                    tmp_path: Path) -> None:
    from cudnnload.errors import LoadError
    from cudnnload.loading.pin import run_environment

    shutil.rmtree(site / "nvidia" / "cudnn")
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "LD_LIBRARY_PATH": str(lib_folder(OLD))}
    with pytest.MonkeyPatch.context() as patch, pytest.raises(LoadError) as refused:
        patch.setattr(sys, "path", [str(site), *without_cudnn_wheels(sys.path)])
        run_environment(for_="torch", environ=env)
    said = str(refused.value)
    assert "cuDNN 9.0.0" in said and "torch 2.11.0: cuDNN 9.x >= 9.28 (its build, 9.28.0)" in said, said


def test_a_framework_not_installed_is_one_line(site: Path, tmp_path: Path) -> None:
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join((str(site), str(ROOT)))}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "run", "--for", "jax", "--", "/bin/true"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "jax is not installed" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_load_for_torch_pins_its_wheel_past_another_release_on_the_search_path(site: Path, tmp_path: Path) -> None:
    """GPU machine: LD_LIBRARY_PATH at the system's 9.14; load(for_="torch") first, then torch's own loads."""
    script = ("import cudnnload, ctypes, sys\n"
              "got = cudnnload.load(for_='torch')\n"
              f"ctypes.CDLL({str(site / 'torch/lib/libtorch_cuda.so')!r})\n"
              "print(got.release, got.folder, ctypes.CDLL('libcudnn.so.9').cudnnGetVersion())\n")
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "LD_LIBRARY_PATH": str(lib_folder(OLD)),
           "PYTHONPATH": os.pathsep.join((str(site), str(ROOT)))}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["9.28.0", str(site / "nvidia/cudnn/lib"), "92800"]


def _venv_and_older_copy(site: Path, tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """A venv (no pip) whose site-packages holds ``site``'s files, and the older release unpacked as a ``--target``
    folder ``tmp_path/name``: the venv's python, its site-packages, the folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    venv_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                    capture_output=True, text=True, check=True).stdout.strip())
    shutil.copytree(site, venv_site, copy_function=os.link, dirs_exist_ok=True)
    target = tmp_path / name
    shutil.copytree(site_folder(OLD), target, copy_function=os.link, ignore=shutil.ignore_patterns(".unpacked"))
    return python, venv_site, target


def test_an_older_copy_earlier_on_pythonpath_is_what_torch_gets_and_its_entry_the_fix(site: Path,
                                                                                      tmp_path: Path) -> None:
    """A `pip install --target` folder with an older cuDNN on PYTHONPATH comes before site-packages on the
    interpreter's sys.path (its start-up, observed): torch's preload takes that copy, and the fix takes the
    PYTHONPATH entry away (reinstalling the pinned wheel, already there, would change nothing)."""
    python, venv_site, target = _venv_and_older_copy(site, tmp_path, "target")
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(target)}
    report = doctor(env, python=str(python))
    assert f"gets cuDNN 9.0.0 from {target}/nvidia/cudnn/lib" in torch_check(report)
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert [a.json() for a in older.fix.actions] == [
        {"do": "env-remove-entry", "variable": "PYTHONPATH", "entry": str(target)}]
    fixed = doctor({k: v for k, v in env.items() if k != "PYTHONPATH"}, python=str(python))
    assert "gets cuDNN 9.28.0" in torch_check(fixed)

    # and a graph of another folder put in front by LD_PRELOAD: it stays in front of whatever torch loads once the
    # copy is gone, so its entry goes with the copy's (the H200's preload-graph+target-copy composition)
    graph = str(lib_folder(OLD) / "libcudnn_graph.so.9")
    both = doctor({**env, "LD_PRELOAD": graph}, python=str(python))
    older = next(f for f in both.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert [a.json() for a in older.fix.actions] == [
        {"do": "env-remove-entry", "variable": "PYTHONPATH", "entry": str(target)},
        {"do": "env-remove-entry", "variable": "LD_PRELOAD", "entry": graph}]


def test_a_pth_import_line_that_puts_an_older_copy_first_is_taken_out_and_judged_gone(site: Path,
                                                                                      tmp_path: Path) -> None:
    """A ``.pth`` import line ``import sys; sys.path.insert(0, DIR)``, DIR an older cuDNN's ``--target`` folder (the
    H200's pth-puts-older-copy-first composition, where the fix asked to "put back the complete cuDNN 9.14.0" of a
    copy that was complete): start-up's observation credits the entry to that line, the fix takes the line out,
    and the model, judging the interpreter with that line gone, finds torch on its own wheel."""
    python, venv_site, target = _venv_and_older_copy(site, tmp_path, "vendored")
    line = f"import sys; sys.path.insert(0, {str(target)!r})"
    pth = venv_site / "000-app-paths.pth"
    pth.write_text(line + "\n")
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    report = doctor(env, python=str(python))
    assert f"gets cuDNN 9.0.0 from {target}/nvidia/cudnn/lib" in torch_check(report)
    older = next(f for f in report.findings if f.code is Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD)
    assert [a.json() for a in older.fix.actions] == [{"do": "remove-line", "path": str(pth), "line": line}]
    first = next(f for f in report.findings if f.severity == "error")
    assert {"do": "remove-line", "path": str(pth), "line": line} in [a.json() for a in first.fix.actions], first
    assert not any(a.do.value == "manual" for a in first.fix.actions), first
    pth.write_text("")  # the fix, applied
    assert "gets cuDNN 9.28.0" in torch_check(doctor(env, python=str(python)))

def test_torchs_library_is_judged_in_its_own_interpreter_and_every_older_copy_in_front_goes(site: Path,
                                                                                             tmp_path: Path) -> None:
    """Fix differential 3-8313: a ``.pth`` line puts one older copy first, PYTHONPATH names another. doctor on
    torch's own library judges it in the process it is opened in, the venv's interpreter, whose start-up (observed
    as ``--python``'s is) gives its sys.path: torch meets the line's copy, as ``--python`` says, not the venv's wheel.
    The repair takes the line out and then the PYTHONPATH entry, whose copy torch meets next in the same words; made,
    torch gets its own wheel."""
    python, venv_site, vendored = _venv_and_older_copy(site, tmp_path, "vendored")
    pydeps = tmp_path / "pydeps"
    shutil.copytree(vendored, pydeps, copy_function=os.link)
    line = f"import sys; sys.path.insert(0, {str(vendored)!r})"
    pth = venv_site / "000-app-paths.pth"
    pth.write_text(line + "\n")
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(pydeps)}
    library = str(venv_site / "torch" / "lib" / "libtorch_cuda.so")
    for report in (doctor(env, target=library),
                   doctor(env, python=str(python))):
        assert f"gets cuDNN 9.0.0 from {vendored}/nvidia/cudnn/lib" in torch_check(report)
        first = next(f for f in report.findings if f.severity == "error")
        done = [a.json() for a in first.fix.actions]
        assert {"do": "remove-line", "path": str(pth), "line": line} in done, first
        assert {"do": "env-remove-entry", "variable": "PYTHONPATH", "entry": str(pydeps)} in done, first
    pth.write_text("")  # the repair, made
    fixed = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    assert "gets cuDNN 9.28.0" in torch_check(doctor(fixed, target=library))


def test_run_for_a_framework_that_no_install_suits_starts_the_program_unchanged_and_says_why(
        site: Path, tmp_path: Path) -> None:
    """`run --for torch` never makes a program fail that runs without it: with no install torch's rules accept
    (its wheel gone, an older release on the path), nothing is pinned, the program runs in its own environment,
    and one line says why."""
    shutil.rmtree(site / "nvidia" / "cudnn")
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "LD_LIBRARY_PATH": str(lib_folder(OLD)),
           "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), str(ROOT / "plugins")])}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "run", "--for", "torch", "--", sys.executable, "-c",
                           "import os; print('ran', 'LD_PRELOAD' in os.environ)"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ran False", done.stderr
    assert done.stderr.startswith("cudnnload: nothing pinned (") and "the program runs as it would" in done.stderr


def test_a_wheel_shim_cut_inside_a_segment_stops_torch_at_its_preload_and_is_put_back(site: Path,
                                                                                       tmp_path: Path) -> None:
    """torch's preload opens the wheel's libcudnn.so.9 by path; cut short inside a segment, glibc maps it and the
    process dies of SIGBUS (the fix differential's 3-440: exit 135, torch never looks further). Before, the model
    took any load that did not succeed as a failure torch gets past, and said torch gets its cuDNN through its
    RUNPATH: the same file. Now torch's check is an error whose fix puts the wheel back."""
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    data = shim.read_bytes()
    shim.unlink()  # a new file: the old one is a hard link of the test's wheel
    shim.write_bytes(data[:len(data) // 2])
    crash = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(shim)!r})"], check=False,
                           capture_output=True)
    assert crash.returncode == -7, crash  # SIGBUS, as the model says
    report = run(site, tmp_path)
    stopped = next(f for f in report.findings if f.code is Code.CONSUMER_BROKEN)
    assert "SIGBUS" in stopped.message and stopped.severity == "error", stopped
    assert stopped.fix.actions[0].do is ActionKind.PIP_INSTALL, stopped.fix
    assert "nvidia-cudnn-cu12==9.28.0.42" in stopped.fix.actions[0].requirements, stopped.fix
    assert "SIGBUS" in torch_check(report) or not report.healthy


def test_a_wheel_shim_cut_short_stops_torch_s_preload_even_behind_a_preloaded_shim(site: Path, tmp_path: Path) -> None:
    """The same, with another release's whole shim preloaded (fix differential 3-14309: a sitecustomize line's 9.28
    shim): that shim answers torch's calls, but torch's preload by path still maps the wheel's file anew (another
    file, whatever answers its name) and the process dies of SIGBUS. The model said the preloaded shim served torch
    and left the wheel alone; now torch stops as it starts, and its fix puts the wheel back."""
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    data = shim.read_bytes()
    shim.unlink()
    shim.write_bytes(data[:len(data) // 2])
    other = lib_folder(OLD) / "libcudnn.so.9"
    crash = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(shim)!r})"], check=False,
                           capture_output=True, env={**BASE, "LD_PRELOAD": str(other)})
    assert crash.returncode == -7, crash  # SIGBUS, the preloaded shim notwithstanding
    report = run(site, tmp_path, LD_PRELOAD=str(other))
    stopped = next(f for f in report.findings if f.code is Code.CONSUMER_BROKEN)
    assert "SIGBUS" in stopped.message and f"its load by path opens {shim}" in stopped.message, stopped
    assert stopped.fix.actions[0].do is ActionKind.PIP_INSTALL, stopped.fix
    assert "nvidia-cudnn-cu12==9.28.0.42" in stopped.fix.actions[0].requirements, stopped.fix


def test_a_program_that_dies_mapping_a_wheel_s_cut_shim_is_told_to_put_the_wheel_back(site: Path,
                                                                                    tmp_path: Path) -> None:
    """`doctor -- PROGRAM` where the program dies of SIGBUS mapping the wheel's shim, cut inside a segment: the death
    takes the fix the prediction gives that file (its wheel reinstalled), and comes first (fix differential 3-14309:
    it said only "reinstall the package it is from", after mixed-release findings whose fix did nothing for it)."""
    from cudnnload.diagnose.observe import diagnose_program

    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    data = shim.read_bytes()
    shim.unlink()
    shim.write_bytes(data[:len(data) // 2])
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    report = diagnose_program([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(shim)!r})"], environ=env,
                              timeout=120)
    assert report.observation.signal == "SIGBUS" and report.observation.cut_on == str(shim), report.observation
    first = next(f for f in report.findings if f.severity == "error")
    assert first.code in (Code.PROGRAM_DIED, Code.REPAIR), first
    assert first.fix.actions[0].do is ActionKind.PIP_INSTALL, first.fix
    assert "nvidia-cudnn-cu12==9.28.0.42" in first.fix.actions[0].requirements, first.fix


@pytest.mark.parametrize(("site", "interpreter"), [
    ("/usr/local/lib/python3.10/dist-packages", "/usr/bin/python3.10"),  # an NGC framework container's pip installs
    ("/usr/lib/python3.12/dist-packages", "/usr/bin/python3.12"),
    ("/usr/lib/python3/dist-packages", "/usr/bin/python3"),  # Debian's own packages
    ("/opt/app/dist-packages", None),
    ("/usr/local/lib/python3.10/site-packages", None),  # a prefix's: `pythons.interpreter_of_site` answers it
])
def test_a_debian_dist_packages_folder_is_its_system_pythons(site: str, interpreter: str | None,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Whose process opens a shared object of a ``dist-packages`` folder (torch in an NGC container): the system
    interpreter whose start-up is observed for it, where that interpreter is there."""
    from cudnnload.resolve.pythons import system_interpreter_of

    monkeypatch.setattr(os, "access", lambda path, mode: path == interpreter)
    assert system_interpreter_of(site) == interpreter


@pytest.fixture(scope="module")
def libtorch_cuda_bundling(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """torch 1.x's libtorch_cuda.so as its wheels built it: DT_NEEDED libcudnn.so.8 and DT_RPATH ``$ORIGIN``,
    the folder where those wheels bundled cuDNN 8 (pytorch/builder's manywheel copied libcudnn*.so.8 and
    cuBLAS 11 into torch/lib under their own names)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in for libtorch_cuda.so")
    folder = tmp_path_factory.mktemp("libtorch8")
    source = folder / "empty.c"
    source.write_text("int cudnnload_test_symbol;\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", folder / "libcudnn.so.8", source, "-Wl,-soname,libcudnn.so.8"],
                   check=True)
    built = folder / "libtorch_cuda.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", built, source, "-Wl,--no-as-needed", "-Wl,--disable-new-dtags",
                    "-Wl,-rpath,$ORIGIN", f"-L{folder}", "-l:libcudnn.so.8"], check=True)
    return built


BUNDLED_TORCH = """
import ctypes, sys
ctypes.CDLL(sys.argv[1])  # libtorch_cuda.so: its DT_NEEDED brings the bundled shim through its DT_RPATH
print(ctypes.CDLL("libcudnn.so.8").cudnnGetVersion())
print(next(line.split()[-1] for line in open("/proc/self/maps") if line.rstrip().endswith("/libcudnn.so.8")),
      flush=True)
for check in ("cudnnOpsInferVersionCheck", "cudnnCnnInferVersionCheck"):  # what torch's first convolution calls
    print(check, getattr(ctypes.CDLL("libcudnn.so.8"), check)(), flush=True)
"""


def test_a_torch_that_bundles_its_cudnn_is_judged_on_that_copy_and_healthy_once_its_fix_is_applied(
        libtorch_cuda_bundling: Path, tmp_path: Path) -> None:
    """torch 1.13.1+cu117 as download.pytorch.org shipped it: cuDNN 8.5 and cuBLAS 11 in torch/lib, reached by
    libtorch_cuda.so's RPATH, and no nvidia-cudnn wheel. torch gets that copy; its first call aborts where no
    libnvrtc.so is found, as the real loader does; with the fix applied (NVRTC 11 linked as libnvrtc.so beside it)
    the real program gets 8.5.0 from torch/lib and doctor finds nothing wrong. The copy is one of the machine's
    installs ("bundled with torch 1.13.1+cu117"), never "no cuDNN shim is reachable" and a cuDNN 9 wheel to install
    (before: both, and torch's copy in no listing)."""
    from cudnnload.report import report_text
    from tests.test_opened_at_load import _unpacked

    site = tmp_path / "site"
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    for folder in (lib_folder("cu11-8.5.0.96"), _unpacked("nvidia-cublas-cu11-11.11.3.6", "nvidia/cublas/lib")):
        for path in folder.iterdir():
            if path.name.startswith(("libcudnn", "libcublas")):
                os.link(path, lib / path.name)
    shutil.copy(libtorch_cuda_bundling, lib / "libtorch_cuda.so")
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "_C.py").write_text(TORCH_C.replace("(9, 28, 0)", "(8, 5, 0)"))
    info = site / "torch-1.13.1+cu117.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 1.13.1+cu117\n")
    (info / "RECORD").write_text("".join(f"{p.relative_to(site)},,\n" for p in sorted(site.rglob("*"))
                                         if p.is_file()))
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}

    def real() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", BUNDLED_TORCH, str(lib / "libtorch_cuda.so")], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    before, report = real(), doctor(env, site_paths=[str(site)])
    said = "Could not load library libcudnn_ops_infer.so.8. Error: libnvrtc.so: cannot open shared object file"
    assert before.returncode == -6 and said in before.stderr, before
    assert torch_check(report).startswith(f"torch 1.13.1+cu117 gets cuDNN 8.5.0 from {lib}"), torch_check(report)
    # cuBLASLt 11 dlopens libnvrtc.so as it loads (the install's finding), so torch's first call aborts (torch's)
    failing = {f.code: f for f in report.findings if f.severity == "error" and f.code is not Code.NO_DRIVER}
    assert set(failing) == {Code.MISSING_DEPENDENCY, Code.FRAMEWORK_CALLS_FAIL}, failing
    assert said in failing[Code.FRAMEWORK_CALLS_FAIL].message, failing
    assert all("/torch/lib/libnvrtc.so" in (f.fix.actions[0].text or "") for f in failing.values()), failing
    nvrtc = _unpacked("nvidia-cuda-nvrtc-cu11-11.8.89", "nvidia/cuda_nvrtc/lib")
    (lib / "libnvrtc.so").symlink_to(next(nvrtc.glob("libnvrtc.so.11.*")))
    after, report = real(), doctor(env, site_paths=[str(site)])
    assert after.stdout.split()[:4] == ["8500", str(lib / "libcudnn.so.8"), "cudnnOpsInferVersionCheck", "0"], after
    # cnn_infer 8.5 dlopens the driver's libcuda.so: without a driver the real one aborts there, and so says doctor
    driver = "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file"
    if driver in after.stderr:
        assert after.returncode == -6, after
        (failing,) = [f for f in report.findings if f.severity == "error" and f.code is not Code.NO_DRIVER]
        assert failing.code is Code.FRAMEWORK_CALLS_FAIL and driver in failing.message, failing
    else:
        assert after.returncode == 0 and after.stdout.split()[4:] == ["cudnnCnnInferVersionCheck", "0"], after
        assert errors(report) == [], [f.message for f in report.findings]
    installs = next(c for c in report.checks if c.name == "installs")
    assert installs.summary == "1 found; will load cuDNN 8.5.0 (bundled with torch 1.13.1+cu117)", installs
    assert report_text(report).splitlines()[0] == f"cudnnload doctor: cuDNN 8.5.0 from {lib}"
