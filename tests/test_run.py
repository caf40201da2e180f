"""`cudnnload run -- COMMAND`: an unmodified program runs with a proven cuDNN pinned by LD_PRELOAD. Shown with the
real loader (LD_DEBUG=libs, the program's /proc/self/maps): every libcudnn soname is served from the set whatever
LD_LIBRARY_PATH says, and the program's cudnnGetVersion is the pinned release with every VersionCheck 0. An
incomplete set, another cuDNN in the user's LD_PRELOAD and a set-user-ID program are refused before the program
starts; the program's exit status, signals, streams and terminal are its own (cudnnload execs it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudnnload.cli import EXIT_USAGE, _run_args, make_cli
from cudnnload.judge.choose import held_findings
from cudnnload.loading.pin import run_environment
from cudnnload.resolve.catalog import generation
from cudnnload.resolve.process import Preload
from cudnnload.resolve.versions import Release
from cudnnload.verdicts import ActionKind
from tests.test_reliability_process import under_terminal
from tests.wheels import cache_root, lib_folder, python_path, site_folder

pytestmark = pytest.mark.wheels
ROOT = Path(__file__).resolve().parents[1]
W928, W90, W897 = "cu12-9.28.0.42", "cu12-9.0.0.312", "cu12-8.9.7.29"
CHECKS = ("cudnnGraphVersionCheck", "cudnnOpsVersionCheck", "cudnnCnnVersionCheck", "cudnnAdvVersionCheck",
          "cudnnSubquadraticOpsVersionCheck")

# A program that uses cuDNN as frameworks do: dlopen of the soname, then the calls; what it got, as JSON.
PROGRAM = textwrap.dedent(f"""
    import ctypes, json, os
    shim = ctypes.CDLL("libcudnn.so.9")
    maps = sorted({{line.split()[-1] for line in open("/proc/self/maps") if "/libcudnn" in line}})
    print(json.dumps({{"version": shim.cudnnGetVersion(), "checks": [getattr(shim, name)() for name in {CHECKS!r}],
                      "mapped": maps, "pid": os.getpid(), "preload": os.environ.get("LD_PRELOAD", "")}}))
""")


def cudnnload_run(*args: str, env: dict[str, str] | None = None, cache: Path | None = None,
                  **popen: object) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache or cache_root()),
               **(env or {})}
    return subprocess.run([sys.executable, "-m", "cudnnload", "run", *args], capture_output=True, text=True,
                          env=environ, timeout=180, check=False, **popen)  # type: ignore[call-overload]


def refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit 2, one line on stderr naming each of ``words``, and the program never ran (it prints)."""
    assert done.returncode == EXIT_USAGE and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("cudnnload: error: "), done.stderr
    assert all(word in done.stderr for word in words), (words, done.stderr)


def the_set(tag: str) -> list[str]:
    """The files of a wheel the pin preloads here: all but what cannot load on this machine."""
    folder = lib_folder(tag)
    files = [str(folder / lib.soname) for lib in generation(9).libraries if (folder / lib.soname).exists()]
    return [path for path in files if "runtime_compiled" not in path or os.path.exists(_LIBCUDA)]


_LIBCUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"


