"""Search-path policy (cudnnload.resolve.policy), each rule checked against the real dynamic linker.

The linker cases run fixtures/synthetic/probe.c with ``LD_DEBUG=libs`` (tests.test_linker.run_probe) and
read which files ld.so tried and mapped. The secure-execution cases need a set-user-ID program run by
another user: as root, with ``setpriv`` from util-linux, on a file system mounted without ``nosuid``;
elsewhere they skip, and the findings' logic is still checked (a non-root owner may set the bit on a
file of its own, which is all the findings look at). ld.so writes no LD_DEBUG trace in secure mode
(measured on glibc 2.36), so there the exit status and ld.so's own error line are the evidence.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cudnnload.diagnose.inventory import find, inspect
from cudnnload.diagnose.targets import resolve_target
from cudnnload.diagnose.which import which
from cudnnload.judge.choose import choose_install
from cudnnload.judge.policy import (
    FOREIGN_OWNER,
    ORIGIN_IN_SETUID,
    RELATIVE_SEARCH_PATH,
    WRITABLE_LIBRARY,
    WRITABLE_SEARCH_PATH,
    file_findings,
    lent_loads,
    relative_loads,
    search_path_findings,
    setuid_findings,
)
from cudnnload.resolve.access import Access
from cudnnload.resolve.discovery import Step
from cudnnload.resolve.ldcache import read_ld_cache
from cudnnload.resolve.linker import (
    Chain,
    LinkerDefaults,
    LinkerEnv,
    Requester,
    probe_linker_defaults,
    resolve,
    split_ld_library_path,
)
from cudnnload.verdicts import ERROR, WARNING, Finding
from tests.test_linker import BASE_ENVIRON, run_probe
from tests.wheels import lib_folder, python_path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "fixtures" / "synthetic"
NOBODY = 65534
# Debian's compiled-in trusted folders (glibc's system_dirs), so the rules read the same on any machine.
DEBIAN = LinkerDefaults(default_dirs=("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"))


@pytest.fixture(scope="module")
def defaults() -> LinkerDefaults:
    probed = probe_linker_defaults(BASE_ENVIRON)
    if not probed.source.startswith("LD_DEBUG"):
        pytest.skip(f"cannot read this machine's ld.so defaults: {probed.source}")
    return probed


def env_for(ld_library_path: str, defaults: LinkerDefaults = DEBIAN) -> LinkerEnv:
    return LinkerEnv(split_ld_library_path(ld_library_path), read_ld_cache(), defaults)


def codes(findings: tuple[Finding, ...] | list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def gcc(*args: str) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the test programs")
    subprocess.run(["gcc", "-O1", *args], check=True, capture_output=True)


def copy_decoy(synthetic_dir: Path, into: Path) -> Path:
    """decoy's ops and the graph it NEEDs (cuDNN 9.0.0 fakes) in ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for name in ("libcudnn_ops.so.9", "libcudnn_graph.so.9"):
        shutil.copy(synthetic_dir / "decoy" / name, into)
    return into


# --- empty and relative entries ----------------------------------------------------------

def test_an_empty_ld_library_path_entry_is_the_current_directory(synthetic_dir: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    here = copy_decoy(synthetic_dir, tmp_path / "here")
    monkeypatch.chdir(here)
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path="/nonexistent:", cwd=here)

    found = search_path_findings(env_for("/nonexistent:"), access=Access(cwd=str(here)))
    ops = resolve("libcudnn_ops.so.9", None, env_for("/nonexistent:"))

    assert run.tried["libcudnn_ops.so.9"][-1] == "libcudnn_ops.so.9"  # ld.so tries the bare name: the cwd
    assert run.mapped(here / "libcudnn_ops.so.9")
    [relative] = codes(found, RELATIVE_SEARCH_PATH)
    assert relative.severity == WARNING and "empty entry" in relative.message and str(here) in relative.message
    assert relative.fix.json()["actions"] == [{"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": ""}]
    lent = lent_loads("/x", [ops_step(ops.path)], cwd=str(here))
    assert (ops.path, relative_loads("/x", lent)) == ("libcudnn_ops.so.9", ("libcudnn_ops.so.9",))
    assert lent_loads(str(here), [ops_step(ops.path)], cwd=str(here)) == ()  # its own file, found from its folder


