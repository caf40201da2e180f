"""Installs, verdicts and the shim's dlopen plan on real wheels and on layouts built from them."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from cudnnload.diagnose.inventory import find
from cudnnload.judge.installs import file_findings
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.discovery import Host, Install, Inventory, inspect_file
from cudnnload.resolve.elfcache import ElfCache
from tests.stubs import stub_library
from tests.wheels import lib_folder, site_folder

pytestmark = pytest.mark.wheels

ENV: dict[str, str] = {"CUDNNLOAD_NO_CACHE": "1", "PATH": os.environ.get("PATH", "")}


def _codes(install: Install) -> set[str]:
    return {f.code for f in install.findings}


def _only(inv: Inventory) -> Install:
    assert len(inv.installs) == 1, [i.folder for i in inv.installs]
    return inv.installs[0]


def _farm(tmp: Path, source: Path, skip: tuple[str, ...] = (), extra: dict[str, Path] | None = None) -> Path:
    """A site-packages-like tree whose nvidia/cudnn/lib holds symlinks to the real files."""
    lib = tmp / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    for path in source.glob("libcudnn*.so*"):
        if path.name not in skip:
            (lib / path.name).symlink_to(path)
    for name, target in (extra or {}).items():
        (lib / name).symlink_to(target)
    return lib


def test_complete_928_wheel_is_one_install_whose_shim_loads_every_sublibrary_from_itself() -> None:
    install = _only(find([str(lib_folder("cu12-9.28.0.42"))], environ=ENV))
    assert install.major == 9 and install.release == Release(9, 28, 0)
    assert install.distribution == "nvidia-cudnn-cu12 9.28.0.42" and install.cuda_major == 12
    assert len(install.files) == 10
    plan = {step.library: step for step in install.plan}
    assert set(plan) == {"graph", "heuristic", "engines_precompiled", "engines_runtime_compiled",
                         "engines_tensor_ir", "ops", "cnn", "adv", "ext"}
    assert all(step.inside_install for step in plan.values())
    assert plan["ops"].rule == "rpath"  # the 9.28 shim's DT_RPATH $ORIGIN
    assert plan["ops"].names_tried[0] == "libcudnn_ops.so.9.28.0"
    assert plan["engines_precompiled"].rule == "runpath"  # graph opens the engines through its RUNPATH
    assert {"missing-sublibrary", "mixed-release"}.isdisjoint(_codes(install))


def test_unpacked_wheel_without_cublas_reports_the_missing_runtime_dependency() -> None:
    install = _only(find([str(lib_folder("cu12-9.28.0.42"))], environ=ENV))
    missing = [f for f in install.findings
               if f.code == "missing-dependency" and f.subject.library == "libcublasLt.so.12"]
    site = str(lib_folder("cu12-9.28.0.42").parents[2])
    # into the wheel's own site-packages: its RUNPATH finds ../../cublas/lib, whatever pip finds installed elsewhere
    # on its path. The unpacked wheel is a folder of no interpreter (pip's --target), which keeps the nvidia folder
    # there unless --upgrade replaces it whole: the wheel it holds comes along (fixes.pip_into)
    assert [a.json() for f in missing for a in f.fix.actions] == [
        {"do": "pip-install", "requirements": ["nvidia-cudnn-cu12==9.28.0.42", "nvidia-cublas-cu12"],
         "options": ["--ignore-installed", "--no-deps", "--upgrade"], "target": site, "python": sys.executable}]


def test_driverless_machine_gets_an_info_not_an_error_for_libcuda() -> None:
    install = _only(find([str(lib_folder("cu13-9.28.0.42"))], environ=ENV))
    no_driver = [f for f in install.findings if f.code == "no-driver"]
    if Path("/usr/lib/x86_64-linux-gnu/libcuda.so.1").exists():
        pytest.skip("this machine has an NVIDIA driver")
    assert no_driver and no_driver[0].severity == "info"
    assert install.cuda_major == 13


def test_cudnn8_shim_asks_for_exactly_so8_names() -> None:
    install = _only(find([str(lib_folder("cu12-8.9.7.29"))], environ=ENV))
    assert install.release == Release(8, 9, 7)
    assert {step.library for step in install.plan} == {"ops_infer", "ops_train", "cnn_infer", "cnn_train",
                                                       "adv_infer", "adv_train"}
    assert all(step.names_tried == (f"libcudnn_{step.library}.so.8",) for step in install.plan)
    assert all(step.inside_install and step.rule == "runpath" for step in install.plan)


def test_folder_missing_a_sublibrary_names_it(tmp_path: Path) -> None:
    lib = _farm(tmp_path, lib_folder("cu12-9.28.0.42"), skip=("libcudnn_ops.so.9",))
    install = _only(find([str(lib)], environ=ENV))
    missing = [f for f in install.findings if f.code == "missing-sublibrary"]
    assert [f.path for f in missing] == [str(lib / "libcudnn_ops.so.9")]
    assert not install.healthy
    assert next(s for s in install.plan if s.library == "ops").path is None


def test_missing_sublibrary_taken_from_ld_library_path_is_a_mixed_release(tmp_path: Path) -> None:
    lib = _farm(tmp_path, lib_folder("cu12-9.28.0.42"), skip=("libcudnn_ops.so.9",))
    old = str(lib_folder("cu12-9.0.0.312"))
    install = _only(find([str(lib)], environ={**ENV, "LD_LIBRARY_PATH": old}))
    ops = next(s for s in install.plan if s.library == "ops")
    assert ops.path == os.path.join(old, "libcudnn_ops.so.9") and ops.rule == "ld-library-path"
    assert ops.release == Release(9, 0, 0)
    assert "mixed-release" in _codes(install)


def test_a_shim_of_another_release_asks_for_the_versioned_names_of_its_own(tmp_path: Path) -> None:
    """9.0's shim copied over 9.28's (as the H200's 9.14 over its wheel's 9.19: torch then met the system's 9.14
    graph): it asks for libcudnn_graph.so.9.0.0 first, which a folder on LD_LIBRARY_PATH holds; the real loader
    maps that graph, whose cudnnGetVersion answers 9.0, and the model predicts it."""
    import subprocess

    shim_of_90 = lib_folder("cu12-9.0.0.312") / "libcudnn.so.9"
    lib = _farm(tmp_path / "site", lib_folder("cu12-9.28.0.42"), skip=("libcudnn.so.9",))
    shutil.copy2(shim_of_90, lib / "libcudnn.so.9")
    versioned = tmp_path / "versioned"
    versioned.mkdir()
    for path in lib_folder("cu12-9.0.0.312").glob("libcudnn_*.so.9"):
        (versioned / f"{path.name}.0.0").symlink_to(path)
    env = {**ENV, "LD_LIBRARY_PATH": str(versioned)}
    graph = next(s for s in _only(find([str(lib)], environ=env)).plan if s.library == "graph")
    assert graph.path == str(versioned / "libcudnn_graph.so.9.0.0") and graph.release == Release(9, 0, 0)

    real = subprocess.run([sys.executable, "-c", "import ctypes, sys\nlib = ctypes.CDLL(sys.argv[1])\n"
                           "print(lib.cudnnGetVersion())\nprint(open('/proc/self/maps').read())", str(lib /
                           "libcudnn.so.9")], env=env, capture_output=True, text=True, timeout=60)
    version, maps = real.stdout.split("\n", 1)
    # the maps name the file the link leads to
    assert version == "90000" and f"{graph.real_path}\n" in maps, real.stderr
    assert str(lib_folder("cu12-9.28.0.42") / "libcudnn_graph.so.9") not in maps


def test_sublibrary_from_another_release_in_the_folder_is_flagged(tmp_path: Path) -> None:
    lib = _farm(tmp_path, lib_folder("cu12-9.28.0.42"), skip=("libcudnn_ops.so.9",),
                extra={"libcudnn_ops.so.9": lib_folder("cu12-9.0.0.312") / "libcudnn_ops.so.9"})
    install = _only(find([str(lib)], environ=ENV))
    mixed = [f for f in install.findings if f.code == "mixed-release"]
    assert mixed and mixed[0].path == str(lib / "libcudnn_ops.so.9") and "9.0.0" in mixed[0].message


def test_symlink_farm_holding_only_the_shim_breaks_origin(tmp_path: Path) -> None:
    farm = tmp_path / "farm"
    farm.mkdir()
    (farm / "libcudnn.so.9").symlink_to(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9")
    install = _only(find([str(farm)], environ=ENV))
    assert all(step.path is None for step in install.plan if step.library in ("graph", "ops"))
    # one cause, said once: the link's $ORIGIN, and what it does to the first call
    origin = next(f for f in install.findings if f.code == "origin-through-symlink")
    assert [c.effect for c in origin.consequences] == ["abort"]
    assert origin.consequences[0].message == "Invalid handle. Cannot load symbol cudnnGetVersion"
    assert "missing-sublibrary" not in _codes(install)
    assert install.release == Release(9, 28, 0)  # from the folder the shim links to


def test_bad_files_become_findings_that_name_the_file(tmp_path: Path) -> None:
    lib = _farm(tmp_path, lib_folder("cu12-9.28.0.42"), skip=("libcudnn_ops.so.9", "libcudnn_cnn.so.9",
                                                               "libcudnn_adv.so.9", "libcudnn_ext.so.9"))
    (lib / "libcudnn_ops.so.9").write_bytes(b"")
    (lib / "libcudnn_cnn.so.9").write_text("garbage\n")
    (lib / "libcudnn_adv.so.9").symlink_to(tmp_path / "gone.so")
    (lib / "libcudnn_ext.so.9").symlink_to(lib / "libcudnn_ext.so.9")
    install = _only(find([str(lib)], environ=ENV))
    by_path = {f.path: f.code for f in install.findings}
    assert by_path[str(lib / "libcudnn_ops.so.9")] == "empty-file"
    assert by_path[str(lib / "libcudnn_cnn.so.9")] == "not-elf"
    assert by_path[str(lib / "libcudnn_adv.so.9")] == "broken-symlink"
    assert by_path[str(lib / "libcudnn_ext.so.9")] == "symlink-loop"
    assert (lib / "libcudnn_cnn.so.9").read_text() == "garbage\n"  # nothing the user had is changed


def test_folder_without_cudnn_and_missing_path_are_findings(tmp_path: Path) -> None:
    (tmp_path / "junk.txt").write_text("x")
    inv = find([str(tmp_path), str(tmp_path / "nope")], environ=ENV)
    assert not inv.installs and not inv.healthy
    assert {(f.code, f.path) for f in inv.findings} == {("no-cudnn", str(tmp_path)),
                                                        ("missing-file", str(tmp_path / "nope"))}


def _site_copy(tmp: Path, tag: str, skip: tuple[str, ...] = ()) -> Path:
    """A site folder: the wheel's dist-info copied, its library folder symlinked file by file."""
    source = site_folder(tag)
    for info in source.glob("*.dist-info"):
        shutil.copytree(info, tmp / info.name)
    lib = tmp / "nvidia" / "cudnn" / "lib"
    if not lib.exists():
        _farm(tmp, lib_folder(tag), skip=skip)
    return tmp


