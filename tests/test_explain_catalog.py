"""The message catalog of `cudnnload explain` (cudnnload/diagnose/explain/catalog.json, written by
fixtures/explain/harvest.py from the code that prints the messages): every entry is well formed, its compiled
pattern finds its own example rendering, its causes are families of the corpus; the harvester reads the strings
the way the code writes them; and explain uses the catalog as the issue asks: a framework's generic advice is no
evidence, a warning is said to be one, an API a newer cuDNN removed is named from the headers, and an unknown
text gets the nearest known messages, never a match."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.diagnose.explain import catalog as messages
from cudnnload.diagnose.explain import explain, pasted
from cudnnload.diagnose.explain.catalog import compile_template, render_example, split_template
from cudnnload.diagnose.explain.reading import read
from fixtures.explain.corpus import families, loading_families
from fixtures.explain.harvest import (
    _derived,
    c_strings,
    derived_causes,
    mc_strings,
    po_entries,
    print_counts,
    python_strings,
)
from fixtures.explain.messages import TRANSLATED
from fixtures.explain.sources import SOURCES

ROOT = Path(__file__).resolve().parents[1]
KEYS = {"id", "source", "file", "versions", "template", "style", "example", "meaning", "families", "kind",
        "warning", "boilerplate", "curated"}
OPTIONAL = {"as_error"}  # present (true) only on an error code's words, found only printed as an error's


@pytest.fixture(scope="module")
def data() -> dict[str, object]:
    return json.loads(messages.DATA.read_text(encoding="utf-8"))


def ranked(text: str) -> list[str]:
    return [cause.family for cause in explain(text, environ={}).causes]


# --- the data ------------------------------------------------------------------------------------------

def test_every_entry_is_well_formed_and_names_known_causes(data: dict[str, object]) -> None:
    entries = data["entries"]
    assert isinstance(entries, list) and len(entries) >= 200
    known = families()
    labels = {source.name: {source.label(release) for release in source.releases} for source in SOURCES}
    ids = [entry["id"] for entry in entries]
    assert len(ids) == len(set(ids))
    for entry in entries:
        assert KEYS <= set(entry) <= KEYS | OPTIONAL, entry["id"]
        assert entry["style"] in ("printf", "format", "literal"), entry["id"]
        assert entry["versions"] and set(entry["versions"]) <= labels[entry["source"]], entry["id"]
        assert set(entry["families"]) <= known, entry["id"]
        assert entry["families"] or entry["warning"] or entry["boilerplate"], entry["id"]
        assert entry["meaning"].strip() and entry["file"].strip(), entry["id"]


# What a meaning says of a message that is no more than a warning or information: the flag `warning` must agree
# with it (a flag marks the line as not the failure: `reading`, `ranking.only_warnings`). A warning whose words name
# the cause of what fails next (Paddle's cuDNN version warning, PyTorch's "no longer supports this GPU") is said to
# be "a warning that names the cause" and is not flagged: it is read as the failure's first line.
_ONLY_A_WARNING = re.compile(r"^only (?:a warning|information)\b")


@pytest.mark.parametrize("where", ["catalog.json", "messages.MESSAGES"])
def test_a_message_is_flagged_a_warning_exactly_where_its_meaning_says_it_is_only_one(
        data: dict[str, object], where: str) -> None:
    from fixtures.explain.messages import MESSAGES
    curated = ([(e["id"], e["meaning"], e["warning"]) for e in data["entries"] if e["curated"]]  # type: ignore[index]
               if where == "catalog.json" else [(m.locate, m.meaning, m.warning) for m in MESSAGES])
    assert curated
    for name, meaning, warning in curated:
        assert not _ONLY_A_WARNING.search(meaning) or warning, f"{name}: says it is only a warning, not flagged"
        assert warning or "only a warning" not in meaning, f"{name}: not flagged, yet says it is only a warning"
    assert any(meaning.startswith("a warning") and "names the cause" in meaning and not warning
               for _, meaning, warning in curated)


def test_every_entry_still_matches_its_own_template(data: dict[str, object]) -> None:
    for entry in data["entries"]:
        pattern = compile_template(entry["template"], entry["style"])
        assert pattern.search(entry["example"]), entry["id"]
        assert entry["example"] == render_example(entry["template"], entry["style"]), entry["id"]


def test_every_source_prints_entries_at_each_release_read(data: dict[str, object], capsys) -> None:
    seen = {(entry["source"], version) for entry in data["entries"] for version in entry["versions"]}
    for source in SOURCES:
        assert any(name == source.name for name, _ in seen), source.name
    print_counts(data)
    out = capsys.readouterr().out
    assert re.search(r"^\d+ entries \(\d+ curated\), \d+ cuDNN identifiers, \d+ CUDA driver results$",
                     out.splitlines()[0])
    assert all(f"  {source.name} " in out for source in SOURCES)


def test_the_catalog_reads_the_releases_of_today(data: dict[str, object]) -> None:
    """The frameworks users install today are read: torch 2.14, TensorFlow 2.21, JAX's CUDA 13 plugin 0.12 and
    ONNX Runtime 1.28, each with the messages only it prints."""
    seen = {version for entry in data["entries"] for version in entry["versions"]}
    assert {"torch 2.14.1", "tensorflow 2.21.0", "jax_cuda13_pjrt 0.12.0.1", "onnxruntime_gpu 1.28.0"} <= seen
    only_today = {entry["source"] for entry in data["entries"]
                  if entry["versions"] in (["torch 2.14.1"], ["onnxruntime_gpu 1.28.0"])}
    assert only_today == {"pytorch", "onnxruntime"}


@pytest.mark.parametrize(("text", "family"), [
    # torch 2.14 and the cudnn-frontend inside it name a cuDNN release with known bugs, and one too old for a feature
    ("RuntimeError: SDPA FP16/BF16 forward is not supported on cuDNN 9.10.0/9.10.1 due to known bugs. Please consider "
     "upgrading to 9.10.2 or newer.", "known-bad-release"),
    ("RuntimeError: DETERMINISTIC mode is not supported in cudnn version < 9.11.0", "unsupported-configuration"),
    ("RuntimeError: Deterministic algorithm is not supported on blackwell architecture with cudnn version below "
     "9.18.0", "unsupported-configuration"),
    # ONNX Runtime 1.28's own words for a cuDNN its CUDA provider could not load
    ("[E:onnxruntime:Default, cuda_call.cc:123] cuDNN library was not found", "cudnn-not-installed"),
    # the feature gates of the cudnn-frontend each release carries (harvested again once the rules read them)
    ("RuntimeError: Paged attention in unified SDPA node requires cuDNN 9.15.0", "unsupported-configuration"),
    ("jax.errors.JaxRuntimeError: INTERNAL: Require cuDNN 8.9.4 to run flash attention.",
     "unsupported-configuration"),
    # torch 2.8 and later: the GPU's compute capability is none the build has kernels for
    ("UserWarning: Found GPU0 NVIDIA GeForce GTX 780 which is of compute capability (CC) 3.5.\nThe following list "
     "shows the CCs this version of PyTorch was built for and the hardware CCs it supports:", "gpu-too-old"),
])
def test_messages_only_todays_frameworks_print_are_known_with_their_meaning(text: str, family: str) -> None:
    explanation = explain(text, environ={})
    assert explanation.reading.signals[0].entry, text
    assert ranked(text)[0] == family
    if "version below" in text or "version <" in text:  # a newer cuDNN would do it: said, after what the text shows
        assert "too old" in explanation.reading.signals[0].meaning and "runtime-older-than-build" in ranked(text)


@pytest.mark.parametrize(("text", "kind", "family"), [
    ("2025-06-01 10:00:00 E dlopen failed for libcublasLt.so.12", "dependency-load:cublas", "cublas-missing-or-wrong"),
    ("dlopen failed for libcudnn_ops.so.9", "sublibrary-load", None),
])
def test_a_generic_load_failure_is_read_by_the_library_it_names(text: str, kind: str, family: str | None) -> None:
    """A message whose causes the catalog derived from its loading words alone (ONNX Runtime 1.28's "dlopen failed
    for", with the library printed after it) is read by the library the text names, as the loader's own messages
    are: a cuBLAS that failed to load is not a missing cuDNN, and a library that is neither cuDNN's nor one it needs
    is no cuDNN failure at all."""
    (signal,) = read(text).signals
    assert (signal.kind, signal.failed) == (kind, text.rsplit(" ", 1)[-1])
    assert family is None or ranked(text)[0] == family
    assert not read("dlopen failed for libnvinfer.so.10").signals


def test_the_headers_say_which_cudnn_declares_which_name(data: dict[str, object]) -> None:
    book = messages.load()
    assert book.declared("cudnnGetConvolutionForwardAlgorithm_v7") and "9.28.0.42" in book.declared("cudnnCreate")
    assert not book.declared("cudnnGetConvolutionForwardAlgorithm")  # cuDNN 8 removed it (no 8.5+ header has it)
    assert "9.0.0.312" not in book.declared("cudnnSetRNNDescriptor_v6")  # cuDNN 9 removed it
    assert "8.9.7.29" in book.declared("cudnnSetRNNDescriptor_v6")


# --- the templates --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("template", "style", "line"), [
    ("%s: cannot open shared object file", "printf", "libcudnn.so.8: cannot open shared object file: No such file"),
    ("Could not load library %s. Error: %s", "printf", "Could not load library libcudnn_cnn_infer.so.8. Error: x"),
    ("cuDNN version incompatibility: PyTorch was compiled  against {} but found runtime version {}", "format",
     "cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version (9, 0, 0)"),
    ("100%% of {{braces}} %d", "printf", "100% of {{braces}} 7"),
])
def test_a_template_finds_its_printed_message(template: str, style: str, line: str) -> None:
    assert compile_template(template, style).search(line)


@pytest.mark.parametrize("line", [
    "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph",
    "E  [cudnn_frontend] Error: No execution plans support the graph   ",
])
def test_a_message_pasted_without_the_full_stop_its_template_ends_in_is_still_known(line: str) -> None:
    """A paste drops a message's closing punctuation (cut at the line's end, quoted in a title): the catalog still
    knows it, as a match, not as a near message. A template's punctuation before a field still counts."""
    (signal,) = read(line).signals
    assert signal.kind == "no-engine", signal
    assert not compile_template("Could not load library %s. Error: %s", "printf").search("Could not load library x")