def test_every_soname_is_served_from_the_pinned_set_with_another_release_first_on_ld_library_path(
        tmp_path: Path) -> None:
    new, old = lib_folder(W928), lib_folder(W90)
    cudnnload_run("--cudnn", str(new), "--", "/bin/true", env={"LD_LIBRARY_PATH": str(old)})  # proven, remembered
    env = {"LD_LIBRARY_PATH": str(old), "LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": str(tmp_path / "ld")}
    running = subprocess.Popen([sys.executable, "-m", "cudnnload", "run", "--cudnn", str(new), "--",
                                sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONPATH": python_path(ROOT),
                                               "CUDNNLOAD_CACHE": str(cache_root()), **env})
    out, err = running.communicate(timeout=120)
    assert running.returncode == 0, err
    seen = json.loads(out)
    assert seen["version"] == 92800 and seen["checks"] == [0] * len(CHECKS)
    assert seen["pid"] == running.pid  # the program is the process cudnnload was: nothing of it is left
    assert seen["mapped"] == sorted(the_set(W928))  # each soname once, each from the set
    assert seen["preload"] == ":".join(the_set(W928))  # leaves first, shim last
    # glibc's own account of the program: every cuDNN it initialized is the set's. The only libcudnn names it
    # searched for are the ones the 9.28 shim and graph ask first (X.so.9.28.0, X.so.9.28), which no folder
    # holds; their X.so.9 was answered by the preloaded file without a search. 9.0's folder, first on
    # LD_LIBRARY_PATH, was searched (libz), and none of its files was taken.
    log = (tmp_path / f"ld.{running.pid}").read_text()
    initialized = {line.split("calling init: ")[1].strip() for line in log.splitlines() if "calling init: " in line}
    assert {path for path in initialized if "/libcudnn" in path} == set(the_set(W928))
    searched = {line.split("find library=")[1].split()[0] for line in log.splitlines() if "find library=" in line}
    assert {name for name in searched if name.startswith("libcudnn")} <= {
        f"{Path(path).name}.{suffix}" for path in the_set(W928) for suffix in ("28.0", "28")}
    assert f"trying file={old}/libz.so.1" in log and str(old) not in "".join(initialized)


def test_a_c_program_linked_against_a_broken_install_runs_on_the_pinned_set() -> None:
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        pytest.skip("gcc builds the scenario program")
    from fixtures.scenarios.layouts import by_name, ensure

    layout = by_name("consumer-program-rpath")  # NEEDs libcudnn.so.9 through its RPATH, a folder without cnn
    program = str(ensure(layout) / "bin" / "program")
    steps = ["version:cudnnGetVersion", *(f"check:{name}" for name in CHECKS)]
    alone = subprocess.run([program, "-", *steps], capture_output=True, text=True, timeout=60, check=False)
    assert "end check:cudnnCnnVersionCheck status=0" not in alone.stdout  # its own folder has no cnn
    done = cudnnload_run("--cudnn", str(lib_folder(W928)), "--", program, "-", *steps)
    assert done.returncode == 0, done.stderr
    assert "end version:cudnnGetVersion value=92800" in done.stdout
    assert all(f"end check:{name} status=0" in done.stdout for name in CHECKS), done.stdout
    mapped = [line.split(" ", 1)[1] for line in done.stdout.splitlines() if line.startswith("mapped ")]
    assert sorted(mapped) == sorted(the_set(W928))


def test_an_incomplete_install_is_refused_before_the_program_starts_naming_the_missing_sublibrary(
        tmp_path: Path) -> None:
    farm = tmp_path / "lib"
    farm.mkdir()
    for path in lib_folder(W928).iterdir():
        if path.name != "libcudnn_graph.so.9":
            (farm / path.name).symlink_to(path)
    done = cudnnload_run("--cudnn", str(farm), "--", sys.executable, "-c", "print('ran')",
                         env={"LD_LIBRARY_PATH": str(lib_folder(W90))}, cache=tmp_path / "cache")
    refused(done, "libcudnn_graph.so.9 is missing", str(farm))


def test_an_ld_preload_entry_of_another_release_is_refused_naming_the_entry(tmp_path: Path) -> None:
    old_graph = str(lib_folder(W90) / "libcudnn_graph.so.9")
    done = cudnnload_run("--cudnn", str(lib_folder(W928)), "--", sys.executable, "-c", "print('ran')",
                         env={"LD_PRELOAD": old_graph})
    refused(done, "LD_PRELOAD", old_graph, "cuDNN 9.0.0", "needs its own graph", f"remove {old_graph} from LD_PRELOAD")


def test_an_ld_preload_entry_of_another_major_is_refused_too() -> None:
    old_shim = str(lib_folder(W897) / "libcudnn.so.8")
    done = cudnnload_run("--cudnn", str(lib_folder(W928)), "--", sys.executable, "-c", "print('ran')",
                         env={"LD_PRELOAD": old_shim})
    refused(done, "LD_PRELOAD", old_shim, "would share the process with it")