def test_pip_distribution_is_found_and_its_record_checked(tmp_path: Path) -> None:
    site = _site_copy(tmp_path, "cu12-9.28.0.42", skip=("libcudnn_cnn.so.9",))
    inv = find(environ=ENV, site_paths=[str(site)], system=False)
    install = _only(inv)
    assert install.found_via == "wheel nvidia-cudnn-cu12 9.28.0.42"
    record = [f for f in install.findings if f.code == "record-missing-file"]
    assert [f.path for f in record] == [str(site / "nvidia/cudnn/lib/libcudnn_cnn.so.9")]


def test_two_distributions_claiming_the_same_files_conflict(tmp_path: Path) -> None:
    site = _site_copy(tmp_path, "cu12-9.28.0.42")
    _site_copy(site, "cu13-9.28.0.42")
    inv = find(environ=ENV, site_paths=[str(site)], system=False)
    conflicts = [f for f in inv.findings if f.code == "record-conflict"]
    assert conflicts and "nvidia-cudnn-cu12 9.28.0.42 and nvidia-cudnn-cu13 9.28.0.42" in conflicts[0].message


@pytest.mark.parametrize(("first", "last"),
                         [("cu12-9.28.0.42", "cu13-9.28.0.42"), ("cu13-9.28.0.42", "cu12-9.28.0.42")])
