"""Python's start-up (`resolve.startup`): the sys.path an interpreter builds, the .pth files and customize modules
it runs and the shared objects they map, each compared with the real interpreter in the same environment (its own
print of sys.path, its own /proc/self/maps), in venvs and folders built here."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from cudnnload.errors import UsageError
from cudnnload.resolve.startup import (
    Invocation,
    PathEntry,
    Source,
    Startup,
    StartupFailed,
    invocation,
    observe,
    package,
    torch_preload,
)
from tests.wheels import lib_folder, site_folder

# The other interpreters pyenv has beside this one (the development machine has 2.7, 3.6-3.13); absent: skipped.
VERSIONS = Path(sys.base_prefix).parent


def interpreter(version: str) -> str:
    found = sorted(VERSIONS.glob(f"{version}.*/bin/python{version}"))
    if not found:
        pytest.skip(f"no Python {version} under {VERSIONS}")
    return str(found[-1])


BASE = os.path.realpath(getattr(sys, "_base_executable", sys.executable))  # this interpreter, outside any venv
PYTHONS = [pytest.param(version, id=version) for version in ("3.10", "3.11", "3.12", "3.13")]

# The real program: its first line prints sys.path and the files mapped with execute permission (shared objects).
PROBE = """import sys
maps = set()
for line in open('/proc/self/maps'):
    fields = line.split(None, 5)
    if len(fields) == 6 and 'x' in fields[1] and fields[5].startswith('/'):
        maps.add(fields[5].rstrip('\\n'))
