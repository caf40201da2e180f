"""`cudnnload explain`: each wording people paste is recognised from the text of the library or framework that
prints it; the causes are ranked by the text alone (the `Error:` part's library, the platform, versions and
paths), the same on every machine; fixes are typed actions for the generation and platform the text shows;
`--here` checks the causes on this machine and is the only thing that lets the machine change the ranking."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudnnload.diagnose.explain import Explanation, catalog, explain, gpus, ranking
from cudnnload.diagnose.explain.causes import ABOUT_LOADING, FAMILIES, cudnn_wheel
from cudnnload.diagnose.explain.reading import Signal, cuda_major_of, library_class, library_major, read
from cudnnload.errors import UsageError
from cudnnload.resolve.survey import SurveyedWheel, surveyed
from fixtures.explain.corpus import families, loading_families
from tests.wheels import cache_root, lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]

# causes that blame loading: never first when the text shows a runtime problem
LOADING = ABOUT_LOADING


def ranked(text: str) -> list[str]:
    return [cause.family for cause in explain(text, environ={}).causes]


# The confidences a decisive rule gives: "confident" once tuning reports prove it (`ranking.proven`), else "likely".
SURE = ("confident", "likely")


def first(text: str) -> tuple[str, str]:
    cause = explain(text, environ={}).causes[0]
    return cause.family, cause.confidence


def actions(result: Explanation, family: str) -> list[dict[str, object]]:
    cause = next(c for c in result.causes if c.family == family)
    return cause.fix.json()["actions"]  # type: ignore[return-value]


# --- the text each pattern matches is the library's own -------------------------------------------------

@pytest.mark.wheels
@pytest.mark.parametrize(("tag", "library", "text"), [
    ("cu12-8.9.7.29", "libcudnn.so.8", b"Could not load library %s. Error: %s"),
    ("cu12-8.9.7.29", "libcudnn.so.8", b"Could not load symbol %s from %s. Error: %s"),
    ("cu12-9.28.0.42", "libcudnn.so.9", b"Invalid handle. Cannot load symbol %s"),
    ("cu12-9.28.0.42", "libcudnn.so.9", b"Could not load symbol %s. Error: %s"),
    ("cu12-9.0.0.312", "libcudnn.so.9", b"Unable to load any of {"),
    ("cu12-9.28.0.42", "libcudnn_graph.so.9", b"Cannot load CUDA driver library (libcuda.so.1 / libcuda.so)"),
    ("cu12-9.28.0.42", "libcudnn_graph.so.9", b"Could not open libnvrtc for runtime linking"),
])
def test_the_cudnn_patterns_are_the_libraries_own_format_strings(tag: str, library: str, text: bytes) -> None:
    assert text in (lib_folder(tag) / library).read_bytes()


# --- the ranking is the text's, whatever machine runs it ------------------------------------------------

@pytest.mark.parametrize("text", [
    "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    "Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor",
    "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
    "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0.",
])
def test_the_ranking_is_the_same_with_an_empty_environment_and_this_machines(text: str) -> None:
    empty = [(c.family, c.confidence, c.here) for c in explain(text, environ={}).causes]
    mine = [(c.family, c.confidence, c.here) for c in explain(text, environ=os.environ).causes]
    assert empty == mine and all(here is None for _, _, here in empty)


def test_this_machine_is_not_read_without_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("explain read this machine without --here")

    monkeypatch.setattr("cudnnload.diagnose.explain.here.find", refuse)
    monkeypatch.setattr("cudnnload.loading.gpu.gpu_facts", refuse)
    result = explain("Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open "
                     "shared object file: No such file or directory")
    assert result.causes and not result.checked_here


# --- the Error: part and the paths decide ---------------------------------------------------------------

@pytest.mark.parametrize(("text", "family"), [
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such "
     "file or directory", "nvrtc-missing"),
    ("Could not load library libcudnn_cnn_infer.so.8. Error: /usr/local/Cluster-Apps/cuda/8.0/lib64/libnvrtc.so: "
     "undefined symbol: nvrtcGetCUBIN", "nvrtc-wrong"),
    ("Could not locate zlibwapi.dll. Please make sure it is in your library path!", "zlib-missing"),
    ("/lib64/libm.so.6: version `GLIBC_2.27' not found (required by /share/x/lib/libcudnn_cnn.so)",
     "glibc-or-libstdcxx-too-old"),
    ("./libcudnn_graph.so.9: /usr/lib64/libstdc++.so.6: version `GLIBCXX_3.4.21' not found (required by "
     "./libcudnn_graph.so.9)", "glibc-or-libstdcxx-too-old"),
])
def test_a_library_named_in_the_error_part_puts_its_own_cause_first_and_sure(text: str, family: str) -> None:
    """"confident" where the rule held on enough tuning reports, all of its cause (`ranking.proven`), else "likely"."""
    found, sure = first(text)
    assert found == family and sure in SURE


@pytest.mark.parametrize(("text", "family"), [
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such "
     "file or directory", "libcuda-missing"),
    ("FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open "
     "shared object file: No such file or directory", "cublas-missing-or-wrong"),
    ("RuntimeError: Unable to load any libcudart.so.* library", "multiple-cudart-or-frontend"),
])
def test_a_dependency_named_in_the_error_part_is_the_cause_not_cudnn(text: str, family: str) -> None:
    assert ranked(text)[0] == family


def test_the_error_part_naming_the_sublibrary_itself_blames_the_install_not_a_dependency() -> None:
    text = ("Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared "
            "object file: No such file or directory")
    top = set(ranked(text)[:3])
    assert {"cudnn-not-installed", "wheel-not-on-linker-path"} <= top
    assert top <= {"cudnn-not-installed", "wheel-not-on-linker-path", "wrong-cudnn-major", "sublibrary-missing"}


@pytest.mark.parametrize("text", [
    "Could not load library libcudnn_cnn_train.so.8. Error: libcudnn_ops_train.so.8: cannot open shared object "
    "file: No such file or directory",
    # the same, as a paste wraps it before "Error:"
    "Could not load library libcudnn_cnn_train.so.8.\nError: libcudnn_ops_train.so.8: cannot open shared object "
    "file: No such file or directory\nPlease make sure libcudnn_cnn_train.so.8 is in your library path!",
])
def test_a_sublibrary_found_whose_sibling_is_not_blames_the_folder_not_the_install(text: str) -> None:
    """dlerror names a sibling of the library that failed: that one was found, so cuDNN is there and the search
    reached its folder; what is missing is the sibling there, or the found library's own way to it ($ORIGIN)."""
    top = ranked(text)
    assert set(top[:3]) == {"sublibrary-missing", "missing-runpath", "origin-through-symlink"}
    assert top.index("cudnn-not-installed") > 3 and top.index("wrong-cudnn-major") > 3


def test_a_path_shows_the_platform_and_install_kind() -> None:
    reading = read("OSError: [WinError 127] The specified procedure could not be found. Error loading "
                   "\"D:\\anaconda3\\envs\\py310\\lib\\site-packages\\torch\\lib\\cudnn_adv64_9.dll\" or one of its "
                   "dependencies.")
    assert (reading.platform, reading.cudnn_major, reading.has("conda")) == ("windows", 9, True)
    assert reading.primary is not None and reading.primary.kind == "symbol-mismatch"
    wheel = read("/home/u/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_ops.so.9: cannot open shared "
                 "object file")
    assert (wheel.platform, wheel.has("pip-wheel")) == ("linux", True)
    assert read("/usr/local/cuda-11.8/lib64/libcudnn.so.8: cannot open shared object file").has("system-cuda")


# --- every wording --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "pattern", "kind"), [
    # cuDNN 8 on Windows: "Could not load library %s. Error code %d", "Could not locate %s"
    ("Could not load library cudnn_cnn_infer64_8.dll. Error code 126\nPlease make sure cudnn_cnn_infer64_8.dll is in "
     "your library path!", "could-not-load-library", "sublibrary-load"),
    ("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!", "could-not-locate",
     "sublibrary-load"),
    ("ERROR: could not load library \"C:\\Users\\x\\.julia\\artifacts\\a\\bin\\cudnn_cnn_infer64_8.dll\"\n"
     "The specified module could not be found.", "could-not-load-library", "sublibrary-load"),
    ("LoadLibrary failed with error 126 \"\" when trying to load \"C:\\x\\onnxruntime\\capi\\onnxruntime_providers_cuda"
     ".dll\"", "windows-load", "cudnn-not-found"),
    ("Loadlibrary failed with error 126 when trying to load onnxruntime_providers_cuda.dll", "windows-load",
     "cudnn-not-found"),
    ("ImportError: Could not find 'cudnn64_7.dll'. TensorFlow requires that this DLL be installed", "tf-self-check",
     "cudnn-not-found"),
    ("ImportError: DLL load failed: The specified module could not be found.", "dll-load-failed", "cudnn-not-found"),
    # dlib's CMake check: its test build against the cuDNN found failed (v19.20, v19.24)
    ("-- *** Found cuDNN, but it looks like the wrong version so dlib will not use it.              ***",
     "dlib-cudnn-test", "refused-version"),
    ("-- *** Found cuDNN, but we failed to compile the dlib/cmake_utils/test_for_cudnn project. ", "dlib-cudnn-test",
     "refused-version"),
    # TensorRT's Windows wheel (tensorrt/__init__.py, find_lib over %PATH%)
    ("FileNotFoundError: Could not find: cudnn64_8.dll. Is it on your PATH?\nNote: Paths searched were:",
     "trt-find-lib", "cudnn-not-found"),
    # cuDNN 9 on Linux and its dlerrors
    ("Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, libcudnn_cnn.so}",
     "unable-to-load-any", "sublibrary-load"),
    ("Unable to load any of {libcudnn_engines_precompiled.so.9.1.0, libcudnn_engines_precompiled.so.9.1, "
     "libcudnn_engines_precompiled.so.9, libcudnn_engines_precompiled.so}", "unable-to-load-any", "engine-load"),
    ("Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor", "invalid-handle", "sublibrary-load"),
    ("Invalid handle. Cannot load symbol cublasLtCreate", "invalid-handle", "dependency-load:cublas"),
    ("Could not load symbol cudnnGetLibConfig. Error: /lib/x86_64-linux-gnu/libcudnn_graph.so.9: undefined symbol: "
     "cudnnGetLibConfig", "could-not-load-symbol", "symbol-mismatch"),
    ("/x/libcudnn_ops.so.9: undefined symbol: _ZN5cudnn5graph13LibraryLoader, version libcudnn_graph.so.9",
     "undefined-symbol", "symbol-mismatch"),
    ("/x/libcudnn_cnn_infer.so.8: undefined symbol: _ZN5cudnn3cnn5Foo", "undefined-symbol", "symbol-mismatch"),
    ("ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory", "cannot-open",
     "cudnn-not-found"),
    ("Cannot load CUDA driver library (libcuda.so.1 / libcuda.so). Ensure the NVIDIA driver is installed",
     "graph-driver", "dependency-load:libcuda"),
    ("ValueError: libnvrtc.so.*[0-9].*[0-9] not found in the system path ['/x']", "torch-preload", "cudnn-not-found"),
    # loaders of the frameworks
    ("I tensorflow/stream_executor/dso_loader.cc:99] Couldn't open CUDA library libcudnn.so. LD_LIBRARY_PATH:",
     "tf-dso", "cudnn-not-found"),
    ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8';"
     " dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory", "tf-dso",
     "cudnn-not-found"),
    ("The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured correctly.(error code "
     "is /usr/local/cuda/lib64/libcudnn.so: cannot open shared object file: No such file or directory",
     "paddle-dynload", "cudnn-not-found"),
    # version checks, each framework's wordings
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 19, 0) but found runtime version"
     " (9, 14, 0). PyTorch already comes bundled with cuDNN.", "pytorch-version", "version-older"),
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, "
     "3)", "pytorch-version", "version-older"),
    ("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7605",
     "pytorch-version", "version-newer"),
    ("Loaded runtime CuDNN library: 7.3.1 but source was compiled with: 7.4.1", "xla-version", "version-older"),
    ("Loaded runtime CuDNN library: 7101 (compatibility version 7100) but source was compiled with 7004 "
     "(compatibility version 7000)", "xla-version", "version-newer"),
    ("Loaded runtime CuDNN library: 5103 (compatibility version 5100) but source was compiled with 4007 "
     "(compatibility version 4000)", "xla-version", "version-other-major"),
    ("E cuda_dnn.cc:417] Loaded runtime CuDNN library: 8.1.1 but source was compiled wit", "xla-version",
     "version-older"),
    ("Outdated cuDNN installation found.\nVersion JAX was built against: 8907\nMinimum supported: 9100\nInstalled "
     "version: 8907", "jax-version", "version-older"),
    ("CUDA backend failed to initialize: Found cuDNN version 8700, but JAX was built against version 8800, which is "
     "newer.", "jax-version", "version-older"),
    ("CUDA backend failed to initialize: Unable to load cuDNN. Is it installed?", "jax-cannot-load",
     "framework-no-cudnn"),
    ("Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies",
     "ort-require", "framework-no-cudnn"),
    ("UNIMPLEMENTED: DNN library is not found.", "tf-dnn-not-found", "framework-no-cudnn"),
    ("XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed.", "xla-dnn-init",
     "framework-no-cudnn"),
    # runtime: engines, algorithms, statuses
    ("RuntimeError: GET was unable to find an engine to execute this computation", "no-engine", "no-engine"),
    ("RuntimeError: FIND was unable to find an engine to execute this computation", "no-engine", "no-engine"),
    ("Unknown: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize",
     "conv-algorithm", "conv-algorithm"),
    ("RuntimeError: UNKNOWN: Failed to determine best cudnn convolution algorithm", "xla-autotune", "conv-algorithm"),
    ("cudnn_conv_layer.cpp:32] Check failed: status == CUDNN_STATUS_SUCCESS (6 vs. 0)  CUDNN_STATUS_ARCH_MISMATCH",
     "status", "status:ARCH_MISMATCH"),
    ("Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)", "status", "status:INTERNAL_ERROR"),
    ("raise cudnnExceptions[status]\nlibcudnn.cudnnStatusArchMismatch", "status", "status:ARCH_MISMATCH"),
])
def test_every_wording_is_recognised_as_its_kind(text: str, pattern: str, kind: str) -> None:
    primary = read(text).primary
    assert primary is not None and (primary.pattern, primary.kind) == (pattern, kind)


@pytest.mark.parametrize("text", [
    "Could not load symbol cublasGetSmCountTarget from libcublas.so.11. Error: /usr/local/cuda/lib64/libcublas.so.11: "
    "undefined symbol: cublasGetSmCountTarget",
    "Could not load symbol cublasGetSmCountTarget from cublas64_11.dll. Error code 127",
])
def test_a_cublas_function_cudnn_8_looks_up_in_vain_is_only_a_warning(text: str) -> None:
    """cuDNN 8 looks up cublasGetSmCountTarget, which an older cuBLAS 11 lacks, says so and goes on (the programs
    of nanoporetech/medaka#472, auspicious3000/SpeechSplit#73, babysor/MockingBird#735 ran on): a warning, said
    once, with the older cuBLAS next; never two cuDNN releases mixed."""
    primary = read(text).primary
    assert primary is not None and (primary.pattern, primary.kind, primary.warning) == (
        "could-not-load-symbol", "warning", True)
    assert ranked(text)[:2] == ["harmless-warning", "cublas-missing-or-wrong"]
    title = explain(text).causes[0].title
    assert title.startswith("this is only a warning: cublasGetSmCountTarget is missing") and title.count("warning") == 1


def test_the_cudnn_8_shims_second_line_on_linux_is_not_said_to_be_windows() -> None:
    """"Please make sure libcudnn_cnn_infer.so.8 is in your library path!" is libcudnn.so.8's, on Linux: no word of
    Windows' DLL search in what explain says of it (a .dll's own line keeps them)."""
    for text, windows in (("Please make sure libcudnn_cnn_infer.so.8 is in your library path!", False),
                          ("Please make sure cudnn_cnn_infer64_8.dll is in your library path!", True)):
        primary = read(text).primary
        assert primary is not None and ("Windows" in primary.source + primary.meaning) is windows, primary


def test_a_cudnn_function_missing_from_a_windows_dll_is_a_symbol_mismatch() -> None:
    primary = read("Could not load symbol cudnnGetVersion from cudnn_ops_infer64_8.dll. Error code 127").primary
    assert primary is not None and (primary.pattern, primary.kind) == ("could-not-load-symbol", "symbol-mismatch")


def test_a_windows_error_is_read_as_windows_with_its_cudnn_major() -> None:
    for text, major in (("Could not load library cudnn_ops_infer64_8.dll. Error code 126", 8),
                        ("Could not locate cudnn_ops64_9.dll.", 9), ("Could not find 'cudnn64_7.dll'.", 7)):
        reading = read(text)
        assert (reading.platform, reading.cudnn_major) == ("windows", major), text


# --- status codes: runtime causes, never loading --------------------------------------------------------

@pytest.mark.parametrize(("status", "family"), [
    ("BAD_PARAM", "bad-param-usage"), ("NOT_SUPPORTED", "unsupported-configuration"),
    ("ARCH_MISMATCH", "gpu-too-old"), ("EXECUTION_FAILED", "gpu-too-new"), ("NOT_INITIALIZED", "out-of-memory"),
    ("INTERNAL_ERROR", "known-bad-release"), ("SUBLIBRARY_VERSION_MISMATCH", "mixed-release"),
    ("ALLOC_FAILED", "out-of-memory"), ("MAPPING_ERROR", "out-of-memory"),
    ("SUBLIBRARY_LOADING_FAILED", "sublibrary-missing"),
])
def test_each_status_has_its_causes(status: str, family: str) -> None:
    causes = explain(f"RuntimeError: cuDNN error: CUDNN_STATUS_{status}", environ={}).causes
    assert family in [c.family for c in causes[:3]]
    assert all(c.tell and c.why for c in causes)  # each says how it happens and what tells it apart


@pytest.mark.parametrize("status", ["BAD_PARAM", "NOT_SUPPORTED", "ARCH_MISMATCH", "EXECUTION_FAILED",
                                    "NOT_INITIALIZED", "INTERNAL_ERROR", "ALLOC_FAILED", "MAPPING_ERROR"])
def test_a_runtime_status_never_blames_loading(status: str) -> None:
    assert not LOADING & set(ranked(f"cuDNN error: CUDNN_STATUS_{status}")[:3])


@pytest.mark.parametrize("text", [
    "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\nRuntimeError: CUDA out of memory. Tried to allocate 2G",
    "E cuda_dnn.cc:385] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\nCUDA_ERROR_OUT_OF_MEMORY",
    "RuntimeError: GET was unable to find an engine to execute this computation\ntorch.cuda.OutOfMemoryError: CUDA out "
    "of memory",
])
def test_out_of_memory_dressed_as_a_cudnn_error_is_recognised_as_such(text: str) -> None:
    """Out of memory first, and strongly: "confident" once its rule has held on ranking.PROVEN_BY tuning reports."""
    assert first(text) in (("out-of-memory", "confident"), ("out-of-memory", "likely"))


@pytest.mark.parametrize("text, known", [
    ("RuntimeError: CUDA error: out of memory", True),  # PyTorch's c10 CUDA check: cudaGetErrorString's words
    ("CUDA failure 2: out of memory ; GPU=0 ; hostname=h ; expr=cudaMalloc(&p, bytes);", True),  # ONNX Runtime
    ("cuda_driver.cc:806] failed to allocate 3.00G (3221225472 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of "
     "memory", True),
    ("the training ran out of memory after an hour", False),  # words of a person, not a message
])
def test_the_cuda_runtimes_short_error_words_are_known_where_printed_as_an_error(text: str, known: bool) -> None:
    """The catalog's "out of memory" (libcudart's cudaGetErrorString) has too few letters to be matched anywhere; as
    an error's words, after its name and a colon, it is the message, of its cause."""
    assert (read(text).primary is not None) is known
    if known:
        assert ranked(text)[0] == "out-of-memory"


@pytest.mark.parametrize("text", [
    'boiling down to "_Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR_".',
    "**RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR**",
    "RuntimeError: CUDA error: _CUBLAS_STATUS_INTERNAL_ERROR_ when calling `cublasCreate(handle)`",
])
def test_a_status_in_markdown_emphasis_is_read_as_that_status(text: str) -> None:
    primary = explain(text, environ={}).reading.primary
    assert primary is not None and primary.kind in ("status:INTERNAL_ERROR", "cublas-status:INTERNAL_ERROR")


def test_the_lines_around_a_status_decide_between_its_causes() -> None:
    driver = ("E cuda_dnn.cc:385] could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n"
              "E cuda_dnn.cc:393] possibly insufficient driver version: 384.69.0")
    assert first(driver) in (("driver-too-old", "confident"), ("driver-too-old", "likely"))
    old = ("Found GPU0 GeForce GTX 550 Ti which is of cuda capability 2.1.\n"
           "RuntimeError: CuDNN error: CUDNN_STATUS_ARCH_MISMATCH")
    assert first(old) in (("gpu-too-old", "confident"), ("gpu-too-old", "likely"))
    empty = ("could not convert BatchDescriptor {count: 5 feature_map_count: 0} to cudnn tensor descriptor: "
             "CUDNN_STATUS_BAD_PARAM")
    assert ranked(empty)[0] == "bad-param-usage"
    large = ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.\n"
             "works with batchsize up to 41 and starts failing at 42")
    assert ranked(large)[0] == "unsupported-configuration"


# --- fixes: the generation, CUDA and platform of the text -----------------------------------------------

def test_cudnn_7_gets_no_pip_wheel() -> None:
    result = explain("ImportError: libcudnn.so.7: cannot open shared object file: No such file or directory\nCUDA 10.0",
                     environ={})
    steps = actions(result, "cudnn-not-installed")
    assert [step["do"] for step in steps] == ["manual"] and "no pip wheel" in str(steps[0]["text"])


@pytest.mark.parametrize(("major", "cuda", "wheel"), [
    (8, 11, "nvidia-cudnn-cu11>=8,<9"), (8, 12, "nvidia-cudnn-cu12>=8,<9"), (8, 13, None),
    (9, 12, "nvidia-cudnn-cu12>=9,<10"), (9, 13, "nvidia-cudnn-cu13>=9,<10"), (7, 10, None), (9, None, None),
])
def test_the_wheel_is_chosen_from_the_cuda_version(major: int, cuda: int | None, wheel: str | None) -> None:
    assert cudnn_wheel(major, cuda) == wheel


def test_the_fix_follows_the_cuda_version_in_the_text() -> None:
    text = ("Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0.\n"
            "pip install torch --index-url .../cu118")
    steps = actions(explain(text, environ={}), "runtime-older-than-build")
    assert steps == [{"do": "pip-install", "requirements": ["nvidia-cudnn-cu11>=8.6.0,<9"], "options": [],
                      "target": None, "python": None}]


@pytest.mark.parametrize(("name", "cuda"), [
    ("libcublas.so.12", 12), ("libcublasLt.so.11", 11), ("libcublas.so.13", 13), ("libcudart.so.11.0", 11),
    ("libnvrtc.so.11.2", 11), ("/opt/x/libnvrtc.so.12", 12), ("cublas64_12.dll", 12), ("cublasLt64_11.dll", 11),
    ("cudart64_110.dll", 11), ("cudart64_101.dll", 10), ("cudart64_90.dll", 9), ("nvrtc64_120_0.dll", 12),
    ("nvrtc64_112_0.dll", 11), ("libnvrtc.so", None), ("libcufft.so.11", None), ("libcudnn.so.9", None),
])
def test_the_cuda_major_a_cuda_library_name_carries(name: str, cuda: int | None) -> None:
    assert cuda_major_of(name) == cuda


@pytest.mark.wheels
def test_the_cuda_major_of_the_real_cublas_wheel_s_files_is_its_own() -> None:
    names = [path.name for path in lib_folder("cublas-cu12-12.9.1.4").glob("libcublas*.so.*")]
    assert names and {cuda_major_of(name) for name in names} == {12}