def test_a_wheel_folder_two_claim_is_held_by_the_one_installed_last_also_when_only_the_folder_is_known(
        tmp_path: Path, first: str, last: str) -> None:
    """A framework's route knows only the folder its search did not reach: its holder is told, as discovery
    tells it from the files it found, by the RECORD sizes the files on disk match, not by the first claimant."""
    from cudnnload.resolve.routes import _holder_of
    from fixtures.scenarios.layouts import install

    site = tmp_path / "site"
    install(site, first)
    install(site, last)
    assert _holder_of(str(site / "nvidia" / "cudnn" / "lib")) == (f"nvidia-cudnn-{last[:4]}", "9.28.0.42")


def test_variables_and_ld_library_path_are_searched_and_labelled(tmp_path: Path) -> None:
    env = {**ENV, "LD_LIBRARY_PATH": str(lib_folder("cu12-9.0.0.312")),
           "CUDNN_PATH": str(site_folder("cu12-8.9.7.29") / "nvidia" / "cudnn")}
    inv = find(environ=env, site_paths=[str(tmp_path)], system=False)
    via = {i.release: i.found_via for i in inv.installs}
    assert via == {Release(9, 0, 0): "LD_LIBRARY_PATH", Release(8, 9, 7): "CUDNN_PATH"}


