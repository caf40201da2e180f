"""No program outlives `cudnnload doctor -- COMMAND` or `trace -- COMMAND`, and the program sees what it would
see run alone: run as a user would (a fresh `python -m cudnnload`), interrupted as a terminal, a shell or a job
scheduler would. Every process a test starts carries a marker of its own in its command line, so that the
check for what was left behind counts nothing else on the machine."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cudnnload.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from tests.wheels import cache_root, python_path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def environ(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(cache_root()), **extra}


def default_signals() -> None:
    """In the child, before exec: SIGINT, SIGQUIT and SIGHUP as a terminal's foreground job has them. A suite
    started in the background of a non-interactive shell (`make test &`) inherits the first two ignored, one
    started under `nohup` SIGHUP too, and an ignored signal stays ignored for doctor and its program (as it must):
    these tests are about the foreground."""
    for signo in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(signo, signal.SIG_DFL)


def cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "cudnnload", *args], capture_output=True, text=True, env=environ(),
                          timeout=timeout, check=False, preexec_fn=default_signals)


def start(*args: str, **popen: object) -> subprocess.Popen[str]:
    popen.setdefault("preexec_fn", default_signals)
    return subprocess.Popen([PY, "-m", "cudnnload", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=environ(), **popen)  # type: ignore[call-overload]


def marker() -> str:
    return f"cudnnload-test-{uuid.uuid4().hex}"


def alive_with(mark: str, but: int = 0) -> list[tuple[int, str]]:
    """Live processes (not zombies) whose command line holds ``mark``, but pid ``but`` (cudnnload's own)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == but:
            continue
        try:
            command = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if mark.encode() in command and state not in (b"Z", b"X"):
            found.append((int(name), command.replace(b"\0", b" ").decode(errors="replace")))
    return found


def wait_until(condition: Callable[[], object], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.02)


def wait_for(path: Path) -> None:
    """Until the program under test has written ``path`` (it is running, its children started)."""
    wait_until(path.exists)


def sleeper(mark: str, ready: Path, before: str = "") -> list[str]:
    """A Python program that runs ``before``, says it is ready, and sleeps 100 s; ``mark`` in its argv. It
    dies of SIGINT as most programs do (not through KeyboardInterrupt's traceback)."""
    code = "; ".join(filter(None, ["import os, signal, subprocess, time",
                                   "signal.signal(signal.SIGINT, signal.SIG_DFL)", before,
                                   f"open({str(ready)!r}, 'w').close()", "time.sleep(100)"]))
    return [PY, "-c", code, mark]


def kill_leftovers(mark: str) -> None:
    for pid, _ in alive_with(mark):  # only ever a process this test started: its marker is unique
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def mark() -> object:
    name = marker()
    yield name
    kill_leftovers(name)


# --- interrupted: nothing is left, the report says so, and cudnnload dies of the signal ---------------------

def _to_doctor(done: subprocess.Popen[str], sig: int) -> None:
    os.kill(done.pid, sig)


def _to_its_group(done: subprocess.Popen[str], sig: int) -> None:
    os.killpg(done.pid, sig)  # as a shell's job control, or a terminal's ^C, does: the program gets it too


@pytest.mark.parametrize(("sig", "send"), [(signal.SIGINT, _to_its_group), (signal.SIGINT, _to_doctor),
                                           (signal.SIGTERM, _to_doctor), (signal.SIGHUP, _to_doctor),
                                           (signal.SIGTERM, _to_its_group)])
def test_an_interrupted_doctor_leaves_no_process_and_dies_of_the_signal(
        tmp_path: Path, mark: str, sig: int, send: Callable[[subprocess.Popen[str], int], None]) -> None:
    ready = tmp_path / "ready"
    background = f"subprocess.Popen([{PY!r}, '-c', 'import time; time.sleep(100)', {mark!r}])"
    program = sleeper(mark, ready, background)
    running = start("doctor", "--", *program, start_new_session=True)
    wait_for(ready)
    wait_until(lambda: len(alive_with(mark, but=running.pid)) == 2)  # the program and its child, exec'd
    send(running, sig)
    out, err = running.communicate(timeout=10)
    assert running.returncode == -sig, (out, err)
    assert alive_with(mark) == []
    assert f"interrupted by {signal.Signals(sig).name}" in out and "program-interrupted" in out
    assert "Aborted!" not in err and "cudnnload/" not in err  # (the program's own may print a KeyboardInterrupt)


def test_a_program_that_signals_its_own_group_is_reported_not_taken_for_the_users_interrupt(tmp_path: Path) -> None:
    """`trap 'kill 0' EXIT`, a shell idiom, sends SIGTERM to the program's process group, which holds cudnnload:
    the report said "cudnnload was interrupted by SIGTERM", blaming the user, and doctor died of it (exit 143).
    The sender is the program's own: its end is reported, and doctor exits as it would."""
    script = tmp_path / "cleanup.sh"
    script.write_text("#!/bin/sh\ntrap 'kill 0' EXIT\necho done\n")
    script.chmod(0o755)
    running = start("doctor", "--", str(script), start_new_session=True)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 1, (out, err)
    assert "program-interrupted" not in out and "died of SIGTERM" in out, out


def test_a_second_interrupt_kills_a_program_that_ignores_the_first_and_names_it(tmp_path: Path, mark: str) -> None:
    ready = tmp_path / "ready"
    running = start("doctor", "--", *sleeper(mark, ready, "signal.signal(signal.SIGTERM, signal.SIG_IGN)"))
    wait_for(ready)
    running.send_signal(signal.SIGTERM)  # passed on; the program ignores it, and doctor waits
    time.sleep(0.5)
    assert running.poll() is None and len(alive_with(mark, but=running.pid)) == 1
    running.send_signal(signal.SIGTERM)
    out, _ = running.communicate(timeout=10)
    assert running.returncode == -signal.SIGTERM
    assert alive_with(mark) == []
    assert "processes-killed" in out and "interrupted, SIGKILL" in out and mark in out


# --- --timeout and what the program leaves behind -----------------------------------------------------------------

@pytest.mark.parametrize("escape", [
    "os.setsid(); time.sleep(100)",  # a new session: out of reach of a kill of the process group
    "os.fork() and os._exit(0); os.setsid(); os.fork() and os._exit(0); time.sleep(100)",  # a daemon's double fork
])
def test_a_timeout_ends_a_child_that_left_the_session_and_names_it(tmp_path: Path, mark: str, escape: str) -> None:
    pids = tmp_path / "pids"
    script = f"{PY} -c 'import os, time; {escape}' {mark} & echo $! > {pids}; sleep 100"
    started = time.monotonic()
    done = cli("doctor", "--timeout", "1", "--", "sh", "-c", script, mark)
    assert time.monotonic() - started < 8
    assert done.returncode == EXIT_PROBLEMS, done.stderr
    assert alive_with(mark) == []
    assert "program-timed-out" in done.stdout and "processes-killed" in done.stdout
    assert "timeout, SIGTERM" in done.stdout and "os.setsid()" in done.stdout
    assert "every process it started" not in done.stdout  # said only of what it saw end


def test_a_background_child_holding_stderr_does_not_keep_doctor_waiting(tmp_path: Path, mark: str) -> None:
    started = time.monotonic()
    done = cli("doctor", "--json", "--", "sh", "-c", "sleep 37 & echo $! >&2; echo started", mark)
    assert time.monotonic() - started < 5
    assert done.returncode == EXIT_OK, done.stderr
    # (with --json the program's stdout is on stderr too: the report is stdout's one document)
    sleep_pid = int(next(word for word in done.stderr.split() if word.isdigit()))
    assert not Path(f"/proc/{sleep_pid}").exists() or "Z" in Path(f"/proc/{sleep_pid}/stat").read_text().split()[2]
    killed = json.loads(done.stdout)["result"]["observation"]["killed"]
    assert [(k["process"]["pid"], k["process"]["command"], k["why"]) for k in killed] == [
        (sleep_pid, "sleep 37", "left running")]


def test_trace_of_a_command_ends_what_it_left_running_and_says_so(mark: str) -> None:
    started = time.monotonic()
    done = cli("trace", "--", "sh", "-c", f"{PY} -c 'import time; time.sleep(37)' {mark} & echo started")
    assert time.monotonic() - started < 5
    assert done.returncode == EXIT_OK, done.stderr
    assert alive_with(mark) == []
    assert "ended, so that it does not outlive the trace: pid" in done.stdout and "left running, SIGTERM" in done.stdout


def test_an_interrupted_trace_leaves_no_process(tmp_path: Path, mark: str) -> None:
    ready = tmp_path / "ready"
    running = start("trace", "--", *sleeper(mark, ready))
    wait_for(ready)
    running.send_signal(signal.SIGTERM)
    out, _ = running.communicate(timeout=10)
    assert running.returncode == -signal.SIGTERM and "interrupted by SIGTERM" in out
    assert alive_with(mark) == []


# --- what the program sees ---------------------------------------------------------------------------------------

def under_terminal(argv: Sequence[str], keys: bytes = b"", after: Path | None = None,
                   seconds: float = 15) -> tuple[int, str]:
    """Run ``argv`` as a terminal's foreground job: a new session whose controlling terminal is a pty; type
    ``keys`` once ``after`` exists. Its exit status and everything it wrote on the terminal."""
    master, slave = pty.openpty()

    def take_the_terminal() -> None:
        default_signals()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    running = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, env=environ(),
                               start_new_session=True, preexec_fn=take_the_terminal)
    os.close(slave)
    out, typed, deadline = b"", not keys, time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not typed and (after is None or after.exists()):
                os.write(master, keys)
                typed = True
            if select.select([master], [], [], 0.05)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every process holding the terminal has ended
                    break
                if not chunk:
                    break
                out += chunk
            elif running.poll() is not None:
                break
        return running.wait(timeout=5), out.decode(errors="replace")
    finally:
        os.close(master)
        if running.poll() is None:
            running.kill()