@pytest.mark.wheels
def test_a_cuda_library_s_fix_puts_the_real_wheel_s_folder_on_the_path() -> None:
    # every CUDA wheel the tests unpacked (cuBLAS and NVRTC of CUDA 11, 12, 13): for a program that asks the loader
    # by name, the fix installs that wheel and puts the folder that holds the library asked for on the search path
    seen = 0
    for site in sorted((cache_root() / "unpacked").glob("nvidia-c*")):
        for path in site.rglob("lib*.so.*"):
            cuda, kind = cuda_major_of(path.name), library_class(path.name)
            if cuda is None or kind not in ("cublas", "nvrtc") or "builtins" in path.name or ".alt." in path.name:
                continue
            text = f"OSError: {path.name}: cannot open shared object file: No such file or directory"
            install, on_path = actions(explain(text, environ={}), "cublas-missing-or-wrong" if kind == "cublas"
                                       else "nvrtc-missing")
            assert site.name.startswith(install["requirements"][0].split(">")[0])  # type: ignore[index]
            folder = re.search(r"LD_LIBRARY_PATH=(\S+):", str(on_path["text"]))
            assert folder and Path(folder.group(1).replace("<site-packages>", str(site)), path.name).is_file()
            seen += 1
    assert seen >= 2


@pytest.mark.parametrize(("text", "wheel"), [
    # the library asked for names its CUDA major; the text's other CUDA (what nvidia-smi says the driver takes, what
    # the user has) is not the one to install for
    ("ERROR:root:General error in transcription: Library cublas64_12.dll is not found or cannot be loaded\n"
     "I have cuda version 11.8.", "nvidia-cublas-cu12"),
    ("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
     "| NVIDIA-SMI 535.104.05    Driver Version: 535.104.05   CUDA Version: 12.2 |", "nvidia-cuda-runtime-cu11"),
    ("OSError: libcublasLt.so.12: cannot open shared object file: No such file or directory (CUDA 11.8)",
     "nvidia-cublas-cu12"),
])
def test_a_cuda_library_s_fix_is_for_the_cuda_major_its_name_carries(text: str, wheel: str) -> None:
    result = explain(text, environ={})
    first = result.causes[0]
    assert first.family in ("cublas-missing-or-wrong", "libcudart-missing-or-wrong")
    assert first.fix.json()["actions"][0]["requirements"] == [wheel]


def test_a_conda_path_gets_conda_advice_and_windows_gets_windows_steps() -> None:
    conda = explain("Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open "
                    "shared object file\n/home/u/miniconda3/envs/w/lib/python3.10/site-packages/x.py", environ={})
    assert "conda install" in str(actions(conda, "cudnn-not-installed")[0]["text"])
    windows = explain("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!", environ={})
    assert "to PATH" in str(actions(windows, "installed-not-on-search-path")[0]["text"])
    zlib = explain("Could not locate zlibwapi.dll. Please make sure it is in your library path!", environ={})
    assert "zlibwapi.dll" in str(actions(zlib, "zlib-missing")[0]["text"])


def test_a_cause_whose_fix_is_unknown_has_no_actions() -> None:
    result = explain("cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", environ={})
    assert actions(result, "execution-failed-kernel") == []


def test_every_fix_follows_the_json_contract() -> None:
    texts = ["Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file",
             "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "Could not locate zlibwapi.dll.",
             "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0."]
    for text in texts:
        for cause in explain(text, environ={}).causes:
            contract = cause.fix.json()
            assert set(contract) == {"text", "actions"} and all("do" in step for step in contract["actions"])


# --- the families are the corpus's ----------------------------------------------------------------------

def test_every_family_of_the_corpus_has_a_cause_and_every_cause_a_family() -> None:
    assert set(FAMILIES) == families()


# --- --here ---------------------------------------------------------------------------------------------

def layout_env(name: str) -> dict[str, str]:
    """This machine with a corpus layout's cuDNN folder on LD_LIBRARY_PATH (and no pip wheel of the venv)."""
    from fixtures.scenarios.layouts import CORPUS, ensure
    from tests.wheels import cache_root

    layout = next(layout for layout in CORPUS if layout.name == name)
    if not (cache_root() / "unpacked").is_dir():
        pytest.skip("the wheels are not unpacked: run `make wheels`")
    lib = ensure(layout) / "site" / "nvidia" / "cudnn" / "lib"
    return {"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_CACHE": str(cache_root()), "LD_LIBRARY_PATH": str(lib)}


@pytest.mark.wheels
def test_here_puts_a_cause_this_machine_shows_first() -> None:
    text = "Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor"
    env = layout_env("missing-cnn")
    result = explain(text, here=True, environ=env, site_paths=[])
    missing = next(c for c in result.causes if c.family == "sublibrary-missing")
    assert result.causes[0] is missing and missing.here == "shows"
    assert "libcudnn_cnn.so.9" in (missing.here_detail or "")
    assert result.confirmed and all(c.here in ("shows", "rules out", "cannot tell") for c in result.causes)


@pytest.mark.wheels
def test_here_finds_the_other_cudnn_on_ld_library_path() -> None:
    text = ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 10, 2) but found runtime "
            "version (9, 0, 0).")
    result = explain(text, here=True, environ=layout_env("healthy-9.0-folder"), site_paths=[])
    assert (result.causes[0].family, result.causes[0].here) == ("version-mismatch-shadowed", "shows")


# JAX 0.11.2's own words on the H200 with the wheel's shim a text file (bench/frameworks_more.py shim-not-elf)
_JAX_SHIM_NOT_ELF = """Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda13.initialize()
Traceback (most recent call last):
  File "/opt/torch/.venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/__init__.py", line 200, in _version_check
    version = get_version()
              ^^^^^^^^^^^^^
RuntimeError: cuDNN not found.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/opt/torch/.venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/__init__.py", line 204, in _version_check
    raise RuntimeError(err_msg) from e
RuntimeError: Unable to load cuDNN. Is it installed?
An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.
"""


@pytest.mark.wheels
def test_here_finds_the_shim_jax_could_not_load_is_no_library(tmp_path: Path) -> None:
    """JAX says only that it could not load cuDNN; this machine shows why: the shim it loads is a text file."""
    import shutil

    from tests.wheels import site_folder

    site = tmp_path / "site"  # the wheel as pip leaves it, its shim replaced (a download that saved an error page)
    shutil.copytree(site_folder("cu12-9.28.0.42"), site, copy_function=os.link,
                    ignore=shutil.ignore_patterns(".unpacked"))
    lib = site / "nvidia" / "cudnn" / "lib"
    (lib / "libcudnn.so.9").unlink()
    (lib / "libcudnn.so.9").write_text("<html><body>403 Forbidden</body></html>\n")
    env = {"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    alone = explain(_JAX_SHIM_NOT_ELF, environ=env)
    assert alone.causes[0].family == "cudnn-not-installed"  # the text alone: JAX's words ask "Is it installed?"
    assert "unloadable-file" in [c.family for c in alone.causes]
    result = explain(_JAX_SHIM_NOT_ELF, here=True, environ=env, site_paths=[str(site)])
    first = result.causes[0]
    assert (first.family, first.here) == ("unloadable-file", "shows"), [(c.family, c.here) for c in result.causes]
    assert str(lib / "libcudnn.so.9") in (first.here_detail or "")


# --- the command ----------------------------------------------------------------------------------------

def cli(*args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", "cudnnload", "explain", *args], input=data, capture_output=True,
                          env={**os.environ, **(env or {}), "PYTHONPATH": python_path(ROOT)}, timeout=120,
                          check=False)


def test_explain_json_is_one_document_with_the_causes_in_rank_order() -> None:
    done = cli("--json", "-", stdin="Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open "
                                    "shared object file: No such file or directory\n")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["schema"], doc["kind"]) == (1, "explain")
    causes = doc["result"]["causes"]
    assert causes[0]["family"] == "nvrtc-missing" and causes[0]["confidence"] == "confident"
    assert all({"title", "family", "evidence", "here", "fix"} <= set(c) and c["here"] is None for c in causes)
    assert all(set(c["fix"]) == {"text", "actions"} for c in causes)


@pytest.mark.wheels
def test_explain_exits_1_only_when_here_confirms_a_cause() -> None:
    env = layout_env("missing-cnn") | {"CUDNNLOAD_CACHE": os.environ.get("CUDNNLOAD_CACHE", "")}
    text = "Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor"
    assert cli(text, env=env).returncode == 0
    here = cli("--here", text, env=env)
    assert here.returncode == 1 and b"on this machine:" in here.stdout and b"shows" in here.stdout


def test_text_without_a_cudnn_message_is_not_recognised_and_empty_text_is_one_line_exit_2() -> None:
    assert not explain("everything is fine", environ={}).recognized
    with pytest.raises(UsageError):
        explain("   ")
    done = cli("   ")
    assert done.returncode == 2 and done.stderr.decode().count("\n") == 1 and b"Traceback" not in done.stderr
    aborted = explain("Aborted (core dumped)", environ={})
    assert not aborted.recognized and "paste the line before it" in (aborted.note or "")


@pytest.mark.parametrize("junk", [bytes(range(256)) * 4096, b"/lib" * 250_000, b"x.so: cannot open shared object fi"
                                  * 30_000, (b"1" * 1999 + b"\n") * 500, (b"libcudnn" * 249 + b"\n") * 500])
def test_binary_junk_and_a_1_mb_paste_end_in_time_without_a_traceback(junk: bytes) -> None:
    started = time.monotonic()
    done = cli("-", stdin=junk)
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_the_strings_of_a_binary_paste_are_read_apart_and_a_colour_inside_a_word_is_not_a_break() -> None:
    """NULs (or other control characters) part the strings of a core file or a library, as a space does; a
    terminal's colour codes are taken out without leaving one."""
    for text in ("x\x00\x1b[31mlibcudnn.so.9: cannot open shared object file\x1b[0m",
                 "OSError: libcudnn.\x1b[1mso.9\x1b[0m: cannot open shared object file"):
        [signal] = explain(text, environ={}).reading.signals
        assert signal.library == "libcudnn.so.9" and signal.source.startswith("glibc"), (text, signal)


# Runs of the characters messages are made of, the kind of line a hostile paste is long in.
_RUNS = ("1", "a", "A", "libcudnn", "1.", "a.", "a/", "-", "CUDNN_", "sm_", "/", "\\", " ", "cudnn ", "x:", "9.1 ",
         ".so", "libcudnn.so.8 ", "libcudnn_ops_infer.so.8: ", "cudnn DSO ", "in ", "Error: ", "modul", "模块",
         "Module: cudnn", "0x0", "ExecutionProvider", "asks for ", "nvcc ")


def _patterns() -> dict[str, re.Pattern[str]]:
    """Every regex the explain stages hold at module level (alone or in a tuple, list or dict)."""
    import importlib
    import pkgutil

    import cudnnload.diagnose.explain as stage
    found: dict[str, re.Pattern[str]] = {}
    for module in [stage] + [importlib.import_module(f"{stage.__name__}.{m.name}")
                             for m in pkgutil.iter_modules(stage.__path__)]:
        for name, value in vars(module).items():
            held = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else [value]
            # and one level down: a table of (name, pattern) rows (reading._CLUE_PATTERNS)
            held = [p for item in held for p in (item if isinstance(item, (tuple, list)) else [item])]
            found.update({f"{module.__name__}.{name}[{i}]": p for i, p in enumerate(held) if isinstance(p, re.Pattern)})
    return found