@pytest.mark.parametrize("line", [
    "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the gr",
    "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the...",
    "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the gr…"])
def test_a_message_pasted_cut_inside_its_template_is_still_known(line: str) -> None:
    """A paste that ends inside a message (a terminal's width, a title, "..."): the catalog still knows it where
    enough of its words are there, as a match of that entry, not as a text that only names cuDNN."""
    (signal,) = read(line).signals
    assert signal.kind == "no-engine", signal


def test_a_paste_cut_short_of_enough_of_a_template_is_not_taken_for_it() -> None:
    (signal,) = read("RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No exec").signals
    assert signal.kind == "cudnn-mentioned"
    pattern = compile_template("Could not load the library %s. Error: %s, which cannot be used here", "printf")
    assert pattern.cut("Could not load the library libx.so. Error: oops, which cannot be u") is not None
    assert pattern.cut("Could not load the library libx.so. Error: oops, which cannot be used here") is None  # whole
    assert pattern.cut("Could not load the library libx.so. Err") is None  # too little of it
    assert pattern.cut("Could not load the library libx.so. Error: oops and something else") is None


@pytest.mark.slow
def test_looking_for_a_cut_paste_runs_in_bounded_time_on_a_hostile_text() -> None:
    import time

    from cudnnload.diagnose.explain import explain

    started = time.monotonic()
    explain(("Could not load library libcudnn_cnn_infer.so.8. Error: " + "x" * 5000 + "\n") * 200, environ={})
    explain("[cudnn_frontend] Error: No execution plans " * 20000, environ={})
    assert time.monotonic() - started < 10