def test_the_program_keeps_the_controlling_terminal() -> None:
    """Before: doctor put the program in a session of its own, and /dev/tty failed with ENXIO (Errno 6)."""
    code = "import os; fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'tty-opened\\n')"
    status, out = under_terminal([PY, "-m", "cudnnload", "doctor", "--", PY, "-c", code])
    assert status == EXIT_OK, out
    assert "tty-opened" in out and "Errno 6" not in out


def test_ctrl_c_at_the_terminal_reaches_the_program_and_doctor_reports_before_it_dies(tmp_path: Path,
                                                                                       mark: str) -> None:
    ready = tmp_path / "ready"
    status, out = under_terminal([PY, "-m", "cudnnload", "doctor", "--", *sleeper(mark, ready)], keys=b"\x03",
                                 after=ready)
    assert status == -signal.SIGINT, out
    assert "interrupted by SIGINT" in out and "Aborted!" not in out
    assert alive_with(mark) == []


def test_the_program_gets_the_signal_mask_and_ignored_signals_doctor_was_given() -> None:
    """doctor blocks SIGINT, SIGTERM and SIGHUP in its own threads; the program gets none of that blocked, and
    a signal ignored by whoever started doctor (nohup's SIGHUP) stays ignored for it, as when run alone."""
    done = subprocess.run([PY, "-m", "cudnnload", "doctor", "--", "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"],
                          capture_output=True, text=True, env=environ(), timeout=30, check=False,
                          preexec_fn=lambda: (default_signals(), signal.signal(signal.SIGHUP, signal.SIG_IGN)))
    masks = dict(line.split(":\t") for line in done.stdout.splitlines() if line.startswith("Sig"))
    blocked, ignored = int(masks["SigBlk"], 16), int(masks["SigIgn"], 16)
    assert blocked == 0, hex(blocked)
    assert ignored & (1 << (signal.SIGHUP - 1)) and not ignored & (1 << (signal.SIGINT - 1)), hex(ignored)


