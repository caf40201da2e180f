"""`cudnnload doctor TARGET` and `doctor -- COMMAND` from the command line: each form of target, and bad
input answered in one line with exit 2 (or 1 for a problem it found), never a traceback or a hang."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudnnload.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from tests.wheels import cache_root, lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command in a fresh process (it maps no cuDNN of this test process)."""
    environ = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root()), **(env or {})}
    return subprocess.run([sys.executable, "-m", "cudnnload", *args], capture_output=True, text=True, env=environ,
                          timeout=timeout, check=False)


def one_line_error(done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("cudnnload: error: ") and all(word in done.stderr for word in words), done.stderr


def test_a_missing_target_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    one_line_error(cli("doctor", str(tmp_path / "nope.so")), EXIT_USAGE, str(tmp_path / "nope.so"), "no such file")


def test_a_file_that_is_not_elf_and_not_cudnn_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# not a library\n")
    one_line_error(cli("doctor", str(tmp_path / "README.md")), EXIT_USAGE, "not an ELF file")


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_a_fifo_or_a_device_is_refused_at_once_without_reading_it(tmp_path: Path, make: str) -> None:
    if make == "fifo":
        target = tmp_path / "libcudnn.so.9"
        os.mkfifo(target)
        kind = "a FIFO"
    else:
        target, kind = Path("/dev/zero"), "a character device"
    started = time.monotonic()
    done = cli("doctor", str(target), timeout=30)
    assert time.monotonic() - started < 20
    one_line_error(done, EXIT_USAGE, str(target), kind)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_target_is_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "libtool.so"
    target.write_bytes(b"\x7fELF")
    target.chmod(0)
    one_line_error(cli("doctor", str(target)), EXIT_USAGE, "ermission denied")
    target.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_a_cudnn_named_file_that_is_not_elf_is_a_problem_found_not_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "libcudnn.so.9").write_text("version https://git-lfs.github.com/spec/v1\n")
    done = cli("doctor", str(tmp_path / "libcudnn.so.9"))
    assert done.returncode == EXIT_PROBLEMS and "Traceback" not in done.stderr
    assert "not-elf" in done.stdout and "dlopen(\"libcudnn.so.9\")" in done.stdout
    assert (tmp_path / "libcudnn.so.9").read_text().startswith("version")  # nothing of the user's is changed


def test_a_soname_nothing_provides_says_what_dlopen_will_answer(tmp_path: Path) -> None:
    done = cli("doctor", "libcudnn.so.7", env={"LD_LIBRARY_PATH": str(tmp_path)})
    if "ld-cache" in done.stdout:
        pytest.skip("this machine has a cuDNN 7 in ld.so.cache")
    assert done.returncode == EXIT_PROBLEMS and "Traceback" not in done.stderr
    assert "libcudnn.so.7: cannot open shared object file" in done.stdout and "fix:" in done.stdout


@pytest.mark.wheels
def test_a_soname_on_ld_library_path_is_the_install_dlopen_gets() -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))
    done = cli("doctor", "libcudnn.so.9", "--json", env={"LD_LIBRARY_PATH": folder})
    assert done.returncode in (EXIT_OK, EXIT_PROBLEMS), done.stderr
    import json

    report = json.loads(done.stdout)["result"]
    assert report["target"]["kind"] == "soname" and report["target"]["how"] == "ld-library-path"
    assert report["chosen"] == folder and report["release"] == "9.28.0"


@pytest.mark.wheels
def test_which_from_a_cudnn8_shim_resolves_cudnn8_sublibraries() -> None:
    folder = str(lib_folder("cu12-8.9.7.29"))
    done = cli("which", "--json", "--from", f"{folder}/libcudnn.so.8")
    import json

    steps = json.loads(done.stdout)["result"]["steps"]
    assert {s["library"] for s in steps} == {"shim", "ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer",
                                             "adv_train"}
    assert all(s["path"].startswith(folder) for s in steps)


