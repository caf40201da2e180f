"""Installed frameworks judged from the framework survey (`survey.cudnn_load`, `routes.route`, `judge.routes.serve`).

Real wheels where the test cache has them or pip can fetch them (onnxruntime-gpu 1.22.0, whose CUDA provider NEEDs
cuDNN; 1.31.1, whose provider has no cuDNN NEEDED and opens it by name on first use; ctranslate2 4.8.5, which uses no
cuDNN on Linux), unpacked once under ``<test cache>/frameworks``, never in the repository; else layouts built from
the survey's rows (a dist-info and the nvidia wheel's files where the row's loader looks).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudnnload.codes import Code, SubjectKind
from cudnnload.diagnose.inventory import judged_install_of
from cudnnload.judge.routes import serve
from cudnnload.resolve.consumers import Consumer, find_consumers
from cudnnload.resolve.discovery import context
from cudnnload.resolve.routes import consumer_load, route
from cudnnload.resolve.survey import cudnn_load, nearest, surveyed
from cudnnload.verdicts import ERROR, WARNING
from fixtures.scenarios.fixes import Folder, apply
from tests.wheels import cache_root, lib_folder

BASE = {key: value for key, value in os.environ.items() if key not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
NO_CACHE = {**BASE, "CUDNNLOAD_NO_CACHE": "1"}
CU13 = "cu13-9.28.0.42"


def real_site(distribution: str, version: str) -> Path:
    """The real wheel unpacked as pip lays it out (its .dist-info with METADATA, RECORD and WHEEL): from the test
    cache, fetched there with ``pip download`` when absent; the test skips when it cannot be had."""
    folder = cache_root() / "frameworks"
    site = folder / "unpacked" / f"{distribution}-{version}"
    if (site / ".unpacked").exists():
        return site
    stem = f"{distribution.replace('-', '_')}-{version}-"
    wheel = next(iter(sorted(folder.glob(f"{stem}*.whl"))), None)
    if wheel is None:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                        "--platform", "manylinux2014_x86_64", "--python-version", "3.12", "-d", str(folder),
                        f"{distribution}=={version}"], capture_output=True, timeout=600, check=False)
        wheel = next(iter(sorted(folder.glob(f"{stem}*.whl"))), None)
    if wheel is None:
        pytest.skip(f"{distribution} {version}: no wheel in {folder} and pip could not fetch one")
    shutil.rmtree(site, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    (site / ".unpacked").write_text(wheel.name)
    return site


def install(site: Path, name: str, version: str, requires: tuple[str, ...] = (), *, metadata: bool = True,
            tag: str = "py3-none-manylinux_2_28_x86_64", files: dict[str, str] | None = None) -> None:
    """A distribution as pip leaves it: ``files`` (site-relative path: text) and its .dist-info (METADATA, WHEEL,
    RECORD listing them); ``metadata`` False: a broken one."""
    for relative, text in (files or {}).items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(text)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    if metadata:
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                       + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n")
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in [*(files or {}), f"{info.name}/RECORD"]))


def with_cudnn(site: Path) -> Path:
    """``site`` with the real cu13 9.28 wheel's libraries linked under nvidia/cudnn/lib."""
    target = site / "nvidia" / "cudnn" / "lib"
    target.mkdir(parents=True)
    for path in lib_folder(CU13).iterdir():
        (target / path.name).symlink_to(path)
    return target


def only(distribution: str, site: Path) -> Consumer:
    (found,) = [c for c in find_consumers([str(site)], environ=NO_CACHE, run=False) if c.distribution == distribution]
    return found


# --- the survey read as loaders -------------------------------------------------------------------------------

def test_each_surveyed_linux_release_has_the_loader_kind_its_wheel_shows() -> None:
    """The kind is derived from each row, never listed: the releases the issue names fall where measured."""
    def kind(distribution: str, version: str, *beside: str) -> str:
        rows = [m.wheel for name in (distribution, *beside) if (m := nearest(name, version)) is not None]
        return cudnn_load(rows).kind

    assert kind("torch", "2.14.1") == "by-path"
    assert kind("jax-cuda13-plugin", "0.12.0.1", "jax-cuda13-pjrt") == "by-path"
    assert kind("onnxruntime-gpu", "1.22.0") == "needed"
    assert [kind("onnxruntime-gpu", v) for v in ("1.28.0", "1.31.1")] == ["by-name", "by-name"]
    assert kind("ctranslate2", "4.5.0") == "bundled"
    assert [kind("ctranslate2", v) for v in ("4.6.3", "4.7.2", "4.8.5")] == ["none"] * 3
    assert kind("tensorflow", "2.21.0") == "by-name"
    assert kind("transformer-engine-cu13", "2.20.2") == "needed"
    assert kind("nvidia-cudnn-frontend", "1.32.0") == "by-path"
    assert kind("onnxruntime", "1.31.1") == "none"  # the CPU package
    assert all(cudnn_load([row]).kind for row in surveyed() if row.system == "linux")