def test_development_links_are_names_for_the_library_not_unknown_files(tmp_path: Path) -> None:
    lib = _farm(tmp_path, lib_folder("cu12-9.28.0.42"))
    (lib / "libcudnn_ops.so").symlink_to("libcudnn_ops.so.9")  # as apt's libcudnn9-dev installs it
    inv = find([str(lib)], environ=ENV)
    assert not inv.findings and len(_only(inv).files) == 10


def test_a_development_link_given_is_the_library_it_links_to_and_an_unknown_libcudnn_file_is_no_cudnn(
        tmp_path: Path) -> None:
    """`inspect /usr/lib/x86_64-linux-gnu/libcudnn.so` (the unversioned link of a -dev package) said "no cuDNN
    found", exit 0; so did a libcudnn file of no known generation, given alone (a folder of them was an error)."""
    lib = _farm(tmp_path, lib_folder("cu12-9.28.0.42"))
    (lib / "libcudnn.so").symlink_to("libcudnn.so.9")
    install = _only(find([str(lib / "libcudnn.so")], environ=ENV))
    assert install.major == 9 and install.release == Release(9, 28, 0)
    (tmp_path / "libcudnn.so.9.empty").write_bytes(b"")
    inv = find([str(tmp_path / "libcudnn.so.9.empty")], environ=ENV)
    assert not inv.installs and [f.code for f in inv.findings] == ["no-cudnn"] and not inv.healthy


def test_cudnn7_is_one_monolithic_install_with_its_release_from_the_file_name(synthetic_dir: Path) -> None:
    install = _only(find([str(synthetic_dir / "cudnn7")], environ=ENV))
    assert install.major == 7 and install.release == Release(7, 6, 5) and install.plan == ()
    assert [c.library for c in install.files] == ["shim"] and install.healthy


def test_library_for_another_machine_is_foreign(synthetic_dir: Path) -> None:
    install = _only(find([str(synthetic_dir / "bad" / "wrong-machine")], environ=ENV))
    foreign = [f for f in install.findings if f.code == "foreign-elf"]
    assert foreign and "EM_AARCH64" in foreign[0].message


def test_library_needing_a_newer_glibc_than_the_host_is_flagged() -> None:
    old_host = Host("EM_X86_64", (2, 17), None, (3, 4, 30), (1, 3, 13))  # a CentOS 7 glibc
    cand = inspect_file(str(lib_folder("cu12-9.28.0.42") / "libcudnn_graph.so.9"), ElfCache(None))
    too_old = [f for f in file_findings(cand, 9, old_host) if f.code == "glibc-too-old"]
    assert too_old and "needs GLIBC_2.27" in too_old[0].message and "GLIBC_2.17" in too_old[0].message