def _took(pattern: re.Pattern[str], run: str, length: int) -> float:
    """Seconds ``pattern`` takes over 16 KB of lines ``length`` characters long, ``run`` repeated; the best of 3 (a
    busy machine's pauses are not the pattern's)."""
    line = (run * (length // len(run) + 1))[:length] + "\n"
    times = []
    for _ in range(3):
        started = time.perf_counter()
        for _ in pattern.finditer(line * (16_384 // len(line))):
            pass
        times.append(time.perf_counter() - started)
    return min(times)


def test_every_explain_pattern_reads_a_long_line_in_time_linear_in_it() -> None:
    """A pattern that tries each start of a run again (``\\w+x`` rather than ``(?<!\\w)\\w+x``) takes time square in
    a line's length: 1 MB of 2 000-character lines then took minutes. The same 16 KB in lines 8 times longer must
    take about as long."""
    slow = []
    for name, pattern in _patterns().items():
        for run in _RUNS:
            short, long = _took(pattern, run, 256), _took(pattern, run, 2048)
            if long > 0.05 and long > 4 * short:  # (a square-time pattern took 0.3 s to 1 s here, 8 times more)
                slow.append(f"{name} on {run!r}: {short:.3f} s in 256-character lines, {long:.3f} s in 2048")
    assert not slow, slow


@pytest.mark.parametrize("text", [
    "/usr/bin/python3: error while loading shared libraries: libcudnn_graph.so.9: cannot open shared object file: "
    "No such file or directory",
    "python: error while loading shared libraries: libcublasLt.so.12: cannot open shared object file: No such file "
    "or directory",
    "bash: error while loading shared libraries: libcudnn_ops.so.9: cannot open shared object file: No such file or "
    "directory",
])
def test_a_program_that_links_no_cudnn_stopping_at_start_is_an_ld_preload_entry(text: str) -> None:
    """Python or a shell tool cannot NEED cuDNN: failing at start on one of its libraries, it was made to map it
    first (LD_PRELOAD, /etc/ld.so.preload), as the corpus layout differential-ld-preload-cannot-load shows."""
    first = explain(text).causes[0]
    assert first.family == "preload-needs-missing"
    assert any("links no cuDNN" in said for said in first.evidence)


def test_a_symbol_lookup_error_in_python_is_two_releases_mixed_before_an_ld_preload_entry() -> None:
    """glibc prints "symbol lookup error" for a lazily bound symbol at any time, in a library Python imported as
    well: the measured LD_PRELOAD case (the wheel's 9.19 engines preloaded from a folder of their own, bound to the
    system's 9.14 graph: tests/test_frameworks_gpu.py, preload-lonely-engines) reads the same as two releases mixed
    by an import, so the preload is a cause to check, never the confident answer."""
    text = ("/opt/torch/.venv/bin/python3: symbol lookup error: /tmp/cudnnload-lonely/libcudnn_engines_precompiled"
            ".so.9: undefined symbol: _ZNK5cudnn3cnn15EngineInterface23create_kernel_cache_keyESt10shared_ptrIKNS_7"
            "backend14OperationGraphEERK16engcfg_backend_t, version libcudnn_graph.so.9")
    causes = explain(text, environ={}).causes
    assert [c.family for c in causes[:2]] == ["mixed-release", "preload-needs-missing"]
    assert causes[0].confidence == "possible"


def test_a_program_of_its_own_stopping_at_start_is_not_blamed_on_ld_preload() -> None:
    text = "./train: error while loading shared libraries: libcudnn.so.9: cannot open shared object file: No such file"
    assert explain(text).causes[0].family != "preload-needs-missing"


# --- what a text still says when no known message holds it (issue 32) ---------------------------------------

@pytest.mark.parametrize(("text", "kind", "built", "found"), [
    ("[TRT] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.6.0", "version-older", "8.9.0", "8.6.0"),
    ("WARNING: TensorRT was compiled against cuDNN 7.5.0 but is linked against cuDNN 7.0.5", "version-older",
     "7.5.0", "7.0.5"),
    ("The installed Paddle is compiled with CUDNN 8.4, but CUDNN version in your machine is 8.2", "version-older",
     "8.4", "8.2"),
    ("cuDNN compiled (7102) and runtime (7605) versions mismatch", "version-newer", "7.1.2", "7.6.5"),
    ("MyApp was built against cuDNN 9.1 but found cuDNN 8.9.7", "version-other-major", "9.1", "8.9.7"),
])
def test_a_build_versus_loaded_check_is_read_by_its_two_versions_in_any_words(text: str, kind: str, built: str,
                                                                               found: str) -> None:
    signal = read(text).primary
    assert signal is not None and (signal.kind, signal.built, signal.found) == (kind, built, found)


def test_a_status_inside_a_pytorch_warning_is_not_the_failure() -> None:
    text = ("UserWarning: cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered "
            "internally at ../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)")
    assert read(text).primary is not None and read(text).primary.warning
    assert ranked(text)[0] == "harmless-warning"


def test_windows_error_193_says_the_file_is_there_but_not_loadable() -> None:
    family, confidence = first("Could not load library cudnn_ops_infer64_8.dll. Error code 193. Please verify that "
                               "the library is built correctly for your processor architecture (32-bit, 64-bit)")
    assert family == "unloadable-file"
    assert ranked("Could not load library zlibwapi.dll. Error code 193")[0] == "unloadable-file"


def test_a_compile_error_puts_the_codes_defect_before_loading() -> None:
    family = ranked("conv.cu(12): error: identifier \"cudnnGetConvolutionForwardAlgorithm_v7\" is undefined")[0]
    assert family not in LOADING


def test_tensorflow_and_jaxlib_releases_give_the_cudnn_major_they_need() -> None:
    builds = {(b.framework, b.cudnn_major) for b in read("tensorflow-gpu==1.15.0\njaxlib-0.4.7+cuda11.cudnn82\n"
                                                          "Could not load dynamic library 'libcudnn.so.7'").builds}
    assert {("tensorflow", 7), ("jax", 8)} <= builds
    assert ranked("tensorflow-gpu==1.15.0\ncuDNN: 8.1\nImportError: libcudnn.so.7: cannot open shared object "
                  "file: No such file or directory")[0] == "wrong-cudnn-major"


@pytest.mark.parametrize(("text", "family"), [
    ("ImportError: /opt/app/lib/libmyapp.so: undefined symbol: cudnnGetConvolutionForwardAlgorithm_v7\ncuDNN 7.1",
     "runtime-older-than-build"),
    ("Could not load symbol cudnnGetLibConfig. Error: /usr/lib/libcudnn_graph.so.9: undefined symbol: "
     "cudnnGetLibConfig", "mixed-release"),
])
def test_a_public_cudnn_function_missing_is_an_older_release_for_a_program_two_releases_for_cudnn(
        text: str, family: str) -> None:
    assert ranked(text)[0] == family


@pytest.mark.parametrize(("text", "family"), [
    ("Initializing CuDNN backend...\nERROR: Arch mismatch", "gpu-too-old"),
    ("RuntimeError: cuDNN not found on this machine", "cudnn-not-installed"),
])
def test_an_unknown_text_that_names_cudnn_gets_the_usual_causes_of_its_words_never_surer_than_possible(
        text: str, family: str) -> None:
    result = explain(text, environ={})
    assert result.causes[0].family == family
    assert all(cause.confidence in ("possible", "unlikely") for cause in result.causes)


@pytest.mark.parametrize(("text", "failed"), [
    ("The app asks for cudnn64_7.dll. I searched the CUDA folder and only found cudnn64_8.dll.", "cudnn64_7.dll"),
    ("cudnn64_7.dll 依赖问题\n我在cuda的目录下搜索，找到的是cudnn64_8.dll", "cudnn64_7.dll"),
    ("The image has no libcudnn.so.8, so TensorFlow runs on the CPU", "libcudnn.so.8"),
])
def test_an_unknown_text_that_names_a_library_a_program_wants_or_lacks_is_about_that_file(
        text: str, failed: str) -> None:
    primary = read(text).primary
    assert primary is not None and primary.failed == failed
    assert primary.kind in ("cudnn-not-found", "sublibrary-load")
    # the line that names the file wanted is no listing of what the machine has
    assert failed not in read(text).files


@pytest.mark.parametrize("text", [
    "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!\n"
    "I only have cudnn_ops64_9.dll from the torch install.",
    "The app asks for cudnn64_7.dll. I searched the CUDA folder and only found cudnn64_8.dll.",
])
def test_a_cudnn_library_of_another_major_named_in_the_text_is_another_major_installed(text: str) -> None:
    assert ranked(text)[0] == "wrong-cudnn-major"
    assert explain(text, environ={}).causes[0].confidence in ("possible", "likely")


def test_a_listing_that_shows_the_wanted_major_beside_another_is_no_evidence_of_another_major() -> None:
    """`ldconfig -p` listing libcudnn.so.9 and libcudnn.so.8: the 9 the program wants is there too, so the 8 named
    is no sign that only another major is installed."""
    text = ("Could not load library libcudnn_ops.so.9. Error: libcudnn_ops.so.9: cannot open shared object file: No "
            "such file or directory\n$ ldconfig -p | grep cudnn\n\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-"
            "linux-gnu/libcudnn.so.9\n\tlibcudnn.so.8 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.8")
    first = explain(text, environ={}).causes
    assert first[0].family != "wrong-cudnn-major"
    assert not any("names libcudnn.so.8" in said for cause in first for said in cause.evidence)


def test_a_library_name_at_the_end_of_a_sentence_is_read_without_its_full_stop() -> None:
    assert read("It asks for the cudnn_ops_infer64_8.dll instead of cudnn_ops64_9.dll.").named[-1:] == (
        "cudnn_ops64_9.dll",)


@pytest.mark.parametrize(("text", "family"), [
    ("build error with Cudnn_6021\n\tCMake Error at marian_generated_attention.cu.o.cmake:262 (message):\n"
     "\t  Error generating file", "removed-api"),
    ("我使用k40, cuda8.0, cudnn6.0编译不通过，请问你们用的是什么版本的cuda和cudnn？", "removed-api"),
])
def test_an_unknown_text_of_a_build_that_failed_with_cudnn_named_is_read_as_a_build_failure(
        text: str, family: str) -> None:
    primary = read(text).primary
    assert primary is not None and primary.kind == "compile-missing"
    assert ranked(text)[0] == family


def test_a_build_that_did_not_find_cudnn_is_about_finding_it() -> None:
    text = ("CMake Error at cmake/FindCUDNN.cmake:12 (message):\n  Could NOT find CUDNN (missing: CUDNN_LIBRARY "
            "CUDNN_INCLUDE_DIR)")
    primary = read(text).primary
    assert primary is not None and primary.kind == "cudnn-not-found"


@pytest.mark.parametrize("text", [
    "Training runs fine for 20 minutes, then:\nRuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
    "It randomly crashes with\nRuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
])
def test_a_call_that_fails_only_now_and_then_is_no_cause_that_fails_every_call(text: str) -> None:
    """A configuration cuDNN has no engine for, a bad parameter or a GPU without code fails the first call; a call
    that ran many times before failing points to a defect of the release, the GPU, or memory running out."""
    causes = ranked(text)
    assert causes[0] in ("known-bad-release", "gpu-hardware-fault", "out-of-memory")
    assert not {"unsupported-configuration", "bad-param-usage"} & set(causes[:3])


def test_a_log_that_shows_cudnn_loaded_does_not_blame_finding_the_file() -> None:
    text = ("I tensorflow/stream_executor/platform/default/dso_loader.cc:49] Successfully opened dynamic library "
            "libcudnn.so.8\nUnimplementedError: DNN library is not found.")
    assert ranked(text)[0] not in {"cudnn-not-installed", "wheel-not-on-linker-path", "installed-not-on-search-path"}


# --- readings of what the text shows (issue 32: evidence is the text's, not a report's wording) -------------

@pytest.mark.parametrize("line", [
    "[06/01/2025-10:00:00] [W] [TRT] TensorRT was linked against cuDNN 8.9.2 but loaded cuDNN 8.6.0",
    "W0601 10:00:00.123456 4242 gpu_resources.cc:99] The installed Paddle is compiled with CUDNN 8.9, but CUDNN "
    "version in your machine is 8.6, which may cause serious incompatible bug.",
    "/opt/app/build.py:40: UserWarning: TensorRT was linked against cuDNN 8.9.2 but loaded cuDNN 8.6.0",
    "[06/01/2025-10:00:00] [I] [TRT] TensorRT was linked against cuDNN 8.9.2 but loaded cuDNN 8.6.0",
])
def test_a_message_on_a_line_its_logger_marks_as_a_warning_or_information_is_only_that(line: str) -> None:
    primary = read(line).primary
    assert primary is not None and primary.warning
    assert ranked(line)[0] == "harmless-warning"


@pytest.mark.parametrize("text", [
    "2025-07-31 15:09:16.647341662 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1055 "
    "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. "
    "Please install all dependencies as mentioned in the GPU requirements page, make sure they're in the PATH, and "
    "that your GPU is supported.",
    "2023-05-01 10:00:00.123456: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could "
    "not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file "
    "or directory",
])
def test_a_load_that_failed_is_the_failure_even_when_logged_as_a_warning(text: str) -> None:
    primary = read(text).primary
    assert primary is not None and not primary.warning
    assert "harmless-warning" not in ranked(text)[:3]


_ORT_PROVIDER = ("2024-06-01 10:00:00.000000000 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:899 "
                 "CreateExecutionProviderInstance] Failed to create {0}ExecutionProvider. Please reference "
                 "https://onnxruntime.ai/docs/execution-providers/{0}-ExecutionProvider.html#requirements to "
                 "ensure all dependencies are met.")
_ORT_LOAD = ("2024-06-01 10:00:00.000000000 [E:onnxruntime:Default, provider_bridge_ort.cc:1745 "
             "TryGetProviderInfo_{0}] ... [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
             "libonnxruntime_providers_{1}.so with error: {2}: cannot open shared object file: No such file or "
             "directory")


def test_onnx_runtime_failing_to_create_a_provider_other_than_cudas_is_no_cudnn_failure() -> None:
    text = _ORT_LOAD.format("TensorRT", "tensorrt", "libnvinfer.so.10") + "\n" + _ORT_PROVIDER.format("Tensorrt")
    assert ranked(text)[0] == "harmless-warning"
    assert not set(ranked(text)[:1]) & LOADING
    both = text + "\n" + _ORT_LOAD.format("CUDA", "cuda", "libcudnn.so.8") + "\n" + _ORT_PROVIDER.format("CUDA")
    assert read(both).primary is not None and read(both).primary.kind == "cudnn-not-found"
    assert ranked(both)[0] != "harmless-warning"


def test_a_version_warning_followed_by_a_failure_is_read_as_its_cause() -> None:
    text = ("WARNING: The installed Paddle is compiled with CUDNN 8.9, but CUDNN version in your machine is 8.6\n"
            "ExternalError: Cudnn error, CUDNN_STATUS_EXECUTION_FAILED at (conv_op.cu:77)")
    primary = read(text).primary
    assert primary is not None and primary.kind == "version-older" and primary.warning
    assert ranked(text)[0] not in ("harmless-warning", "gpu-too-new")


def test_a_version_check_the_catalog_knows_gets_the_numbers_of_its_line() -> None:
    primary = read("The installed Paddle is compiled with CUDNN 8.9, but CUDNN version in your machine is 8.6").primary
    assert primary is not None and (primary.built, primary.found, primary.kind) == ("8.9", "8.6", "version-older")


@pytest.mark.parametrize(("words", "stated"), [
    ("CUDNN：8.9.1", (8, 9, 1)),
    ("CuDNN 7.1.4 on a laptop", (7, 1, 4)),
    ("$ grep CUDNN_MAJOR -A 2 /usr/include/cudnn_version.h\n#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n"
     "#define CUDNN_PATCHLEVEL 7", (8, 9, 7)),
    ("ENV NV_CUDNN_VERSION 8.9.0.131", (8, 9, 0, 131)),  # NVIDIA's CUDA images
    ("pytorch 2.0.1 py3.10_cuda11.8_cudnn8.7.0_0 pytorch", (8, 7, 0)),  # a conda build string
    ("I removed cudnn64_8.dll, and I have cuDNN 9.1", (9, 1)),  # a library's name is no version
    ("cudnn 9.x", (9,)),
    ("the used cuda version is 13.0 and cudnn is 9.13", (9, 13)),
    ("My cuDNN version is 8.6.0", (8, 6, 0)),
    ("a warning that `cudnn8_compat` is missing; cuDNN 9.1 here", (9, 1)),  # an app's folder is no version
])
def test_the_cudnn_the_text_says_is_installed_is_read_in_any_spelling_and_from_its_header(
        words: str, stated: tuple[int, ...]) -> None:
    assert read(f"RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\n{words}").stated == stated


def test_a_header_newer_than_the_cudnn_loaded_points_at_another_copy() -> None:
    text = ("The installed Paddle is compiled with CUDNN 8.9, but CUDNN version in your machine is 8.6\n"
            "$ grep CUDNN_MAJOR -A 2 /usr/local/cuda/include/cudnn_version.h\n#define CUDNN_MAJOR 8\n"
            "#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7")
    assert ranked(text)[0] == "version-mismatch-shadowed"


def test_a_stated_version_is_not_also_the_major_the_program_wants() -> None:
    """The failing library names no cuDNN major: the stated one is not evidence that the wanted major is there."""
    text = ('LoadLibrary failed with error 126 "" when trying to load "C:\\app\\onnxruntime_providers_cuda.dll"\n'
            "I have CUDA 11.8 and cuDNN 8.5.0 installed")
    reading = read(text)
    assert reading.wanted is None and reading.cudnn_major == 8
    cause = next(c for c in explain(text, environ={}).causes if c.family == "installed-not-on-search-path")
    assert not any("is installed" in evidence for evidence in cause.evidence)


@pytest.mark.parametrize(("text", "capability", "too_old"), [
    ("Failed to initialize cuDNN. My GPU Compute Capability is 2.1", (2, 1), True),
    ("GPU: NVIDIA Quadro K4000 (computeCapability: 3.0)\ncuDNN 9.1.0\nCUDNN_STATUS_ARCH_MISMATCH", (3, 0), True),
    ("GPU compute capability: 7.5\nCUDNN_STATUS_ARCH_MISMATCH", (7, 5), False),
    ("name: Tesla K40c major: 3 minor: 5 memoryClockRate(GHz): 0.745\nCUDNN_STATUS_ARCH_MISMATCH", (3, 5), False),
])
def test_a_compute_capability_below_what_cudnn_supports_shows_a_gpu_too_old(
        text: str, capability: tuple[int, int], too_old: bool) -> None:
    assert read(text).capability == capability
    cause = next(c for c in explain(text, environ={}).causes if c.family == "gpu-too-old")
    assert any("below the" in evidence for evidence in cause.evidence) == too_old


def test_a_line_stating_the_gpus_memory_is_not_talk_of_running_out() -> None:
    text = ("GPU memory: 3.99957 GiB\n"
            "Unhandled exception: CUDA error: an illegal memory access was encountered (network_cudnn.cc:865)")
    assert not read(text).has("memory-hint") and ranked(text)[0] != "out-of-memory"


@pytest.mark.parametrize("text", [
    'could not load library "C:\\Users\\u\\.julia\\artifacts\\ab12\\bin\\cudnn_ops_infer64_8.dll"\n│    Access is '
    'denied.',
    "OSError: /opt/cudnn/lib/libcudnn_ops.so.9: cannot open shared object file: Permission denied",
    "OSError: /opt/cudnn/lib/libcudnn_ops.so.9: failed to map segment from shared object",
])
def test_a_library_found_but_refused_access_is_there_but_not_loadable(text: str) -> None:
    assert first(text)[0] == "unloadable-file"


@pytest.mark.parametrize("text", ["MyApp: failed to initialize cuDNN, exiting", "E: could not create cudnn handle"])
def test_cudnns_initialisation_failing_in_words_is_read_as_not_initialized(text: str) -> None:
    result = explain(text, environ={})
    assert result.reading.primary is not None and result.reading.primary.kind == "status:NOT_INITIALIZED"
    assert result.causes[0].family == "out-of-memory" and result.causes[0].confidence == "possible"


@pytest.mark.parametrize(("text", "family"), [
    ("worker 3: the pool is out of memory after 2 tries", "out-of-memory"),
    ("render worker 2 stopped: GPU Out of memory", "out-of-memory"),
    ("kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", "gpu-hardware-fault"),
])
def test_a_text_without_a_known_message_gets_only_the_runtime_cause_its_words_name(text: str, family: str) -> None:
    result = explain(text, environ={})
    assert [(c.family, c.confidence) for c in result.causes] == [(family, "possible")]
    assert not result.recognized and "no message cudnnload knows" in (result.note or "")


def test_a_text_without_a_message_of_a_failed_load_gets_no_cause_about_loading() -> None:
    assert ranked("poetry install\nSegmentation fault") == []


@pytest.mark.parametrize(("text", "family"), [
    ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\nThis used to work fine with mylib 1.4, but does not work "
     "with 1.5", "framework-bug"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\nIt worked with cuDNN 8.0.4 but fails with cuDNN 8.0.5",
     "known-bad-release"),
])
def test_a_failing_call_that_worked_with_an_earlier_release_is_a_regression_of_that_release(
        text: str, family: str) -> None:
    assert ranked(text)[0] == family


_TF_LOAD_WARNING = ("2023-05-01 10:00:00.1: W tensorflow/tsl/platform/default/dso_loader.cc:66] Could not load dynamic "
                    "library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or "
                    "directory")


@pytest.mark.parametrize(("ending", "its_own"), [
    ("ValueError: Input 0 of layer dense is incompatible with the layer: expected axis -1 to have value 784", True),
    ("KeyError: 'label'", True),
    # an empty list of GPUs indexed after TensorFlow went on without them: the load is the cause
    ("IndexError: list index out of range", False),
    # words of the GPU: the program noticed what the load took away
    ("AssertionError: no GPU available", False),
    ("RuntimeError: shapes do not match", False),  # the frameworks' own type, which carries their cuDNN messages
])
def test_a_traceback_that_ends_in_the_programs_own_error_after_a_load_warning_is_not_blamed_on_loading(
        ending: str, its_own: bool) -> None:
    """TensorFlow logs a library it could not open and runs on the CPU: a traceback after it that ends in an error
    of the program's own code (a shape, a key), naming no GPU, CUDA or library, is what stopped it; the load line
    is beside the failure, and no cause about loading comes first."""
    text = (f"{_TF_LOAD_WARNING}\nTraceback (most recent call last):\n  File \"train.py\", line 12, in <module>\n"
            f"    model.fit(x, y)\n{ending}")
    assert read(text).has("stopped-on-its-own-error") is its_own
    assert (ranked(text)[0] not in LOADING) is its_own


def test_an_error_of_the_programs_own_before_the_load_message_does_not_clear_the_load() -> None:
    text = f"Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'x'\n{_TF_LOAD_WARNING}"
    assert not read(text).has("stopped-on-its-own-error")


@pytest.mark.parametrize("words", [
    "With torch.backends.cudnn.enabled = False the same model runs fine.",
    "If I build without cuDNN (USE_CUDNN=0) it works.",
    "It works without cudnn, so the input is valid.",
])
def test_a_call_that_runs_with_cudnn_turned_off_leans_to_the_release_not_the_inputs(words: str) -> None:
    """The user's words that the same call runs with cuDNN turned off: its inputs are valid, cuDNN's handling of
    them fails; a bug of the release gains, the caller's bad parameters lose."""
    error = "RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM"
    text = f"{error}\n{words}"
    assert read(text).has("runs-without-cudnn") and not read(error).has("runs-without-cudnn")
    assert ranked(text).index("known-bad-release") < ranked(error).index("known-bad-release")
    assert ranked(text)[0] != "bad-param-usage"


@pytest.mark.parametrize("words", [
    "Theano: cuDNN is disabled, cuDNN not available",
    "If I disable cudnn and run it again, the same error appears",
    "It does not work without cudnn either",
    "disabling cudnn still fails",
])
def test_cudnn_turned_off_in_words_that_say_nothing_ran_is_no_clue(words: str) -> None:
    assert not read(words).has("runs-without-cudnn")


@pytest.mark.parametrize(("path", "another_copy"), [
    ("C:\\venv\\Lib\\site-packages\\torch\\lib\\cudnn_adv64_9.dll", True),
    ("C:\\venv\\Lib\\site-packages\\nvidia\\cudnn\\bin\\cudnn_ops64_9.dll", True),
    ("C:\\tools\\cudnn\\bin\\cudnn_adv64_9.dll", False),  # a folder of the user's: it can hold two releases
])
def test_a_packages_own_dll_that_meets_error_127_met_a_copy_another_package_loaded(path: str,
                                                                                   another_copy: bool) -> None:
    """Error 127 is a function missing from a DLL the one loaded binds to. A package's folder holds one release of its
    DLLs, and Windows hands a later load the DLL already loaded under the same name: the copy another framework
    loaded first is what it met."""
    text = (f'OSError: [WinError 127] The specified procedure could not be found. Error loading "{path}" or one of '
            "its dependencies.")
    assert (ranked(text)[0] == "two-frameworks-conflict") is another_copy


def test_a_load_that_worked_with_an_earlier_release_is_not_read_as_a_regression() -> None:
    text = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object "
            "file: No such file or directory\nit worked with mylib 2.3.1 but not with 2.4.0")
    assert "framework-bug" not in ranked(text)[:3]


def test_an_issue_templates_version_line_is_not_read_as_a_version_that_does_not_fit() -> None:
    text = "ValueError: shapes do not line up\n - CUDA/cuDNN version: 12.1 / 8.9\n - OS: Ubuntu 22.04"
    reading = read(text)
    assert reading.primary is not None and reading.primary.kind == "cudnn-mentioned"
    assert set(ranked(text)) <= ranking.CALL_CAUSES  # the usual causes of a failing call, no version's


@pytest.mark.parametrize(("text", "kind", "built", "found", "family"), [
    # another major, whichever way: the words give each version's side, the numbers the kind
    ("mylib.so: these bindings are for cuDNN 4.x (4000 <= version < 5000), while the loaded cuDNN is version: 5103",
     "version-other-major", "4", "5.1.3", "wrong-cudnn-major"),
    ("FATAL: plugin needs at least cuDNN 9.0, found 8.4.1 on this node", "version-other-major", "9.0", "8.4.1",
     "wrong-cudnn-major"),
    # the same major, an older minor: the runtime is older than the build, however the program words it
    ("mylib error: cudnn version mismatch, expected 7603 got 7102", "version-older", "7.6.3", "7.1.2",
     "runtime-older-than-build"),
    ("Your cuDNN is 8.1.0 but mylib requires cuDNN >= 8.5, please upgrade", "version-older", "8.5", "8.1.0",
     "runtime-older-than-build"),
    # one side named, the other not, on a line that says the versions do not fit
    ("libcudnn version 5005 does not match the version mylib was compiled with (6021)", "version-other-major",
     "6.0.21", "5.0.5", "wrong-cudnn-major"),
])
def test_a_cudnn_version_check_in_unknown_words_is_read_from_its_numbers(
        text: str, kind: str, built: str, found: str, family: str) -> None:
    result = explain(text, environ={})
    primary = result.reading.primary
    assert primary is not None and (primary.kind, primary.built, primary.found) == (kind, built, found)
    assert result.causes[0].family == family
    assert all(cause.confidence in ("possible", "unlikely") for cause in result.causes)  # still a guess


@pytest.mark.parametrize("text", [
    "ValueError: shapes do not line up\nEnvironment: cuDNN 8.9.2, CUDA 12.1, driver 535.54, Python 3.10",
    "mylib failed at conv.cu:120 with cuDNN 8.9.2 (error 4)",
])
def test_cudnn_versions_without_a_side_are_not_read_as_a_check(text: str) -> None:
    primary = read(text).primary
    assert primary is not None and not primary.kind.startswith("version-")


def test_words_that_say_a_cudnn_version_does_not_fit_are_read_as_such() -> None:
    primary = read("mylib: this build needs a newer cuDNN version than the one found").primary
    assert primary is not None and primary.kind == "version-unclear"


def test_a_text_that_only_names_cudnn_gets_only_the_runtime_causes_its_words_show() -> None:
    text = "Training with cuDNN on used to work with mylib 1.4 but does not work with 1.5 (poetry install)"
    causes = explain(text, environ={}).causes  # what its words name first, then the usual causes of a failing call
    assert (causes[0].family, causes[0].confidence) == ("framework-bug", "possible")
    assert {c.family for c in causes} <= ranking.CALL_CAUSES


# --- which cuDNN the text shows on the machine, against the major its messages want (issue 32) -------------

_SHIM_8 = ("Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared "
           "object file: No such file or directory\n")


@pytest.mark.parametrize(("text", "wheel"), [
    ("$ pip list | grep cudnn\nnvidia-cudnn-cu12         9.1.0.70", (9, 1, 0, 70)),
    ("nvidia-cudnn-cu11==8.9.2.26", (8, 9, 2, 26)),
    ("Successfully installed nvidia-cublas-cu12-12.4.5.8 nvidia-cudnn-cu12-9.1.0.70", (9, 1, 0, 70)),
    ("Name: nvidia-cudnn-cu12\nVersion: 9.5.1.17", (9, 5, 1, 17)),
    ("  Downloading nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl (664.8 MB)", (9, 1, 0, 70)),
    ("pip install nvidia-cudnn-cu12", None),
])
def test_the_cudnn_wheel_version_is_read_from_pips_output(text: str, wheel: tuple[int, ...] | None) -> None:
    assert read(text).wheel == wheel


def test_files_are_read_from_paths_and_listings_not_from_sentences_or_lines_of_absence() -> None:
    text = (_SHIM_8 + "Please make sure libcudnn_ops_infer.so.8 is in your library path!\n"
            "lrwxrwxrwx 1 root root 17 Jan  1 10:00 libcudnn_ops.so.9 -> libcudnn_ops.so.9.1.0\n"
            "\tlibcudnn.so.8 (libc6,x86-64) => /opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn.so.8\n"
            "where do I get libcudnn_cnn_infer.so.8?\n"
            "ls: cannot access '/usr/lib/libcudnn_adv_infer.so.8': No such file or directory\n"
            "      trying file=/usr/lib/libcudnn_graph.so.9\n")
    assert read(text).files == ("libcudnn_ops.so.9", "libcudnn_ops.so.9.1.0",
                                "/opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn.so.8")


@pytest.mark.parametrize(("text", "family"), [
    # another major on the machine, none of the one wanted: pip's wheel, a listing, the user's words
    (_SHIM_8 + "$ pip list | grep nvidia\nnvidia-cudnn-cu12         9.1.0.70", "wrong-cudnn-major"),
    (_SHIM_8 + "$ ls /usr/lib/x86_64-linux-gnu | grep cudnn\nlibcudnn.so.9\nlibcudnn_ops.so.9", "wrong-cudnn-major"),
    ("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}\n"
     "I have cuDNN 8.9.7 installed", "wrong-cudnn-major"),
    # the program's release wants another major than the one the text shows
    ("ctranslate2==4.4.0\ntorch==2.5.1\n" + _SHIM_8, "wrong-cudnn-major"),
    # the major wanted is there as a pip wheel, or the failing file itself is in a wheel's folder
    ("libcudnn.so.9: cannot open shared object file: No such file or directory\n$ pip list\n"
     "nvidia-cudnn-cu12 9.1.0.70", "wheel-not-on-linker-path"),
    (_SHIM_8 + "$ ls /opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn_ops_infer.so.8\n"
     "/opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn_ops_infer.so.8", "wheel-not-on-linker-path"),
    # the failing file is on the machine, outside any wheel; a listing of the install without the sub-library
    (_SHIM_8 + "$ find / -name 'libcudnn_ops_infer*'\n/usr/local/cudnn-8.9/lib/libcudnn_ops_infer.so.8",
     "installed-not-on-search-path"),
    (_SHIM_8 + "$ ls /usr/local/cuda/lib64 | grep cudnn\nlibcudnn.so.8\nlibcudnn_cnn_infer.so.8", "sublibrary-missing"),
])
def test_what_the_text_shows_on_the_machine_decides_between_the_causes_of_a_load(text: str, family: str) -> None:
    assert ranked(text)[0] == family


def test_a_bare_load_failure_leaves_the_choice_to_the_prior_and_is_only_possible() -> None:
    result = explain(_SHIM_8, environ={})
    assert result.causes[0].confidence == "possible"


def _surveyed_major(row: SurveyedWheel) -> int | None:
    """The cuDNN major a surveyed framework wheel uses, read from the wheel (cudnnload.resolve.survey): its
    nvidia-cudnn pin, its build information, else the cuDNN names among its libraries' strings."""
    for pin in row.cudnn_requires:
        if (found := re.search(r"(?:==|>=|~=)\s*(\d+)\.", pin)):
            return int(found.group(1))
    if row.build_cudnn:
        return int(row.build_cudnn.split(".")[0])
    majors = {major for library in row.libraries for name in library.cudnn_names
              if (major := library_major(name)) is not None}
    return majors.pop() if len(majors) == 1 else None


def test_the_framework_releases_explain_knows_agree_with_the_surveyed_wheels() -> None:
    """reading._BUILDS (release notes and wheel pins, written by hand) against what each surveyed wheel says."""
    names = {"torch": "torch", "onnxruntime-gpu": "onnxruntime-gpu", "ctranslate2": "ctranslate2",
             "tensorflow": "tensorflow"}
    checked = 0
    for row in surveyed():
        major = _surveyed_major(row)
        if row.distribution not in names or major is None:
            continue
        builds = read(f"{names[row.distribution]}=={row.version}").builds
        assert [build.cudnn_major for build in builds] == [major], (row.distribution, row.version)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("platform", [None, "linux", "windows"])
def test_a_prior_counted_on_few_reports_never_outweighs_what_the_text_shows(platform: str | None) -> None:
    """Issue 32: priors from the tuning corpus and the catalog, shrunk by one pseudo-report per cause
    (ranking.PSEUDO_REPORTS): no prior keeps two causes of a message as far apart as a decisive rule (3), and one
    whose leading cause stands on 3 reports or fewer not as far as a strong rule (2)."""
    for kind in (kind for kind in ranking.PRIORS if "@" not in kind):
        signal = Signal("test", kind, "", "", "")
        priors = [ranking._prior(signal, platform, family)
                  for family in set(ranking.candidates(signal)) | set(ranking.PRIORS[kind])]
        (best, _, behind), (worst, _, _) = max(priors), min(priors)
        assert best - worst < (2 if behind <= 3 else 3), (kind, platform)


def test_a_priors_table_passed_in_replaces_the_tuning_counts() -> None:
    """The cross-validation bench (bench/bench_explain_cv.py) ranks a fold with priors counted on the other folds:
    a table passed in is the one the ranking counts, and without one the tuning part's PRIORS are."""
    text = "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory"
    default = explain(text, environ={})
    assert explain(text, environ={}, priors=ranking.PRIORS).causes == default.causes
    counted = {"cudnn-not-found": {"conda-vs-pip": 40}}
    swayed = explain(text, environ={}, priors=counted)
    assert swayed.causes[0].family == "conda-vs-pip" != default.causes[0].family
    assert "40 of 40 tuning reports" in swayed.causes[0].prior


def test_what_the_text_lacks_never_makes_a_cause_likely() -> None:
    """"Nothing in the text shows a cuDNN installed" moves the plain absence up, but a bare message shows nothing
    for it: the prior decides, and the first cause stays "possible"."""
    result = explain("ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory",
                     environ={})
    assert result.causes[0].confidence == "possible"


@pytest.mark.parametrize(("line", "build"), [
    ("PyTorch version: 2.5.1+cu121", ("pytorch", "2.5", 9)),  # torch.utils.collect_env
    ("torch: 2.4.0", ("pytorch", "2.4", 9)),
    ("pytorch                   2.0.1           py3.10_cuda11.8_cudnn8.7.0_0    pytorch", ("pytorch", "2.0", 8)),
    ("CTranslate2 version: 4.4.0", ("ctranslate2", "4.4", 8)),
    ("ONNX Runtime version: 1.18.0", ("onnxruntime", "1.18", 8)),
    ("onnxruntime-win-x64-cuda12-1.17.1", ("onnxruntime", "1.17", 8)),
    ("TensorFlow version: 2.18.0", ("tensorflow", "2.18", 9)),
    ("jaxlib 0.4.23+cuda12.cudnn89", ("jax", "8.9", 8)),
])
def test_a_framework_release_is_read_in_the_forms_pip_conda_and_issue_templates_write_it(
        line: str, build: tuple[str, str, int]) -> None:
    assert [(b.framework, b.release, b.cudnn_major) for b in read(line).builds] == [build]


@pytest.mark.parametrize("line", ["torchvision 0.15.2", "pytorch-lightning 2.1.0", "I moved torch to 2.4 later"])
def test_a_name_that_only_starts_like_a_framework_or_prose_is_no_release(line: str) -> None:
    assert read(line).builds == ()


def test_a_cause_the_tuning_reports_of_a_kind_had_is_ranked_where_the_catalog_leaves_it_out() -> None:
    text = "RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM"
    primary = read(text).primary
    assert primary is not None and "known-bad-release" not in primary.families
    assert "known-bad-release" in ranking.PRIORS[primary.kind] and "known-bad-release" in ranked(text)


@pytest.mark.parametrize("text", [
    "ValueError: libcudnn.so.*[0-9] not found in the system path ['/srv/app', '/usr/lib/python311.zip']\ntorch 2.1.0",
    "UnimplementedError: Graph execution error:\nDNN library is not found.\n [[{{node model/conv1/Conv2D}}]]",
])
def test_a_known_message_is_weighed_by_its_own_catalog_entry_not_by_the_average_of_its_kind(text: str) -> None:
    """A message a pattern reads (its kind from the words it quotes) whose words are one catalog entry's: the
    causes that entry's source means by it come first, in its order, where no report is counted (the kind's other
    causes after them); the average over every entry of the kind (mostly "cannot open shared object file") is
    what a message without an entry of its own gets."""
    primary = read(text).primary
    assert primary is not None and primary.entry is not None
    entry = catalog.load().by_id[primary.entry]
    assert primary.families == entry.families
    causes = [cause.family for cause in explain(text, environ={}, priors={}).causes]
    assert causes[:3] == list(entry.families[:3])
    assert set(ranking.CANDIDATES[primary.kind]) <= set(causes)


def test_a_wheels_shim_shown_alone_is_no_sign_of_a_missing_sublibrary() -> None:
    """ldd shows the shim a program links, never the sub-libraries it dlopens; a wheel ships them all."""
    text = (_SHIM_8 + "$ ldd libctranslate2.so | grep cudnn\n\tlibcudnn.so.8 => "
            "/opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn.so.8 (0x00007f)")
    assert ranked(text)[0] == "wheel-not-on-linker-path"
    assert "sublibrary-missing" not in ranked(text)[:2]


def test_a_prior_alone_never_makes_a_cause_likely() -> None:
    """Issue 32: "likely" and "confident" come from what the text shows, never from how many reports had the cause:
    a bare status whose kind 50 reports explained one way stays "possible"."""
    counted = {"status:BAD_PARAM": {"bad-param-usage": 50}}
    first = explain("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", environ={}, priors=counted).causes[0]
    assert (first.family, first.confidence) == ("bad-param-usage", "possible")


def test_a_text_of_only_warnings_never_makes_the_warning_likely() -> None:
    """"Every message is only a warning" holds on what the text lacks (an error line, which a paste cut short lacks
    too): a warning that loaded cuDNN is older than the one linked stays a "possible" harmless warning at most."""
    first = explain("WARNING: TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.4.1", environ={}).causes[0]
    assert first.confidence == "possible"


@pytest.mark.parametrize(("gpu", "family"), [("NVIDIA GeForce RTX 5090 with CUDA capability sm_120", "gpu-too-new"),
                                             ("Tesla K40c with CUDA capability sm_35", "gpu-too-old")])
def test_no_kernel_for_the_gpu_is_too_new_or_too_old_by_its_capability_against_the_builds_list(
        gpu: str, family: str) -> None:
    """torch/cuda/__init__.py's warning lists the architectures the build has kernels for: a GPU newer than all of
    them is too new, one older than all of them too old (torch 1.13+ dropped Kepler)."""
    text = (f"{gpu} is not compatible with the current PyTorch installation.\nThe current PyTorch install supports "
            "CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\nRuntimeError: CUDA error: no kernel image "
            "is available for execution on the device")
    first = explain(text, environ={}).causes[0]
    assert first.family == family and first.confidence in SURE


@pytest.mark.parametrize(("gpu", "family"), [("Quadro P4000", "gpu-too-old"), ("GeForce GTX 1080 Ti", "gpu-too-old"),
                                             ("Tesla K80", "gpu-too-old"), ("RTX 5090", "gpu-too-new")])
def test_no_kernel_image_for_a_gpu_it_names_leans_to_the_generation_of_that_gpu(gpu: str, family: str) -> None:
    """Without the build's list of architectures, the GPU the text names tells: builds drop the oldest generations
    first (Kepler, then Maxwell and Pascal), and a new one is missing from builds for an older CUDA."""
    text = f"[error] CUDA error: no kernel image is available for execution on the device using {gpu}"
    assert explain(text, environ={}).causes[0].family == family


@pytest.mark.parametrize(("xid", "confidence"), [("13, Graphics SM Warp Exception", ("possible",)),
                                                 ("79, GPU has fallen off the bus.", SURE),
                                                 ("48, An uncorrectable double bit error", SURE)])
def test_only_the_gpus_own_xid_errors_name_a_hardware_fault(xid: str, confidence: tuple[str, ...]) -> None:
    """NVIDIA's Xid catalog: 48 (double-bit ECC) and 79 (fallen off the bus) are the GPU's; 13 (graphics engine
    exception) is as often a program's bad access, so it is only a hint."""
    text = f"kernel: NVRM: Xid (PCI:0000:3b:00): {xid}\nRuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"
    causes = explain(text, environ={}).causes
    assert "gpu-hardware-fault" in [c.family for c in causes[:2]]
    assert causes[0].confidence in confidence


@pytest.mark.parametrize("errno", ["", ": Cannot allocate memory"])
def test_a_segment_that_could_not_be_mapped_is_never_a_confident_bad_file(errno: str) -> None:
    """glibc's "failed to map segment from shared object" is mmap refused: a noexec mount or a memory limit, which
    the text rarely tells apart; the file is there (not missing), but it is not shown to be a bad file."""
    text = f"OSError: /opt/x/libcudnn_cnn_infer.so.8: failed to map segment from shared object{errno}"
    causes = explain(text, environ={}).causes
    assert causes[0].family not in ("cudnn-not-installed", "sublibrary-missing")
    if errno:  # ENOMEM, as glibc before 2.20 appends it: an address-space limit, never the file
        assert causes[0].family == "address-space-limit", causes[0]
        assert all(c.confidence in ("possible", "unlikely") for c in causes if c.family == "unloadable-file")
    else:
        assert causes[0].confidence == "possible"


@pytest.mark.parametrize("message", ["RuntimeError: CUDA error: out of memory",
                                     "Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED (out of memory)"])
def test_out_of_memory_under_an_address_space_limit_the_text_names_is_the_limit_first(message: str) -> None:
    """The CUDA driver reserves far more address space than it uses: under `ulimit -v`, cuInit fails with out of
    memory (the H200, under a 64 GB limit) while the GPU's memory is free. A text that names the limit puts it
    first; the same message without it stays the GPU's memory."""
    causes = explain(f"my job script runs `ulimit -v 64000000` first\n{message}", environ={}).causes
    assert causes[0].family == "address-space-limit", causes[:2]
    assert explain(message, environ={}).causes[0].family == "out-of-memory"


@pytest.mark.parametrize(("status", "family"), [("NOT_INITIALIZED", "out-of-memory"), ("ARCH_MISMATCH", "gpu-too-old"),
                                                ("INVALID_VALUE", "bad-param-usage"),
                                                ("EXECUTION_FAILED", "gpu-too-new")])
def test_a_cublas_status_is_read_with_the_causes_the_cublas_guide_gives_it(status: str, family: str) -> None:
    """cublasStatus_t (cublas_api.h) as PyTorch prints it: its own kind, the cuBLAS guide's causes, never one about
    loading first and never more than "possible" from the status alone."""
    result = explain(f"RuntimeError: CUDA error: CUBLAS_STATUS_{status} when calling `cublasCreate(handle)`",
                     environ={})
    assert result.reading.primary is not None and result.reading.primary.kind == f"cublas-status:{status}"
    assert (result.causes[0].family, result.causes[0].confidence) == (family, "possible")


def test_a_text_without_a_known_message_gets_the_causes_of_the_nearest_known_ones_as_such() -> None:
    """Issue 32, item 3: the catalog's nearest messages are shown as such, never as a match, and the causes of a
    failing call they list are offered, each saying where it comes from."""
    result = explain("RuntimeError: CUDA error: an illegal memory acess was encounterd", environ={})
    assert result.nearest and result.nearest[0].entry.template == "an illegal memory access was encountered"
    assert result.causes and all(c.confidence == "possible" for c in result.causes)
    assert "not a match" in result.causes[0].evidence[0]


def test_a_text_that_only_names_cudnn_gets_the_usual_causes_of_a_failing_call_never_one_about_loading() -> None:
    result = explain("Training with cudnn.benchmark=True gives different results every run", environ={})
    assert result.causes and all(c.confidence == "possible" for c in result.causes)
    assert not {c.family for c in result.causes} & {"cudnn-not-installed", "wrong-cudnn-major", "mixed-release",
                                                     "wheel-not-on-linker-path", "version-mismatch-shadowed"}


@pytest.mark.parametrize(("text", "family"), [
    ('OSError: [WinError 1455] 页面文件太小，无法完成操作 Error loading "C:\\x\\torch\\lib\\cudnn_cnn_infer64_8.dll" '
     "or one of its dependencies.", "paging-file-too-small"),
    ('OSError: [WinError 193] %1 ist keine zulässige Win32-Anwendung. Error loading "C:\\x\\zlibwapi.dll" or one of '
     "its dependencies.", "unloadable-file"),
])
def test_a_windows_error_is_read_by_its_code_in_any_language(text: str, family: str) -> None:
    """Windows prints a system error's text in the user's language; the code (winerror.h) is the same in all."""
    first = explain(text, environ={}).causes[0]
    assert first.family == family and first.confidence in SURE


_TF_CUDART = ("2021-03-01 10:00:00.123456: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not "
              "load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: "
              "No such file or directory")


def test_a_library_a_framework_failed_to_load_is_not_blamed_on_cudnn_frontend_or_a_preload() -> None:
    """TensorFlow's dso_loader logged the CUDA runtime it could not open: cudnn-frontend (which loads libcudart
    itself) came first, from the one tuning report of that kind, and a preload that stops every program at start
    (TensorFlow ran far enough to log it) third."""
    causes = ranked(_TF_CUDART)
    assert causes[0] == "libcudart-missing-or-wrong"
    assert causes.index("multiple-cudart-or-frontend") > 0 and causes.index("preload-needs-missing") > 1
    assert ranked("RuntimeError: Unable to load any libcudart.so.* library")[0] == "multiple-cudart-or-frontend"
    assert ranked("python3: error while loading shared libraries: libcudart.so.12: cannot open shared object file: "
                  "No such file or directory")[0] == "preload-needs-missing"


def test_xlas_no_visible_gpu_devices_is_no_gpu_this_process_may_use() -> None:
    """XLA's GetGpuXlaClient (xla/pjrt/gpu/gpu_helpers.cc) fails with "No visible GPU devices." where the platform
    counts no device: JAX's most common GPU start-up failure was not recognised at all."""
    assert ranked("RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices. "
                  "(you may need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this "
                  "backend.)")[0] == "no-gpu-or-driver"


_SILENT = ("Windows 10, CUDA 11.8, cuDNN {release}. tf.keras model.fit on the GPU:\n"
           "Process finished with exit code -1073740791 (0xC0000409)")


@pytest.mark.parametrize(("text", "zlib"), [
    (_SILENT.format(release="8.5.0.96"), True),
    ("WIN10, CUDNN: cudnn-windows-x86_64-8.6.0.163_cuda11-archive. The program crashes and will not throw any "
     "error.", True),
    ("0x00007FFF7138420D (cudnn64_8.dll) (QtPaddle.exe 中)处有未经处理的异常: 请求了严重的程序退出\n"
     "cuDNN 8.4 CUDA 11.6", True),
    (_SILENT.format(release="8.2.1"), False),  # before 8.3, cuDNN needs no zlibwapi.dll
    (_SILENT.format(release="9.1.0"), False),  # nor from 9.0 on
    ("Ubuntu 22.04, cuDNN 8.6: the program crashes without any error message", False),  # zlibwapi.dll is Windows's
])
def test_a_windows_program_with_cudnn_8_3_to_8_9_that_ended_without_a_word_lacks_zlibwapi(text: str,
                                                                                          zlib: bool) -> None:
    """cuDNN 8.3-8.9 on Windows ends the process where zlibwapi.dll is missing (its one line on stderr is lost
    in a GUI or an IDE): the program's end, with one of those releases named, shows a load that failed."""
    causes = ranked(text)
    assert (causes[0] == "zlib-missing") == zlib, causes[:3]


@pytest.mark.parametrize("report", [
    "Faulting application name: python.exe, version: 3.10.11150.1013\n"
    "Faulting module name: cudnn_ops_infer64_8.dll, version: 6.14.11.8050, time stamp: 0x6442a5e1\n"
    "Exception code: 0xc0000409\nFaulting module path: C:\\venv\\Lib\\site-packages\\torch\\lib\\"
    "cudnn_ops_infer64_8.dll",
    "错误应用程序名称: Buzz.exe\n错误模块名称: cudnn64_8.dll, 版本: 6.14.11.6050\n异常代码: 0xc0000409\n"
    "错误模块路径: D:\\Buzz\\ctranslate2\\cudnn64_8.dll",
])
def test_a_windows_crash_report_that_ended_in_a_cudnn_8_dll_is_a_library_it_could_not_load(report: str) -> None:
    """Event Viewer's report (in the system's language) of a process that ended in a cuDNN 8 DLL with exception
    0xc0000409, the code of abort(): cuDNN 8 ends the process where a library it opens at run time does not load,
    whichever release it is; the crash report names no release."""
    causes = ranked(report)
    assert causes[0] == "zlib-missing"
    assert {"cublas-missing-or-wrong", "sublibrary-missing"} <= set(causes[:3])


@pytest.mark.parametrize(("text", "major"), [
    ("torch==1.10.0+cu102", 7), ("torch 1.10.0+cu113", 8), ("torch 1.7.1", 7),
    ("pytorch                   1.10.0          py3.8_cuda10.2_cudnn7.6.5_0    pytorch", 7),
    ("PyTorch version: 1.10.0\nIs debug build: False\nCUDA used to build PyTorch: 10.2", 7),
    ("PyTorch version: 1.9.0", None),
])
def test_torch_before_1_13_brings_the_cudnn_of_its_cuda_variant(text: str, major: int | None) -> None:
    """pytorch/builder's common/install_cuda.sh (2020-02 to 2022-11): CUDA 10.2 builds carried libcudnn7 7.6.5.32,
    CUDA 11.x builds cuDNN 8; a 1.8-1.12 release without its variant says no major."""
    assert [b.cudnn_major for b in read(text).builds] == ([major] if major else [])


def test_the_cuda_that_built_pytorch_is_no_pytorch_release() -> None:
    assert read("CUDA used to build PyTorch: 11.3").builds == ()


def test_a_removed_function_missing_at_run_time_is_never_a_confident_removed_api() -> None:
    """A compiler or linker not finding a name cuDNN 8 removed is the code calling a removed API; glibc not finding
    it at run time is a binary built against an older cuDNN meeting a newer one, which a cuDNN of the binary's
    major fixes as well: "removed-api" leads, not confidently, "wrong-cudnn-major" next."""
    text = "ImportError: /home/u/darknet/libdarknet.so: undefined symbol: cudnnGetConvolutionForwardAlgorithm"
    runtime = explain(text, environ={}).causes
    assert [(c.family, c.confidence) for c in runtime[:1]] == [("removed-api", "likely")]
    assert runtime[1].family == "wrong-cudnn-major"  # how far behind: as many reports as the priors count
    built = explain("error: identifier \"cudnnGetConvolutionForwardAlgorithm\" is undefined", environ={}).causes
    assert (built[0].family, built[0].confidence) == ("removed-api", "confident")


@pytest.mark.parametrize(("text", "shown"), [
    ("It is not an out of memory problem, 20 GB are free", False), ("there is no OOM in the log", False),
    ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", True)])
def test_a_fact_the_words_deny_is_not_shown(text: str, shown: bool) -> None:
    assert read(f"RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\n{text}").has("out-of-memory") is shown


def test_a_stated_cudnn_that_the_named_tensorflow_was_built_with_points_to_another_copy() -> None:
    """TensorFlow 2.8 was built with cuDNN 8.1 (its "Tested build configurations"): a user who says 8.1.1 is
    installed has one it accepts, so "DNN library is not found" is another copy or a folder it does not search,
    not an older runtime."""
    text = "DNN library is not found.\ntensorflow: 2.8.0\ncuDNN: 8.1.1\ncuda: 11.2"
    assert read(text).builds[0].cudnn == (8, 1)
    causes = ranked(text)
    assert causes[0] == "version-mismatch-shadowed" and causes.index("runtime-older-than-build") > 0


@pytest.mark.parametrize("text", [
    "mxnet.base.MXNetError: src/operator/nn/cudnn/cudnn_convolution-inl.h:875: Failed to find any forward convolution "
    "algorithm.  with workspace size of 1073741824 bytes, please consider reducing batch size or limiting workspace.",
    "mylib: could not find a suitable cudnn algorithm for this layer"])
def test_a_load_verb_whose_object_is_no_library_is_no_failed_load(text: str) -> None:
    """A text without a known message is read as a load that failed only where the verb's object can be a library:
    finding an algorithm, an engine or a workspace is a failing call, never a cause about loading."""
    assert set(ranked(text)) <= ranking.CALL_CAUSES


def test_a_library_that_is_not_cudnns_failing_to_load_in_a_warning_is_harmless() -> None:
    """TensorFlow logs TensorRT's libnvinfer failing to load at W and goes on: not a cuDNN that failed to load."""
    line = ("2023-01-01 12:00:01.5: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could "
            "not load dynamic library '{0}'; dlerror: {0}: cannot open shared object file: No such file or directory")
    other = explain(line.format("libnvinfer.so.7"), environ={}).causes
    assert [c.family for c in other] == ["harmless-warning"]
    assert explain(line.format("libcudnn.so.8"), environ={}).causes[0].family == "cudnn-not-installed"
    assert "harmless-warning" not in ranked(line.format("libcusolver.so.11"))  # CUDA's own: a GPU library


@pytest.mark.parametrize(("text", "family"), [
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\nmy GPU driver is too old, 418.67", "driver-too-old"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\nThe NVIDIA driver on your system is too old (found "
     "version 10010).", "driver-too-old"),
    ("Found GPU0 NVIDIA GeForce GT 730 which is of cuda capability 3.5. PyTorch no longer supports this GPU because "
     "it is too old.", "gpu-too-old")])
def test_a_driver_too_old_is_not_a_gpu_too_old(text: str, family: str) -> None:
    assert ranked(text)[0] == family


@pytest.mark.parametrize(("shape", "large"), [("1x1x65536x65536", True), ("torch.randn(64, 3, 8192, 8192)", True),
                                              ("torch.randn(64, 3, 224, 224)", False)])
def test_a_shape_of_2_to_the_31_elements_or_more_is_a_large_tensor(shape: str, large: bool) -> None:
    """cuDNN's descriptors and many engines index with 32-bit integers: a shape whose elements number 2**31 or more
    is read as the large tensor it is, whatever words are around it."""
    assert read(f"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED\n{shape}").has("large-tensor") is large


def test_a_text_of_a_warning_that_only_names_cudnn_is_first_a_harmless_warning() -> None:
    text = "UserWarning: cuDNN SDPA backward got grad_output.strides() != output.strides(), attempting to materialize"
    causes = explain(text, environ={}).causes
    assert (causes[0].family, causes[0].confidence) == ("harmless-warning", "possible") and len(causes) > 1


@pytest.mark.parametrize(("free", "first"), [(1234, "out-of-memory"), (20438126080, "driver-too-old")])
def test_xlas_memory_usage_after_a_failed_cudnn_create_tells_out_of_memory_apart(free: int, first: str) -> None:
    """XLA's cuda_dnn.cc prints the GPU's free memory when cudnnCreate fails: almost none is out of memory, much of it
    is something else."""
    text = ("E0000 cuda_dnn.cc:535] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n"
            f"E0000 cuda_dnn.cc:539] Memory usage: {free} bytes free, 25438126080 bytes total.")
    assert ranked(text)[0] == first


@pytest.mark.parametrize("text", [
    "./include/caffe/util/cudnn.hpp:112:3: error: too few arguments to function 'cudnnStatus_t "
    "cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t, int, int, int, int, int, int, "
    "cudnnConvolutionMode_t, cudnnDataType_t)'",
    'src/caffe/layers/cudnn_conv_layer.cu(43): error: argument of type "int" is incompatible with parameter of type '
    '"cudnnConvolutionFwdAlgo_t"'])
def test_a_call_that_does_not_fit_the_cudnn_headers_is_code_for_another_cudnn_api(text: str) -> None:
    """A compiler finding a cuDNN call of another signature than the headers declare: the code was written for
    another cuDNN release's API, never a failing call (out of memory) nor a library that failed to load."""
    primary = read(text).primary
    assert primary is not None and primary.kind == "compile-missing"
    assert ranked(text)[:2] == ["removed-api", "framework-bug"]


def test_nvcc_without_the_gpus_architecture_is_a_gpu_newer_than_the_cuda() -> None:
    assert ranked("nvcc fatal   : Unsupported gpu architecture 'compute_86'") == ["gpu-too-new"]


@pytest.mark.parametrize(("text", "newer"), [
    ("GPU: NVIDIA GeForce RTX 4090\ntorch 1.12.1+cu113", True),
    ("PyTorch version: 1.7.1\nCUDA used to build PyTorch: 11.0\nGPU 0: GeForce RTX 3080", True),
    ("GPU: NVIDIA GeForce RTX 4090\ntorch 2.1.0+cu121", False),
    ("GPU: NVIDIA GeForce RTX 3090\ncudatoolkit=10.2", True)])
def test_a_gpu_newer_than_the_cuda_its_build_is_for(text: str, newer: bool) -> None:
    """The CUDA Toolkit release notes: sm_86 first in CUDA 11.1, sm_89 and sm_90 in 11.8, sm_100 and sm_120 in 12.8;
    a build for an older CUDA has no kernels for that GPU."""
    reading = read(f"RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n{text}")
    assert (ranking.gpu_newer_than_cuda(reading, reading.signals[0]) is not None) is newer


@pytest.mark.parametrize("layout", ['  File "/usr/lib64/python3.9/site-packages/torch/nn/modules/conv.py", line 443',
                                    "poetry run python train.py", '  File "torch/nn/modules/conv.py", line 443'])
def test_how_the_files_were_installed_is_no_cause_of_a_failing_call(layout: str) -> None:
    """A lib64 site-packages, poetry or a bundle of symlinks can be why a library failed to load; beside a status of a
    call that ran, it is only the machine's layout, and brings no cause about loading in."""
    causes = ranked(f"{layout}\nRuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED")
    assert not {"platlib-purelib-split", "torch-without-nvidia-deps", "origin-through-symlink"} & set(causes)


@pytest.mark.parametrize(("oom", "first"), [
    ("Tried to allocate 1024.00 GiB (GPU 0; 23.65 GiB total capacity; 2.10 GiB already allocated)", "framework-bug"),
    ("Tried to allocate 40.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 20.1 GiB is free.",
     "framework-bug"),
    ("Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.21 GiB already allocated)", "out-of-memory")])
def test_a_request_larger_than_the_whole_gpu_is_no_gpu_that_filled_up(oom: str, first: str) -> None:
    """PyTorch's out-of-memory message says what was asked for and the GPU's capacity: asking for more than the GPU
    has in all is a size computed wrong (or a configuration no engine runs), which no smaller batch fixes."""
    causes = explain(f"torch.cuda.OutOfMemoryError: CUDA out of memory. {oom}", environ={}).causes
    assert causes[0].family == first
    assert first == "out-of-memory" or causes[0].confidence == "possible"


@pytest.mark.parametrize(("release", "newer"), [("tensorflow-gpu 2.3.0", True), ("tensorflow 2.5.0", False)])
def test_a_tensorflow_release_is_built_for_the_cuda_its_tested_configuration_names(release: str, newer: bool) -> None:
    """tensorflow/docs's Tested build configurations: 2.3 was built for CUDA 10.1, older than the RTX 3090's sm_86
    (CUDA 11.1); 2.5 for CUDA 11.2."""
    reading = read(f"Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n{release}\nGPU: GeForce RTX 3090")
    assert (ranking.gpu_newer_than_cuda(reading, reading.signals[0]) is not None) is newer


def test_a_device_side_assert_before_a_status_is_no_gpu_out_of_memory() -> None:
    """CUDA's cudaErrorAssert: a kernel's own assertion failed (values out of range); the cuDNN status after it
    follows from it."""
    causes = ranked("RuntimeError: CUDA error: device-side assert triggered\n"
                    "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR")
    assert causes[0] != "out-of-memory" and "framework-bug" in causes[:2]


def test_the_causes_of_a_known_message_are_offered_only_when_it_is_near_enough() -> None:
    """The nearest known messages are shown from a likeness of 0.5; their causes only from NEAR_ENOUGH (0.6):
    "CUDA error: barrier misaligned" (no error of the CUDA runtime's) is 51 % alike "CUDA driver is a stub library",
    which says nothing of it."""
    result = explain("CUDA error: barrier misaligned", environ={})
    assert result.nearest and result.causes == ()


@pytest.mark.parametrize("text", [
    "CMake Error at cmake/Cuda.cmake:240 (message):\n  cuDNN version >= 9 is not yet supported.",
    "RuntimeError: cuDNN 9 is not supported by this build; please install cuDNN 8",
    "mylib: unsupported cuDNN version 9.1.0 found"])
def test_a_program_refusing_the_cudnn_version_is_code_for_other_releases_not_a_status(text: str) -> None:
    """"cuDNN X is not (yet) supported" is the program's own check of the version, not CUDNN_STATUS_NOT_SUPPORTED:
    it was written for other cuDNN releases (their API, their major), and nothing failed to load."""
    reading = read(text)
    assert reading.primary is not None and reading.primary.kind == "refused-version"
    assert ranked(text)[:2] == ["removed-api", "wrong-cudnn-major"]


@pytest.mark.parametrize("text", [
    "./src/convolutional_layer.c:286:24: error: 'CUDNN_CONVOLUTION_FWD_PREFER_FASTEST' undeclared (first use in this "
    "function); did you mean 'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3'?",
    "src/cudnn_setup.c:12:5: error: \u2018cudnnGetConvolutionForwardAlgorithm\u2019 undeclared here (not in a "
    "function)",
    "conv.cu(40): error: identifier \"cudnnSetRNNDescriptor_v6\" is undefined",
    "conv.cpp:7:3: error: use of undeclared identifier 'cudnnGetConvolutionForwardAlgorithm'"])
def test_each_compilers_words_for_a_name_cudnn_removed_are_read(text: str) -> None:
    """gcc's C front end says "'X' undeclared (first use in this function)" (and "undeclared here"), not g++'s "was
    not declared": darknet on cuDNN 8 fails so, and was read as no message at all."""
    primary = read(text).primary
    assert primary is not None and primary.kind == "removed-api"
    assert ranked(text)[0] == "removed-api"


def test_a_check_that_says_the_cudnn_found_is_too_old_and_which_to_update_to_is_a_version_check() -> None:
    """Theano's "cuDNN Version is too old. Update to v5, was 3007.": the version wanted after "update to", the one
    found after "was" (cudnnGetVersion's integer), in words no catalog entry has; it was read as only naming cuDNN."""
    primary = read("Using gpu device 0: GeForce GTX 980 (CNMeM is disabled, cuDNN Version is too old. Update to v5, "
                   "was 4007.)").primary
    assert primary is not None and primary.kind == "version-other-major"
    primary = read("mynet: cuDNN version too old: upgrade to 7.6, was 7.1.4").primary
    assert primary is not None and primary.kind == "version-older"


def test_a_text_without_cudnn_naming_a_library_cudnn_needs_that_failed_to_load_is_that_librarys_load() -> None:
    """A program's own words for a DLL it could not preload, which name no cuDNN: the library that failed decides
    the kind, as it does for a known message; before, the text had no answer at all."""
    text = r"vstrt: failed to preload C:\plugins64\vsmlrt-cuda\cublas64_11.dll, errno 127"
    primary = read(text).primary
    assert primary is not None and primary.kind == "dependency-load:cublas"
    assert ranked(text)[0] == "cublas-missing-or-wrong"
    assert read("myapp: could not load nvrtc64_120_0.dll").primary.kind == "dependency-load:nvrtc"
    assert read("myapp: the model has 3 layers").primary is None


@pytest.mark.parametrize("text", [
    "RuntimeError: /src/fused_attn.cu:639 in function operator(): cuDNN Error: hidden_dim should be less than 256 "
    "and a multiple of 8.",
    "mylib: cudnn convolution failed: CUDNN_STATUS_NOT_SUPPORTED (the kernel only supports NHWC here)"])
def test_a_limit_the_message_names_on_what_the_call_was_given_is_an_unsupported_configuration(text: str) -> None:
    """A message that names a limit on a dimension, a size or a layout (TransformerEngine's "hidden_dim should be
    multiple of 8") says the call asked for what cuDNN does not do: the configuration first, out of memory not."""
    assert ranked(text)[0] == "unsupported-configuration"
    assert not read("For now the TX1 only supports cuDNN 5.1").has("limit")
    assert read("head dim must be at most 256").has("limit")


def test_cuda_visible_devices_set_so_that_no_gpu_is_seen_is_no_gpu_for_the_process() -> None:
    """CUDA reads CUDA_VISIBLE_DEVICES up to the first entry it cannot parse: "[1,2,3]", "-1", an empty value hide
    every GPU, and cuDNN's handle then fails with no GPU; a list of indices or UUIDs, or a shell's variable, says
    nothing of that."""
    text = "CUDNN_STATUS_INTERNAL_ERROR when I run my program with CUDA_VISIBLE_DEVICES=[1,2,3]"
    assert ranked(text)[0] == "no-gpu-or-driver"
    assert all(read(f"CUDA_VISIBLE_DEVICES={value} python x.py").has("no-device") for value in ("-1", "''", "[0]"))
    assert not any(read(f"CUDA_VISIBLE_DEVICES={value} python x.py").has("no-device")
                   for value in ("0,1", "GPU-8a3c", "MIG-5d1e", "$GPUS", "\"1\""))


def test_a_cudnn_status_not_supported_in_words_is_still_a_status() -> None:
    primary = read("mylib: cudnn convolution failed: not supported for this layout").primary
    assert primary is not None and primary.kind == "status:NOT_SUPPORTED"


@pytest.mark.parametrize("text", [
    "F cuda_dnn.cc:222] could not find cudnnConvolutionBackwardFilter_v2 in cudnn DSO; dlerror: /usr/local/cuda/lib64/"
    "libcudnn.so.5: undefined symbol: cudnnConvolutionBackwardFilter_v2",
    "ImportError: /opt/cudnn/lib64/libcudnn.so.6: undefined symbol: cudnnConvolutionBackwardData_v2"])
def test_a_function_undefined_in_a_one_library_cudnn_is_one_it_lacks(text: str) -> None:
    """glibc names the object it searched; cuDNN up to 7 is one library that imports no cuDNN function, so a cuDNN
    function undefined in libcudnn.so.5/6/7 is a lookup into it that it lacks: an API that release removed."""
    assert ranked(text)[0] == "removed-api"


def test_a_function_undefined_in_a_cudnn_8_sub_library_is_still_two_releases_mixed() -> None:
    text = ("OSError: /venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: undefined symbol: "
            "cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize, version libcudnn_ops_infer.so.8")
    assert ranked(text)[0] == "mixed-release"


def test_tensorflows_old_dso_lookup_in_a_users_words_is_a_missing_function() -> None:
    """TensorFlow's cuda_dnn.cc before 1.x: "could not find <function> in cudnn DSO; dlerror: ...", reworded."""
    primary = read("when it initializes I get: ConvolutionalBackwardFilter_V2 cudnn DSO dlerror").primary
    assert primary is not None and primary.kind == "api-missing"


def test_a_package_adding_a_dll_folder_that_is_not_there_stops_its_own_import() -> None:
    """CPython's os.add_dll_directory raises FileNotFoundError for a folder that does not exist: the package's own
    code stops the import before any cuDNN is loaded; never a GPU or a failing call."""
    text = ('  File "C:\\venv\\lib\\site-packages\\mylib\\__init__.py", line 9, in <module>\n'
            "    os.add_dll_directory(os.path.join(cuda_home, 'bin'))\n"
            '  File "C:\\Python311\\lib\\os.py", line 1118, in add_dll_directory\n'
            "    cookie = nt._add_dll_directory(path)\n"
            "FileNotFoundError: [WinError 3] The system cannot find the path specified: "
            "'C:\\Program Files\\NVIDIA\\CUDNN\\v8.9\\bin'")
    causes = explain(text, environ={}).causes
    assert [c.family for c in causes] == ["framework-bug", "installed-not-on-search-path", "cudnn-not-installed"]
    assert causes[0].confidence == "possible"


# --- a cause about loading only where the text shows a load ---------------------------------------------

def test_the_causes_about_loading_are_the_families_under_the_loading_headings() -> None:
    assert loading_families() == ABOUT_LOADING


# TensorFlow's "Failed to get convolution algorithm" with the GPU's memory free and a cuDNN the release accepts:
# the evidence leans to another cuDNN shadowing it, but nothing in the text failed to load or refused a version
_CONV_ALGORITHM_MEMORY_FREE = (
    "tensorflow 2.4.0, cuDNN 8.0.4 installed\nMemory usage: 15000000000 bytes free, 16000000000 bytes total.\n"
    "UnknownError: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try "
    "looking to see if a warning log message was printed above.")


@pytest.mark.parametrize("text", [
    _CONV_ALGORITHM_MEMORY_FREE,
    "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\nLD_LIBRARY_PATH=/usr/local/cuda/lib64 (cuDNN 8.9 there)\n"
    "torch 2.1.0+cu121",
    "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\n(venv) $ pip list | grep nvidia-cudnn\n"
    "nvidia-cudnn-cu11 8.5.0.96\ntorch 2.1.0+cu121",
    "Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\ncudnn64_7.dll\ntensorflow-gpu 1.15.0, cuDNN 7.4",
])
def test_a_cause_about_loading_never_comes_first_where_no_load_failed(text: str) -> None:
    """A failing call, with paths, wheels and versions around it: a cause about loading only after the causes of
    what the text shows, each saying why."""
    reading = read(text)
    assert reading.signals and not any(ranking.shows_a_load(signal) for signal in reading.signals)
    causes = explain(text, environ={}).causes
    kinds = [cause.family in ABOUT_LOADING for cause in causes]
    assert not kinds[0] and kinds == sorted(kinds)
    assert all(ranking.NO_LOAD_SHOWN in cause.evidence for cause in causes if cause.family in ABOUT_LOADING)


def test_the_evidence_alone_would_have_put_a_cause_about_loading_first() -> None:
    """The rule is what decides there: without it (its score alone) another cuDNN shadowing TensorFlow's leads."""
    reading = read(_CONV_ALGORITHM_MEMORY_FREE)
    assert ranking.by_score(reading, ranking.PRIORS, ())[0].family == "version-mismatch-shadowed"
    assert ranked(_CONV_ALGORITHM_MEMORY_FREE)[0] not in ABOUT_LOADING


@pytest.mark.parametrize(("text", "family"), [
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object "
     "file: No such file or directory", None),
    ("ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory", None),
    ("Loaded runtime CuDNN library: 7.1.4 but source was compiled with: 7.2.1.", "runtime-older-than-build"),
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 10, 2) but found runtime "
     "version (9, 0, 0).", None),
    ("OSError: /venv/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: undefined symbol: "
     "cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize, version libcudnn_ops_infer.so.8", "mixed-release"),
    ("cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "mixed-release"),
    ("Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor", None),
    ("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}", None),
    ("Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!", None),
])
def test_a_text_that_shows_a_failed_or_wrong_load_may_put_loading_first(text: str, family: str | None) -> None:
    """A loader's error, a library that could not be loaded, a version check, two releases mixed: the text shows
    the load, and the causes about loading keep their place (first here)."""
    reading = read(text)
    assert any(ranking.shows_a_load(signal) for signal in reading.signals)
    causes = explain(text, environ={}).causes
    assert causes[0].family in ABOUT_LOADING and (family is None or causes[0].family == family)
    assert not any(ranking.NO_LOAD_SHOWN in cause.evidence for cause in causes)


def test_a_status_is_a_load_only_where_the_catalog_reads_it_first_as_one() -> None:
    """The catalog's meaning decides: CUDNN_STATUS_NOT_INITIALIZED is out of memory first (not a load);
    SUBLIBRARY_LOADING_FAILED is a sub-library that did not load."""
    assert not any(ranking.shows_a_load(s) for s in read("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED").signals)
    assert any(ranking.shows_a_load(s) for s in read("cuDNN error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED").signals)


def test_here_keeps_the_causes_about_loading_after_the_others_where_no_load_failed() -> None:
    causes = explain(_CONV_ALGORITHM_MEMORY_FREE, here=True, environ={}, site_paths=[]).causes
    kinds = [cause.family in ABOUT_LOADING for cause in causes]
    assert not kinds[0] and kinds == sorted(kinds)
    assert all(cause.evidence.count(ranking.NO_LOAD_SHOWN) == 1 for cause in causes if cause.family in ABOUT_LOADING)


def test_a_status_given_as_a_number_next_to_cudnns_name_is_read_as_that_status() -> None:
    """A wrapper that prints the status as a number ("cuDNN error 4", "cudnnCreate failed: 1", cuDNN 9's "status
    code 2000"): the cudnnStatus_t of that number, from the catalog's tables (1-14 are 7's and 8's, 1000 and up
    9's); a line number or a number of no status is not one."""
    for text, status in (("cuDNN error 4 in conv layer", "INTERNAL_ERROR"),
                         ("cudnnCreate failed: 1", "NOT_INITIALIZED"), ("CUDNN failure 3: unknown", "BAD_PARAM"),
                         ("cudnn status code 2000 while running", "BAD_PARAM"),
                         ("cudnn returned 1002", "SUBLIBRARY_VERSION_MISMATCH")):
        signal = read(text).primary
        assert signal.status == status, (text, signal)
    for text in ("cudnn error at line 42", "cuDNN error 77", "cudnn failed 8.9.7"):
        assert all(s.status is None for s in read(text).signals), text


@pytest.mark.parametrize("line", [
    "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
    "E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
])
def test_a_handle_that_could_not_be_made_is_not_blamed_on_a_configuration(line: str) -> None:
    """cudnnCreate takes no tensor or descriptor (cuDNN API reference): TensorFlow's failed handle, in the words of
    1.0-1.4 and of 1.15 on, is no configuration or value of the caller's, whatever its status."""
    causes = ranked(line)
    assert causes[0] == "out-of-memory"
    assert not {"unsupported-configuration", "bad-param-usage"} & set(causes[:3])
    assert {"unsupported-configuration", "bad-param-usage"} & set(ranked("CUDNN_STATUS_INTERNAL_ERROR")[:3])


@pytest.mark.parametrize("line", [
    "RuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at THCGeneral.cpp:50",
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:300] failed call to cuInit: CUDA_ERROR_NO_DEVICE",
])
def test_a_driver_that_sees_no_gpu_is_read_before_the_usual_causes_of_the_status(line: str) -> None:
    """cudaErrorNoDevice and CUDA_ERROR_NO_DEVICE (100): the driver found no GPU for the process, so a cuDNN status
    after it is not the GPU out of memory; strong evidence, never decisive (a GPU hidden by CUDA_VISIBLE_DEVICES)."""
    result = explain(f"{line}\nRuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", environ={})
    assert result.causes[0].family == "no-gpu-or-driver" and result.causes[0].confidence != "confident"
    assert first("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")[0] == "out-of-memory"