# --- real wheels ----------------------------------------------------------------------------------------------

def test_onnxruntime_1_31_loads_cudnn_lazily_by_name_from_its_cuda_provider(tmp_path: Path) -> None:
    site = real_site("onnxruntime-gpu", "1.31.1")
    ort = only("onnxruntime-gpu", site)
    # its CUDA provider NEEDs no cuDNN; the TensorRT provider does, and is not the library that calls cuDNN
    assert [os.path.basename(n.path) for n in ort.needs] == ["libonnxruntime_providers_tensorrt.so"]
    got = route(ort, context({**BASE, "LD_LIBRARY_PATH": str(lib_folder(CU13))}), [str(site)])
    assert (got.kind, got.lazy, got.judged_by) == ("by-name", True, "")
    assert got.shim == str(lib_folder(CU13) / "libcudnn.so.9")
    assert got.how.startswith("libonnxruntime_providers_cuda.so dlopens libcudnn.so.9 by name when it first needs "
                              "cuDNN: found via ld-library-path")


def about_cudnn(findings: object) -> list[object]:
    """The findings about the cuDNN a framework gets, not about the other CUDA libraries its objects NEED (a bare
    site made of one real wheel has none of them: `Consumer.unmet`)."""
    return [f for f in findings if " cannot load " not in f.message]  # type: ignore[attr-defined]


def test_a_lazy_loader_that_finds_no_cudnn_is_a_warning_of_its_first_use_not_an_error(tmp_path: Path) -> None:
    site = real_site("onnxruntime-gpu", "1.31.1")
    ctx = context({**BASE, "LD_LIBRARY_PATH": str(tmp_path)})
    got = route(only("onnxruntime-gpu", site), ctx, [str(site)])
    if got.shim is not None:
        pytest.skip(f"this machine's linker finds a cuDNN for it: {got.shim}")
    served = serve(got, None, ctx, gpu=False, device_count=0, environ=BASE, python=None)
    (finding,) = about_cudnn(served.findings)
    assert (finding.code, finding.severity) == (Code.CONSUMER_BROKEN, WARNING)
    # the CUDA libraries its provider NEEDs, absent from this bare site, fail it at first use too: warnings
    assert {f.severity for f in served.findings} == {WARNING}
    assert "finds no cuDNN when it first uses cuDNN (it starts without one)" in finding.message


def test_a_lazy_loader_is_answered_by_the_cudnn_the_process_already_maps(tmp_path: Path) -> None:
    site = real_site("onnxruntime-gpu", "1.31.1")
    shim = str(lib_folder(CU13) / "libcudnn.so.9")
    got = route(only("onnxruntime-gpu", site), context({**BASE, "LD_PRELOAD": shim}), [str(site)])
    assert (got.shim, got.kind) == (shim, "by-name")
    assert "found via already-loaded" in got.how


def test_onnxruntime_1_22s_cuda_provider_needs_cudnn_and_finding_none_is_an_error(tmp_path: Path) -> None:
    site = real_site("onnxruntime-gpu", "1.22.0")
    ort = only("onnxruntime-gpu", site)
    assert [n.soname for n in ort.needs] == ["libcudnn.so.9", "libcudnn.so.9"]  # CUDA and TensorRT providers
    ctx = context({**BASE, "LD_LIBRARY_PATH": str(tmp_path)})
    got = route(ort, ctx, [str(site)])
    assert got.kind == "needed" and got.how.startswith("libonnxruntime_providers_cuda.so NEEDs libcudnn.so.9")
    if got.shim is not None:
        pytest.skip(f"this machine's linker finds a cuDNN for it: {got.shim}")
    served = serve(got, None, ctx, gpu=False, device_count=0, environ=BASE, python=None)
    assert [(f.code, f.severity) for f in about_cudnn(served.findings)] == [(Code.CONSUMER_BROKEN, ERROR)]