def test_doctor_adds_only_the_witnesses_switches_to_the_programs_environment(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    code = f"import json, os; json.dump(dict(os.environ), open({str(dump)!r}, 'w'))"
    done = cli("doctor", "--", PY, "-c", code)
    assert done.returncode == EXIT_OK, done.stderr
    seen, given = json.loads(dump.read_text()), environ()
    assert {k: v for k, v in given.items() if k in seen} == given  # nothing taken away or changed
    added = {k: v for k, v in seen.items() if k not in given}
    assert set(added) == {"LD_DEBUG", "LD_DEBUG_OUTPUT", "CUDNN_LOGLEVEL_DBG", "CUDNN_LOGERR_DBG",
                          "CUDNN_LOGWARN_DBG", "CUDNN_LOGDEST_DBG"}, added
    assert added["LD_DEBUG"] == "libs,files" and added["CUDNN_LOGLEVEL_DBG"] == "2"


# --- exit statuses, and bad input in one line ----------------------------------------------------------------------

@pytest.mark.parametrize(("command", "status"), [
    (["true"], EXIT_OK), (["false"], EXIT_PROBLEMS), (["sh", "-c", "kill -SEGV $$"], EXIT_PROBLEMS),
])
def test_doctor_command_exit_status_says_how_the_program_ended(command: list[str], status: int) -> None:
    assert cli("doctor", "--", *command).returncode == status


@pytest.mark.parametrize(("command", "reason"), [
    ("cudnnload-no-such-program", "no such command"), ("/", "cannot run it: Permission denied"),
    ("not-executable", "cannot run it: Permission denied"), ("garbage", "cannot run it: Exec format error"),
])
def test_a_command_that_cannot_run_is_one_line_and_exit_2(tmp_path: Path, command: str, reason: str) -> None:
    if command in ("not-executable", "garbage"):
        command = str(tmp_path / command)
        Path(command).write_bytes(b"#!/bin/sh\n" if command.endswith("not-executable") else b"\x7fELF garbage")
        os.chmod(command, 0o644 if command.endswith("not-executable") else 0o755)
    done = cli("doctor", "--", command)
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert done.stderr == f"cudnnload: error: {command}: {reason}" + (
        " (fix: give the program as you would run it)" if reason == "no such command" else "") + "\n", done.stderr


# --- in-process use (no subreaper, no signal thread): what the program leaves is still found ---------------------

def test_an_in_process_run_ends_an_orphan_by_the_environment_it_inherited(mark: str) -> None:
    from cudnnload.diagnose import launch

    running = launch.launch(["sh", "-c", f"{PY} -c 'import time; time.sleep(37)' {mark} & echo started"],
                            environ=environ())
    try:
        assert running.wait()[0] == 0
    finally:
        running.cleanup()
    assert alive_with(mark) == []
    assert [(k.why, k.signal) for k in running.family.killed] == [("left running", "SIGTERM")]
    assert mark in running.family.killed[0].process.command


# --- the family, taken apart (in a child interpreter: a subreaper's main thread must start nothing else) --------

def in_child_interpreter(code: str) -> Any:
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=environ(), timeout=30, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_child_another_thread_of_cudnnload_started_is_never_counted(tmp_path: Path, mark: str) -> None:
    """cudnnload's own helpers (the linker's probe, run and waited for by the thread that builds the model)
    are its children too; only the main thread's, which started the program, are the program's orphans."""
    ready = tmp_path / "ready"
    orphan = f"{PY} -c 'import time; open(\"{ready}\", \"w\"); time.sleep(100)' {mark} & exit 0"
    seen = in_child_interpreter(f"""
import ctypes, json, os, subprocess, sys, threading
from cudnnload.diagnose.family import Family
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
program = subprocess.Popen(["sh", "-c", {orphan!r}])
helpers, started, stopped = [], threading.Event(), threading.Event()
def helper():
    helpers.append(subprocess.Popen(["sleep", "100"]))
    started.set()
    stopped.wait()
    helpers[0].kill()
    helpers[0].wait()
thread = threading.Thread(target=helper)
thread.start()
started.wait()
program.wait()
while not os.path.exists({str(ready)!r}):
    pass  # the orphan has become the program it execs
family = Family(program.pid, tag="", reaper=True)
family.stop("left running")
alive = helpers[0].poll() is None
stopped.set()
thread.join()
print(json.dumps({{"helper_alive": alive, "killed": [k.process.command for k in family.killed]}}))
""")
    assert seen["helper_alive"] is True
    [killed] = seen["killed"]
    # the orphan's whole command line, as far as the report keeps it (family: 200 characters; a CI clone's paths
    # are long enough that the mark at its end is cut)
    whole = f"{PY} -c import time; open(\"{ready}\", \"w\"); time.sleep(100) {mark}"
    assert killed == (whole if len(whole) <= 200 else whole[:197] + "...")
    assert alive_with(mark) == []


def test_a_process_that_cannot_be_signalled_is_reported_as_a_survivor_not_as_killed(mark: str) -> None:
    seen = in_child_interpreter(f"""
import json, os, subprocess
from cudnnload.diagnose import family as f
from cudnnload.diagnose.observe import _stopping_findings, Observation
program = subprocess.Popen(["{PY}", "-c", "import time; time.sleep(100)", "{mark}"])
while b"{mark}" not in open(f"/proc/{{program.pid}}/cmdline", "rb").read():
    pass  # the exec is complete: the command line is the program's
real_kill = os.kill
def kill(pid, sig):
    if pid == program.pid:
        raise PermissionError(1, "Operation not permitted")
    real_kill(pid, sig)
f.os.kill = kill
family = f.Family(program.pid, tag="", reaper=False)
family.stop("left running", grace=0.1)
seen = Observation(("prog",), 0, None, False, 0.1, (), (), (), (), (), None, 1, pid=program.pid,
                   killed=tuple(family.killed), survivors=tuple(family.survivors))
findings = [(x.code, x.severity, x.message, x.fix.text) for x in _stopping_findings(seen, "prog")]
real_kill(program.pid, 9)
print(json.dumps({{"killed": len(family.killed), "findings": findings}}))
""")
    assert seen["killed"] == 0
    [(code, severity, message, fix)] = seen["findings"]
    assert (code, severity) == ("processes-not-stopped", "error")
    assert "permission denied" in message and mark in message and fix.startswith("end them as their owner or root")


def test_an_in_process_run_interrupted_by_ctrl_c_takes_the_program_with_it(mark: str) -> None:
    killed = in_child_interpreter(f"""
import json, signal
from cudnnload.diagnose import launch
def interrupt(*_):
    raise KeyboardInterrupt
signal.signal(signal.SIGALRM, interrupt)
signal.setitimer(signal.ITIMER_REAL, 0.3)
running = launch.launch([{PY!r}, "-c", "import time; time.sleep(100)", {mark!r}])
try:
    running.wait()
except KeyboardInterrupt:
    pass
running.cleanup()
print(json.dumps([(k.why, k.signal) for k in running.family.killed]))
""")
    assert killed == [["interrupted", "SIGKILL"]]
    assert alive_with(mark) == []


# --- issue 29: children that cannot outlive or corrupt ---------------------------------------------------------

def _scratch_folders() -> set[str]:
    return {name for name in os.listdir("/tmp") if name.startswith("cudnnload-observe-")}


@pytest.mark.parametrize("verb", ["doctor", "trace"])
def test_sigkill_of_cudnnload_ends_the_program_and_removes_its_scratch_folder(verb: str) -> None:
    """Issue 29: SIGKILL of `doctor --` or `trace --` left the program running with LD_DEBUG set, and the temp
    folder behind. Nothing of cudnnload can run after a SIGKILL: a watcher it started does the cleaning."""
    mark = marker()
    before = _scratch_folders()
    child = start(verb, "--", "sh", "-c", f"sleep 60 # {mark}", start_new_session=True)
    try:
        wait_until(lambda: [p for p in alive_with(mark, but=child.pid) if "sleep" in p[1]])
        child.kill()
        child.wait(timeout=10)
        wait_until(lambda: not alive_with(mark, but=child.pid), seconds=5)
        wait_until(lambda: _scratch_folders() <= before, seconds=5)
    finally:
        for pid, _ in alive_with(mark, but=child.pid):
            os.kill(pid, signal.SIGKILL)


def _slow_shim(synthetic_dir: Path, folder: Path) -> Path:
    """A library named libcudnn.so.9 whose constructor sleeps (planted.c with CUDNNLOAD_PLANTED_SLEEP): the
    probe's child is inside dlopen while cudnnload is killed."""
    folder.mkdir()
    shim = folder / "libcudnn.so.9"
    shim.write_bytes((synthetic_dir / "planted" / "libcudnn.so.9").read_bytes())
    return shim


def test_sigkill_of_cudnnload_ends_its_probe(synthetic_dir: Path, tmp_path: Path) -> None:
    """The probe `doctor`, `load()` and `run`'s proof start dies with the process that started it."""
    mark = marker()
    shim = _slow_shim(synthetic_dir, tmp_path / "slow")
    child = subprocess.Popen([PY, "-m", "cudnnload", "doctor", str(shim), f"--env=MARK={mark}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                             env=environ(CUDNNLOAD_PLANTED_SLEEP="60", CUDNNLOAD_PLANTED=str(tmp_path / "m")))
    probes = lambda: [pid for pid in _with_variable(f"MARK={mark}") if pid != child.pid]  # noqa: E731
    try:
        wait_until(lambda: (tmp_path / "m").exists(), seconds=30)  # the probe's child is in the constructor
        assert probes()
        child.kill()
        child.wait(timeout=10)
        wait_until(lambda: not probes(), seconds=5)
    finally:
        for pid in probes():
            os.kill(pid, signal.SIGKILL)


def _with_variable(assignment: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and assignment.encode() in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                found.append(int(name))
        except OSError:
            continue
    return found


def test_a_program_run_as_another_user_gets_no_loader_output_on_its_streams(tmp_path: Path) -> None:
    """Issue 29: `doctor -- runuser -u alice -- prog`: glibc could not open LD_DEBUG_OUTPUT in doctor's private
    folder and wrote its debug lines onto the program's own stdout. The program's user can write the log now,
    and the doctor reads it."""
    if os.geteuid() != 0 or not os.path.exists("/usr/sbin/runuser"):
        pytest.skip("needs root and runuser")
    done = subprocess.run([PY, "-m", "cudnnload", "doctor", "--json", "--", "runuser", "-u", "nobody", "--",
                           "/bin/echo", "hello"], capture_output=True, text=True, env=environ(), timeout=60,
                          check=False)
    # with --json, the program's stdout goes to stderr (stdout is the report's one document)
    assert "hello\n" in done.stderr, done.stderr[:500]
    assert not any(word in done.stderr for word in ("file=", "find library=", "calling init")), done.stderr[:500]
    result = json.loads(done.stdout)["result"]
    assert result["observation"]["processes"] >= 2, result["observation"]  # runuser's log and echo's (as nobody)


@pytest.fixture
def full_tmpdir(tmp_path: Path) -> Any:
    """A TMPDIR on a file system with no space left (a 64 KiB tmpfs, filled)."""
    folder = tmp_path / "full"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True,
                      check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={folder}/fill", "bs=4k"], capture_output=True, check=False)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.wheels
def test_a_full_tmpdir_is_said_as_such_and_gives_no_false_verdict(full_tmpdir: Path) -> None:
    """Issue 29: a full TMPDIR turned `doctor --` into false verdicts (no cuDNN mapped, or "LD_DEBUG is ignored
    in secure-execution mode") without naming the full disk."""
    from tests.wheels import lib_folder

    shim = lib_folder("cu12-9.28.0.42") / "libcudnn.so.9"
    program = f"import ctypes; ctypes.CDLL({str(shim)!r})"
    done = subprocess.run([PY, "-m", "cudnnload", "doctor", "--", PY, "-c", program], capture_output=True,
                          text=True, env=environ(TMPDIR=str(full_tmpdir)), timeout=120, check=False)
    out = done.stdout + done.stderr
    assert "secure-execution" not in out and "ran with no cuDNN" not in out, out
    assert f"{full_tmpdir}" in done.stderr and "full" in done.stderr, done.stderr
    assert "cuDNN 9.28.0" in done.stdout, done.stdout


_FORK = """
import os, sys, threading, time
import cudnnload.loading.loader as loader
from cudnnload.loading.loader import load
from cudnnload.dispatch.starting import start
how, folder = sys.argv[1], sys.argv[2]
proven = loader.proven
loader.proven = lambda *args, **kwargs: (time.sleep(1), proven(*args, **kwargs))[1]  # a slow probe
if how == "load":
    threading.Thread(target=load, args=(folder,), kwargs={"use_cache": False}, daemon=True).start()
else:
    start(folder, use_cache=False)
time.sleep(0.3)  # the other thread is inside load(): its lock held, its probe running
pid = os.fork()
if pid == 0:
    import signal
    signal.alarm(20)
    got = load(folder, use_cache=False)
    os._exit(0 if str(got.release) == "9.28.0" else 5)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.wheels
@pytest.mark.parametrize("how", ["load", "start"])
def test_a_fork_while_another_thread_loads_leaves_the_child_able_to_load(how: str) -> None:
    """Issue 29: a fork() while another thread was in load() deadlocked the child's load() (the lock copied
    held, and the thread that held it not in the child)."""
    from tests.wheels import lib_folder

    done = subprocess.run([PY, "-c", _FORK, how, str(lib_folder("cu12-9.28.0.42"))], capture_output=True, text=True,
                          env=environ(), timeout=120, check=False)
    assert done.stdout.strip().splitlines()[-1:] == ["child 0"], done.stdout + done.stderr


def test_every_child_python_imports_nothing_from_the_current_folder(tmp_path: Path) -> None:
    """Issue 29: trace's child imported a json.py from the current folder. Here every module a child could
    import first is planted in the folder cudnnload runs in."""
    from tests.wheels import lib_folder

    planted = tmp_path / "planted-ran"
    for name in ("json", "os", "ctypes", "time", "types", "encodings", "site", "sitecustomize", "cudnnload"):
        (tmp_path / f"{name}.py").write_text(f"open({str(planted)!r}, 'a').write('{name}\\n')\n")
    runs = [("trace", "--runs", "1", "--no-conv", "--lazy", str(lib_folder("cu12-9.28.0.42"))),
            ("doctor", "--python", PY), ("doctor", str(lib_folder("cu12-9.28.0.42")))]
    script = Path(PY).parent / "cudnnload"  # as a user runs it (`python -m` would put the folder first itself)
    if not script.exists():
        pytest.skip("cudnnload is not installed as a command in this interpreter's folder")
    for args in runs:
        subprocess.run([str(script), *args], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                       env={**environ(), "PYTHONPATH": python_path(ROOT)}, check=False)
    assert not planted.exists(), planted.read_text()
