"""`cudnnload explain`: each message people paste, recognized from the real library's (or framework's) text,
its causes ranked by checks run on the machine: a layout of the scenario corpus on LD_LIBRARY_PATH shows
the cause, and a check that holds puts it first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.diagnose.explain import Explanation, explain
from cudnnload.errors import UsageError
from fixtures.scenarios.layouts import CORPUS, ensure
from tests.wheels import cache_root, lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]


def layout_env(name: str) -> dict[str, str]:
    """This machine with a corpus layout's cuDNN folder on LD_LIBRARY_PATH (and no pip wheel of the venv)."""
    layout = next(layout for layout in CORPUS if layout.name == name)
    if not (cache_root() / "unpacked").is_dir():
        pytest.skip("the wheels are not unpacked: run `make wheels`")
    lib = ensure(layout) / "site" / "nvidia" / "cudnn" / "lib"
    return {"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_CACHE": str(cache_root()), "LD_LIBRARY_PATH": str(lib)}


def first(result: Explanation, pattern: str) -> tuple[str, bool | None]:
    match = next(m for m in result.matches if m.pattern == pattern)
    return match.causes[0].title, match.causes[0].evidence.holds


# --- the text each pattern matches is the library's own -------------------------------------------------

@pytest.mark.wheels
@pytest.mark.parametrize(("tag", "library", "text"), [
    ("cu12-8.9.7.29", "libcudnn.so.8", b"Could not load library %s. Error: %s"),
    ("cu12-9.28.0.42", "libcudnn.so.9", b"Invalid handle. Cannot load symbol %s"),
    ("cu12-9.28.0.42", "libcudnn.so.9", b"Could not load symbol %s. Error: %s"),
    ("cu12-9.0.0.312", "libcudnn.so.9", b"Unable to load any of {"),
])
def test_the_patterns_are_the_shims_own_format_strings(tag: str, library: str, text: bytes) -> None:
    assert text in (lib_folder(tag) / library).read_bytes()


# --- each message -----------------------------------------------------------------------------------------

@pytest.mark.wheels
def test_could_not_load_library_ranks_the_missing_sublibrary_first_where_it_is_missing() -> None:
    text = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared "
            "object file: No such file or directory\nAborted (core dumped)")
    result = explain(text, site_paths=[], environ=layout_env("cudnn8-missing-cnn-infer"))
    assert first(result, "could-not-load-library") == ("libcudnn_cnn_infer.so.8 is missing beside libcudnn.so.8", True)
    assert [m.pattern for m in result.matches] == ["could-not-load-library", "aborted"]  # the dlerror is its detail
    aborted = next(m for m in result.matches if m.pattern == "aborted")
    assert "cuDNN called abort() right after printing: Could not load library" in aborted.meaning


@pytest.mark.wheels
@pytest.mark.parametrize("text", ["Could not load library libcudnn_cnn_infer.so.8",
                                  "Could not load library libcudnn_cnn_infer.so.8.9.7. Error: ..."])
def test_could_not_load_library_is_known_as_users_quote_it(text: str) -> None:
    result = explain(text, site_paths=[], environ=layout_env("cudnn8-missing-cnn-infer"))
    assert first(result, "could-not-load-library")[1] is True


@pytest.mark.wheels
def test_could_not_load_library_for_a_missing_dependency_names_it() -> None:
    text = ("Could not load library libcudnn_ops_infer.so.8. Error: libcublas.so.11: cannot open shared object file: "
            "No such file or directory")
    result = explain(text, site_paths=[], environ=layout_env("cudnn8-ops-infer-needs-cublas11"))
    assert first(result, "could-not-load-library") == (
        "libcudnn_ops_infer.so.8 needs libcublas.so.11, which is not installed", True)


@pytest.mark.wheels
def test_invalid_handle_names_the_sublibrary_that_serves_the_call() -> None:
    result = explain("Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor",
                     site_paths=[], environ=layout_env("missing-cnn"))
    assert first(result, "invalid-handle") == ("libcudnn_cnn.so.9 is missing beside libcudnn.so.9", True)


@pytest.mark.wheels
def test_invalid_handle_for_cublaslt_is_the_missing_cublas_wheel() -> None:
    result = explain("Invalid handle. Cannot load symbol cublasLtGetVersion\nIOT instruction (core dumped)",
                     site_paths=[], environ=layout_env("cublaslt-missing"))
    title, holds = first(result, "invalid-handle")
    assert "cuBLASLt" in title and holds is True


def test_unable_to_load_any_of_names_the_library_of_its_names() -> None:
    text = "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, libcudnn_cnn.so}"
    result = explain(text, site_paths=[], environ={"PATH": os.environ.get("PATH", "")})
    (match,) = result.matches
    assert any(c.title == "libcudnn_cnn.so.9 is missing" for c in match.causes)