print(repr((sys.path, sorted(maps))))
"""


def real(python: str, env: dict[str, str], cwd: Path, flags: Sequence[str] = (),
         program: Sequence[str] = ("-c", PROBE)) -> tuple[list[str], list[str]]:
    """What the interpreter itself says at its program's first line: sys.path, and the shared objects mapped."""
    done = subprocess.run([python, *flags, *program], env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    path, maps = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return path, maps


def agrees(found: Startup, env: dict[str, str], cwd: Path, flags: Sequence[str] = ()) -> None:
    """`found` says what the interpreter itself says, run as `python -c` in the same environment."""
    path, maps = real(found.interpreter, env, cwd, flags)
    assert found.unobserved == ()
    assert list(found.sys_path) == path
    assert sorted(m.path for m in found.mapped) == maps


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment of its own: no PYTHON* variable of this process, HOME and the user base in tmp_path."""
    (tmp_path / "home").mkdir()
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"),
            "PYTHONUSERBASE": str(tmp_path / "userbase")}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The program's current folder."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def venv(tmp_path: Path) -> Callable[..., tuple[str, Path]]:
    """``venv(python=BASE, system_site=False)``: a venv without pip; its python and its site-packages."""
    def make(python: str = BASE, system_site: bool = False, name: str = "venv") -> tuple[str, Path]:
        folder = tmp_path / name
        subprocess.run([python, "-m", "venv", "--without-pip", *(["--system-site-packages"] if system_site else []),
                        str(folder)], check=True, capture_output=True)
        return str(folder / "bin" / "python"), next((folder / "lib").glob("python3*/site-packages"))
    return make


def graph() -> str:
    """A real cuDNN sub-library that loads without a GPU: 9.0's libcudnn_graph.so.9, as /proc/self/maps names it."""
    return os.path.realpath(lib_folder("cu12-9.0.0.312") / "libcudnn_graph.so.9")


def loads(path: str) -> str:
    return f"import ctypes; ctypes.CDLL({path!r})"


def by_path(found: Startup, path: str) -> Source:
    return next(entry.source for entry in found.path if entry.path == path)


def mapped_by(found: Startup, path: str) -> Source | None:
    return next((m.source for m in found.mapped if m.path == path), None)


# --- sys.path ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", PYTHONS)
def test_sys_path_is_the_one_the_interpreter_prints_with_each_entry_credited(
        version: str, venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path, tmp_path: Path) -> None:
    python, site = venv(interpreter(version))
    (work / "rel").mkdir()
    (tmp_path / "extra").mkdir()
    (site / "a.pth").write_text(f"# a comment\n\n{tmp_path / 'extra'}\n{tmp_path / 'missing'}\n")
    env["PYTHONPATH"] = f"rel::{tmp_path / 'abs'}"
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    assert found.path[0] == PathEntry("", Source("program", text="-c"))
    assert [by_path(found, path) for path in (str(work / "rel"), str(work), str(tmp_path / "abs"))] == [
        Source("pythonpath", text=text) for text in ("rel", "", str(tmp_path / "abs"))]
    assert by_path(found, str(site)).kind == "site-packages"
    assert by_path(found, str(tmp_path / "extra")) == Source("pth", str(site / "a.pth"), 3, str(tmp_path / "extra"))
    assert {by_path(found, path).kind for path in found.sys_path[4:7]} == {"interpreter"}  # zip, stdlib, lib-dynload
    assert found.pyvenv_cfg == str(site.parents[2] / "pyvenv.cfg") and found.system_site_packages is False


def test_a_pth_path_line_is_listed_with_the_entry_it_added(venv: Callable[..., tuple[str, Path]], env: dict[str, str],
                                                          work: Path, tmp_path: Path) -> None:
    python, site = venv()
    (tmp_path / "lib").mkdir()
    (site / "paths.pth").write_text(f"# comment\n{tmp_path / 'lib'}   \n{tmp_path / 'absent'}\n")
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    # a venv's site-packages goes through addsitepackages twice (site.venv, then site.main): every .pth twice
    first = next(f for f in found.pth_files if f.path == str(site / "paths.pth"))
    assert first.read and [(line.number, line.text, line.kind, line.added) for line in first.lines] == [
        (2, str(tmp_path / "lib"), "path", (str(tmp_path / "lib"),)), (3, str(tmp_path / "absent"), "path", ())]
    assert [f.path for f in found.pth_files].count(str(site / "paths.pth")) == 2


def test_a_pth_import_line_that_loads_cudnn_is_named_as_the_cause(venv: Callable[..., tuple[str, Path]],
                                                                  env: dict[str, str], work: Path) -> None:
    python, site = venv()
    (site / "zz-cudnn.pth").write_text(f"import os\n{loads(graph())}\n")
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    mapped = next(m for m in found.mapped if m.path == graph())
    assert mapped.source == Source("pth-import", str(site / "zz-cudnn.pth"), 2, loads(graph()))
    assert mapped.trigger is not None and (mapped.trigger.event, mapped.trigger.name) == (
        "ctypes.dlopen", str(lib_folder("cu12-9.0.0.312") / "libcudnn_graph.so.9"))
    ctypes_module = next(m for m in found.mapped if m.trigger and m.trigger.name == "_ctypes")
    assert ctypes_module.source == mapped.source and ctypes_module.trigger.event == "import"  # type: ignore[union-attr]
    assert {m.source.kind for m in found.mapped[:3]} == {"loader"}  # the interpreter and its NEEDED come first


def test_sitecustomize_that_loads_cudnn_is_named_as_the_cause(venv: Callable[..., tuple[str, Path]],
                                                              env: dict[str, str], work: Path, tmp_path: Path) -> None:
    python, site = venv()
    (tmp_path / "front").mkdir()
    front = str(tmp_path / "front")
    (site / "sitecustomize.py").write_text(f"import sys\n{loads(graph())}\nsys.path.insert(0, {front!r})\n")
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    assert found.customize[0].file == str(site / "sitecustomize.py")
    # the line whose call mapped it, which a fix can take out alone (the module still compiles without it)
    assert mapped_by(found, graph()) == Source("sitecustomize", str(site / "sitecustomize.py"), 2, loads(graph()))
    assert found.path[1].path == str(tmp_path / "front")  # before the stdlib: put there by sitecustomize
    assert found.path[1].source == Source("sitecustomize", str(site / "sitecustomize.py"))


def test_a_sitecustomize_line_is_named_only_when_it_can_go_alone(venv: Callable[..., tuple[str, Path]],
                                                                 env: dict[str, str], work: Path) -> None:
    """The only statement of a block cannot be taken out alone (the module would not compile): the module is named,
    and a fix says the code in words (judge.fixes.undo)."""
    from cudnnload.judge.fixes import undo
    from cudnnload.resolve.process import Preload

    python, site = venv()
    (site / "sitecustomize.py").write_text(f"import sys\nif sys:\n    {loads(graph())}\n")
    found = observe(python, env, cwd=str(work))
    assert mapped_by(found, graph()) == Source("sitecustomize", str(site / "sitecustomize.py"))
    said = undo(Preload(graph(), graph(), None, cause=mapped_by(found, graph())))
    assert said is not None and said.do.value == "manual"
    (site / "sitecustomize.py").write_text(f"import sys\nif sys:\n    pass\n    {loads(graph())}\n")
    cause = mapped_by(observe(python, env, cwd=str(work)), graph())
    assert cause == Source("sitecustomize", str(site / "sitecustomize.py"), 4, f"    {loads(graph())}")
    said = undo(Preload(graph(), graph(), None, cause=cause))
    assert said is not None and (said.do.value, said.line) == ("remove-line", f"    {loads(graph())}")


def test_a_pth_processed_by_sitecustomize_is_the_innermost_cause(
        venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path, tmp_path: Path) -> None:
    python, site = venv()
    extra = tmp_path / "extra-site"
    extra.mkdir()
    (extra / "inner.pth").write_text(loads(graph()) + "\n")
    (site / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(extra)!r})\n")
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    assert by_path(found, str(extra)) == Source("sitecustomize", str(site / "sitecustomize.py"))
    assert mapped_by(found, graph()) == Source("pth-import", str(extra / "inner.pth"), 1, loads(graph()))


