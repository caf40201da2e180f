"""`cudnnload explain` on messages written from the frameworks' and libraries' own sources, not from reports: one
text per message of today's frameworks (PyTorch, TensorFlow/XLA, JAX, ONNX Runtime, CTranslate2, CuPy, Paddle,
cuDNN 8 and 9 themselves), each with the cause its source's meaning and the words around it point to. A check that
the catalog and the ranking read what those programs print, apart from the corpus of reports (issue 32).

    python bench/bench_explain_probes.py

Prints each probe as OK (the expected cause first) or MISS with the first three causes, then the count. The
expected causes are this project's reading of each message; a MISS is a case to look at, not always a wrong answer.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudnnload.diagnose.explain import explain  # noqa: E402

PROBES: tuple[tuple[str, str], ...] = (
    ("libcuda-missing",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared ob"
     "ject file: No such file or directory\nPlease make sure libcudnn_cnn_infer.so.8 is in your"
     " library path!\nAborted (core dumped)"),
    ("runtime-older-than-build",
     "E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] Loaded runtime CuDNN library: 8"
     ".5.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major ve"
     "rsion and equal or higher minor version. If using a binary install, upgrade your CuDNN l"
     "ibrary.  If building from sources, make sure the library loaded at runtime is compatible"
     " with the version specified during compile configuration.\njaxlib.xla_extension.XlaRuntim"
     "eError: FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above"
     " for more details."),
    ("driver-too-old",
     "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:107: UserWarning: CUDA initializat"
     "ion: The NVIDIA driver on your system is too old (found version 11040). Please update yo"
     "ur GPU driver by downloading and installing a new version from the URL: http://www.nvidi"
     "a.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch"
     " version that has been compiled with your version of the CUDA driver."),
    ("unloadable-file",
     "Could not load library cudnn_cnn_infer64_8.dll. Error code 193\nPlease make sure cudnn_cn"
     "n_infer64_8.dll is in your library path!"),
    ("version-mismatch-shadowed",
     "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but"
     " found runtime version (8, 5, 0). PyTorch already comes bundled with cuDNN. One option t"
     "o resolving this error is to ensure PyTorch can find the bundled cuDNN. Looks like your "
     "LD_LIBRARY_PATH contains incompatible version of cudnnPlease either remove it from the p"
     "ath or install cudnn (8, 9, 2)"),
    ("nvrtc-missing",
     "Could not load library libcudnn_engines_precompiled.so.9. Error: libnvrtc.so.12: cannot "
     "open shared object file: No such file or directory"),
    ("out-of-memory",
     "E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:535] Could not create cudnn handle: "
     "CUDNN_STATUS_INTERNAL_ERROR\nE external/xla/xla/stream_executor/cuda/cuda_dnn.cc:539] Mem"
     "ory usage: 1234567 bytes free, 8589934592 bytes total.\nE external/xla/xla/stream_executo"
     "r/cuda/cuda_dnn.cc:549] Possibly insufficient driver version: 470.57.2"),
    ("harmless-warning",
     "W external/xla/xla/service/gpu/nvptx_compiler.cc:679] The NVIDIA driver's CUDA version i"
     "s 12.0 which is older than the ptxas CUDA version (12.3.107). Because the driver is olde"
     "r than the ptxas version, XLA is disabling parallel compilation, which may slow down com"
     "pilation. You should update your NVIDIA driver or use the NVIDIA-provided CUDA forward c"
     "ompatibility packages."),
    ("cublas-missing-or-wrong",
     "RuntimeError: Library libcublas.so.11 is not found or cannot be loaded"),
    ("wheel-not-on-linker-path",
     "$ pip install tensorflow[and-cuda]==2.16.1\n...\n2024-04-01 10:00:00.000000: W tensorflow/"
     "core/common_runtime/gpu/gpu_device.cc:2251] Cannot dlopen some GPU libraries. Please mak"
     "e sure the missing libraries mentioned above are installed properly if you would like to"
     " use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download"
     " and setup the required libraries for your platform.\nSkipping registering GPU devices..."),
    ("gpu-too-new",
     "NVIDIA GeForce RTX 4090 with CUDA capability sm_89 is not compatible with the current Py"
     "Torch installation.\nThe current PyTorch install supports CUDA capabilities sm_37 sm_50 s"
     "m_60 sm_70 sm_75 sm_80 sm_86.\nRuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"),
    ("out-of-memory",
     "RuntimeError: Unable to find a valid cuDNN algorithm to run convolution"),
    ("libcuda-missing",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared ob"
     "ject file: No such file or directory\n(running under WSL2 Ubuntu 22.04)"),
    ("zlib-missing",
     "Could not locate zlibwapi.dll. Please make sure it is in your library path!"),
    ("harmless-warning",
     "/venv/lib/python3.10/site-packages/torch/nn/modules/conv.py:456: UserWarning: Plan faile"
     "d with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descript"
     "or Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at ../aten/src/"
     "ATen/native/cudnn/Conv_v8.cpp:919.)\n  return F.conv2d(input, weight, bias, self.stride,"),
    ("installed-not-on-search-path",
     "The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured c"
     "orrectly. (error code is libcudnn.so: cannot open shared object file: No such file or di"
     "rectory)\n  Suggestions:\n  1. Check if the third-party dynamic library (e.g. CUDA, CUDNN)"
     " is installed correctly and its version is matched with paddlepaddle you installed.\n  2."
     " Configure third-party dynamic library environment variables as follows:\n  - Linux: set "
     "LD_LIBRARY_PATH by `export LD_LIBRARY_PATH=...`\n  - Windows: set PATH by `set PATH=XXX;%"
     "PATH%`\n  - Mac: set  DYLD_LIBRARY_PATH by `export DYLD_LIBRARY_PATH=...` [Note: After Ma"
     "c OS 10.11, using the DYLD_LIBRARY_PATH is impossible unless System Integrity Protection"
     " (SIP) is disabled.] (at /paddle/paddle/phi/backends/dynload/dynamic_loader.cc:305)\n$ ls"
     " /usr/lib/x86_64-linux-gnu/ | grep cudnn\nlibcudnn.so.8\nlibcudnn.so.8.9.7\nlibcudnn_ops_in"
     "fer.so.8"),
    ("two-frameworks-conflict",
     "import tensorflow as tf\nimport torch\n...\nRuntimeError: cuDNN version incompatibility: Py"
     "Torch was compiled  against (9, 1, 0) but found runtime version (8, 9, 4). PyTorch alrea"
     "dy comes bundled with cuDNN.\n(tensorflow 2.15 installed nvidia-cudnn-cu12==8.9.4.25)"),
    ("gpu-too-old",
     "/torch/cuda/__init__.py:173: UserWarning: Found GPU0 NVIDIA GeForce GTX 770 which is of "
     "cuda capability 3.0.\n    PyTorch no longer supports this GPU because it is too old.\n    "
     "The minimum cuda capability supported by this library is 3.7.\nRuntimeError: CUDA error: "
     "no kernel image is available for execution on the device"),
    # cuDNN 8.9.7 found, 9.1.0 built against: another major (FAMILIES.md: runtime-older-than-build is the right
    # major with an older minor), though JAX's words say only "newer"
    ("wrong-cudnn-major",
     "jaxlib.xla_extension.XlaRuntimeError: Unable to initialize backend 'cuda': Found cuDNN v"
     "ersion 8907, but JAX was built against version 9100, which is newer. The copy of cuDNN t"
     "hat is installed must be at least as new as the version against which JAX was built. (yo"
     "u may need to set JAX_PLATFORMS=cpu)"),
    ("no-gpu-or-driver",
     "RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU d"
     "evices. (you may need to set JAX_PLATFORMS=cpu)"),
    ("cudnn-not-installed",
     "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    y = cupy.cudnn"
     ".get_handle()\nImportError: libcudnn.so.8: cannot open shared object file: No such file o"
     "r directory\n$ pip list | grep cupy\ncupy-cuda12x 12.3.0"),
    ("wrong-cudnn-major",
     "2024-08-20 10:00:00.0000 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateE"
     "xecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 9.* and "
     "CUDA 12.*. Please install all dependencies as mentioned in the GPU requirements page (ht"
     "tps://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements),"
     " make sure they're in the PATH, and that your GPU is supported.\n$ pip list\ntorch 2.1.2\nn"
     "vidia-cudnn-cu12 8.9.2.26\nonnxruntime-gpu 1.19.0"),
    ("mixed-release",
     "OSError: [WinError 127] The specified procedure could not be found. Error loading \"C:\\Us"
     "ers\\me\\venv\\lib\\site-packages\\torch\\lib\\cudnn_adv64_9.dll\" or one of its dependencies."),
    ("unsupported-configuration",
     "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support t"
     "he graph."),
    ("mixed-release",
     "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),
    ("harmless-warning",
     "2024-03-01 10:00:00.000000: I tensorflow/core/util/port.cc:113] oneDNN custom operations"
     " are on. You may see slightly different numerical results due to floating-point round-of"
     "f errors from different computation orders. To turn them off, set the environment variab"
     "le `TF_ENABLE_ONEDNN_OPTS=0`.\n2024-03-01 10:00:00.000000: E external/local_xla/xla/strea"
     "m_executor/cuda/cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to regist"
     "er factory for plugin cuDNN when one has already been registered\n2024-03-01 10:00:00.000"
     "000: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not f"
     "ind TensorRT"),
    ("torch-without-nvidia-deps",
     "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n  File \"/home/"
     "u/.venv/lib/python3.11/site-packages/torch/__init__.py\", line 237, in <module>\n    from "
     "torch._C import *  # noqa: F403\nImportError: libcudnn.so.9: cannot open shared object fi"
     "le: No such file or directory\n(installed with poetry)"),
    ("version-mismatch-shadowed",
     "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but"
     " found runtime version (9, 0, 0). PyTorch already comes bundled with cuDNN. One option t"
     "o resolving this error is to ensure PyTorch can find the bundled cuDNN. one possibility "
     "is that there is a conflicting cuDNN in LD_LIBRARY_PATH.\n$ echo $LD_LIBRARY_PATH\n/usr/lo"
     "cal/cuda-12.4/lib64:/opt/cudnn-9.0/lib"),
    ("out-of-memory",
     "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total capa"
     "city; 5.12 GiB already allocated; 1.02 GiB free; 5.40 GiB reserved in total by PyTorch)\n"
     "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"),
    ("cudnn-not-installed",
     "Could not locate cudnn_graph64_9.dll. Please make sure it is in your library path!\nInval"
     "id handle. Cannot load symbol cudnnCreate"),
    ("gpu-too-old",
     "RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH"),
    ("bad-param-usage",
     "RuntimeError: cudnn RNN backward can only be called in training mode"),
    ("mixed-release",
     "Could not load library libcudnn_cnn_infer.so.8. Error: /usr/local/cuda/lib64/libcudnn_cn"
     "n_infer.so.8: undefined symbol: _ZN11nvrtcHelper4loadEb, version libcudnn_ops_infer.so.8"
     "\nAborted (core dumped)"),
    ("cublas-missing-or-wrong",
     "Could not load library libcudnn_ops.so.9.1.0. Error: libcublasLt.so.12: cannot open shar"
     "ed object file: No such file or directory"),
    ("out-of-memory",
     "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"),
    ("out-of-memory",
     "RuntimeError: cuDNN Frontend error: CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED"),
    ("gpu-too-old",
     "cudnn status: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"),
    ("driver-too-old",
     "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER"),
    ("bad-param-usage",
     "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"),
    ("unsupported-configuration",
     "RuntimeError: cuDNN Frontend error: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN"),
    ("sublibrary-missing",
     "E0000 cudnn_graph: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"),
    ("harmless-warning",
     "/venv/lib/python3.11/site-packages/torch/autograd/graph.py:825: UserWarning: cuDNN SDPA "
     "backward got grad_output.strides() != output.strides(), attempting to materialize a grad"
     "_output with matching strides... (Triggered internally at ../aten/src/ATen/native/cudnn/"
     "MHA.cpp:674.)"),
    ("runtime-older-than-build",
     "E0000 00:00:1717000000.000000 1234 cuda_dnn.cc:535] Loaded runtime CuDNN library: 9.1.0 "
     "but source was compiled with: 9.3.0.  CuDNN library needs to have matching major version"
     " and equal or higher minor version. If using a binary install, upgrade your CuDNN librar"
     "y.  If building from sources, make sure the library loaded at runtime is compatible with"
     " the version specified during compile configuration.\nE0000 00:00:1717000000.000000 1234 "
     "cuda_dnn.cc:539] Memory usage: 100 bytes free, 100 bytes total.\nXlaRuntimeError: FAILED_"
     "PRECONDITION: DNN library initialization failed."),
    ("cudnn-not-installed",
     "E0000 00:00:1717000000.000000 1234 cuda_dnn.cc:522] Unable to load cuDNN. Is it installe"
     "d?\n(pip install jax[cuda12_local])"),
    # TensorFlow/XLA's stand-in for the driver (tsl/cuda/cuda_stub.cc) answers 303 for libcuda.so.1 not loaded
    ("no-gpu-or-driver",
     "W external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: "
     "UNKNOWN ERROR (303)"),
    # XLA's "failed call to cuInit: %s" with cuGetErrorName and cuGetErrorString of CUDA_ERROR_UNKNOWN
    ("driver-not-ready",
     "E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: "
     "CUDA_ERROR_UNKNOWN: unknown error"),
    # PyTorch's warning for cudaGetDeviceCount failing (c10/cuda/CUDAFunctions.cpp) with cudaErrorSystemDriverMismatch
    ("driver-not-ready",
     "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
     "before calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported display "
     "driver / cuda driver combination (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)"),
    # cudaErrorDevicesUnavailable (46): the GPU's compute mode lets no new process use it
    ("gpu-unavailable",
     "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\nCUDA kernel errors might be "
     "asynchronously reported at some other API call, so the stacktrace below might be incorrect."),
    # JAX's CUDA plugin (jax_plugins/xla_cuda12/__init__.py) whose compiled part (jax-cuda12-plugin) did not import,
    # logged by jax/_src/xla_bridge.py discover_pjrt_plugins, then JAX's fallback to the CPU
    ("framework-parts-mismatch",
     "ERROR:jax._src.xla_bridge:Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initia"
     "lize()\nTraceback (most recent call last):\n  File \"/venv/lib/python3.11/site-packages/jax_plugins/xla_cuda12/"
     "__init__.py\", line 281, in _check_cuda_versions\n    assert cuda_versions is not None\nAssertionError\nWARNING:"
     "jax._src.xla_bridge:An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. "
     "Falling back to cpu."),
)


def main() -> int:
    right = 0
    for family, text in PROBES:
        causes = [cause.family for cause in explain(text, environ={}, site_paths=[]).causes]
        right += causes[:1] == [family]
        print(f"{'OK  ' if causes[:1] == [family] else 'MISS'} {family} <- {', '.join(causes[:3]) or 'not recognised'}")
    print(f"{right} of {len(PROBES)} probes ranked the expected cause first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