@pytest.mark.parametrize(("context", "stated"), [
    ("PATH=C:\\Program Files\\NVIDIA\\CUDNN\\v9.1\\bin\\12.4;C:\\Windows", (9, 1)),
    ("$ module load cudnn/v8.9", (8, 9)),
])
def test_the_folder_of_nvidias_windows_installer_states_its_cudnn(context: str, stated: tuple[int, ...]) -> None:
    """NVIDIA's cuDNN 9 Windows installer puts the DLLs in Program Files\\NVIDIA\\CUDNN\\v9.x: a cuDNN of that major
    on the machine, so a cuDNN 8 DLL not located is one of another major than the one installed."""
    text = f"Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!\n{context}"
    assert read(text).stated == stated
    if stated[0] == 9:
        assert first(text)[0] == "wrong-cudnn-major"


def test_what_the_user_wrote_before_a_message_on_its_line_states_a_cudnn_and_the_message_s_own_words_do_not() -> None:
    """"link leads to cuDNN 9.0.0 which throws error (...cudnn64_8.dll...)": the user's words before the message
    state the cuDNN installed, so the DLL of another major is wanted; the words of a message after its start
    ("TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.4.1") state nothing."""
    text = ('link leads to cuDNN 9.0.0 which throws error ("FileNotFoundError: Could not find: cudnn64_8.dll. Is it '
            'on your PATH?")')
    assert read(text).stated == (9, 0, 0)
    assert first(text)[0] == "wrong-cudnn-major"
    assert read("WARNING: TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.4.1").stated is None