def test_ctranslate2_4_8_uses_no_cudnn_and_is_not_judged_as_needing_one(tmp_path: Path) -> None:
    site = real_site("ctranslate2", "4.8.5")
    ct2 = only("ctranslate2", site)
    got = route(ct2, context(BASE), [str(site)])
    assert (got.kind, got.uses_cudnn, got.shim) == ("none", False, None)
    served = serve(got, None, context(BASE), gpu=False, device_count=0, environ=BASE, python=None)
    assert served.findings == () and served.works
    assert served.summary.startswith("ctranslate2 4.8.5 uses no cuDNN")


def test_doctor_on_ctranslate2_alone_says_it_uses_no_cudnn_and_asks_for_none(tmp_path: Path) -> None:
    from cudnnload.diagnose.doctor import doctor

    site = real_site("ctranslate2", "4.8.5")
    report = doctor({**NO_CACHE, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}, site_paths=[str(site)], timeout=30)
    check = next(c for c in report.checks if c.name == "ctranslate2")
    assert check.status == "info" and "uses no cuDNN" in check.summary
    assert not [f for f in report.findings if f.code in (Code.NO_CUDNN, Code.CONSUMER_BROKEN)]


def _ctranslate2_beside_cudnn_9(tmp_path: Path, version: str) -> tuple[Path, Path, Consumer]:
    """The real ctranslate2 ``version`` wheel with the real cu12 9.28 cuDNN wheel and the cuBLAS it needs beside it
    in one site (a faster-whisper venv whose torch brought cuDNN 9; CTranslate2 4 is built with CUDA 12)."""
    site = tmp_path / "site"
    for entry in real_site("ctranslate2", version).iterdir():
        (site / entry.name).parent.mkdir(parents=True, exist_ok=True)
        (site / entry.name).symlink_to(entry)
    for tag, name in (("cu12-9.28.0.42", "cudnn"), ("cublas-cu12-12.9.1.4", "cublas")):
        (site / "nvidia" / name / "lib").mkdir(parents=True)
        for path in lib_folder(tag).iterdir():
            (site / "nvidia" / name / "lib" / path.name).symlink_to(path)
    return site, site / "nvidia" / "cudnn" / "lib", only("ctranslate2", site)


