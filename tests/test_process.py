"""The process model (`resolve.process`): what LD_PRELOAD puts in a process before the program asks for
cuDNN, checked against the real loader (/proc/self/maps of a child that loads the shim by path)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.codes import ActionKind, Code, Effect
from cudnnload.diagnose.inventory import find
from cudnnload.resolve.discovery import context
from cudnnload.resolve.process import preload_entries, preload_file_lines, without_lines
from fixtures.glibc.scene import needs_root, runner
from tests.wheels import cache_root, lib_folder, site_folder

ROOT = Path(__file__).resolve().parent.parent

_LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG", "LD_AUDIT")
BASE = {key: value for key, value in os.environ.items() if key not in _LOADER_VARIABLES}

# Loads the shim by path, asks its version (the shim loads graph), prints the libcudnn files mapped.
_CHILD = """
import ctypes, json, sys
shim = ctypes.CDLL(sys.argv[1])
version = shim.cudnnGetVersion()
maps = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcudnn" in line})
print(json.dumps({"version": version, "maps": maps}))
"""


def _real(shim: Path, environ: dict[str, str]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(shim)], env=environ, capture_output=True, text=True,
                         timeout=60, check=True)
    answer: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return answer


def test_entries_split_like_ld_so() -> None:
    assert preload_entries({"LD_PRELOAD": " /a/x.so:libz.so.1  /b/y.so::"}) == ("/a/x.so", "libz.so.1", "/b/y.so")
    assert preload_entries({}) == ()


@pytest.mark.parametrize("preloaded", ["graph", "ops"])
def test_preloaded_sublibrary_of_another_release(preloaded: str) -> None:
    """9.0's graph (or ops) in LD_PRELOAD, a 9.28 shim loaded by path: the model says the 9.0 file answers
    the shim's dlopen, as the real loader does, and the fix removes the LD_PRELOAD entry."""
    new, old = lib_folder("cu12-9.28.0.42"), lib_folder("cu12-9.0.0.312")
    preload = str(old / f"libcudnn_{preloaded}.so.9")
    environ = {**BASE, "LD_PRELOAD": preload}
    ctx = context(environ)
    assert [p.path for p in ctx.preloads][0] == preload
    install = next(i for i in find([str(new)], environ=environ, ctx=ctx).installs)
    step = next(s for s in install.plan if s.library == preloaded)
    assert (step.path, step.rule, step.variable, step.entry) == (preload, "already-loaded", "LD_PRELOAD", preload)
    mixed = [f for f in install.findings if f.code is Code.MIXED_RELEASE and f.subject.path == preload]
    assert mixed, [f.message for f in install.findings]
    actions = mixed[0].fix.actions if mixed[0].fix else ()
    assert [(a.do, a.variable, a.entry) for a in actions] == [(ActionKind.ENV_REMOVE_ENTRY, "LD_PRELOAD", preload)]
    if preloaded == "graph":  # the real loader: the shim's graph is the preloaded one
        real = _real(new / "libcudnn.so.9", environ)
        assert os.path.realpath(preload) in real["maps"]
        assert str(real["version"]).startswith("900")


def test_preloaded_shim_brings_its_needed() -> None:
    """A preloaded file's NEEDED are mapped too (breadth first): 9.0's ops NEEDs its graph."""
    old = lib_folder("cu12-9.0.0.312")
    environ = {**BASE, "LD_PRELOAD": str(old / "libcudnn_ops.so.9")}
    ctx = context(environ)
    mapped = {os.path.basename(p.path or "") for p in ctx.preloads}
    assert {"libcudnn_ops.so.9", "libcudnn_graph.so.9"} <= mapped
    assert ctx.linker.loaded.get("libcudnn_graph.so.9") == str(old / "libcudnn_graph.so.9")


def test_missing_preload_is_ignored_like_ld_so(tmp_path: Path) -> None:
    ctx = context({**BASE, "LD_PRELOAD": str(tmp_path / "nothing.so")})
    assert ctx.preloads[0].path is None and "cannot be preloaded" in (ctx.preloads[0].error or "")


