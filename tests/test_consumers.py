"""What installed frameworks need from cuDNN, read from fake distributions in a temporary site folder, and
the frameworks' own rules applied to the install that would load for them."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.markers import Marker

from cudnnload.judge.frameworks import consumer_findings
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.consumers import Consumer, Need, Pin, find_consumers, marker_applies
from cudnnload.verdicts import ERROR, WARNING

NO_CACHE = {**os.environ, "CUDNNLOAD_NO_CACHE": "1"}  # keep the ELF memo out of the user's cache
LINUX_X86 = {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux",
             "python_version": "3.11", "python_full_version": "3.11.9", "os_name": "posix"}


@pytest.fixture(scope="module")
def needs_cudnn(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """``needs_cudnn(9)``: a tiny shared object with DT_NEEDED libcudnn.so.9, linked against a stub."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the shared objects these tests read")
    folder = tmp_path_factory.mktemp("needs")
    source = folder / "empty.c"
    source.write_text("int cudnnload_test_symbol;\n")
    built = {}
    for major in (8, 9):
        stub = folder / f"libcudnn.so.{major}"
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", stub, source, f"-Wl,-soname,libcudnn.so.{major}"],
                       check=True)
        # --no-as-needed keeps the DT_NEEDED although no symbol of the stub is used.
        built[major] = folder / f"needs{major}.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", built[major], source, "-Wl,--no-as-needed",
                        f"-L{folder}", f"-l:libcudnn.so.{major}"], check=True)
    return lambda major: built[major]


def install(site: Path, name: str, version: str, requires: tuple[str, ...] = (),
            files: dict[str, str | Path] | None = None) -> None:
    """A distribution as pip leaves it: its files, and a .dist-info with METADATA and RECORD.
    ``files`` maps a site-relative path to text or to a file to copy."""
    listed = []
    for relative, content in (files or {}).items():
        target = site / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(textwrap.dedent(content))
        listed.append(relative)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\n" f"Name: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires))
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in [*listed, f"{info.name}/METADATA",
                                                                    f"{info.name}/RECORD"]))


TORCH_C = """
class _cudnn:
    @staticmethod
    def getCompileVersion():
        return (9, 1, 0)
"""


RELEASE_PINS = ('nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"',
                'nvidia-cublas-cu12==12.4.5.8; platform_system == "Linux"', "filelock")


def install_torch(site: Path, needs: Path, torch_c: str = TORCH_C,
                  requires: tuple[str, ...] = ("filelock",)) -> None:
    """torch with its CUDA library; by default as a source build has it (no pins: its build is read in a
    child), with ``requires=RELEASE_PINS`` as a release wheel (its exact pin names its build)."""
    install(site, "torch", "2.5.1", requires,
            {"torch/__init__.py": "", "torch/_C.py": torch_c, "torch/lib/libtorch_cuda.so": needs})


# --- reading what is installed ---------------------------------------------------------------------------


