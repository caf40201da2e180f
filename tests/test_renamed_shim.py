"""A shim under another major's name: ``ln -s libcudnn.so.9 libcudnn.so.8``, the advice of many a thread for a
program built for cuDNN 8 (CTranslate2 before 4.5, faster-whisper) on a machine with cuDNN 9.

cuDNN's exports are bound to a version node named after the SONAME (``cudnnGetVersion@@libcudnn.so.8``,
reference/cudnn-facts.md), so a program linked against cuDNN 8 that gets the 9 shim under 8's name does not start:
ld.so prints "version `libcudnn.so.8' not found (required by PROGRAM)". The install is cuDNN 9 (its shim opens 9's
sub-libraries), what asks for the name gets it, and the link is what is wrong. Each prediction is held against the
real loader running the real program.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.diagnose.explain import explain
from cudnnload.resolve.discovery import context, install_of
from tests.stubs import linked_to_shim, stub_library
from tests.wheels import lib_folder

NINE, EIGHT = "cu12-9.28.0.42", "cu12-8.9.7.29"
APP = '#include <stdio.h>\nsize_t cudnnGetVersion(void);\nint main(void) { printf("%zu\\n", cudnnGetVersion()); ' \
      'return 0; }\n'


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(a program linked against cuDNN 8.9.7's shim, a folder of cuDNN 9.28's files with libcudnn.so.8 -> the 9
    shim)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the program linked against cuDNN 8")
    source, app = tmp_path / "app.c", tmp_path / "app"
    source.write_text(APP)
    subprocess.run(["gcc", str(source), "-o", str(app), f"-L{lib_folder(EIGHT)}", "-l:libcudnn.so.8",
                    "-Wl,--allow-shlib-undefined"], check=True)
    folder = tmp_path / "lib"
    folder.mkdir()
    for library in lib_folder(NINE).glob("libcudnn*.so.9"):
        (folder / library.name).symlink_to(library)
    (folder / "libcudnn.so.8").symlink_to("libcudnn.so.9")
    return app, folder


def _doctor(*args: str, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", *args], capture_output=True,
                          text=True, env={**os.environ, "CUDNNLOAD_NO_CACHE": "1", **env}, timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def _errors(report: dict) -> list[dict]:
    return [f for f in report["result"]["findings"] if f["severity"] == "error" and f["code"] != "repair"]


def test_the_install_is_the_major_its_shim_says_with_that_majors_sub_libraries(layout: tuple[Path, Path]) -> None:
    _, folder = layout
    install = install_of(str(folder / "libcudnn.so.8"), context({}), "test")
    assert install is not None and install.major == 9 and str(install.release) == "9.28.0"
    assert install.file("shim").path == str(folder / "libcudnn.so.8")
    assert all(step.path for step in install.plan if step.library in ("graph", "ops", "cnn", "adv")), install.plan


def test_a_program_linked_against_cudnn_8_is_said_not_to_start_as_the_real_loader_says(
        layout: tuple[Path, Path]) -> None:
    app, folder = layout
    real = subprocess.run([str(app)], capture_output=True, text=True, env={"LD_LIBRARY_PATH": str(folder)},
                          check=False)
    assert real.returncode != 0, real

    for report in (_doctor(str(app), "--env", f"LD_LIBRARY_PATH={folder}", env={}),
                   _doctor("--", str(app), env={"LD_LIBRARY_PATH": str(folder)})):
        first = _errors(report)[0]
        assert first["code"] == "consumer-needs-other-major", first
        assert "cuDNN 9.28.0's shim" in first["message"] and "does not start" in first["message"]
        said = first["consequences"][0]["message"]
        assert said == real.stderr.strip(), (said, real.stderr)  # ld.so's own words
        assert first["fix"]["actions"][0] == {**first["fix"]["actions"][0], "do": "delete",
                                              "path": str(folder / "libcudnn.so.8")}
    # the same words pasted into explain, from another machine: the file under cuDNN 8's name is another major's
    explained = explain(real.stderr, environ={})
    # "confident" once 3 tuning reports prove the rule (`ranking.proven`), "likely" before
    assert explained.causes[0].family == "wrong-cudnn-major" and explained.causes[0].confidence in ("confident",
                                                                                                   "likely")
    assert explain("./app: /lib64/libc.so.6: version `GLIBC_2.34' not found (required by ./app)",
                   environ={}).causes[0].family == "glibc-or-libstdcxx-too-old"


def test_the_link_deleted_and_cudnn_8_where_the_program_looks_it_runs(layout: tuple[Path, Path]) -> None:
    app, folder = layout
    (folder / "libcudnn.so.8").unlink()  # the finding's action
    gone = subprocess.run([str(app)], capture_output=True, text=True, env={"LD_LIBRARY_PATH": str(folder)},
                          check=False)
    assert "libcudnn.so.8: cannot open shared object file" in gone.stderr
    # its note: cuDNN 8 where the program looks
    works = subprocess.run([str(app)], capture_output=True, text=True, check=False,
                           env={"LD_LIBRARY_PATH": f"{folder}:{lib_folder(EIGHT)}"})
    assert works.returncode == 0 and works.stdout.strip() == "8907", works


def test_a_dlopen_by_name_is_told_it_gets_cudnn_9_and_the_link_is_what_is_wrong(layout: tuple[Path, Path]) -> None:
    _, folder = layout
    report = _doctor("libcudnn.so.8", "--env", f"LD_LIBRARY_PATH={folder}", env={})
    renamed = [f for f in _errors(report) if f["code"] == "soname-mismatch"]
    assert renamed and "under cuDNN 8's name" in renamed[0]["message"], report["result"]["findings"]
    assert renamed[0]["fix"]["actions"][0]["do"] == "delete"
    codes = {f["code"] for f in report["result"]["findings"]}
    assert not codes & {"missing-sublibrary", "origin-through-symlink"}, codes


def test_another_library_under_the_shims_name_is_said_to_be_no_cudnn(tmp_path: Path) -> None:
    """cp libz.so.1 libcudnn.so.9 (or a build's stub): the probe's calls were all 'absent', and the handle was
    reported made ("cudnnCreate succeeded") and the version checks passed; every sub-library was said missing with
    cuDNN's own messages, which a file that is no cuDNN never prints."""
    folder = tmp_path / "lib"
    folder.mkdir()
    stub_library(folder / "libcudnn.so.9", "libother.so.1", "int other_library_function(void) { return 1; }\n")
    real = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1]).cudnnGetVersion",
                           str(folder / "libcudnn.so.9")], capture_output=True, text=True, check=False)
    assert "undefined symbol: cudnnGetVersion" in real.stderr, real.stderr

    report = _doctor(str(folder), env={})
    first = _errors(report)[0]
    assert first["code"] == "soname-mismatch" and first["message"].startswith("not cuDNN: its SONAME is libother.so.1")
    checks = {check["name"]: check for check in report["result"]["checks"]}
    assert checks["probe"]["status"] == "fail" and checks["handle"]["status"] == "fail", checks
    codes = [f["code"] for f in report["result"]["findings"]]
    assert not {"missing-sublibrary", "sublibrary-unloadable", "prediction-disagrees"} & set(codes), codes
    assert not any("passes its version checks" in f["message"] for f in report["result"]["findings"])


