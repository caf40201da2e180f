"""cudnnload.resolve.linker against the real dynamic linker.

Each case runs fixtures/synthetic/probe.c (a dlopen driver) with ``LD_DEBUG=libs``
and reads back the files the process mapped (``/proc/self/maps``) and the files
ld.so tried for each name. The model must pick the file that was mapped and try
the same files in the same order; only candidates in directories that do not
exist may differ, because ld.so stops trying a directory it found missing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from cudnnload.resolve.catalog import V9, Release
from cudnnload.resolve.ldcache import read_ld_cache
from cudnnload.resolve.linker import (
    Attempt,
    Chain,
    LinkerDefaults,
    LinkerEnv,
    Outcome,
    Requester,
    Resolution,
    expand_all,
    probe_linker_defaults,
    resolve,
    resolve_many,
    split_ld_library_path,
)

# What the child must not inherit from the test run (probe_linker_defaults drops the same).
_LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG", "LD_DEBUG_OUTPUT", "LD_AUDIT")
BASE_ENVIRON = {key: value for key, value in os.environ.items() if key not in _LOADER_VARIABLES}

_FIND = re.compile(r"find library=(\S+) \[\d+\]; searching")
_TRY = re.compile(r"trying file=(.*?)\s*$")


@dataclass(frozen=True)
class Run:
    """What the real linker did in one probe process."""

    returncode: int
    lines: tuple[str, ...]  # the probe's report: "open NAME ok", "call SYMBOL 0", ...
    maps: frozenset[str]  # files mapped at exit (kernel paths: symlinks resolved)
    tried: dict[str, tuple[str, ...]]  # name -> files ld.so tried in its first search for it

    def mapped(self, path: str | Path | None) -> bool:
        return path is not None and os.path.realpath(path) in self.maps


def run_probe(exe: Path, *actions: str, ld_library_path: str | None = None, cwd: Path | None = None,
              environ: dict[str, str] | None = None) -> Run:
    env = dict(BASE_ENVIRON, LD_DEBUG="libs", **(environ or {}))
    if ld_library_path is not None:
        env["LD_LIBRARY_PATH"] = ld_library_path
    done = subprocess.run([str(exe), *actions], env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False)
    lines = tuple(done.stdout.splitlines())
    maps = frozenset(line[4:] for line in lines if line.startswith("map "))
    return Run(done.returncode, tuple(line for line in lines if not line.startswith("map ")), maps,
               _searches(done.stderr))


def _searches(trace: str) -> dict[str, tuple[str, ...]]:
    searches: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in trace.splitlines():
        if found := _FIND.search(line):
            current = None if found.group(1) in searches else searches.setdefault(found.group(1), [])
        elif (tried := _TRY.search(line)) and current is not None:
            current.append(tried.group(1))
    return {name: tuple(paths) for name, paths in searches.items()}


def assert_same_search(resolution: Resolution, run: Run) -> None:
    """For every name the model searched, it tried what ld.so tried, in the same order (in folders that exist:
    ld.so stops trying an absolute one it found missing, but a relative one never)."""
    for name in dict.fromkeys(os.path.basename(attempt.path) for attempt in resolution.trail):
        ours = [a.path for a in resolution.trail if os.path.basename(a.path) == name and a.outcome != "dropped"
                and os.path.isdir(os.path.dirname(a.path) or ".")]
        theirs = [path for path in run.tried.get(name, ()) if os.path.isdir(os.path.dirname(path) or ".")]
        assert ours == theirs, f"search for {name}"


@pytest.fixture(scope="session")
def defaults() -> LinkerDefaults:
    probed = probe_linker_defaults(BASE_ENVIRON)
    if not probed.source.startswith("LD_DEBUG"):
        pytest.skip(f"cannot read this machine's ld.so defaults: {probed.source}")
    return probed


LinkerEnvFactory = Callable[..., LinkerEnv]


@pytest.fixture(scope="session")
def linker_env(defaults: LinkerDefaults, synthetic_dir: Path) -> LinkerEnvFactory:
    """``linker_env(ld_library_path, loaded=..., exe=...)``: the model of a probe process."""
    cache = read_ld_cache()

    def make(ld_library_path: str = "", loaded: dict[str, str] | None = None, exe: str = "probe") -> LinkerEnv:
        return LinkerEnv(split_ld_library_path(ld_library_path), cache, defaults, loaded or {},
                         Requester.executable(str(synthetic_dir / exe)))

    return make


def system_has(name: str) -> bool:
    """Whether this machine's ld.so.cache lists ``name`` (a GPU image with an apt cuDNN does)."""
    return any(entry.name == name for entry in read_ld_cache().entries)


