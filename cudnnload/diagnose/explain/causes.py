"""The causes a cuDNN error has, one per family of fixtures/explain/FAMILIES.md: what it is, how it produces
the message, what tells it apart from the others, and its fix for the cuDNN generation, CUDA version,
platform and install kind the text shows (`Fix` of cudnnload.verdicts: typed actions; no actions where the
fix is not known, never a guess).
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from cudnnload.diagnose.explain.reading import (
    FRAMEWORK_NAMES,
    NOT_STARTED,
    Reading,
    Signal,
    cpu_build_package,
    cuda_major_of,
    library_class,
    listed_by_torch,
    version_of,
)
from cudnnload.judge.gpu import GENERIC_INIT_FIX, INIT_FIXES
from cudnnload.resolve.catalog import dependency_folder, dependency_requirement
from cudnnload.verdicts import NO_FIX, Action, Fix, fix, manual, pip_install, pip_uninstall, set_variable


@dataclass(frozen=True)
class Family:
    id: str  # a family of fixtures/explain/FAMILIES.md
    title: Callable[[Reading, Signal | None], str]
    why: str  # how this cause produces the message
    tell: str  # the check that tells it apart from the other causes of the same message
    fix: Callable[[Reading, Signal | None], Fix]
    # where a message says more than the family's words do: its own (why, tell) for the reading's signal
    told: Callable[[Reading, Signal | None], tuple[str, str] | None] = lambda reading, signal: None

    def words(self, reading: Reading, signal: Signal | None) -> tuple[str, str]:
        """How this cause produces the message, and the check that tells it apart, for ``signal``."""
        return self.told(reading, signal) or (self.why, self.tell)


# --- wheels and packages ------------------------------------------------------------------------------

# The newest nvidia-cudnn-cuNN release of each cuDNN major per CUDA major, from PyPI's release lists (`pip
# index versions nvidia-cudnn-cu11/-cu12/-cu13`, read for issue 20): cuDNN 8 for CUDA 11 (8.5-8.9.6) and 12
# (8.8-8.9.7); cuDNN 9 for CUDA 11 (9.0-9.10.2), 12 (9.0-9.28) and 13 (9.12-9.28). No wheel holds cuDNN 7.
NEWEST_CUDNN_WHEEL: dict[tuple[int, int], tuple[int, ...]] = {
    (8, 11): (8, 9, 6, 50), (8, 12): (8, 9, 7, 29), (9, 11): (9, 10, 2, 21), (9, 12): (9, 28, 0, 42),
    (9, 13): (9, 28, 1, 4),
}

def cuda_wheel(library: str, cuda: int | None) -> str | None:
    """The requirement of CUDA's wheel of ``library`` ("cublas", "nvrtc", "cudart") for CUDA ``cuda``: the one
    table of what pip ships (`resolve.catalog.dependency_requirement`); None where pip has none."""
    return dependency_requirement(f"lib{library}.so.{cuda}") if cuda else None


# the frameworks that find CUDA's wheels themselves (their RPATH or their own search of site-packages); every other
# program asks the loader by name, which searches no site-packages: TensorFlow too, whose 2.16 found none of the
# wheels `tensorflow[and-cuda]` installs (wheel-not-on-linker-path's words say so)
_FINDS_CUDA_WHEELS = ("pytorch", "jax")


def cudnn_wheel(major: int | None, cuda: int | None, at_least: str | None = None) -> str | None:
    """The requirement that installs cuDNN ``major`` (at least ``at_least``) built for CUDA ``cuda``, or None
    where PyPI has no such wheel."""
    newest = NEWEST_CUDNN_WHEEL.get((major or 0, cuda or 0))
    if newest is None or major is None:
        return None
    floor = version_of(at_least) if at_least else None
    if floor and (floor[0] != major or floor > newest):
        return None
    lower = ".".join(str(n) for n in floor) if floor else str(major)
    return f"nvidia-cudnn-cu{cuda}>={lower},<{major + 1}"


def _cuda_major(reading: Reading, signal: Signal | None = None) -> int | None:
    """The CUDA major to install for: the one the failed library's own name carries (a program asking for
    libcublas.so.12 needs CUDA 12's cuBLAS, whatever nvidia-smi's "CUDA Version" says), else the text's."""
    asked = signal and (signal.failed or signal.library)
    named = cuda_major_of(asked) if asked else None
    return named or (reading.cuda[0] if reading.cuda else None)


def _dll(major: int | None) -> str:
    return f"cudnn64_{major}.dll" if major else "cudnn64_N.dll"


_CUDNN = ("cudnn", "cudnn-sub", "cudnn-engine")


def _folder_in_text(reading: Reading, classes: tuple[str, ...], inside: str = "") -> str | None:
    """The folder of the first library of one of ``classes`` (`reading.library_class`) whose path the text shows
    (and holds ``inside``)."""
    for path in reading.paths:
        if library_class(path) in classes and inside in path:
            return (ntpath if "\\" in path else posixpath).dirname(path)
    return None


def install_cudnn(reading: Reading, major: int | None, at_least: str | None = None) -> Fix:
    """Install cuDNN ``major`` (at least ``at_least``) the way the text's install is made: conda where a path
    shows a conda env, the distribution's package for a system CUDA, Windows steps on Windows, else the pip
    wheel for the text's CUDA."""
    want = at_least or (str(major) if major else None)
    if major == 7:
        return fix(manual(f"cuDNN 7 has no pip wheel: install cuDNN {want} for your CUDA (9 or 10) from conda "
                          f"(conda install cudnn={want}) or NVIDIA's cuDNN archive, and put its lib64 (bin on "
                          "Windows) folder on the library path"))
    if major is None:
        return fix(note="the text does not show which cuDNN major is needed: see the framework's install page")
    spec = f">={want},<{major + 1}"
    if reading.has("conda"):
        return fix(manual(f"conda install -c conda-forge 'cudnn{spec}' (in the environment the program runs in)"))
    cuda = _cuda_major(reading)
    if reading.platform == "windows":
        where = _folder_in_text(reading, _CUDNN)
        return fix(manual(f"install cuDNN {want} for CUDA {cuda or 'X'} (NVIDIA's Windows installer puts "
                          f"{_dll(major)} into C:\\Program Files\\NVIDIA\\CUDNN\\v{major}.x\\bin\\<CUDA version>; the "
                          f"zip has it in bin) and add that folder to PATH"
                          + (f" (the text shows {where})" if where else "")))
    wheel = cudnn_wheel(major, cuda, at_least)
    if reading.has("system-cuda") and not reading.has("pip-wheel"):
        package = f"libcudnn{major}-cuda-{cuda}" if major == 9 and cuda else f"libcudnn{major}"
        return fix(manual(f"install cuDNN {want} for CUDA {cuda or 'X'} with the system's package manager "
                          f"({package} from NVIDIA's repository)"), alternatives=(pip_install([wheel]),) if wheel
                   else ())
    if wheel:
        return fix(pip_install([wheel]))
    return fix(manual(f"pip install 'nvidia-cudnn-cuXX{spec}' with XX the CUDA major your framework was built for "
                      "(cu11, cu12; cu13 for cuDNN 9.12+)"))


def _library_path_step(reading: Reading, folder: str) -> Action:
    """Put ``folder`` (a path the text shows, or a description in <>) on the platform's library search path."""
    if reading.platform == "windows":
        return manual(f"add {folder} to PATH (Windows searches no subfolders), or os.add_dll_directory() it before "
                      "the import")
    return manual(f"export LD_LIBRARY_PATH={folder}:$LD_LIBRARY_PATH before the program starts (setting it inside "
                  "the running Python does nothing for later loads)")


