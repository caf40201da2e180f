"""A damaged cache never breaks a command (issue 16, "Caches").

Every cache file (the ELF memo ``elf-v*.json``, the verdicts ``plans-v*.json``, the algorithm choices
``algos-v*.json``) is checked on read: nesting, size, the layout, and each entry's field types. What does
not fit is ignored with one warning line naming the file, and rebuilt by the next write. Writers merge
under a lock (``NAME.lock``) instead of overwriting each other. The cases the issue measured are tests
here; hypothesis then throws random JSON, deep nesting, truncations, wrong shapes and random bytes at
each file and checks that ``inspect``, ``which``, ``doctor`` and ``load()`` still give their usual
answer, with no traceback.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudnnload import cachedir
from cudnnload.cli import make_cli
from cudnnload.dispatch.algos import ChoiceStore, scope_key
from cudnnload.loading import plans
from tests.test_concurrency import _INSPECT as GATED_INSPECT  # waits for a gate file, then inspects
from tests.test_concurrency import _wait_for
from tests.wheels import WHEEL_RELEASES, lib_folder, python_path

pytestmark = pytest.mark.wheels

ROOT = Path(__file__).resolve().parents[1]
W928 = "cu12-9.28.0.42"
SCOPE = scope_key("NVIDIA H200", (9, 0), "9.28.0")
CHOICE = {"engine": 5, "knobs": [[2, 1], [3, 0]]}
WARNING = "cudnnload: warning:"
# a tiny program for `doctor -- COMMAND`: maps the shim and ends
TINY = "import ctypes, sys; ctypes.CDLL(sys.argv[1])"
LOAD = "import sys, cudnnload; got = cudnnload.load(sys.argv[1]); print(got.release)"
KINDS = ("elf", "plans", "algos")


def _commands() -> dict[str, list[str]]:
    folder = str(lib_folder(W928))
    return {"inspect": ["inspect", folder], "which": ["which"], "doctor": ["doctor", folder],
            "doctor-program": ["doctor", "--", sys.executable, "-c", TINY, f"{folder}/libcudnn.so.9"]}


def _invoke(args: list[str], cache: Path) -> Result:
    """``cudnnload ARGS`` in this process, as a new process would run it (its warnings not yet given)."""
    cachedir._warned.clear()
    return CliRunner().invoke(make_cli(), args, env={"CUDNNLOAD_CACHE": str(cache), "CUDNNLOAD_NO_CACHE": None})


def _child(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a new process using the cache folder ``cache``."""
    env = {**os.environ, "CUDNNLOAD_CACHE": str(cache), "PYTHONPATH": python_path(ROOT)}
    env.pop("CUDNNLOAD_NO_CACHE", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def _cli(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    return _child(["-m", "cudnnload", *args], cache)


def _load_in_child(cache: Path) -> subprocess.CompletedProcess[str]:
    return _child(["-c", LOAD, str(lib_folder(W928))], cache)


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(WARNING)]


def _file(cache: Path, kind: str) -> Path:
    return next(cache.glob(f"{kind}-v*.json"))


@pytest.fixture(scope="module")
def primed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding all three files, as real runs left them: the ELF memo (every command), a
    verdict (load() in a child), a choice (the store a cuDNN backend writes through)."""
    cache = tmp_path_factory.mktemp("primed") / "cache"
    for args in _commands().values():
        _invoke(args, cache)
    assert _load_in_child(cache).returncode == 0
    ChoiceStore(SCOPE, {"CUDNNLOAD_CACHE": str(cache)}).put("cudnn-graph", "conv|1", CHOICE)
    for kind in KINDS:
        _file(cache, kind)  # each is there
    return cache


@pytest.fixture(scope="module")
def usual(primed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """Each command's exit code and output with a healthy cache (what a damaged one must not change)."""
    cache = tmp_path_factory.mktemp("usual") / "cache"
    shutil.copytree(primed, cache)
    answers = {}
    for name, args in _commands().items():
        result = _invoke(args, cache)
        assert not _warnings(result.stderr), result.stderr
        answers[name] = (result.exit_code, result.stdout)
    return answers


@pytest.fixture(scope="module")
def usual_in_child(primed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """The same in a new process (this one may have mapped cuDNN by now, which `which` reports)."""
    cache = tmp_path_factory.mktemp("usual-in-child") / "cache"
    shutil.copytree(primed, cache)
    answers = {}
    for name, args in _commands().items():
        done = _cli(args, cache)
        assert not _warnings(done.stderr), done.stderr
        answers[name] = (done.returncode, done.stdout)
    return answers


@pytest.fixture
def cache(primed: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    shutil.copytree(primed, folder)
    return folder


def _damage(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    path.chmod(0o600)


def _assert_usual(result: Result, name: str, usual: dict[str, tuple[int, str]], damaged: Path,
                  *, same_output: bool = True) -> None:
    """The command gave its usual exit code (and output, but doctor's timings), no traceback, and at most
    one warning line, naming the damaged file."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError("".join(traceback.format_exception(result.exception))) from None
    assert "Traceback" not in result.output + result.stderr
    code, output = usual[name]
    assert result.exit_code == code, result.stderr
    if same_output and not name.startswith("doctor"):
        assert result.stdout == output
    warnings = _warnings(result.stderr)
    assert len(warnings) <= 1 and all(str(damaged) in line for line in warnings), warnings


# --- the cases the issue measured --------------------------------------------------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000


def test_a_memo_nested_deeper_than_json_can_parse_gives_each_command_one_warning_and_its_usual_answer(
        cache: Path, usual_in_child: dict[str, tuple[int, str]]) -> None:
    usual = usual_in_child
    memo = _file(cache, "elf")
    for name, args in _commands().items():
        _damage(memo, DEEP)
        done = _cli(args, cache)
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert done.returncode == usual[name][0], done.stderr[-3000:]
        if not name.startswith("doctor"):
            assert done.stdout == usual[name][1]
        warnings = _warnings(done.stderr)
        assert len(warnings) == 1 and str(memo) in warnings[0] and "nested" in warnings[0], done.stderr
        again = _cli(args, cache)  # rebuilt: nothing to warn about any more
        assert not _warnings(again.stderr) and again.returncode == usual[name][0], again.stderr[-3000:]


def test_a_folder_in_place_of_a_memo_gives_each_command_one_warning_and_its_usual_answer(
        cache: Path, usual_in_child: dict[str, tuple[int, str]]) -> None:
    """A folder where a memo belongs opens read-only like a file (a hostile user's: it was an internal error, exit 3):
    checked on the descriptor, it is one warning and nothing read; the memo is not written there either."""
    for kind in ("elf", "plans"):
        memo = _file(cache, kind)
        for name, args in _commands().items():
            if memo.is_file():
                memo.unlink()
            memo.mkdir(exist_ok=True)
            done = _cli(args, cache)
            assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-3000:]
            assert done.returncode == usual_in_child[name][0], done.stderr[-3000:]
            assert all(str(memo) in line and "not a regular file" in line for line in _warnings(done.stderr))
        memo.rmdir()


def _records(value: object, change: Callable[[dict[str, object]], None]) -> object:
    """``value`` with ``change`` applied to every record (``{"@": kind, "f": [fields]}``) in it."""
    if isinstance(value, dict):
        if "@" in value:
            change(value)
        for item in value.values():
            _records(item, change)
    elif isinstance(value, list):
        for item in value:
            _records(item, change)
    return value


def _leaves(value: object, change: Callable[[object], object], *, top: bool = True) -> object:
    """``value`` with each leaf (but the file's format number and record kinds) replaced by ``change(leaf)``."""
    if isinstance(value, dict):
        return {k: v if (top and k == "format") or k == "@" else _leaves(v, change, top=False)
                for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            return change(value)
        return [_leaves(v, change, top=False) for v in value]
    return change(value)


def _at_level(value: object, level: int, new: object) -> object:
    """``value`` with everything ``level`` containers down replaced by ``new`` (the format number kept)."""
    if level == 0:
        return new
    if isinstance(value, dict):
        return {k: v if k == "format" else _at_level(v, level - 1, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_at_level(v, level - 1, new) for v in value]
    return value


def _pair_values(value: object, new: object) -> object:
    """``value`` with the second item of each pair whose first is a list (``[stamp, info]``, ``[key, fact]``)
    replaced by ``new``."""
    if isinstance(value, dict):
        return {k: _pair_values(v, new) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) == 2 and isinstance(value[0], list):
            return [value[0], new]
        return [_pair_values(v, new) for v in value]
    return value


def _huge(leaf: object) -> object:
    return 10 ** 40 if type(leaf) is int else leaf


def _strings_as_numbers(leaf: object) -> object:
    return 7 if isinstance(leaf, str) else leaf


def _tuples_as_strings(leaf: object) -> object:
    return "libcudnn.so.9" if isinstance(leaf, list) else leaf


def _ints_as(text: str) -> Callable[[object], object]:
    """Every int becomes the literal ``text`` (NaN, Infinity: not JSON, but Python's json reads them)."""
    return lambda leaf: f"@{text}@" if type(leaf) is int else leaf


def _shorter(record: dict[str, object]) -> None:
    fields = record.get("f")
    if isinstance(fields, list) and fields:
        fields.pop()


def _longer(record: dict[str, object]) -> None:
    fields = record.get("f")
    if isinstance(fields, list):
        fields.append(None)


def _unknown(record: dict[str, object]) -> None:
    record["@"] = "system"


def _fields_null(record: dict[str, object]) -> None:
    fields = record.get("f")
    if isinstance(fields, list):
        record["f"] = [None] * len(fields)


# Valid JSON of the wrong shape, at every level of a file: what the issue's 16 variants were.
SHAPES: dict[str, Callable[[object], object]] = {
    "top-list": lambda content: [content],
    "top-int": lambda content: 1,
    "top-string": lambda content: "elf",
    "top-null": lambda content: None,
    "sections-int": lambda content: _at_level(content, 1, 1),
    "sections-list": lambda content: _at_level(content, 1, [1, 2]),
    "entries-int": lambda content: _at_level(content, 2, 1),
    "entries-string": lambda content: _at_level(content, 2, "x"),
    "entries-below-int": lambda content: _at_level(content, 3, 1),
    "pair-values-int": lambda content: _pair_values(content, 1),
    "fields-fewer": lambda content: _records(content, _shorter),
    "fields-more": lambda content: _records(content, _longer),
    "fields-null": lambda content: _records(content, _fields_null),
    "record-unknown": lambda content: _records(content, _unknown),
    "strings-as-numbers": lambda content: _leaves(content, _strings_as_numbers),
    "tuples-as-strings": lambda content: _leaves(content, _tuples_as_strings),
    "numbers-huge": lambda content: _leaves(content, _huge),
    "numbers-nan": lambda content: _leaves(content, _ints_as("NaN")),
    "numbers-infinity": lambda content: _leaves(content, _ints_as("-Infinity")),
}


def _shaped(path: Path, shape: str) -> bytes:
    """The file at ``path`` given the wrong ``shape``."""
    text = json.dumps(SHAPES[shape](copy.deepcopy(json.loads(path.read_bytes()))))
    for literal in ("NaN", "-Infinity"):
        text = text.replace(f'"@{literal}@"', literal)
    return text.encode()


@pytest.mark.timeout_s(240)
@pytest.mark.parametrize("shape", SHAPES)
def test_an_elf_memo_of_the_wrong_shape_leaves_every_command_its_usual_answer(
        shape: str, cache: Path, usual: dict[str, tuple[int, str]]) -> None:
    memo = _file(cache, "elf")
    damaged = _shaped(memo, shape)
    for name, args in _commands().items():
        _damage(memo, damaged)
        _assert_usual(_invoke(args, cache), name, usual, memo)
        assert not _warnings(_invoke(args, cache).stderr)  # rebuilt


@pytest.mark.parametrize("shape", SHAPES)
def test_a_verdict_memo_of_the_wrong_shape_is_not_trusted(shape: str, cache: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    store = _file(cache, "plans")
    keys = list(json.loads(store.read_text())["plans"])
    proven = [plans.recall(str(store), key) for key in keys]
    _damage(store, _shaped(store, shape))
    cachedir._warned.clear()
    for key, plan in zip(keys, proven, strict=True):
        assert plans.recall(str(store), key) in (None, plan)  # dropped, or untouched by the damage
    warnings = _warnings(capsys.readouterr().err)
    assert len(warnings) <= 1 and all(str(store) in line for line in warnings), warnings


@pytest.mark.parametrize("shape", SHAPES)
def test_a_choice_memo_of_the_wrong_shape_gives_no_choice_and_takes_new_ones(
        shape: str, cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(cache, "algos")
    _damage(path, _shaped(path, shape))
    env = {"CUDNNLOAD_CACHE": str(cache)}
    cachedir._warned.clear()
    store = ChoiceStore(SCOPE, env)
    assert store.get("cudnn-graph", "conv|1") in (None, CHOICE)
    store.put("cudnn-graph", "conv|2", CHOICE)
    assert ChoiceStore(SCOPE, env).get("cudnn-graph", "conv|2") == CHOICE
    warnings = _warnings(capsys.readouterr().err)
    assert len(warnings) <= 1 and all(str(path) in line for line in warnings), warnings


@pytest.mark.parametrize("damage", ["deep", "entries-int", "fields-fewer", "numbers-nan", "truncated", "bytes"])
def test_load_in_a_child_proves_again_past_a_damaged_verdict_memo(damage: str, cache: Path) -> None:
    store = _file(cache, "plans")
    content = {"deep": DEEP, "truncated": store.read_bytes()[:100], "bytes": os.urandom(512)}.get(damage)
    _damage(store, content if content is not None else _shaped(store, damage))
    done = _load_in_child(cache)
    assert (done.returncode, done.stdout.strip()) == (0, "9.28.0"), done.stderr[-3000:]
    warnings = _warnings(done.stderr)
    assert len(warnings) == 1 and str(store) in warnings[0], done.stderr
    again = _load_in_child(cache)
    assert again.returncode == 0 and not _warnings(again.stderr), again.stderr


@pytest.mark.parametrize("shape", ["pair-values-int", "sections-list"])
def test_doctor_running_a_program_past_a_damaged_memo_reports_on_the_program(
        shape: str, cache: Path, usual_in_child: dict[str, tuple[int, str]]) -> None:
    """The issue: the program ran, then doctor died of an AssertionError (its observer thread had died
    of the memo)."""
    memo = _file(cache, "elf")
    _damage(memo, _shaped(memo, shape))
    done = _cli(_commands()["doctor-program"], cache)
    assert "Traceback" not in done.stderr and "AssertionError" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == usual_in_child["doctor-program"][0] and "exited with status 0" in done.stdout


# --- writers merge ------------------------------------------------------------------------------------------

def _installs(tmp_path: Path) -> list[str]:
    """Eight folders of different cuDNN files: the five wheels' own, and the 9.28 one under three other paths
    (hard links where they can be: the memo is keyed by path)."""
    folders = [str(lib_folder(tag)) for tag in WHEEL_RELEASES]
    for index in range(3):
        twin = tmp_path / "twins" / str(index)
        twin.mkdir(parents=True)
        for path in lib_folder(W928).iterdir():
            try:
                os.link(path, twin / path.name)
            except OSError:
                shutil.copy2(path, twin / path.name)
        folders.append(str(twin))
    return folders


@pytest.mark.timeout_s(300)
def test_parallel_inspections_of_different_installs_keep_every_entry_in_the_memo(tmp_path: Path) -> None:
    folders = _installs(tmp_path)
    own: list[set[str]] = []
    for index, folder in enumerate(folders):  # what each inspection remembers when it runs alone
        alone = tmp_path / f"alone-{index}"
        assert _cli(["inspect", "--json", folder], alone).stdout
        own.append(set(json.loads(_file(alone, "elf").read_text())["entries"]))
    shared, gate = tmp_path / "shared", tmp_path / "gate"
    env = {**os.environ, "CUDNNLOAD_CACHE": str(shared), "PYTHONPATH": python_path(ROOT)}
    children = [subprocess.Popen([sys.executable, "-c", GATED_INSPECT, str(gate), "whole", folder, str(shared)],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for folder in folders]
    try:
        _wait_for(lambda: list(tmp_path.glob("gate.*.waiting")), len(children), "the gate", children)
        gate.touch()  # all set off at once
        ends = [child.communicate(timeout=240) for child in children]
    finally:
        for child in children:
            child.kill()
    assert all(out for out, _ in ends) and not any(_warnings(err) or "Traceback" in err for _, err in ends), ends
    remembered = set(json.loads(_file(shared, "elf").read_text())["entries"])
    lost = set().union(*own) - remembered
    assert not lost, f"{len(lost)} of {len(set().union(*own))} entries lost"


@contextlib.contextmanager
def _held(lock: Path) -> Iterator[None]:
    """The lock a stuck writer holds."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_a_writer_behind_a_stuck_lock_holder_skips_its_write_in_seconds_without_an_error(
        cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(cache, "algos")
    before = path.read_bytes()
    store = ChoiceStore(SCOPE, {"CUDNNLOAD_CACHE": str(cache)})
    with _held(Path(f"{path}.lock")):
        started = time.monotonic()
        store.put("cudnn-graph", "conv|2", CHOICE)
        waited = time.monotonic() - started
    assert 1 <= waited < 10 and path.read_bytes() == before  # skipped, after a bounded wait
    assert store.get("cudnn-graph", "conv|2") == CHOICE  # still known to this process
    assert "Traceback" not in capsys.readouterr().err
    store.put("cudnn-graph", "conv|3", CHOICE)  # the lock is free again: written
    assert ChoiceStore(SCOPE, {"CUDNNLOAD_CACHE": str(cache)}).get("cudnn-graph", "conv|3") == CHOICE


def test_the_lock_file_is_owner_only_and_a_symlink_in_its_place_is_not_followed(
        cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(cache, "algos")
    env = {"CUDNNLOAD_CACHE": str(cache)}
    ChoiceStore(SCOPE, env).put("cudnn-graph", "conv|2", CHOICE)
    lock = Path(f"{path}.lock")
    assert lock.stat().st_mode & 0o777 == 0o600
    lock.unlink()
    target = tmp_path / "elsewhere"
    target.write_text("theirs")
    lock.symlink_to(target)
    cachedir._warned.clear()
    ChoiceStore(SCOPE, env).put("cudnn-graph", "conv|3", CHOICE)
    assert target.read_text() == "theirs" and lock.is_symlink()
    assert ChoiceStore(SCOPE, env).get("cudnn-graph", "conv|3") is None  # not written without the lock
    warnings = _warnings(capsys.readouterr().err)
    assert len(warnings) == 1 and str(lock) in warnings[0], warnings


def test_a_cache_file_keeps_the_newest_entries_within_its_bounds(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    layout = cachedir.Layout("test-v1.json", 1, ("facts",), 2, 4)
    path = str(tmp_path / "cache" / layout.name)
    for index in range(10):
        assert cachedir.write_entries(path, layout, {("facts", f"k{index}"): index})
    assert cachedir.write_entries(path, layout, {("facts", "k7"): 70})  # rewritten: now the newest
    assert cachedir.read_entries(path, layout) == {("facts", "k6"): 6, ("facts", "k8"): 8, ("facts", "k9"): 9,
                                                   ("facts", "k7"): 70}
    monkeypatch.setattr(cachedir, "MAX_BYTES", 200)  # and within the size a reader accepts
    assert cachedir.write_entries(path, layout, {("facts", "big"): "x" * 160})
    assert list(cachedir.read_entries(path, layout)) == [("facts", "k7"), ("facts", "big")]
    assert os.path.getsize(path) <= 200


# --- records come back only with the types they declare ----------------------------------------------------

def test_a_record_with_a_field_of_the_wrong_type_is_refused_not_built() -> None:
    from cudnnload.resolve.elf import read_elf
    from cudnnload.resolve.elfcache import KINDS

    info = read_elf(str(lib_folder(W928) / "libcudnn.so.9"))
    good = json.loads(json.dumps(cachedir.plain(info)))
    assert cachedir.revive(good, "ElfInfo", KINDS) == info
    for index, wrong in [(1, "12"), (1, True), (1, 2 ** 70), (6, "libc.so.6"), (6, [1]), (0, None), (0, "a\0b"),
                         (15, {"@": "Release", "f": [9, 28]}), (15, {"@": "GpuCode", "f": [[], [], 0, "none", None]})]:
        bad = json.loads(json.dumps(good))
        bad["f"][index] = wrong
        with pytest.raises(ValueError):
            cachedir.revive(bad, "ElfInfo", KINDS)


# --- anything at all in any cache file ---------------------------------------------------------------------

EXAMPLES = int(os.environ.get("CUDNNLOAD_CACHE_FUZZ_EXAMPLES", "20"))
_LEAVES = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2 ** 63) | st.floats()
           | st.text(max_size=12))  # floats(): NaN and Infinity too, which json.dumps writes as such
JSON = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=8), inner, max_size=4), max_leaves=24)
_FUZZ = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                        HealthCheck.data_too_large])


def _dumps(value: object) -> bytes:
    return json.dumps(value).encode()


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def _places(value: object, at: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    """The path to every value inside ``value`` (keys and indexes), itself first."""
    yield at
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _places(child, (*at, key))


def _put(content: bytes, at: tuple[object, ...], new: object) -> bytes:
    whole = json.loads(content)
    if not at:
        return _dumps(new)
    parent = whole
    for key in at[:-1]:
        parent = parent[key]
    parent[at[-1]] = new
    return _dumps(whole)


def _like(leaf: object) -> st.SearchStrategy[object]:
    """Another value of the same JSON type: what damage that still type-checks looks like."""
    if type(leaf) is int:
        return st.integers()
    if isinstance(leaf, str):
        return st.text(max_size=12)
    return st.just(leaf)


MAX_DEPTH_DRAWN = 28  # around cachedir.MAX_DEPTH (32) once the entry's own depth adds up


DAMAGES = ("json", "deep", "deep-text", "truncated", "bytes", "subtree", "leaf")
WHOLE = {"json", "deep-text", "truncated", "bytes"}  # nothing of the file can still be read after these


@st.composite
def damaged(draw: st.DrawFn, good: bytes) -> tuple[str, bytes]:
    """A kind of damage (`DAMAGES`) and the cache file whose healthy content is ``good`` so damaged."""
    places = list(_places(json.loads(good)))
    how = draw(st.sampled_from(DAMAGES))
    if how == "json":
        return how, _dumps(draw(JSON))
    if how == "deep":  # deep nesting where an entry or any other part of the file was
        return how, _put(good, draw(st.sampled_from(places)), _nested(draw(st.integers(MAX_DEPTH_DRAWN, 400))))
    if how == "deep-text":
        depth, opener = draw(st.integers(33, 200_000)), draw(st.sampled_from([b"[", b'{"a":', b'{"format":[']))
        return how, opener * depth + draw(st.sampled_from([b"", b"]" * depth, b"1" + b"}" * depth]))
    if how == "truncated":
        return how, good[:draw(st.integers(0, len(good) - 1))]
    if how == "bytes":
        return how, draw(st.binary(max_size=256))
    at = draw(st.sampled_from(places))
    if how == "subtree":
        return how, _put(good, at, draw(JSON))
    leaf = json.loads(good)
    for key in at:
        leaf = leaf[key]
    return how, _put(good, at, draw(_like(leaf)))


def _fresh(primed: Path, tmp_path: Path) -> Path:
    """A new copy of the primed cache for one example."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path)) / "cache"
    shutil.copytree(primed, folder)
    return folder


@pytest.mark.timeout_s(600)
def test_any_damage_to_the_elf_memo_leaves_every_command_working_and_is_rebuilt(
        primed: Path, usual: dict[str, tuple[int, str]], tmp_path: Path) -> None:
    good = _file(primed, "elf").read_bytes()
    seen: set[str] = set()

    @_FUZZ
    @given(st.data())
    def command_works(data: st.DataObject) -> None:
        cache = _fresh(primed, tmp_path)
        memo = _file(cache, "elf")
        how, content = data.draw(damaged(good))
        for name, args in _commands().items():
            _damage(memo, content)
            result = _invoke(args, cache)
            _assert_usual(result, name, usual, memo, same_output=how in WHOLE)
            assert not _warnings(_invoke(args, cache).stderr), "not rebuilt"
        seen.add(how)

    command_works()
    assert seen == set(DAMAGES)


@pytest.mark.timeout_s(300)
def test_any_damage_to_the_verdict_memo_is_not_trusted_and_is_rebuilt(
        primed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = list(json.loads(_file(primed, "plans").read_bytes())["plans"])
    if any(plans.recall(str(_file(primed, "plans")), key) is None for key in keys):
        # a wheel file's change time moved since (another test hard-linked it): the verdict is proven again
        assert _load_in_child(primed).returncode == 0
    good = _file(primed, "plans").read_bytes()
    keys = list(json.loads(good)["plans"])

    @settings(_FUZZ, max_examples=EXAMPLES * 5)
    @given(st.data())
    def verdict_is_checked(data: st.DataObject) -> None:
        cache = _fresh(primed, tmp_path)
        store = str(_file(cache, "plans"))
        proven = [plans.recall(store, key) for key in keys]
        notes = [plans.recall_notes(store, key) for key in keys]
        _damage(Path(store), data.draw(damaged(good))[1])
        cachedir._warned.clear()
        for key in keys:
            plan = plans.recall(store, key)  # None, or one that can be loaded: never an error
            assert plan is None or plans.unloadable(plan) is None
        warnings = _warnings(capsys.readouterr().err)
        assert len(warnings) <= 1 and all(store in line for line in warnings), warnings
        for key, plan, said in zip(keys, proven, notes, strict=True):
            assert plan is not None and said is not None
            plans.remember(store, key, plan, said)
        assert [plans.recall(store, key) for key in keys] == proven  # rebuilt

    verdict_is_checked()


@pytest.mark.timeout_s(300)
def test_any_damage_to_the_choice_memo_gives_no_choice_or_a_well_formed_one(
        primed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _file(primed, "algos").read_bytes()

    @settings(_FUZZ, max_examples=EXAMPLES * 5)
    @given(st.data())
    def choice_is_checked(data: st.DataObject) -> None:
        cache = _fresh(primed, tmp_path)
        path = _file(cache, "algos")
        _damage(path, data.draw(damaged(good))[1])
        env = {"CUDNNLOAD_CACHE": str(cache)}
        cachedir._warned.clear()
        choice = ChoiceStore(SCOPE, env).get("cudnn-graph", "conv|1")
        assert choice is None or all(type(value) is int or isinstance(value, list) for value in choice.values())
        ChoiceStore(SCOPE, env).put("cudnn-graph", "conv|2", CHOICE)
        assert ChoiceStore(SCOPE, env).get("cudnn-graph", "conv|2") == CHOICE  # rebuilt
        warnings = _warnings(capsys.readouterr().err)
        assert len(warnings) <= 1 and all(str(path) in line for line in warnings), warnings

    choice_is_checked()


@pytest.mark.timeout_s(300)
def test_load_in_a_child_works_past_any_damage_to_both_memos(primed: Path, tmp_path: Path) -> None:
    goods = {kind: _file(primed, kind).read_bytes() for kind in ("elf", "plans")}

    @settings(_FUZZ, max_examples=max(EXAMPLES // 4, 3))
    @given(st.data())
    def load_works(data: st.DataObject) -> None:
        cache = _fresh(primed, tmp_path)
        for kind, good in goods.items():
            _damage(_file(cache, kind), data.draw(damaged(good))[1])
        done = _load_in_child(cache)
        assert (done.returncode, done.stdout.strip()) == (0, "9.28.0"), done.stderr[-3000:]
        assert len(_warnings(done.stderr)) <= 2 and "Traceback" not in done.stderr, done.stderr

    load_works()


# --- issue 29: verdicts keyed by what they depend on ---------------------------------------------------------

def _fake_driver(folder: Path) -> Path:
    """A libcuda.so.1 exporting the driver functions the 9.28 wheel's runtime-compiled engines NEED (each a
    stub): with it on LD_LIBRARY_PATH that library loads, as on a machine with the driver."""
    engines = lib_folder(W928) / "libcudnn_engines_runtime_compiled.so.9"
    listed = subprocess.run(["nm", "-D", "--undefined-only", str(engines)], capture_output=True, text=True,
                            check=True).stdout
    names = sorted({line.split()[-1] for line in listed.splitlines() if re.fullmatch(r"cu[A-Z]\w*", line.split()[-1])})
    source = folder / "driver.c"
    source.write_text("".join(f"void {name}(void) {{}}\n" for name in names))
    folder.mkdir(exist_ok=True)
    library = folder / "libcuda.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source), "-Wl,-soname,libcuda.so.1"],
                   check=True)
    return library


def test_a_set_proven_with_a_driver_is_proven_again_without_it(tmp_path: Path) -> None:
    """Issue 29: `run` proved a set with the driver there, remembered it, and on the same cache without the
    driver preloaded a library that NEEDs libcuda.so.1: no program could start (exit 127)."""
    if shutil.which("gcc") is None or shutil.which("nm") is None:
        pytest.skip("needs gcc and nm")
    if _driver_present():
        pytest.skip("the machine's own driver would answer")
    drivers = tmp_path / "drivers"
    drivers.mkdir()
    driver = _fake_driver(drivers)
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache"),
           "LD_LIBRARY_PATH": str(drivers)}
    command = [sys.executable, "-m", "cudnnload", "run", "--cudnn", str(lib_folder(W928)), "--", "true"]
    with_driver = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert with_driver.returncode == 0, with_driver.stderr
    driver.unlink()
    without = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert without.returncode == 0, without.stderr


def _driver_present() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_verify_hashes_again_a_file_changed_in_place_with_its_mtime_put_back(tmp_path: Path) -> None:
    """Issue 29: `doctor --verify` with a warm cache did not see 16 bytes changed in place with the mtime
    restored (its memo was keyed by size and mtime; the change time moved)."""
    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, symlinks=True)
    lib = site / "nvidia" / "cudnn" / "lib"
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "cudnnload", "doctor", "--verify", "--json", str(lib)]
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert not any(f["code"] == "record-mismatch" for f in json.loads(first.stdout)["result"]["findings"])
    ops = lib / "libcudnn_ops.so.9"
    before = ops.stat()
    with open(ops, "r+b") as handle:
        handle.seek(before.st_size // 2)
        handle.write(b"\xa5" * 16)
    os.utime(ops, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (ops.stat().st_size, ops.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    found = [f for f in json.loads(second.stdout)["result"]["findings"] if f["code"] == "record-mismatch"]
    assert [f["path"] for f in found] == [str(ops)], second.stdout[:3000]


def test_a_proof_made_while_etc_ld_so_preload_named_a_library_is_not_given_again_once_it_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/etc/ld.so.preload`` decides what every process maps first, as LD_PRELOAD does: what a proof depends on
    (`cachedir.proven_under`, part of every remembered probe's key) changes when it is written, changed or removed
    (on the H200 a probe remembered while it named the system's graph was given again for the venv's cuDNN once the
    file was gone: 9.14's version for 9.19's shim)."""
    preload = tmp_path / "ld.so.preload"
    monkeypatch.setattr(cachedir, "PRELOAD_FILE", str(preload))
    without = cachedir.proven_under({})
    preload.write_text("/lib/x86_64-linux-gnu/libcudnn_graph.so.9\n")
    named = cachedir.proven_under({})
    assert named != without
    preload.unlink()
    assert cachedir.proven_under({}) == without


def _cudnn_85_with_cublas(tmp_path: Path) -> Path:
    """``tmp_path/site/nvidia`` as pip lays out nvidia-cudnn-cu11 8.5 and the cuBLAS 11 it requires (hard links)."""
    from tests.test_opened_at_load import _unpacked

    site = tmp_path / "site" / "nvidia"
    for source, name in ((lib_folder("cu11-8.5.0.96"), "cudnn"),
                         (_unpacked("nvidia-cublas-cu11-11.11.3.6", "nvidia/cublas/lib"), "cublas")):
        (site / name / "lib").mkdir(parents=True)
        for path in source.iterdir():
            if path.name.startswith("lib"):
                os.link(path, site / name / "lib" / path.name)
    return site


def test_a_probe_remembered_before_a_fix_put_the_missing_library_in_place_is_run_again(tmp_path: Path) -> None:
    """nvidia-cudnn-cu11 8.5/8.6 as pip installs them: cuBLASLt 11 dlopens ``libnvrtc.so`` as it loads, no wheel
    ships that name, and the shim's first call aborts. doctor's fix links NVRTC there. A probe remembered before
    the fix was given again after it (its mapped files were unchanged; the link is a new file in cuBLAS's folder,
    which it searched), so doctor kept saying the process dies. Every folder a file it looked for could appear in
    (each mapped file's own and its RUNPATH's) is now part of what the answer holds under."""
    from cudnnload.loading.probe import probe
    from cudnnload.resolve.elfcache import ElfCache
    from tests.test_opened_at_load import _unpacked

    site = _cudnn_85_with_cublas(tmp_path)
    shim = site / "cudnn" / "lib" / "libcudnn.so.8"
    memo = ElfCache(str(tmp_path / "memo.json"))

    before = probe([("shim", shim)], 8, app=True, memo=memo)
    assert before.signal == "SIGABRT" and "libnvrtc.so: cannot open shared object file" in before.verdict, before
    assert probe([("shim", shim)], 8, app=True, memo=memo).remembered  # nothing changed: the answer stands

    nvrtc = _unpacked("nvidia-cuda-nvrtc-cu11-11.8.89", "nvidia/cuda_nvrtc/lib")
    (site / "cublas" / "lib" / "libnvrtc.so").symlink_to(next(nvrtc.glob("libnvrtc.so.11.*")))
    after = probe([("shim", shim)], 8, app=True, memo=memo)
    assert not after.remembered
    version = after.step("cudnnGetVersion")
    assert version is not None and version.value == 8500, after.verdict


def test_a_set_proven_with_cublas_there_is_proven_again_once_its_wheel_is_uninstalled(tmp_path: Path) -> None:
    """`run` remembered a proven set while its plan held under the set's files and the LD_LIBRARY_PATH folders
    only: with nvidia-cublas-cu11 uninstalled since (cuDNN 8.5's ops_infer NEEDs libcublas.so.11 through its
    RUNPATH) the plan was given again, preloaded, and the program could not start (`true`: exit 127, "error while
    loading shared libraries"). Every folder the set's files look for a library in is now part of the plan: the
    proof is made again, and fails in one line naming the library."""
    from tests.test_opened_at_load import _unpacked

    site = _cudnn_85_with_cublas(tmp_path)
    # cuBLASLt 11 dlopens libnvrtc.so as it loads: doctor's fix, a link beside it
    nvrtc = _unpacked("nvidia-cuda-nvrtc-cu11-11.8.89", "nvidia/cuda_nvrtc/lib")
    (site / "cublas" / "lib" / "libnvrtc.so").symlink_to(next(nvrtc.glob("libnvrtc.so.11.*")))
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "cudnnload", "run", "--cudnn", str(site / "cudnn" / "lib"), "--", "true"]
    for _ in range(2):  # proven, then remembered
        ran = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
        assert ran.returncode == 0, ran.stderr
    shutil.rmtree(site / "cublas")  # pip uninstall nvidia-cublas-cu11

    after = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert after.returncode == 2, (after.returncode, after.stderr)
    lines = after.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudnnload: error:") and "libcublas.so.11" in lines[0], lines