def test_torch_pin_needed_soname_and_build_version_are_read(tmp_path: Path, needs_cudnn: Callable[[int], Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A release wheel's exact pin names the cuDNN it was compiled against: read without importing torch."""
    install_torch(tmp_path, needs_cudnn(9), torch_c="raise SystemExit('imported')", requires=RELEASE_PINS)
    install(tmp_path, "nvidia-cudnn-cu12", "9.1.0.70")
    import cudnnload.resolve.consumers as consumers_module

    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child was started to read a build version the pin names")

    monkeypatch.setattr(consumers_module.subprocess, "Popen", no_child)
    (torch,) = find_consumers([str(tmp_path)], environ=NO_CACHE)

    assert (torch.framework, torch.label, torch.site) == ("torch", "torch 2.5.1", str(tmp_path))
    assert torch.pins == (Pin("nvidia-cudnn-cu12", "==9.1.0.70", (), "9.1.0.70"),)
    assert torch.needs == (Need("libcudnn.so.9", str(tmp_path / "torch/lib/libtorch_cuda.so")),)
    assert (torch.build, torch.build_major) == (Release(9, 1, 0), 9)
    assert torch.build_source.startswith("its exact pin nvidia-cudnn-cu12==9.1.0.70")


def test_a_torch_without_an_exact_pin_is_asked_its_build_in_a_child(tmp_path: Path,
                                                                    needs_cudnn: Callable[[int], Path]) -> None:
    install_torch(tmp_path, needs_cudnn(9))

    (torch,) = find_consumers([str(tmp_path)], environ=NO_CACHE)

    assert (torch.build, torch.build_major) == (Release(9, 1, 0), 9)
    assert torch.build_source == "torch._C._cudnn.getCompileVersion() in a child process"


def test_a_build_version_read_once_is_remembered_until_the_distribution_changes(
        tmp_path: Path, needs_cudnn: Callable[[int], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    install_torch(site, needs_cudnn(9))
    env = {**os.environ, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    (first,) = find_consumers([str(site)], environ=env)  # reads it in a child, remembers it
    import cudnnload.resolve.consumers as consumers_module

    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child was started for a remembered build version")

    monkeypatch.setattr(consumers_module.subprocess, "Popen", no_child)
    (second,) = find_consumers([str(site)], environ=env)
    assert second.build == first.build == Release(9, 1, 0) and second.build_source == first.build_source
    record = next(site.glob("torch-*.dist-info/RECORD"))
    stat = record.stat()
    os.utime(record, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a reinstall: read it again
    with pytest.raises(AssertionError, match="a child was started"):
        find_consumers([str(site)], environ=env)


def test_jax_plugin_pin_is_conditional_on_its_extra_and_other_platforms_pins_are_dropped(tmp_path: Path) -> None:
    install(tmp_path, "jax-cuda12-plugin", "0.6.2", (
        'nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"', 'nvidia-cudnn-cu12==8.0.0; sys_platform == "win32"'),
        {"jax_cuda12_plugin/__init__.py": "",
         "jax_cuda12_plugin/_versions.py": "def cudnn_build_version():\n    return 91000\n"})

    (jax,) = find_consumers([str(tmp_path)], environ=NO_CACHE)

    assert jax.framework == "jax"
    assert jax.pins == (Pin("nvidia-cudnn-cu12", "<10.0,>=9.8", ("with-cuda",), None),)
    assert (jax.build, jax.build_source) == (Release(9, 10, 0),
                                             "jax_cuda12_plugin._versions.cudnn_build_version() in a child process")


def test_cpu_only_torch_is_not_a_cudnn_consumer(tmp_path: Path) -> None:
    install(tmp_path, "torch", "2.5.1+cpu", ("filelock",), {"torch/__init__.py": "", "torch/lib/libc10.so": ""})

    assert find_consumers([str(tmp_path)], environ=NO_CACHE) == ()


def test_distributions_are_named_by_their_folders_and_an_egg_info_by_its_pkg_info(tmp_path: Path) -> None:
    """Names and versions come from the .dist-info folder names (no METADATA read for the hundreds of
    others); a setuptools develop install's .egg-info names itself in PKG-INFO, its pins in requires.txt."""
    install(tmp_path, "nvidia-cudnn-cu12", "9.1.0.70")
    egg = tmp_path / "jax_cuda12_plugin.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: jax-cuda12-plugin\nVersion: 0.4.30\n")
    (egg / "requires.txt").write_text("nvidia-cudnn-cu12<10.0,>=9.1\n")
    (tmp_path / "not-a-distribution.dist-info.txt").write_text("")

    (jax,) = find_consumers([str(tmp_path), str(tmp_path / "missing")], environ=NO_CACHE)

    assert (jax.distribution, jax.version, jax.site) == ("jax-cuda12-plugin", "0.4.30", str(tmp_path))
    assert [(p.requirement, p.installed) for p in jax.pins] == [("nvidia-cudnn-cu12<10.0,>=9.1", "9.1.0.70")]


def test_a_build_reader_that_hangs_is_cut_off_and_named(tmp_path: Path, needs_cudnn: Callable[[int], Path]) -> None:
    install_torch(tmp_path, needs_cudnn(9), torch_c="import time\ntime.sleep(60)\n")

    (torch,) = find_consumers([str(tmp_path)], environ=NO_CACHE, timeout=1.0)

    assert (torch.build, torch.build_major) == (None, None)
    assert torch.build_source == "torch._C._cudnn.getCompileVersion() in a child process: no answer within 1 s"
    assert torch.needs  # what was read without the child stays


def test_a_build_reader_that_fails_reports_the_error(tmp_path: Path, needs_cudnn: Callable[[int], Path]) -> None:
    install_torch(tmp_path, needs_cudnn(9), torch_c="")  # a torch built without cuDNN has no _cudnn

    (torch,) = find_consumers([str(tmp_path)], environ=NO_CACHE)

    assert torch.build is None
    assert torch.build_source.startswith("torch._C._cudnn.getCompileVersion() in a child process failed: "
                                         "AttributeError")


BUILD_INFO = """\
import collections

build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-18/bin/clang'), ('cuda_version', '12.5.1'),
    ('cudnn_version', '{cudnn}'), ('is_cuda_build', {cuda}), ('is_rocm_build', False)])
"""


def test_tensorflow_build_major_is_read_from_build_info_without_importing_it(tmp_path: Path) -> None:
    install(tmp_path, "tensorflow", "2.18.0", ('nvidia-cudnn-cu12==9.3.0.75; extra == "and-cuda"',),
            {"tensorflow/__init__.py": "raise SystemExit('imported')\n",
             "tensorflow/python/platform/build_info.py": BUILD_INFO.format(cudnn="9", cuda=True)})

    (tensorflow,) = find_consumers([str(tmp_path)], environ=NO_CACHE)

    assert (tensorflow.build, tensorflow.build_major) == (None, 9)  # TensorFlow records only the major
    assert tensorflow.build_source == "tensorflow/python/platform/build_info.py"


def test_a_cpu_tensorflow_without_pins_is_not_a_consumer(tmp_path: Path) -> None:
    install(tmp_path, "tensorflow", "2.18.0", (),
            {"tensorflow/python/platform/build_info.py": BUILD_INFO.format(cudnn="", cuda=False)})

    assert find_consumers([str(tmp_path)], environ=NO_CACHE) == ()


def test_onnxruntime_speaks_through_the_soname_its_cuda_provider_needs(tmp_path: Path,
                                                                       needs_cudnn: Callable[[int], Path]) -> None:
    install(tmp_path, "onnxruntime-gpu", "1.20.1", (),
            {"onnxruntime/capi/libonnxruntime_providers_cuda.so": needs_cudnn(8),
             "onnxruntime/capi/build_and_package_info.py": "package_name = 'onnxruntime-gpu'\ncuda_version = '11.8'\n"})

    (ort,) = find_consumers([str(tmp_path)], environ=NO_CACHE)

    assert [need.soname for need in ort.needs] == ["libcudnn.so.8"]
    assert (ort.build_major, ort.build_source) == (None, "onnxruntime-gpu does not record the cuDNN it was built with")


# --- pins and markers (read with packaging; what cudnnload adds on top of it) ------------------------------


def test_a_release_without_build_number_satisfies_a_four_part_pin_of_that_release() -> None:
    pin = Pin("nvidia-cudnn-cu12", "==9.1.0.70", (), None)

    assert pin.allows(Release(9, 1, 0)) and not pin.allows(Release(9, 1, 1)) and not pin.allows("9.1.0")


@pytest.mark.parametrize(("spec", "allowed", "refused"), [
    ("<10.0,>=9.8", ["9.8.0.87", "9.28.0.42"], ["9.7.1.26", "10.0.0.1"]),
    ("~=9.1", ["9.1.0.70", "9.28.0.42"], ["10.0", "8.9.7.29"]),
    ("==9.*", ["9.0.0.312"], ["8.9.7.29"]),
    ("!=9.10.0.*", ["9.10.1.4"], ["9.10.0.56"]),
])
def test_wheel_versions_are_checked_as_pip_would(spec: str, allowed: list[str], refused: list[str]) -> None:
    pin = Pin("nvidia-cudnn-cu12", spec, (), None)

    assert [pin.allows(v) for v in allowed + refused] == [True] * len(allowed) + [False] * len(refused)
    assert not pin.allows("not a version")


@pytest.mark.parametrize(("spec", "major"), [("<10.0,>=9.8", 9), ("==8.9.2.26", 8), ("~=9.1", 9), ("<10", None)])
def test_a_pin_names_the_major_of_its_lower_or_exact_bound(spec: str, major: int | None) -> None:
    assert Pin("nvidia-cudnn-cu12", spec, (), None).major == major


def test_extra_comparisons_hold_and_name_the_extra() -> None:
    assert marker_applies(Marker('extra == "with-cuda" and platform_system == "Linux"'), LINUX_X86) == (
        True, ("with-cuda",))
    assert marker_applies(Marker('extra == "and-cuda" and sys_platform == "win32"'), LINUX_X86) == (
        False, ("and-cuda",))
    assert marker_applies(Marker('sys_platform == "linux"'), LINUX_X86) == (True, ())
    assert marker_applies(Marker('python_version < "3.0"'), LINUX_X86) == (False, ())


# --- the frameworks' rules -------------------------------------------------------------------------------


BUILD_9_1 = Release(9, 1, 0)


def consumer(framework: str = "torch", build: Release | None = BUILD_9_1, *, pins: tuple[Pin, ...] = (),
             needs: tuple[Need, ...] = ()) -> Consumer:
    names = {"torch": "torch", "jax": "jax-cuda12-plugin", "tensorflow": "tensorflow", "onnxruntime": "onnxruntime-gpu"}
    return Consumer(framework, names[framework], "1.0", "/site", pins, needs, build, build.major if build else None,
                    "test")


def pin(spec: str, installed: str | None = None, extras: tuple[str, ...] = ()) -> Pin:
    return Pin("nvidia-cudnn-cu12", spec, extras, installed)


def codes(findings: tuple[object, ...]) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in findings]  # type: ignore[attr-defined]


def test_pytorch_accepts_a_newer_minor_of_the_same_major() -> None:
    assert consumer_findings(consumer(), Release(9, 28, 0), 9) == ()


def test_pytorch_refuses_an_older_minor_and_names_its_pin() -> None:
    findings = consumer_findings(consumer(build=Release(9, 5, 0), pins=(pin("==9.5.1.17", "9.5.1.17"),)),
                                 Release(9, 1, 0), 9, environ={})

    assert codes(findings) == [("consumer-pin-unmet", WARNING), ("consumer-runtime-older-than-build", ERROR)]
    older = findings[1]
    assert older.message == ("torch 1.0 was built with cuDNN 9.5.0 and needs the same major and a minor of at least "
                             "5; the cuDNN that loads is 9.1.0; torch stops at its first "
                             "torch.backends.cudnn.version() or is_acceptable() call")
    assert [a.json() for a in older.fix.actions] == [
        {"do": "pip-install", "requirements": ["nvidia-cudnn-cu12==9.5.1.17"],
         "options": ["--force-reinstall", "--no-deps"], "target": "/site", "python": None}]
    assert older.fix.text == ("python -m pip install --force-reinstall --no-deps --target /site "
                              "nvidia-cudnn-cu12==9.5.1.17; or install a torch built for the cuDNN that loads")


def test_skipping_pytorchs_own_check_is_pointed_out() -> None:
    findings = consumer_findings(consumer(build=Release(9, 5, 0)), Release(9, 1, 0), 9,
                                 environ={"PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK": "1"})

    assert "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK is set" in findings[0].message


def test_a_needed_soname_of_another_major_is_an_error_naming_the_file() -> None:
    needs = (Need("libcudnn.so.8", "/site/torch/lib/libtorch_cuda.so"),)

    (finding,) = consumer_findings(consumer(build=None, needs=needs), Release(9, 28, 0), 9)

    assert (finding.code, finding.severity, finding.path) == ("consumer-needs-other-major", ERROR,
                                                              "/site/torch/lib/libtorch_cuda.so")
    assert finding.message == ("torch 1.0 needs cuDNN 8 (libtorch_cuda.so NEEDs libcudnn.so.8), but the cuDNN that "
                               "loads for it is 9.x")


def test_tensorflows_recorded_major_is_checked_even_without_a_full_version() -> None:
    tensorflow = Consumer("tensorflow", "tensorflow", "2.15.0", "/site", (), (), None, 8, "build_info.py")

    assert codes(consumer_findings(tensorflow, Release(9, 3, 0), 9)) == [("consumer-needs-other-major", ERROR)]


def test_jax_ignores_the_patch_level() -> None:
    assert consumer_findings(consumer("jax", Release(9, 8, 2)), Release(9, 8, 0), 9) == ()


def test_jax_warns_of_an_older_minor_it_does_not_stop_on() -> None:
    """Measured on an H100 (2026-11-24): the CUDA 13 plugin built with 9.19 runs its convolution on 9.14."""
    (finding,) = consumer_findings(consumer("jax", Release(9, 12, 0)), Release(9, 10, 1), 9, environ={})
    assert (finding.code, finding.severity) == ("consumer-runtime-older-than-build", WARNING)
    assert "does not stop on it" in finding.message


def test_a_set_skip_variable_makes_torchs_older_runtime_a_warning() -> None:
    environ = {"PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK": "1"}
    assert codes(consumer_findings(consumer("torch", Release(9, 19, 0)), Release(9, 14, 0), 9, environ=environ)) == [
        ("consumer-runtime-older-than-build", WARNING)]


@pytest.mark.parametrize(("build", "expected"), [(Release(9, 8, 0), [("consumer-known-bad", ERROR)]),
                                                 (Release(9, 10, 0), [])], ids=["built-with-9.8", "built-with-9.10.0"])
def test_jax_knows_cudnn_9_10_0_breaks_other_builds(build: Release, expected: list[tuple[str, str]]) -> None:
    assert codes(consumer_findings(consumer("jax", build), Release(9, 10, 0), 9)) == expected


@pytest.mark.parametrize(("devices", "expected"), [(2, [("consumer-known-bad", WARNING)]), (1, []), (None, [])])
def test_jax_warns_of_multi_gpu_matmuls_before_9_10_1(devices: int | None, expected: list[tuple[str, str]]) -> None:
    assert codes(consumer_findings(consumer("jax", Release(9, 8, 0)), Release(9, 8, 0), 9,
                                   device_count=devices)) == expected


def test_a_pin_the_loading_cudnn_misses_is_a_warning_naming_both() -> None:
    (finding,) = consumer_findings(consumer(pins=(pin("==9.1.0.70", "9.1.0.70"),)), Release(9, 28, 0), 9,
                                   install_version="9.28.0.42")

    assert (finding.code, finding.severity) == ("consumer-pin-unmet", WARNING)
    assert finding.message == ("torch 1.0 requires nvidia-cudnn-cu12==9.1.0.70, but the cuDNN that loads is "
                               "9.28.0.42 (nvidia-cudnn-cu12 9.1.0.70 is installed)")


def test_a_required_pin_that_is_not_installed_is_reported_and_an_optional_one_is_not() -> None:
    required = consumer_findings(consumer(pins=(pin("==9.1.0.70"),)), None, 9)
    optional = consumer_findings(consumer(pins=(pin(">=9.8", extras=("with-cuda",)),)), Release(9, 1, 0), 9)

    assert codes(required) == [("consumer-pin-unmet", WARNING)] and "not installed" in required[0].message
    assert optional == ()


def test_onnxruntime_has_no_build_version_so_only_the_major_counts() -> None:
    ort = consumer("onnxruntime", None, needs=(Need("libcudnn.so.9", "/site/onnxruntime/capi/p.so"),))

    assert consumer_findings(ort, Release(9, 0, 0), 9) == ()


def test_a_framework_that_finds_no_cudnn_gets_the_wheel_it_pins_into_its_own_site() -> None:
    """Nothing on its path holds a cuDNN: the wheel it always requires, by the site's interpreter; every file
    rewritten when a version it allows is installed (its folder is not what pip put there); none for an extra's."""
    from cudnnload.judge.frameworks import pinned_cudnn

    fresh = pinned_cudnn(consumer(pins=(pin("==9.1.0.70"),)), "/venv/bin/python")
    assert fresh is not None and (fresh.requirements, fresh.options, fresh.target, fresh.python) == (
        ("nvidia-cudnn-cu12==9.1.0.70",), (), "/site", "/venv/bin/python")
    again = pinned_cudnn(consumer(pins=(pin("==9.1.0.70", "9.1.0.70"),)), "/venv/bin/python")
    assert again is not None and again.options == ("--force-reinstall", "--no-deps")
    assert pinned_cudnn(consumer(pins=(pin("<10", extras=("cuda",)),)), None) is None


def test_a_cuda_library_torch_needs_and_nothing_holds_is_why_it_cannot_be_imported(tmp_path: Path) -> None:
    """``pip uninstall nvidia-cublas`` beside torch (fix differential 1-449): libtorch_cuda.so NEEDs
    libcublas.so.13, no wheel's nvidia/*/lib holds it and its own search finds none, so ``import torch`` fails.
    Said as the framework's finding, with the distribution that has it installed into torch's own site; once a
    wheel's folder holds it (where torch's loader takes it from, by path) nothing is unmet."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the shared object this test reads")
    from cudnnload.judge.routes import _unmet

    build = tmp_path / "build"
    build.mkdir()
    (build / "empty.c").write_text("int cudnnload_test_symbol;\n")
    for soname in ("libcudnn.so.9", "libcublas.so.13"):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", build / soname, build / "empty.c", f"-Wl,-soname,{soname}"],
                       check=True)
    needs = build / "libtorch_cuda.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", needs, build / "empty.c", "-Wl,--no-as-needed", f"-L{build}",
                    "-l:libcudnn.so.9", "-l:libcublas.so.13"], check=True)
    site = tmp_path / "site"
    install_torch(site, needs, torch_c="raise SystemExit('imported')", requires=RELEASE_PINS)
    (torch,) = find_consumers([str(site)], environ=NO_CACHE)
    assert [n.soname for n in torch.unmet] == ["libcublas.so.13"]
    finding = _unmet(torch, "libcublas.so.13", torch.unmet[0].path, None)
    assert finding.code == "consumer-broken" and finding.severity.value == "error"
    assert "libtorch_cuda.so cannot load at import: it NEEDs libcublas.so.13" in finding.message
    assert [(a.requirements, a.target) for a in finding.fix.actions] == [(("nvidia-cublas>=13,<14",), str(site))]

    (site / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    shutil.copy(build / "libcublas.so.13", site / "nvidia" / "cu13" / "lib")
    (torch,) = find_consumers([str(site)], environ=NO_CACHE)
    assert torch.unmet == ()