def _wheel_folder(reading: Reading) -> str:
    """The pip wheel's library folder: the one the text shows, else where the wheel puts it."""
    windows = reading.platform == "windows"
    return _folder_in_text(reading, _CUDNN, "nvidia") or (
        "<site-packages>\\nvidia\\cudnn\\bin" if windows else "<site-packages>/nvidia/cudnn/lib")


# --- each family --------------------------------------------------------------------------------------

def _major(reading: Reading, signal: Signal | None) -> str:
    return f"cuDNN {reading.cudnn_major}" if reading.cudnn_major else "cuDNN"


def _failed(signal: Signal | None, default: str) -> str:
    return signal.failed if signal and signal.failed else default


def _not_installed(reading: Reading, signal: Signal | None) -> Fix:
    return install_cudnn(reading, reading.cudnn_major)


def _wheel_off_path(reading: Reading, signal: Signal | None) -> Fix:
    steps = [_library_path_step(reading, _wheel_folder(reading))]
    if "onnxruntime" in reading.frameworks:
        steps.insert(0, manual("call onnxruntime.preload_dlls() (ONNX Runtime 1.21+) or import torch before "
                               "creating the session"))
    return fix(*steps)


def _not_on_search_path(reading: Reading, signal: Signal | None) -> Fix:
    what = _dll(reading.cudnn_major) if reading.platform == "windows" else (
        f"libcudnn.so.{reading.cudnn_major}" if reading.cudnn_major else "libcudnn.so")
    return fix(_library_path_step(reading, f"<the folder holding {what}>"))


def _sublibrary_missing(reading: Reading, signal: Signal | None) -> Fix:
    library = _failed(signal, "the missing sub-library")
    if signal is not None and listed_by_torch(signal):  # the file is torch's own, and a DLL beside it is gone
        # not a pip action: PyPI's torch for Windows is a CPU build, so the CUDA build must come from its own index
        return fix(manual(f"reinstall the same CUDA build of torch so that its torch\\lib folder is complete again "
                          f"(pip install --force-reinstall --no-deps torch==<your version> --index-url "
                          f"https://download.pytorch.org/whl/cu<your CUDA, e.g. 126>); {library} is there, a DLL it "
                          "needs is not"))
    if reading.platform == "windows":
        return fix(manual(f"put {library} of the same cuDNN release beside the other cuDNN DLLs (or reinstall the "
                          "package that ships them complete)"))
    wheel = cudnn_wheel(reading.cudnn_major, _cuda_major(reading))
    if wheel and not reading.has("conda") and not reading.has("system-cuda"):
        return fix(pip_install([wheel], options=("--force-reinstall",)))
    return fix(manual(f"reinstall the complete cuDNN {reading.cudnn_major or ''} (every sub-library, "
                      f"{library} included) from the package that owns it".replace("  ", " ")))


def _wrong_major(reading: Reading, signal: Signal | None) -> Fix:
    wanted = reading.cudnn_major
    steps: list[Action] = []
    if "ctranslate2" in reading.frameworks and wanted in (8, 9):
        # CTranslate2 4.5.0 moved its CUDA build from cuDNN 8 to cuDNN 9 (its release notes)
        steps.append(pip_install(["ctranslate2>=4.5.0" if wanted == 8 else "ctranslate2==4.4.0"]))
    if steps:
        return fix(*steps, alternatives=(manual(f"keep it and install cuDNN {wanted} beside the other major"),))
    return fix(note=f"install the build of the program made for the cuDNN major you have, or cuDNN {wanted or 'N'} "
                    "beside it")


def _runtime_older(reading: Reading, signal: Signal | None) -> Fix:
    built = signal.built if signal and signal.built else None
    version = version_of(built) if built else None
    return install_cudnn(reading, version[0] if version else reading.cudnn_major, built)


def _strict_minor(reading: Reading, signal: Signal | None) -> Fix:
    built = signal.built if signal and signal.built else None
    if not built:
        return NO_FIX
    short = ".".join(built.split(".")[:2])
    return fix(manual(f"this framework release needs exactly cuDNN {short}.x: install that (conda install "
                      f"cudnn={short}, or NVIDIA's archive), or a framework release built for the cuDNN you have"))


def _shadowed(reading: Reading, signal: Signal | None) -> Fix:
    variable = "PATH" if reading.platform == "windows" else "LD_LIBRARY_PATH"
    return fix(manual(f"remove the folder of the other cuDNN from {variable} (or put the framework's own cuDNN "
                      "folder first) for this program"))




def _mixed(reading: Reading, signal: Signal | None) -> Fix:
    stray = _failed(signal, "")
    return fix(manual("make every cuDNN library come from one release: remove the other cuDNN's folder from the "
                      "library path" + (f" (the text shows {stray})" if "/" in stray or "\\" in stray else "") +
                      ", or reinstall the complete cuDNN"))


def _cuda_wheel_steps(reading: Reading, library: str, cuda: int | None) -> list[Action]:
    """Install CUDA's wheel of ``library`` for ``cuda``, and, for a program that asks the loader for it by name,
    put the wheel's folder on the library path; none where PyPI has no such wheel."""
    wheel = cuda_wheel(library, cuda)
    if wheel is None:
        return []
    if reading.framework in _FINDS_CUDA_WHEELS:
        return [pip_install([wheel])]
    where = dependency_folder(wheel, "<site-packages>")
    if reading.platform == "windows":  # the DLLs are in bin; CUDA 13's wheels nest them one deeper, bin\x86_64
        where = where.replace("/", "\\").removesuffix("\\lib") + ("\\bin\\x86_64" if cuda == 13 else "\\bin")
    return [pip_install([wheel]), _library_path_step(reading, where)]


def _nvrtc_missing(reading: Reading, signal: Signal | None) -> Fix:
    steps = _cuda_wheel_steps(reading, "nvrtc", _cuda_major(reading, signal))
    if reading.has("conda"):
        return fix(manual("conda install -c conda-forge cuda-nvrtc (in the environment), which brings libnvrtc.so"))
    if steps:
        return fix(*steps, note="cuDNN 8.x also dlopens the unversioned libnvrtc.so: link it to "
                                "libnvrtc.so.N in the same folder if only the versioned name exists")
    return fix(manual("install NVRTC of the CUDA major cuDNN was built for (nvidia-cuda-nvrtc-cuXX, or the "
                      "toolkit) and make libnvrtc.so resolvable: the wheel ships libnvrtc.so.XX.Y alone, so for the "
                      "unversioned name link it beside cuBLASLt (ln -s .../nvidia/cuda_nvrtc/lib/libnvrtc.so.XX.Y "
                      ".../nvidia/cublas/lib/libnvrtc.so)"))


def _nvrtc_wrong(reading: Reading, signal: Signal | None) -> Fix:
    folder = _folder_in_text(reading, ("nvrtc",))
    variable = "PATH" if reading.platform == "windows" else "LD_LIBRARY_PATH"
    return fix(manual(f"remove {folder or 'the folder of the older NVRTC'} from {variable} (or unload the "
                      "environment module that adds it), so the NVRTC beside cuDNN is found"))


# the wheel of each CUDA math library beside cuBLAS, as its name begins ("libcufft.so.11", "cusparse64_12.dll")
_MATH_WHEELS = {"cufft": "nvidia-cufft", "curand": "nvidia-curand", "cusparse": "nvidia-cusparse",
                "cusolver": "nvidia-cusolver", "nvjitlink": "nvidia-nvjitlink", "cupti": "nvidia-cuda-cupti"}