BUNDLED_PROGRAM = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
print("version", lib.cudnnGetVersion(), flush=True)
"""


def test_ctranslate2_4_5s_bundled_shim_is_found_through_its_extension_s_rpath_and_given_the_wheel_s_folder(
        tmp_path: Path) -> None:
    """CTranslate2 4.5 bundles cuDNN 9.1's shim alone (auditwheel's ``libcudnn-74a4c495.so.9.1.0``), NEEDed by
    libctranslate2, which has no RPATH: it is found through the RPATH of ``_ext``, the module that NEEDs it
    (before: "finds no cuDNN"). The shim opens its sub-libraries by name, never from the cuDNN wheel beside it:
    the first call aborts ("Invalid handle. Cannot load symbol cudnnGetVersion", as faster-whisper users see
    it). The fix puts that wheel's folder on LD_LIBRARY_PATH; the model then finds the calls pass, and so does
    the real bundled shim, run before and after."""
    site, folder, ct2 = _ctranslate2_beside_cudnn_9(tmp_path, "4.5.0")
    assert [n.major for n in ct2.needs] == [9] and ct2.cudnn_major == 9
    env = {**BASE, "LD_LIBRARY_PATH": str(tmp_path / "empty")}
    got = route(ct2, context(env), [str(site)])
    bundled = site / "ctranslate2.libs" / "libcudnn-74a4c495.so.9.1.0"
    assert (got.kind, os.path.realpath(got.shim or ""), got.beside) == ("bundled", os.path.realpath(bundled),
                                                                       str(folder))
    install = judged_install_of(got.shim or "", context(env), "ctranslate2's loader")
    assert install is not None and (install.major, str(install.release)) == (9, "9.1.0")
    served = serve(got, install, context(env), gpu=False, device_count=0, environ=env, python=None)
    (finding,) = [f for f in about_cudnn(served.findings) if f.severity is ERROR]
    assert finding.code is Code.FRAMEWORK_CALLS_FAIL and "Invalid handle. Cannot load symbol cudnnGetVersion" in \
        finding.message
    action = finding.fix.actions[0]
    assert (action.variable, action.value) == ("LD_LIBRARY_PATH", f"{folder}:{tmp_path / 'empty'}")
    fixed = {**env, "LD_LIBRARY_PATH": action.value or ""}
    again = judged_install_of(got.shim or "", context(fixed), "ctranslate2's loader")
    assert not [f for f in about_cudnn(serve(route(ct2, context(fixed), [str(site)]), again, context(fixed),
                                             gpu=False, device_count=0, environ=fixed, python=None).findings)
                if f.severity is ERROR]
    before = subprocess.run([sys.executable, "-c", BUNDLED_PROGRAM, str(bundled)], capture_output=True, text=True,
                            env=env, timeout=60, check=False)
    after = subprocess.run([sys.executable, "-c", BUNDLED_PROGRAM, str(bundled)], capture_output=True, text=True,
                           env=fixed, timeout=60, check=False)
    assert before.returncode != 0 and "Invalid handle. Cannot load symbol cudnnGetVersion" in before.stderr
    assert after.returncode == 0 and after.stdout.startswith("version 92800"), after.stderr


def test_ctranslate2_4_4s_bundled_cudnn_8_shim_beside_cudnn_9_is_said_with_both_ways_out(tmp_path: Path) -> None:
    """CTranslate2 4.4 bundles cuDNN 8.9.7's shim; beside torch's cuDNN 9 nothing holds its
    libcudnn_ops_infer.so.8 ("Could not load library libcudnn_ops_infer.so.8", the most reported faster-whisper
    failure). Nothing on the machine is a change the model can prove: the fix says, in words, cuDNN 8 installed
    where the bundled shim looks, or the release of CTranslate2 the survey shows built for cuDNN 9 (4.5.0); never
    a cuDNN 8.9.7 to be "put back" in the folder that bundles the shim alone."""
    site, _, ct2 = _ctranslate2_beside_cudnn_9(tmp_path, "4.4.0")
    assert ct2.cudnn_major == 8
    env = {**BASE, "LD_LIBRARY_PATH": str(tmp_path / "empty")}
    got = route(ct2, context(env), [str(site)])
    assert got.kind == "bundled" and got.beside is None and got.shim is not None
    install = judged_install_of(got.shim, context(env), "ctranslate2's loader")
    served = serve(got, install, context(env), gpu=False, device_count=0, environ=env, python=None)
    (finding,) = [f for f in about_cudnn(served.findings) if f.severity is ERROR]
    assert "Could not load library libcudnn_ops_infer.so.8" in finding.message
    (action,) = finding.fix.actions
    assert action.do.value == "manual" and "put back" not in (action.text or "")
    assert "--target DIR" in (action.text or "") and "ctranslate2 4.5.0 (cuDNN 9)" in (action.text or "")


def test_a_bundled_shim_whose_release_has_no_wheel_for_its_cuda_is_told_so_not_given_a_pip_install_that_fails(
        tmp_path: Path) -> None:
    """The bundled-shim fix named ``nvidia-cudnn-cuNN==RELEASE.*`` without asking whether PyPI has one: for cuDNN
    8.9.7 built with CUDA 11 it has none (nvidia-cudnn-cu11 stops at 8.9.6), and pip would end in "No matching
    distribution found". It now says so, and where that release's sub-libraries are (NVIDIA's archive for that
    CUDA); with CUDA 12, whose 8.9.7 wheel exists, it stays the install it was."""
    from cudnnload.judge.fixes import bundled_sublibraries

    site, _, ct2 = _ctranslate2_beside_cudnn_9(tmp_path, "4.4.0")
    env = {**BASE, "HOME": str(tmp_path / "home"), "LD_LIBRARY_PATH": str(tmp_path / "empty")}
    got = route(ct2, context(env), [str(site)])
    assert got.shim is not None
    install = judged_install_of(got.shim, context(env), "ctranslate2's loader")
    home = str(tmp_path / "home")
    (words,) = bundled_sublibraries(install, python="/v/bin/python", cuda=11, home=home).actions
    assert words.do.value == "manual" and "no pip wheel of cuDNN 8.9.7 for CUDA 11" in (words.text or "")
    assert "_cuda11-archive.tar.xz" in (words.text or "") and "pip install" not in (words.text or "")
    put, _ = bundled_sublibraries(install, python="/v/bin/python", cuda=12, home=home).actions
    assert put.requirements == ("nvidia-cudnn-cu12==8.9.7.*",)


CHECKED_PROGRAM = BUNDLED_PROGRAM + """
for name in ("cudnnOpsInferVersionCheck", "cudnnCnnInferVersionCheck", "cudnnAdvInferVersionCheck"):
    print(name, getattr(lib, name)(), flush=True)