@pytest.mark.parametrize(("gpu", "cuda", "newer"), [
    ("GeForce RTX 2080", "CUDA 9.2", True), ("Tesla T4", "cuda 9.0", True), ("GeForce RTX 2080", "CUDA 10.0", False),
    ("GeForce GTX 1080", "CUDA 9.2", False), ("RTX 2080Ti", "CUDA 9.0", True),
])
def test_a_turing_gpu_beside_a_cuda_before_10_has_no_kernels(gpu: str, cuda: str, newer: bool) -> None:
    """Turing (compute capability 7.5) got its kernels with CUDA 10.0: beside a CUDA 9.x named in the text, a failed
    convolution is the GPU newer than the build (MXNet's cu92 on an RTX 2080); from CUDA 10.0 on, or on Pascal, the
    rule says nothing."""
    text = (f"{gpu}\n{cuda}\nmxnet.base.MXNetError: src/operator/nn/./cudnn/cudnn_convolution-inl.h:870: Failed to "
            "find any forward convolution algorithm.")
    reading = read(text)
    assert (ranking.gpu_newer_than_cuda(reading, reading.signals[0]) is not None) is newer


@pytest.mark.parametrize(("text", "clue", "needs"), [
    ("GeForce RTX 4090", "gpu-new", (11, 8)), ("NVIDIA A100-SXM4-80GB", "gpu-new", (11, 0)),
    ("arch sm_86", "gpu-new", (11, 1)), ("NVIDIA B200", "gpu-new", (12, 8)), ("Tesla T4", "gpu-turing", (10, 0)),
    ("GeForce GTX 1080 Ti", "gpu-before-volta", None), ("Tesla K80", "gpu-old-name", None),
])
def test_one_table_of_gpu_generations_gives_the_clue_and_the_cuda_a_gpu_needs(
        text: str, clue: str, needs: tuple[int, int] | None) -> None:
    assert read(text).has(clue)
    found = gpus.first_cuda(text)
    assert (found[1] if found else None) == needs


def test_a_cudnn_rnn_backward_in_eval_mode_is_the_program_s_use_with_its_own_fix() -> None:
    """PyTorch's aten/src/ATen/native/cudnn/RNN.cpp refuses a backward pass through a cuDNN RNN whose module is in
    eval mode: the program's use of the API, with the step that mends it."""
    result = explain("RuntimeError: cudnn RNN backward can only be called in training mode", environ={})
    assert result.causes[0].family == "bad-param-usage"
    assert "model.train()" in str(result.causes[0].fix)


def test_cudnn_frontends_no_execution_plan_is_no_engine_for_the_configuration() -> None:
    """cudnn-frontend 1.5 on (include/cudnn_frontend/plans.h) returns "No execution plans support the graph" where
    cuDNN's heuristics gave no engine configuration for it; PyTorch prefixes "cuDNN Frontend error: "."""
    text = "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph."
    assert read(text).primary is not None and read(text).primary.kind == "no-engine"
    assert ranked(text)[0] == "unsupported-configuration"


def test_no_dnn_in_the_stream_executor_is_a_framework_without_a_usable_cudnn() -> None:
    """TensorFlow's and XLA's convolution code returns "No DNN in stream executor." where the executor has no DNN
    support: cuDNN did not load or initialise, as with "DNN library is not found."."""
    text = "tensorflow.python.framework.errors_impl.InvalidArgumentError: No DNN in stream executor."
    assert read(text).primary is not None and read(text).primary.kind == "framework-no-cudnn"
    assert ranked(text)[0] == ranked("DNN library is not found.")[0]


@pytest.mark.parametrize(("text", "kind"), [
    ("Please make sure cudnn_ops_infer64_8.dll is in your library path!", "sublibrary-load"),
    ("caffe/include/caffe/util/cudnn.hpp(107): error: too few arguments in function call", "compile-missing"),
    ("onnxruntime_pybind_state.cc:857 onnxruntime::python::CreateExecutionProviderInstance CUDA_PATH is set but CUDA "
     "wasnt able to be loaded. Please install the correct version of CUDA andcuDNN as mentioned in the GPU "
     "requirements page", "framework-no-cudnn")])
def test_messages_of_the_cudnn_8_shim_nvcc_and_onnx_runtime_pasted_alone_are_read(text: str, kind: str) -> None:
    """The cuDNN 8 Windows shim's second line alone, nvcc's call that does not fit a cuDNN header's declaration (it
    names no function: the program's cuDNN source file does), ONNX Runtime's provider failing with CUDA_PATH set."""
    primary = read(text).primary
    assert primary is not None and primary.kind == kind, primary


def test_a_decisive_rule_makes_its_cause_confident_only_once_enough_tuning_reports_prove_it() -> None:
    """Issue 32: confidence reflects how many reports stand behind it. A rule that names the cause gives
    "confident" only where it held on PROVEN_BY tuning reports or more, each of its cause; on fewer, or where it
    also held on a report of another cause, "likely"; and the ranking says how often it held."""
    text = ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No "
            "such file or directory")
    rule = next(r for r in ranking.RULES if r.family == "nvrtc-missing" and r.weight >= ranking.CONFIDENT)
    base = {row: counts for row, counts in ranking.PRIORS.items() if not row.startswith(ranking.RULE_ROW)}

    def sure(row: dict[str, int]) -> tuple[str, str]:
        cause = explain(text, environ={}, priors={**base, ranking.rule_row(rule): row}).causes[0]
        assert cause.family == "nvrtc-missing"
        return cause.confidence, cause.prior

    assert sure({"nvrtc-missing": ranking.PROVEN_BY})[0] == "confident"
    assert sure({"nvrtc-missing": ranking.PROVEN_BY - 1})[0] == "likely"
    held = sure({"nvrtc-missing": 9, "nvrtc-wrong": 1})
    assert held[0] == "likely" and "held on 10 tuning reports, of this cause in 9" in held[1], held
    assert sure({})[0] == "likely"


@pytest.mark.parametrize("typeset", [
    "2023-05-01 10:00:00.000000: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could "
    "not load dynamic library ‘libcudnn.so.8’; dlerror: libcudnn.so.8: cannot open shared object file: No such file"
    " or directory",
    "Could\u00a0not load library libcudnn_cnn_infer.so.8.\u00a0Error: libnvrtc.so: cannot open shared object "
    "file:\u200b No such file or directory",
])
def test_a_message_typeset_by_a_forum_is_read_as_the_program_printed_it(typeset: str) -> None:
    """A forum or word processor turns a program's quotes into typographic ones and its spaces into no-break
    ones, and puts invisible spaces in: the text is read as the ASCII the program printed, with the same causes
    in the same order."""
    printed = (typeset.replace("‘", "'").replace("’", "'").replace("\u00a0", " ").replace("\u200b", ""))
    assert explain(typeset, environ={}).reading.signals == explain(printed, environ={}).reading.signals
    assert ranked(typeset) == ranked(printed)