def test_a_label_or_a_doc_string_of_a_binary_is_no_message_of_the_catalog() -> None:
    """A derived entry's words say that something happened or is wrong; a binary's labels and doc strings that name
    the compute capability or the driver do not, and a user's listing of their GPUs is no failure."""
    from fixtures.explain.harvest import _derived

    assert _derived("compute capability") == ((), "")
    assert _derived("CUDA driver version:") == ((), "")
    assert _derived("insufficient compute capability:")[0]
    assert _derived("Multiple libcudart libraries found: %s and %s")[0]
    assert not read("- Tesla T4 (compute capability 7.5)\n- NVIDIA L4 (compute capability 8.9)").signals


def test_a_template_splits_into_its_literal_parts() -> None:
    assert split_template("a %s b %d c", "printf") == ["a ", " b ", " c"]
    assert split_template("x {} y {name!r} {{z}}", "format") == ["x ", " y ", " {z}"]


@pytest.mark.slow
def test_a_pattern_runs_in_bounded_time_on_a_hostile_line() -> None:
    import time

    pattern = compile_template("%s: %s: %s: undefined symbol: %s, version %s", "printf")
    started = time.monotonic()
    assert not pattern.search(": " * 1000)
    assert time.monotonic() - started < 2


# --- the harvester ----------------------------------------------------------------------------------------

def test_a_c_stream_statement_is_read_as_one_message_with_fields() -> None:
    found = {f.text for f in c_strings('LOG(ERROR) << "Could not create cudnn handle: " << ToString(status);')}
    assert "Could not create cudnn handle: %s" in found
    found = {f.text for f in c_strings('errstring = (x ? N_("file too short") : N_("cannot read file data"));')}
    assert {"file too short", "cannot read file data"} <= found
    found = {f.text for f in c_strings('_dl_error_printf ("\\\nERROR: ld.so: object \'%s\' cannot be preloaded", n);')}
    assert "ERROR: ld.so: object '%s' cannot be preloaded" in found


def test_strings_added_as_std_strings_in_a_macro_are_read_as_one_message() -> None:
    # CTranslate2 src/cuda/cublas_stub.cc and the CUDA_CHECK macro of src/cuda/utils.h (a backslash-newline
    # continues the macro's line before the message is read)
    found = {f.text for f in c_strings('throw std::runtime_error("Library " + std::string(CUBLAS_LIBNAME)\n'
                                       '                         + " is not found or cannot be loaded");')}
    assert "Library %s is not found or cannot be loaded" in found
    macro = ('#define CUDA_CHECK(ans) { if (code != cudaSuccess) \\\n'
             '    THROW_RUNTIME_ERROR("CUDA failed with error "   \\\n'
             '                        + std::string(cudaGetErrorString(code))); }')
    assert "CUDA failed with error %s" in {f.text for f in c_strings(macro)}


def test_a_fmt_message_with_braces_and_a_semicolon_inside_its_literals_is_read_whole() -> None:
    """A statement ends at ";", "{" or "}" outside string literals only: CTranslate2's spdlog warning ("... is {},
    but ... efficient {} computation ...") and cudnn-frontend's "(int64_t; in bytes)" stay one message, and a fmt
    field makes the template's style "format"."""
    warn = ('spdlog::warn("The compute type inferred from the saved model is {}, "\n'
            '             "but the target device or backend do not support efficient {} computation.",\n'
            '             compute_type_to_str(a), compute_type_to_str(b));')
    found = {(f.text, f.style, f.warning) for f in c_strings(warn)}
    assert ("The compute type inferred from the saved model is {}, but the target device or backend do not support "
            "efficient {} computation.", "format", True) in found
    limit = 'return {error_code_t::ATTRIBUTE_NOT_SET, "Invalid argument for LIMIT (int64_t; in bytes)"};'
    assert "Invalid argument for LIMIT (int64_t; in bytes)" in {f.text for f in c_strings(limit)}


