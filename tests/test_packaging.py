"""What a user installs is what is tested: the wheel and the sdist built from this tree hold every module git
tracks, and the wheel, installed the ordinary way (not editable) into a fresh venv, runs every command and the
Python API against a real cuDNN wheel, from a folder that is not the repository.

The venv takes cudnnload's dependencies from PyPI (pip's downloads are kept in the test cache) and the cuDNN
9.28 cu12 wheel, with the cuBLAS and NVRTC it needs, from the wheels `make wheels` fetched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.wheels import cache_root, site_folder

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ("cudnnload_numpy", "cudnnload_cudnn_legacy", "cudnnload_cudnn_graph")
CUDNN_WHEELS = ("nvidia_cudnn_cu12-9.28.0.42-", "nvidia_cublas_cu12-12.9.1.4-", "nvidia_cuda_nvrtc_cu12-12.9.86-")

pytestmark = [pytest.mark.slow, pytest.mark.timeout_s(900)]


def tracked_modules() -> set[str]:
    """Every file of the packages as git tracks it, by its path inside an installed wheel."""
    listed = subprocess.run(["git", "ls-files", "cudnnload", "plugins"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return {name.removeprefix("plugins/") for name in listed if name.endswith((".py", "py.typed", ".json"))}


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", "--cache-dir",
                           str(cache_root() / "pip"), *args], capture_output=True, text=True, check=False,
                          timeout=600, env=_plain_env())


def _plain_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell gives: none of the suite's PYTHONPATH (which would put the tree on the
    path), and a cudnnload cache of the test cache's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


def build(source: Path, out: Path) -> tuple[Path, Path]:
    """The sdist, and the wheel built from that sdist (`python -m build`: what a release does)."""
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return next(out.glob("*.whl")), next(out.glob("*.tar.gz"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout: the modules git tracks are what must be packaged")
    return build(ROOT, tmp_path_factory.mktemp("dist"))


def test_the_wheel_holds_every_module_git_tracks_and_the_license_and_typing_marker(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(tracked_modules() - names)
    assert not missing, f"{wheel.name} lacks {missing}"
    assert {"cudnnload/py.typed", *(f"{p}/py.typed" for p in PLUGINS)} <= names
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert f"{info}/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    for version in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Classifier: Programming Language :: Python :: {version}" in metadata
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "cudnnload = cudnnload.cli:main" in entry_points
    for plugin in PLUGINS:
        assert f"{plugin}:register" in entry_points


def test_the_sdist_holds_every_module_git_tracks(built: tuple[Path, Path]) -> None:
    import tarfile

    _, sdist = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    wanted = {f"plugins/{n}" if n.split("/")[0] in PLUGINS else n for n in tracked_modules()}
    assert not sorted(wanted - names), f"{sdist.name} lacks {sorted(wanted - names)}"
    assert {"LICENSE", "README.md", "pyproject.toml"} <= names


def test_a_module_added_without_any_packaging_change_is_in_the_next_wheel(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout")
    tree = tmp_path / "tree"
    for name in subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.split():
        if name.startswith(("cudnnload/", "plugins/")) or name in ("pyproject.toml", "README.md", "LICENSE"):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    (tree / "cudnnload" / "judge" / "added_module.py").write_text('"""A module nobody listed."""\n')
    (tree / "cudnnload" / "added_stage").mkdir()
    (tree / "cudnnload" / "added_stage" / "__init__.py").write_text('"""A package nobody listed."""\n')
    (tree / "plugins" / "cudnnload_numpy" / "added_module.py").write_text('"""A plugin module."""\n')
    wheel, _ = build(tree, tmp_path / "dist")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"cudnnload/judge/added_module.py", "cudnnload/added_stage/__init__.py",
            "cudnnload_numpy/added_module.py"} <= names


# --- the installed wheel -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Installed:
    venv: Path
    site: Path  # its site-packages
    where: Path  # a folder that is not the repository, where the commands run

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "cudnnload"), *args], cwd=self.where, capture_output=True,
                              text=True, check=False, timeout=timeout, env=_plain_env(**env))

    def python_code(self, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.python), "-c", code], cwd=self.where, capture_output=True, text=True,
                              check=False, timeout=300, env=_plain_env())


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    wheels = [next(iter(sorted((cache_root() / "wheels").glob(f"{stem}*.whl"))), None) for stem in CUDNN_WHEELS]
    if None in wheels:
        site_folder("cu12-9.28.0.42")  # skips with "run `make wheels`"
        pytest.skip(f"the cuDNN wheels {CUDNN_WHEELS} are not all in {cache_root() / 'wheels'}: run `make wheels`")
    root = tmp_path_factory.mktemp("installed")
    venv.EnvBuilder(with_pip=True, symlinks=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    done = pip(python, "install", str(built[0]))
    assert done.returncode == 0, done.stderr[-3000:]
    done = pip(python, "install", "--no-index", "--no-deps", *map(str, wheels))
    assert done.returncode == 0, done.stderr[-3000:]
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    where = root / "elsewhere"
    where.mkdir()
    yield Installed(root / "venv", site, where)


def test_the_installed_package_is_the_wheel_not_the_tree(installed: Installed) -> None:
    done = installed.python_code("import cudnnload, cudnnload_numpy; print(cudnnload.__file__); "
                                 "print(cudnnload_numpy.__file__)")
    assert done.returncode == 0, done.stderr
    for line in done.stdout.split():
        assert Path(line).is_relative_to(installed.site), line
    assert not list(installed.site.glob("__editable__*")) and not list(installed.site.glob("*.egg-link"))


def test_every_command_of_the_installed_wheel_runs_on_a_real_cudnn(installed: Installed, tmp_path: Path) -> None:
    lib = installed.site / "nvidia" / "cudnn" / "lib"
    shim = str(lib / "libcudnn.so.9")
    ran: dict[str, subprocess.CompletedProcess[str]] = {}
    for name, args in {
        "version": ("--version",),
        "inspect": ("inspect", str(lib)),
        "which": ("which",),
        "which-target": ("which", shim, "ops"),
        "doctor": ("doctor", "--json"),
        "doctor-target": ("doctor", shim),
        "doctor-python": ("doctor", "--python", str(installed.python)),
        "doctor-program": ("doctor", "--", str(installed.python), "-c", f"import ctypes; ctypes.CDLL({shim!r})"),
        "explain": ("explain", "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: "
                    "cannot open shared object file: No such file or directory"),
        "backends": ("backends", "--json"),
        "trace": ("trace", "--runs", "1", "--no-conv", "--preload", str(lib)),
        "run": ("run", "--cudnn", str(lib), "--", str(installed.python), "-c", "print('the program ran')"),
    }.items():
        ran[name] = installed.run(*args)
        assert "internal error" not in ran[name].stderr and "Traceback" not in ran[name].stderr, \
            f"{name}: {ran[name].stderr[-2000:]}"
        assert ran[name].returncode in (0, 1), f"{name} exited {ran[name].returncode}: {ran[name].stderr[-2000:]}"
    assert "0.1.0" in ran["version"].stdout
    assert "9.28.0" in ran["inspect"].stdout
    assert str(lib) in ran["which"].stdout
    doctor = json.loads(ran["doctor"].stdout)["result"]
    assert doctor["release"] == "9.28.0" and Path(doctor["chosen"]) == lib
    assert "libcudnn.so.9" in ran["doctor-program"].stdout
    assert "cuDNN" in ran["explain"].stdout
    backends = {b["name"]: b for b in json.loads(ran["backends"].stdout)["result"]}
    assert {"numpy", "cudnn-legacy", "cudnn-graph"} <= set(backends)
    assert ran["run"].stdout.strip() == "the program ran"
    # fleet and diff over the reports the installed doctor writes
    reports = tmp_path / "reports"
    reports.mkdir()
    for node in ("a", "b"):
        done = installed.run("doctor", "--output", str(reports / f"{node}.json"))
        assert done.returncode in (0, 1) and (reports / f"{node}.json").is_file(), done.stderr
    fleet = installed.run("fleet", str(reports))
    assert fleet.returncode in (0, 1) and "internal error" not in fleet.stderr, fleet.stderr
    diff = installed.run("diff", str(reports / "a.json"), str(reports / "b.json"))
    assert diff.returncode in (0, 1) and "internal error" not in diff.stderr, diff.stderr


def test_the_python_api_of_the_installed_wheel_loads_and_dispatches(installed: Installed) -> None:
    code = """