def test_an_entry_that_brings_another_cudnn_by_what_it_needs_is_named_and_its_fix_removes_that_entry() -> None:
    brought = Preload("libcudnn_graph.so.9", "/old/libcudnn_graph.so.9", "/opt/tool/libhook.so",
                      soname="libcudnn_graph.so.9")
    [finding] = held_findings(Release(9, 28, 0), "/new", {"libcudnn_graph.so.9", "libcudnn.so.9"},
                              [(brought, Release(9, 0, 0))])
    assert finding.message == ("LD_PRELOAD (its entry /opt/tool/libhook.so, which NEEDs libcudnn_graph.so.9) puts "
                               "/old/libcudnn_graph.so.9 (cuDNN 9.0.0) in every process; cuDNN 9.28.0 from /new "
                               "needs its own graph")
    assert (finding.subject.variable, finding.subject.entry) == ("LD_PRELOAD", "/opt/tool/libhook.so")
    [action] = finding.fix.actions
    assert (action.do, action.variable, action.entry) == (ActionKind.ENV_REMOVE_ENTRY, "LD_PRELOAD",
                                                          "/opt/tool/libhook.so")


def test_replace_preload_leaves_the_other_cudnn_out_says_so_and_keeps_the_rest() -> None:
    old_graph = str(lib_folder(W90) / "libcudnn_graph.so.9")
    own_ops = str(lib_folder(W928) / "libcudnn_ops.so.9")  # the set's own file: no other cuDNN, kept
    done = cudnnload_run("--replace-preload", "--cudnn", str(lib_folder(W928)), "--", sys.executable, "-c", PROGRAM,
                         env={"LD_PRELOAD": f"{old_graph} libz.so.1:{own_ops}"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"cudnnload: left out of LD_PRELOAD, as each maps another cuDNN: {old_graph}"]
    seen = json.loads(done.stdout)
    assert seen["preload"] == ":".join([*the_set(W928), "libz.so.1", own_ops])
    assert seen["mapped"] == sorted(the_set(W928)) and seen["checks"] == [0] * len(CHECKS)


def test_exit_status_streams_and_death_by_a_signal_are_the_programs() -> None:
    folder = str(lib_folder(W928))
    echo = "import sys; sys.stdout.write(sys.stdin.read().upper()); sys.stderr.write('to stderr\\n'); sys.exit(7)"
    done = cudnnload_run("--cudnn", folder, "--", sys.executable, "-c", echo, input="through stdin\n")
    assert (done.returncode, done.stdout, done.stderr) == (7, "THROUGH STDIN\n", "to stderr\n")
    killed = cudnnload_run("--cudnn", folder, "--", sys.executable, "-c",
                           "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert killed.returncode == -signal.SIGTERM  # a shell shows 143
    # the signals it starts with ignored are the ones it would have alone (Python's own SIGPIPE and SIGXFSZ are not)
    ignored = ["grep", "^SigIgn", "/proc/self/status"]
    alone = subprocess.run(ignored, capture_output=True, text=True, check=True).stdout
    assert cudnnload_run("--cudnn", folder, "--", *ignored).stdout == alone


def test_the_program_keeps_the_terminal() -> None:
    code = ("import os; fd = os.open('/dev/tty', os.O_RDWR); "
            "os.write(fd, f'tty {os.isatty(0)} {os.isatty(1)} {os.isatty(2)} {os.tcgetpgrp(0) == os.getpgrp()}\\n'"
            ".encode())")
    status, out = under_terminal([sys.executable, "-m", "cudnnload", "run", "--cudnn", str(lib_folder(W928)), "--",
                                  sys.executable, "-c", code])
    assert status == 0, out
    assert "tty True True True True" in out


def test_a_set_user_id_program_is_refused_as_ld_preload_would_not_reach_it(tmp_path: Path) -> None:
    program = tmp_path / "true"
    shutil.copy("/bin/true", program)
    program.chmod(0o4755)
    refused(cudnnload_run("--cudnn", str(lib_folder(W928)), "--", str(program)), str(program), "set-user-ID",
            "secure-execution mode")


def test_a_program_started_by_env_that_clears_ld_preload_is_refused_before_it_runs(tmp_path: Path) -> None:
    """``cudnnload run -- env -i PROGRAM`` (or ``-u LD_PRELOAD``, or env's own ``LD_PRELOAD=``): env takes the pin
    away and PROGRAM ran without it, with nothing said. Now refused in one line naming env's option, before anything
    runs; env's other uses run pinned as before."""
    folder = str(lib_folder(W928))
    mark = tmp_path / "ran"
    for options in (["-i"], ["-u", "LD_PRELOAD"], ["--unset=LD_PRELOAD"], ["LD_PRELOAD="], ["-"]):
        refused(cudnnload_run("--cudnn", folder, "--", "env", *options, "/usr/bin/touch", str(mark)), "env's",
                "takes LD_PRELOAD away")
        assert not mark.exists()
    done = cudnnload_run("--cudnn", folder, "--", "env", "-u", "HOME", "A=1", "/bin/sh", "-c", 'echo "$LD_PRELOAD"')
    assert done.returncode == 0 and folder in done.stdout, done


def test_a_launcher_that_starts_the_program_elsewhere_is_refused_before_it_runs(tmp_path: Path) -> None:
    """``cudnnload run -- ssh HOST PROGRAM`` (``docker run``/``exec``, ``podman``, ``kubectl exec``, ``systemd-run``
    without ``--scope``): the program starts on another machine, in a container or under the service manager, whose
    environment this process's LD_PRELOAD never reaches; it ran unpinned, with nothing said. Refused in one line
    before anything runs; their other uses (``docker ps``, ``systemd-run --scope``, ``-E``) run pinned."""
    folder = str(lib_folder(W928))
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("ssh", "docker", "podman", "kubectl", "systemd-run"):
        (tools / name).write_text('#!/bin/sh\necho "$LD_PRELOAD"\n')
        (tools / name).chmod(0o755)
    path = {"PATH": f"{tools}:{os.environ.get('PATH', os.defpath)}"}
    for launcher, where in ((["ssh", "gpu1", "python", "train.py"], "on another machine"),
                            (["docker", "run", "--gpus", "all", "img", "python"], "in a container"),
                            (["docker", "container", "exec", "c", "python"], "in a container"),
                            (["podman", "exec", "c", "python"], "in a container"),
                            (["kubectl", "exec", "pod", "--", "python"], "in a pod"),
                            (["systemd-run", "--user", "python", "train.py"], "service manager")):
        refused(cudnnload_run("--cudnn", folder, "--", *launcher, env=path), launcher[0], where, "LD_PRELOAD")
    for kept in (["docker", "ps"], ["systemd-run", "--user", "--scope", "python"],
                 ["systemd-run", "-E", "LD_PRELOAD", "python"]):
        done = cudnnload_run("--cudnn", folder, "--", *kept, env=path)
        assert done.returncode == 0 and folder in done.stdout, done


def test_a_missing_program_or_none_is_one_line_and_exit_2() -> None:
    refused(cudnnload_run("--cudnn", str(lib_folder(W928)), "--", "no-such-program-here"), "no-such-program-here",
            "not found")
    refused(cudnnload_run("--cudnn", str(lib_folder(W928))), "no program to run")
    refused(cudnnload_run("--cudnn", str(lib_folder(W928)), "--for", "torch", "--", "true"), "not both")


def test_a_warm_run_imports_no_search_no_elf_reader_no_probe_and_no_click() -> None:
    folder = str(lib_folder(W928))
    for _ in range(3):  # a verdict holds each file's change time, which another test run's hard links move
        cudnnload_run("--cudnn", folder, "--", "/bin/true")
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "cudnnload", "run", "--cudnn", folder, "--",
                               "/bin/true"], capture_output=True, text=True, timeout=60, check=False,
                              env={**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root())})
        assert done.returncode == 0, done.stderr
        imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                    if line.startswith("import time:")}
        if "cudnnload.loading.probe" not in imported:
            break
    assert "cudnnload.loading.plans" in imported
    assert imported & {"click", "cudnnload.resolve.discovery", "cudnnload.resolve.elf", "cudnnload.loading.probe",
                       "cudnnload.judge.inventory", "cudnnload.diagnose.inventory", "cudnnload.diagnose.launch",
                       "dataclasses"} == set(), done.stderr


