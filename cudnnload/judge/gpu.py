"""The driver and the GPUs against a cuDNN build: is there a driver, does it show a GPU, does it support the
CUDA cuDNN was built with, and does each GPU have code in the libraries. Pure functions of the driver's
facts (`resolve.hardware.GpuFacts`) and of what cuDNN reports about itself (``cudnnGetCudartVersion``,
``cudnnGetMaxDeviceVersion``, the SASS/PTX inventory of each library); each returns `Finding`s with the
codes the doctor documents.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from cudnnload.codes import Code, SubjectKind
from cudnnload.judge.fixes import cudnn_requirement
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.fatbin import GpuCode
from cudnnload.resolve.hardware import Device, GpuFacts, Holder, cuda_text
from cudnnload.verdicts import ERROR, INFO, WARNING, Finding, Fix, Subject, fix, manual, pip_install, unset
from cudnnload.verdicts import set_variable as set_to

# Oldest driver branch per CUDA major under minor-version compatibility
# (CUDA Compatibility guide, "Minor Version Compatibility", table 1).
MIN_DRIVER_BRANCH = {13: "R580", 12: "R525", 11: "R450"}

# cuDNN 9.11 dropped compute capabilities below 7.5: PyTorch refuses it on such GPUs
# (torch/backends/cudnn/__init__.py: ``__cudnn_version >= 91100 and min_cc < (7, 5)``),
# and the 9.28 wheels' ops/cnn/adv carry no SASS below sm_75 (cudnn-facts §3.2).
TURING_ONLY_SINCE = Release(9, 11, 0)

# cuInit results with a specific remedy; others get the generic one.
INIT_FIXES = {
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": "libcuda.so.1 and the loaded kernel module come from different driver "
    "versions (typically after a driver upgrade without a reboot): reboot, or reload the nvidia kernel modules",
    # cuInit's unknown error: the UVM module gone or stale (a suspend and resume leaves it so), or a driver in a bad
    # state; PyTorch says "CUDA unknown error - this may be due to an incorrectly set up environment"
    "CUDA_ERROR_UNKNOWN": "reload the NVIDIA UVM module (sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm), which a "
    "suspend leaves stale, or reboot; in a container, restart it",
    # an NVSwitch system (HGX, DGX) whose Fabric Manager is not running: "system not yet initialized"
    "CUDA_ERROR_SYSTEM_NOT_READY": "start the NVIDIA Fabric Manager of the driver's exact version (sudo systemctl "
    "enable --now nvidia-fabricmanager; install nvidia-fabricmanager-<driver branch> first if it is missing)",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": "a CUDA forward-compatibility libcuda (cuda-compat) is in use on a "
    "GPU that does not support it: remove its folder from LD_LIBRARY_PATH or /etc/ld.so.conf.d",
    # the CUDA toolkit's stub libcuda.so (lib64/stubs, for linking only) found before the driver's
    "CUDA_ERROR_STUB_LIBRARY": "the libcuda.so loaded is the CUDA toolkit's stub (its lib64/stubs folder): take "
    "that folder out of LD_LIBRARY_PATH and /etc/ld.so.conf.d, and install the NVIDIA driver if there is none",
    "FunctionNotFoundError": "install the cuda-python built for this driver's CUDA major "
    "(cuda-python<13 for drivers older than R580)",
}
GENERIC_INIT_FIX = "run nvidia-smi and check `dmesg` for NVRM errors"

# The GPU memory free that a process starting on a GPU needs for its CUDA context and cuDNN's first call, measured
# with another process holding the rest (bench/gpu_memory_held.py, H100 80 GB, driver 580.159.04, torch 2.11 cu130,
# JAX with the CUDA 13 plugin): with 512 MiB free PyTorch's first convolution fails ("CUDA error: out of memory")
# and JAX does not start ("no supported devices found for platform CUDA"); with 640 MiB both run; JAX failed again
# at 768 MiB ("CUDA_ERROR_OUT_OF_MEMORY" loading a module) and ran from 832 MiB.
CONTEXT_NEEDS = 600 * 2**20
ROOMY = 2**30
# What keeps the memory a framework's process holds, and the setting in that process that leaves room
_KEEPS = {"JAX": "JAX preallocates 75 % of a GPU's memory as it starts: XLA_PYTHON_CLIENT_PREALLOCATE=false (or a "
                 "smaller XLA_PYTHON_CLIENT_MEM_FRACTION) in its environment leaves room",
          "TensorFlow": "TensorFlow takes nearly all of a GPU's memory as it starts: TF_FORCE_GPU_ALLOW_GROWTH=true in "
                        "its environment leaves room",
          "PyTorch": "PyTorch's caching allocator keeps what the program freed: torch.cuda.empty_cache() in it gives "
                     "that back"}
_DRIVER = Subject(SubjectKind.DRIVER)

# --- checks ---------------------------------------------------------------------------------------


def _cudnn(release: Release | None) -> str:
    """"cuDNN 9.28" (the patch only when it is not 0), as NVIDIA names releases."""
    if release is None:
        return "this cuDNN"
    return f"cuDNN {release.major}.{release.minor}" + (f".{release.patch}" if release.patch else "")


def presence_findings(facts: GpuFacts, *, release: Release | None = None, version_checks_passed: bool = False,
                      python: str | None = None) -> tuple[Finding, ...]:
    """``no-driver``, ``no-gpu-visible``, ``driver-error`` or ``driver-unchecked``; () when GPUs are usable.

    ``version_checks_passed``: the caller's probe loaded ``release`` and its
    VersionChecks passed, which the message then says.
    """
    if facts.bindings is None:
        return (Finding(Code.DRIVER_UNCHECKED, f"the NVIDIA driver and GPUs were not checked: {facts.reason}",
                        _DRIVER, fix(pip_install(["cuda-python"], python=python),
                                     note="cuda-python<13 for drivers older than R580")),)
    if not facts.driver_found:
        lead = f"{_cudnn(release)} loads and passes its version checks, but no" if version_checks_passed else "no"
        message = f"{lead} NVIDIA driver was found (libcuda.so.1): handles cannot be created"
        if not facts.hardware:
            return (Finding(Code.NO_DRIVER, message, Subject(SubjectKind.DRIVER, library="libcuda.so.1"),
                            fix(note="nothing to do on a machine without an NVIDIA GPU; on a GPU machine install the "
                                     "NVIDIA driver"), severity=INFO),)
        module = f" {facts.kernel_module}" if facts.kernel_module else ""
        return (Finding(Code.NO_DRIVER, f"{message}, although {', '.join(facts.hardware)} show an NVIDIA GPU and "
                        f"kernel module{module}", Subject(SubjectKind.DRIVER, library="libcuda.so.1"),
                        fix(manual(f"install the driver's user-space libraries matching kernel module{module}, or in "
                                   "a container run with --gpus all (NVIDIA container toolkit)")), severity=ERROR),)
    if facts.devices:
        return ()
    if facts.error == "CUDA_ERROR_OUT_OF_MEMORY" and facts.address_limit is not None:
        return (_address_limited(facts, facts.address_limit),)
    if facts.error not in (None, "CUDA_ERROR_NO_DEVICE"):
        return (Finding(Code.DRIVER_ERROR, f"the NVIDIA driver is installed but cannot be used: {facts.reason}",
                        _DRIVER, fix(manual(INIT_FIXES.get(facts.error or "", GENERIC_INIT_FIX)))),)
    visible = facts.visible_devices
    if visible is not None:
        # The driver drops every entry from the first invalid one (CUDA programming guide,
        # "CUDA Environment Variables"), so "", "-1" or an index that does not exist hide all GPUs.
        return (Finding(Code.NO_GPU_VISIBLE, f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU: the driver "
                        "reports no CUDA device", Subject(SubjectKind.VARIABLE, variable="CUDA_VISIBLE_DEVICES",
                                                          entry=visible),
                        fix(unset("CUDA_VISIBLE_DEVICES"),
                            note="or list indexes or UUIDs that exist (nvidia-smi -L)")),)
    return (Finding(Code.NO_GPU_VISIBLE, "the NVIDIA driver is loaded but reports no CUDA device", _DRIVER,
                    fix(manual("check nvidia-smi; in a container pass the GPUs in (--gpus all)"))),)


def _address_limited(facts: GpuFacts, limit: int) -> Finding:
    """cuInit's CUDA_ERROR_OUT_OF_MEMORY under an address-space limit: the driver reserves virtual address space
    for the GPUs' memory and the host's as it starts, far more than it uses (measured on an H200 with 128 GiB of host
    memory: cuInit fails under `ulimit -v` 8 GB, works under 32 GB; under 2 GB PyTorch's own libraries cannot be
    mapped). No GPU memory is short: the fix is the limit's."""
    return Finding(Code.DRIVER_ERROR, f"the NVIDIA driver cannot start: {facts.reason}, because this process may use "
                   f"only {size_words(limit)} of address space (ulimit -v, RLIMIT_AS), and the CUDA driver "
                   "reserves more than that as it starts: no GPU memory is short", _DRIVER, address_limit_fix())