def shim_names(key: str) -> tuple[str, ...]:
    """What the 9.28 shim (real and fake) asks dlopen for."""
    return V9.library(key).names_tried(Release(9, 28, 0))


def test_shim_rpath_beats_ld_library_path(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    shim_path, decoy = synthetic_dir / "v9-rpath" / "libcudnn.so.9", synthetic_dir / "decoy"
    run = run_probe(synthetic_dir / "probe", f"open:{shim_path}", "call:cudnnOpsVersionCheck",
                    ld_library_path=str(decoy))
    env = linker_env(str(decoy))

    ops = resolve_many(shim_names("ops"), Chain((Requester.from_file(str(shim_path)),)), env)

    assert (ops.rule, ops.path) == ("rpath", str(synthetic_dir / "v9-rpath" / "libcudnn_ops.so.9"))
    assert ops.via == str(shim_path)
    assert run.mapped(ops.path) and not run.mapped(decoy / "libcudnn_ops.so.9")
    assert_same_search(ops, run)


def test_sublibrary_runpath_loses_to_ld_library_path(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    """ops (DT_RUNPATH $ORIGIN) NEEDS graph: LD_LIBRARY_PATH comes first, so graph is the decoy's."""
    ops_path, decoy = synthetic_dir / "v9-rpath" / "libcudnn_ops.so.9", synthetic_dir / "decoy"
    run = run_probe(synthetic_dir / "probe", f"open:{ops_path}", ld_library_path=str(decoy))

    graph = resolve("libcudnn_graph.so.9", Chain((Requester.from_file(str(ops_path)),)), linker_env(str(decoy)))

    assert (graph.rule, graph.path) == ("ld-library-path", str(decoy / "libcudnn_graph.so.9"))
    assert run.mapped(graph.path)
    assert_same_search(graph, run)


def test_shim_with_runpath_loads_the_ld_library_path_copy(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    shim_path, decoy = synthetic_dir / "v9-runpath" / "libcudnn.so.9", synthetic_dir / "decoy"
    run = run_probe(synthetic_dir / "probe", f"open:{shim_path}", "call:cudnnOpsVersionCheck",
                    ld_library_path=str(decoy))

    ops = resolve_many(shim_names("ops"), Chain((Requester.from_file(str(shim_path)),)), linker_env(str(decoy)))

    assert (ops.rule, ops.path) == ("ld-library-path", str(decoy / "libcudnn_ops.so.9"))
    assert run.mapped(ops.path) and not run.mapped(synthetic_dir / "v9-runpath" / "libcudnn_ops.so.9")
    assert_same_search(ops, run)


def test_missing_sublibrary_is_taken_from_ld_library_path(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    shim_path, decoy = synthetic_dir / "partial" / "libcudnn.so.9", synthetic_dir / "decoy"
    run = run_probe(synthetic_dir / "probe", f"open:{shim_path}", "call:cudnnOpsVersionCheck",
                    ld_library_path=str(decoy))

    ops = resolve_many(shim_names("ops"), Chain((Requester.from_file(str(shim_path)),)), linker_env(str(decoy)))

    assert (ops.rule, ops.path) == ("ld-library-path", str(decoy / "libcudnn_ops.so.9"))
    assert run.mapped(ops.path)
    assert_same_search(ops, run)


def test_already_loaded_soname_wins_over_the_shims_own_copy(
    synthetic_dir: Path, linker_env: LinkerEnvFactory
) -> None:
    shim_path, decoy = synthetic_dir / "v9-rpath" / "libcudnn.so.9", synthetic_dir / "decoy"
    run = run_probe(synthetic_dir / "probe", f"open:{decoy}/libcudnn_ops.so.9", f"open:{shim_path}",
                    "call:cudnnOpsVersionCheck")
    loaded = {"libcudnn_ops.so.9": str(decoy / "libcudnn_ops.so.9"),
              "libcudnn_graph.so.9": str(decoy / "libcudnn_graph.so.9")}

    ops = resolve_many(shim_names("ops"), Chain((Requester.from_file(str(shim_path)),)), linker_env(loaded=loaded))

    assert (ops.name, ops.rule, ops.path) == ("libcudnn_ops.so.9", "already-loaded", loaded["libcudnn_ops.so.9"])
    assert "call cudnnOpsVersionCheck 0" in run.lines
    assert run.mapped(ops.path) and not run.mapped(synthetic_dir / "v9-rpath" / "libcudnn_ops.so.9")
    assert "libcudnn_ops.so.9" not in run.tried  # no search at all for the loaded soname
    assert_same_search(ops, run)  # but the fuller names before it were searched in full


def test_rpath_is_inherited_down_the_needed_chain(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    top_path = synthetic_dir / "chain" / "top" / "libtop.so"
    run = run_probe(synthetic_dir / "probe", f"open:{top_path}")
    env = linker_env()
    top = Requester.from_file(str(top_path))

    mid = resolve("libmid.so", Chain((top,)), env)
    leaf = resolve("libleaf.so", Chain((Requester.from_file(str(mid.path)), top)), env)

    assert (leaf.rule, leaf.via) == ("rpath", str(top_path))
    assert run.mapped(leaf.path)
    assert_same_search(leaf, run)


def test_runpath_is_not_inherited(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    top_path = synthetic_dir / "chain" / "top" / "libtop-runpath.so"
    run = run_probe(synthetic_dir / "probe", f"open:{top_path}")
    env = linker_env()
    top = Requester.from_file(str(top_path))

    mid = resolve("libmid.so", Chain((top,)), env)
    leaf = resolve("libleaf.so", Chain((Requester.from_file(str(mid.path)), top)), env)

    assert (mid.rule, leaf.rule, leaf.path) == ("runpath", "not-found", None)
    assert f"open {top_path} error {leaf.error}" in run.lines
    assert_same_search(leaf, run)


def test_rpath_walk_passes_over_a_loader_with_runpath(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    """libtop-over-runpath (RPATH) -> libmid-runpath (RUNPATH) -> libinner (none) -> libleaf: glibc
    skips the RUNPATH object's (absent) DT_RPATH and keeps walking up to libtop's."""
    top_path = synthetic_dir / "chain" / "top" / "libtop-over-runpath.so"
    run = run_probe(synthetic_dir / "probe", f"open:{top_path}")
    env = linker_env()
    top = Requester.from_file(str(top_path))
    mid = Requester.from_file(str(resolve("libmid-runpath.so", Chain((top,)), env).path))
    inner = Requester.from_file(str(resolve("libinner.so", Chain((mid, top)), env).path))

    leaf = resolve("libleaf.so", Chain((inner, mid, top)), env)

    assert (leaf.rule, leaf.via) == ("rpath", str(top_path))
    assert run.mapped(leaf.path)
    assert_same_search(leaf, run)


def test_executable_rpath_serves_a_requester_without_runpath(
    synthetic_dir: Path, linker_env: LinkerEnvFactory
) -> None:
    """probe-rpath has DT_RPATH $ORIGIN/chain/lib; libmid (no paths) needs libleaf, which only that finds."""
    top_path = synthetic_dir / "chain" / "top" / "libtop-runpath.so"
    run = run_probe(synthetic_dir / "probe-rpath", f"open:{top_path}")
    env = linker_env(exe="probe-rpath")
    top = Requester.from_file(str(top_path))
    mid = Requester.from_file(str(resolve("libmid.so", Chain((top,)), env).path))

    leaf = resolve("libleaf.so", Chain((mid, top)), env)

    assert (leaf.rule, leaf.via) == ("rpath", str(synthetic_dir / "probe-rpath"))
    assert run.mapped(leaf.path)
    assert_same_search(leaf, run)


@pytest.mark.parametrize(("shim_kind", "rule"), [("v9-rpath", "rpath"), ("v9-runpath", "not-found")])
def test_executable_rpath_counts_only_for_a_requester_without_runpath(
    shim_kind: str, rule: str, synthetic_dir: Path, tmp_path: Path, linker_env: LinkerEnvFactory
) -> None:
    """A shim folder without ops, run by an executable whose DT_RPATH holds ops: the DT_RPATH
    shim reaches it through the executable, the DT_RUNPATH shim does not."""
    app, shim_dir = tmp_path / "app", tmp_path / "shim"
    (app / "chain" / "lib").mkdir(parents=True)
    shim_dir.mkdir()
    shutil.copy(synthetic_dir / "probe-rpath", app)
    for name in ("libcudnn_ops.so.9", "libcudnn_graph.so.9"):
        shutil.copy(synthetic_dir / "decoy" / name, app / "chain" / "lib")
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
        shutil.copy(synthetic_dir / shim_kind / name, shim_dir)
    run = run_probe(app / "probe-rpath", f"open:{shim_dir}/libcudnn.so.9", "call:cudnnOpsVersionCheck")
    env = replace(linker_env(), executable=Requester.executable(str(app / "probe-rpath")))

    ops = resolve_many(shim_names("ops"), Chain((Requester.from_file(f"{shim_dir}/libcudnn.so.9"),)), env)

    assert ops.rule == ("ld-cache" if rule == "not-found" and system_has("libcudnn_ops.so.9") else rule)
    assert f"call cudnnOpsVersionCheck {0 if ops.found else 3009}" in run.lines
    assert_same_search(ops, run)


def test_origin_of_a_symlinked_shim_is_the_link_folder(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    farm_shim = synthetic_dir / "farm" / "libcudnn.so.9"
    run = run_probe(synthetic_dir / "probe", f"open:{farm_shim}", "call:cudnnOpsVersionCheck")

    ops = resolve_many(shim_names("ops"), Chain((Requester.from_file(str(farm_shim)),)), linker_env())

    assert any(a.path == str(synthetic_dir / "farm" / "libcudnn_ops.so.9") for a in ops.trail)
    if not system_has("libcudnn_ops.so.9"):  # else the system's copy is found, as the real linker agrees
        assert (ops.rule, ops.path) == ("not-found", None)
        assert "call cudnnOpsVersionCheck 3009" in run.lines
    assert_same_search(ops, run)


def test_origin_of_a_symlinked_executable_is_the_real_folder(
    synthetic_dir: Path, tmp_path: Path, linker_env: LinkerEnvFactory, defaults: LinkerDefaults
) -> None:
    link = tmp_path / "probe-rpath"
    link.symlink_to(synthetic_dir / "probe-rpath")
    run = run_probe(link, "open:libmid.so")
    env = replace(linker_env(), executable=Requester.executable(str(link)))

    mid = resolve("libmid.so", None, env)

    assert (mid.rule, mid.path) == ("rpath", str(synthetic_dir / "chain" / "lib" / "libmid.so"))
    assert run.mapped(mid.path)
    assert_same_search(mid, run)


BY = {"wrong-class": "skip-other-class", "wrong-machine": "skip-other-machine", "broken-symlink": "open-enoent"}


@pytest.mark.parametrize("case", ["wrong-class", "wrong-machine", "broken-symlink"])
def test_unusable_candidate_is_skipped(case: Outcome, synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    bad, decoy = synthetic_dir / "bad" / case, synthetic_dir / "decoy"
    if not os.path.lexists(bad / "libcudnn_ops.so.9"):
        pytest.skip(f"no {case} fixture (gcc -m32 cannot link here)")
    llp = f"{bad}:{decoy}"
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=llp)

    ops = resolve("libcudnn_ops.so.9", None, linker_env(llp))

    assert (ops.rule, ops.path) == ("ld-library-path", str(decoy / "libcudnn_ops.so.9"))
    assert Attempt(str(bad / "libcudnn_ops.so.9"), "ld-library-path", case, BY[case]) in ops.trail
    assert run.mapped(ops.path)
    assert_same_search(ops, run)


def test_only_a_wrong_class_candidate_gives_glibcs_error(synthetic_dir: Path, linker_env: LinkerEnvFactory) -> None:
    bad = synthetic_dir / "bad" / "wrong-class"
    if not (bad / "libcudnn_ops.so.9").exists():
        pytest.skip("no ELFCLASS32 fixture (gcc -m32 cannot link here)")
    if system_has("libcudnn_ops.so.9"):
        pytest.skip("a system cuDNN in ld.so.cache answers after the wrong-class file is skipped")
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=str(bad))

    ops = resolve("libcudnn_ops.so.9", None, linker_env(str(bad)))

    assert ops.error == "libcudnn_ops.so.9: wrong ELF class: ELFCLASS32"
    assert f"open libcudnn_ops.so.9 error {ops.error}" in run.lines


@pytest.mark.parametrize(("case", "reason"), [
    ("not-elf", "invalid ELF header"), ("empty", "file too short"), ("truncated", "cannot read file data"),
])
def test_damaged_candidate_ends_the_lookup(
    case: str, reason: str, synthetic_dir: Path, linker_env: LinkerEnvFactory
) -> None:
    bad, decoy = synthetic_dir / "bad" / case / "libcudnn_ops.so.9", synthetic_dir / "decoy"
    llp = f"{bad.parent}:{decoy}"
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=llp)

    ops = resolve("libcudnn_ops.so.9", None, linker_env(llp))

    assert (ops.path, ops.found) == (str(bad), False)
    assert ops.error is not None and ops.error.startswith(f"{bad}: {reason}")
    assert f"open libcudnn_ops.so.9 error {bad}: {reason}" in run.lines
    assert not run.mapped(decoy / "libcudnn_ops.so.9")


def test_cut_segments_are_fatal_and_crash_the_real_process(
    synthetic_dir: Path, linker_env: LinkerEnvFactory
) -> None:
    bad = synthetic_dir / "bad" / "truncated-segments"
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=str(bad))

    ops = resolve("libcudnn_ops.so.9", None, linker_env(str(bad)))

    assert ops.path == str(bad / "libcudnn_ops.so.9") and ops.trail[-1].outcome == "cut-segments"
    assert ops.error is not None and "SIGBUS" in ops.error
    assert run.returncode == -signal.SIGBUS


def test_symlink_loop_abandons_the_rest_of_its_search_list(
    synthetic_dir: Path, linker_env: LinkerEnvFactory
) -> None:
    loop, decoy = synthetic_dir / "bad" / "symlink-loop", synthetic_dir / "decoy"
    llp = f"{loop}:{decoy}"
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=llp)

    ops = resolve("libcudnn_ops.so.9", None, linker_env(llp))

    if not system_has("libcudnn_ops.so.9"):
        assert (ops.rule, ops.path) == ("not-found", None)
    assert not any(a.path.startswith(str(decoy)) for a in ops.trail)
    assert not run.mapped(decoy / "libcudnn_ops.so.9")
    assert_same_search(ops, run)


def test_nodeflib_refuses_default_dirs_but_not_other_cache_entries(
    synthetic_dir: Path, linker_env: LinkerEnvFactory, defaults: LinkerDefaults
) -> None:
    env = linker_env()
    in_default = [e for e in env.ld_cache.entries if e.name == "libz.so.1"]
    elsewhere = [e for e in env.ld_cache.entries if e.flags == 0x0303 and not e.hwcap
                 and not any(e.path.startswith(d + "/") for d in defaults.default_dirs)]
    names = [entry.name for entry in (in_default + elsewhere)[:1] + elsewhere[:1]]
    opener_path = synthetic_dir / "nodeflib" / "libopener.so"
    run = run_probe(synthetic_dir / "probe", f"open:{opener_path}", "call:open_from_env",
                    environ={"CUDNNLOAD_OPEN": ":".join(names)})
    opener = Requester.from_file(str(opener_path))

    for name in names:
        result = resolve(name, Chain((opener,)), env)
        cached = next(e for e in env.ld_cache.entries if e.name == name)
        if cached in in_default:
            assert (result.rule, result.trail[-1].outcome) == ("not-found", "nodeflib")
            assert any(line.startswith(f"opener {name} error") for line in run.lines)
        else:
            assert (result.rule, result.path) == ("ld-cache", cached.path)
            assert f"opener {name} ok" in run.lines and run.mapped(cached.path)
        assert_same_search(result, run)
    if not elsewhere:
        pytest.skip("ld.so.cache has no entry outside the default dirs; only the refusal was checked")


def test_dst_tokens_in_a_dlopen_path_expand_like_glibc(
    synthetic_dir: Path, tmp_path: Path, linker_env: LinkerEnvFactory, defaults: LinkerDefaults
) -> None:
    if defaults.platform is None:
        pytest.skip("this ld.so has no $PLATFORM")
    folder = tmp_path / defaults.lib / defaults.platform
    folder.mkdir(parents=True)
    shutil.copy(synthetic_dir / "chain" / "lib" / "libleaf.so", folder)
    names = (f"{tmp_path}/$LIB/${{PLATFORM}}/libleaf.so", "$ORIGIN/chain/lib/libmid.so")
    run = run_probe(synthetic_dir / "probe", *(f"open:{name}" for name in names))
    env = linker_env()

    leaf, mid = (resolve(name, None, env) for name in names)

    assert (leaf.rule, leaf.path) == ("direct-path", str(folder / "libleaf.so"))
    assert (mid.rule, mid.path) == ("direct-path", str(synthetic_dir / "chain" / "lib" / "libmid.so"))
    assert run.mapped(leaf.path) and run.mapped(mid.path)


def test_ld_library_path_splits_on_semicolons_and_expands_origin(
    synthetic_dir: Path, tmp_path: Path, linker_env: LinkerEnvFactory
) -> None:
    literal = tmp_path / "$ORIGINx"  # not a token: followed by an identifier character
    literal.mkdir()
    llp = f"{literal};${{ORIGIN}}/decoy"
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=llp)

    ops = resolve("libcudnn_ops.so.9", None, linker_env(llp))

    assert (ops.rule, ops.path) == ("ld-library-path", str(synthetic_dir / "decoy" / "libcudnn_ops.so.9"))
    assert ops.dirs == (str(literal), str(synthetic_dir / "decoy"))
    assert run.mapped(ops.path)
    assert_same_search(ops, run)


def test_glibc_hwcaps_subdirectory_beats_its_parent_folder(
    synthetic_dir: Path, tmp_path: Path, linker_env: LinkerEnvFactory, defaults: LinkerDefaults
) -> None:
    if not defaults.glibc_hwcaps:
        pytest.skip("this ld.so searches no glibc-hwcaps subdirectories")
    subdir = tmp_path / "glibc-hwcaps" / defaults.glibc_hwcaps[-1]
    subdir.mkdir(parents=True)
    for name in ("libcudnn_ops.so.9", "libcudnn_graph.so.9"):
        shutil.copy(synthetic_dir / "decoy" / name, tmp_path)
    shutil.copy(synthetic_dir / "v9-rpath" / "libcudnn_ops.so.9", subdir)
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=str(tmp_path))

    ops = resolve("libcudnn_ops.so.9", None, linker_env(str(tmp_path)))

    assert (ops.rule, ops.path) == ("ld-library-path", str(subdir / "libcudnn_ops.so.9"))
    assert run.mapped(ops.path)
    assert_same_search(ops, run)


def test_empty_ld_library_path_entry_searches_the_current_directory(
    synthetic_dir: Path, linker_env: LinkerEnvFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = synthetic_dir / "decoy"
    monkeypatch.chdir(decoy)
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path="/nonexistent:", cwd=decoy)

    ops = resolve("libcudnn_ops.so.9", None, linker_env("/nonexistent:"))

    assert (ops.rule, ops.path) == ("ld-library-path", "libcudnn_ops.so.9")
    assert run.mapped(ops.path)
    assert_same_search(ops, run)


def test_real_wheel_shim_keeps_its_sublibraries_despite_a_decoy(
    synthetic_dir: Path, wheel_lib: Callable[[str], Path], linker_env: LinkerEnvFactory
) -> None:
    """9.28 shim: DT_RPATH $ORIGIN. cudnnGetVersion makes it dlopen graph, the ops check ops."""
    lib, decoy = wheel_lib("cu12-9.28.0.42"), synthetic_dir / "decoy"
    run = run_probe(synthetic_dir / "probe", f"open:{lib}/libcudnn.so.9", "call:cudnnGetVersion",
                    "call:cudnnOpsVersionCheck", ld_library_path=str(decoy))
    shim = Chain((Requester.from_file(f"{lib}/libcudnn.so.9"),))
    env = linker_env(str(decoy))

    assert run.lines[1:3] == ("call cudnnGetVersion 92800", "call cudnnOpsVersionCheck 0")
    for key in ("graph", "ops"):
        found = resolve_many(shim_names(key), shim, env)
        assert (found.rule, found.path) == ("rpath", f"{lib}/libcudnn_{key}.so.9")
        assert run.mapped(found.path) and not run.mapped(decoy / f"libcudnn_{key}.so.9")
        assert_same_search(found, run)


def test_probed_defaults_agree_with_ld_so_help(defaults: LinkerDefaults) -> None:
    """``ld.so --help`` (glibc >= 2.33) lists the system search path and the glibc-hwcaps
    subdirectories; the LD_DEBUG probe must have found the same."""
    with open("/proc/self/maps") as maps:
        interpreter = next(line.split()[-1] for line in maps if "/ld-linux" in line)
    helped = subprocess.run([interpreter, "--help"], capture_output=True, text=True, check=False).stdout
    if "(system search path)" not in helped:
        pytest.skip(f"{interpreter} --help lists no search path (glibc < 2.33)")
    listed = re.findall(r"^  (/\S+) \(system search path\)$", helped, re.MULTILINE)
    hwcaps = re.findall(r"^  (\S+) \(supported, searched\)$", helped.split("Legacy HWCAP")[0], re.MULTILINE)

    assert defaults.default_dirs == tuple(listed)
    assert defaults.glibc_hwcaps == tuple(hwcaps)


def test_probe_falls_back_to_upstream_defaults_and_says_why() -> None:
    fallback = probe_linker_defaults(BASE_ENVIRON, program="/nonexistent/sh")

    assert fallback.default_dirs == ("/lib64", "/usr/lib64")
    assert fallback.source.startswith("upstream glibc defaults; probe failed")


def test_resolve_many_reports_every_name_when_none_loads(tmp_path: Path) -> None:
    env = LinkerEnv(ld_library_path=(str(tmp_path),), defaults=LinkerDefaults(default_dirs=()))

    result = resolve_many(shim_names("ops"), None, env)

    assert (result.name, result.rule, result.found) == ("libcudnn_ops.so", "not-found", False)
    assert [a.path for a in result.trail] == [str(tmp_path / name) for name in shim_names("ops")]


def test_search_list_drops_elements_whose_token_has_no_value() -> None:
    owner = Requester("/opt/app/lib/libx.so")
    no_platform = LinkerDefaults(platform=None)

    dirs = expand_all(("$PLATFORM/x", "$ORIGIN/", "${ORIGIN}", "/a/$FOO", "$ORIGINAL"), owner, no_platform)

    assert dirs == ("/opt/app/lib", "/a/$FOO", "$ORIGINAL")


def test_ld_library_path_split_keeps_empty_elements() -> None:
    assert split_ld_library_path("/a::/b;/c") == ("/a", "", "/b", "/c")
    assert split_ld_library_path("") == ()



def test_a_library_on_a_noexec_mount_fails_to_map_and_ends_the_search(
        synthetic_dir: Path, linker_env: LinkerEnvFactory, noexec_dir: Path) -> None:
    """glibc's rule fatal-noexec-mount: a library on a file system mounted noexec passes open_verify, the kernel
    refuses to map its code, and the dlopen fails there, by name (the folder after it on LD_LIBRARY_PATH, which
    holds a good copy, is never tried) and by path, in glibc's words."""
    shutil.copytree(synthetic_dir / "v9-rpath", noexec_dir / "lib")
    shim, good = noexec_dir / "lib" / "libcudnn.so.9", synthetic_dir / "v9-rpath"
    search = f"{noexec_dir / 'lib'}:{good}"
    run = run_probe(synthetic_dir / "probe", "open:libcudnn.so.9", f"open:{shim}", ld_library_path=search)
    by_name, by_path = resolve("libcudnn.so.9", None, linker_env(search)), resolve(str(shim), None, linker_env())

    assert [line.split(" error ")[0] for line in run.lines] == ["open libcudnn.so.9", f"open {shim}"], run.lines
    for resolution, line in zip((by_name, by_path), run.lines, strict=True):
        assert (resolution.path, resolution.outcome, resolution.by) == (str(shim), "noexec", "fatal-noexec-mount")
        assert "failed to map segment from shared object" in line and resolution.error is not None
        assert resolution.error in line, (resolution.error, line)
    assert not run.mapped(good / "libcudnn.so.9")
    assert_same_search(by_name, run)