def _math_name(signal: Signal | None) -> str | None:
    """The CUDA math library other than cuBLAS that failed ("cufft"), or None."""
    if not signal or not signal.failed or library_class(signal.failed) != "cuda-math":
        return None
    base = ntpath.basename(posixpath.basename(signal.failed)).lower().removeprefix("lib")
    return next((name for name in _MATH_WHEELS if base.startswith(name)), None)


def _math_library(signal: Signal | None) -> str:
    name = _math_name(signal)
    return f"{signal.failed} ({name}, one of CUDA's libraries)" if name and signal else "cuBLAS/cuBLASLt"


def _cublas(reading: Reading, signal: Signal | None) -> Fix:
    if (name := _math_name(signal)) is not None:
        cuda = _cuda_major(reading)
        if cuda in (11, 12):
            return fix(pip_install([f"{_MATH_WHEELS[name]}-cu{cuda}"]))
        return fix(manual(f"install {_MATH_WHEELS[name]} of the CUDA major the program was built for "
                          f"({_MATH_WHEELS[name]}-cu12 for CUDA 12, or the CUDA toolkit's)"))
    steps = _cuda_wheel_steps(reading, "cublas", _cuda_major(reading, signal))
    return fix(*steps) if steps else fix(manual("install cuBLAS of the CUDA major the program was built for "
                                                "(nvidia-cublas-cuXX, or the toolkit)"))


def _cudart(reading: Reading, signal: Signal | None) -> Fix:
    steps = _cuda_wheel_steps(reading, "cudart", _cuda_major(reading, signal))
    return fix(*steps) if steps else NO_FIX


def _zlib(reading: Reading, signal: Signal | None) -> Fix:
    if reading.platform == "linux" or reading.platform == "wsl":
        return fix(manual("install zlib (apt install zlib1g, dnf install zlib)"))
    return fix(manual("put a 64-bit zlibwapi.dll into a folder on PATH, e.g. C:\\Program Files\\NVIDIA GPU Computing "
                      "Toolkit\\CUDA\\v<version>\\bin (NVIDIA's cuDNN 8 install guide for Windows); cuDNN 9 no longer "
                      "needs it"))


def _libcuda(reading: Reading, signal: Signal | None) -> Fix:
    if reading.platform == "wsl" or reading.has("wsl"):
        return fix(manual("WSL: the driver's libcuda.so is in /usr/lib/wsl/lib; add it to LD_LIBRARY_PATH, or make "
                          "/usr/lib/wsl/lib/libcuda.so a symbolic link to libcuda.so.1 and run ldconfig"))
    return fix(manual("make the driver's unversioned libcuda.so resolvable: a symbolic link libcuda.so -> "
                      "libcuda.so.1 in the driver's folder, then ldconfig"))


# Windows' C++ runtime: a DLL built with a newer MSVC than the msvcp140.dll/vcruntime140.dll loaded fails its
# initialisation (error 1114); the Redistributable installs the newest, and a package that loads its own older copy
# first (PyQt, an application's bundle) keeps it in the process
_VC_REDIST = ("install the latest Microsoft Visual C++ Redistributable (x64, https://aka.ms/vs/17/release/"
              "vc_redist.x64.exe) and restart; if a package that bundles its own older msvcp140.dll (PyQt5, an "
              "application's folder) is imported first, import the framework before it")


def _glibc_title(reading: Reading, signal: Signal | None) -> str:
    if reading.platform == "windows":
        return ("the Visual C++ runtime a DLL needs (msvcp140.dll, vcruntime140_1.dll) is missing or older than the "
                "DLL was built for")
    return "the system's glibc or libstdc++ is older than the cuDNN binary needs"


def _glibc(reading: Reading, signal: Signal | None) -> Fix:
    if reading.platform == "windows":
        if signal is not None and "fbgemm.dll" in (signal.library or "").lower():
            return fix(manual("torch 2.4.0's fbgemm.dll needs libomp140.x86_64.dll, which no Visual C++ "
                              "Redistributable installs: upgrade torch (2.4.1 and later do not need it), or install "
                              "Visual Studio's C++ build tools (MSVC v143), which put it in System32"))
        return fix(manual(_VC_REDIST))
    needed = signal.error.split("`")[1].split("'")[0] if signal and signal.error and "`" in signal.error else None
    if needed and needed.startswith(("GLIBCXX", "CXXABI")):
        return fix(manual(f"load a libstdc++ that has {needed} (a newer distribution or container; in conda: "
                          "conda install -c conda-forge libstdcxx-ng)"))
    return fix(manual(f"run on a system (or container) whose glibc has {needed or 'the version named'}, or use a "
                      "cuDNN release built for the older glibc"))


def _frontend(reading: Reading, signal: Signal | None) -> Fix:
    return fix(note="keep one CUDA runtime visible to the process, or the cudnn-frontend release that worked")


def _driver_old(reading: Reading, signal: Signal | None) -> Fix:
    cuda = f" (one that supports CUDA {'.'.join(map(str, reading.cuda))})" if reading.cuda else ""
    return fix(manual(f"upgrade the NVIDIA driver{cuda}, or install the framework build for an older CUDA"))


def _oom(reading: Reading, signal: Signal | None) -> Fix:
    if reading.framework == "tensorflow":
        return fix(set_variable("TF_FORCE_GPU_ALLOW_GROWTH", "true"), note="TensorFlow otherwise reserves almost "
                   "all GPU memory up front; also lower the batch size")
    if reading.framework == "jax":
        return fix(set_variable("XLA_PYTHON_CLIENT_PREALLOCATE", "false"), note="also lower the batch size")
    return fix(manual("lower the batch size, or free GPU memory held by other processes (nvidia-smi)"))


# PyTorch's own check at the first cuDNN call (torch/backends/cudnn/__init__.py; 2.14 of the releases the catalog
# reads, not 2.8): "cuDNN version %d is not compatible with devices with SM < 7.5", raised when its cuDNN is 9.11 or
# later (which has no kernels below Turing) and the oldest GPU the process can see is below compute capability 7.5:
# every visible GPU counts, not only the one the tensors are on.
_TORCH_SM_CHECK = re.compile(r"(?i)devices with SM\s*<\s*7\.5")


def _gpu_old(reading: Reading, signal: Signal | None) -> Fix:
    if signal is not None and _TORCH_SM_CHECK.search(f"{signal.quote} {signal.line}"):
        return fix(manual("PyTorch refuses its cuDNN (9.11 or later) while any GPU the process can see is below "
                          "compute capability 7.5: where another GPU is newer, hide the old one "
                          "(CUDA_VISIBLE_DEVICES=<the newer GPUs' indices>); otherwise install a PyTorch build whose "
                          "cuDNN is older than 9.11, or run on the CPU"))
    return fix(manual("use a GPU the cuDNN release supports (cuDNN 9.11+: compute capability 7.5), a framework build "
                      "with an older cuDNN that still supports this GPU, or run on the CPU"))


def _init_fix(signal: Signal | None, otherwise: str) -> Fix:
    """What doctor says for the cuInit result a "driver-state" message tells, or that of the driver state it tells
    (reading.DRIVER_STATES, judge.gpu.INIT_FIXES); ``otherwise`` where it tells none that has a fix of its own."""
    result = signal.error if signal is not None and signal.kind == "driver-state" else None
    return fix(manual(INIT_FIXES.get(result or "", otherwise)))