@pytest.mark.parametrize(("text", "first"), [
    ("ValueError: Requested float16 compute type, but the target device or backend do not support efficient float16 "
     "computation.", "gpu-too-old"),
    ("[ctranslate2] [warning] The compute type inferred from the saved model is float16, but the target device or "
     "backend do not support efficient float16 computation. The model weights have been automatically converted to "
     "use the float32 compute type instead.", "harmless-warning"),
])
def test_ctranslate2s_compute_type_checks_are_known(text: str, first: str) -> None:
    assert ranked(text)[0] == first


def test_python_f_strings_and_windows_message_files_are_read_as_templates() -> None:
    found = {(f.text, f.style, f.warning) for f in python_strings(
        'import warnings\nwarnings.warn(f"Found {n} but {{x}}")\nraise RuntimeError("plain text here")')}
    assert ("Found {} but {{x}}", "format", True) in found and ("plain text here", "literal", False) in found
    mc = "MessageId=193\nLanguage=English\n%1 is not a valid Win32 application.\n.\n"
    assert [f.text for f in mc_strings(mc)] == ["%s is not a valid Win32 application."]


# --- explain with the catalog ---------------------------------------------------------------------------------

def test_the_catalog_is_read_only_when_a_text_is_explained() -> None:
    code = ("import time, sys; t = time.perf_counter(); import cudnnload.diagnose.explain as e; "
            "from cudnnload.diagnose.explain import catalog; "
            "print(catalog.load.cache_info().currsize, round(time.perf_counter() - t, 3))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    loaded, seconds = done.stdout.split()
    assert loaded == "0" and float(seconds) < 1.5


def test_a_bare_cannot_open_naming_libcudnn_puts_not_installed_first() -> None:
    # nothing in the text shows a cuDNN anywhere: the plain absence has the text behind it, the causes that need
    # one installed elsewhere (a wheel, another major, a folder the loader skips) have nothing
    for text in ("OSError: libcudnn.so.8: cannot open shared object file: No such file or directory",
                 "libcudnn.so.9: cannot open shared object file: No such file or directory"):
        assert ranked(text)[0] == "cudnn-not-installed"
    wheel = ("libcudnn.so.9: cannot open shared object file: No such file or directory\n"
             "/home/u/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib")
    assert ranked(wheel)[0] != "cudnn-not-installed"


def test_a_frameworks_generic_advice_is_no_evidence() -> None:
    # PyTorch prints the contiguity hint after every CUDNN_STATUS_NOT_SUPPORTED; TF its install advice after
    # every missing library: neither says anything about this machine
    reading = read("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in "
                   "a non-contiguous input.")
    assert not reading.has("zero-size") and reading.primary is not None
    advice = ("W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please "
              "make sure the missing libraries mentioned above are installed properly if you would like to use GPU."
              " Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the "
              "required libraries for your platform.")
    assert not read(advice).has("windows") and not read(advice).has("linux")


def test_a_text_of_warnings_only_is_said_to_be_only_a_warning() -> None:
    text = ("2023-10-09 13:36:23.355516: E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:9342] Unable to "
            "register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been "
            "registered")
    cause = explain(text, environ={}).causes[0]
    assert cause.family == "harmless-warning" and cause.title.startswith("this is only a warning")


@pytest.mark.parametrize(("text", "removed"), [
    ('conv.cu(178): error: identifier "cudnnGetConvolutionForwardAlgorithm" is undefined', "8"),
    ("cudnn_dlibapi.cpp:895:57: error: ‘CUDNN_CONVOLUTION_BWD_FILTER_PREFER_FASTEST’ was not declared in this scope",
     "8"),
    ('RecurrentPropagation.cu(513): error: identifier "cudnnRNNForwardInference" is undefined', "9"),
])
def test_a_name_no_newer_cudnn_header_declares_is_an_api_cudnn_removed(text: str, removed: str) -> None:
    result = explain(text, environ={})
    assert result.causes[0].family == "removed-api"
    assert f"cuDNN {removed} removed" in result.reading.primary.meaning  # type: ignore[union-attr]


def test_a_name_the_newest_cudnn_still_declares_is_not_a_removed_api() -> None:
    text = "main.cpp:12:5: error: ‘cudnnCreate’ was not declared in this scope"
    assert ranked(text)[0] != "removed-api"


def test_an_unknown_text_about_cudnn_gets_the_usual_causes_of_its_words_and_the_nearest_messages() -> None:
    result = explain("fatal: Could not load the library libcudnn_thing.so.9 (error: file is missing)", environ={})
    assert result.causes and result.causes[0].family in loading_families()
    assert all(cause.confidence in ("possible", "unlikely") for cause in result.causes)
    assert result.note and "no message cudnnload knows" in result.note and "(not a match)" in result.note
    assert result.nearest and all(0.5 <= near.score <= 1 for near in result.nearest)


def test_a_text_that_does_not_name_cudnn_gets_no_cause() -> None:
    result = explain("fatal: Could not load the library libfoo.so.3 (error: file is missing)", environ={})
    assert not result.recognized and not result.causes


def test_evidence_quotes_the_message_not_the_whole_paste() -> None:
    paste = (("x" * 300 + " ") * 3 + "ImportError: libcudnn.so.8: cannot open shared object file "
             + ("y" * 300 + " ") * 3)
    for cause in explain(paste, environ={}).causes:
        assert all(len(item) < 320 for item in cause.evidence), cause.evidence


def test_a_status_one_autotuning_candidate_returned_is_not_the_failure() -> None:
    # XLA lists every engine it disqualified ("Profiling failure on cuDNN engine N: ... STATUS"); the error is
    # the line that says all failed
    text = ("Profiling failure on cuDNN engine 7#TC: UNKNOWN: CUDNN_STATUS_EXECUTION_FAILED\n"
            "RuntimeError: UNKNOWN: Failed to determine best cudnn convolution algorithm")
    reading = read(text)
    assert reading.primary is not None and reading.primary.kind == "conv-algorithm"
    assert all(signal.warning for signal in reading.signals if signal.kind.startswith("status:"))


def test_escape_sequences_and_control_characters_are_not_words_of_a_message() -> None:
    text = ("\x1b[31mCould not load library libcudnn_cnn_infer.so.8. Error: \x1b[0mlibnvrtc.so: cannot open shared "
            "object file\x1b]0;title\x07\x00")
    result = explain(text, environ={})
    assert result.causes[0].family == "nvrtc-missing"
    dumped = json.dumps(result.json())
    assert "\\u001b" not in dumped and "\\u0000" not in dumped


def test_a_message_not_about_loading_never_gets_a_loading_cause_first(data: dict[str, object]) -> None:
    # every curated message whose causes are none about loading, explained alone: its first cause is not either
    loading = loading_families()
    for entry in data["entries"]:
        if not entry["curated"] or not entry["families"] or set(entry["families"]) & loading:
            continue
        causes = explain(entry["example"], environ={}).causes
        assert not causes or causes[0].family not in loading, (entry["id"], causes[0].family)


@pytest.mark.parametrize(("text", "family"), [
    ("OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
     "\"C:\\Python310\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll\" or one of its dependencies.",
     "paging-file-too-small"),
    ("Could not locate zlibwapi.dll. Please make sure it is in your library path!", "zlib-missing"),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "gpu-hardware-fault"),
    ("OSError: /opt/conda/lib/libcudnn_cnn_infer.so.8: file too short", "unloadable-file"),
    # PyTorch's Conv_v7.cpp and CublasHandlePool.cpp, TensorFlow's cudnn_rnn_ops.cc and CTranslate2's stub
    ("RuntimeError: Unable to find a valid cuDNN algorithm to run convolution", "out-of-memory"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
     "out-of-memory"),
    ("tensorflow.python.framework.errors_impl.UnknownError: Fail to find the dnn implementation. [Op:CudnnRNN]",
     "out-of-memory"),
    ("RuntimeError: Library libcublas.so.11 is not found or cannot be loaded", "cublas-missing-or-wrong"),
])
def test_messages_beyond_a_missing_library_get_their_own_cause_first(text: str, family: str) -> None:
    assert ranked(text)[0] == family