JULIA_ON_WINDOWS = ('ERROR: could not load library "C:\\Users\\me\\.julia\\artifacts\\2ab94e9aee8571e852661694155d4'
                    '4646bf7ad39\\bin\\cudnn_cnn_infer64_8.dll"\nThe specified module could not be found.\n'
                    "Stacktrace:\n  [1] dlopen(s::String, flags::UInt32; throw_error::Bool)")
TF_VERSION = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime cuDNN library: 8.0.5 but source was "
              "compiled with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor "
              "version.")
TORCH_VERSION = "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7605"
PADDLE_WARNING = ("W0404 16:40:48.373013 14840 device_context.cc:245] device: 0, cuDNN Version: 7.6.\n"
                  "W0404 16:40:48.365986 14840 device_context.cc:237] Please NOTE: device: 0, CUDA Capability: 61, "
                  "Driver API Version: 10.1, Runtime API Version: 10.0")


def _terminal(text: str, width: int) -> str:
    return "\n".join(line[at:at + width] for line in text.splitlines() for at in range(0, max(len(line), 1), width))


def _reflowed(text: str, width: int) -> str:
    import textwrap
    return "\n".join(textwrap.fill(line, width) for line in text.splitlines())


@pytest.mark.parametrize("text", [JULIA_ON_WINDOWS, TF_VERSION, TORCH_VERSION, PADDLE_WARNING])
@pytest.mark.parametrize("form", [
    lambda t: "\n".join("> " + line for line in t.splitlines()),  # quoted in a reply
    lambda t: "\n".join("> > " + line for line in t.splitlines()),  # quoted twice
    lambda t: "\n".join(f"2025-01-02 12:00:0{i % 10}.123 | ERROR    | app.main:run:42 - {line}"  # loguru
                         for i, line in enumerate(t.splitlines())),
    lambda t: "\n".join(f"2025-01-02 12:00:00,123 - app - ERROR - {line}" for line in t.splitlines()),  # logging
    lambda t: t.replace('"', "&quot;").replace("'", "&#39;").replace("<", "&lt;"),  # a page's HTML source
    lambda t: _terminal(t, 80), lambda t: _terminal(t, 120),  # a terminal's copy, cut at its width
    lambda t: _reflowed(t, 72), lambda t: _reflowed(t, 100),  # a mail's or a forum's re-flow
    lambda t: "\n".join(f"frigate-1  | {line}" for line in t.splitlines()),  # docker compose
    lambda t: "\n".join(f"Dec 05 07:50:0{i % 10} gpu-node-3 python3[12345]: {line}"  # journald, syslog
                         for i, line in enumerate(t.splitlines())),
    lambda t: "\n".join(f"2024-01-01T00:00:00.1234567Z {line}" for line in t.splitlines()),  # docker logs -t
    lambda t: "\n".join(f"2024-01-01T00:00:00.123456789+00:00 stderr F {line}" for line in t.splitlines()),  # CRI
    lambda t: "\n".join(f"(RayTrainWorker pid=4242, ip=10.0.0.7) {line}" for line in t.splitlines()),  # Ray
    lambda t: "\n".join(f"  0: {line}" for line in t.splitlines()),  # srun --label
    lambda t: "\n".join(f"[1,0]<stderr>:{line}" for line in t.splitlines()),  # mpirun --tag-output
    lambda t: "\n".join(json.dumps({"log": line + "\n", "stream": "stderr"}) for line in t.splitlines()),
    lambda t: json.dumps({"error": t}),  # a JSON answer, a notebook's saved output
    lambda t: f"RayTaskError(RuntimeError({t!r}))",  # Python's repr of an exception
    lambda t: "\n".join(f"**{line}**" for line in t.splitlines()),  # Markdown: bold
    lambda t: "\n".join(f"- `{line}`" for line in t.splitlines()),  # Markdown: a list of inline code
], ids=["quoted", "quoted-twice", "loguru", "logging", "html", "terminal-80", "terminal-120", "reflowed-72",
        "reflowed-100", "compose", "journal", "timestamps", "cri", "ray", "srun", "mpirun", "docker-json", "json",
        "repr", "bold", "bullet-code"])
def test_a_message_quoted_logged_escaped_or_wrapped_is_read_as_the_program_printed_it(text: str, form) -> None:
    """A reply quotes the paste ("> "), an application's logger puts a time stamp before each line, a log
    collector or a launcher its own prefix, a log store or a repr escapes it as a string, a page's source holds
    HTML entities, a terminal's copy cuts each long line at its width and a mail re-flows it: the message is the
    program's all the same, and is read with the same causes first."""
    assert ranked(form(text))[:2] == ranked(text)[:2]


@pytest.mark.parametrize("english, translated", [
    ("ImportError: DLL load failed while importing _C: The specified module could not be found.",
     "ImportError: DLL load failed while importing _C: 找不到指定的模块。"),
    ("ImportError: DLL load failed while importing _C: The specified module could not be found.",
     "ImportError: DLL load failed while importing _C: Das angegebene Modul wurde nicht gefunden."),
    ('OSError: [WinError 127] The specified procedure could not be found. Error loading "C:\\venv\\torch\\lib\\'
     'cudnn_cnn_infer64_8.dll" or one of its dependencies.',
     'OSError: [WinError 127] 指定されたプロシージャが見つかりません。 Error loading "C:\\venv\\torch\\lib\\'
     'cudnn_cnn_infer64_8.dll" or one of its dependencies.'),
    ("OSError: [WinError 193] %1 is not a valid Win32 application",
     "OSError: [WinError 193] %1 не является приложением Win32"),
    ("ImportError: DLL load failed while importing onnxruntime_pybind11_state: A dynamic link library (DLL) "
     "initialization routine failed.",
     "ImportError: DLL load failed while importing onnxruntime_pybind11_state: DLL 초기화 루틴을 "
     "실행할 수 없습니다."),
], ids=["zh_CN-126", "de-126", "ja-127", "ru-193", "ko-1114"])
def test_windows_messages_in_the_users_language_rank_as_the_english_ones(english: str, translated: str) -> None:
    """Windows prints its system messages in the user's language; a DLL's load that failed reads the same in
    each (fixtures/explain/windows_messages.json: the translations seen in real output)."""
    assert ranked(translated)[:3] == ranked(english)[:3]
    assert explain(translated, environ={}).note and "English" in explain(translated, environ={}).note


def test_a_notebooks_saved_outputs_are_read_as_the_program_printed_them() -> None:
    """A notebook (.ipynb) holds its outputs as JSON, pretty-printed a line each: a stream's text as a list of
    strings, an error's "evalue" and its traceback with the terminal's colours escaped (\\u001b). Each is read as
    the program printed it, and ranks as the plain text does."""
    printed = ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: "
               "No such file or directory\nRuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")
    notebook = json.dumps({"cells": [{"cell_type": "code", "source": ["import torch\n"], "outputs": [
        {"name": "stderr", "output_type": "stream", "text": [printed.splitlines()[0] + "\n"]},
        {"ename": "RuntimeError", "evalue": "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "output_type": "error",
         "traceback": ["\x1b[0;31mRuntimeError\x1b[0m: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"]}]}]}, indent=1)
    assert ranked(notebook)[:3] == ranked(printed)[:3]
    assert not any('"' in signal.line for signal in explain(notebook, environ={}).reading.signals)


def test_a_windows_path_is_not_read_as_a_strings_escapes() -> None:
    """A path's "\\nvidia" is no line break: a text is read unescaped only where it holds a "\\n" no path
    holds, and a lone surrogate escape is never printed as one."""
    path = "C:\\Users\\me\\nvidia\\cudnn\\bin\\cudnn_cnn_infer64_8.dll"
    text = f"Could not load library cudnn_cnn_infer64_8.dll. Error code 126\nPlease make sure {path} is in PATH"
    assert explain(text, environ={}).reading.signals == read(text).signals
    escaped = explain('"bad \\ud800 half\\n" ' + TORCH_VERSION, environ={})
    assert escaped.causes and "\ud800" not in json.dumps(escaped.json(), ensure_ascii=False)


def test_a_loggers_warning_level_stays_a_warning_and_an_unwrapped_text_is_read_as_it_is() -> None:
    """The level a logger writes is kept where it says warning or information; a text no wrap made (its lines
    of many widths, a message on one of them) is read as given."""
    logged = f"2025-01-02 12:00:00.123 | WARNING  | app:run:1 - {TF_VERSION}"
    assert read(TF_VERSION).primary.warning is False
    assert explain(logged, environ={}).reading.primary.warning is True
    plain = f"{TORCH_VERSION}\nsome other line that is rather long but not a wrap of anything at all"
    assert explain(plain, environ={}).reading.signals == read(plain).signals


def test_a_message_wrapped_by_hand_in_a_block_of_its_own_is_read_whole() -> None:
    """A user's prose unwrapped above a fenced block that holds the message wrapped by hand (its lines indented, of
    no one width): the block is read as its own paragraph, and the message in it is TensorFlow's version check,
    whose versions decide. The prose above is not joined to it, and a text whose blocks hold no message cut
    across lines is read as given."""
    message = ("Loaded runtime CuDNN library: 7.3.1 but source was\n    compiled with: 7.4.2.  CuDNN library major "
               "and\n    minor version needs to match or have higher minor\n   version in case of CuDNN 7.0 or "
               "later version.")
    text = ("Most things work in this environment. But I ran into one particular issue where I got an error like "
            f"this one.\n```\n{message}\n```\n")
    assert read(text).primary is None or read(text).primary.kind != "version-older"
    reading = explain(text, environ={}).reading
    assert reading.primary is not None and reading.primary.kind == "version-older"
    assert (reading.primary.found, reading.primary.built) == ("7.3.1", "7.4.2")
    assert ranked(text)[0] == "runtime-older-than-build"
    assert "Most things work" not in reading.primary.quote
    plain = f"{TORCH_VERSION}\n\nnothing else\nto say here"
    assert explain(plain, environ={}).reading.signals == read(plain).signals


def test_opencvs_cuda_backend_version_check_reads_the_versions_found_and_built() -> None:
    """OpenCV's cuda4dnn/init.hpp (checkVersions) says "cuDNN reports version <found> which does not match with the
    version <built> with which OpenCV was built": the found version first. 8201 against 8000 is a newer minor of
    the same major, not another major."""
    text = ("[ WARN:0] global /opt/opencv/modules/dnn/src/cuda4dnn/init.hpp (34) checkVersions cuDNN reports version "
            "8201 which does not match with the version 8000 with which OpenCV was built")
    signal = read(text).primary
    assert signal is not None and str(signal.entry).startswith("opencv-cuda/cudnn-reports-version")
    assert (signal.kind, signal.built, signal.found) == ("version-newer", "8.0.0", "8.2.1")
    assert ranked(text)[0] == "minor-mismatch-strict"


@pytest.mark.parametrize(("context", "stated"), [
    ("The install instructions tell users to install libcudnn 5.1.", (5, 1)),
    ("ii  libcudnn8  8.9.7.29-1+cuda12.2  amd64  cuDNN runtime libraries", (8,)),
])
def test_a_cudnn_package_named_with_its_version_states_the_cudnn_installed(context: str,
                                                                           stated: tuple[int, ...]) -> None:
    """"libcudnn 5.1" (a package and its version, as an install page names it) states cuDNN 5.1: a program that
    wants libcudnn.so.6 meets another major."""
    text = f"{context}\nImportError: libcudnn.so.6: cannot open shared object file: No such file or directory"
    assert read(text).stated == stated
    assert ranked(text)[0] == "wrong-cudnn-major"


def test_a_release_after_a_full_width_colon_is_read() -> None:
    """"torch： 1.12.1+cu116" (a full-width colon, as a Chinese keyboard types it) is torch 1.12, which brings cuDNN
    8: the cudnn64_7.dll Paddle wants is of another major."""
    text = ("RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_7.dll) that Paddle depends on "
            "is not configured correctly. (error code is 126)\ntorch： 1.12.1+cu116")
    assert [(b.framework, b.cudnn_major) for b in read(text).builds] == [("pytorch", 8)]
    assert ranked(text)[0] == "wrong-cudnn-major"


@pytest.mark.parametrize(("context", "fires"), [
    ("CUDA：11.6", True),  # no cuDNN 7 was built for CUDA 11
    ("Cuda compilation tools, release 10.0, V10.0.130", False),
    ("| NVIDIA-SMI 535.54  Driver Version: 535.54  CUDA Version: 12.2 |", False),  # the driver's newest, not installed
])
def test_a_cuda_no_release_of_the_wanted_major_was_built_for_shows_another_major(context: str, fires: bool) -> None:
    text = ("Could not load dynamic library 'libcudnn.so.7'; dlerror: libcudnn.so.7: cannot open shared object "
            f"file\n{context}")
    reading = read(text)
    assert (ranking.no_build_for_cuda(reading, reading.signals[0]) is not None) is fires


@pytest.mark.parametrize(("version", "prerelease"), [
    ("torch==2.6.0.dev20240914+cu121", True), ("2.4.0a0+git4c97193", True), ("PyTorch: 1.5.0a0+3bbb36e", True),
    ("pip install tf-nightly", True), ("torch==2.5.1+cu121", False), ("cuDNN 9.1.0", False),
])
def test_a_development_build_of_the_program_is_a_clue_to_its_own_bug(version: str, prerelease: bool) -> None:
    """A nightly or a build of the program's main branch runs code not yet released: beside a failing cuDNN call,
    the program's own bug gains (issue 32's framework bugs); a release build says nothing."""
    text = f"{version}\nRuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM"
    assert read(text).has("prerelease") is prerelease


@pytest.mark.parametrize(("failure", "family"), [
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
     "shape[256,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0", "out-of-memory"),
    ("kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus.", "gpu-hardware-fault"),
    ("RuntimeError: CUDA driver version is insufficient for CUDA runtime version", "driver-too-old"),
    ("RuntimeError: No CUDA GPUs are available", "no-gpu-or-driver"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "gpu-too-new"),
])
def test_a_failure_no_library_brings_about_is_not_blamed_on_a_load_message_beside_it(failure: str,
                                                                                     family: str) -> None:
    """A log that shows a library it could not open (TensorFlow's dso_loader warns and goes on) and an error that
    no missing library causes (out of memory, a GPU fault, a driver too old, no GPU, no kernel image): the error
    the program stopped on is the cause, not the load message (issue 32: no loading cause first for an error that
    is not about loading)."""
    text = ("W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library "
            f"'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory\n"
            f"{failure}")
    assert ranked(text)[0] == family


def test_cudas_named_symbol_not_found_is_not_a_library_that_did_not_load() -> None:
    """XLA's "There was an error before creating cudnn handle (500): cudaErrorSymbolNotFound : named symbol not
    found" names cuDNN and "not found", but what was not found is a symbol the CUDA runtime needs in the driver: an
    older driver, not a cuDNN library missing."""
    text = ("E1119 10:37:39.248565  283298 cuda_dnn.cc:502] There was an error before creating cudnn handle (500): "
            "cudaErrorSymbolNotFound : named symbol not found")
    assert ranked(text)[0] == "driver-too-old"


@pytest.mark.parametrize("text", [
    "ImportError: libcudnn.so.8: 无法打开共享对象文件: 没有那个文件或目录",  # glibc 2.17-2.39's zh_CN
    "ImportError: libcudnn.so.8: 无法打开共享目标文件: 没有那个文件或目录",  # 2.42's zh_CN
    "OSError: libcudnn.so.8: Kann die Shared-Object-Datei nicht öffnen: Datei oder Verzeichnis nicht gefunden",
    "OSError: libcudnn.so.8: невозможно открыть разделяемый объектный файл: Нет такого файла или каталога",
    "ImportError: libcudnn.so.8: 共有オブジェクトファイルを開けません: そのようなファイルやディレクトリはありません",
])
def test_glibcs_loader_words_in_the_users_language_are_read_as_in_english(text: str) -> None:
    """dlerror() translates the loader's words (glibc's po/<language>.po, gettext domain libc): under zh_CN, de_DE,
    ru_RU or ja_JP "cannot open shared object file: No such file or directory" is printed in that language, and is
    read as the English message, with the library it names."""
    explanation = explain(text, environ={})
    reading = explanation.reading
    assert reading.primary is not None
    assert (reading.primary.kind, reading.primary.failed) == ("cudnn-not-found", "libcudnn.so.8")
    assert ranked(text)[0] in LOADING
    assert "read as the English ones" in str(explanation.note)  # and the output says so


def test_a_failure_in_torchs_cudnn_attention_leans_to_the_frameworks_own_bug() -> None:
    """PyTorch's scaled_dot_product_attention on cuDNN (MHA.cpp, sdp_utils.cpp) is new code, the default backend in
    torch 2.5.0 and taken back in 2.5.1: a failing call inside it gains the framework's bug; outside it, nothing."""
    error = "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph."
    inside = ("  File \"modeling_clip.py\", line 491, in forward\n    attn_output = "
              f"torch.nn.functional.scaled_dot_product_attention(\n{error}")
    assert read(inside).has("attention") and not read(error).has("attention")
    assert ranked(inside).index("framework-bug") < ranked(error).index("framework-bug")


@pytest.mark.parametrize(("after", "harmless"), [
    ("", True),
    ("Traceback (most recent call last):\n  File \"repro.py\", line 38, in <module>", False),
    ("段错误 (核心已转储)", False),  # bash's "Segmentation fault (core dumped)" under zh_CN
])
def test_a_warning_is_the_whole_story_only_where_the_program_did_not_stop(after: str, harmless: bool) -> None:
    """A text of only a warning (TensorRT's logger: "[W] [TRT] TensorRT was linked against cuDNN ...") says nothing
    failed; the same warning before a traceback or a fatal signal is beside a failure the paste lost."""
    text = f"[07/22/2020-14:15:25] [W] [TRT] TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.6.0\n{after}"
    assert (ranked(text)[0] == "harmless-warning") is harmless


@pytest.mark.parametrize(("text", "clue", "holds"), [
    ("The copy of cuDNN that is installed must be at least as new as the version against which JAX was built.",
     "limit", False),  # JAX's advice on a release, not a limit on the call
    ("hidden_dim should be multiple of 8", "limit", True),
    ("works with batchsize up to 41 and starts failing at 42+", "batch-size", True),
    ("hidden = func(input, self.all_weights, hx, batch_sizes)", "batch-size", False),  # a name in code
    ("I've tried reducing the batch size, even as low as 1", "memory-hint", False),
    ("TF_FORCE_GPU_ALLOW_GROWTH=true; allow_growth", "memory-hint", True),
])
def test_a_clue_holds_on_what_its_words_mean(text: str, clue: str, holds: bool) -> None:
    """A limit is one on what the call was given, not on a release; the batch talked of in words (a batch too large
    for the memory, or past what the call supports: both causes gain) is not a name in code nor talk of memory."""
    assert read(text).has(clue) is holds


@pytest.mark.parametrize(("text", "failed"), [
    ("但GPU版本报错说找不到cudnn64_8.dll, 这个肯定是没有的", "cudnn64_8.dll"),
    ("実行すると cudnn_ops_infer64_8.dll が見つかりません と表示されます", "cudnn_ops_infer64_8.dll"),
])
def test_a_library_named_in_the_words_of_a_chinese_or_japanese_user_is_read(text: str, failed: str) -> None:
    """A CJK sentence runs into the library's name without a space ("找不到cudnn64_8.dll": cannot find), and its
    words of a failed load are the user's language's: the library is read as one that did not load."""
    primary = read(text).primary
    assert primary is not None and primary.kind in ("cudnn-not-found", "sublibrary-load") and primary.failed == failed


def test_a_second_cudnn_beside_the_one_torch_brings_is_a_copy_that_can_shadow_it() -> None:
    """torch 2.0 pins nvidia-cudnn-cu11 8.5.0.96 (reading.TORCH_CUDNN, from its wheel's Requires-Dist); a cuDNN
    8.9.3 said to be installed beside it is a second copy, whichever the loader finds first serving both."""
    text = "CUDNN_STATUS_VERSION_MISMATCH\nI have installed:\nCUDA 11.8\nPytorch 2.0.1 for CUDA 11.x\ncuDNN 8.9.3.28"
    reading = read(text)
    assert [(b.framework, b.cudnn) for b in reading.builds] == [("pytorch", (8, 5))]
    assert ranking.second_copy(reading, reading.signals[0]) is not None


def test_a_release_and_a_cuda_run_into_a_cjk_sentence_are_read() -> None:
    """"我安装了torch 2.0.1和cuda11.8" (I installed torch 2.0.1 and cuda 11.8): a CJK letter is not a word character
    next to an ASCII name, so the release and the CUDA are read as in an English sentence."""
    reading = read("我安装了torch 2.0.1和cuda11.8\nImportError: libcudnn.so.8: cannot open shared object file")
    assert [(b.framework, b.release) for b in reading.builds] == [("pytorch", "2.0")] and reading.cuda == (11, 8)


def test_here_an_address_space_limit_shows_or_rules_out_its_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    """`explain --here` checks the address-space-limit cause against this shell's own limit (`ulimit -v`), which the
    programs it starts inherit."""
    from cudnnload.diagnose.explain import here
    from cudnnload.loading import gpu

    machine = here.machine(environ={})
    monkeypatch.setattr(gpu, "address_limit", lambda: 700 << 20)
    said = here.check("address-space-limit", machine, None)  # type: ignore[arg-type]
    assert said.verdict == here.SHOWS and "700 MiB" in said.detail, said
    monkeypatch.setattr(gpu, "address_limit", lambda: None)
    assert here.check("address-space-limit", machine, None).verdict == here.RULES_OUT  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "family"), [
    # a framework's own descriptor code, nothing shown of the input: the value it computed
    ("mxnet.base.MXNetError: src/operator/nn/./cudnn/cudnn_softmax_activation-inl.h:154: Check failed: e == "
     "CUDNN_STATUS_SUCCESS (3 vs. 0) cuDNN: CUDNN_STATUS_BAD_PARAM", "framework-bug"),
    ("x = model(batch.cuda())\nRuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", "framework-bug"),
    # a shape with a zero dimension in the text: the input the framework did not check
    ("RuntimeError: Could not set tensorNd descriptor: CUDNN_STATUS_BAD_PARAMdim=4\nInputs shapes: [(0, 5, 6, 8), "
     "(3, 5, 5, 6)]", "bad-param-usage"),
    ("input: torch.Size([0, 3, 224, 224])\nRuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", "bad-param-usage"),
])
def test_a_rejected_value_is_the_framework_s_unless_the_text_shows_an_empty_input(text: str, family: str) -> None:
    """CUDNN_STATUS_BAD_PARAM reaches users through a framework's cuDNN code: the value it computed is its own bug
    first (the tuning part: 8 such reports against 6 of an input it did not check), the input where the text shows a
    shape with a zero among its dimensions (Theano's "Inputs shapes: [(0, ...", PyTorch's "torch.Size([0, ...")."""
    assert ranked(text)[0] == family


def test_a_shape_without_a_zero_dimension_is_no_empty_input() -> None:
    for text in ("padding=(0, 0)", "input shape: (10, 20)", "shape (3, 10, 5)", "torch.Size([10, 3])"):
        assert not read(text).has("zero-size"), text


FASTER_WHISPER_ABORT = ('from faster_whisper import WhisperModel\nmodel = WhisperModel("large-v3", device="cuda")\n'
                        'segments, info = model.transcribe("audio.mp3")\n\n'
                        "Process finished with exit code -1073740791 (0xC0000409)\n")


def test_ctranslate2_ending_with_abort_s_status_on_windows_is_a_cudnn_dll_that_did_not_load() -> None:
    """PyCharm's "Process finished with exit code -1073740791 (0xC0000409)" after a faster-whisper call: cuDNN aborted
    where a sub-library DLL did not load, after a line the IDE did not show. Read as a load (the major CTranslate2
    was built for first), on Windows (the status is Windows's); before: "paste the line before it", no cause."""
    result = explain(FASTER_WHISPER_ABORT, environ={})
    assert result.reading.platform == "windows"
    assert [c.family for c in result.causes[:3]] == ["wrong-cudnn-major", "cudnn-not-installed",
                                                      "installed-not-on-search-path"]
    assert all(c.confidence == "possible" for c in result.causes)
    # the same end without CTranslate2 named is no load (nothing says what aborted)
    assert explain("Process finished with exit code -1073740791 (0xC0000409)", environ={}).causes == ()