def test_for_a_framework_not_installed_is_refused_before_the_program_starts() -> None:
    """The choice by a framework's rules: tests/test_frameworks.py (a PyTorch built and pinned as pip leaves it)."""
    site = site_folder(W928)  # the wheel on the path, as pip installs it; no torch
    done = cudnnload_run("--for", "torch", "--", sys.executable, "-c", PROGRAM,
                         env={"PYTHONPATH": python_path(site, ROOT)})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("cudnnload: error: torch is not installed on this Python's path")


def test_run_environment_gives_the_environ_with_the_set_first_in_ld_preload(tmp_path: Path) -> None:
    env = {**os.environ, "CUDNNLOAD_CACHE": str(cache_root()), "LD_PRELOAD": "libz.so.1",
           "LD_LIBRARY_PATH": str(lib_folder(W90))}
    pinned = run_environment(lib_folder(W928), environ=env)
    assert str(pinned.release) == "9.28.0" and pinned.files == tuple(the_set(W928))
    assert pinned.environ == {**env, "LD_PRELOAD": ":".join([*the_set(W928), "libz.so.1"])}
    assert pinned.removed == () and pinned.notes == ()
    assert env["LD_PRELOAD"] == "libz.so.1"  # the caller's mapping is not changed


@pytest.mark.parametrize("words", [["--cudnn", "/x", "--", "prog"], ["--cudnn=/x", "--for", "jax", "--", "prog", "-a"],
                                   ["--replace-preload", "--for=torch", "--for", "jax", "--", "prog", "--cudnn"],
                                   ["--", "prog"]])