def _starts(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/true"], env=environ, capture_output=True, text=True, timeout=30, check=False)


def test_a_preload_whose_needed_is_missing_stops_every_start_as_predicted(tmp_path: Path) -> None:
    """9.0's engine library preloaded from a folder without its graph: glibc stops every program at start (exit
    127, "error while loading shared libraries"); the model says so, names the entry, and its removal is the
    fix, and with it applied /bin/true starts again."""
    from cudnnload.judge.preload import preload_findings

    lonely = tmp_path / "lib"
    lonely.mkdir()
    engine = lonely / "libcudnn_engines_precompiled.so.9"
    os.link(lib_folder("cu12-9.0.0.312") / engine.name, engine)
    environ = {**BASE, "LD_PRELOAD": str(engine)}
    real = _starts(environ)
    assert real.returncode == 127 and "error while loading shared libraries: libcudnn_graph.so.9" in real.stderr
    said = preload_findings(context(environ).preloads)
    assert [f.code for f in said] == [Code.PRELOAD_CANNOT_LOAD]
    assert said[0].consequences[0].message and "libcudnn_graph.so.9" in said[0].consequences[0].message
    actions = said[0].fix.actions
    assert [(a.do, a.variable, a.entry) for a in actions] == [(ActionKind.ENV_REMOVE_ENTRY, "LD_PRELOAD", str(engine))]
    assert _starts(BASE).returncode == 0  # the entry removed


def test_a_preload_bound_to_another_release_stops_every_start_as_predicted() -> None:
    """9.0's engine library preloaded with the 9.27 JIT graph first on LD_LIBRARY_PATH: its NEEDED graph is found,
    lacks a symbol it binds at start, and glibc stops every program ("symbol lookup error"); the model names it."""
    from cudnnload.judge.preload import preload_findings

    engine = lib_folder("cu12-9.0.0.312") / "libcudnn_engines_precompiled.so.9"
    jit = cache_root() / "unpacked" / "nvidia-cudnn-jit-cu13-9.27.0.42" / "nvidia" / "cudnn_jit" / "lib"
    if not (jit / "libcudnn_graph.so.9").exists():
        pytest.skip(f"the JIT wheel is not unpacked in {jit}: run `make wheels`")
    environ = {**BASE, "LD_PRELOAD": str(engine), "LD_LIBRARY_PATH": str(jit)}
    # the engine's own RUNPATH ($ORIGIN) comes after LD_LIBRARY_PATH: the JIT graph answers
    real = _starts(environ)
    assert real.returncode == 127 and "symbol lookup error" in real.stderr, real.stderr
    said = preload_findings(context(environ).preloads)
    assert [f.code for f in said] == [Code.PRELOAD_CANNOT_LOAD]
    assert "symbol lookup error" in (said[0].consequences[0].message or "")
    assert not preload_findings(context({**BASE, "LD_PRELOAD": str(engine)}).preloads)  # its own graph: it starts
    assert _starts({**BASE, "LD_PRELOAD": str(engine)}).returncode == 0


def test_a_preloaded_graph_answers_the_needed_of_a_versioned_shims_sublibraries(tmp_path: Path) -> None:
    """A 9.28 install named conda's way (libcudnn_graph.so.9.28.0 ...) and 9.0's graph in LD_PRELOAD: the shim asks
    for libcudnn_graph.so.9.28.0 first, which the preloaded graph does not answer, so both graphs are mapped; its
    ops NEEDs libcudnn_graph.so.9, which the preloaded 9.0 graph answers, and does not load. The model maps both
    and has ops fail, as the real loader does."""
    new, old = lib_folder("cu12-9.28.0.42"), lib_folder("cu12-9.0.0.312")
    folder = tmp_path / "lib"
    folder.mkdir()
    for library in new.glob("libcudnn*.so.9"):  # libcudnn_graph.so.9.28.0, and libcudnn_graph.so.9 a link to it
        os.link(library, folder / f"{library.name}.28.0")
        (folder / library.name).symlink_to(f"{library.name}.28.0")
    for other in lib_folder("cublas-cu12-12.9.1.4").glob("*.so*"):
        os.link(other, folder / other.name)
    graph = str(old / "libcudnn_graph.so.9")
    environ = {**BASE, "LD_PRELOAD": graph}
    install = next(i for i in find([str(folder)], environ=environ, ctx=context(environ)).installs)
    maps = {os.path.realpath(path) for path in install.maps}
    assert {os.path.realpath(graph), os.path.realpath(folder / "libcudnn_graph.so.9.28.0")} <= maps
    assert os.path.realpath(folder / "libcudnn_ops.so.9.28.0") not in maps
    script = ("import ctypes, sys; shim = ctypes.CDLL(sys.argv[1]); shim.cudnnGetVersion(); "
              "shim.cudnnOpsVersionCheck(); "
              "print(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l}))")
    real = subprocess.run([sys.executable, "-c", script, str(folder / "libcudnn.so.9")], env=environ,
                          capture_output=True, text=True, timeout=60, check=False)
    mapped = {os.path.realpath(p) for p in eval(real.stdout.strip().splitlines()[-1])}  # noqa: S307 (our own list)
    assert os.path.realpath(graph) in mapped and os.path.realpath(folder / "libcudnn_graph.so.9.28.0") in mapped
    assert os.path.realpath(folder / "libcudnn_ops.so.9.28.0") not in mapped


def test_a_path_to_a_file_already_mapped_under_another_name_gets_that_object(tmp_path: Path) -> None:
    """Two folders of hard links to one 9.28 wheel, the first's shim in LD_PRELOAD, the second's opened by path:
    glibc compares the file (st_dev, st_ino) and hands out the preloaded object, whose $ORIGIN then gives graph.
    The model says so (linker, and doctor's target), as the real loader does."""
    from cudnnload.resolve import linker

    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        for library in lib_folder("cu12-9.28.0.42").glob("libcudnn*.so.9"):
            os.link(library, folder / library.name)
    environ = {**BASE, "LD_PRELOAD": str(first / "libcudnn.so.9")}
    ctx = context(environ)
    res = linker.resolve(str(second / "libcudnn.so.9"), None, ctx.linker)
    assert (res.path, res.rule) == (str(first / "libcudnn.so.9"), "already-loaded")
    real = _real(second / "libcudnn.so.9", environ)
    assert os.path.realpath(first / "libcudnn_graph.so.9") in real["maps"]
    assert os.path.realpath(second / "libcudnn_graph.so.9") not in real["maps"]
    from cudnnload.diagnose.targets import resolve_target

    resolved = resolve_target(str(second / "libcudnn.so.9"), environ=environ)
    assert resolved.target.shim == str(first / "libcudnn.so.9") and resolved.install is not None
    assert resolved.install.folder == str(first)


def test_a_preload_missing_only_functions_of_another_release_still_starts() -> None:
    """9.28's cnn preloaded with the 9.27 JIT graph first on LD_LIBRARY_PATH: what cnn lacks from that graph are
    functions, bound lazily at their first call, so programs start (unlike a missing vtable: the test above);
    the model says no start is stopped, as the real loader does."""
    from cudnnload.judge.preload import preload_findings

    jit = cache_root() / "unpacked" / "nvidia-cudnn-jit-cu13-9.27.0.42" / "nvidia" / "cudnn_jit" / "lib"
    if not (jit / "libcudnn_graph.so.9").exists():
        pytest.skip(f"the JIT wheel is not unpacked in {jit}: run `make wheels`")
    environ = {**BASE, "LD_PRELOAD": str(lib_folder("cu12-9.28.0.42") / "libcudnn_cnn.so.9"),
               "LD_LIBRARY_PATH": str(jit)}
    assert _starts(environ).returncode == 0
    assert preload_findings(context(environ).preloads) == ()


def test_a_sublibrary_that_fails_to_load_is_answered_by_the_shims_bare_name_as_the_real_loader_does(
        tmp_path: Path) -> None:
    """cuDNN 9's shim asks for libcudnn_cnn.so.9 and, when that file fails to load (here 9.0's cnn in a 9.28
    folder: undefined symbols of 9.28's graph), for the bare libcudnn_cnn.so, which a -dev package or a CUDA
    image puts on the search path (here a folder on LD_LIBRARY_PATH with 9.28's cnn under that name). The model
    maps that file, as the real loader does, and the convolution library's check then answers 0."""
    new, old = lib_folder("cu12-9.28.0.42"), lib_folder("cu12-9.0.0.312")
    folder, dev = tmp_path / "lib", tmp_path / "dev"
    folder.mkdir()
    dev.mkdir()
    for library in [*new.glob("libcudnn*.so.9"), *lib_folder("cublas-cu12-12.9.1.4").glob("*.so*")]:
        os.link(library, folder / library.name)
    (folder / "libcudnn_cnn.so.9").unlink()
    os.link(old / "libcudnn_cnn.so.9", folder / "libcudnn_cnn.so.9")
    os.link(new / "libcudnn_cnn.so.9", dev / "libcudnn_cnn.so")
    environ = {**BASE, "LD_LIBRARY_PATH": str(dev)}
    install = next(i for i in find([str(folder)], environ=environ, ctx=context(environ)).installs)
    step = next(s for s in install.plan if s.library == "cnn")
    assert step.path == str(folder / "libcudnn_cnn.so.9") and step.fallback is not None
    assert step.fallback.path == str(dev / "libcudnn_cnn.so")
    from cudnnload.report import install_text

    # inspect's table says where the shim goes on to, not only that the first file fails
    assert f"\n      then libcudnn_cnn.so: {dev / 'libcudnn_cnn.so'}  [ELSEWHERE, via " in install_text(install)
    bare, own = os.path.realpath(dev / "libcudnn_cnn.so"), os.path.realpath(folder / "libcudnn_cnn.so.9")
    maps = {os.path.realpath(path) for path in install.maps}
    assert bare in maps and own not in maps
    # the program runs, on a file from elsewhere: a warning on the install's own cnn, whose fix puts it back
    (said,) = [f for f in install.findings if f.code is Code.SUBLIBRARY_UNLOADABLE]
    assert said.severity.value == "warning" and said.subject.path == str(folder / "libcudnn_cnn.so.9")
    assert not [f for f in install.findings if f.severity.value == "error"]
    script = ("import ctypes, json, sys; shim = ctypes.CDLL(sys.argv[1]); shim.cudnnGetVersion(); "
              "ops = shim.cudnnOpsVersionCheck(); cnn = shim.cudnnCnnVersionCheck(); "
              "print(json.dumps([ops, cnn, sorted({l.split()[-1] for l in open('/proc/self/maps') "
              "if 'libcudnn' in l})]))")
    real = subprocess.run([sys.executable, "-c", script, str(folder / "libcudnn.so.9")], env=environ,
                          capture_output=True, text=True, timeout=60, check=True)
    ops, cnn, mapped = json.loads(real.stdout.strip().splitlines()[-1])
    assert (ops, cnn) == (0, 0)
    mapped = {os.path.realpath(path) for path in mapped}
    assert bare in mapped and own not in mapped


@pytest.mark.parametrize("bare", [False, True], ids=["no-bare-name", "bare-name-on-library-path"])
def test_ops_under_graphs_name_binds_its_needed_to_itself_and_fails_as_the_real_loader_does(
        tmp_path: Path, bare: bool) -> None:
    """The wheel's graph a copy of its ops (the H200, session 43, breakage graph-is-ops): ops NEEDs
    libcudnn_graph.so.9, which glibc answers with the object being loaded under that name; it does not define the
    version libcudnn_graph.so.9, so the dlopen fails ("version lookup error ... (fatal)"), and the shim goes on to
    the bare libcudnn_graph.so: none there, cudnnGetVersion aborts; 9.0's graph there (a -dev package's link), it
    returns 90000 (torch on the H200 met the system's 9.14 so). Before, the model had the copy load and its
    look-up of cudnnGetVersion fail."""
    from cudnnload.judge.installs import predict_install

    new, old = lib_folder("cu12-9.28.0.42"), lib_folder("cu12-9.0.0.312")
    folder, dev = tmp_path / "lib", tmp_path / "dev"
    folder.mkdir()
    dev.mkdir()
    for library in new.glob("libcudnn*.so.9"):
        os.link(library, folder / library.name)
    (folder / "libcudnn_graph.so.9").unlink()
    os.link(new / "libcudnn_ops.so.9", folder / "libcudnn_graph.so.9")
    if bare:
        os.link(old / "libcudnn_graph.so.9", dev / "libcudnn_graph.so")
    environ = {**BASE, "LD_LIBRARY_PATH": str(dev)}
    ctx = context(environ)
    install = next(i for i in find([str(folder)], environ=environ, ctx=ctx).installs)
    (version, *_) = predict_install(install, ctx, gpu=False).expectations
    script = ("import ctypes, sys; shim = ctypes.CDLL(sys.argv[1]); shim.cudnnGetVersion.restype = ctypes.c_size_t; "
              "print(shim.cudnnGetVersion(), flush=True)")
    real = subprocess.run([sys.executable, "-c", script, str(folder / "libcudnn.so.9")], env=environ,
                          capture_output=True, text=True, timeout=60, check=False)
    if bare:
        assert real.returncode == 0 and real.stdout.split() == ["90000"], real
        assert (version.outcome, version.value) == ("value", 90000), version
    else:
        assert real.returncode != 0 and "Cannot load symbol cudnnGetVersion" in real.stderr, real
        assert version.outcome == Effect.ABORT and version.message == real.stderr.strip(), version
    said = [f.message for f in install.findings if f.code is Code.SUBLIBRARY_UNLOADABLE]
    assert not bare or any("version `libcudnn_graph.so.9' not found" in message for message in said), said
    if bare:  # `doctor --` says the release the run used: the bare name's graph, not the folder's
        done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--", sys.executable, "-c", script,
                               str(folder / "libcudnn.so.9")], env={**environ, "CUDNNLOAD_NO_CACHE": "1"},
                              capture_output=True, text=True, timeout=300, check=False)
        lines = done.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("cudnnload doctor -- "))
        assert "ran with cuDNN 9.0.0 (its graph " in lines[start + 1] and str(dev) in lines[start + 1], done.stdout