def test_a_text_without_a_known_message_shows_the_causes_its_words_name() -> None:
    """The text form printed "no cuDNN message cudnnload knows" and nothing else where the words of a text without a
    known message still named causes (the JSON listed them)."""
    from cudnnload.report import explanation_text

    said = explanation_text(explain(FASTER_WHISPER_ABORT, environ={}))
    assert said.startswith("no cuDNN message cudnnload knows in this text\n")
    assert "1. the program needs cuDNN, and another major is installed  [possible; wrong-cudnn-major]" in said


JAX_NO_DEVICE = """jax.errors.JaxRuntimeError: INTERNAL: no supported devices found for platform CUDA

The above exception was the direct cause of the following exception:

RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform CUDA (you may \
need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this backend.)"""


def test_jax_finding_no_device_it_can_start_on_is_read_as_memory_first_and_its_advice_as_no_evidence() -> None:
    """JAX 0.12 beside a process holding the GPU's memory (the GPU machine, bench/frameworks_more.py
    gpu-memory-held): XLA's "no supported devices found for platform CUDA", which JAX's own warning reads as memory
    preallocated elsewhere. Before, explain knew no message in it."""
    result = explain(JAX_NO_DEVICE, environ={})
    assert [c.family for c in result.causes[:3]][:1] == ["out-of-memory"]
    assert {"no-gpu-or-driver", "driver-too-old"} <= {c.family for c in result.causes[:4]}
    assert all("uninstall the failing plugin" not in " ".join(c.evidence) for c in result.causes)
    warned = explain("CUDA backend failed to initialize: no supported devices found for platform CUDA.This may be "
                     "due to JAX pre-allocating too much device memory, leaving too little for CUDA library "
                     "initialization.", environ={})
    assert warned.causes[0].family == "out-of-memory"


# XLA's own warnings (nvptx_compiler.cc, conv_algorithm_picker.cc): each is recognised, said to be only a warning,
# and leaves the run going; a later error in the same text is what is explained
@pytest.mark.parametrize(("text", "second"), [
    ("2024-05-28 04:48:02.870689: W external/xla/xla/service/gpu/nvptx_compiler.cc:760] The NVIDIA driver's CUDA "
     "version is 12.4 which is older than the ptxas CUDA version (12.5.40). Because the driver is older than the "
     "ptxas version, XLA is disabling parallel compilation, which may slow down compilation.", "driver-too-old"),
    ("W external/xla/xla/service/gpu/nvptx_compiler.cc:893] The NVIDIA driver's CUDA version is 12.3 which is older "
     "than the PTX compiler version 12.5.82. Because the driver is older than the PTX compiler version, XLA is "
     "disabling parallel compilation", "driver-too-old"),
    ("W tensorflow/compiler/xla/service/gpu/gpu_conv_algorithm_picker.cc:729] None of the algorithms provided by "
     "cuDNN heuristics worked; trying fallback algorithms.  Conv: (f32[128,256,28,28]{3,2,1,0}, u8[0]{0})",
     "out-of-memory"),
    ("E external/local_xla/xla/service/gpu/conv_algorithm_picker.cc:705] Results mismatch between different "
     "convolution algorithms. This is likely a bug/unexpected loss of precision in cudnn.", "known-bad-release"),
])
def test_xla_s_warnings_are_read_as_warnings(text: str, second: str) -> None:
    signal = read(text).primary
    assert signal is not None and signal.warning and signal.kind == "warning"
    assert ranked(text)[:2] == ["harmless-warning", second]


@pytest.mark.parametrize("words", ["Results mismatch between two cudnn runs", "shape mismatch in the cudnn conv",
                                   "size mismatch for conv1.weight (cudnn enabled)"])
def test_a_mismatch_of_results_or_shapes_is_no_version_that_does_not_fit(words: str) -> None:
    signal = read(words).primary
    assert signal is not None and signal.kind != "version-unclear"


def test_a_warning_of_xla_beside_the_failure_is_not_what_is_explained() -> None:
    text = ("W external/xla/xla/service/gpu/nvptx_compiler.cc:760] The NVIDIA driver's CUDA version is 12.4 which is "
            "older than the ptxas CUDA version (12.5.40). Because the driver is older than the ptxas version, XLA is "
            "disabling parallel compilation, which may slow down compilation.\n"
            "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2251] Cannot dlopen some GPU libraries. Please make "
            "sure the missing libraries mentioned above are installed properly if you would like to use GPU.")
    assert read(text).primary.kind == "framework-no-cudnn"  # type: ignore[union-attr]
    assert ranked(text)[0] in LOADING


def test_a_gpu_library_that_did_not_open_is_no_version_check() -> None:
    # TensorFlow's gpu_device.cc says it after tsl's DsoLoader only tried to dlopen: nothing was checked, so an older
    # or a shadowing cuDNN of the right major (which would have opened) is not what failed
    text = ("W0000 00:00:1737317404.258825   10111 gpu_device.cc:2344] Cannot dlopen some GPU libraries. Please make "
            "sure the missing libraries mentioned above are installed properly if you would like to use GPU.")
    causes = ranked(text)
    assert set(causes[:4]) <= LOADING | {"libcudart-missing-or-wrong", "cublas-missing-or-wrong"}
    for family in ("runtime-older-than-build", "version-mismatch-shadowed"):
        assert causes.index(family) > causes.index("cudnn-not-installed")


def test_a_dll_that_torch_found_in_its_own_folder_is_there_and_a_dll_it_needs_is_not() -> None:
    # torch/__init__.py lists torch\lib's DLLs and loads each: error 126 then names a file that exists
    text = ('OSError: [WinError 126] The specified module could not be found. Error loading '
            '"C:\\venv\\Lib\\site-packages\\torch\\lib\\cudnn_adv64_9.dll" or one of its dependencies.')
    result = explain(text, environ={})
    top = [cause.family for cause in result.causes][:3]
    assert top[0] == "sublibrary-missing"
    assert not {"cudnn-not-installed", "wheel-not-on-linker-path", "installed-not-on-search-path",
                "wrong-cudnn-major"} & set(top)
    assert "zlib-missing" not in top  # only cuDNN 8.3-8.9 need zlibwapi.dll
    assert "is there, a DLL it needs is not" in (result.causes[0].fix.text or "")
    # PyPI's torch for Windows is a CPU build: no pip action that would put it in place of the CUDA one
    assert all(action["do"] == "manual" for action in actions(result, "sublibrary-missing"))


def test_one_of_cuda_s_math_libraries_missing_is_no_missing_cudnn() -> None:
    text = ("[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: "
            "libcufft.so.11: cannot open shared object file: No such file or directory")
    result = explain(text, environ={})
    assert result.causes[0].family == "cublas-missing-or-wrong"
    assert "libcufft.so.11" in result.causes[0].title and not set(ranked(text)[:3]) & {"cudnn-not-installed"}
    step, = actions(explain(text + "\nCUDA Version: 12.4", environ={}), "cublas-missing-or-wrong")
    assert (step["do"], step["requirements"]) == ("pip-install", ["nvidia-cufft-cu12"])
    # TensorFlow lists every library it could not open: cuDNN's comes first, the math libraries are its siblings
    listed = ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
              "'libcufft.so.10'; dlerror: libcufft.so.10: cannot open shared object file: No such file or directory\n"
              "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
              "'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory")
    assert read(listed).primary.kind == "cudnn-not-found"  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "family"), [
    ("cudaMalloc returned cudaErrorMemoryAllocation", "out-of-memory"),
    ("Unable to initialize backend 'cuda': jaxlib/cuda/versions_helpers.cc:98: operation cuInit(0) failed: "
     "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (you may need to set JAX_PLATFORMS=cpu)", "driver-too-old"),
    ("E external/xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: "
     "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "driver-not-ready"),
    ("XlaRuntimeError: INTERNAL: CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "driver-too-old"),
    ("RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.", "driver-too-old"),
])
def test_a_cuda_error_s_name_means_what_its_text_means(text: str, family: str) -> None:
    # the catalog's names come from the CUDA runtime wheel itself (cudaGetErrorName, cuda.h's CUresult), each tied to
    # the text cudaGetErrorString gives for the same code
    signal = read(text).primary
    assert signal is not None and signal.entry and signal.entry.startswith("cuda-runtime/")
    assert ranked(text)[0] == family
    names = {entry.template for entry in catalog.load().entries if entry.source == "cuda-runtime"}
    assert {"CUDA_ERROR_NO_DEVICE", "cudaErrorNoDevice", "no CUDA-capable device is detected"} <= names


def test_a_traceback_cut_in_torch_s_search_for_its_wheels_is_that_search() -> None:
    # the frame of torch/__init__.py's _preload_cuda_deps, its ValueError line lost: torch looked on sys.path for its
    # nvidia-* wheels' libraries; with the ValueError in the text, that line is the message (read once)
    cut = ('>>> import torch\nTraceback (most recent call last):\n  File ".../torch/__init__.py", line 404, in '
           '<module>\n    _load_global_deps()\n  File ".../torch/__init__.py", line 362, in _load_global_deps\n'
           '    _preload_cuda_deps(lib_folder,')
    signal = read(cut).primary
    assert signal is not None and (signal.pattern, signal.kind) == ("torch-preload-frame", "cudnn-not-found")
    assert "torch-without-nvidia-deps" in ranked(cut)[:5]
    whole = cut + " lib_name)\nValueError: libcudnn.so.*[0-9] not found in the system path ['/app']"
    assert [s.pattern for s in read(whole).signals if s.pattern.startswith("torch-preload")] == ["torch-preload"]


def test_onnx_runtime_s_loadlibrary_words_cut_before_the_file_are_a_dll_that_did_not_load() -> None:
    # core/platform/windows/env.cc: 'LoadLibrary failed with error 126 "" when trying to load "X"', here cut (an
    # issue's title): a load that failed, the file not named; not "no known message"
    signal = read("FAIL : LoadLibrary failed with error 126").primary
    assert signal is not None and (signal.pattern, signal.kind, signal.error) == (
        "ort-load-unnamed", "cudnn-not-found", "error 126")
    assert ranked("FAIL : LoadLibrary failed with error 126")[0] in LOADING
    whole = ('LoadLibrary failed with error 126 "" when trying to load '
             '"C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"')
    assert read(whole).primary.pattern == "windows-load"  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "family", "library"), [
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Unable to load cuSPARSE. Is it installed?",
     "cublas-missing-or-wrong", "libcusparse"),
    ("RuntimeError: Unable to initialize backend 'cuda': Unable to load cuPTI. Is it installed? (you may need to set "
     "JAX_PLATFORMS=cpu)", "cublas-missing-or-wrong", "libcupti"),
    ("Unable to use CUDA because of the following issues with CUDA components:\nOutdated cuSPARSE installation found.\n"
     "Version JAX was built against: 12200\nMinimum supported: 12100\nInstalled version: 12002",
     "cublas-missing-or-wrong", "libcusparse"),
    ("CUDA backend failed to initialize: Found CUDA version 12010, but JAX was built against version 12020, which is "
     "newer.", "libcudart-missing-or-wrong", "libcudart"),
])
def test_jax_s_checks_of_cuda_s_other_libraries_name_that_library_not_cudnn(text: str, family: str,
                                                                            library: str) -> None:
    signal = read(text).primary
    assert signal is not None and (signal.pattern, signal.failed) == ("jax-component", library)
    assert ranked(text)[0] == family and "cudnn-not-installed" not in ranked(text)[:2]
    # JAX's same words about cuDNN stay cuDNN's
    assert read(text.replace("cuSPARSE", "cuDNN").replace("cuPTI", "cuDNN")).primary.pattern != "jax-component" \
        or "cuSPARSE" not in text and "cuPTI" not in text  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "framework"), [
    ("AssertionError: Torch not compiled with CUDA enabled", "pytorch"),
    ("WARNING:2025-06-10 09:01:40,857:jax._src.xla_bridge:966: An NVIDIA GPU may be present on this machine, but a "
     "CUDA-enabled jaxlib is not installed. Falling back to cpu.", "jax"),
    ("/venv/lib/python3.11/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py:69: UserWarning: "
     "Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
     "'AzureExecutionProvider, CPUExecutionProvider'", "onnxruntime"),
    ("ValueError: The device should not be 'gpu', since PaddlePaddle is not compiled with CUDA", "paddle"),
])
def test_a_framework_s_build_without_cuda_is_said_to_be_one(text: str, framework: str) -> None:
    # the framework's own words when asked for the GPU (or falling back to the CPU, logged as a warning: running
    # without the GPU is the failure): nothing of CUDA's was looked for, so no cuDNN, library or driver is blamed
    assert _the_failure(text, "cpu-build", "cpu-only-build").reading.framework == framework


def _the_failure(text: str, kind: str, family: str) -> Explanation:
    """``text``'s first message is of ``kind`` and the failure, not a warning though a logger may mark it one (the
    program went on without the GPU); ``family`` is ranked first, and no cause about loading at all."""
    primary = read(text).primary
    assert primary is not None and primary.kind == kind and not primary.warning
    result = explain(text, environ={})
    assert result.causes[0].family == family and not {c.family for c in result.causes} & LOADING
    return result


def test_the_fix_of_a_build_without_cuda_is_the_framework_s_cuda_build() -> None:
    torch = "AssertionError: Torch not compiled with CUDA enabled"
    step, = actions(explain(torch + "\nNVIDIA-SMI 550.54  Driver Version: 550.54  CUDA Version: 12.4", environ={}),
                    "cpu-only-build")
    assert step["do"] == "pip-install" and step["requirements"] == ["torch"]
    assert "https://download.pytorch.org/whl/cu126" in step["options"]  # type: ignore[operator]
    assert actions(explain(torch, environ={}), "cpu-only-build")[0]["do"] == "manual"  # no CUDA shown: in words
    assert "mps" in str(actions(explain(torch + "\nDarwin Kernel Version 23.1.0", environ={}), "cpu-only-build"))
    ort = "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names."
    uninstall, install = actions(explain(ort, environ={}), "cpu-only-build")
    # both packages write the same onnxruntime folder: the CPU one goes too, or its files stay over the GPU one's
    assert (uninstall["do"], uninstall["requirements"]) == ("pip-uninstall", ["onnxruntime", "onnxruntime-gpu"])
    assert (install["do"], install["requirements"]) == ("pip-install", ["onnxruntime-gpu"])


def test_jax_s_fallback_after_its_plugin_failed_stays_behind_that_failure() -> None:
    # JAX prints the same fallback line after a CUDA plugin that failed to start: the failure is the message
    reading = read(_JAX_SHIM_NOT_ELF)
    assert reading.primary is not None and reading.primary.kind != "cpu-build"
    assert ranked(_JAX_SHIM_NOT_ELF)[0] != "cpu-only-build"


def test_here_finds_the_framework_installed_without_cuda(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "torch-2.5.1+cpu.dist-info").mkdir()
    text = "AssertionError: Torch not compiled with CUDA enabled"
    cause = explain(text, here=True, environ={}, site_paths=[str(site)]).causes[0]
    assert (cause.family, cause.here) == ("cpu-only-build", "shows") and "libtorch_cuda.so" in (cause.here_detail or "")
    (site / "torch" / "lib" / "libtorch_cuda.so").write_bytes(b"")
    cause = explain(text, here=True, environ={}, site_paths=[str(site)]).causes[0]
    assert cause.here == "rules out"
    assert explain(text, here=True, environ={}, site_paths=[str(tmp_path)]).causes[0].here == "cannot tell"


@pytest.mark.parametrize(("text", "says"), [
    ("Failed to initialize NVML: Driver/library version mismatch", "reboot"),
    ("/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:107: UserWarning: CUDA initialization: CUDA unknown "
     "error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES "
     "after program start. Setting the available devices to be zero. (Triggered internally at "
     "../c10/cuda/CUDAFunctions.cpp:109.)", "modprobe nvidia_uvm"),
    ("RuntimeError: CUDA error: system not yet initialized", "nvidia-fabricmanager"),
])
def test_a_driver_installed_but_not_ready_to_run_cuda_is_its_state_not_an_install(text: str, says: str) -> None:
    # NVML's, PyTorch's and the CUDA runtime's words for a driver that cannot start CUDA now: what puts it back is what
    # doctor says for the same cuInit result (judge.gpu.INIT_FIXES), never something to install; PyTorch's warning
    # is the failure (it sets the devices to zero)
    result = _the_failure(text, "driver-state", "driver-not-ready")
    assert says in str(actions(result, "driver-not-ready"))


@pytest.mark.parametrize(("text", "family", "says"), [
    # TensorFlow's stand-in for the driver (tsl/cuda/cuda_stub.cc) answers 303 when libcuda.so.1 could not be loaded,
    # and cannot name it: what follows (cuda_diagnostics.cc) says no kernel driver runs here
    ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcuda.so.1'; "
     "dlerror: libcuda.so.1: cannot open shared object file: No such file or directory\n"
     "W tensorflow/stream_executor/cuda/cuda_driver.cc:269] failed call to cuInit: UNKNOWN ERROR (303)\n"
     "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this "
     "host (devel): /proc/driver/nvidia/version does not exist", "no-gpu-or-driver", "install the NVIDIA driver"),
    ("E0000 00:00:1776257581.500348 3672657 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: "
     "Failed call to cuInit: UNKNOWN ERROR (303)", "no-gpu-or-driver", "install the NVIDIA driver"),
    # the CUDA toolkit's stub libcuda.so in place of the driver's: cuda.h's CUDA_ERROR_STUB_LIBRARY, by number
    ("E tensorflow/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: UNKNOWN ERROR (34)",
     "no-gpu-or-driver", "lib64/stubs"),
    # named: the driver's own state (judge.gpu.INIT_FIXES, as doctor says for the same result)
    ("E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_UNKNOWN: "
     "unknown error", "driver-not-ready", "modprobe nvidia_uvm"),
    ("numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: [999] Call to cuInit results in "
     "CUDA_ERROR_UNKNOWN", "driver-not-ready", "modprobe nvidia_uvm"),
    ("pycuda._driver.Error: cuInit failed: unknown error", "driver-not-ready", "modprobe nvidia_uvm"),
    ("failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver "
     "combination", "driver-not-ready", "reboot"),
    ("failed call to cuInit: CUDA_ERROR_NOT_PERMITTED: operation not permitted", "driver-not-ready", "dmesg"),
])
def test_a_failed_cuinit_is_read_by_its_result_named_or_numbered(text: str, family: str, says: str) -> None:
    # every framework's words for cuInit failing (TensorFlow/XLA, numba, PyCUDA) name its result or print its number;
    # the number is named from cuda.h's table in the catalog, and the result decides the cause and its fix
    loaded = "Could not load dynamic library" in text  # TensorFlow's own line on libcuda.so.1 comes first
    result = explain(text, environ={}) if loaded else _the_failure(text, "driver-state", family)
    assert result.causes[0].family == family and says in str(actions(result, family))


def test_a_failed_cuinit_that_finds_no_device_stays_the_no_device_fact() -> None:
    text = "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
    assert read(text).primary is None or read(text).primary.pattern != "cuinit"  # type: ignore[union-attr]
    assert ranked(text)[0] == "no-gpu-or-driver"


@pytest.mark.parametrize("text", [
    "cupy.cuda.compiler.CompileException: nvrtc: error: invalid value for --gpu-architecture (-arch)",
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ptxas exited with non-zero error code 65280, output: ptxas fatal"
    "   : Value 'sm_90a' is not defined for option 'gpu-name'"])
def test_a_cuda_compiler_refusing_the_gpu_s_architecture_is_a_cuda_older_than_the_gpu(text: str) -> None:
    # NVRTC's and ptxas's words for nvcc's "Unsupported gpu architecture": the compiler predates the GPU
    assert ranked(text)[0] == "gpu-too-new"


def test_onnx_runtime_s_other_provider_library_that_failed_to_load_is_gone_past() -> None:
    # logged at error level, but the session goes on with the next provider: TensorRT's libnvinfer is no cuDNN
    tensorrt = ("[E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_TensorRT] /onnxruntime_src/"
                "onnxruntime/core/session/provider_bridge_ort.cc:1539 onnxruntime::Provider& onnxruntime::"
                "ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
                "libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.10: cannot open shared object file: "
                "No such file or directory")
    assert ranked(tensorrt) == ["harmless-warning"]
    # ...and the CUDA provider's failure after it is the failure
    cuda = tensorrt.replace("TensorRT", "CUDA").replace("tensorrt", "cuda").replace("libnvinfer.so.10",
                                                                                    "libcudnn_adv.so.9")
    assert ranked(tensorrt + "\n" + cuda)[0] in LOADING


@pytest.mark.parametrize(("dll", "family"), [("c10.dll", "glibc-or-libstdcxx-too-old"),
                                              ("cublas64_11.dll", "paging-file-too-small")])
def test_a_dll_that_failed_its_initialisation_is_its_runtime_or_the_commit_limit(dll: str, family: str) -> None:
    # Windows error 1114 (DllMain failed), in any language: a framework's core DLL built with a newer MSVC than the
    # msvcp140.dll loaded (the Visual C++ Redistributable), or one of CUDA's large DLLs past the commit limit
    for words in ("A dynamic link library (DLL) initialization routine failed.", "动态链接库(DLL)初始化例程失败。"):
        text = (f'OSError: [WinError 1114] {words} Error loading "C:\\venv\\Lib\\site-packages\\torch\\lib\\{dll}" '
                "or one of its dependencies.")
        result = explain(text, environ={})
        assert result.causes[0].family == family, words
    if family == "glibc-or-libstdcxx-too-old":
        assert "vc_redist.x64.exe" in str(actions(result, family))
        assert "Visual C++" in result.causes[0].title


@pytest.mark.parametrize(("text", "framework"), [
    ("RuntimeError: jaxlib version 0.6.0 is newer than and incompatible with jax version 0.4.21. Please update your "
     "jax and/or jaxlib packages.", "jax"),
    ("ValueError: jaxlib is version 0.4.30, but this version of jax requires version >= 0.4.31.", "jax"),
    ("Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()\n"
     "    options = xla_client.generate_pjrt_gpu_plugin_options()\n"
     "AttributeError: module 'jaxlib.xla_client' has no attribute 'generate_pjrt_gpu_plugin_options'", "jax"),
    ("RuntimeError: operator torchvision::nms does not exist", "pytorch"),
    # the plugin's compiled part did not import (jax_plugins/xla_cuda12/__init__.py, _check_cuda_versions)
    ("Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()\n"
     '  File "/v/site-packages/jax_plugins/xla_cuda12/__init__.py", line 281, in _check_cuda_versions\n'
     "    assert cuda_versions is not None\nAssertionError", "jax"),
    # jax/_src/xla_bridge.py discover_pjrt_plugins, logged as a warning: JAX goes on without the GPU
    ("WARNING:jax._src.xla_bridge:Jax plugin configuration error: Plugin module jax_plugins.xla_cuda12 does not "
     "exist", "jax"),
])
def test_a_framework_whose_own_packages_do_not_go_together(text: str, framework: str) -> None:
    # JAX's check_jaxlib_version, its CUDA plugin calling another jaxlib, torchvision built for another torch: the
    # framework's parts, installed together at one release, fix it; nothing of cuDNN's
    result = _the_failure(text, "parts-mismatch", "framework-parts-mismatch")
    assert result.reading.framework == framework
    steps = actions(result, "framework-parts-mismatch")
    assert ("jax[cuda12]" in str(steps)) == (framework == "jax") and ("torchvision" in str(steps)) == (
        framework == "pytorch")


_JAX_PLUGIN_RAISED = ("ERROR:2026-10-07 11:03:13,410:jax._src.xla_bridge:444: Jax plugin configuration error: "
                      "Exception when calling jax_plugins.xla_cuda13.initialize()")
_JAX_FELL_BACK = ("WARNING:2026-10-07 11:03:13,500:jax._src.xla_bridge:969: An NVIDIA GPU may be present on this "
                  "machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.")