import numpy, cudnnload
loaded = cudnnload.load()
print("loaded", loaded.release, loaded.folder)
print("found", [str(i.release) for i in cudnnload.find().installs])
print("backends", sorted(s.name for s in cudnnload.list_backends()))
x = numpy.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(numpy.float32)
w = numpy.random.default_rng(1).standard_normal((3, 2, 3, 3)).astype(numpy.float32)
y = cudnnload.conv(x, w, padding=1, backend="numpy")
print("conv", y.shape)
"""
    done = installed.python_code(code)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["loaded"].startswith("9.28.0 ") and lines["loaded"].endswith(str(installed.site / "nvidia" /
                                                                                   "cudnn" / "lib"))
    assert "9.28.0" in lines["found"]
    assert all(name in lines["backends"] for name in ("numpy", "cudnn-legacy", "cudnn-graph"))
    assert lines["conv"] == "(1, 3, 5, 5)"


def test_installed_as_a_tool_of_its_own_doctor_judges_the_users_python_not_its_venv(
        built: tuple[Path, Path], tmp_path: Path) -> None:
    """pipx's way: cudnnload alone in a venv that nobody activates, its command on PATH beside the user's
    python3: plain `doctor` judges that python3, and says so."""
    tool = tmp_path / "tool"
    venv.EnvBuilder(with_pip=True, symlinks=True).create(tool)
    done = pip(tool / "bin" / "python", "install", str(built[0]))
    assert done.returncode == 0, done.stderr[-3000:]
    user = Path(sys.base_prefix) / "bin"
    run = subprocess.run([str(tool / "bin" / "cudnnload"), "doctor", "--json"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env=_plain_env(PATH=f"{tool / 'bin'}:{user}:/usr/bin:/bin"))
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    result = json.loads(run.stdout)["result"]
    assert result["target"]["kind"] == "python"
    assert Path(result["target"]["path"]).resolve().is_relative_to(Path(sys.base_prefix).resolve())
    said = [f for f in result["findings"] if f["code"] == "tool-environment"]
    assert said and str(tool.resolve()) in said[0]["message"]
    assert not any(str(tool) in json.dumps(f["fix"]) for f in result["findings"])  # no fix into the tool venv