@pytest.mark.parametrize(("status", "family"), [
    ("NOT_SUPPORTED_ARCH_MISMATCH", "gpu-too-old"),  # cudnn_graph.h 9.x: in the ARCH_MISMATCH class by meaning
    ("NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "driver-too-old"),
    ("NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING", "nvrtc-missing"),
    ("INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED", "out-of-memory"),
])
def test_a_status_takes_its_kind_and_causes_from_its_catalog_entry(status: str, family: str) -> None:
    result = explain(f"cudnnGraphNotSupportedError: CUDNN_STATUS_{status}", environ={})
    entry = messages.load().by_literal[f"CUDNN_STATUS_{status}"]
    assert result.reading.primary is not None and result.reading.primary.kind == entry.kind
    assert result.causes[0].family == family


def test_a_framework_bug_is_a_cause_of_a_status_that_says_the_caller_erred() -> None:
    # CUDNN_STATUS_BAD_PARAM: the call passed a value cuDNN rejects; in a framework the caller is its own code
    assert "framework-bug" in ranked("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM")[:3]


@pytest.mark.parametrize(("text", "family"), [
    ("Found GPU0 GeForce GT 710 which is of cuda capability 3.5.\n  PyTorch no longer supports this GPU because it "
     "is too old.", "gpu-too-old"),
    ("NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch installation.",
     "gpu-too-new"),
])
def test_a_message_printed_over_several_lines_is_found_by_its_first_line(text: str, family: str) -> None:
    assert ranked(text)[0] == family


def test_a_template_holding_colour_escapes_is_found_in_a_text_without_them() -> None:
    # onnxruntime/__init__.py prints its CUDA warning in yellow; explain drops escapes before reading
    text = ("\x1b[33mWARNING: torch is not built with CUDA 12.x support. Please install a version that supports CUDA "
            "12.x, or call preload_dlls with cuda=False and cudnn=False.\x1b[0m")
    assert explain(text, environ={}).recognized


def test_a_program_needing_a_cudnn_function_no_newer_header_declares_is_a_removed_api() -> None:
    assert ranked("ImportError: /opt/app/_conv.so: undefined symbol: cudnnGetConvolutionForwardAlgorithm")[0] == \
        "removed-api"
    # between cuDNN's own libraries a missing name is another release's library, not a removed API
    assert ranked("/x/libcudnn_graph.so.9: undefined symbol: cudnnGetLibConfig")[0] != "removed-api"


def test_a_program_needing_a_public_function_of_a_versioned_cudnn_library_has_an_older_release() -> None:
    """glibc names the version node of the library it looked in (", version libcudnn_graph.so.9"): a program's
    object that needs a public cudnn* function from it got a cuDNN older than it was built with; between cuDNN's
    own libraries a missing private name stays two releases mixed."""
    cases = {"OSError: /home/u/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
             "cudnnGetLibConfig, version libcudnn_graph.so.9": "runtime-older-than-build",
             "Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda/lib64/libcudnn_cnn_train.so.8: "
             "undefined symbol: _ZN5cudnn3cnn5fooEv, version libcudnn_cnn_infer.so.8": "mixed-release"}
    assert {text: ranked(text)[0] for text in cases} == cases


def test_a_loading_word_without_a_failure_gives_no_driver_cause() -> None:
    # "Found shared library libcuda.so.1 at" is information, "Can't open libcuda.so.1" a missing driver
    assert not _derived("Found shared library libcuda.so.1 at")[0]
    assert _derived("Can't open libcuda.so.1:")[0][0] == "no-gpu-or-driver"


def test_every_derived_entry_has_the_causes_its_words_give_now(data: dict[str, object]) -> None:
    """A change of messages.DERIVED reaches the committed catalog (`harvest --rederive`, or a full harvest)."""
    for entry in data["entries"]:  # type: ignore[attr-defined]
        if not entry["curated"]:
            assert list(derived_causes(entry)) == entry["families"], entry["id"]


@pytest.mark.parametrize("template", [
    "[cudnn_frontend] Cached Plan Not Found in %s",  # a cache miss, not a library
    "[MPItrampoline] Calling dlopen",  # nothing failed
    "Specify path for loading libcudnn.so. For instance, /usr/local/cudnn/lib. If empty [default], dlopen will search",
])
def test_words_that_only_name_loading_give_no_loading_cause(template: str) -> None:
    assert not set(_derived(template)[0]) & loading_families()


@pytest.mark.parametrize(("template", "first"), [
    # the checks a framework's cuDNN code makes of the call, in its words (torch's aten/src/ATen/native/cudnn and
    # its SDPA): the GPU, the cuDNN release, the call's arguments, what cuDNN cannot do, its own bug
    ("cudnn SDPA operation requires Ampere and above", "gpu-too-old"),
    ("cuDNN version {} is not compatible with devices with SM < 7.5. Please install a version of PyTorch with a "
     "compatible cuDNN version.", "gpu-too-old"),
    ("Max sequence length for unified SDPA node cannot be set in cuDNN < 9.15.0", "unsupported-configuration"),
    ("CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR is only available starting 9.4.", "unsupported-configuration"),
    ("cudnn RNN backward can only be called in training mode", "bad-param-usage"),
    ("cuDNN filters (a.k.a. weights) must be contiguous in desired memory_format", "bad-param-usage"),
    ("set_allow_tf32_cublas expects a bool, but got %s", "bad-param-usage"),
    ("cuDNN attention only supports float16 and bfloat16, got", "unsupported-configuration"),
    ("attn_bias not yet supported with cuDNN Attention and NestedTensor", "unsupported-configuration"),
    ("cudnn SDPA does not support sequence length 1.", "unsupported-configuration"),
    ('false INTERNAL ASSERT FAILED at "../aten/src/ATen/native/cudnn/Conv_v7.cpp":682, please report a bug to '
     "PyTorch.", "framework-bug"),
    # the stream executor's name for cuDNN (TensorFlow, XLA's cuda_dnn.cc)
    ("Invalid DNN data type: %d", "unsupported-configuration"),
])
def test_a_frameworks_own_check_gives_the_cause_its_words_say(template: str, first: str) -> None:
    families_ = _derived(template)[0]
    assert families_ and families_[0] == first, families_  # a cause that is not about loading, first


def test_a_frameworks_own_checks_are_in_the_catalog_and_read_as_they_say() -> None:
    """The harvest keeps the strings of a framework's cuDNN code that say what its own check found (they were
    dropped while no word of theirs gave a cause): explain puts that cause first."""
    cases = {"RuntimeError: cudnn SDPA operation requires Ampere and above": "gpu-too-old",
             "RuntimeError: cuDNN attention only supports float16 and bfloat16, got Float": "unsupported-configuration",
             'RuntimeError: false INTERNAL ASSERT FAILED at "../aten/src/ATen/native/cudnn/Conv_v7.cpp":682, please '
             "report a bug to PyTorch.": "framework-bug",
             "F external/xla/xla/stream_executor/cuda/cuda_dnn.cc:1011] Invalid DNN data type: 7":
             "unsupported-configuration"}
    assert {text: ranked(text)[0] for text in cases} == cases


def test_the_harvest_keeps_the_stream_executors_dnn_words_not_the_cpus_nor_opencvs() -> None:
    """XLA and TensorFlow call cuDNN "DNN" in their own words; MKL-DNN (oneDNN) and OpenCV's DNN module are CPU
    code with no cuDNN in them."""
    from fixtures.explain.messages import BULK

    assert BULK.search("Invalid DNN data type: %d")
    assert BULK.search("No DNN support for stream")
    assert not BULK.search("Using Eigen instead of MKL-DNN for single-threaded convolution.")
    assert not BULK.search("MKL version of Relu operator. Uses MKL DNN APIs to implement Relu operator.")
    assert not BULK.search("DNN/Reduce: Unsupported type.")
    assert not BULK.search("DNN: OpenCL target is not supported with current OpenCL device")


def test_a_symbol_a_library_lacks_is_not_a_library_not_found() -> None:
    families = _derived("cudnnGetErrorString symbol not found.")[0]
    assert families and families[0] == "mixed-release" and "cudnn-not-installed" not in families


def test_the_catalog_holds_glibcs_translations_of_the_loader_words_it_reads_back() -> None:
    """harvest.translations: every glibc release's po/<language>.po translations of messages.TRANSLATED; each held
    under its English msgid, none empty, none the English itself, and Chinese, German, Russian and Japanese among
    them for the message users meet most."""
    data = json.loads(messages.DATA.read_text(encoding="utf-8"))
    translations = data["translations"]
    assert set(translations) <= set(TRANSLATED)
    for msgid, by_text in translations.items():
        assert by_text and all(text.strip() and text != msgid and languages for text, languages in by_text.items())
    languages = {language for languages in translations["cannot open shared object file"].values()
                 for language in languages}
    assert {"zh_CN", "de", "ru", "ja"} <= languages
    assert messages.load().translations["无法打开共享对象文件"] == "cannot open shared object file"


def test_the_catalog_holds_windows_messages_in_the_languages_they_were_seen_printed_in() -> None:
    """harvest.windows_translations: the catalog's "windows" table is windows_messages.json's, each translation with
    a sighting in real output, held under the English text of a catalog entry of Windows' own (or, seen in part,
    under the start of it), and read back: Python's "[WinError 126]" drops an ASCII full stop, keeps a CJK one."""
    from fixtures.explain.harvest import WINDOWS_MESSAGES, windows_translations

    data = json.loads(messages.DATA.read_text(encoding="utf-8"))
    assert data["windows"] == windows_translations()
    english = {entry.template for entry in messages.load().entries if entry.source == "windows"}
    for code in json.loads(WINDOWS_MESSAGES.read_text(encoding="utf-8"))["codes"].values():
        for seen in code["translations"].values():
            assert seen["sightings"] and seen["text"] != code["en"]
            assert code["en"].startswith(seen.get("en", code["en"]))
    # error 5 has no entry of its own: "Access is denied" is read by the rule of a file found but not loadable
    assert all(any(template.replace("%s", "%1").startswith(text.rstrip(".")) for template in english)
               for text in data["windows"] if text != "Access is denied.")
    for text in ("[WinError 126] 找不到指定的模块。", "[WinError 126] Das angegebene Modul wurde nicht gefunden",
                 "DLL load failed while importing _C: Le module spécifié est introuvable."):
        assert "The specified module could not be found" in pasted.printed(text)[0]
    assert pasted.printed("找不到指定的模块。")[0] == "找不到指定的模块。"  # no sign of Windows: left as it is


def test_a_gettext_catalog_is_read_entry_by_entry_without_fuzzy_ones() -> None:
    po = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
          '#: elf/dl-load.c:2245\nmsgid "cannot open shared object file"\nmsgstr "无法打开共享对象文件"\n\n'
          '#, fuzzy\nmsgid "file too short"\nmsgstr "guessed"\n\n'
          'msgid ""\n"error while loading "\n"shared libraries"\nmsgstr ""\n"Fehler beim Laden der "\n'
          '"Shared Libraries"\n\nmsgid "symbol lookup error"\nmsgstr ""\n')
    assert list(po_entries(po)) == [("cannot open shared object file", "无法打开共享对象文件"),
                                    ("error while loading shared libraries", "Fehler beim Laden der Shared Libraries")]