def address_limit_fix() -> Fix:
    """Raising an address-space limit (``ulimit -v``): in the program's shell, or where it is imposed."""
    return fix(manual("raise the address-space limit before starting the program: `ulimit -v unlimited` in its shell "
                      "(up to the hard limit, `ulimit -Hv`), or the setting that imposes it (an `as` line in "
                      "/etc/security/limits.conf, a batch system's virtual-memory limit)"))


def limit_findings(limit: int | None, spans: Mapping[str, int | None], release: Release | None
                   ) -> tuple[Finding, ...]:
    """An address-space limit (``ulimit -v``) smaller than the cuDNN libraries' spans added up: glibc reserves each
    library's whole span as it maps it, so whatever the process holds besides, the libraries loaded last fail to map
    (measured: under 700 MB the 9.28 shim maps and passes its version checks, and a graph and engines library
    fails). The sum is a floor: the program, cuBLAS and the driver take more."""
    known = {path: span for path, span in spans.items() if span}
    total = sum(known.values())
    if limit is None or not known or total <= limit:
        return ()
    largest = max(known, key=lambda path: known[path])
    what = f"cuDNN {release}'s libraries" if release else "the cuDNN libraries"
    return (Finding(Code.ADDRESS_SPACE_LIMIT, f"this process may use only {size_words(limit)} of address space "
                    f"(ulimit -v, RLIMIT_AS), and {what} alone span {size_words(total)} once mapped: those loaded last "
                    "fail to map "
                    f"(\"failed to map segment from shared object\"; the largest, {os.path.basename(largest)}, spans "
                    f"{size_words(known[largest])}), at the first convolution or before",
                    Subject(SubjectKind.FILE, largest), address_limit_fix()),)