def test_cannot_open_shared_object_with_no_cudnn_anywhere_says_it_is_not_installed(tmp_path: Path) -> None:
    result = explain("OSError: libcudnn.so.9: cannot open shared object file: No such file or directory",
                     site_paths=[], environ={"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_CACHE": str(tmp_path)})
    match = next(m for m in result.matches if m.pattern == "cannot-open")
    system = [line.split(" => ")[-1] for line in subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True,
                                                                 text=True, check=False).stdout.splitlines()
              if line.strip().startswith("libcudnn.so.9 ")]
    not_installed = next(c for c in match.causes if "not installed" in c.title)
    if system:  # a machine with a system cuDNN (the GPU machine's apt package): that cause is ruled out
        assert not_installed.evidence.holds is False
        assert os.path.dirname(system[0]) in not_installed.evidence.text
    else:
        assert match.causes[0] is not_installed and not_installed.evidence.holds is True


@pytest.mark.wheels
def test_undefined_symbol_of_graph_is_two_releases_mixed() -> None:
    text = ("/x/libcudnn_ops.so.9: undefined symbol: _ZN5cudnn5graph13LibraryLoader22transform_tensor_ex_fpE, "
            "version libcudnn_graph.so.9")
    result = explain(text, site_paths=[], environ=layout_env("mixed-ops-in-folder"))
    assert first(result, "undefined-symbol") == ("two cuDNN releases are mixed", True)


@pytest.mark.wheels
@pytest.mark.parametrize("status", ["CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "CUDNN_STATUS_VERSION_MISMATCH"])
def test_version_mismatch_statuses_point_at_mixed_releases(status: str) -> None:
    result = explain(f"cuDNN error: {status}", site_paths=[], environ=layout_env("mixed-ops-in-folder"))
    assert first(result, "status") == ("sub-libraries of another release than the shim", True)


def test_not_initialized_without_a_driver_blames_the_missing_driver() -> None:
    result = explain("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", site_paths=[])
    title, holds = first(result, "status")
    from cudnnload.loading.gpu import gpu_facts

    if gpu_facts().devices:
        assert holds is not True or title != "no NVIDIA driver, or no visible GPU"
    else:
        assert (title, holds) == ("no NVIDIA driver, or no visible GPU", True)


def test_internal_error_lists_memory_driver_and_mixing() -> None:
    result = explain("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", site_paths=[])
    titles = {c.title for m in result.matches for c in m.causes}
    assert {"the GPU ran out of memory", "mixed cuDNN releases"} <= titles


@pytest.mark.wheels
def test_pytorchs_version_message_blames_ld_library_path_when_it_holds_that_release() -> None:
    text = ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 10, 2) but found runtime "
            "version (9, 0, 0). PyTorch already comes bundled with cuDNN.")
    env = layout_env("healthy-9.0-folder")
    result = explain(text, site_paths=[], environ=env)
    assert first(result, "pytorch-version") == ("LD_LIBRARY_PATH holds cuDNN 9.0.0", True)
    older = explain(text.replace("found runtime version", "linked against"),  # PyTorch before 2.0
                    site_paths=[], environ=env)
    assert first(older, "pytorch-version")[1] is True


@pytest.mark.wheels
def test_xlas_version_message_is_read_with_both_versions() -> None:
    text = ("E0508 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.0.0 but source was compiled with: 9.1.1.  CuDNN "
            "library needs to have matching major version and equal or higher minor version.")
    result = explain(text, site_paths=[], environ=layout_env("healthy-9.0-folder"))
    match = next(m for m in result.matches if m.pattern == "xla-version")
    assert "built with cuDNN 9.1.1;" in match.meaning and match.causes[0].evidence.holds is True


def test_an_abort_without_a_cudnn_line_asks_for_the_line_before_it() -> None:
    result = explain("Aborted (core dumped)", site_paths=[], environ={"PATH": os.environ.get("PATH", "")})
    (match,) = result.matches
    assert match.pattern == "aborted" and "doctor -- YOUR-PROGRAM" in match.causes[0].fix


def test_text_without_a_cudnn_message_is_not_recognized_and_empty_text_is_a_usage_error() -> None:
    assert not explain("everything is fine", site_paths=[], environ={"PATH": os.environ.get("PATH", "")}).recognized
    with pytest.raises(UsageError):
        explain("   ")


def test_explain_command_reads_standard_input_and_answers_in_json() -> None:
    done = subprocess.run([sys.executable, "-m", "cudnnload", "explain", "--json", "-"],
                          input="Invalid handle. Cannot load symbol cudnnOpsVersionCheck\n", capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": python_path(ROOT)}, timeout=120, check=False)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    import json

    result = json.loads(done.stdout)["result"]
    assert result["matches"][0]["pattern"] == "invalid-handle"