def test_the_driver_results_are_cuda_h_s_as_cuda_bindings_declares_them(data: dict[str, object]) -> None:
    # the table that names a result a framework prints by number ("UNKNOWN ERROR (303)") is cuda.h's CUresult, read
    # by the harvest from cuda-bindings (a dependency of cudnnload); a newer cuda-bindings may add results, never
    # renumber one
    from cuda.bindings import driver

    from fixtures.explain.harvest import driver_results

    table = data["driver"]
    assert table["303"]["name"] == "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"  # type: ignore[index]
    assert table["999"]["name"] == "CUDA_ERROR_UNKNOWN"  # type: ignore[index]
    for number, result in table.items():  # type: ignore[attr-defined]
        assert int(getattr(driver.CUresult, result["name"])) == int(number)
        assert result["meaning"] and "py:obj" not in result["meaning"]
    assert set(table) <= set(driver_results() or {})  # type: ignore[arg-type]
    assert messages.load().driver[34][0] == "CUDA_ERROR_STUB_LIBRARY"


# --- the CUDA runtime's every error ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "family"), [
    ("RuntimeError: CUDA error: device kernel image is invalid", "gpu-too-new"),
    ("RuntimeError: cuda runtime error (8) : invalid device function at /pytorch/aten/src/THC/generic/THCTensor.cu:7",
     "gpu-too-new"),
    ("ExternalError: CUDA error(98), invalid device function.", "gpu-too-new"),
    ("InternalError: CUDA runtime implicit initialization on GPU:0 failed. Status: device kernel image is invalid",
     "gpu-too-new"),
    ("F1203 12:00:01 math_functions.cu:79] Check failed: error == cudaSuccess (8 vs. 0)  invalid device function",
     "gpu-too-new"),
    ("RuntimeError: CUDA error: initialization error", "no-gpu-or-driver"),
    ("RuntimeError: CUDA failed with error invalid argument", "framework-bug"),
    ("onnxruntime CUDA failure 701: too many resources requested for launch ; GPU=0", "unsupported-configuration"),
    ("RuntimeError: CUDA error: the launch timed out and was terminated", "unsupported-configuration"),
    ("torch.AcceleratorError: CUDA error: misaligned address", "framework-bug"),
    ("cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorStubLibrary: CUDA driver is a stub library",
     "no-gpu-or-driver"),
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_INVALID_IMAGE", "gpu-too-new"),
    # NCCL's "Cuda failure '%s'" (and "Cuda failure %d '%s'")
    ("host:1234:1234 [0] NCCL WARN Cuda failure 'initialization error'", "no-gpu-or-driver"),
    ("NCCL WARN Cuda failure 1 'invalid argument'", "framework-bug"),
    # a framework's derived words before the error's ("CUDA driver error: %s"): the error's words are read
    ("RuntimeError: CUDA driver error: invalid device context", "framework-bug"),
])
def test_every_error_of_the_cuda_runtime_is_known_by_its_words_and_its_names(text: str, family: str) -> None:
    result = explain(text, environ={})
    assert result.recognized and result.causes[0].family == family, [c.family for c in result.causes]