def beyond_limit_words(path: str, limit: int) -> str:
    """What a library that failed to map under an address-space limit meets, with the span it needed."""
    from cudnnload.resolve.elf import address_span

    span = address_span(path)
    needs = f" (its segments span {span / 2**20:.0f} MiB)" if span else ""
    return (f"the kernel refused to map {path}{needs}: the process may use only {size_words(limit)} of address space "
            "(ulimit -v, RLIMIT_AS) and had used it up (\"failed to map segment from shared object\")")


def size_words(size: int) -> str:
    """A size as the findings say it: GiB from one, else MiB."""
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


def driver_findings(facts: GpuFacts, cudart_version: int, *, release: Release | None = None,
                    python: str | None = None) -> tuple[Finding, ...]:
    """The driver's CUDA against the CUDA runtime linked into cuDNN (``cudnnGetCudartVersion``, e.g. 13050).

    cuDNN links cudart statically (cudnn-facts §1), so this is a property of
    the build. Since CUDA 11 a driver of the same major runs newer minors
    ("minor version compatibility"), except that PTX from a newer toolkit
    cannot be JIT-compiled by it; across majors, or before CUDA 11, the
    driver must be at least the runtime's version.
    """
    if facts.driver_version is None or cudart_version <= 0:
        return ()
    need_major, have_major = cudart_version // 1000, facts.driver_version // 1000
    built = f"{_cudnn(release)} was built with CUDA {cuda_text(cudart_version)} (cudnnGetCudartVersion " \
            f"{cudart_version})"
    module = f" {facts.kernel_module}" if facts.kernel_module else ""
    driver = f"the driver{module} supports CUDA {cuda_text(facts.driver_version)} (cuDriverGetVersion " \
             f"{facts.driver_version})"
    if have_major < need_major or (need_major < 11 and facts.driver_version < cudart_version):
        branch = MIN_DRIVER_BRANCH.get(need_major)
        upgrade = manual(f"upgrade the NVIDIA driver to {branch} or newer" if branch else
                         f"upgrade the NVIDIA driver to one that supports CUDA {cuda_text(cudart_version)}")
        other = cudnn_requirement(release.major, have_major) if release is not None else None
        return (Finding(Code.DRIVER_TOO_OLD, f"{built}; {driver}: the CUDA runtime inside cuDNN will fail with "
                        "cudaErrorInsufficientDriver", _DRIVER,
                        fix(upgrade, alternatives=[pip_install([other], python=python)] if other else [])),)
    if have_major == need_major and facts.driver_version < cudart_version:
        return (Finding(Code.DRIVER_MINOR_COMPAT, f"{built}; {driver}: it runs under CUDA minor-version "
                        "compatibility, but PTX from the newer toolkit cannot be JIT-compiled by this driver", _DRIVER,
                        fix(note="to JIT-compile PTX (GPUs newer than the build), upgrade the driver to one that "
                                 f"supports CUDA {cuda_text(cudart_version)}")),)
    return ()