def ops_step(path: str | None) -> Step:
    """A planned load of ops at ``path``, as discovery plans it."""
    return Step("ops", "/x/libcudnn.so.9", ("libcudnn_ops.so.9",), path, "ld-library-path", False, None)


def system_cudnn(soname: str) -> bool:
    """Whether ld.so.cache lists ``soname`` (the GPU machine's apt cuDNN): the real linker then finds that one
    where the fake is not allowed."""
    listed = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    return any(line.strip().startswith(soname + " ") for line in listed.splitlines())


def test_a_relative_ld_library_path_entry_is_searched_from_the_current_directory(
    synthetic_dir: Path, tmp_path: Path
) -> None:
    copy_decoy(synthetic_dir, tmp_path / "rel")
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path="rel", cwd=tmp_path)
    elsewhere = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path="rel",
                          cwd=synthetic_dir)

    [relative] = codes(search_path_findings(env_for("rel"), access=Access(cwd=str(tmp_path))), RELATIVE_SEARCH_PATH)

    assert "rel/libcudnn_ops.so.9" in run.tried["libcudnn_ops.so.9"]
    assert run.mapped(tmp_path / "rel" / "libcudnn_ops.so.9")
    # another folder, another answer (nothing, or a system cuDNN's file where the machine has one)
    assert not elsewhere.mapped(tmp_path / "rel" / "libcudnn_ops.so.9")
    assert "'rel'" in relative.message and str(tmp_path / "rel") in relative.message
    assert relative.fix.json()["actions"] == [{"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": "rel"}]
    assert str(tmp_path / "rel") in (relative.fix.text or "")  # what to write instead, if it was meant