@pytest.mark.parametrize("text", [
    "OSError: [Errno 22] Invalid argument: 'C:\\\\data\\\\model.pt'",
    "RuntimeError: invalid argument 0: Sizes of tensors must match except in dimension 0",
    "the docs list 'invalid device function' among the errors a kernel launch returns",
])
def test_a_cuda_errors_common_words_are_known_only_printed_as_an_errors(text: str) -> None:
    matched = [m.entry.id for m in messages.load().matches(text) if m.entry.source == "cuda-runtime"]
    assert not matched


def test_a_cuda_errors_causes_are_derived_from_cudas_documentation_of_it(data: dict[str, object]) -> None:
    from fixtures.explain.harvest import documentation, documented_causes
    header = """
    /**
     * The requested device function does not exist or is not compiled for the
     * proper device architecture.
     */
    cudaErrorInvalidDeviceFunction        =      98,
    /**
     * This indicates that the device kernel took too long to execute. This can
     * only occur if timeouts are enabled - see the device property
     * \\ref ::cudaDeviceProp::kernelExecTimeoutEnabled "kernelExecTimeoutEnabled"
     */
    cudaErrorLaunchTimeout                =      702,
    """
    docs = documentation(header)
    assert docs["cudaErrorInvalidDeviceFunction"] == ("The requested device function does not exist or is not compiled "
                                                      "for the proper device architecture.")
    assert docs["cudaErrorLaunchTimeout"].endswith("only occur if timeouts are enabled - see the device property")
    assert documented_causes("cudaErrorInvalidDeviceFunction", "invalid device function",
                             docs["cudaErrorInvalidDeviceFunction"])[0][0] == "gpu-too-new"
    # the committed catalog: every code's words, and both names of each code
    templates = {entry["template"]: entry for entry in data["entries"]}  # type: ignore[attr-defined]
    for words, name in (("invalid device function", "cudaErrorInvalidDeviceFunction"),
                        ("device kernel image is invalid", "CUDA_ERROR_INVALID_IMAGE"),
                        ("invalid argument", "cudaErrorInvalidValue"),
                        ("misaligned address", "CUDA_ERROR_MISALIGNED_ADDRESS")):
        assert templates[words].get("as_error") and templates[words]["source"] == "cuda-runtime", words
        assert templates[name]["families"] == templates[words]["families"] and not templates[name].get("as_error")