"""


def test_ctranslate2_4_4s_bundled_cudnn_8_shim_gets_its_release_where_it_looks_and_then_works(tmp_path: Path) -> None:
    """The same layout, asked with the environment's interpreter and a home folder: the fix is actions, not words.
    libctranslate2 names libcublas.so.12 (built with CUDA 12), so the cu12 8.9.7 wheel, with the cuBLAS and NVRTC it
    requires, goes into ``~/.local/lib/nvidia-cudnn-8.9.7`` (faster-whisper's README recipe, in a folder of its own)
    and its folders first on LD_LIBRARY_PATH. Applied as pip does it, the model finds ctranslate2's calls pass, and
    the real bundled shim, which aborted before, passes its three version checks."""
    site, _, ct2 = _ctranslate2_beside_cudnn_9(tmp_path, "4.4.0")
    home = tmp_path / "home"
    env = {**BASE, "HOME": str(home), "LD_LIBRARY_PATH": str(tmp_path / "empty")}
    got = route(ct2, context(env), [str(site)])
    assert got.kind == "bundled" and got.shim is not None
    install = judged_install_of(got.shim, context(env), "ctranslate2's loader")
    served = serve(got, install, context(env), gpu=False, device_count=0, environ=env, python="/v/bin/python")
    (finding,) = [f for f in about_cudnn(served.findings) if f.severity is ERROR]
    put, setting = finding.fix.actions
    folder = home / ".local" / "lib" / "nvidia-cudnn-8.9.7"
    assert (put.requirements, put.target, put.python) == (("nvidia-cudnn-cu12==8.9.7.*",), str(folder), "/v/bin/python")
    libs = [str(folder / "nvidia" / name / "lib") for name in ("cudnn", "cublas", "cuda_nvrtc")]
    assert (setting.variable, (setting.value or "").split(":")) == ("LD_LIBRARY_PATH", [*libs, str(tmp_path / "empty")])
    done = apply([a.json() for a in finding.fix.actions], Folder(tmp_path), [], env)
    assert not done.refused and not done.manual, (done.refused, done.manual)
    fixed = done.env
    again = judged_install_of(got.shim, context(fixed), "ctranslate2's loader")
    assert not [f for f in about_cudnn(serve(route(ct2, context(fixed), [str(site)]), again, context(fixed),
                                             gpu=False, device_count=0, environ=fixed, python=None).findings)
                if f.severity is ERROR]
    before = subprocess.run([sys.executable, "-c", CHECKED_PROGRAM, got.shim], capture_output=True, text=True,
                            env=env, timeout=60, check=False)
    after = subprocess.run([sys.executable, "-c", CHECKED_PROGRAM, got.shim], capture_output=True, text=True,
                           env=fixed, timeout=60, check=False)
    assert before.returncode != 0 and "libcudnn_ops_infer.so.8" in before.stderr
    assert after.returncode == 0, after.stderr
    assert after.stdout.split() == ["version", "8907", "cudnnOpsInferVersionCheck", "0", "cudnnCnnInferVersionCheck",
                                    "0", "cudnnAdvInferVersionCheck", "0"]


def test_a_lazy_loader_that_misses_the_wheels_cudnn_is_given_its_folder_or_the_packages_preload(
        tmp_path: Path) -> None:
    """ONNX Runtime 1.31's CUDA provider has no RPATH: the nvidia-cudnn wheel beside it is not searched. The fix
    puts that folder on LD_LIBRARY_PATH (proven with the linker model), or calls ``onnxruntime.preload_dlls()``,
    the surveyed loader only a program runs."""
    site = tmp_path / "site"
    for entry in real_site("onnxruntime-gpu", "1.31.1").iterdir():
        (site / entry.name).parent.mkdir(parents=True, exist_ok=True)
        (site / entry.name).symlink_to(entry)
    folder = with_cudnn(site)
    env = {**BASE, "LD_LIBRARY_PATH": str(tmp_path / "empty")}
    ort = only("onnxruntime-gpu", site)
    got = route(ort, context(env), [str(site)])
    if got.shim is not None:
        pytest.skip(f"this machine's linker finds a cuDNN for it: {got.shim}")
    assert got.unsearched == str(folder)
    (finding,) = about_cudnn(serve(got, None, context(env), gpu=False, device_count=0, environ=env,
                                   python=None).findings)
    action = finding.fix.actions[0]
    assert (action.variable, action.value) == ("LD_LIBRARY_PATH", f"{folder}:{tmp_path / 'empty'}")
    assert [a.text for a in finding.fix.alternatives] == ["call onnxruntime.preload_dlls() in the program before its "
                                                          "first use of cuDNN"]
    fixed = route(ort, context({**env, "LD_LIBRARY_PATH": action.value or ""}), [str(site)])
    assert fixed.shim == str(folder / "libcudnn.so.9") and "found via ld-library-path" in fixed.how


# --- layouts built from the survey's rows ---------------------------------------------------------------------

def test_a_release_not_surveyed_is_judged_by_the_nearest_and_says_so(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "onnxruntime-gpu", "1.31.2", ('nvidia-cudnn-cu13~=9.0; extra == "cudnn"',))  # as 1.31.1 pins
    ort = only("onnxruntime-gpu", site)
    match, load = consumer_load(ort)
    assert match is not None and load is not None and (match.wheel.version, match.exact) == ("1.31.1", False)
    got = route(ort, context({**BASE, "LD_LIBRARY_PATH": str(lib_folder(CU13))}), [str(site)])
    assert got.judged_by == "judged by the loader of onnxruntime-gpu 1.31.1, the nearest surveyed"
    served = serve(got, None, context(BASE), gpu=False, device_count=0, environ=BASE, python=None)
    assert served.summary.endswith("; judged by the loader of onnxruntime-gpu 1.31.1, the nearest surveyed)")


def test_the_jax_plugin_is_judged_by_the_loader_of_the_pjrt_wheel_it_requires(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "jax-cuda13-plugin", "0.12.0.1", ("jax-cuda13-pjrt==0.12.0.1", 'nvidia-cudnn-cu13<10.0,>=9.12.0.46; '
                                                    'sys_platform == "linux" and extra == "with-cuda"'))
    install(site, "jax-cuda13-pjrt", "0.12.0.1")
    with_cudnn(site)
    (jax,) = find_consumers([str(site)], environ=NO_CACHE, run=False)  # the PJRT wheel is judged with the plugin
    assert (jax.distribution, jax.beside) == ("jax-cuda13-plugin", (("jax-cuda13-pjrt", "0.12.0.1"),))
    got = route(jax, context(BASE), [str(site)])
    assert got.shim == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert "_load_nvidia_libraries()" in got.how and got.kind == "by-path"


def test_cudnn_frontends_loader_by_path_is_read_from_its_globs(tmp_path: Path) -> None:
    """No replay written for it: the globs its surveyed ``_dlopen_cudnn()`` holds, tried on sys.path in order."""
    site = tmp_path / "site"
    install(site, "nvidia-cudnn-frontend", "1.32.0")
    with_cudnn(site)
    got = route(only("nvidia-cudnn-frontend", site), context(BASE), [str(tmp_path / "none"), str(site)])
    assert got.shim == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert got.how == ("by path: cudnn/__init__.py _dlopen_cudnn() opens the first nvidia/cudnn/lib/libcudnn.so.*[0-9] "
                       "on sys.path")


@pytest.mark.parametrize(("broken", "said"), [
    ({"metadata": False}, "ctranslate2-4.5.0.dist-info has no METADATA"),
    ({"tag": "cp312-cp312-win_amd64"}, "its wheel is for win_amd64"),
])
def test_an_installed_but_broken_framework_is_a_finding_naming_it(tmp_path: Path, broken: dict[str, object],
                                                                   said: str) -> None:
    site = tmp_path / "site"
    install(site, "ctranslate2", "4.5.0", **broken)  # type: ignore[arg-type]
    ct2 = only("ctranslate2", site)
    assert ct2.broken is not None and said in ct2.broken
    served = serve(route(ct2, context(BASE), [str(site)]), None, context(BASE), gpu=False, device_count=0,
                   environ=BASE, python=None)
    finding = served.findings[0]  # then what its route finds (here: no cuDNN)
    assert (finding.code, finding.subject.kind, finding.subject.name) == (Code.CONSUMER_BROKEN, SubjectKind.CONSUMER,
                                                                          "ctranslate2 4.5.0")
    assert said in finding.message and "--force-reinstall" in finding.fix.actions[0].options


def test_a_framework_whose_own_import_fails_is_a_finding_naming_it_with_the_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "jax-cuda12-plugin", "0.6.2", ('nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"',),
            files={"jax_cuda12_plugin/__init__.py": "", "jax_cuda12_plugin/_versions.py": "import jax_gone_missing\n"})
    (jax,) = find_consumers([str(site)], environ=NO_CACHE, timeout=30)
    assert jax.broken is not None and "its import fails (ModuleNotFoundError" in jax.broken
    served = serve(route(jax, context(BASE), [str(site)]), None, context(BASE), gpu=False, device_count=0,
                   environ=BASE, python=None)
    assert served.findings[0].code is Code.CONSUMER_BROKEN and "jax_gone_missing" in served.findings[0].message


def test_an_import_failing_on_a_missing_shared_object_is_the_loading_judged_not_a_broken_install(
        tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "jax-cuda12-plugin", "0.6.2", ('nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"',),
            files={"jax_cuda12_plugin/__init__.py": "", "jax_cuda12_plugin/_versions.py":
                   "raise ImportError('libcudnn.so.9: cannot open shared object file: No such file or directory')\n"})
    (jax,) = find_consumers([str(site)], environ=NO_CACHE, timeout=30)
    assert jax.broken is None and "shared object" in jax.build_source


# --- doctor -- COMMAND ----------------------------------------------------------------------------------------

def test_a_program_that_ran_and_never_reached_cudnn_is_said_so_not_judged_an_error(tmp_path: Path) -> None:
    from cudnnload.diagnose.observe import diagnose_program

    report = diagnose_program([sys.executable, "-c", "pass"], environ={**BASE, "CUDNNLOAD_CACHE":
                                                                       str(tmp_path / "cache")}, timeout=60)
    assert "ran and exited and never reached cuDNN" in report.headline, report.headline
    assert report.healthy


def test_a_program_that_aborts_in_a_bundled_shim_is_told_where_its_sub_libraries_go(tmp_path: Path) -> None:
    """`doctor -- PROGRAM` of a program that loads CTranslate2 4.5's bundled cuDNN 9.1 shim in a venv with no cuDNN 9
    elsewhere: it aborts ("Invalid handle. Cannot load symbol cudnnGetVersion"). The run's reading took the mapped
    copy by the plain classifier: no shim seen, no prediction, and the only fixes were "the other findings name the
    library" with no such finding. Now the copy is the shim it is: each missing sub-library is a finding whose fix
    is the cu12 9.1.0 wheel (libctranslate2 beside the copy names libcublas.so.12) by the venv's interpreter into
    ``~/.local/lib/nvidia-cudnn-9.1.0``, the fix the route gives (proven by the test above on 4.4)."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(sys.executable)
    for entry in real_site("ctranslate2", "4.5.0").iterdir():
        if entry.name == "ctranslate2.libs":  # its files themselves: a link to the folder would move $ORIGIN
            shutil.copytree(entry, site / entry.name, copy_function=os.link)
        else:
            (site / entry.name).symlink_to(entry)
    shim = next((site / "ctranslate2.libs").glob("libcudnn-*.so.9.1.0"))
    env = {**BASE, "HOME": str(tmp_path / "home"), "CUDNNLOAD_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, (str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH"))))}
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--output", str(report), "--", sys.executable,
                           "-c", BUNDLED_PROGRAM, str(shim)], env=env, capture_output=True, text=True, timeout=300,
                          check=False, cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    findings = json.loads(report.read_text())["result"]["findings"]
    missing = [f for f in findings if f["code"] == "missing-sublibrary"]
    assert missing and all(f["severity"] == "error" for f in missing)
    put, setting = missing[0]["fix"]["actions"]
    folder = tmp_path / "home" / ".local" / "lib" / "nvidia-cudnn-9.1.0"
    assert (put["requirements"], put["target"], put["python"]) == (["nvidia-cudnn-cu12==9.1.0.*"], str(folder),
                                                                   str(venv / "bin" / "python"))
    assert setting["value"].split(":")[0] == str(folder / "nvidia" / "cudnn" / "lib")
    assert not [f for f in findings if "the prediction's findings name the file" in (f["fix"].get("text") or "")]