def _arch_sm(arch: str) -> int:
    """``sm_90a`` / ``sm_120f`` -> 90 / 120 (fatbin.py names)."""
    return int(arch[3:].rstrip("af"))


def _code_text(code: GpuCode) -> str:
    return f"SASS {' '.join(code.sass_archs) or '-'}; PTX {' '.join(code.ptx_archs) or '-'}"


def device_findings(facts: GpuFacts, *, release: Release | None, max_device_version: int | None,
                    gpu_code: Mapping[str, GpuCode | None], cudart_version: int | None = None,
                    python: str | None = None) -> tuple[Finding, ...]:
    """Each device's compute capability against what the libraries carry.

    ``gpu_code`` maps a library name ("libcudnn_ops.so.9") to its ``.nv_fatbin``
    inventory (None for libraries without GPU code). Per device, the first
    matching rule wins:

    - ``gpu-too-old``: cuDNN >= 9.11 on compute capability < 7.5, or a device
      older than every architecture the libraries carry;
    - ``gpu-too-new``: SM x 10 above ``cudnnGetMaxDeviceVersion``. cuDNN >= 9.0
      built with CUDA >= 12 then runs in forward-compatibility mode by PTX JIT
      (cuDNN docs, "Hardware Forward Compatibility"): a warning when some
      library has PTX that can compile for the device, else an error;
    - ``no-kernels-for-gpu``: a library with neither SASS nor PTX for it.
    """
    codes = {name: code for name, code in gpu_code.items() if code is not None}
    findings: list[Finding] = []
    for device in facts.devices:
        runs = {name: code.runs_on(device.capability) for name, code in codes.items()}
        oldest = min((_arch_sm(arch) for code in codes.values() for arch in (*code.sass_archs, *code.ptx_archs)),
                     default=None)
        subject = Subject(SubjectKind.DRIVER, name=device.label)
        if release is not None and release >= TURING_ONLY_SINCE and device.capability < (7, 5):
            findings.append(Finding(
                Code.GPU_TOO_OLD, f"{_cudnn(release)} needs compute capability 7.5 (Turing) or newer; "
                f"{device.label} is {device.capability[0]}.{device.capability[1]}", subject,
                fix(pip_install(["nvidia-cudnn-cu12>=9,<9.11"], python=python),
                    note="the cu13 builds have no kernels below sm_75; or use a GPU of compute capability 7.5 or "
                         "newer")))
        elif runs and not any(runs.values()) and oldest is not None and device.sm < oldest:
            findings.append(Finding(
                Code.GPU_TOO_OLD, f"{device.label} is older than every architecture {_cudnn(release)} carries "
                f"(the oldest is sm_{oldest})", subject,
                fix(manual("use an older cuDNN release built for this GPU, or a newer GPU"))))
        elif max_device_version and device.sm * 10 > max_device_version:
            forward = (release is None or release.major >= 9) and (cudart_version is None or cudart_version >= 12000)
            jit = forward and any(runs.values())
            message = f"{device.label} is newer than the newest GPU {_cudnn(release)} supports natively " \
                      f"(cudnnGetMaxDeviceVersion {max_device_version}, sm_{max_device_version // 10})"
            message += ": it runs in forward-compatibility mode, JIT-compiling PTX (slow first calls, some " \
                       "operations unsupported)" if jit else ": no library has code that can run on it"
            findings.append(Finding(Code.GPU_TOO_NEW, message, subject,
                                    fix(manual(f"install a cuDNN release whose cudnnGetMaxDeviceVersion covers "
                                               f"sm_{device.sm}"),
                                        note="forward-compatibility mode may need CUDNN_LIB_CONFIG=FULL" if jit
                                        else None), severity=WARNING if jit else ERROR))
        else:
            findings.extend(Finding(
                Code.NO_KERNELS_FOR_GPU, f"{name} has no code that runs on {device.label}: "
                f"{_code_text(codes[name])}", Subject(SubjectKind.FILE, name=name),
                fix(manual("install a cuDNN release built for this GPU's architecture")))
                for name, ok in runs.items() if not ok)
    return tuple(findings)