def _driver_not_ready(reading: Reading, signal: Signal | None) -> Fix:
    """What puts the driver back in a state to run CUDA."""
    return _init_fix(signal, GENERIC_INIT_FIX)


_NO_DRIVER = ("install the NVIDIA driver; in a container, start it with the NVIDIA runtime (docker run --gpus all); "
              "check CUDA_VISIBLE_DEVICES")


def _no_driver(reading: Reading, signal: Signal | None) -> Fix:
    """The driver where none is seen; what doctor says where cuInit's result tells more (a stub libcuda loaded)."""
    return _init_fix(signal, _NO_DRIVER)


# PyTorch's index of CUDA builds per CUDA major (https://download.pytorch.org/whl/cuXYZ): one whose wheels torch's
# current releases still publish, for a driver of that major
_TORCH_INDEX = {11: "cu118", 12: "cu126", 13: "cu130"}


def _cpu_build_title(reading: Reading, signal: Signal | None) -> str:
    return (f"the {cpu_build_package(reading.framework) or 'framework'} installed is its build without CUDA, so it "
            "never uses the GPU")


# JAX's CUDA plugin named by its module or package (jax_plugins.xla_cuda13, jax_cuda12_plugin, jax-cuda13-pjrt)
_JAX_PLUGIN_CUDA = re.compile(r"(?:xla_cuda|jax[_-]cuda)(1[23])\b|(?:xla_cuda|jax[_-]cuda)(1[23])[_-]")


def _jax_cuda(reading: Reading) -> str:
    """JAX with its CUDA plugin, for the CUDA major of the plugin the text names, else the CUDA the text shows (12
    where it shows none JAX publishes)."""
    shown = (found for text in (*(s.line for s in reading.signals), *reading.paths)
             if (found := _JAX_PLUGIN_CUDA.search(text)))
    plugin = next((int(found.group(1) or found.group(2)) for found in shown), None)
    cuda = plugin or _cuda_major(reading)
    return f"jax[cuda{cuda if cuda in (12, 13) else 12}]"


def _cpu_build(reading: Reading, signal: Signal | None) -> Fix:
    """The framework's CUDA build in place of the one without: typed where the package and its index are known
    from the text (the CUDA major it shows), in words otherwise; none on macOS, which has no CUDA."""
    framework, cuda = reading.framework, _cuda_major(reading)
    if reading.platform == "macos":
        return fix(manual("macOS has no CUDA: run on the 'mps' or 'cpu' device, or on a machine with an NVIDIA GPU"))
    if framework == "pytorch":
        index = _TORCH_INDEX.get(cuda or 0)
        if index is None:
            return fix(manual("reinstall torch (and torchvision/torchaudio, if installed) from PyTorch's index for "
                              "the CUDA your driver supports (nvidia-smi's 'CUDA Version'), e.g. pip install "
                              "--force-reinstall torch --index-url https://download.pytorch.org/whl/cu126"))
        return fix(pip_install(["torch"], options=["--force-reinstall", "--index-url",
                                                   f"https://download.pytorch.org/whl/{index}"]),
                   note="torchvision and torchaudio, if installed, from the same index")
    if framework == "jax":
        if reading.platform == "windows":
            return fix(manual("JAX has no CUDA build for Windows itself: run it under WSL2 and pip install "
                              "'jax[cuda12]' there"))
        return fix(pip_install([_jax_cuda(reading)], options=["--upgrade"]))
    if framework == "onnxruntime":  # both packages share the onnxruntime folder: the CPU one's files win
        return fix(pip_uninstall(["onnxruntime", "onnxruntime-gpu"]), pip_install(["onnxruntime-gpu"]))
    if framework == "paddle":
        return fix(pip_uninstall(["paddlepaddle"]),
                   manual("install paddlepaddle-gpu for your CUDA from PaddlePaddle's index "
                          "(https://www.paddlepaddle.org.cn/install/quick)"))
    return fix(manual("install the framework's CUDA build"))


def _extension(signal: Signal | None) -> str | None:
    """The compiled extension a framework's C++ symbol is missing for (reading's "extension-abi-*" patterns)."""
    if signal is None or not signal.pattern.startswith("extension-abi-"):
        return None
    return posixpath.basename(ntpath.basename(signal.library or "")) or None


def _framework_name(reading: Reading) -> str:
    return FRAMEWORK_NAMES.get(reading.framework or "", "framework")


def _extension_words(reading: Reading, signal: Signal | None) -> tuple[str, str] | None:
    """How an extension built for another release fails, and the check that shows it."""
    if _extension(signal) is None:
        return None
    return ("a compiled extension binds to the C++ functions of the framework release it was built against; another "
            "release renames, changes or drops some of them, so the extension no longer loads",
            "the extension's release or wheel name names another framework release (or CUDA, or C++ ABI) than `pip "
            "list` shows installed; built from source against the framework installed, it loads")


def _parts_title(reading: Reading, signal: Signal | None) -> str:
    if (extension := _extension(signal)) is not None:
        return (f"{extension} was built against another {_framework_name(reading)} release (or build) than the one "
                "installed")
    parts = {"jax": "jax, jaxlib and its CUDA plugin", "pytorch": "torch and torchvision"}.get(reading.framework or "")
    return f"the framework's own packages ({parts or 'its parts'}) are of releases that do not go together"


def _parts(reading: Reading, signal: Signal | None) -> Fix:
    """The framework's packages installed together, at one release: JAX's extra pins jax, jaxlib and the plugin;
    torchvision's release follows torch's (torch 2.N: torchvision 0.(N+15), pytorch/vision's table); a compiled
    extension (flash-attn, xformers, a custom op) built again, or in the build made for the framework installed."""
    if (extension := _extension(signal)) is not None:
        return fix(manual(f"install the build of the package that ships {extension} made for the "
                          f"{_framework_name(reading)} installed (its release, its CUDA and, for PyTorch, its C++ ABI: "
                          "a wheel named for them, or a build from source against it: pip install "
                          "--no-build-isolation --no-cache-dir --force-reinstall <package>), or install the "
                          f"{_framework_name(reading)} release it was built for"))
    if reading.framework == "jax":
        return fix(pip_install([_jax_cuda(reading)], options=["--upgrade"]),
                   note="installs jax, jaxlib and the CUDA plugin at one release")
    if reading.framework == "pytorch":
        return fix(manual("install the torchvision made for the torch installed (torch 2.N: torchvision 0.(N+15), "
                          "e.g. torch 2.5 with torchvision 0.20), from the same index as torch "
                          "(https://download.pytorch.org/whl/cuXYZ for its CUDA build), or reinstall both together"))
    return fix(manual("reinstall the framework's packages together, at one release"))


def _toolkit_setup(want: str, version: str) -> str:
    """Installing the CUDA toolkit ``want`` (words) of version ``version`` ("12.4", or "X.Y") and building with it."""
    return (f"install the CUDA toolkit {want} (nvcc and the headers: NVIDIA's installer or apt's cuda-toolkit-"
            f"{version.replace('.', '-')}; in a conda environment conda install -c nvidia cuda-toolkit={version}) and "
            f"point CUDA_HOME at it before building (export CUDA_HOME=/usr/local/cuda-{version}); pip's nvidia-* "
            "wheels bring CUDA's libraries, never nvcc")


def _toolkit_missing(reading: Reading, signal: Signal | None) -> Fix:
    return fix(manual(_toolkit_setup("of the CUDA torch was built with (python -c 'import torch; "
                                     "print(torch.version.cuda)' prints X.Y)", "X.Y")),
               note="or install a prebuilt wheel of the extension made for your torch and CUDA, which needs no "
                    "toolkit")