@pytest.mark.parametrize(("flags", "variables", "why"), [
    ((), {}, "enabled"), ((), {"PYTHONNOUSERSITE": "1"}, "PYTHONNOUSERSITE"), (("-s",), {}, "-s"),
    (("-I",), {}, "-I"), (("-E",), {"PYTHONNOUSERSITE": "1"}, "enabled")])
def test_usercustomize_runs_only_where_the_user_site_is_on(flags: tuple[str, ...], variables: dict[str, str],
                                                           why: str, env: dict[str, str], work: Path) -> None:
    env.update(variables)
    user_site = observe(BASE, env, cwd=str(work), flags=("-S",)).user_site
    assert user_site.why == "-S" and user_site.path is None
    where = Path(observe(BASE, env, cwd=str(work)).user_site.path or "")
    where.mkdir(parents=True)
    (where / "usercustomize.py").write_text(loads(graph()) + "\n")
    found = observe(BASE, env, cwd=str(work), flags=flags)
    agrees(found, env, work, flags)
    assert (found.user_site.why, found.user_site.enabled) == (why, why == "enabled")
    if why == "enabled":
        assert found.customize[1].file == str(where / "usercustomize.py")
        assert mapped_by(found, graph()) == Source("usercustomize", str(where / "usercustomize.py"), 1, loads(graph()))
        assert by_path(found, str(where)).kind == "user-site"
    else:
        assert found.customize[1].file is None and mapped_by(found, graph()) is None
        assert str(where) not in found.sys_path


def test_a_venv_turns_the_user_site_off_unless_it_includes_the_system_site(
        venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path) -> None:
    python, _ = venv()
    alone = observe(python, env, cwd=str(work))
    assert (alone.user_site.why, alone.system_site_packages) == ("venv", False)
    python, _ = venv(system_site=True, name="with-system")
    shared = observe(python, env, cwd=str(work))
    agrees(shared, env, work)
    assert (shared.user_site.why, shared.system_site_packages) == ("enabled", True)
    assert {e.source.kind for e in shared.path if e.path.startswith(sys.base_prefix) and "site-packages" in e.path} \
        <= {"site-packages"}


# --- what the frameworks' Python loaders get on that sys.path ---------------------------------------------------

def _wheel(into: Path, tag: str) -> None:
    """The nvidia/ tree of a cuDNN wheel, as pip puts it into a site folder (`--target` alike): its __init__ files
    copied, its lib folder linked."""
    source = site_folder(tag) / "nvidia"
    (into / "nvidia" / "cudnn").mkdir(parents=True)
    for init in ("__init__.py", "cudnn/__init__.py"):
        if (source / init).exists():
            (into / "nvidia" / init).write_text((source / init).read_text())
    (into / "nvidia" / "cudnn" / "lib").symlink_to(source / "cudnn" / "lib")


@pytest.mark.parametrize(("target", "installed", "jax_from"), [
    ("cu12-9.0.0.312", "cu12-9.28.0.42", "target"),  # the target's nvidia/__init__.py: a regular package, first
    ("cu12-9.28.0.42", "cu12-9.0.0.312", "site"),  # a regular nvidia later on the path wins over a namespace one
    ("cu12-9.28.0.42", "cu13-9.28.0.42", "target")])  # both namespace packages: their folders merge, target's first