def test_the_fast_path_reads_the_command_line_as_the_click_command_does(words: list[str]) -> None:
    parsed = _run_args(list(words))
    command = make_cli().commands["run"]
    context = command.make_context("run", list(words))
    assert parsed == (context.meta["command"], context.params["cudnn"], context.params["frameworks"],
                      context.params["replace_preload"])


@pytest.mark.parametrize("words", [["--help", "--", "prog"], ["--cudnn"], ["--bogus", "--", "prog"], ["prog"]])
def test_anything_else_goes_to_the_click_command(words: list[str]) -> None:
    assert _run_args(list(words)) is None


def test_a_python_of_another_environment_gets_the_cudnn_its_own_path_holds(tmp_path: Path) -> None:
    """``cudnnload run -- /other/venv/bin/python ...`` (and any ``python3`` when cudnnload is installed with pipx,
    in an environment no program uses): the set pinned is the one that Python's path holds; cudnnload's own path
    holds none here, and nothing was pinned. With nothing to pin at all, the program runs as without cudnnload
    and one line says so: `run` never makes a program fail that runs without it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    [site] = (venv / "lib").glob("python*/site-packages")
    (site / "cudnn-wheel.pth").write_text(f"{site_folder(W928)}\n")
    done = cudnnload_run("--", str(venv / "bin" / "python"), "-c", PROGRAM, cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["version"] == 92800 and got["preload"].startswith(str(lib_folder(W928))), got
    bare = cudnnload_run("--", sys.executable, "-c", "print('ran')", cache=tmp_path / "cache",
                         env={"LD_LIBRARY_PATH": "", "CUDNN_PATH": ""})
    if "nothing pinned" in bare.stderr:  # no cuDNN on this machine's own search path (CI)
        assert bare.returncode == 0 and bare.stdout == "ran\n"
        assert bare.stderr.startswith("cudnnload: nothing pinned (no loadable cuDNN") and bare.stderr.count("\n") == 1