def memory_findings(facts: GpuFacts) -> tuple[Finding, ...]:
    """Whether a process starting now gets a GPU: ``gpu-unavailable`` where its compute mode lets no new process use
    it (`unavailable`), else ``gpu-memory-full`` where its free memory is below what a process starting on it needs
    (`CONTEXT_NEEDS`). Free is NVML's, with what this process and its children hold counted free
    (`loading.nvml.own_processes`: doctor's probe holds a context while NVML is read); what the process that started
    doctor holds is not (a notebook's kernel holding the GPU leaves no room for a program started now, doctor's
    probe among them, and is named as a holder). An error for the first visible GPU, the one programs start on; a
    warning for another, and for the first where it has under `ROOMY` free (JAX failed there once). The fix points
    the programs at a usable GPU with room where one is visible, else says what holds the GPU."""
    findings: list[Finding] = []
    roomy = [d for d in facts.devices if d.free_memory is not None and d.free_memory >= ROOMY and not unavailable(d)]
    for device in facts.devices:
        free = device.free_memory
        others = [d for d in roomy if d.index != device.index]
        why = unavailable(device)
        if why is not None:
            findings.append(Finding(
                Code.GPU_UNAVAILABLE, f"{device.label} {why}: a program starting on it gets no CUDA context "
                "(\"CUDA-capable device(s) is/are busy or unavailable\", cudaErrorDevicesUnavailable)",
                Subject(SubjectKind.DRIVER, name=device.label),
                _room_fix(device, others, device.holders, facts.visible_devices, mode=True),
                severity=ERROR if device.index == 0 else WARNING))
            continue
        if free is None or free >= ROOMY or (free >= CONTEXT_NEEDS and device.index != 0):
            continue
        full = free < CONTEXT_NEEDS
        effect = ("a program starting on it gets no CUDA context, or no room for cuDNN's handle: frameworks report "
                  "\"CUDA error: out of memory\", CUDNN_STATUS_NOT_INITIALIZED or CUDNN_STATUS_ALLOC_FAILED (JAX: "
                  "\"no supported devices found for platform CUDA\", \"DNN library initialization failed\"), with "
                  "nothing wrong in what loads") if full else \
            ("a program starting on it has little room: JAX failed with 768 MiB free (measured on an H100), "
             "PyTorch's first convolution ran from 640 MiB")
        findings.append(Finding(
            Code.GPU_MEMORY_FULL, f"{held_words(device)}: {effect}", Subject(SubjectKind.DRIVER, name=device.label),
            _room_fix(device, others, _holding(device), facts.visible_devices),
            severity=ERROR if full and device.index == 0 else WARNING))
    return tuple(findings)