@pytest.mark.parametrize("text", [_JAX_PLUGIN_RAISED, f"{_JAX_PLUGIN_RAISED}\n{_JAX_FELL_BACK}"])
def test_jax_s_plugin_that_raised_at_start_is_read_without_its_exception(text: str) -> None:
    # JAX logs the plugin's failure (logger.exception) and goes on on the CPU, then says a CUDA-enabled jaxlib is
    # not installed, which it is: the plugin's failure is the message, its causes the version check's, cuInit's
    # and the packages' (a paste cut off before the exception)
    reading = read(text)
    assert reading.primary is not None and reading.primary.kind == "gpu-plugin" and not reading.primary.warning
    families = ranked(text)
    assert "cpu-only-build" not in families[:3]
    assert {"runtime-older-than-build", "no-gpu-or-driver", "framework-parts-mismatch"} <= set(families[:4])


def test_jax_s_fix_follows_the_cuda_of_the_plugin_the_text_names() -> None:
    text = _JAX_PLUGIN_RAISED + "\n    assert cuda_versions is not None\nAssertionError"
    assert "jax[cuda13]" in str(actions(explain(text, environ={}), "framework-parts-mismatch"))
    assert "jax[cuda12]" in str(actions(explain(text.replace("cuda13", "cuda12"), environ={}),
                                        "framework-parts-mismatch"))


def test_onnx_runtime_s_provider_that_did_not_load_is_a_library_not_found_not_a_version_check() -> None:
    # onnxruntime_pybind_state.cc checks no version: "Require cuDNN 9.* and CUDA 12.*" follows any failure to load
    # the provider library (was runtime-older-than-build first, from the kind's priors)
    text = ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to create "
            "CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies as mentioned in "
            "the GPU requirements page")
    families = ranked(text)
    assert families[0] == "cudnn-not-installed" and "runtime-older-than-build" not in families[:4]
    assert {"libcudart-missing-or-wrong", "wrong-cudnn-major"} <= set(families[:4])


@pytest.mark.parametrize("text", ["RuntimeError: CUDA error: unknown error\nCUDA kernel errors might be asynchronously "
                                  "reported at some other API call, so the stacktrace below might be incorrect.",
                                  "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorUnknown: unknown error"])
def test_cuda_s_unknown_error_is_the_driver_s_state_or_the_gpu(text: str) -> None:
    # cudaErrorUnknown as PyTorch and CuPy print it (was "not recognised", or the driver too old): the UVM module's
    # state at the first call (doctor's fix for that result), a GPU that faulted later; an Xid in the text decides
    result = _the_failure(text, "driver-state", "driver-not-ready")
    assert "nvidia_uvm" in str(actions(result, "driver-not-ready"))
    assert ranked(text)[:2] == ["driver-not-ready", "gpu-hardware-fault"]
    assert ranked(text + "\nNVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus.")[0] == \
        "gpu-hardware-fault"


_ORT_CALL = ("onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : CUDA failure {}: {} ; "
             "GPU=0 ; hostname=x ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider.cc ; "
             "line=282 ; expr={}")


@pytest.mark.parametrize(("number", "words", "expr", "family"), [
    (100, "no CUDA-capable device is detected", "cudaSetDevice(info_.device_id);", "no-gpu-or-driver"),
    (999, "unknown error", "cudaSetDevice(info_.device_id);", "driver-not-ready"),
    (46, "CUDA-capable device(s) is/are busy or unavailable", "cudaSetDevice(info_.device_id);", "gpu-unavailable"),
    (35, "CUDA driver version is insufficient for CUDA runtime version", "cudaSetDevice(info_.device_id);",
     "driver-too-old"),
    # a later call's failure is the kernel's, not the driver's start
    (700, "an illegal memory access was encountered", "cudaMemcpyAsync(dst_data, src_data, bytes);",
     "execution-failed-kernel"),
])
def test_onnx_runtime_s_cuda_call_that_starts_the_driver_is_read_by_its_result(number: int, words: str, expr: str,
                                                                              family: str) -> None:
    # core/providers/cuda/cuda_call.cc: "CUDA failure %d: %s ; GPU=%d ; ... expr=%s" (100 and 999 at cudaSetDevice
    # were execution-failed-kernel first)
    assert ranked(_ORT_CALL.format(number, words, expr))[0] == family


_DEVICE_COUNT = ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
                 "functions before calling NumCudaDevices() that might have already set an error? Error {}: {} "
                 "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)")


@pytest.mark.parametrize(("number", "words", "family"), [
    (803, "system has unsupported display driver / cuda driver combination", "driver-not-ready"),
    (804, "forward compatibility was attempted on non supported HW", "driver-too-old"),
    (999, "unknown error", "driver-not-ready"),
    (46, "CUDA-capable device(s) is/are busy or unavailable", "gpu-unavailable"),
])
def test_pytorch_s_first_cuda_call_failing_is_read_by_its_result_though_logged_as_a_warning(
        number: int, words: str, family: str) -> None:
    # c10/cuda/CUDAFunctions.cpp warns, and torch then has no GPU: the runtime's error number is cuInit's result
    # (was "only a warning" first for 803)
    text = _DEVICE_COUNT.format(number, words)
    assert _the_failure(text, "driver-state", family).reading.primary.pattern == "device-count"  # type: ignore[union-attr]


@pytest.mark.parametrize("text", [
    "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    "failed call to cuInit: CUDA_ERROR_DEVICE_UNAVAILABLE: CUDA-capable device(s) is/are busy or unavailable",
])
def test_a_gpu_no_new_process_may_use_is_its_compute_mode(text: str) -> None:
    # cudaErrorDevicesUnavailable (46): EXCLUSIVE_PROCESS held by another process, or PROHIBITED; its fix names the
    # holder, another GPU and the default compute mode
    result = explain(text, environ={})
    assert result.causes[0].family == "gpu-unavailable" and not {c.family for c in result.causes} & LOADING
    assert "nvidia-smi -i <GPU> -c DEFAULT" in str(actions(result, "gpu-unavailable"))


def test_here_tells_a_gpu_held_in_an_exclusive_compute_mode() -> None:
    from dataclasses import replace

    from cudnnload.diagnose.explain import here
    from cudnnload.resolve.hardware import Device, GpuFacts, Holder

    text = "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"
    held = Device(0, "NVIDIA H100", (9, 0), 80 << 30, "00000000:01:00.0", free_memory=70 << 30,
                  holders=(Holder(4242, 2 << 30, "python3 train.py"),), uuid="GPU-1",
                  compute_mode="exclusive-process")

    def machine(device: Device) -> here.Machine:
        facts = GpuFacts("13.0", True, 13000, (device,), None, None, None, "580.0", ())
        return here.Machine({}, [], _gpu=facts)

    found = here.check("gpu-unavailable", machine(held), read(text))
    assert found.verdict == here.SHOWS and "exclusive-process" in found.detail and "4242" in found.detail
    free = here.check("gpu-unavailable", machine(replace(held, compute_mode="default")), read(text))
    assert free.verdict == here.RULES_OUT


def test_jax_s_plugin_failing_at_cuinit_is_the_driver_not_its_packages() -> None:
    text = ("Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()\n"
            "RuntimeError: jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: CUDA_ERROR_UNKNOWN")
    assert ranked(text)[0] == "driver-not-ready"


def _dists(site: Path, *names: str) -> list[str]:
    for name in names:
        (site / f"{name}.dist-info").mkdir(parents=True)
    return [str(site)]


@pytest.mark.parametrize(("installed", "here"), [
    (("jax-0.4.30", "jaxlib-0.4.30", "jax_cuda12_plugin-0.4.30", "jax_cuda12_pjrt-0.4.30"), "rules out"),
    (("jax-0.4.30", "jaxlib-0.4.31", "jax_cuda12_plugin-0.4.31"), "shows"),
    (("jax-0.4.31", "jaxlib-0.4.31", "jax_cuda12_plugin-0.4.28"), "shows"),
    (("jax-0.4.31",), "cannot tell"),
    (("torch-2.5.1+cu121", "torchvision-0.20.1+cu121"), "rules out"),
    (("torch-2.5.1+cu121", "torchvision-0.19.0+cu121"), "shows"),
    (("torch-2.5.1+cu121", "torchvision-0.20.1+cu118"), "shows"),
    (("torch-1.13.1", "torchvision-0.14.1"), "rules out"),
])
def test_here_compares_the_framework_s_own_packages(tmp_path: Path, installed: tuple[str, ...], here: str) -> None:
    text = ("RuntimeError: operator torchvision::nms does not exist" if installed[0].startswith("torch") else
            "ValueError: jaxlib is version 0.4.30, but this version of jax requires version >= 0.4.31.")
    cause = explain(text, here=True, environ={}, site_paths=_dists(tmp_path / "site", *installed)).causes[0]
    assert (cause.family, cause.here) == ("framework-parts-mismatch", here), cause.here_detail


@pytest.mark.parametrize(("status", "first", "listed"), [
    ("INTERNAL_ERROR_COMPILATION_FAILED", "gpu-too-new", "nvrtc-wrong"),
    ("EXECUTION_FAILED_CUBLAS", "gpu-too-new", "cublas-missing-or-wrong"),
    ("INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED", "out-of-memory", "out-of-memory"),
    ("INTERNAL_ERROR_HOST_ALLOCATION_FAILED", "out-of-memory", "out-of-memory"),
])
def test_cudnn_9_s_finer_codes_name_what_failed_inside_it(status: str, first: str, listed: str) -> None:
    # run-time compilation (NVRTC), a cuBLAS call, an allocation of cuDNN's own: a status at run time puts the GPU and
    # the release first, never a load, and still lists the library that may be another release's
    causes = ranked(f"RuntimeError: cuDNN error: CUDNN_STATUS_{status}")
    assert causes[0] == first and listed in causes and causes[0] not in LOADING


@pytest.mark.parametrize(("dll", "says"), [("fbgemm.dll", "libomp140.x86_64.dll"), ("c10.dll", "vc_redist.x64.exe")])
def test_a_dll_of_pytorch_s_own_that_needs_no_cuda_is_the_c_runtime_it_needs(dll: str, says: str) -> None:
    # error 126 "or one of its dependencies" at a DLL torch found in its own torch\lib and that needs no CUDA library:
    # a runtime of the system is missing (torch 2.4.0's fbgemm.dll: libomp140.x86_64.dll), never a cuDNN
    text = (f'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\\\venv\\\\Lib\\\\'
            f'site-packages\\\\torch\\\\lib\\\\{dll}" or one of its dependencies.')
    result = explain(text, environ={})
    assert [c.family for c in result.causes] == ["glibc-or-libstdcxx-too-old"]
    assert says in str(actions(result, "glibc-or-libstdcxx-too-old"))
    # ...while a cuDNN DLL of torch\lib stays a cuDNN matter
    assert ranked(text.replace(dll, "cudnn_adv64_9.dll"))[0] != "glibc-or-libstdcxx-too-old"


def test_pytorch_s_driver_initialisation_failure_is_no_driver_or_gpu_here() -> None:
    # c10/cuda/CUDAFunctions.cpp's words for cudaErrorInitializationError, a warning after which torch has no GPU
    text = ("UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu. "
            "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)")
    _the_failure(text, "driver-state", "no-gpu-or-driver")
    assert ranked("failed call to cuInit: CUDA_ERROR_NOT_INITIALIZED: initialization error")[0] == "no-gpu-or-driver"


@pytest.mark.parametrize("text", [
    "RuntimeError: CUDA error: invalid device ordinal",
    "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && device < "
    "num_gpus INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/CUDAContext.cpp\":50, please report a bug to PyTorch. "
    "device=1, num_gpus=1"])
def test_a_gpu_index_the_process_does_not_have_is_the_program_s_choice(text: str) -> None:
    result = _the_failure(text, "device-index", "bad-param-usage")
    assert "device_count" in str(actions(result, "bad-param-usage")) and "GPU index" in result.causes[0].title


def test_wsl_s_libcuda_out_of_the_search_is_its_folder_not_a_missing_driver() -> None:
    # WSL's driver is Windows': its Linux libraries only in /usr/lib/wsl/lib; a WSL text that names Windows is no
    # Windows text (its loader is Linux's)
    text = ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
            "'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory\n"
            "(Ubuntu 22.04 under WSL2, nvidia-smi works in Windows)")
    result = explain(text, environ={})
    assert result.causes[0].family == "libcuda-missing" and "/usr/lib/wsl/lib" in result.causes[0].title
    assert "/usr/lib/wsl/lib" in str(actions(result, "libcuda-missing"))


def test_pytorchs_check_of_every_visible_gpu_names_the_old_one_to_hide() -> None:
    """torch/backends/cudnn/__init__.py raises "cuDNN version N is not compatible with devices with SM < 7.5" when its
    cuDNN is 9.11 or later and any GPU the process can see is older than Turing: the GPU is too old, and where
    another GPU is newer, hiding the old one is the fix (the check reads every visible GPU)."""
    text = ("RuntimeError: cuDNN version 91900 is not compatible with devices with SM < 7.5. Please install a version "
            "of PyTorch with a compatible cuDNN version. https://github.com/pytorch/pytorch/blob/main/RELEASE.md"
            "#release-compatibility-matrix")
    first = explain(text, environ={}).causes[0]
    assert first.family == "gpu-too-old"
    assert "CUDA_VISIBLE_DEVICES" in first.fix.json()["text"]
    assert "CUDA_VISIBLE_DEVICES" not in explain("CUDNN_STATUS_ARCH_MISMATCH", environ={}).causes[0].fix.json()[
        "text"]


def test_cuda_asked_for_in_a_forked_child_is_the_programs_use_with_its_own_why_and_fix() -> None:
    """PyTorch's torch/cuda/__init__.py refuses CUDA in a child forked after the parent started it (a DataLoader
    worker): the program's use, with the spawn start method as the fix, and its own why and check (not the zero-sized
    tensor of the family's words)."""
    result = explain("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                     "multiprocessing, you must use the 'spawn' start method", environ={})
    first = result.causes[0]
    assert first.family == "bad-param-usage" and "forked" in first.title
    assert "spawn" in first.fix.actions[0].text and "fork()" in first.why and "num_workers" in first.tell
    assert "zero" not in first.why + first.tell


def test_a_programs_misuse_without_words_of_its_own_keeps_the_familys() -> None:
    causes = explain("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", environ={}).causes
    misuse = next(cause for cause in causes if cause.family == "bad-param-usage")
    assert "zero" in misuse.why and "zero-sized" in misuse.title


@pytest.mark.parametrize("text", [
    "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
    "RuntimeError: Found NVIDIA GeForce GTX 1080 Ti which is too old to be supported by the triton GPU compiler, which "
    "is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA "
    "capability 6.1",
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
    "compute capability 7.5.",
])
def test_a_programs_own_requirement_of_a_newer_gpu_is_the_gpu_too_old(text: str) -> None:
    """A program (flash-attn, Triton, transformers' bfloat16 check) that requires a newer architecture or compute
    capability than the GPU it runs on: the GPU too old (or a configuration it cannot do), never one too new, and no
    limit on the call's values (its "only supports" names a GPU, not a size)."""
    causes = ranked(text)
    assert causes[0] == "gpu-too-old" and causes[1] == "unsupported-configuration", causes


@pytest.mark.parametrize(("text", "framework"), [
    ("ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
     "undefined symbol: _ZN3c104cuda9SetDeviceEi", "PyTorch"),
    ("OSError: /x/site-packages/torchaudio/lib/libtorchaudio.so: undefined symbol: _ZNK5torch8autograd4Node4nameEv",
     "PyTorch"),
    ("tensorflow.python.framework.errors_impl.NotFoundError: /x/_my_op.so: undefined symbol: "
     "_ZN10tensorflow8internal21CheckOpMessageBuilder9NewStringEv", "TensorFlow"),
])
def test_an_extension_needing_a_symbol_of_its_frameworks_own_was_built_for_another_release(text: str,
                                                                                           framework: str) -> None:
    """A compiled extension that needs a C++ symbol of its framework's namespaces (c10::, at::, torch::,
    tensorflow::) that the framework installed lacks was built against another release: the framework's parts do not
    go together, not two cuDNN releases mixed."""
    result = explain(text, environ={})
    first = result.causes[0]
    assert first.family == "framework-parts-mismatch" and f"another {framework} release" in first.title
    assert "built from source" in first.tell and first.fix.actions


def test_a_cuda_runtime_that_did_not_load_is_not_cudnn_frontends_own_loading() -> None:
    """glibc's "libcudart.so.11.0: cannot open shared object file" is the CUDA runtime missing; only cudnn-frontend's
    own "Unable to load any libcudart.so.* library" is the frontend's loading (its own kind of message)."""
    assert ranked("RuntimeError: Failed to import transformers.models.llama because of the following error: "
                  "libcudart.so.11.0: cannot open shared object file: No such file or directory")[0] == \
        "libcudart-missing-or-wrong"
    assert ranked("RuntimeError: Unable to load any libcudart.so.* library.")[0] == "multiple-cudart-or-frontend"


@pytest.mark.parametrize(("text", "title"), [
    ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
     "    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu121)", "xformers was built against another PyTorch"),
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. PyTorch "
     "has CUDA Version=11.8 and torchvision has CUDA Version=12.1. Please reinstall the torchvision that matches your "
     "PyTorch install.", "torch and torchvision"),
])
def test_a_torch_companion_built_for_another_torch_is_the_frameworks_parts_apart(text: str, title: str) -> None:
    first = explain(text, environ={}).causes[0]
    assert first.family == "framework-parts-mismatch" and title in first.title


@pytest.mark.parametrize("text", [
    "<string>:4: DeprecationWarning: This process (pid=6911) is multi-threaded, use of fork() may lead to deadlocks in "
    "the child.\ncupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInitializationError: initialization error",
    '  File "/usr/lib/python3.10/multiprocessing/popen_fork.py", line 71, in _launch\n'
    "tensorflow.python.framework.errors_impl.InternalError: CUDA runtime implicit initialization on GPU:0 failed. "
    "Status: initialization error",
])
def test_cuda_that_could_not_start_in_a_forked_child_is_the_programs_use_of_fork(text: str) -> None:
    """The CUDA runtime's bare "initialization error" where the text shows a child made by fork() (Python's warning,
    multiprocessing's fork start method): the program's use, with the spawn start method as the fix; without that,
    a driver that could not start."""
    first = explain(text, environ={}).causes[0]
    assert first.family == "bad-param-usage" and "forked" in first.title and "spawn" in first.fix.actions[0].text
    assert ranked(text.splitlines()[-1])[0] == "no-gpu-or-driver"


def test_a_triton_kernel_needing_more_shared_memory_than_the_gpu_has_is_a_configuration_it_cannot_do() -> None:
    """Triton's OutOfResources (torch.compile's, vLLM's kernels): the kernel's configuration, in Triton's own words
    and fix, not cuDNN's."""
    first = explain("torch._inductor.exc.InductorError: OutOfResources: out of resource: shared memory, Required: "
                    "98304, Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
                    environ={}).causes[0]
    assert first.family == "unsupported-configuration" and "Triton" in first.title and "cuDNN" not in first.title
    assert "num_stages" in first.fix.actions[0].text and "Hardware limit" in first.tell


# --- building an extension: the CUDA toolkit (torch's cpp_extension, DeepSpeed's op builder) ---------------

@pytest.mark.parametrize(("text", "family", "versions"), [
    # torch 2.5's message over two lines, the unformatted tuple torch 2.10+ raises, DeepSpeed's
    ("RuntimeError:\nThe detected CUDA version (12.1) mismatches the version that was used to compile\n"
     "PyTorch (11.8). Please make sure to use the same CUDA versions.", "cuda-toolkit-mismatch", ("12.1", "11.8")),
    ("RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to compilePyTorch (%s). "
     "Please make sure to use the same CUDA versions.', '13.0', '12.8')", "cuda-toolkit-mismatch", ("13.0", "12.8")),
    ("op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version 12.4 does not match "
     "the version torch was compiled with 12.1, unable to compile cuda/cpp extensions without a matching cuda "
     "version.", "cuda-toolkit-mismatch", ("12.4", "12.1")),
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
     "cuda-toolkit-missing", None),
    ("op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)",
     "cuda-toolkit-missing", None),
])
def test_a_toolkit_check_before_building_an_extension_is_the_toolkit_not_cudnn(
        text: str, family: str, versions: tuple[str, str] | None) -> None:
    result = explain(text, environ={})
    assert [c.family for c in result.causes] == [family]
    assert read(text).toolkit_check == versions
    step = str(actions(result, family)[0]["text"])
    assert "CUDA_HOME" in step and "cuda-toolkit" in step
    if versions:  # the toolkit of the framework's CUDA, not the one the build found
        assert f"cuda-toolkit={versions[1]}" in step and versions[0] in result.causes[0].title


@pytest.mark.parametrize("text", [
    "UserWarning: The detected CUDA version (12.2) has a minor version mismatch with the version that was used to "
    "compile PyTorch (12.1). Most likely this shouldn't be a problem.",
    "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
    "Installed CUDA version 12.2 does not match the version torch was compiled with 12.1 but since the APIs are "
    "compatible, accepting this combination",
    "/usr/lib/python3/dist-packages/torch/autograd/graph.py:744: UserWarning: Attempting to run cuBLAS, but there was "
    "no current CUDA context! Attempting to set the primary context... (Triggered internally at "
    "../aten/src/ATen/cuda/CublasHandlePool.cpp:135.)",
])
def test_what_torch_and_deepspeed_accept_or_mend_themselves_is_only_a_warning(text: str) -> None:
    assert [c.family for c in explain(text, environ={}).causes] == ["harmless-warning"]


TF_CUDART_WARNING = (
    "2021-03-01 10:00:00.123456: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load "
    "dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file "
    "or directory\n2021-03-01 10:00:00.123456: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above "
    "cudart dlerror if you do not have a GPU set up on your machine.\n")


def test_a_load_logged_as_a_warning_before_a_cudnn_calls_status_is_not_what_stopped_the_program() -> None:
    """TensorFlow's cudart stub warns at import that libcudart did not load; a cuDNN status later in the paste
    shows that a cuDNN call was made, so the runtime and cuDNN were found after all (another attempt, another
    process): the status's causes come first (session 60's note: the missing runtime ranked first). Without a
    call after it, the warning is still the failure: TensorFlow went on without the GPU."""
    text = TF_CUDART_WARNING + (
        "Epoch 1/10\n2021-03-01 10:00:05.123456: E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Could not create "
        "cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n")
    assert ranked(text)[0] not in LOADING, ranked(text)
    assert ranked(TF_CUDART_WARNING)[0] == "libcudart-missing-or-wrong", ranked(TF_CUDART_WARNING)
    # a status before the load (an earlier run of the paste) proves nothing about it
    assert ranked(text.split("Epoch")[1] + TF_CUDART_WARNING)[0] == "libcudart-missing-or-wrong"


@pytest.mark.parametrize("shown", ["torch.__version__ 2.3.0+cpu", "CUDA used to build PyTorch: None",
                                   "conda install pytorch torchvision cpuonly -c pytorch"])
def test_a_cuda_library_missing_beside_a_framework_built_without_cuda_is_that_build(shown: str) -> None:
    """A package asks for libcudart.so.12 where the text shows PyTorch's build without CUDA: that build brought no
    CUDA libraries (no nvidia-* wheels), so the CUDA build is the fix, not the runtime alone (found by hand,
    session 61: the missing runtime ranked first)."""
    text = f"OSError: libcudart.so.12: cannot open shared object file: No such file or directory\n{shown}\n"
    assert ranked(text)[0] == "cpu-only-build", ranked(text)
    assert ranked(text.splitlines()[0])[0] == "libcudart-missing-or-wrong"


def test_a_message_far_along_one_long_line_is_read_wherever_it_stands() -> None:
    """A log collector's JSON record or a notebook's output saved as one line holds the message thousands of
    characters in: each line was cut at its first 2 000 characters, and the message was never read. A long line is
    read in overlapping pieces, so a message is whole in one of them wherever it stands."""
    message = "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared " \
              "object file: No such file or directory"
    for before in (0, 1480, 1990, 3000, 12_345):
        text = '{"log": "' + "step=1 loss=0.25 " * (before // 17) + message + ' "}'
        answer = explain(text, environ={})
        assert answer.recognized and any(s.library == "libcudnn_cnn_infer.so.8" for s in answer.reading.signals), \
            before