def test_sub_libraries_of_cudnn_9_under_cudnn_8s_names_are_strays_of_the_8_shims_install(tmp_path: Path) -> None:
    """The other half of the advice (``ln -s libcudnn_ops.so.9 libcudnn_ops_infer.so.8`` and so on, beside cuDNN
    8.9.7's shim): the install is the shim's release, 8.9.7 (its shim carries no version constant; six 9.28 files
    outvoted it, and doctor said "loads cuDNN 9.28.0", "coherent"), and each 9.28 file is a stray of another
    release that the shim cannot use."""
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "libcudnn.so.8").symlink_to(lib_folder(EIGHT) / "libcudnn.so.8")
    for key, nine in (("ops", "ops"), ("cnn", "cnn"), ("adv", "adv")):
        for half in ("infer", "train"):
            (folder / f"libcudnn_{key}_{half}.so.8").symlink_to(lib_folder(NINE) / f"libcudnn_{nine}.so.9")
    install = install_of(str(folder / "libcudnn.so.8"), context({}), "test")
    assert install is not None and install.major == 8 and str(install.release) == "8.9.7"
    report = _doctor(str(folder / "libcudnn.so.8"), env={})
    mixed = {os.path.basename(f["subject"]["path"]) for f in _errors(report) if f["code"] == "mixed-release"}
    # (9's cnn carries no version constant: its release is not read off it)
    assert mixed >= {f"libcudnn_{key}_{half}.so.8" for key in ("ops", "adv") for half in ("infer", "train")}, mixed
    assert report["result"]["release"] == "8.9.7"


