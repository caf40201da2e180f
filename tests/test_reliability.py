"""cudnnload cannot make things worse: run as a user would (child processes, as root and as ``nobody``),
on the inputs issue 16 found broken, and on a sample of the odd-input corpus (fixtures/reliability).

Each case here failed before the change that fixed it. The whole corpus (500+ runs, both users) is
``bench/bench_reliability.py``; the process-ownership cases (signals, timeouts, orphans) are in
tests/test_reliability_process.py and the cache cases in tests/test_reliability_cache.py.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.reliability import nobody
from fixtures.reliability.harness import run
from fixtures.reliability.odd import Case, cases, make_odd, remove_odd
from tests.wheels import lib_folder

W928 = "cu12-9.28.0.42"


def cli(*args: str, env: dict[str, str] | None = None, stdout: int | None = subprocess.PIPE,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudnnload", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout, check=False)


def one_line(done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    """Exit ``code`` and exactly one line on standard error naming each of ``words``, no traceback."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == code, (done.returncode, done.stderr)
    assert len(lines) == 1 and lines[0].startswith("cudnnload: error: "), done.stderr
    assert all(word in lines[0] for word in words), (words, lines[0])


@pytest.fixture
def wheel() -> Path:
    return lib_folder(W928)


def _identity(path: Path) -> tuple[int, int, int, int]:
    info = os.lstat(path)
    return stat.S_IFMT(info.st_mode), info.st_ino, info.st_rdev, info.st_size


# --- 1. --output replaces nothing ---------------------------------------------------------------------

def _char_device(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("only root can make a device node (as root, --output /dev/null replaced the real one)")
    node = tmp_path / "null-copy"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


@pytest.mark.parametrize("kind", ["char-device", "fifo", "symlink", "folder", "elf-library", "socket"])
def test_output_refuses_anything_but_a_new_path_or_a_file_of_the_users_before_any_work(
        tmp_path: Path, wheel: Path, kind: str) -> None:
    target = tmp_path / "out"
    if kind == "char-device":
        target = _char_device(tmp_path)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        (tmp_path / "real.json").write_text("{}")
        target.symlink_to(tmp_path / "real.json")
    elif kind == "folder":
        target.mkdir()
    elif kind == "elf-library":
        target = tmp_path / "libcudnn.so.9"
        shutil.copy(wheel / "libcudnn.so.9", target)
    else:
        import socket

        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(target))
    before = _identity(target)
    started = time.monotonic()
    done = cli("doctor", str(wheel), "--output", str(target))
    one_line(done, 2, str(target), "--output")
    assert time.monotonic() - started < 10  # refused before the doctor's probe and checks
    assert _identity(target) == before
    if kind == "symlink":
        assert (tmp_path / "real.json").read_text() == "{}"


def test_output_replaces_a_report_of_the_users_whole_keeping_its_mode(tmp_path: Path, wheel: Path) -> None:
    target = tmp_path / "reports" / "node.json"
    target.parent.mkdir()
    target.write_text("old report")
    target.chmod(0o640)
    done = cli("doctor", str(wheel), "--output", str(target))
    assert done.returncode in (0, 1) and "wrote" in done.stdout, done.stderr
    assert json.loads(target.read_text())["kind"] == "doctor"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["node.json"]  # no temporary file left


def test_a_report_that_cannot_be_written_is_one_line_and_exit_3(tmp_path: Path, wheel: Path) -> None:
    done = subprocess.run(["bash", "-c", f'ulimit -f 1; exec "$0" -m cudnnload doctor {wheel} --output '
                           f'{tmp_path}/big.json', sys.executable], capture_output=True, text=True, timeout=60,
                          check=False)
    one_line(done, 3, "big.json", "too large")
    assert not list(tmp_path.iterdir())


# --- 5. verdicts that are true --------------------------------------------------------------------------