# JAX's pool (XLA's PJRT client, tsl's BFC allocator): XLA_PYTHON_CLIENT_MEM_FRACTION of each visible GPU's memory,
# taken at once as JAX starts unless XLA_PYTHON_CLIENT_PREALLOCATE=false or XLA_PYTHON_CLIENT_ALLOCATOR=platform.
# Where that much is not free, the allocator's first try fails and it backs off by tenths ("Failed to allocate device
# memory of 59.39GiB", kBackpedalFactor 0.9) to the largest size that fits: under a tenth of what is free is left.
JAX_FRACTION = 0.75


def jax_pool_findings(label: str, environ: Mapping[str, str], devices: Sequence[Device]) -> tuple[Finding, ...]:
    """JAX (``label``) started in ``environ`` beside other processes that hold more of a visible GPU than its pool
    leaves (``gpu-memory-shared``, a warning: it has run so, and failed so): the fix is its pool taken as needed.
    A GPU too full for any program is `memory_findings`' (``gpu-memory-full``)."""
    squeezed = jax_squeezed(environ, devices)
    if squeezed is None:
        return ()
    device, fraction = squeezed
    return (Finding(
        Code.GPU_MEMORY_SHARED, f"{held_words(device)}: {label} takes {fraction * 100:g} % of it "
        f"({size_words(int(fraction * device.total_memory))}) as it starts; with that much not free it backs off by "
        f"tenths to nearly all that is, and what it allocates beside its pool (its autotuner's tries, cuDNN's handle, "
        f"the kernels it loads) has little room: on an H100 with 4 GiB free its first convolution failed with \"All "
        f"backends failed to find supported configs: - RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY\"",
        Subject(SubjectKind.VARIABLE, variable="XLA_PYTHON_CLIENT_PREALLOCATE"),
        fix(set_to("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),
            note="JAX then takes memory as it needs it, and gives cuDNN room"),
        severity=WARNING),)


def jax_squeezed(environ: Mapping[str, str], devices: Sequence[Device]) -> tuple[Device, float] | None:
    """The first visible GPU where JAX started in ``environ`` would not find its pool free (and a program would find
    a context: else ``gpu-memory-full``), with the share of it JAX takes; None where it takes memory as it needs."""
    if environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "").strip().lower() in ("false", "0") or \
            environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").strip().lower() == "platform":
        return None
    try:
        fraction = float(environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION") or JAX_FRACTION)
    except ValueError:
        fraction = JAX_FRACTION
    if not 0 < fraction <= 1:  # "inf", "nan", "-1", "5": no share of a GPU (int(inf) would raise): the default
        fraction = JAX_FRACTION
    return next(((d, fraction) for d in devices if d.free_memory is not None and d.free_memory >= CONTEXT_NEEDS
                 and d.free_memory - CONTEXT_NEEDS < fraction * d.total_memory), None)


def held_words(device: Device) -> str:
    """"GPU 0 (...) has 255 MiB free of 139.8 GiB (PID 1403 (python serve.py) holds 139.5 GiB)": what a finding
    about its memory says first, from the facts alone."""
    free = device.free_memory or 0
    holders = _holding(device)
    unseen = device.total_memory - free - sum(h.held or 0 for h in holders)
    who = "; ".join([h.label for h in holders] + ([f"processes this machine's view does not show (another "
                                                   f"container) hold {size_words(unseen)}"] if unseen > ROOMY else []))
    return f"{device.label} has {size_words(free)} free of {size_words(device.total_memory)}" + \
        (f" ({who})" if who else "")


def _holding(device: Device) -> list[Holder]:
    """The processes that hold enough of ``device`` to name: 64 MiB and up, or an amount NVML cannot say."""
    return [h for h in device.holders if h.held is None or h.held >= 2**26]


def unavailable(device: Device) -> str | None:
    """Why ``device``'s compute mode (nvidia-smi -c) lets no new process use it, or None: prohibited lets none,
    exclusive-process (and the old exclusive-thread) one at a time, and another holds it."""
    if device.compute_mode == "prohibited":
        return "is in the prohibited compute mode (nvidia-smi -c PROHIBITED)"
    if device.compute_mode in ("exclusive-process", "exclusive-thread") and device.holders:
        return f"is in the {device.compute_mode} compute mode and {device.holders[0].named} has it"
    return None


def _room_fix(device: Device, roomy: list[Device], holders: Sequence[Holder], visible: str | None, *,
              mode: bool = False) -> Fix:
    """Programs pointed at a usable visible GPU with room (by UUID where NVML gave it, or by index where
    CUDA_VISIBLE_DEVICES is unset and indexes are the driver's own); else the holders' own settings or an end, and
    for a compute mode (``mode``) the mode set back."""
    kept = [_KEEPS[h.framework] for h in holders if h.framework in _KEEPS and not mode]
    pids = ', '.join(f'PID {h.pid}' for h in holders)
    if mode:
        end = manual(f"set GPU {device.index}'s compute mode back to the default, as root: `nvidia-smi -i "
                     f"{device.pci_bus_id} -c DEFAULT`" + (f" (or end {pids})" if holders else ""))
    else:
        end = manual(f"end the processes holding GPU {device.index}'s memory, or have them give it back "
                     f"({pids or 'nvidia-smi lists them where it sees them'})")
    note = "; ".join(dict.fromkeys(kept)) or None
    other = next((d for d in roomy if d.uuid or visible is None), None)
    if other is not None:
        return fix(set_to("CUDA_VISIBLE_DEVICES", other.uuid or str(other.index)),
                   note=f"{other.label} has {size_words(other.free_memory or 0)} free", alternatives=[end])
    return fix(end, note=note)


def gpu_findings(facts: GpuFacts, *, release: Release | None, cudart_version: int | None,
                 max_device_version: int | None, gpu_code: Mapping[str, GpuCode | None],
                 version_checks_passed: bool = False, python: str | None = None,
                 spans: Mapping[str, int | None] | None = None) -> tuple[Finding, ...]:
    """Every check that the facts allow: the address-space limit against the spans of the install's libraries
    (``spans``: path -> `elf.address_span`), presence, then the driver, then each device."""
    presence = limit_findings(facts.address_limit, spans or {}, release) + \
        presence_findings(facts, release=release, version_checks_passed=version_checks_passed, python=python)
    if not facts.driver_found:
        return presence
    driver = driver_findings(facts, cudart_version, release=release, python=python) if cudart_version else ()
    return presence + memory_findings(facts) + driver + \
        device_findings(facts, release=release, max_device_version=max_device_version, gpu_code=gpu_code,
                        cudart_version=cudart_version, python=python)