def test_a_relative_runpath_entry_is_searched_from_the_current_directory(
    synthetic_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library with DT_RUNPATH 'rel' (no $ORIGIN) dlopens from the program's current directory."""
    opener = tmp_path / "opener" / "libopener.so"
    opener.parent.mkdir()
    gcc("-shared", "-fPIC", "-o", str(opener), str(SOURCES / "opener.c"), "-Wl,--enable-new-dtags,-rpath,rel")
    copy_decoy(synthetic_dir, tmp_path / "rel")
    run = run_probe(synthetic_dir / "probe", f"open:{opener}", "call:open_from_env", cwd=tmp_path,
                    environ={"CUDNNLOAD_OPEN": "libcudnn_ops.so.9"})
    req = Requester.from_file(str(opener))
    monkeypatch.chdir(tmp_path)

    ops = resolve("libcudnn_ops.so.9", Chain((req,)), env_for(""))
    found = search_path_findings(env_for(""), req, access=Access(cwd=str(tmp_path)))
    [relative] = codes(found, RELATIVE_SEARCH_PATH)

    assert "opener libcudnn_ops.so.9 ok" in run.lines and run.mapped(tmp_path / "rel" / "libcudnn_ops.so.9")
    assert (ops.rule, ops.path) == ("runpath", "rel/libcudnn_ops.so.9")
    assert relative.path == str(opener) and f"the DT_RUNPATH of {opener}" in relative.message


@pytest.fixture
def relative_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder 'lib' in the current directory: the 9.28 wheel's library folder (a symlink)."""
    (tmp_path / "lib").symlink_to(lib_folder("cu12-9.28.0.42"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.wheels
def test_load_passes_over_an_install_a_relative_entry_found_even_when_told_it_was_given(relative_wheel: Path) -> None:
    """Its files are whatever the folder the program runs in holds (issue 29): not loadable, whatever the
    caller says; a caller who names the folder gives its absolute path (`load("lib")`, below)."""
    inventory = find(environ={**BASE_ENVIRON, "LD_LIBRARY_PATH": "lib"}, site_paths=[], system=False)
    [install] = [i for i in inventory.installs if i.folder == "lib"]

    chosen, rejected = choose_install([install])
    given, _ = choose_install([install], given=True)

    assert chosen is None and given is None
    assert rejected[0].startswith("lib: untrusted-library: ") and \
        f"is reached through the current folder ({relative_wheel})" in rejected[0]
    assert [f.path for f in codes(install.findings, RELATIVE_SEARCH_PATH)] == ["lib"]  # said of the install once
    assert any("'lib'" in f.message for f in codes(inventory.findings, RELATIVE_SEARCH_PATH))  # and of the variable


@pytest.mark.wheels
def test_an_install_that_would_take_files_through_a_relative_entry_is_refused_even_when_given(
    relative_wheel: Path
) -> None:
    """The cu13 wheel's graph dlopens heuristic and the engines through its DT_RUNPATH, after LD_LIBRARY_PATH:
    'lib' (the cu12 wheel) lends them, and those files are not the given folder's own."""
    [install] = inspect([str(lib_folder("cu13-9.28.0.42"))], environ={**BASE_ENVIRON, "LD_LIBRARY_PATH": "lib"},
                        use_cache=False).installs

    lent = [step.library for step in install.plan if step.path and step.path.startswith("lib/")]
    [finding] = codes(install.findings, RELATIVE_SEARCH_PATH)

    assert "heuristic" in lent
    assert finding.message.startswith(f"libcudnn_graph.so.9 would load {', '.join(lent)} from lib through an "
                                      "empty or relative LD_LIBRARY_PATH entry")
    assert choose_install([install], given=True)[0] is None


_LOAD = """
import glob, json, os, sys
import cudnnload.loading.loader as L
import elftools.elf.enums  # imported before this venv's site-packages leave sys.path, below
import packaging.markers, packaging.requirements, packaging.specifiers, packaging.utils, packaging.version
# a pip cuDNN in this venv would be a third candidate: leave it out
sys.path[:] = [p for p in sys.path if not glob.glob(os.path.join(p or ".", "nvidia_cudnn*.dist-info"))]
got = L.load(*sys.argv[1:])
print(json.dumps({"folder": got.folder, "release": str(got.release),
                  "passed": [f.message for f in got.findings if f.code == "relative-search-path"]}))
"""


def _load_child(cwd: Path, env: dict[str, str], *args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_LOAD), *args], capture_output=True, text=True,
                          cwd=cwd, env={**env, "PYTHONPATH": python_path(ROOT)}, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.wheels
def test_load_never_takes_a_cudnn_from_a_relative_ld_library_path_entry_and_says_why(relative_wheel: Path) -> None:
    """'lib' (the 9.28 wheel) on LD_LIBRARY_PATH is newer than the 8.9.7 wheel in CUDNN_PATH: load() takes
    8.9.7 (or another absolute install this machine has) and says why it passed 'lib' over; given
    explicitly, 'lib' loads. No other cuDNN 9 would do as the absolute one: a DT_RUNPATH load of its own
    (graph's dlopen of heuristic, the 9.0 shim's of every sub-library) searches LD_LIBRARY_PATH first, so
    'lib' would lend it files, and load() refuses that install too."""
    env = {key: value for key, value in BASE_ENVIRON.items()
           if key not in ("CUDA_HOME", "CUDA_PATH", "CUDNN_HOME", "CONDA_PREFIX")}
    env.update(LD_LIBRARY_PATH="lib", CUDNN_PATH=str(lib_folder("cu12-8.9.7.29").parent),
               CUDNNLOAD_CACHE=str(relative_wheel / "cache"))

    default = _load_child(relative_wheel, env)
    explicit = _load_child(relative_wheel, env, "lib")

    assert default["folder"] != "lib" and os.path.isabs(str(default["folder"]))
    assert any("passed over lib" in str(message) for message in default["passed"])  # type: ignore[attr-defined]
    assert (explicit["folder"], explicit["release"]) == (str(relative_wheel / "lib"), "9.28.0")


def test_which_reports_an_empty_ld_library_path_entry() -> None:
    found = which(environ={**BASE_ENVIRON, "LD_LIBRARY_PATH": "/nonexistent::"}, site_paths=[], use_cache=False)
    [relative] = codes(found.findings, RELATIVE_SEARCH_PATH)  # two empty entries, one current directory
    assert relative.message.startswith("LD_LIBRARY_PATH has an empty entry (a leading, trailing or doubled ':')")


# --- folders and files others can write --------------------------------------------------

def test_world_writable_search_folders_are_found_sticky_or_not(tmp_path: Path) -> None:
    open_, sticky, safe = tmp_path / "open", tmp_path / "sticky", tmp_path / "safe"
    for folder, mode in ((open_, 0o777), (sticky, 0o1777), (safe, 0o755)):
        folder.mkdir()
        folder.chmod(mode)
    (open_ / "inner").mkdir(mode=0o755)
    (sticky / "inner").mkdir(mode=0o755)
    entries = [open_, sticky, safe, open_ / "missing" / "lib", open_ / "inner", sticky / "inner"]

    found = search_path_findings(env_for(":".join(map(str, entries))), access=Access())
    flagged = {f.path: f for f in codes(found, WRITABLE_SEARCH_PATH)}

    assert set(flagged) == {str(open_), str(sticky), str(open_ / "missing" / "lib"), str(open_ / "inner")}
    assert "sticky bit stops others deleting your files there, not adding theirs" in flagged[str(sticky)].message
    assert flagged[str(sticky)].fix.json()["actions"] == [
        {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(sticky)}]
    assert f"can be created in {open_}" in flagged[str(open_ / "missing" / "lib")].message
    assert f"move {open_ / 'inner'} away" in flagged[str(open_ / "inner")].message  # renamed, not written into
    assert all(f.severity == WARNING for f in flagged.values())


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder another user can reach (pytest's own are 0700), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="cudnnload-policy-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def as_nobody(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command],
                          capture_output=True, text=True, env=env or BASE_ENVIRON, timeout=60, check=False)


def need_another_user(folder: Path) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running as another user needs root and setpriv")
    if os.statvfs(folder).f_flag & os.ST_NOSUID:
        pytest.skip(f"{folder} is on a file system mounted nosuid")


def test_a_sticky_world_writable_folder_still_lets_anyone_plant_a_library(synthetic_dir: Path,
                                                                           shared_dir: Path) -> None:
    need_another_user(shared_dir)
    sticky = shared_dir / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    source = copy_decoy(synthetic_dir, shared_dir / "decoy")

    planted = as_nobody("cp", str(source / "libcudnn_ops.so.9"), str(source / "libcudnn_graph.so.9"), str(sticky))
    run = run_probe(synthetic_dir / "probe", "open:libcudnn_ops.so.9", ld_library_path=str(sticky))

    assert planted.returncode == 0, planted.stderr
    assert (sticky / "libcudnn_ops.so.9").stat().st_uid == NOBODY and run.mapped(sticky / "libcudnn_ops.so.9")
    assert codes(search_path_findings(env_for(str(sticky)), access=Access()), WRITABLE_SEARCH_PATH)


def test_cudnn_files_others_can_write_or_another_user_owns_are_findings(synthetic_dir: Path, tmp_path: Path) -> None:
    world, mine = tmp_path / "libcudnn_ops.so.9", tmp_path / "libcudnn_graph.so.9"
    shutil.copy(synthetic_dir / "decoy" / "libcudnn_ops.so.9", world)
    shutil.copy(synthetic_dir / "decoy" / "libcudnn_graph.so.9", mine)
    world.chmod(0o666)
    mine.chmod(0o644)
    link = tmp_path / "libcudnn_ops.so"
    link.symlink_to(world.name)
    me = os.geteuid()
    if me == 0:
        os.chown(mine, NOBODY, -1)  # as root: really another user's file

    # not root: judged as if another user looked, to whom every file here is a stranger's
    found = file_findings([str(world), str(mine), str(link)], Access(user=me if me == 0 else me + 1))

    writable = {f.path: f for f in codes(found, WRITABLE_LIBRARY)}
    foreign = codes(found, FOREIGN_OWNER)
    assert set(writable) == {str(world), str(link)} and writable[str(world)].fix.text == f"chmod go-w {world}"
    assert f"({world})" in writable[str(link)].message  # a symlink is judged by the file it leads to
    assert {f.path for f in foreign} == ({str(mine)} if me == 0 else {str(world), str(mine), str(link)})
    assert all(f.severity == WARNING and "neither root nor you" in f.message for f in foreign)
    assert file_findings([str(mine)], Access(user=os.stat(mine).st_uid)) == ()  # one's own file, 0644: nothing


def test_a_group_writable_file_counts_unless_the_group_is_its_owners_private_one(tmp_path: Path) -> None:
    import grp
    import pwd

    path = tmp_path / "libcudnn_ops.so.9"
    path.write_bytes(b"")
    path.chmod(0o664)
    owner = pwd.getpwuid(os.stat(path).st_uid)
    private = next((g for g in grp.getgrall() if g.gr_name == owner.pw_name and g.gr_gid == owner.pw_gid
                    and set(g.gr_mem) <= {owner.pw_name}), None)
    shared = next((g for g in grp.getgrall() if g.gr_name != owner.pw_name), None)
    if private is None or shared is None or os.geteuid() != 0:
        pytest.skip("needs root, a user private group for the owner and another group")

    os.chown(path, -1, private.gr_gid)
    quiet = file_findings([str(path)], Access(user=owner.pw_uid))
    os.chown(path, -1, shared.gr_gid)
    loud = file_findings([str(path)], Access(user=owner.pw_uid))

    assert quiet == () and [f.message.split(":")[0] for f in loud] == [f"writable by the group {shared.gr_name}"]


def test_inspect_and_which_report_an_installs_writable_file_and_rpath_folder(synthetic_dir: Path,
                                                                            tmp_path: Path) -> None:
    """The shim's DT_RPATH is $ORIGIN: its own folder, world-writable here, is a search folder."""
    folder = tmp_path / "v9"
    shutil.copytree(synthetic_dir / "v9-rpath", folder)
    (folder / "libcudnn_ops.so.9").chmod(0o666)
    folder.chmod(0o777)

    [install] = inspect([str(folder)], environ=BASE_ENVIRON, use_cache=False).installs
    answer = which(["ops"], consumer=str(folder / "libcudnn.so.9"), environ=BASE_ENVIRON, use_cache=False)

    [writable] = codes(install.findings, WRITABLE_LIBRARY)
    [rpath] = codes(install.findings, WRITABLE_SEARCH_PATH)
    assert writable.path == str(folder / "libcudnn_ops.so.9")
    assert rpath.path == str(folder) and rpath.message.startswith(
        "searched for libraries by the DT_RUNPATH of libcudnn_graph.so.9, libcudnn_ops.so.9 and the DT_RPATH of "
        "libcudnn.so.9, and it is writable by anyone")
    assert {f.code for f in answer.findings} >= {WRITABLE_LIBRARY, WRITABLE_SEARCH_PATH}
    assert not any(c for f in install.findings if f.code in (WRITABLE_LIBRARY, WRITABLE_SEARCH_PATH)
                   for c in f.consequences)  # a risk, never the cause a failure is blamed on


# --- set-user-ID programs -----------------------------------------------------------------

def build_setuid_program(synthetic_dir: Path, root: Path) -> Path:
    """root/bin/prog: probe.c NEEDing libcudnn.so.9 (the fake shim) found through DT_RPATH $ORIGIN/../lib."""
    (root / "bin").mkdir()
    shutil.copytree(synthetic_dir / "v9-rpath", root / "lib")
    program = root / "bin" / "prog"
    gcc("-o", str(program), str(SOURCES / "probe.c"), "-Wl,--no-as-needed", f"-L{root / 'lib'}",
        "-l:libcudnn.so.9", "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib")
    for path in (root / "bin", root / "lib", *(root / "lib").iterdir()):
        path.chmod(0o755)
    return program


def test_a_setuid_program_loses_its_origin_rpath_and_ld_library_path(synthetic_dir: Path, shared_dir: Path) -> None:
    program = build_setuid_program(synthetic_dir, shared_dir)
    need_another_user(shared_dir)
    plain = as_nobody(str(program))
    program.chmod(0o4755)

    by_owner = subprocess.run([str(program)], capture_output=True, text=True, env=BASE_ENVIRON, timeout=60,
                              check=False)
    secure = as_nobody(str(program))
    with_llp = as_nobody(str(program), env={**BASE_ENVIRON, "LD_LIBRARY_PATH": str(shared_dir / "lib")})
    resolved = resolve_target(str(program), environ=BASE_ENVIRON)

    assert plain.returncode == 0 and f"map {shared_dir / 'lib' / 'libcudnn.so.9'}" in plain.stdout
    assert by_owner.returncode == 0  # run by its owner: no secure mode, $ORIGIN counts
    for run in (secure, with_llp):  # not the program's own: none, or a system cuDNN where the machine has one
        assert f"map {shared_dir / 'lib' / 'libcudnn.so.9'}" not in run.stdout
        assert run.returncode == 127 and "libcudnn.so.9: cannot open shared object file" in run.stderr \
            or system_cudnn("libcudnn.so.9")
    [origin] = codes(list(resolved.findings), ORIGIN_IN_SETUID)
    assert origin.severity == ERROR and "'$ORIGIN/../lib'" in origin.message
    assert "will not be found" in origin.message and "LD_LIBRARY_PATH is ignored" in origin.message


def test_a_librarys_own_origin_still_counts_in_secure_mode(synthetic_dir: Path, shared_dir: Path) -> None:
    """The shim's DT_RPATH $ORIGIN is expanded for a setuid program: the wheel keeps its sub-libraries."""
    need_another_user(shared_dir)
    program = shared_dir / "probe"
    shutil.copy(synthetic_dir / "probe", program)
    shutil.copytree(synthetic_dir / "v9-rpath", shared_dir / "v9")
    for path in (shared_dir / "v9", *(shared_dir / "v9").iterdir()):
        path.chmod(0o755)
    program.chmod(0o4755)

    run = as_nobody(str(program), f"open:{shared_dir / 'v9' / 'libcudnn.so.9'}", "call:cudnnOpsVersionCheck")

    assert "call cudnnOpsVersionCheck 0" in run.stdout
    assert f"map {shared_dir / 'v9' / 'libcudnn_ops.so.9'}" in run.stdout


def test_a_setuid_program_keeps_an_origin_that_lies_under_a_system_folder(synthetic_dir: Path, shared_dir: Path,
                                                                          defaults: LinkerDefaults) -> None:
    """glibc's exception: the same program and files, run from a folder under a system folder (a bind mount in a
    private mount namespace, gone when the command ends), keep $ORIGIN; run from where they are, they lose it."""
    need_another_user(shared_dir)
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux)")
    system = next((entry.path for folder in defaults.default_dirs if os.path.isdir(folder)
                   for entry in sorted(os.scandir(folder), key=lambda e: e.name)
                   if entry.is_dir(follow_symlinks=False)), None)
    if system is None:
        pytest.skip("no folder under a system folder to mount over")
    here = shared_dir / "app"
    shutil.copytree(synthetic_dir / "v9-rpath", here)
    gcc("-o", str(here / "prog"), str(SOURCES / "probe.c"), "-Wl,--no-as-needed", f"-L{here}", "-l:libcudnn.so.9",
        "-Wl,--disable-new-dtags,-rpath,$ORIGIN")
    here.chmod(0o755)
    (here / "prog").chmod(0o4755)
    setpriv = f"setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups"

    mounted = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {here} {system} && exec {setpriv} "
                              f"{system}/prog"], capture_output=True, text=True, env=BASE_ENVIRON, timeout=60,
                             check=False)
    if "mount" in mounted.stderr and mounted.returncode not in (0, 127):
        pytest.skip(f"cannot bind-mount in a private mount namespace here: {mounted.stderr.strip()}")
    direct = as_nobody(str(here / "prog"))
    program = Requester.from_file(str(here / "prog"))

    seen = os.path.realpath(system)  # what /proc/self/exe, hence $ORIGIN, and the maps say
    assert mounted.returncode == 0 and f"map {seen}/libcudnn.so.9" in mounted.stdout, mounted.stderr
    assert f"map {here}/libcudnn.so.9" not in direct.stdout
    assert direct.returncode == 127 and "libcudnn.so.9: cannot open shared object file" in direct.stderr \
        or system_cudnn("libcudnn.so.9")
    assert setuid_findings(replace(program, origin=seen), defaults, access=Access()) == ()
    found = setuid_findings(replace(program, origin=str(here)), defaults, access=Access())
    assert [f.code for f in found] == [ORIGIN_IN_SETUID]