def test_doctor_of_a_venv_without_cudnn_is_a_problem(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    done = cli("doctor", "--python", str(venv), "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)["result"]
    assert not result["healthy"]
    assert any(f["code"] == "no-cudnn" and f["severity"] == "error" for f in result["findings"])
    # ... and fleet counts such a node unhealthy
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "gpu01.json").write_text(done.stdout)
    fleet = cli("fleet", str(reports))
    assert fleet.returncode == 1 and "PROBLEMS" in fleet.stdout, fleet.stdout


def test_a_folder_of_unknown_libcudnn_files_is_no_cudnn(tmp_path: Path) -> None:
    (tmp_path / "libcudnn_foo.so.3").write_bytes(b"\x7fELF")
    for command in ("inspect", "doctor"):
        done = cli(command, str(tmp_path))
        assert done.returncode == 1, (command, done.stdout)
        assert "no-cudnn" in done.stdout


@pytest.mark.parametrize("given", ["/dev/zero", "/proc/self/mem", "symlink-loop"])
def test_devices_proc_files_and_symlink_loops_are_errors_everywhere(tmp_path: Path, given: str) -> None:
    if given == "symlink-loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        given = str(tmp_path / "a")
    done = cli("inspect", "--json", given)
    assert done.returncode == 1
    codes = {f["code"] for f in json.loads(done.stdout)["result"]["findings"]}
    assert codes & {"not-a-regular-file", "symlink-loop"}, codes
    for args in (("doctor", given), ("trace", "--folder", given, "--runs", "1", "--no-conv"),
                 ("which", "--from", given)):
        one_line(cli(*args), 2, given)


def test_a_fifo_in_a_folder_is_refused_at_once_by_trace_and_load(tmp_path: Path, wheel: Path) -> None:
    for entry in wheel.iterdir():
        if entry.name != "libcudnn_cnn.so.9":
            os.link(entry, tmp_path / entry.name)
    os.mkfifo(tmp_path / "libcudnn_cnn.so.9")
    started = time.monotonic()
    one_line(cli("trace", "--folder", str(tmp_path), "--runs", "1", "--no-conv"), 2, "FIFO")
    loading = subprocess.run([sys.executable, "-c", f"import cudnnload\ntry:\n    cudnnload.load({str(tmp_path)!r})\n"
                              "except cudnnload.LoadError as exc:\n    print(exc.reason)"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert "FIFO" in loading.stdout and loading.returncode == 0, loading.stderr
    assert time.monotonic() - started < 15  # no child waited on the FIFO (300 s and 60 s before)


# --- 6. errors that are one line ------------------------------------------------------------------------

@pytest.mark.parametrize("command", [("which",), ("inspect",), ("explain", "CUDNN_STATUS_NOT_INITIALIZED")])
def test_a_full_disk_on_standard_output_is_one_line_and_exit_3(wheel: Path, command: tuple[str, ...]) -> None:
    args = (*command, str(wheel)) if command == ("inspect",) else command
    with open("/dev/full", "w") as full:
        done = cli(*args, stdout=full.fileno())
    one_line(done, 3, "standard output", "No space left")


def test_a_closed_pipe_on_standard_output_is_one_line(wheel: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = cli("inspect", "-v", str(wheel), stdout=writer)
    finally:
        os.close(writer)
    one_line(done, 3, "standard output", "broken pipe")


def test_which_from_a_file_it_cannot_parse_says_why(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    one_line(cli("which", "--from", str(text)), 2, str(text), "not an ELF")


def test_paths_with_control_characters_are_printed_escaped(tmp_path: Path, wheel: Path) -> None:
    odd = tmp_path / "a\nb\x1b[31m"
    odd.mkdir()
    os.link(wheel / "libcudnn.so.9", odd / "libcudnn.so.9")
    done = cli("inspect", str(odd))
    assert "a\\nb\\x1b[31m" in done.stdout and "\x1b" not in done.stdout
    missing = cli("doctor", str(odd / "nothing\nhere"))
    one_line(missing, 2, "nothing\\nhere")


def test_a_malformed_command_line_is_one_line() -> None:
    one_line(cli("doctor", "--no-such-option"), 2, "--no-such-option", "--help")
    one_line(cli("diff", "/nonexistent.json", "/nonexistent2.json"), 2, "/nonexistent.json")


def test_explain_reads_a_bounded_amount_of_standard_input() -> None:
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run([sys.executable, "-m", "cudnnload", "explain", "-"], stdin=zero, capture_output=True,
                              timeout=60, check=False)
    assert done.returncode in (0, 1) and b"Traceback" not in done.stderr


def test_explain_keeps_the_end_of_a_long_log_where_its_failure_is() -> None:
    """A log of 3 MB whose error is its last line: standard input is read to its end (up to 64 MB), its first and
    last 512 KB kept, so the failure at the end is read (the first 1 MB alone missed it)."""
    filler = ("I0000 00:00:1736383795 step 1234: loss 0.5 " + "x" * 60 + "\n") * 30000
    text = filler + "RuntimeError: cudnn RNN backward can only be called in training mode\n"
    done = subprocess.run([sys.executable, "-m", "cudnnload", "explain", "--json", "-"], input=text.encode(),
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["result"]["causes"][0]["family"] == "bad-param-usage"


def test_explain_finds_a_message_in_the_middle_of_a_long_log(tmp_path: Path) -> None:
    """A 5 MB training log with cuDNN's message half-way through, on standard input and saved to a file: between the
    first and last 512 KB the lines that may tell are kept, so the message is read (it was "not recognised")."""
    filler = "".join(f"2024-01-01 12:00:00 INFO step {i} loss 0.{i} lr 1e-4 /home/u/proj/train.py:123\n"
                     for i in range(30000))
    message = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared "
               "object file: No such file or directory\n")
    text = filler + message + filler
    log = tmp_path / "train.log"
    log.write_text(text)
    for args, given in ((("-",), text.encode()), ((str(log),), None)):
        done = subprocess.run([sys.executable, "-m", "cudnnload", "explain", "--json", *args], input=given,
                              capture_output=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout)["result"]
        assert result["causes"], result
        assert any("libcudnn_cnn_infer.so.8" in (m.get("line") or "") for m in result["messages"]), result["messages"]


def test_explain_reads_a_saved_log_it_is_given_by_name(tmp_path: Path, wheel: Path) -> None:
    """`cudnnload explain crash.log` explains what the file holds (it was read as the words "crash.log"); a FIFO
    or a folder is never opened (no hang) and, like a file this user cannot read or a link to nothing, is one line
    naming it (its name explained as words said "no cuDNN message" of a log never read); a library named is one
    line pointing to inspect."""
    log = tmp_path / "crash.log"
    log.write_text("step 10\nRuntimeError: cudnn RNN backward can only be called in training mode\n")
    done = cli("explain", "--json", str(log))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["causes"][0]["family"] == "bad-param-usage"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "gone.log").symlink_to(tmp_path / "nowhere")
    for name, reason in ((fifo, "a FIFO"), (tmp_path, "a folder"), (tmp_path / "gone.log", "link to nothing")):
        one_line(cli("explain", "--json", str(name), timeout=30), 2, str(name), reason)
    one_line(cli("explain", str(wheel / "libcudnn.so.9")), 2, "libcudnn.so.9", "inspect")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "gbk", "utf-8-sig"])
def test_explain_reads_a_log_in_the_encoding_windows_wrote_it_in(tmp_path: Path, encoding: str) -> None:
    """Windows PowerShell 5.1's `>` writes UTF-16LE (with its BOM; a pipe's copy may lack it), a Chinese console
    GBK, Notepad a UTF-8 BOM: each log is read as its text, by file and from standard input."""
    message = ('OSError: [WinError 126] 找不到指定的模块。 Error loading "C:\\venv\\lib\\site-packages\\torch\\lib\\'
               'cudnn_cnn_infer64_8.dll" or one of its dependencies.\r\n')
    log = tmp_path / "err.txt"
    log.write_bytes(("Traceback (most recent call last):\r\n" + message).encode(encoding))
    english = json.loads(cli("explain", "--json", message.replace("找不到指定的模块。", "The specified module could "
                                                                  "not be found.")).stdout)["result"]["causes"]
    by_file = cli("explain", "--json", str(log))
    with open(log, "rb") as piped:
        by_pipe = subprocess.run([sys.executable, "-m", "cudnnload", "explain", "--json", "-"], stdin=piped,
                                 capture_output=True, text=True, timeout=60, check=False)
    for done in (by_file, by_pipe):
        causes = json.loads(done.stdout)["result"]["causes"]
        assert [c["family"] for c in causes][:3] == [c["family"] for c in english][:3], done.stderr


def test_explain_reads_a_log_that_powershell_appended_utf_16_to(tmp_path: Path) -> None:
    """A log a program wrote in UTF-8, then PowerShell 5.1's `>>` appended its own lines in UTF-16LE: read as UTF-8
    alone, the appended message was a NUL between every letter, not recognised."""
    message = ('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\venv\\lib\\'
               'site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.\r\n')
    log = tmp_path / "err.txt"
    log.write_bytes(b"Loading the model...\r\nstep 1\r\n\xff\xfe" + message.encode("utf-16-le"))
    alone = json.loads(cli("explain", "--json", message).stdout)["result"]["causes"]
    causes = json.loads(cli("explain", "--json", str(log)).stdout)["result"]["causes"]
    assert causes and [c["family"] for c in causes][:3] == [c["family"] for c in alone][:3]


# --- 7. fleet -------------------------------------------------------------------------------------------

def test_fleet_never_tells_a_healthy_node_to_copy_a_broken_one(tmp_path: Path, wheel: Path) -> None:
    healthy = cli("doctor", str(wheel), "--json")
    broken_venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(broken_venv)], check=True, timeout=60)
    broken = cli("doctor", "--python", str(broken_venv), "--json")
    doc = json.loads(healthy.stdout)
    doc["result"]["findings"] = [f for f in doc["result"]["findings"] if f["severity"] != "error"]
    doc["result"]["healthy"] = True
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "gpu01.json").write_text(broken.stdout)  # first by name: a tie broken by name chose it
    (reports / "gpu02.json").write_text(json.dumps(doc))
    done = cli("fleet", str(reports), "--json")
    groups = json.loads(done.stdout)["result"]["groups"]
    assert groups[0]["nodes"] == ["gpu02"] and groups[0]["healthy"]
    assert groups[1]["nodes"] == ["gpu01"]
    assert "gpu02" not in ((groups[1]["fix"] or {}).get("text") or "")