@pytest.mark.wheels
def test_inspect_of_the_shim_file_is_the_install_it_belongs_to() -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))
    import json

    by_file = json.loads(cli("inspect", "--json", f"{folder}/libcudnn.so.9").stdout)["result"]["installs"]
    by_folder = json.loads(cli("inspect", "--json", folder).stdout)["result"]["installs"]
    assert len(by_file) == len(by_folder) == 1
    assert by_file[0]["plan"] == by_folder[0]["plan"] and len(by_file[0]["files"]) == 10
    assert not any(f["code"] == "missing-sublibrary" for f in by_file[0]["findings"])


def test_a_command_that_does_not_exist_is_a_usage_error() -> None:
    one_line_error(cli("doctor", "--", "no-such-program-cudnnload"), EXIT_USAGE, "no-such-program-cudnnload",
                   "no such command")


def test_a_command_that_hangs_is_killed_with_the_children_it_started(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {marker}; wait"
    started = time.monotonic()
    done = cli("doctor", "--timeout", "2", "--", "sh", "-c", script, timeout=60)
    assert time.monotonic() - started < 30
    assert done.returncode == EXIT_PROBLEMS and "program-timed-out" in done.stdout and "Traceback" not in done.stderr
    child = int(marker.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "zombie" in Path(f"/proc/{child}/status").read_text().lower()


def test_a_program_without_cudnn_is_healthy_and_its_output_passes_through() -> None:
    done = cli("doctor", "--", sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)")
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert done.stdout.startswith("out\n") and "err" in done.stderr
    assert "no cuDNN, cuBLAS, NVRTC or driver library was mapped" in done.stdout


def test_a_program_that_fails_on_its_own_says_so_without_blaming_cudnn() -> None:
    done = cli("doctor", "--", sys.executable, "-c", "raise SystemExit(3)")
    assert done.returncode == EXIT_PROBLEMS
    assert "program-failed" in done.stdout and "exited with status 3" in done.stdout


def test_target_and_command_together_is_a_usage_error(tmp_path: Path) -> None:
    one_line_error(cli("doctor", str(tmp_path), "--", "true"), EXIT_USAGE, "not both")


@pytest.mark.wheels
def test_a_library_the_linker_log_cannot_show_is_still_seen_in_the_maps() -> None:
    """The program re-executes itself (same process) without LD_DEBUG: its linker writes no log, as for a
    setuid program; the cuDNN it maps shows in /proc/PID/maps all the same."""
    shim = lib_folder("cu12-9.28.0.42") / "libcudnn.so.9"
    program = f"import ctypes, time; ctypes.CDLL({str(shim)!r}); time.sleep(0.6)"
    done = cli("doctor", "--", "sh", "-c", f'exec env -u LD_DEBUG -u LD_DEBUG_OUTPUT {sys.executable} -c "{program}"')
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert "also mapped (seen in /proc/PID/maps" in done.stdout and "unlogged-load" in done.stdout
    assert os.path.realpath(shim) in done.stdout and "was mapped" not in done.stdout
    assert f"ran with cuDNN from {os.path.dirname(os.path.realpath(shim))} (seen in its maps" in done.stdout


@pytest.mark.wheels
def test_a_program_run_through_a_wrapper_that_clears_the_environment_is_said_to_be_unseen() -> None:
    """``doctor -- env -i python3 ...`` (sudo and su clear the environment too): the program that loads cuDNN keeps
    no linker log, and a short run leaves nothing in the sampled maps. Its run proves nothing about cuDNN: said so,
    not "it never reached cuDNN". A program that runs to its end under the log is not flagged."""
    shim = lib_folder("cu12-9.28.0.42") / "libcudnn.so.9"
    program = f"import ctypes; ctypes.CDLL({str(shim)!r})"
    done = cli("doctor", "--", "env", "-i", sys.executable, "-c", program)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert "never reached cuDNN" not in done.stdout, done.stdout
    # (the maps' sampler may catch the short run's shim all the same: then that is said)
    assert "program-unwatched" in done.stdout and "env ran and exited; what it loaded is not known" in done.stdout \
        or "env ran with cuDNN from" in done.stdout and "(seen in its maps" in done.stdout, done.stdout
    quiet = cli("doctor", "--", "env", "-i", sys.executable, "-c", "pass")  # nothing for the sampler to catch
    assert "env ran and exited; what it loaded is not known" in quiet.stdout and "program-unwatched" in quiet.stdout
    assert "no cuDNN, cuBLAS, NVRTC or driver library was seen mapped" in quiet.stdout, quiet.stdout
    plain = cli("doctor", "--", sys.executable, "-c", "pass")
    assert "never reached cuDNN" in plain.stdout and "program-unwatched" not in plain.stdout, plain.stdout


def test_a_shell_that_leaves_through_exit_is_not_unseen_and_one_that_replaced_itself_is_named(tmp_path: Path) -> None:
    """dash (Debian's and Ubuntu's sh) leaves through _exit, so its linker's log ends at its own start, as the log
    of a process that replaced itself (exec) with a program started without the log's switches does: `doctor -- sh
    train.sh` warned program-unwatched on every run. The name a process ended as (read before it is reaped) tells
    them apart: the shell that ended as itself is watched whole; one that executed `env -i true` is said to have
    become ``true``."""
    plain = cli("doctor", "--", "sh", "-c", "echo started; /bin/true; echo done")
    assert plain.returncode == EXIT_OK and "program-unwatched" not in plain.stdout, plain.stdout
    assert "never reached cuDNN" in plain.stdout, plain.stdout
    replaced = cli("doctor", "--", "sh", "-c", "exec env -i /bin/true")
    assert "program-unwatched" in replaced.stdout, replaced.stdout
    assert "it ended as true: it replaced itself (exec) with true" in replaced.stdout, replaced.stdout
    # a script: the kernel names the process after the script, the linker's log after its interpreter
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\necho started\n/bin/true\n")
    script.chmod(0o755)
    run = cli("doctor", "--", str(script))
    assert run.returncode == EXIT_OK and "program-unwatched" not in run.stdout, run.stdout


def test_a_program_with_no_dynamic_linker_is_not_said_to_be_unseen(tmp_path: Path) -> None:
    """A statically linked program (Go without cgo, a static-pie such as Debian's ldconfig) starts with no ld.so, so
    it keeps no linker's log and can map no cuDNN by name: "never reached cuDNN", not program-unwatched's "what it
    loaded is not known ... a set-user-ID program such as sudo" (found by hand, session 61)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build a static program")
    source, program = tmp_path / "static.c", tmp_path / "static"
    source.write_text("int main(void) { return 0; }\n")
    built = subprocess.run(["gcc", "-static", str(source), "-o", str(program)], capture_output=True, text=True,
                           check=False)
    if built.returncode != 0:
        pytest.skip(f"no static C library to link with: {built.stderr.strip()[-200:]}")
    done = cli("doctor", "--", str(program))
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert "static ran and exited and never reached cuDNN" in done.stdout, done.stdout
    assert "program-unwatched" not in done.stdout, done.stdout


# --- doctor -- COMMAND starts the program before its own imports (launch.early) ------------------------------

@pytest.mark.parametrize("argv", [
    ["doctor", "--", "true"],
    ["doctor", "--json", "--timeout", "5", "--", "true"],
    ["doctor", "--timeout=5", "--output", "out.json", "--", "true", "arg"],
])
def test_early_starts_a_plain_doctor_command_and_hands_it_over_once(argv: list[str]) -> None:
    from cudnnload.diagnose import launch

    assert launch.early(argv)
    json_out = "--json" in argv and not any(a.startswith("--output") for a in argv)  # the report on stdout
    started = launch.take(tuple(argv[argv.index("--") + 1:]), json_out=json_out)
    assert started is not None and launch.take(started.command, json_out=json_out) is None
    assert started.wait()[0] == 0
    started.cleanup()
    assert not os.path.exists(started.scratch)


@pytest.mark.parametrize("argv", [
    ["doctor"], ["doctor", "--", ], ["which", "--", "true"], ["doctor", "lib", "--", "true"],
    ["doctor", "--python", "py", "--", "true"], ["doctor", "--timeout", "0", "--", "true"],
    ["doctor", "--timeout", "nan", "--", "true"], ["doctor", "--timeout", "x", "--", "true"],
    ["doctor", "--timeout", "--", "true"], ["doctor", "--bogus", "--", "true"], ["doctor", "--help", "--", "true"],
    ["doctor", "--json=1", "--", "true"], ["doctor", "--", "no-such-program-cudnnload"],
    ["doctor", "--output=", "--json", "--", "true"], ["doctor", "--output", "--json", "--", "true"],
    ["doctor", "--output", "--", "true"], ["doctor", "--json=", "--", "true"],
])
def test_early_leaves_anything_else_to_the_parser(argv: list[str]) -> None:
    from cudnnload.diagnose import launch

    assert not launch.early(argv)
    assert launch.take(tuple(argv[argv.index("--") + 1:]) if "--" in argv else ()) is None


@pytest.mark.parametrize("options", [["--timeout", "0"], ["--bogus"], ["--python", "python3"]])
def test_a_bad_option_before_the_command_is_refused_before_the_program_runs(tmp_path: Path,
                                                                           options: list[str]) -> None:
    marker = tmp_path / "ran"
    done = cli("doctor", *options, "--", "touch", str(marker))
    assert done.returncode == EXIT_USAGE and "Traceback" not in done.stderr, done.stderr
    assert not marker.exists()


def test_doctor_command_json_through_the_early_start_and_leaves_no_scratch(tmp_path: Path) -> None:
    import json

    done = cli("doctor", "--json", "--timeout", "60", "--", sys.executable, "-c", "raise SystemExit(3)",
               env={"TMPDIR": str(tmp_path)})
    assert done.returncode == EXIT_PROBLEMS, done.stderr
    doc = json.loads(done.stdout)
    assert doc["kind"] == "doctor-program" and doc["result"]["observation"]["returncode"] == 3
    assert list(tmp_path.iterdir()) == []


def test_a_tmpdir_that_cannot_hold_the_logs_falls_back_to_tmp(tmp_path: Path) -> None:
    done = cli("doctor", "--", "true", env={"TMPDIR": str(tmp_path / "missing")})
    assert done.returncode == EXIT_OK, done.stderr  # as tempfile.mkdtemp would


def test_the_program_gets_the_default_signal_dispositions_back() -> None:
    """Python ignores SIGPIPE and SIGXFSZ; a program run under doctor gets the defaults, as when run alone."""
    done = cli("doctor", "--", "sh", "-c", "grep SigIgn /proc/self/status")
    ignored = int(next(line for line in done.stdout.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1)), hex(ignored)


def test_a_command_that_cannot_be_executed_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    one_line_error(cli("doctor", "--", str(script)), EXIT_USAGE, str(script), "cannot run it: Permission denied")


def _lonely_engine(tmp_path: Path) -> Path:
    """9.0's engine library in a folder without its graph: as an LD_PRELOAD entry it stops every program."""
    folder = tmp_path / "old"
    folder.mkdir()
    engine = folder / "libcudnn_engines_precompiled.so.9"
    os.link(lib_folder("cu12-9.0.0.312") / engine.name, engine)
    return engine


def test_doctor_judges_an_ld_preload_it_cannot_start_in_through_env(tmp_path: Path) -> None:
    """With the entry in LD_PRELOAD cudnnload's own Python cannot start (as every program); started without it and
    given it by --env, doctor names the entry, what it needs, and the fix that removes it (and runs no probe)."""
    engine = _lonely_engine(tmp_path)
    shim = str(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9")
    inside = cli("doctor", "--json", shim, env={"LD_PRELOAD": str(engine)})
    assert inside.returncode == 127 and "error while loading shared libraries" in inside.stderr
    outside = cli("doctor", "--json", "--env", f"LD_PRELOAD={engine}", shim)
    assert outside.returncode == EXIT_PROBLEMS, outside.stderr
    doc = json.loads(outside.stdout)
    found = [f for f in doc["result"]["findings"] if f["code"] == "preload-cannot-load"]
    assert found and found[0]["severity"] == "error"
    assert found[0]["fix"]["actions"] == [{"do": "env-remove-entry", "variable": "LD_PRELOAD", "entry": str(engine)}]
    assert ["LD_PRELOAD", str(engine)] in doc["result"]["environment"]
    probe = next(c for c in doc["result"]["checks"] if c["name"] == "probe")
    assert probe["status"] == "fail" and probe["summary"].startswith("not run")


def test_doctor_runs_the_command_with_the_env_it_is_given(tmp_path: Path) -> None:
    """`doctor --env LD_PRELOAD=X -- COMMAND`: the program runs with it (and stops at start, as it would), and the
    report's first line names the entry."""
    engine = _lonely_engine(tmp_path)
    done = cli("doctor", "--env", f"LD_PRELOAD={engine}", "--", "/bin/true")
    assert done.returncode == EXIT_PROBLEMS, (done.stdout, done.stderr)
    assert "error while loading shared libraries" in done.stderr  # the program's own words, passed through
    headline = done.stdout.splitlines()[1]
    assert headline.startswith("true stopped (exited with status 127)") and str(engine) in headline
    assert "preload-cannot-load" in done.stdout


@pytest.mark.parametrize("args, words", [
    (("--env", "LD_PRELOAD"), ("--env", "NAME=VALUE")),
    (("--env", "1X=2"), ("--env", "NAME=VALUE")),
    (("--pid", "1", "--env", "A=b"), ("--env", "--pid")),
])
def test_a_bad_env_assignment_is_a_usage_error(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    one_line_error(cli("doctor", *args), EXIT_USAGE, *words)


def test_a_venv_python_that_finds_no_cudnn_is_told_to_install_it_with_its_own_pip(tmp_path: Path) -> None:
    """The program is a venv's interpreter (a link to the base one): the pip fix names the venv's bin/python,
    never the base interpreter the link leads to, nor the Python cudnnload runs in."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    python = venv / "bin" / "python"
    python.symlink_to(os.path.realpath(sys.executable))
    done = cli("doctor", "--json", str(python), env={"LD_LIBRARY_PATH": str(tmp_path)})
    found = [f for f in json.loads(done.stdout)["result"]["findings"] if f["code"] == "not-found"]
    if not found:
        pytest.skip("this machine finds a cuDNN 9 for any program (ld.so.cache)")
    pips = [a for a in found[0]["fix"]["actions"] if a["do"] == "pip-install"]
    assert pips and pips[0]["python"] == str(python), found[0]["fix"]


def test_a_python_that_an_ld_preload_stops_is_judged_not_refused(tmp_path: Path) -> None:
    """`doctor --env LD_PRELOAD=X --python P` where X (9.0's ops beside 9.28's graph) stops every program at a
    symbol lookup: the interpreter's start-up is observed without that entry, and the report says the preload
    stops it, with the entry's removal (held-out fix differential case 2-400: doctor refused the interpreter)."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    os.link(lib_folder("cu12-9.0.0.312") / "libcudnn_ops.so.9", mixed / "libcudnn_ops.so.9")
    os.link(lib_folder("cu12-9.28.0.42") / "libcudnn_graph.so.9", mixed / "libcudnn_graph.so.9")
    ops = str(mixed / "libcudnn_ops.so.9")
    started = subprocess.run([sys.executable, "-c", "pass"], env={**os.environ, "LD_PRELOAD": ops},
                             capture_output=True, text=True)
    assert started.returncode == 127 and "symbol lookup error" in started.stderr  # the real loader's account
    done = cli("doctor", "--json", "--env", f"LD_PRELOAD={ops}", "--python", sys.executable)
    assert done.returncode == EXIT_PROBLEMS, done.stderr
    found = [f for f in json.loads(done.stdout)["result"]["findings"] if f["code"] == "preload-cannot-load"]
    assert len(found) == 1 and found[0]["fix"]["actions"] == [
        {"do": "env-remove-entry", "variable": "LD_PRELOAD", "entry": ops}]


def test_with_json_on_standard_output_the_programs_own_output_goes_to_standard_error() -> None:
    """``doctor --json -- COMMAND`` and ``trace --json -- COMMAND``: standard output is the report's one JSON
    document (a pipe into ``jq`` reads it), the program's own lines on standard error; with ``--output`` (the
    report in a file) and without ``--json`` its output is where it always was."""
    program = ["--", "sh", "-c", "echo program-out; echo program-err >&2"]
    for args in (["doctor", "--json", *program], ["trace", "--json", *program]):
        done = cli(*args)
        assert json.loads(done.stdout)["kind"] in ("doctor-program", "trace-program"), done.stdout
        assert "program-out" in done.stderr and "program-err" in done.stderr
    assert "program-out" in cli("doctor", *program).stdout


def test_a_run_on_a_shim_of_another_release_names_the_release_its_graph_reported(tmp_path: Path) -> None:
    """9.0's shim copied over 9.28's, and 9.0's sub-libraries under their versioned names on LD_LIBRARY_PATH: the
    program's cudnnGetVersion says 9.0, and so does the first line, with the graph it mapped; the prediction
    agrees with the run."""
    lib = tmp_path / "site" / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    for path in lib_folder("cu12-9.28.0.42").iterdir():
        if path.name != "libcudnn.so.9":
            (lib / path.name).symlink_to(path)
    (lib / "libcudnn.so.9").write_bytes((lib_folder("cu12-9.0.0.312") / "libcudnn.so.9").read_bytes())
    versioned = tmp_path / "versioned"
    versioned.mkdir()
    for path in lib_folder("cu12-9.0.0.312").glob("libcudnn_*.so.9"):
        (versioned / f"{path.name}.0.0").symlink_to(path)
    script = tmp_path / "version.py"
    script.write_text(f"import ctypes\nprint(ctypes.CDLL({str(lib / 'libcudnn.so.9')!r}).cudnnGetVersion())\n")
    done = cli("doctor", "--", sys.executable, str(script), env={"LD_LIBRARY_PATH": str(versioned)})
    assert done.stdout.startswith("90000\n"), (done.stdout, done.stderr)
    headline = done.stdout.splitlines()[2]
    assert f"ran with cuDNN 9.0.0 (its graph {versioned / 'libcudnn_graph.so.9.0.0'}; the shim from {lib})" in \
        headline, done.stdout
    assert "prediction-disagrees" not in done.stdout


def test_a_shim_on_a_noexec_mount_is_said_with_the_mounts_fix_and_the_probe_agrees(noexec_dir: Path) -> None:
    """The 9.28 shim on a file system mounted noexec (a container's volume, a hardened /tmp or home): the loader
    opens it and the kernel refuses to map its code. doctor says so (`noexec-mount`, with what a dlopen prints), its
    fix is the mount's, not the files' (they are whole), and the shim's real dlopen in the probe fails as predicted."""
    shutil.copy2(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9", noexec_dir)
    done = cli("doctor", str(noexec_dir), "--json", "--verify")
    findings = json.loads(done.stdout)["result"]["findings"]
    assert done.returncode == EXIT_PROBLEMS, done.stderr
    [said] = [f for f in findings if f["code"] == "noexec-mount"]
    [seen] = said["consequences"]
    assert said["severity"] == "error" and "failed to map segment from shared object" in seen["message"], said
    assert "without noexec" in said["fix"]["text"] and "put back" not in said["fix"]["text"], said["fix"]
    assert not [f for f in findings if f["code"] == "prediction-disagrees"], findings


def test_a_program_whose_shim_on_a_noexec_mount_fails_is_told_so_and_not_mixed(noexec_dir: Path,
                                                                                tmp_path: Path) -> None:
    """A program that opens the 9.28 shim on a noexec mount, fails (the linker's log shows its link map generated,
    and no more of it), then opens libcudnn.so.9 by name and gets 9.0 from LD_LIBRARY_PATH, as JAX's CUDA plugin does
    after the wheel's shim fails: `doctor --` says the load failed with the mount's fix, and does not count the
    refused file as mapped (no `mixed-in-process` of two folders)."""
    shutil.copy2(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9", noexec_dir)
    program = tmp_path / "falls_back.py"
    program.write_text("import ctypes, sys\n"
                       f"try:\n    ctypes.CDLL({str(noexec_dir / 'libcudnn.so.9')!r})\n"
                       "except OSError:\n    shim = ctypes.CDLL('libcudnn.so.9')\n"
                       "sys.exit(0 if shim.cudnnGetVersion() >= 92800 else 1)\n")
    search = f"{lib_folder('cu12-9.0.0.312')}:{lib_folder('cublas-cu12-12.9.1.4')}"
    done = cli("doctor", "--json", "--", sys.executable, str(program), env={"LD_LIBRARY_PATH": search})
    findings = json.loads(done.stdout)["result"]["findings"]
    assert done.returncode == EXIT_PROBLEMS, done.stderr
    [failed] = [f for f in findings if f["code"] == "load-failed"]
    assert f"the kernel refused to map {noexec_dir / 'libcudnn.so.9'}" in failed["message"], failed
    assert "without noexec" in failed["fix"]["text"], failed["fix"]
    assert not [f for f in findings if f["code"] == "mixed-in-process"], [f["message"] for f in findings]


def test_a_library_that_cannot_be_mapped_under_an_address_space_limit_is_said_with_the_limits_fix(
        tmp_path: Path) -> None:
    """Under `ulimit -v` (RLIMIT_AS, inherited by the program from the shell cudnnload runs in), glibc reserves each
    library's whole span in one mmap: the 9.28 shim maps, libcudnn_engines_precompiled.so.9 (540 MiB) too, and the
    libcudnn_graph.so.9 it needs does not ("failed to map segment from shared object"; measured here at 700 MB). The
    program exits 1. `doctor --` says the kernel refused to map the file the program's own error names, under the
    limit, with the limit's fix; it never says that nothing of cuDNN's loading failed."""
    folder = lib_folder("cu12-9.28.0.42")
    program = tmp_path / "maps_engines.py"
    program.write_text("import ctypes, sys\n"
                       f"ctypes.CDLL({str(folder / 'libcudnn.so.9')!r})\n"
                       f"ctypes.CDLL({str(folder / 'libcudnn_engines_precompiled.so.9')!r})\n")
    environ = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root()),
               "LD_LIBRARY_PATH": str(lib_folder("cublas-cu12-12.9.1.4"))}
    done = subprocess.run(["prlimit", f"--as={700 * 10**6}", "--", sys.executable, "-m", "cudnnload", "doctor",
                           "--json", "--", sys.executable, str(program)], capture_output=True, text=True,
                          env=environ, timeout=300, check=False)
    assert done.returncode == EXIT_PROBLEMS, (done.stdout[-2000:], done.stderr[-2000:])
    findings = json.loads(done.stdout)["result"]["findings"]
    [named] = re.findall(r"OSError: (\S+): failed to map segment from shared object", done.stderr)
    [failed] = [f for f in findings if f["code"] == "load-failed"]
    assert f"the kernel refused to map {folder / os.path.basename(named)}" in failed["message"], (named, failed)
    assert "ulimit -v" in failed["message"] and "ulimit -v unlimited" in failed["fix"]["text"], failed
    assert not [f for f in findings if f["code"] == "program-failed" and "nothing of cuDNN" in f["fix"]["text"]]
    # the same limit kills nothing of cudnnload's own: without the limit, the program maps both files
    free = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=120, check=False)
    assert free.returncode == 0, free.stderr


def test_doctor_says_an_address_space_limit_smaller_than_the_libraries_and_nothing_without_one() -> None:
    """The same 700 MB limit on `doctor FOLDER` (the 9.28 set, 1.1 GiB of spans): its probe passes the version checks,
    and doctor does not call it healthy: `address-space-limit`, with the limit's fix. Without a limit, none."""
    folder = str(lib_folder("cu12-9.28.0.42"))
    environ = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root())}
    limited = subprocess.run(["prlimit", f"--as={700 * 10**6}", "--", sys.executable, "-m", "cudnnload", "doctor",
                              folder, "--json"], capture_output=True, text=True, env=environ, timeout=300, check=False)
    assert limited.returncode == EXIT_PROBLEMS, limited.stderr[-2000:]
    [said] = [f for f in json.loads(limited.stdout)["result"]["findings"] if f["code"] == "address-space-limit"]
    assert said["severity"] == "error" and "libcudnn_engines_precompiled.so.9" in said["message"], said
    assert "ulimit -v unlimited" in said["fix"]["text"], said
    free = cli("doctor", folder, "--json")
    assert not [f for f in json.loads(free.stdout)["result"]["findings"] if f["code"] == "address-space-limit"]


@pytest.mark.parametrize("limited", [True, False])
def test_a_program_that_ran_out_of_address_space_is_said_to_under_a_limit(tmp_path: Path, limited: bool) -> None:
    """PyTorch's first CUDA call under `ulimit -v` 16 GB on the H200 fails with the runtime's "Error 2: out of
    memory" (cuInit reserves more address space than that), while doctor's own smaller process starts the driver:
    nothing of cuDNN's loading explains the failure, and doctor -- said only that. Under a limit, the program's own
    words of memory running out are said as the limit's (`address-space-limit`, with its fix); without one, not."""
    program = tmp_path / "cuda_init.py"
    program.write_text("import sys\nsys.stderr.write('RuntimeError: Unexpected error from cudaGetDeviceCount(). Did "
                       "you run some cuda functions before calling NumCudaDevices() that might have already set an "
                       "error? Error 2: out of memory\\n')\nsys.exit(1)\n")
    environ = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root())}
    limit = ["prlimit", f"--as={4 * 10**9}", "--"] if limited else []
    done = subprocess.run([*limit, sys.executable, "-m", "cudnnload", "doctor", "--json", "--", sys.executable,
                           str(program)], capture_output=True, text=True, env=environ, timeout=300, check=False)
    findings = json.loads(done.stdout)["result"]["findings"]
    said = [f for f in findings if f["code"] == "address-space-limit"]
    if limited:
        assert done.returncode == EXIT_PROBLEMS and len(said) == 1, findings
        assert "Error 2: out of memory" in said[0]["message"] and "3.7 GiB" in said[0]["message"], said
        assert "ulimit -v unlimited" in said[0]["fix"]["text"]
    else:
        assert not said and [f["code"] for f in findings if f["code"] == "program-failed"], findings