def test_a_preload_whose_needed_is_cut_short_kills_every_start_as_predicted(tmp_path: Path) -> None:
    """9.0's adv preloaded beside a graph cut inside a segment: ld.so maps that NEEDED graph at start and the
    process dies of SIGBUS before the program runs; the model says SIGBUS (not exit 127), and the fix removes
    the entry."""
    from cudnnload.judge.preload import preload_findings

    folder = tmp_path / "lib"
    folder.mkdir()
    old = lib_folder("cu12-9.0.0.312")
    os.link(old / "libcudnn_adv.so.9", folder / "libcudnn_adv.so.9")
    with open(old / "libcudnn_graph.so.9", "rb") as whole, open(folder / "libcudnn_graph.so.9", "wb") as cut:
        cut.write(whole.read(60000))
    environ = {**BASE, "LD_PRELOAD": str(folder / "libcudnn_adv.so.9")}
    assert _starts(environ).returncode == -7  # SIGBUS
    said = preload_findings(context(environ).preloads)
    assert [f.code for f in said] == [Code.PRELOAD_CANNOT_LOAD]
    assert [c.effect for c in said[0].consequences] == [Effect.SIGBUS]
    assert [(a.do, a.entry) for a in said[0].fix.actions] == [(ActionKind.ENV_REMOVE_ENTRY, environ["LD_PRELOAD"])]