# --- as nobody: what root never meets ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def as_nobody() -> Iterator[tuple[str, dict[str, str], Path]]:
    """(interpreter, environment, a folder of its own that nobody can reach: /tmp/cudnnload-nobody-*)."""
    why = nobody.unavailable()
    if why is not None:
        pytest.skip(f"cannot run as nobody: {why}")
    folder = Path(tempfile.mkdtemp(prefix="cudnnload-nobody-"))
    folder.chmod(0o755)
    try:
        yield nobody.interpreter() or "", nobody.stage(folder / "staged"), folder
    finally:
        for path in folder.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def _site_copy(base: Path, tag: str) -> Path:
    """The wheel's site folder, hard-linked where nobody can reach it; its lib folder returned."""
    source = lib_folder(tag).parents[2]
    for path in source.rglob("*"):
        target = base / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)
    for path in [base, *base.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    return base / "nvidia" / "cudnn" / "lib"


def test_a_folder_that_can_be_searched_but_not_listed_is_probed_by_name(
        as_nobody: tuple[str, dict[str, str], Path]) -> None:
    python, env, scratch = as_nobody
    lib = _site_copy(scratch / "site", W928)
    lib.chmod(0o311)
    done = subprocess.run([*nobody.prefix(), python, "-m", "cudnnload", "doctor", "--json", str(lib / "libcudnn.so.9")],
                          capture_output=True, text=True, env=env, cwd="/tmp", timeout=120, check=False)
    findings = json.loads(done.stdout)["result"]["findings"]
    codes = {f["code"] for f in findings}
    assert not codes & {"missing-sublibrary", "record-missing-file", "missing-shim"}, findings
    loading = subprocess.run([*nobody.prefix(), python, "-c", f"import cudnnload; print(cudnnload.load({str(lib)!r})"
                              ".release)"], capture_output=True, text=True, env=env, cwd="/tmp", timeout=120,
                             check=False)
    assert loading.stdout.strip() == "9.28.0", loading.stderr


def test_permission_denied_says_so_and_names_the_file(as_nobody: tuple[str, dict[str, str], Path]) -> None:
    python, env, scratch = as_nobody
    closed = scratch / "closed"
    closed.mkdir()
    (closed / "libtorch_cuda.so").write_bytes(b"\x7fELF")
    closed.chmod(0)
    target = str(closed / "libtorch_cuda.so")
    done = subprocess.run([*nobody.prefix(), python, "-m", "cudnnload", "doctor", target], capture_output=True,
                          text=True, env=env, cwd="/tmp", timeout=60, check=False)
    closed.chmod(0o755)
    one_line(done, 2, target, "permission denied")


def test_a_folder_or_root_this_user_cannot_open_is_one_line_with_the_reason(
        as_nobody: tuple[str, dict[str, str], Path]) -> None:
    """`fleet CLOSED` said "no reports here" (os.walk is silent on a folder it cannot list); `doctor --root CLOSED`
    was exit 3, "cannot confine the reader to the root: chroot failed"."""
    python, env, scratch = as_nobody
    closed = scratch / "closed-reports"
    closed.mkdir()
    closed.chmod(0o700)
    try:
        for args, words in ((("fleet", str(closed)), "cannot list it"), (("doctor", "--root", str(closed)),
                                                                         "cannot enter it")):
            done = subprocess.run([*nobody.prefix(), python, "-m", "cudnnload", *args], capture_output=True,
                                  text=True, env=env, cwd="/tmp", timeout=60, check=False)
            one_line(done, 2, str(closed), words)
    finally:
        closed.chmod(0o755)


# --- the corpus, sampled --------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout_s(300)
def test_a_sample_of_the_odd_input_corpus_ends_clearly_with_nothing_left_or_replaced(tmp_path: Path,
                                                                                     wheel: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    odd = make_odd(folder, wheel)
    try:
        every = list(cases(odd, str(folder / "lib-folder"), odd["report.json"]))
        sample = every[::5]
        watched = sorted(p for p in odd.values() if not p.startswith(("/proc/", "/sys/")))
        outcomes = [run(Case(c.name, c.argv, c.stdin, c.stdout, c.env, c.may_write), watched=watched)
                    for c in sample]
    finally:
        remove_odd(folder)
    assert len(every) >= 300
    bad = [(o.case, o.verdict, o.returncode, o.orphans, o.replaced, o.stderr[-300:]) for o in outcomes if not o.ok]
    assert not bad


def test_a_home_of_another_user_gets_no_cache_folder(as_nobody: tuple[str, dict[str, str], Path]) -> None:
    """Issue 29: as root with another user's HOME (`sudo -E`), doctor made ~/.cache, owned by root, in that home
    (then that user's pip broke). Here nobody plays the process and uid 54321 the home's owner: the home stays
    as it was, and one warning line says where the cache went instead."""
    python, env, scratch = as_nobody
    home = scratch / "alice"
    home.mkdir(mode=0o755)
    os.chown(home, 54321, 54321)
    environ = {key: value for key, value in env.items() if key != "CUDNNLOAD_NO_CACHE"}
    done = subprocess.run([*nobody.prefix(), python, "-m", "cudnnload", "inspect", str(scratch / "missing")],
                          capture_output=True, text=True, env={**environ, "HOME": str(home)}, cwd="/tmp", timeout=60,
                          check=False)
    assert done.returncode == 1, done.stderr
    assert os.listdir(home) == []
    warnings = [line for line in done.stderr.splitlines() if line.startswith("cudnnload: warning:")]
    assert len(warnings) == 1 and str(home) in warnings[0] and "belongs to uid 54321" in warnings[0], done.stderr