def test_a_header_of_another_cudnn_does_not_name_this_installs_release(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    stub_library(lib / "libcudnn.so.7", "libcudnn.so.7")  # a v7 shim that says no version
    include = tmp_path / "include"
    include.mkdir()
    header = "#define CUDNN_MAJOR {}\n#define CUDNN_MINOR {}\n#define CUDNN_PATCHLEVEL {}\n"
    (include / "cudnn_version.h").write_text(header.format(9, 14, 0))
    assert _only(find([str(lib)], environ=ENV)).release is None  # a 9.14 header says nothing about cuDNN 7
    (include / "cudnn_version.h").write_text(header.format(7, 6, 5))
    install = _only(find([str(lib)], environ=ENV))
    assert install.release == Release(7, 6, 5) and install.release_source == f"{include}/cudnn_version.h"


def test_a_library_its_openers_release_never_names_gets_no_step(tmp_path: Path) -> None:
    """9.0's graph names no engines_tensor_ir and 9.0's shim no ext (their .rodata): a 9.0 folder beside a 9.28
    one on LD_LIBRARY_PATH is never said to load them from there; 9.28's install plans both."""
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.resolve.discovery import context
    from tests.wheels import lib_folder

    old, new = lib_folder("cu12-9.0.0.312"), lib_folder("cu12-9.28.0.42")
    ctx = context({"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": f"{old}:{new}"})
    nine = judged_install_of(str(old / "libcudnn.so.9"), ctx, "test")
    assert nine is not None and {s.library for s in nine.plan} >= {"ops", "cnn", "adv", "graph", "heuristic"}
    assert not {"engines_tensor_ir", "ext"} & {s.library for s in nine.plan}
    assert not [f for f in nine.findings if f.subject.library in ("engines_tensor_ir", "ext")]
    later = judged_install_of(str(new / "libcudnn.so.9"), context({"PATH": "/usr/bin:/bin"}), "test")
    assert later is not None and {"engines_tensor_ir", "ext"} <= {s.library for s in later.plan}


def test_a_folder_holding_only_a_link_to_a_shim_takes_its_cuda_from_the_graph_the_search_finds(tmp_path: Path) -> None:
    """A folder with only ``libcudnn.so.9`` (a link to a wheel's shim, which carries no CUDA runtime constant):
    its sub-libraries come from where the search finds them, and so does its CUDA major (the graph's
    cudnnGetCudartVersion), so the cuBLASLt its engines dlopen is looked for (fix differential 1-340: it was not,
    and the model missed that it cannot be found)."""
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.resolve.discovery import context
    from tests.wheels import lib_folder

    wheel = lib_folder("cu12-9.28.0.42")
    links = tmp_path / "links"
    links.mkdir()
    (links / "libcudnn.so.9").symlink_to(wheel / "libcudnn.so.9")
    ctx = context({"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": f"{links}:{wheel}"})
    install = judged_install_of(str(links / "libcudnn.so.9"), ctx, "test")
    assert install is not None
    lt = next((s for s in install.dependencies if s.library == "libcublasLt.so.12"), None)
    assert lt is not None and lt.path is None  # the test's wheel folder has no cuBLAS beside it


@pytest.mark.parametrize("tag, name", [("cu12-9.28.0.42", "libcublasLt.so.12"),
                                       ("cu13-9.28.0.42", "libcublasLt.so.13"),
                                       ("cu12-9.0.0.312", "libcublasLt.so.12")])
def test_the_cublaslt_an_engine_library_opens_is_read_from_its_own_bytes(tag: str, name: str,
                                                                          tmp_path: Path) -> None:
    """The name the engines hold, not one told by their RUNPATH: nvidia-cudnn-cu13 9.13.1.26's engines name
    libcublasLt.so.13 with a RUNPATH that has no cu13 entry (``$ORIGIN/../../cublas/lib``), and the model asked
    for libcublasLt.so.12 there (checked by hand on the real wheel, bench/results/2026-12-05-session-50.md). A memo
    answer of another shape is read again."""
    from cudnnload.resolve.discovery import cublaslt_name

    engines = str(lib_folder(tag) / "libcudnn_engines_precompiled.so.9")
    memo = ElfCache(str(tmp_path / "memo.json"))
    assert cublaslt_name(engines, memo) == name
    for key in [k for k in memo._facts if "cublasLt" in k]:
        memo.remember(key, "x")  # a damaged memo
    assert cublaslt_name(engines, memo) == name
    assert cublaslt_name(str(lib_folder(tag) / "libcudnn_graph.so.9")) is None
