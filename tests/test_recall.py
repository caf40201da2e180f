"""`which` gives its kept answer again only while everything it was made of is as it was (cudnnload/recall.py).

Each case: a layout of the synthetic cuDNN 9 libraries on LD_LIBRARY_PATH; `cudnnload which --json` run from
the command line until its answer is kept, then given again (the judge not even imported); then one thing the
answer depends on changes, and the answer must be what a fresh run, with a cache of its own, prints."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.wheels import python_path

REPO = Path(__file__).resolve().parent.parent


def _which(env: dict[str, str], cwd: Path, cache: Path, *args: str) -> tuple[str, bool]:
    """(what `which --json` printed and its exit code, whether it was the kept answer)."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "cudnnload", "which", "--json", *args],
                         env={**env, "CUDNNLOAD_CACHE": str(cache)}, cwd=cwd, capture_output=True, text=True,
                         timeout=120)
    judged = "cudnnload.judge" in run.stderr
    assert run.returncode in (0, 1), run.stderr[-2000:]
    return f"{run.returncode}\n{run.stdout}", not judged


def _remove(lib: Path, layout: Path, env: dict[str, str]) -> None:
    (lib / "libcudnn_ops.so.9").unlink()


def _overwrite(lib: Path, layout: Path, env: dict[str, str]) -> None:
    shutil.copyfile(layout / "decoy" / "libcudnn_ops.so.9", lib / "libcudnn_ops.so.9")  # in place: same inode


def _swap_link(lib: Path, layout: Path, env: dict[str, str]) -> None:
    (lib / "libcudnn_graph.so.9").unlink()
    (lib / "libcudnn_graph.so.9").symlink_to(layout / "decoy" / "libcudnn_graph.so.9")


def _retarget_folder(lib: Path, layout: Path, env: dict[str, str]) -> None:
    os.replace(lib, layout / "moved")
    shutil.copytree(layout / "moved", lib, symlinks=True)
    (lib / "libcudnn_ops.so.9").unlink()


def _variable(lib: Path, layout: Path, env: dict[str, str]) -> None:
    env["LD_LIBRARY_PATH"] = f"{layout / 'decoy'}:{lib}"


def _unset(lib: Path, layout: Path, env: dict[str, str]) -> None:
    env.pop("LD_LIBRARY_PATH")


def _writable_folder(lib: Path, layout: Path, env: dict[str, str]) -> None:
    lib.chmod(0o777)  # others may plant a library where the shim's search looks


def _added(lib: Path, layout: Path, env: dict[str, str]) -> None:
    shutil.copyfile(layout / "decoy" / "libcudnn_ops.so.9", lib / "libcudnn_cnn.so.9")


def _in_the_current_folder(lib: Path, layout: Path, env: dict[str, str]) -> None:
    env["LD_LIBRARY_PATH"] = f":{lib}"  # an empty entry: the current folder, which now holds a shim
    for name in os.listdir(layout / "decoy"):
        shutil.copyfile(layout / "decoy" / name, layout / "work" / name)


CHANGES: dict[str, Callable[[Path, Path, dict[str, str]], None]] = {
    "a sub-library removed": _remove, "a sub-library overwritten in place": _overwrite,
    "a link retargeted": _swap_link, "a folder swapped under the same name": _retarget_folder,
    "a folder put first on LD_LIBRARY_PATH": _variable, "LD_LIBRARY_PATH unset": _unset,
    "a search folder made writable by all": _writable_folder, "a library added": _added,
    "an empty entry finds a shim in the current folder": _in_the_current_folder,
}


@pytest.fixture(scope="module")
def layouts(synthetic_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One layout per change, made together: a kept answer needs its files older than two seconds."""
    made = {}
    for name in CHANGES:
        root = tmp_path_factory.mktemp("recall")
        shutil.copytree(synthetic_dir / "v9-rpath", root / "lib", symlinks=True)
        shutil.copytree(synthetic_dir / "decoy", root / "decoy", symlinks=True)
        (root / "work").mkdir()
        made[name] = root
    time.sleep(2.1)
    return made


@pytest.mark.slow
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_kept_answer_is_given_again_until_what_it_saw_changes(change: str, layouts: dict[str, Path]) -> None:
    root = layouts[change]
    lib, cache, fresh = root / "lib", root / "cache", root / "fresh"
    env = {**os.environ, "PYTHONPATH": python_path(REPO), "LD_LIBRARY_PATH": str(lib)}
    env.pop("CUDNNLOAD_NO_CACHE", None)
    _which(env, root / "work", cache)  # the ELF memo and the linker's defaults learned (a child process: not kept)
    first, recalled = _which(env, root / "work", cache)
    again, recalled_again = _which(env, root / "work", cache)
    assert (again, recalled_again) == (first, True)

    CHANGES[change](lib, root, env)
    after, recalled_after = _which(env, root / "work", cache)
    assert not recalled_after
    expected, _ = _which(env, root / "work", fresh)
    assert after == expected and after != first


@pytest.mark.slow
def test_nothing_is_kept_while_a_file_it_saw_is_newer_than_two_seconds(synthetic_dir: Path, tmp_path: Path) -> None:
    """A change in the same tick of the file system's clock would not show in a file's times: an answer made
    of a file changed in the last two seconds is not kept."""
    env = {**os.environ, "PYTHONPATH": python_path(REPO), "LD_LIBRARY_PATH": str(tmp_path / "lib")}
    env.pop("CUDNNLOAD_NO_CACHE", None)
    copied = time.time()
    shutil.copytree(synthetic_dir / "v9-rpath", tmp_path / "lib", symlinks=True)
    cache = tmp_path / "cache"
    for _ in range(2):
        _, recalled = _which(env, tmp_path, cache)
        assert not recalled
    kept = cache / "answers-v1"
    if time.time() - copied < 2.0:  # (a slower machine may have reached the third second)
        assert not kept.exists() or not any(kept.iterdir())


def test_a_kept_answer_that_is_not_the_users_is_not_read(tmp_path: Path) -> None:
    """The answers folder has the cache's rules: a file others can write is ignored, with one line."""
    from cudnnload.recall import recall

    folder = tmp_path / "cache" / "answers-v1"
    folder.mkdir(parents=True)
    key = ["which", "planted"]
    import zlib

    name = f"{zlib.crc32(chr(0).join(key).encode()):08x}.json"
    (folder / name).write_text('{"format": 1, "key": ["which", "planted"], "code": 0, "text": "planted", '
                               '"colour": false, "seen": []}')
    (folder / name).chmod(0o666)
    assert recall(key, {"CUDNNLOAD_CACHE": str(tmp_path / "cache")}) is None
    (folder / name).unlink(missing_ok=True)
    (folder / name).write_text('{"format": 1, "key": ["which", "planted"], "code": 0, "text": "mine", '
                               '"colour": false, "seen": [["stat", "/", [0, 0, 0, 0, 0, 0, 0, 0]]]}')
    (folder / name).chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert recall(key, {"CUDNNLOAD_CACHE": str(tmp_path / "cache")}) is None  # "/" is not what it says