def _toolkit_mismatch(reading: Reading, signal: Signal | None) -> Fix:
    if reading.toolkit_check is None:
        return _toolkit_missing(reading, signal)
    toolkit, framework = reading.toolkit_check
    index = _TORCH_INDEX.get(int(toolkit.split(".")[0]))
    return fix(manual(_toolkit_setup(framework, framework)),
               note=f"or build with the toolkit {toolkit} you have against a torch made for it"
                    + (f" (pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{index})"
                       if index else "") + ", or install a prebuilt wheel of the extension")


def _toolkit_title(reading: Reading, signal: Signal | None) -> str:
    versions = reading.toolkit_check
    return ("the CUDA toolkit that builds the extension" + (f" ({versions[0]})" if versions else "") + " is not "
            "the CUDA the framework was built with" + (f" ({versions[1]})" if versions else ""))


# What a message says of its cause in words of its own, where the family's are about something else (bad-param-usage
# speaks of a zero-sized tensor, unsupported-configuration of what cuDNN has no engine for): by the family and the
# reading's signal (its pattern), the title, how it produces the message, the check that tells it apart and the fix.
_OWN_WORDS: dict[tuple[str, str], tuple[str, str, str, str]] = {
    # PyTorch's "cudnn RNN backward can only be called in training mode"
    ("bad-param-usage", "torch-rnn-eval"): (
        "the program calls cuDNN in a way the framework refuses (a cuDNN RNN's backward pass in eval mode)",
        "PyTorch refuses a backward pass through a cuDNN RNN of a module in eval mode before cuDNN runs",
        "the module's .training is False where the backward pass runs",
        "put the module back in training mode before the backward pass (model.train() after an evaluation that "
        "called model.eval()), or run that pass without cuDNN (torch.backends.cudnn.flags(enabled=False))"),
    # PyTorch's "Cannot re-initialize CUDA in forked subprocess", and the runtime's "initialization error" in a child
    # the text shows was made by fork() (`_own_words`)
    ("bad-param-usage", "cuda-in-fork"): (
        "the program uses CUDA in a child process forked after the parent had started CUDA (a DataLoader worker, "
        "a multiprocessing pool)",
        "a child made by fork() inherits the parent's CUDA state but cannot use it, and CUDA cannot start again "
        "there: PyTorch refuses it in words of its own, CuPy, numba and TensorFlow get the runtime's "
        "\"initialization error\"",
        "the failing code runs in a worker (a DataLoader with num_workers > 0, a Pool, a Process) and the parent "
        "touched the GPU before starting it; with num_workers=0 it runs",
        "start the child processes with the 'spawn' (or 'forkserver') start method "
        "(multiprocessing.set_start_method('spawn') under `if __name__ == \"__main__\":`, "
        "DataLoader(..., multiprocessing_context='spawn')), or keep CUDA out of the parent until its workers are "
        "started and out of the workers (load to the GPU in the main process)"),
    # a GPU index the process does not have (the CUDA runtime's "invalid device ordinal")
    ("bad-param-usage", "device-index"): (
        "the program asks for a GPU index this process does not have (cuda:1 where one GPU is visible)",
        "CUDA numbers the GPUs a process sees from 0; an index at or above their count is refused",
        "torch.cuda.device_count() (or nvidia-smi -L with CUDA_VISIBLE_DEVICES) in the same environment: the "
        "index the program uses is not below it",
        "use a device index below the count the process sees (torch.cuda.device_count(); cuda:0 where one GPU is "
        "visible: CUDA_VISIBLE_DEVICES renumbers the GPUs it shows from 0), or show that GPU to the process"),
    # Triton's OutOfResources: a kernel configuration tuned for a GPU with more shared memory (or registers)
    ("unsupported-configuration", "triton-resources"): (
        "a Triton kernel's configuration needs more shared memory (or registers) than this GPU has",
        "Triton kernels (torch.compile's, vLLM's, a library's) carry block sizes and pipeline stages tuned for a GPU "
        "with more shared memory per block (an A100 or H100); a smaller GPU cannot launch them",
        "the message's Required is above its Hardware limit; the same program runs on a GPU with more shared memory",
        "use smaller block sizes or fewer num_stages for that kernel (torch.compile: mode='default' rather than "
        "'max-autotune'; a library: its release or option for this GPU), or run on a GPU with more shared memory"),
}


def _own_words(family: str, reading: Reading, signal: Signal | None) -> tuple[str, str, str, str] | None:
    """What the message says of ``family`` in its own words (`_OWN_WORDS`): by its pattern, or, for the runtime's
    "initialization error" in a child the text shows was made by fork(), CUDA used in a forked child."""
    if signal is None:
        return None
    pattern = signal.pattern
    if (family, pattern) not in _OWN_WORDS and reading.has("forked-child") and NOT_STARTED.search(signal.line):
        pattern = "cuda-in-fork"
    return _OWN_WORDS.get((family, pattern))


def _own_title(family: str, default: str) -> Callable[[Reading, Signal | None], str]:
    return lambda reading, signal: (_own_words(family, reading, signal) or (default,))[0]


def _own_fix(family: str, default: str) -> Callable[[Reading, Signal | None], Fix]:
    return lambda reading, signal: fix(manual((_own_words(family, reading, signal) or (None, None, None, default))[3]))


def _own_told(family: str) -> Callable[[Reading, Signal | None], tuple[str, str] | None]:
    def told(reading: Reading, signal: Signal | None) -> tuple[str, str] | None:
        found = _own_words(family, reading, signal)
        return (found[1], found[2]) if found else None
    return told


def _title(text: str) -> Callable[[Reading, Signal | None], str]:
    return lambda reading, signal: text


def _manual(text: str) -> Callable[[Reading, Signal | None], Fix]:
    """A fix that is one manual step, the same whatever the text shows."""
    return lambda reading, signal: fix(manual(text))