def test_a_shim_opened_by_path_that_lacks_the_version_a_library_then_needs_heads_doctors_report(
        tmp_path: Path) -> None:
    """The wheel's shim a copy of its ops (the H200, session 43, breakage shim-is-ops): torch's preload opens it by
    path, then libtorch_python.so's NEEDED binds to that object, which does not define the version libcudnn.so.9,
    and the import stops ("version `libcudnn.so.9' not found (required by ...)"). `doctor -- PROGRAM` heads its
    report with that (it said the shim's release did not fit its graph's), with the loader's own words. A library
    linked against the real shim stands for libtorch_python.so."""
    folder = tmp_path / "lib"
    folder.mkdir()
    for library in lib_folder(NINE).glob("libcudnn*.so.9"):
        os.link(library, folder / library.name)
    caller = linked_to_shim(tmp_path / "libcaller.so", folder)
    (folder / "libcudnn.so.9").unlink()
    os.link(lib_folder(NINE) / "libcudnn_ops.so.9", folder / "libcudnn.so.9")
    program = tmp_path / "program.py"
    program.write_text(f"import ctypes\nctypes.CDLL({str(folder / 'libcudnn.so.9')!r})\nctypes.CDLL({str(caller)!r})\n")
    real = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, check=False)
    said = f"{folder / 'libcudnn.so.9'}: version `libcudnn.so.9' not found (required by {caller})"
    assert said in real.stderr, real.stderr

    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--", sys.executable, str(program)],
                          capture_output=True, text=True, env={**os.environ, "CUDNNLOAD_NO_CACHE": "1"}, timeout=300,
                          check=False)
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("cudnnload doctor -- "))
    headline = lines[start + 1]
    assert done.returncode == 1 and "does not define that version" in headline and "libcaller.so" in headline, \
        done.stdout
    report = _doctor("--", sys.executable, str(program), env={})
    first = _errors(report)[0]
    assert first["code"] == "dependency-version" and first["consequences"][0]["message"] in real.stderr, first


def test_a_shim_a_wheel_bundles_under_auditwheels_name_is_inspected_as_the_shim_it_is(tmp_path: Path) -> None:
    """CTranslate2's wheels (4.4.0: ctranslate2.libs/libcudnn-463fd6d5.so.8.9.7, 4.5.0: libcudnn-74a4c495.so.9.1.0,
    resolve/surveyed.py) bundle cuDNN's shim alone under auditwheel's name, its SONAME that name too. `inspect` of
    that folder said "no cuDNN found" and the file "of no known cuDNN generation"; it is the shim of its release,
    whose SONAME is auditwheel's by design, and which opens its sub-libraries by name, never from its own folder."""
    folder = tmp_path / "ctranslate2.libs"
    folder.mkdir()
    name = "libcudnn-74a4c495.so.9.28.0"
    stub_library(folder / name, name, "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 92800; }\n")
    run = subprocess.run([sys.executable, "-m", "cudnnload", "inspect", "--json", str(folder)], capture_output=True,
                         text=True, check=False, env={**os.environ, "LD_LIBRARY_PATH": ""})
    result = json.loads(run.stdout)["result"]
    assert not result["findings"] and not result["unknown"], result
    (install,) = result["installs"]
    assert (install["major"], install["release"]) == (9, "9.28.0")
    codes = {f["code"] for f in install["findings"]}
    assert "soname-mismatch" not in codes and "missing-sublibrary" in codes, codes
    missing = [f for f in install["findings"] if f["code"] == "missing-sublibrary"]
    assert all("LD_LIBRARY_PATH" in f["fix"]["actions"][0]["text"] and "put back" not in f["fix"]["actions"][0]["text"]
               for f in missing)