@pytest.mark.parametrize(("rpath", "origin", "dropped"), [
    ("$ORIGIN/../lib", "/opt/app/bin", True),  # not under a system folder
    ("$ORIGIN/../lib/cudnn", "/usr/lib/x86_64-linux-gnu/app", False),  # glibc's one exception
    ("${ORIGIN}", "/usr/lib/app", False),
    ("/opt/$ORIGIN", "/usr/lib/app", True),  # $ORIGIN must start the entry
    ("$ORIGIN/$ORIGIN", "/usr/lib", True),  # and be its only one
    ("$ORIGINAL/lib", "/opt/app/bin", False),  # not a DST at all: left to the other checks
    ("/usr/local/lib", "/opt/app/bin", False),
])
def test_secure_mode_drops_origin_entries_by_glibcs_rules(tmp_path: Path, rpath: str, origin: str,
                                                          dropped: bool) -> None:
    program = tmp_path / "prog"
    program.write_bytes(b"")
    program.chmod(0o4755)  # an owner may set the bit on a file of its own
    requester = Requester(str(program), rpath=(rpath,), origin=origin)

    found = setuid_findings(requester, DEBIAN, access=Access())

    assert [f.severity for f in found] == ([WARNING] if dropped else [])


def test_origin_in_setuid_is_an_error_only_when_cudnn_comes_through_the_dropped_entry(tmp_path: Path) -> None:
    program = tmp_path / "prog"
    program.write_bytes(b"")
    program.chmod(0o2755)  # set-group-ID: the same secure mode
    requester = Requester(str(program), runpath=("$ORIGIN/../lib",), origin="/opt/app/bin")

    hit = setuid_findings(requester, DEBIAN, "/opt/app/bin/../lib/libcudnn.so.9", access=Access())
    elsewhere = setuid_findings(requester, DEBIAN, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", access=Access())
    program.chmod(0o755)

    assert [f.severity for f in hit] == [ERROR] and "DT_RUNPATH" in hit[0].message and "set-group-ID" in hit[0].message
    assert [f.severity for f in elsewhere] == [WARNING]
    assert setuid_findings(requester, DEBIAN, "/opt/app/lib/libcudnn.so.9", access=Access()) == ()  # no bit: none


def test_programs_found_by_doctor_without_setuid_have_no_origin_finding(synthetic_dir: Path, tmp_path: Path) -> None:
    program = build_setuid_program(synthetic_dir, tmp_path)
    resolved = resolve_target(str(program), environ=BASE_ENVIRON)
    assert resolved.install is not None and not codes(list(resolved.findings), ORIGIN_IN_SETUID)
    assert glob.glob(str(tmp_path / "lib" / "libcudnn.so.9"))