def test_a_preloads_needed_that_binds_to_an_object_already_mapped_of_another_release_stops_the_start(
        tmp_path: Path) -> None:
    """9.28's cnn preloaded from a folder whose ops is 9.0's: cnn NEEDs graph first (9.28's is mapped), then ops,
    whose own NEEDED graph is that object already there; 9.0's ops binds data symbols of its graph at start
    (function pointers, named by .rela.dyn) that 9.28's lacks: every program stops ("symbol lookup error"), as
    the model says."""
    from cudnnload.judge.preload import preload_findings

    new, old = lib_folder("cu12-9.28.0.42"), lib_folder("cu12-9.0.0.312")
    folder = tmp_path / "lib"
    folder.mkdir()
    for name in ("libcudnn_cnn.so.9", "libcudnn_graph.so.9"):
        os.link(new / name, folder / name)
    os.link(old / "libcudnn_ops.so.9", folder / "libcudnn_ops.so.9")
    environ = {**BASE, "LD_PRELOAD": str(folder / "libcudnn_cnn.so.9")}
    real = _starts(environ)
    assert real.returncode == 127 and f"{folder / 'libcudnn_ops.so.9'}: undefined symbol" in real.stderr
    said = preload_findings(context(environ).preloads)
    assert [f.code for f in said] == [Code.PRELOAD_CANNOT_LOAD]
    assert [(a.do, a.entry) for a in said[0].fix.actions] == [(ActionKind.ENV_REMOVE_ENTRY, environ["LD_PRELOAD"])]