def test_an_error_codes_words_are_looked_for_in_one_pass_of_the_text() -> None:
    """Every error code's words (the CUDA runtime's 127 and cuDNN's short ones) are found by one pattern: a long
    paste of error frames costs one pass, not one a code."""
    import time

    book = messages.load()
    literals, _ = book.short_literals
    assert len(literals) > 80
    text = "CUDA error: no such thing here\n" * 20000 + "RuntimeError: CUDA error: misaligned address\n"
    started = time.monotonic()
    found = [m.entry.id for m in book.matches(text) if m.entry.as_error]
    assert time.monotonic() - started < 5 and found == ["cuda-runtime/misaligned-address"]


def test_what_real_programs_printed_for_cuda_errors_provoked_on_a_gpu_is_read_as_what_provoked_it() -> None:
    """fixtures/explain/cuda_errors_h100.jsonl: the real PyTorch's and CuPy's output for CUDA errors provoked on an
    H100 (bench/gpu_cuda_errors.py). Every provoked cause is in the top 3; first for all but two, each a choice:
    PyTorch asking for more memory than the GPU has in all is read as a defect of the size asked (its own rule),
    and CuPy's block of 2048 threads as the CUDA runtime's "invalid argument" (a framework's defect first)."""
    rows = [json.loads(line) for line in
            (ROOT / "fixtures" / "explain" / "cuda_errors_h100.jsonl").read_text(encoding="utf-8").splitlines()]
    scored = [row for row in rows if row["expected"]]
    assert len(rows) == 16 and len(scored) == 14
    firsts = 0
    for row in scored:
        causes = [cause.family for cause in explain(row["printed"], environ={}).causes]
        assert row["expected"] in causes[:3], (row["case"], causes)
        firsts += causes[0] == row["expected"]
    assert firsts >= 12