FAMILIES: dict[str, Family] = {family.id: family for family in (
    Family("cudnn-not-installed", lambda r, s: f"{_major(r, s)} is not installed where the program looks",
           "nothing on the search path provides the library, and nothing of that major is installed",
           "find the library on the machine (`cudnnload inspect`, `find / -name 'libcudnn*'`): none of that major",
           _not_installed),
    Family("wheel-not-on-linker-path", lambda r, s: f"{_major(r, s)} is a pip wheel on no library search path",
           "nvidia-cudnn-cuXX puts the libraries into site-packages/nvidia/cudnn/lib; PyTorch loads them by path, "
           "a program asking by name (CTranslate2, ONNX Runtime, TensorFlow 2.16) does not find them",
           "`pip show nvidia-cudnn-cu12` lists the wheel, and `cudnnload which` says it is found only by path",
           _wheel_off_path),
    Family("preload-needs-missing", lambda r, s: (
           f"an LD_PRELOAD entry{f' ({s.library})' if s.library else ''} needs a symbol the library found for it "
           "lacks (another release's): "
           "every program stops at start" if s is not None and s.kind == "symbol-mismatch" else
           f"an LD_PRELOAD entry needs {_failed(s, 'a library')}, which is not found: every program stops at start"),
           "glibc maps each LD_PRELOAD entry (and /etc/ld.so.preload) and what it NEEDs before any program's own "
           "libraries; one that cannot be completed stops every program, Python and the shell's tools included, "
           "with \"error while loading shared libraries\"",
           "`echo $LD_PRELOAD` (and /etc/ld.so.preload) names a cuDNN library; `/bin/true` fails the same way",
           _manual("remove the cuDNN entry from LD_PRELOAD (or /etc/ld.so.preload), or put what it needs beside it; "
                   "`LD_PRELOAD= cudnnload doctor --env LD_PRELOAD=\"$LD_PRELOAD\"` (cudnnload started without it, "
                   "judging it) names the entry and what it needs")),
    Family("installed-not-on-search-path", lambda r, s: f"{_major(r, s)} is installed, but its folder is not on "
           + ("PATH" if r.platform == "windows" else "the library search path"),
           "an archive, conda or installer cuDNN was unpacked into a folder the loader does not search (Windows "
           "searches no subfolders such as cuda\\bin)", "the library exists on disk, outside every folder of "
           "PATH / LD_LIBRARY_PATH and ld.so.cache", _not_on_search_path),
    Family("sublibrary-missing", lambda r, s: f"a library that {s.failed} needs is missing beside it (PyTorch "
           "found the file itself in its torch\\lib folder)" if s and s.failed and listed_by_torch(s) else
           f"{_failed(s, 'a sub-library')} is missing beside the cuDNN shim",
           "the shim was found but opens its sub-libraries at run time, and this one is not in the package",
           "list the cuDNN folder: the shim is there, that sub-library is not", _sublibrary_missing),
    Family("wrong-cudnn-major", lambda r, s: f"the program needs {_major(r, s)}, and another major is installed",
           "each framework build links one cuDNN major; a newer framework beside it (torch 2.4+ brings cuDNN 9) "
           "does not satisfy a program built for cuDNN 8, nor the reverse",
           "the cuDNN major the program's build needs (its release notes, `ldd`) differs from the one installed",
           _wrong_major),
    Family("runtime-older-than-build", lambda r, s: "the cuDNN found is older than the framework was built with"
           + (f" ({s.found} < {s.built})" if s and s.built and s.found else ""),
           "frameworks check at start that the cuDNN they load is at least the release they were compiled against",
           "the version the framework loads (its log line) is below its build's; no other cuDNN is on the path",
           _runtime_older),
    Family("minor-mismatch-strict", lambda r, s: "an older framework needs exactly the cuDNN minor it was built "
           "with" + (f" ({s.built}), and {s.found} was loaded" if s and s.built and s.found else ""),
           "PyTorch 0.4 and TensorFlow 1.x compared major.minor for equality: a newer minor was refused too",
           "the loaded minor is newer than the built one, and the framework is old", _strict_minor),
    Family("version-mismatch-shadowed", lambda r, s: "another cuDNN earlier on the library path is loaded instead "
           "of the framework's own", "the first cuDNN the loader finds wins: a folder on LD_LIBRARY_PATH (PATH on "
           "Windows), /usr/local/cuda, or a CUDA folder of the machine comes before the bundled one",
           "LD_LIBRARY_PATH / PATH holds a cuDNN folder; `cudnnload doctor -- PROGRAM` shows which file loaded",
           _shadowed),
    Family("conda-vs-pip", _title("a conda cuDNN and a pip cuDNN in one environment: the wrong one is first"),
           "$CONDA_PREFIX/lib comes first on the search path, and its cuDNN is not the one the framework needs",
           "`conda list cudnn` and `pip list | grep cudnn` both show one",
           _manual("keep one cuDNN in the environment: conda remove cudnn (if the framework uses the pip wheel), or "
                   "put site-packages/nvidia/cudnn/lib before $CONDA_PREFIX/lib on LD_LIBRARY_PATH")),
    Family("two-frameworks-conflict", _title("two frameworks in one environment need different cuDNN releases"),
           "the first framework imported maps its cuDNN for the whole process, or one framework's pin replaced "
           "the cuDNN wheel the other needs", "`pip check`; the error goes away when only one framework is imported",
           _manual("give each framework the cuDNN it was built for: import the one whose cuDNN is newer first, "
                      "or install releases whose nvidia-cudnn pins agree (pip check lists the conflict)")),
    Family("mixed-release", _title("cuDNN libraries of two releases are mixed in one process"),
           "cuDNN's libraries bind to each other's release-private symbols: one library of another release fails "
           "with an undefined symbol (Windows error 127) or a sub-library version mismatch",
           "the libraries named in the text come from different folders or releases (`cudnnload inspect`)", _mixed),
    Family("known-bad-release", _title("the cuDNN release itself has a bug fixed later"),
           "a known defect of that release, not of the loading", "the release notes of the next cuDNN release",
           _manual("upgrade cuDNN to a release that fixes it (for JAX: 9.10.1 or newer)")),
    Family("nvrtc-missing", _title("NVRTC is missing: cuDNN's runtime-compiled kernels need libnvrtc"),
           "cuDNN 8.6+ and 9 dlopen NVRTC (libnvrtc.so, libnvrtc.so.12) at the first runtime-compiled kernel, and "
           "cuBLAS 11.11's cuBLASLt opens the unversioned libnvrtc.so as it loads, which a cuDNN 8 shim before 8.9 "
           "then reports as the failure of the sub-library it was loading; the Error: part names it, not a cuDNN "
           "file", "ldconfig -p | grep nvrtc, and the cuDNN folder's siblings",
           _nvrtc_missing),
    Family("nvrtc-wrong", _title("an older NVRTC earlier on the search path is loaded instead of the matching one"),
           "the NVRTC found first lacks a function cuDNN needs (nvrtcGetCUBIN: CUDA 11.1+)",
           "the path in the error is an old CUDA's lib64", _nvrtc_wrong),
    Family("cublas-missing-or-wrong", lambda r, s: f"{_math_library(s)} of the CUDA major needed is missing",
           "cuDNN 9 and the frameworks' CUDA providers load cuBLASLt (and a framework's GPU build cuFFT, cuRAND, "
           "cuSPARSE, cuSOLVER); the one found is absent or of another CUDA major",
           "the Error: part names the library (libcublas, libcufft, ...); `ldconfig -p | grep -E 'cublas|cufft'`",
           _cublas),
    Family("libcudart-missing-or-wrong", _title("the CUDA runtime (libcudart) needed is missing or of another major"),
           "a library built against a shared CUDA runtime cannot find it", "the Error: part names libcudart",
           _cudart),
    Family("zlib-missing", _title("zlibwapi.dll (zlib) is missing: cuDNN 8.3-8.9 on Windows needs it"),
           "cudnn_cnn_infer64_8.dll needs zlibwapi.dll; without it LoadLibrary fails with error 126 although the "
           "cuDNN DLL itself is there", "the cuDNN DLL is on PATH and zlibwapi.dll is in no PATH folder", _zlib),
    Family("libcuda-missing", lambda r, s: "the driver's libcuda.so.1 is installed, in a folder this process's "
           "search does not reach (WSL's /usr/lib/wsl/lib)" if s is not None and (s.failed or "").endswith(".so.1")
           else "the driver's unversioned libcuda.so cannot be resolved",
           "cuDNN 8 dlopens libcuda.so; a driver that installs only libcuda.so.1 (WSL's /usr/lib/wsl/lib copies, "
           "which ldconfig skips) leaves that name unresolved", "ldconfig -p | grep 'libcuda.so '", _libcuda),
    Family("glibc-or-libstdcxx-too-old", _glibc_title,
           "the libraries are linked against a newer C and C++ runtime than the one loaded (GLIBC_/GLIBCXX_ versions "
           "on Linux; on Windows a DLL built with a newer MSVC fails its initialisation, error 1114, and one whose "
           "runtime DLL is not installed at all fails to load, error 126)",
           "ldd --version, strings libstdc++.so.6 | grep GLIBCXX; on Windows the version of msvcp140.dll in "
           "System32 and in the folders of the packages imported first", _glibc),
    Family("multiple-cudart-or-frontend", _title("cudnn-frontend cannot load the CUDA runtime it wants"),
           "cudnn-frontend loads libcudart at run time; several CUDA runtimes, or a release that looks elsewhere, "
           "make it fail", "the error names libcudart; it goes away with the previous cudnn-frontend release",
           _frontend),
    Family("driver-too-old", _title("the NVIDIA driver is older than the CUDA the framework or cuDNN was built for"),
           "a CUDA runtime refuses a driver that supports only an older CUDA; cuDNN's handle creation then fails",
           "nvidia-smi's 'CUDA Version' is below the framework build's CUDA", _driver_old),
    Family("no-gpu-or-driver", _title("the process sees no NVIDIA driver or no GPU"),
           "without libcuda.so.1 (a container without the NVIDIA runtime, no driver) cuDNN cannot create a handle",
           "nvidia-smi in the same container or shell; CUDA_VISIBLE_DEVICES", _no_driver),
    Family("driver-not-ready", lambda r, s: "the NVIDIA driver is installed but not ready to run CUDA" + (
        f": {s.meaning}" if s is not None and s.kind == "driver-state" and s.families[:1] in ((), ("driver-not-ready",))
        else ""),
           "CUDA starts only when the kernel module, its user-space libraries (libcuda, NVML) and, on NVSwitch "
           "systems, the Fabric Manager run one driver release together; otherwise every program fails before "
           "cuDNN is reached", "nvidia-smi fails or differs from cat /proc/driver/nvidia/version; dmesg; "
           "systemctl status nvidia-fabricmanager", _driver_not_ready),
    Family("gpu-unavailable", _title("the GPU's compute mode lets no new process use it (another process holds it)"),
           "a GPU in the EXCLUSIVE_PROCESS compute mode serves one process at a time, and one in PROHIBITED none: "
           "a program starting while another holds it gets no CUDA context", "nvidia-smi shows the compute mode "
           "(nvidia-smi -q -d COMPUTE) and the process that holds the GPU",
           _manual("end or wait for the process that holds the GPU (nvidia-smi lists it), point the program at "
                   "another GPU (CUDA_VISIBLE_DEVICES), or, as root, set the default compute mode back: "
                   "nvidia-smi -i <GPU> -c DEFAULT")),
    Family("gpu-too-old", _title("the GPU is older than the cuDNN release supports"),
           "cuDNN (and the framework build) carries no kernels for the GPU's compute capability: "
           "CUDNN_STATUS_ARCH_MISMATCH", "the GPU's compute capability (nvidia-smi --query-gpu=compute_cap) is "
           "below the release's minimum",
           _gpu_old),
    Family("gpu-too-new", _title("the framework build has no kernels for this newer GPU"),
           "a build for an older CUDA cannot run on a newer architecture (CUDA 10 builds on Ampere)",
           "the GPU's architecture is newer than the build's CUDA knows",
           _manual("install a framework build for a CUDA that knows this GPU (Ampere: CUDA 11.0+, Hopper: 11.8+, "
                   "Blackwell: 12.8+)")),
    Family("out-of-memory", _title("the GPU ran out of memory (reported as a cuDNN error)"),
           "cuDNN allocates its handle and workspace on the device; when that fails it reports NOT_INITIALIZED, "
           "INTERNAL_ERROR or no engine instead of out-of-memory", "retry with batch size 1, or watch nvidia-smi: "
           "it works when memory was the cause", _oom),
    Family("unsupported-configuration",
           _own_title("unsupported-configuration", "cuDNN does not support this shape, layout, dtype or group count"),
           "the call asks for something cuDNN has no engine for (tensors of 2**31+ elements, huge group counts, a "
           "dtype the GPU lacks); loading is fine", "a smaller batch or another dtype works on the same machine",
           _own_fix("unsupported-configuration", "change the call cuDNN cannot do: keep every tensor below 2**31 "
                    "elements (split the batch), use a supported dtype/layout, or disable cuDNN for that layer "
                    "(torch.backends.cudnn.enabled = False)"), _own_told("unsupported-configuration")),
    Family("bad-param-usage",
           _own_title("bad-param-usage", "the program passes values cuDNN rejects (an empty or zero-sized tensor)"),
           "descriptors with a zero dimension or inconsistent sizes are refused with CUDNN_STATUS_BAD_PARAM; a "
           "framework refuses some calls itself (a cuDNN RNN's backward pass in eval mode)",
           "print the shapes reaching the layer: one has a 0; or the module's .training is False",
           _own_fix("bad-param-usage", "fix the shapes reaching the layer: no zero-sized batch or channel dimension "
                    "(check data_format)"), _own_told("bad-param-usage")),
    Family("execution-failed-kernel", _title("a cuDNN kernel failed on the GPU (a bug or an earlier illegal access)"),
           "the kernel launch or its run failed for a reason other than a missing architecture",
           "CUDA_LAUNCH_BLOCKING=1 shows the first failing kernel", lambda r, s: NO_FIX),
    Family("missing-runpath", _title("a cuDNN library that opens its siblings has no RUNPATH $ORIGIN"),
           "libcudnn_graph.so.9 of some wheels (arm64 9.1) carries no RUNPATH, so the engines beside it are found "
           "only if their folder is on the search path", "readelf -d libcudnn_graph.so.9 shows no RUNPATH",
           lambda r, s: fix(_library_path_step(r, "<the folder of libcudnn_graph.so.9 and the engines>"),
                            note="or a cuDNN wheel whose libcudnn_graph carries RUNPATH $ORIGIN")),
    Family("origin-through-symlink", _title("cuDNN is loaded through a symbolic link in another folder"),
           "$ORIGIN is the folder of the path that was opened: a symlink in a bundle (PyInstaller, Bazel, Nix) "
           "points it where the sub-libraries are not", "the loaded libcudnn is a symlink whose folder lacks the "
           "sub-libraries", _manual("load cuDNN from its real folder (no top-level symlinks; for "
                                                     "PyInstaller update pyinstaller-hooks-contrib and rebuild)")),
    Family("platlib-purelib-split", _title("pip put torch and the nvidia-* wheels into different site-packages "
                                           "(lib64 vs lib)"),
           "on Red Hat-family layouts torch goes to lib64/.../site-packages and the nvidia wheels to lib/...; "
           "torch's $ORIGIN-relative RPATH then misses them", "both lib and lib64 site-packages exist, the nvidia "
           "folder is only in one", lambda r, s: fix(_library_path_step(r, "<venv>/lib/pythonX.Y/site-packages/nvidia/"
                                                                        "cudnn/lib"),
                                                     note="or a torch release that searches every sys.path entry")),
    Family("unloadable-file", lambda r, s: f"{_failed(s, 'the library found')} is not a loadable library for this "
           "machine (truncated, damaged, another architecture or word size)",
           "the loader found a file under the right name but could not map it: a copy cut short or emptied (\"file too "
           "short\"), a text placeholder such as a git-lfs pointer (\"invalid ELF header\"), a 32-bit or other-"
           "architecture build (\"wrong ELF class\", Windows error 193), or a whole file on a file system mounted "
           "noexec, whose code the kernel refuses to map (\"failed to map segment from shared object\")",
           "`file` and `ls -l` on the path named: its size and architecture differ from the release's; `findmnt -T` "
           "on its folder shows noexec",
           _manual("replace the file with a complete copy of the build for this machine's architecture (copy the "
                   "archive again keeping its symlinks: cp -P; fetch git-lfs objects; the Jetson's own JetPack "
                   "cuDNN on aarch64); on a noexec mount, mount it without noexec or install cuDNN on another file "
                   "system")),
    Family("address-space-limit", _title("the process's address-space limit (ulimit -v) is too small to map the "
                                         "libraries"),
           "glibc reserves each library's whole span as it maps it; under `ulimit -v` (RLIMIT_AS, a batch system's "
           "virtual-memory limit) the libraries loaded last fail (\"failed to map segment from shared object\", "
           "older glibc adds \"Cannot allocate memory\"), and the CUDA driver, which reserves far more address "
           "space than it uses, fails cuInit with out of memory; no memory is short",
           "`ulimit -v` prints a number, not unlimited (in the job's own shell); the same command works without it",
           _manual("raise the address-space limit before starting the program: `ulimit -v unlimited` (up to `ulimit "
                   "-Hv`), or the setting that imposes it (an `as` line in /etc/security/limits.conf, a batch "
                   "system's virtual-memory request)")),
    Family("paging-file-too-small", _title("Windows ran out of commit space mapping a large CUDA/cuDNN DLL (the "
                                           "paging file is too small)"),
           "every process that imports the framework maps its CUDA and cuDNN DLLs, which reserve large committed "
           "sections; with many worker processes the commit limit (RAM + paging file) runs out: WinError 1455",
           "the error names error 1455 / \"paging file\"; it goes away with fewer worker processes",
           _manual("enlarge the paging file (System Properties > Advanced > Performance > Virtual memory) or start "
                   "fewer processes that import the framework (DataLoader num_workers)")),
    Family("removed-api", lambda r, s: "the code calls a cuDNN API that a newer cuDNN removed"
           + (f" ({s.library})" if s is not None and s.library else ""),
           "cuDNN 8 removed the v7 algorithm queries (cudnnGetConvolution*Algorithm, their *_PREFERENCE enums) and "
           "the unversioned RNN descriptor calls; cuDNN 9 removed the legacy RNN API (cudnnRNNForward*, "
           "cudnnSetRNNDescriptor_v6): code written for the older API no longer compiles or links",
           "the name is absent from the installed cuDNN's headers (grep it in cudnn*.h)",
           _manual("port the calls to the newer cuDNN API (cudnnGetConvolutionForwardAlgorithm_v7, "
                   "cudnnSetRNNDescriptor_v8, cudnnRNNForward), use a release of the program that did, or build "
                   "against the older cuDNN")),
    Family("framework-bug", _title("a bug in the framework's own cuDNN code (fixed in a later release)"),
           "the framework hands cuDNN a wrong descriptor, stride, workspace or layout in one of its releases",
           "the same code works with the previous or next release of the framework",
           _manual("upgrade the framework to the release that fixes it (or use the one before the regression)")),
    Family("harmless-warning", lambda r, s: "this is only a warning" + (
        f": {s.meaning.removeprefix('only a warning: ')}" if s is not None and s.warning else ""),
           "the line is printed as a warning or for information; the program goes on, and whatever fails (if "
           "anything does) has another cause, usually on another line",
           "the program's own result: does it run? Look for an error line other than this one",
           _manual("nothing to fix for this line; if something does fail, paste the error line itself")),
    Family("gpu-hardware-fault", _title("the GPU, its memory or its power is faulty or unstable"),
           "uncorrectable ECC errors, Xid errors (13, 31, 48, 79) and illegal accesses or launch failures at random "
           "points in code that runs elsewhere come from the hardware, not from the software",
           "dmesg / nvidia-smi -q -d ECC show Xid or ECC errors; the same job runs on another GPU",
           _manual("run the job on another GPU; check dmesg for Xid errors and nvidia-smi -q -d ECC, lower the "
                   "clocks or power limit, reseat or replace the card or its power supply")),
    Family("framework-parts-mismatch", _parts_title,
           "a framework ships as several packages built together (jax, jaxlib and jax-cuda12-plugin; torch and "
           "torchvision): an upgrade or pin of one alone leaves them at releases that do not fit, and the framework "
           "stops before it reaches the GPU", "pip list shows the packages at different releases (jax and jaxlib "
           "apart; torchvision not made for the torch installed)", _parts, _extension_words),
    Family("cpu-only-build", _cpu_build_title,
           "a build without CUDA has no GPU code at all: asked for the GPU it says so, or falls back to the CPU; no "
           "cuDNN, CUDA library or driver was looked for, so none of them is at fault",
           "the framework's own answer: torch.version.cuda is None, jax.devices() lists only CPUs, "
           "onnxruntime.get_available_providers() lacks CUDAExecutionProvider, paddle.is_compiled_with_cuda() is "
           "False", _cpu_build),
    Family("cuda-toolkit-missing", _title("no CUDA toolkit (nvcc) to build the extension: CUDA_HOME is not set or "
                                          "names no toolkit"),
           "building a CUDA extension (torch.utils.cpp_extension: flash-attn, apex, xFormers, DeepSpeed's ops, a "
           "project's own kernels, from source) runs nvcc from CUDA_HOME, else the nvcc on PATH, else /usr/local/"
           "cuda; pip's nvidia-* wheels and the frameworks bring CUDA's libraries, not nvcc or its headers",
           "`nvcc --version` fails, and `echo $CUDA_HOME` is empty or names a folder without bin/nvcc",
           _toolkit_missing),
    Family("cuda-toolkit-mismatch", _toolkit_title,
           "PyTorch refuses to build an extension with a toolkit of another CUDA major than torch.version.cuda "
           "(DeepSpeed any other major.minor outside its list): the extension would need another CUDA runtime "
           "than the one torch loads", "`$CUDA_HOME/bin/nvcc --version` and `python -c 'import torch; "
           "print(torch.version.cuda)'` differ", _toolkit_mismatch),
    Family("torch-without-nvidia-deps", _title("torch was installed without its nvidia-* dependency wheels"),
           "a package manager (poetry with the torch 2.0.1 metadata) installed the CUDA build of torch but not "
           "nvidia-cudnn/cublas/nvrtc", "`pip list | grep nvidia` shows none of them",
           _manual("reinstall torch with pip (or pin a release whose metadata lists the nvidia-* "
                                   "wheels, e.g. not 2.0.1 under poetry) so its nvidia-* dependencies come along")),
)}


# The causes about loading: a library not found, not the right one, or not loadable (fixtures/explain/FAMILIES.md's
# headings marked *(loading)*; tests/test_explain.py holds the two equal). The others are about the GPU and its
# driver, the call cuDNN was given, the program's or cuDNN's own code, or no failure at all.
ABOUT_LOADING = frozenset({
    "cudnn-not-installed", "sublibrary-missing", "wheel-not-on-linker-path", "installed-not-on-search-path",
    "platlib-purelib-split", "torch-without-nvidia-deps", "origin-through-symlink", "preload-needs-missing",
    "unloadable-file", "paging-file-too-small", "missing-runpath",
    "wrong-cudnn-major", "runtime-older-than-build", "minor-mismatch-strict", "version-mismatch-shadowed",
    "conda-vs-pip", "two-frameworks-conflict", "mixed-release",
    "nvrtc-missing", "nvrtc-wrong", "cublas-missing-or-wrong", "libcudart-missing-or-wrong", "zlib-missing",
    "libcuda-missing", "glibc-or-libstdcxx-too-old", "multiple-cudart-or-frontend",
})