def test_a_preload_file_line_holding_one_entry_alone_is_what_a_fix_takes_out() -> None:
    text = "# preloads\n/a/libx.so\n/b/liby.so /c/libz.so\n  /d/libw.so  \n/e/libv.so # here\n"
    assert preload_file_lines(text) == {"/a/libx.so": "/a/libx.so", "/d/libw.so": "  /d/libw.so  "}
    assert without_lines(text, {"/a/libx.so"}) == text.replace("/a/libx.so\n", "")


@pytest.mark.slow
@pytest.mark.timeout_s(300)
def test_a_sublibrary_preloaded_by_etc_ld_so_preload_is_its_line_taken_out_and_the_program_works(
        tmp_path: Path) -> None:
    """/etc/ld.so.preload holding 9.0's ops, a program opening 9.28's shim by path (the H200's
    etc-ld-so-preload-system-ops composition, where the fix was words: "remove ... from /etc/ld.so.preload (as
    root)"): every process maps 9.0's ops and graph first, and the 9.28 shim gets 9.0's graph by its soname. The
    fix takes out the line that holds that entry alone, checked on the model (the world without it judged again),
    and the program, run again with the file so changed, gets 9.28. In a private mount namespace over /etc."""
    if why := needs_root():
        pytest.skip(why)
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the scenes' runner (fixtures/glibc/runner.c)")
    site = tmp_path / "site"
    for tag in ("cu12-9.28.0.42", "cublas-cu12-12.9.1.4"):
        shutil.copytree(site_folder(tag), site, copy_function=os.link, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".unpacked"))
    line = str(lib_folder("cu12-9.0.0.312") / "libcudnn_ops.so.9")
    etc = tmp_path / "etc"
    (etc / "upper").mkdir(parents=True)
    (etc / "work").mkdir()
    (etc / "upper" / "ld.so.preload").write_text(line + "\n")
    program = tmp_path / "program.py"
    program.write_text(f"import ctypes, sys\nlib = ctypes.CDLL({str(site / 'nvidia/cudnn/lib/libcudnn.so.9')!r})\n"
                       "print(lib.cudnnGetVersion())\nsys.exit(0 if lib.cudnnGetVersion() == 92800 else 1)\n")
    env = {**{k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")},
           "PYTHONPATH": str(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}

    def inside(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(runner()), "-e", str(etc / "upper"), str(etc / "work"), "-C", str(tmp_path), "--",
                               *argv], env=env, capture_output=True, text=True, timeout=240)

    assert inside(sys.executable, str(program)).stdout.split() == ["90000"]
    said = inside(sys.executable, "-m", "cudnnload", "doctor", "--json", "--", sys.executable, str(program))
    first = next(f for f in json.loads(said.stdout)["result"]["findings"] if f["severity"] == "error")
    assert first["fix"]["actions"] == [{"do": "remove-line", "path": "/etc/ld.so.preload", "line": line}], first
    (etc / "upper" / "ld.so.preload").write_text("")  # the fix, applied (the overlay's copy of the file)
    again = inside(sys.executable, str(program))
    assert again.returncode == 0 and again.stdout.split() == ["92800"], again.stderr[-400:]


def test_a_preload_by_name_that_finds_nothing_is_not_what_a_program_opening_a_path_asked_for(tmp_path: Path) -> None:
    """``LD_PRELOAD=libcudnn.so.9`` that finds nothing (ld.so says so and goes on), then the program's own dlopen of
    the shim of a wheel since uninstalled, by its path: the run's finding is about that path, and its fix puts the
    wheel back; not the name's (an LD_LIBRARY_PATH setting answers a name, never a path: the fix differential's
    3-8406, whose command form set LD_LIBRARY_PATH and the app still failed)."""
    from cudnnload.diagnose.observe import diagnose_program
    from tests.test_judge_fixes import venv_at

    site = venv_at(tmp_path / "venv")
    (site / "nvidia").mkdir()
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    env = {**BASE, "LD_PRELOAD": "libcudnn.so.9", "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    report = diagnose_program([sys.executable, "-c", _CHILD, str(shim)], environ=env, timeout=60, again=False)
    failed = [f for f in report.findings if f.code is Code.LOAD_FAILED and f.severity == "error"]
    assert failed, report.findings
    done = [a.do for f in failed for a in f.fix.actions]
    assert ActionKind.PIP_INSTALL in done and ActionKind.ENV_SET not in done, failed


def test_an_engine_library_graph_runs_without_is_a_warning_of_the_run_as_predicted(tmp_path: Path) -> None:
    """Fix differential 3-8579: the wheel's ``libcudnn_heuristic.so.9`` deleted. The prediction says graph runs
    without it, with fewer engines (a warning, the wheel put back); the app's run shows graph's failed lookup of it
    and ends well. The run's finding of that lookup has the prediction's fix and severity: not an error with only
    words for a fix (a false alarm on a program that works)."""
    from cudnnload.diagnose.observe import diagnose_program
    from fixtures.fixdiff.consumers import calls
    from fixtures.scenarios.layouts import built
    from tests.test_judge_fixes import venv_at

    site = venv_at(tmp_path / "venv")
    for tag in ("cu12-9.28.0.42", "cublas-cu12-12.9.1.4"):
        shutil.copytree(site_folder(tag), site, copy_function=os.link, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".unpacked"))
    lib = site / "nvidia" / "cudnn" / "lib"
    (lib / "libcudnn_heuristic.so.9").unlink()
    env = {**BASE, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    report = diagnose_program([str(built("app")), str(lib / "libcudnn.so.9"), *calls()], environ=env, timeout=120,
                              again=False)
    assert report.observation.returncode == 0
    failed = [f for f in report.findings if f.code is Code.LOAD_FAILED]
    assert failed and all(f.severity == "warning" for f in failed), failed
    assert all(ActionKind.PIP_INSTALL in [a.do for a in f.fix.actions] for f in failed)
    assert not [f for f in report.findings if f.severity == "error"]