def test_a_pip_target_folder_on_pythonpath_gives_torch_and_jax_their_cudnn(
        target: str, installed: str, jax_from: str, venv: Callable[..., tuple[str, Path]], env: dict[str, str],
        work: Path, tmp_path: Path) -> None:
    python, site = venv()
    folder = tmp_path / "target"
    _wheel(folder, target)
    _wheel(site, installed)
    env["PYTHONPATH"] = str(folder)
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    assert by_path(found, str(folder)) == Source("pythonpath", text=str(folder))
    # PyTorch: the first sys.path entry holding nvidia/cudnn/lib/libcudnn.so.*, whatever Python's packages say
    assert found.torch_preload("cudnn", "libcudnn.so.*[0-9]", cuda_major=12) == str(
        folder / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    # JAX: nvidia.cudnn.__path__[0], as the interpreter itself computes it
    jax = found.package("nvidia.cudnn")
    done = subprocess.run([python, "-c", "import nvidia.cudnn as m; print(repr(list(m.__path__)))"], env=env,
                          cwd=work, capture_output=True, text=True, check=True)
    assert jax is not None and list(jax.folders) == ast.literal_eval(done.stdout)
    assert jax.folders[0] == str((folder if jax_from == "target" else site) / "nvidia" / "cudnn")
    assert (jax.init is None) == (len(jax.folders) > 1 or not (Path(jax.folders[0]) / "__init__.py").exists())


@pytest.mark.parametrize("version", PYTHONS)
def test_a_cudnn_in_the_current_folder_is_what_jax_gets_through_the_empty_entry(
        version: str, venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path) -> None:
    python, site = venv(interpreter(version))
    _wheel(work, "cu12-9.28.0.42")
    _wheel(site, "cu13-9.28.0.42")
    found = observe(python, env, cwd=str(work))
    jax = found.package("nvidia.cudnn")
    done = subprocess.run([python, "-c", "import nvidia.cudnn as m; print(repr(list(m.__path__)))"], env=env,
                          cwd=work, capture_output=True, text=True, check=True)
    # 3.10's FileFinder writes the current folder as "CWD/.": the same folders
    assert jax is not None and list(jax.folders) == [os.path.normpath(p) for p in ast.literal_eval(done.stdout)]
    assert jax.folders == (str(work / "nvidia" / "cudnn"), str(site / "nvidia" / "cudnn"))
    assert found.torch_preload("cudnn", "libcudnn.so.*[0-9]", cuda_major=12) == str(
        work / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")


def test_a_module_named_nvidia_earlier_on_the_path_hides_the_package(tmp_path: Path) -> None:
    (tmp_path / "first").mkdir()
    (tmp_path / "first" / "nvidia.py").write_text("")
    _wheel(tmp_path / "second", "cu12-9.28.0.42")
    paths = [str(tmp_path / "first"), str(tmp_path / "second")]
    assert package(paths, "nvidia.cudnn") is None
    done = subprocess.run([sys.executable, "-S", "-c", "import nvidia.cudnn"], env={"PYTHONPATH": ":".join(paths)},
                          capture_output=True, text=True, check=False)
    assert "ModuleNotFoundError" in done.stderr
    assert package(paths[1:], "nvidia.cudnn") is not None


def test_torch_preload_follows_the_rules_of_each_release(tmp_path: Path) -> None:
    for entry, place in (("cu13", "nvidia/cu13/lib"), ("pex", "cublas/lib"), ("wheel", "nvidia/cublas/lib")):
        (tmp_path / entry / place).mkdir(parents=True)
        (tmp_path / entry / place / "libcublas.so.13").write_text("")
    paths = [str(tmp_path / entry) for entry in ("cu13", "pex", "wheel")]

    def first(torch: tuple[int, int], cuda: int | None) -> str | None:
        found = torch_preload(paths, "cublas", "libcublas.so.*[0-9]", cuda_major=cuda, torch=torch)
        return found and os.path.relpath(found, tmp_path)

    assert first((2, 6), 13) == "wheel/nvidia/cublas/lib/libcublas.so.13"  # nvidia/<lib>/lib only
    assert first((2, 7), 13) == "pex/cublas/lib/libcublas.so.13"  # then <lib>/lib too (pytorch#149808)
    assert first((2, 9), 13) == "cu13/nvidia/cu13/lib/libcublas.so.13"  # then nvidia/cu13/lib (pytorch#163661)
    assert first((2, 9), None) == "pex/cublas/lib/libcublas.so.13"  # a CPU build has no CUDA major
    assert torch_preload([""], "cublas", "libcublas.so.*[0-9]", cuda_major=None, cwd=paths[2]) == os.path.join(
        paths[2], "nvidia/cublas/lib/libcublas.so.13")  # '' is the program's folder


# --- flags and the program's folder -------------------------------------------------------------------------------

@pytest.mark.parametrize("flags", [("-I",), ("-S",), ("-E",), ("-s",), ("-P",), ("-sE",), ("-X", "utf8", "-S")],
                         ids=" ".join)
def test_each_flag_gives_the_sys_path_and_the_objects_the_interpreter_has(
        flags: tuple[str, ...], venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path,
        tmp_path: Path) -> None:
    python, site = venv()
    (site / "zz-cudnn.pth").write_text(loads(graph()) + "\n")
    env["PYTHONPATH"] = str(tmp_path / "pp")
    found = observe(python, env, cwd=str(work), flags=flags)
    agrees(found, env, work, flags)
    no_site = any("S" in flag for flag in flags)
    assert (mapped_by(found, graph()) is None) == no_site  # -S: no .pth runs
    assert (str(tmp_path / "pp") in found.sys_path) == (flags not in (("-I",), ("-E",), ("-sE",)))
    assert (found.sys_path[:1] == ("",)) == (flags not in (("-I",), ("-P",)))


@pytest.mark.parametrize(("variables", "flags", "first"), [
    ({"PYTHONSAFEPATH": "1"}, (), False), ({"PYTHONSAFEPATH": "1"}, ("-E",), True)])
def test_pythonsafepath_keeps_the_program_folder_off_unless_the_environment_is_ignored(
        variables: dict[str, str], flags: tuple[str, ...], first: bool, venv: Callable[..., tuple[str, Path]],
        env: dict[str, str], work: Path) -> None:
    python, _ = venv()
    env.update(variables)
    found = observe(python, env, cwd=str(work), flags=flags)
    agrees(found, env, work, flags)
    assert (found.path[0].source.kind == "program") == first


def test_pythonhome_moves_the_interpreter_folders_and_is_named(env: dict[str, str], work: Path) -> None:
    env["PYTHONHOME"] = sys.base_prefix
    found = observe(BASE, env, cwd=str(work))
    agrees(found, env, work)
    stdlib = next(entry for entry in found.path if entry.path.endswith("lib-dynload"))
    assert stdlib.source == Source("interpreter", BASE, text=f"PYTHONHOME={sys.base_prefix}")


def test_a_bare_interpreter_name_is_searched_on_the_environments_path(
        venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path) -> None:
    python, site = venv()
    env["PATH"] = f"{os.path.dirname(python)}:{env['PATH']}"
    found = observe("python", env, cwd=str(work))
    assert found.interpreter == python and str(site) in found.sys_path
    with pytest.raises(StartupFailed) as failed:
        observe("no-such-python-anywhere", env, cwd=str(work))
    assert failed.value.why == "missing"


def test_entries_start_up_code_takes_off_are_listed_with_the_line(
        venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path, tmp_path: Path) -> None:
    python, site = venv()
    (tmp_path / "gone").mkdir()
    (site / "a.pth").write_text(f"{tmp_path / 'gone'}\n")
    line = f"import sys; sys.path.remove({str(tmp_path / 'gone')!r})"
    (site / "b.pth").write_text(line + "\n")
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    assert found.removed[0] == (str(tmp_path / "gone"), Source("pth-import", str(site / "b.pth"), 1, line))
    assert str(tmp_path / "gone") not in found.sys_path


@pytest.mark.parametrize(("argv", "read"), [
    (["python3", "-I", "-X", "utf8", "train.py", "--lr", "1"], ("python3", ("-I", "-X", "utf8"), "train.py")),
    (["python", "-sEc", "import torch"], ("python", ("-sE",), "-c")),
    (["python", "-c", "-S"], ("python", (), "-c")),
    (["python", "-Wignore", "-m", "torch.utils.collect_env"], ("python", ("-Wignore",), "-m")),
    (["python", "-W", "ignore", "--", "-odd.py"], ("python", ("-W", "ignore"), "-odd.py")),
    (["python", "--check-hash-based-pycs", "never", "-"], ("python", ("--check-hash-based-pycs", "never"), "-")),
    (["python", "-q"], ("python", ("-q",), "-"))])
def test_a_command_line_is_read_as_the_interpreter_reads_it(argv: list[str],
                                                            read: tuple[str, tuple[str, ...], str]) -> None:
    assert invocation(argv) == Invocation(*read)


@pytest.mark.parametrize("flags", [("-c",), ("-Ic",), ("script.py",), ("-I", "--")])
def test_options_that_hold_a_program_are_refused(flags: tuple[str, ...], env: dict[str, str], work: Path) -> None:
    with pytest.raises(UsageError):
        observe(BASE, env, cwd=str(work), flags=flags)


def test_a_command_observed_as_read_agrees_with_running_it(venv: Callable[..., tuple[str, Path]],
                                                          env: dict[str, str], work: Path) -> None:
    python, site = venv()
    (site / "zz-cudnn.pth").write_text(loads(graph()) + "\n")
    (work / "train.py").write_text(PROBE)
    argv = [python, "-s", "-X", "utf8", "train.py", "--epochs", "1"]
    read = invocation(argv)
    found = observe(read.interpreter, env, run_as=read.run_as, flags=read.flags, cwd=str(work))
    path, maps = real(python, env, work, program=argv[1:])
    assert list(found.sys_path) == path and sorted(m.path for m in found.mapped) == maps
    assert found.path[0].path == str(work)


def test_the_script_folder_comes_first_as_its_real_folder(venv: Callable[..., tuple[str, Path]], env: dict[str, str],
                                                          work: Path, tmp_path: Path) -> None:
    python, _ = venv()
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "probe.py").write_text(PROBE)
    (work / "link.py").symlink_to(tmp_path / "code" / "probe.py")
    found = observe(python, env, run_as="link.py", cwd=str(work))
    path, maps = real(python, env, work, program=("link.py",))
    assert list(found.sys_path) == path and sorted(m.path for m in found.mapped) == maps
    assert found.path[0] == PathEntry(str(tmp_path / "code"), Source("program", text="link.py"))
    (work / "probe_module.py").write_text(PROBE)
    as_module = observe(python, env, run_as="-m", cwd=str(work))
    assert list(as_module.sys_path) == real(python, env, work, program=("-m", "probe_module"))[0]
    assert as_module.path[0].path == str(work)


def test_the_loader_maps_ld_preload_before_any_python_code(venv: Callable[..., tuple[str, Path]], env: dict[str, str],
                                                          work: Path) -> None:
    python, _ = venv()
    env["LD_PRELOAD"] = graph()
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    assert mapped_by(found, graph()) == Source("loader")


def test_an_import_hook_a_pth_installs_is_listed_with_its_line(venv: Callable[..., tuple[str, Path]],
                                                               env: dict[str, str], work: Path) -> None:
    python, site = venv()
    (site / "hooks.py").write_text("import sys\nclass Finder:\n    @classmethod\n    def find_spec(cls, *args):\n"
                                   "        return None\nsys.meta_path.insert(0, Finder)\n")
    (site / "hooks.pth").write_text("import hooks\n")
    found = observe(python, env, cwd=str(work))
    finder = next(f for f in found.finders if f.name == "hooks.Finder")
    assert (finder.where, finder.source) == ("meta_path", Source("pth-import", str(site / "hooks.pth"), 1,
                                                                 "import hooks"))


# --- errors as data -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", PYTHONS)
def test_a_pth_line_that_raises_is_reported_with_the_line_site_names(
        version: str, venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path, tmp_path: Path) -> None:
    python, site = venv(interpreter(version))
    for name in ("before", "after"):
        (tmp_path / name).mkdir()
    (site / "bad.pth").write_text(f"{tmp_path / 'before'}\nimport no_such_module_here\n{tmp_path / 'after'}\n")
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    error = found.errors[0]
    assert (error.exception, error.file, error.line, error.fatal) == (
        "ModuleNotFoundError", str(site / "bad.pth"), 2, False)
    assert error.source == Source("pth-import", str(site / "bad.pth"), 2, "import no_such_module_here")
    assert f"Error processing line {error.line} of {site / 'bad.pth'}" in found.stderr  # site.py's own count
    assert [line.number for line in found.pth_files[0].lines] == [1, 2]  # "Remainder of file ignored"
    assert str(tmp_path / "before") in found.sys_path and str(tmp_path / "after") not in found.sys_path
    assert found.finished


def test_a_sitecustomize_that_raises_is_reported_and_one_that_exits_ends_start_up(
        venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path) -> None:
    python, site = venv()
    (site / "sitecustomize.py").write_text("import os\nraise ValueError('no GPU here')\n")
    found = observe(python, env, cwd=str(work))
    agrees(found, env, work)
    (error,) = found.errors
    assert (error.source, error.exception, error.message, error.file, error.line, error.fatal) == (
        Source("sitecustomize", str(site / "sitecustomize.py")), "ValueError", "no GPU here",
        str(site / "sitecustomize.py"), 2, False)
    assert found.finished
    (site / "sitecustomize.py").write_text("import sys\n\nsys.exit(3)\n")
    ended = observe(python, env, cwd=str(work))
    assert not ended.finished
    assert [(e.exception, e.line, e.fatal) for e in ended.errors] == [("SystemExit", 3, True)]
    done = subprocess.run([python, "-c", "print('first line')"], env=env, cwd=work, capture_output=True, text=True,
                          check=False)
    assert done.returncode != 0 and "first line" not in done.stdout  # the real program never reaches its first line


def test_modules_planted_in_the_current_folder_are_never_imported(
        venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path, tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    for name in ("json", "site", "os", "stat", "ast", "ctypes", "sitecustomize"):
        (work / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r} + ' ')\n")
    for python in (venv(interpreter("3.10"), name="venv310")[0], venv()[0]):  # 3.10 imports os from the stdlib
        found = observe(python, env, cwd=str(work))
        agrees(found, env, work)
        assert found.path[0] == PathEntry("", Source("program", text="-c"))  # where the program would find them
        assert not marker.exists(), marker.read_text()


def test_a_fifo_pth_is_reported_where_the_real_start_up_waits(venv: Callable[..., tuple[str, Path]],
                                                             env: dict[str, str], work: Path) -> None:
    python, site = venv()
    os.mkfifo(site / "waits.pth")
    started = time.monotonic()
    found = observe(python, env, cwd=str(work), timeout=20)
    assert time.monotonic() - started < 10
    assert [(path, source.kind, source.file) for path, source in found.blocked][:1] == [
        (str(site / "waits.pth"), "pth", str(site / "waits.pth"))]
    assert not found.finished
    with pytest.raises(subprocess.TimeoutExpired):  # the interpreter itself waits for a writer
        subprocess.run([python, "-c", "pass"], env=env, cwd=work, timeout=1.5, check=False)


def _file(path: Path, text: str, mode: int = 0o755) -> str:
    path.write_text(text)
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize(("make", "why"), [
    (lambda tmp: str(tmp / "absent"), "missing"),
    (lambda tmp: os.symlink(tmp / "gone", tmp / "python") or str(tmp / "python"), "missing"),
    (lambda tmp: str(tmp), "not-executable"),
    (lambda tmp: _file(tmp / "data.txt", "not a program\n", 0o644), "not-executable"),
    (lambda tmp: "/bin/true", "not-python"),
    (lambda tmp: _file(tmp / "noise", "#!/bin/sh\necho hello\n"), "not-python"),
    (lambda tmp: _file(tmp / "crash", "#!/bin/sh\nkill -SEGV $$\n"), "died"),
    (lambda tmp: interpreter("2.7"), "not-python"),
    (lambda tmp: interpreter("3.7"), "too-old")],
    ids=["missing", "dangling-link", "folder", "not-executable", "true", "shell", "crash", "python2.7", "python3.7"])
def test_an_interpreter_that_cannot_be_observed_is_a_typed_error(make: Callable[[Path], str], why: str,
                                                                 env: dict[str, str], tmp_path: Path) -> None:
    python = make(tmp_path)
    with pytest.raises(StartupFailed) as failed:
        observe(python, env, cwd=str(tmp_path))
    assert (failed.value.why, failed.value.path) == (why, python)


def test_a_current_folder_that_is_not_there_is_a_usage_error(env: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        observe(BASE, env, cwd=str(tmp_path / "absent"))


def test_a_start_up_that_never_ends_is_a_timeout_naming_where_it_was(venv: Callable[..., tuple[str, Path]],
                                                                    env: dict[str, str], work: Path) -> None:
    python, site = venv()
    (site / "slow.pth").write_text("import time; time.sleep(60)\n")
    started = time.monotonic()
    with pytest.raises(StartupFailed) as failed:
        observe(python, env, cwd=str(work), timeout=1)
    assert time.monotonic() - started < 5
    assert failed.value.why == "timeout" and f"in {site / 'slow.pth'} line 1" in failed.value.reason
    (site / "slow.pth").write_text(f"{site}\n")
    (site / "sitecustomize.py").write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(StartupFailed) as failed:
        observe(python, env, cwd=str(work), timeout=1)
    assert failed.value.reason.endswith("importing sitecustomize")  # not the .pth line that ran last


def test_a_start_up_that_dies_in_a_step_names_it_and_is_observed_again_without_it(
        venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path) -> None:
    """A .pth line, or sitecustomize's dlopen, that kills the interpreter (SIGBUS, as a cuDNN whose graph is cut
    short does): the failure names the step (`Step`: the .pth file and line; the customize module and the line of
    its last dlopen), and the start-up observed with that step skipped keeps the rest of it."""
    import signal

    python, site = venv()
    kill = f"import os; os.kill(os.getpid(), {int(signal.SIGBUS)})"
    (site / "000-dies.pth").write_text(kill + "\n")
    (site / "zz-path.pth").write_text(f"{work}\n")
    with pytest.raises(StartupFailed) as failed:
        observe(python, env, cwd=str(work))
    assert failed.value.why == "died" and failed.value.step is not None
    assert (failed.value.step.kind, failed.value.step.file, failed.value.step.text) == \
        ("pth-import", str(site / "000-dies.pth"), kill)
    started = observe(python, env, cwd=str(work), skip=(failed.value.step,))
    assert str(work) in started.sys_path  # the other .pth file ran
    (site / "000-dies.pth").unlink()
    (site / "sitecustomize.py").write_text(f"import ctypes\nctypes.CDLL('libm.so.6')\n{kill}\n")
    with pytest.raises(StartupFailed) as failed:
        observe(python, env, cwd=str(work))
    step = failed.value.step
    assert step is not None and (step.kind, step.file, step.line, step.text) == \
        ("sitecustomize", str(site / "sitecustomize.py"), 2, "ctypes.CDLL('libm.so.6')")
    assert str(work) in observe(python, env, cwd=str(work), skip=(step,)).sys_path


def test_what_start_up_code_writes_to_the_observers_descriptor_names_no_other_file(tmp_path: Path) -> None:
    """Start-up code knows the observer's descriptor (it is in sys.argv) and can write lines of its own before it
    dies: a step it names is kept to files of the step's own kind (a fix would edit them), and a customize line is
    read only from a small regular file (never a FIFO, never /dev/zero)."""
    from cudnnload.resolve.startup import _running

    customize = ("cause", ("site", None, None, "execsitecustomize", None))
    fifo = tmp_path / "sitecustomize.py"
    os.mkfifo(fifo)
    for path in ("/dev/zero", "/etc/passwd", str(fifo)):
        step = _running([customize, ("trigger", ("ctypes.dlopen", "x", None, (path, 1)))])
        assert step is not None and step.kind == "sitecustomize" and step.text is None, step
        assert step.file in (None, str(fifo))
    assert _running([("cause", ("pth-import", "/etc/sudoers", 1, "Defaults env_reset", 0))]) is None


@pytest.mark.parametrize(("version", "ends"), [("3.10", True), ("3.11", False)])
def test_a_broken_site_module_on_pythonpath_ends_start_up_unless_site_is_frozen(
        version: str, ends: bool, venv: Callable[..., tuple[str, Path]], env: dict[str, str], work: Path,
        tmp_path: Path) -> None:
    python, _ = venv(interpreter(version))
    (tmp_path / "pp").mkdir()
    (tmp_path / "pp" / "site.py").write_text("raise ImportError('planted')\n")
    env["PYTHONPATH"] = str(tmp_path / "pp")
    found = observe(python, env, cwd=str(work))
    assert found.finished != ends  # 3.11+ freezes site (and os): PYTHONPATH cannot shadow them
    assert [(e.exception, e.message, e.file, e.line) for e in found.errors] == ([
        ("ImportError", "planted", str(tmp_path / "pp" / "site.py"), 1)] if ends else [])
    done = subprocess.run([python, "-c", "print('first line')"], env=env, cwd=work, capture_output=True, text=True,
                          check=False)
    assert ("first line" in done.stdout) != ends