def test_python_naming_a_script_or_another_program_is_refused_before_it_runs(tmp_path: Path) -> None:
    """`--python` runs what it names to observe its start-up: a training script (or a pyenv shim) ran, and so did
    `/bin/ls`. Read from the file first: a script, or an executable that neither exports Python's entry point nor
    links libpython, is one line; an interpreter and a venv's folder are judged as before."""
    ran = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(f"#!{sys.executable}\nopen({str(ran)!r}, 'a').write('ran')\n")
    script.chmod(0o755)
    one_line_error(cli("doctor", "--python", str(script)), EXIT_USAGE, str(script), "a script")
    assert not ran.exists()
    one_line_error(cli("doctor", "--python", "/bin/true"), EXIT_USAGE, "/bin/true", "no Python interpreter")
    assert cli("doctor", "--python", sys.executable).stdout.startswith("cudnnload doctor: the Python ")


def test_which_of_a_relative_target_is_that_file_and_an_empty_output_name_is_refused_first(tmp_path: Path) -> None:
    """`which g9/libcudnn.so.9` took the relative name for a search-path entry's (untrusted-library, a fix for an
    LD_LIBRARY_PATH that was not set); `doctor --output ''` ran the whole diagnosis and then failed, exit 3."""
    folder = tmp_path / "g9"
    folder.symlink_to(lib_folder("cu12-9.28.0.42"))
    done = subprocess.run([sys.executable, "-m", "cudnnload", "which", "g9/libcudnn.so.9"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root())})
    assert "untrusted-library" not in done.stdout and done.stdout.startswith(f"as loaded by: {folder}/"), done.stdout
    one_line_error(cli("doctor", "--output", ""), EXIT_USAGE, "--output", "empty")


@pytest.mark.wheels
def test_a_users_cudnn_log_file_is_left_as_it_was_by_doctor_and_trace(tmp_path: Path) -> None:
    """cuDNN opens CUDNN_LOGDEST_DBG's file for writing in every process that loads it: doctor's probe and trace's
    children emptied the user's log (a hostile user's 'yesterday' was gone). cudnnload's own children run without
    cuDNN's log switches; the user's program (`doctor -- COMMAND`) keeps them, as README says."""
    log = tmp_path / "my.log"
    log.write_text("yesterday\n")
    env = {"CUDNN_LOGDEST_DBG": str(log), "CUDNN_LOGLEVEL_DBG": "2"}
    folder = str(lib_folder("cu12-9.28.0.42"))
    cli("doctor", folder, env=env)
    cli("trace", folder, "--runs", "1", "--no-conv", env=env)
    assert log.read_text() == "yesterday\n"
