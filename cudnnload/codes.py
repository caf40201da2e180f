"""The words of a verdict, as enums: how bad (`Severity`), how a failure shows (`Effect`), what is wrong
(`Code`), what a finding is about (`SubjectKind`) and what a fix does (`ActionKind`).

Its own module, below `errors` and `verdicts`, so that any stage (and the ELF reader, on the path a warm
start takes) can name a code without importing dataclasses (10 ms). A `Code` carries its severity (the
one it has, or the ones it may have, first the usual), whether it keeps ``load()`` from taking an
install, and the line README's table gives it (tests/test_verdicts.py checks the table against it).
"""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """An enum of words: printed, formatted and written to JSON as its value (``"error"``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Severity(_Word):
    ERROR = "error"  # this will fail
    WARNING = "warning"  # works, but fragile
    INFO = "info"

    @property
    def rank(self) -> int:
        """Errors first, then warnings, then information."""
        return {"error": 0, "warning": 1, "info": 2}[self.value]


ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


class Effect(_Word):
    """How a failure shows to the program that meets it (one vocabulary for the prediction, the probe and a
    program's run)."""

    STATUS = "status"  # the calls return a cudnnStatus_t; the process goes on
    ABORT = "abort"  # cuDNN prints a line and calls abort(): SIGABRT, exit status 134, "Aborted (core dumped)"
    SIGBUS = "sigbus"  # the process dies of SIGBUS inside dlopen, printing nothing
    HANG = "hang"  # dlopen never returns: glibc's open() of a FIFO blocks until something writes to it
    NO_START = "no-start"  # the program, or its dlopen of cuDNN, fails before any cuDNN call
    WRONG_RELEASE = "wrong-release"  # the calls work, against another release than the one meant


class Code(_Word):
    """Stable identifiers other tools match on (``findings[].code`` in ``--json``)."""

    severity: Severity
    severities: tuple[Severity, ...]
    blocks_load: bool
    text: str

    def __new__(cls, value: str, severities: Severity | tuple[Severity, ...], blocks_load: bool, text: str) -> Code:
        member = str.__new__(cls, value)
        member._value_ = value
        member.severities = severities if isinstance(severities, tuple) else (severities,)
        member.severity = member.severities[0]
        member.blocks_load = blocks_load
        member.text = text
        return member

    # one file
    MISSING_FILE = ("missing-file", ERROR, True, "a given path, or a file a link points to, does not exist")
    NO_CUDNN = ("no-cudnn", ERROR, False, "what was asked about holds no cuDNN that would load: a folder "
                "without `libcudnn*.so.7/8/9`, a file not named so, a venv or program that finds none")
    REPAIR = ("repair", ERROR, False, "what makes the target work, all of it: the changes every error below needs, in "
              "order, each environment change (and each `pip uninstall`, as its RECORD's files gone) judged again on "
              "cudnnload's model of the process before the next is chosen; the first fix a tool applies")
    CPU_ONLY_BUILD = ("cpu-only-build", WARNING, False, "a framework here is a build without CUDA (a CPU or ROCm "
                      "build): it uses no cuDNN and never runs on an NVIDIA GPU; installing cuDNN does not change "
                      "that, a CUDA build of the framework does")
    TOOL_ENVIRONMENT = ("tool-environment", INFO, False, "cudnnload runs from an environment of its own (pipx, "
                        "`uv tool`, a venv holding only cudnnload): plain `doctor` judged the `python3` on PATH "
                        "instead (`--python` names another)")
    NOT_ELF = ("not-elf", ERROR, True, "the file is not an ELF object")
    EMPTY_FILE = ("empty-file", ERROR, True, "the file is 0 bytes")
    TRUNCATED = ("truncated", ERROR, True, "the ELF header, section table or a section runs past the end "
                 "of the file")
    DAMAGED_ELF = ("damaged-elf", ERROR, True, "ELF structures that do not parse")
    UNREADABLE = ("unreadable", ERROR, True, "permission denied (the file, or a folder on its path) or "
                  "another "
                  "read error")
    BROKEN_SYMLINK = ("broken-symlink", ERROR, True, "a symbolic link to nothing")
    NOT_A_REGULAR_FILE = ("not-a-regular-file", ERROR, True, "a FIFO, a socket, a device or a /proc or "
                          "/sys file "
                          "where a library is expected: never opened (glibc's dlopen of a FIFO hangs, of a device "
                          "fails)")
    SYMLINK_LOOP = ("symlink-loop", ERROR, True, "a symbolic link loop")
    NOEXEC_MOUNT = ("noexec-mount", ERROR, True, "the library is on a file system mounted `noexec`: the loader opens "
                    "it and the kernel refuses to map its code (\"failed to map segment from shared object\")")
    ADDRESS_SPACE_LIMIT = ("address-space-limit", (ERROR, WARNING), False, "the process's address-space limit "
                           "(`ulimit -v`, RLIMIT_AS) is smaller than cuDNN's libraries need mapped (those loaded last "
                           "fail to map: \"failed to map segment from shared object\") or the CUDA runtime reserves "
                           "as it starts (cuInit, cudnnCreate: out of memory)")
    FOREIGN_ELF = ("foreign-elf", ERROR, True, "wrong ELF class or machine for this host (32-bit, aarch64 "
                   "on "
                   "x86-64, ...)")
    SONAME_MISMATCH = ("soname-mismatch", (WARNING, ERROR), False, "the SONAME is not the one the file name "
                       "promises (an error where a name cuDNN opens leads to another sub-library's file, or the "
                       "shim's name to another major's shim: `ln -s libcudnn.so.9 libcudnn.so.8`)")
    GLIBC_TOO_OLD = ("glibc-too-old", ERROR, True, "the file needs a newer `GLIBC_x.y` than this machine "
                     "has")
    LIBSTDCXX_TOO_OLD = ("libstdcxx-too-old", ERROR, True, "the file needs a newer `GLIBCXX_`/`CXXABI_` "
                         "than the "
                         "libstdc++ that would load")
    UNKNOWN_LIBRARY = ("unknown-library", WARNING, False, "a `libcudnn*` file of no known generation")
    # one install
    MISSING_SHIM = ("missing-shim", (WARNING, ERROR), False, "the folder has sub-libraries but no `libcudnn.so.N` "
                    "(a warning for cuDNN 9, whose sub-libraries are found through a shim elsewhere)")
    MISSING_SUBLIBRARY = ("missing-sublibrary", ERROR, True, "a sub-library the shim will open is missing "
                          "from its "
                          "folder")
    MIXED_RELEASE = ("mixed-release", (ERROR, WARNING), True, "a sub-library (in the folder, or the one the linker "
                     "would pick) "
                     "is from another release")
    SUBLIBRARY_ELSEWHERE = ("sublibrary-elsewhere", ERROR, False, "the shim would load a sub-library from "
                            "outside its own folder: two folders' cuDNN in one process")
    SUBLIBRARY_UNLOADABLE = ("sublibrary-unloadable", (ERROR, WARNING), False, "a sub-library the shim would get "
                             "cannot load "
                             "(a dependency or a symbol of another release missing), with what calls then do; "
                             "where its opener's next name then gets a file from elsewhere, a warning when that file "
                             "is of the install's release and loads, an error when it is of another release or another "
                             "library's file (it stays mapped)")
    ORIGIN_THROUGH_SYMLINK = ("origin-through-symlink", ERROR, True, "the shim is reached through a "
                              "symlink; "
                              "`$ORIGIN` is the link's folder, where the sub-libraries are not")
    MISSING_DEPENDENCY = ("missing-dependency", (ERROR, WARNING), False, "a NEEDED library (libz) or one cuDNN "
                          "dlopens (cuBLASLt: error; NVRTC: warning), or one a library dlopens as it loads (cuBLAS "
                          "11.11's libnvrtc.so: an error where a cuDNN 8 shim then aborts on it), would not be found")
    LOADER_UNKNOWN = ("loader-unknown", WARNING, False, "the dynamic loader is not a glibc whose rules cudnnload "
                      "knows (2.28 to 2.41): what it would open is said as the nearest known glibc does, and "
                      "`LD_DEBUG=libs` settles it")
    DEPENDENCY_VERSION = ("dependency-version", ERROR, False, "a library cuDNN or one of its dependencies needs is "
                          "found, but the copy found first lacks a version it needs (`version `X' not found`)")
    RECORD_MISSING_FILE = ("record-missing-file", (ERROR, WARNING), False, "a pip distribution's RECORD lists a "
                           "library that "
                           "is not on disk")
    RECORD_MISMATCH = ("record-mismatch", (ERROR, WARNING), False, "a library's size (or, with `--verify`, its "
                       "sha256) is not "
                       "the one its distribution's RECORD lists: replaced or damaged")
    RECORD_CONFLICT = ("record-conflict", WARNING, False, "two distributions claim the same file (e.g. cu12 "
                       "and cu13 in one environment): the files of the last one installed are there, and uninstalling "
                       "either deletes them; what that does to the program now is said by the install's own findings")
    # before anything is installed or run (`doctor --requirements`, `doctor --root`)
    NOT_SURVEYED = ("not-surveyed", INFO, False, "(`doctor --requirements`) a framework of the set whose release "
                    "the survey of framework wheels lacks: its loader is judged by the nearest surveyed release, or "
                    "not at all when none was surveyed")
    LDCACHE_STALE = ("ldcache-stale", WARNING, False, "(`doctor --root`) a folder `ld.so.conf` names holds "
                     "libraries the image's `ld.so.cache` does not list: programs find them only after `ldconfig` "
                     "runs (the NVIDIA container toolkit runs it at start)")
    # resolving a name
    NOT_FOUND = ("not-found", ERROR, False, "(`which`, `doctor TARGET`) no cuDNN shim would be found for the name "
                 "the program asks for")
    ONLY_BY_PATH = ("only-by-path", INFO, False, "(`which`) the shim is a pip wheel on no linker path: found only "
                    "by programs that load it by path")
    # the probe and the driver
    PROBE_CRASHED = ("probe-crashed", ERROR, False, "(`doctor`) loading the set kills a process (a cuDNN "
                     "`abort()`, a signal, a hang)")
    NO_DRIVER = ("no-driver", (INFO, ERROR), False, "no NVIDIA driver (`libcuda.so.1`): info where the machine has "
                 "no NVIDIA hardware, an error where `/dev/nvidia*` exists")
    NO_GPU_VISIBLE = ("no-gpu-visible", ERROR, False, "the driver reports no device (`CUDA_VISIBLE_DEVICES` hides "
                      "them all, or none is there)")
    GPU_MEMORY_FULL = ("gpu-memory-full", (ERROR, WARNING), False, "other processes hold nearly all of a GPU's "
                       "memory: a program starting on it gets no CUDA context, or no room for cuDNN's handle (out of "
                       "memory, CUDNN_STATUS_NOT_INITIALIZED); an error on the GPU programs start on, else a warning")
    GPU_MEMORY_SHARED = ("gpu-memory-shared", WARNING, False, "(JAX) other processes hold more of a GPU's memory "
                         "than JAX leaves when it starts (it takes XLA_PYTHON_CLIENT_MEM_FRACTION, 75 %, of each "
                         "visible GPU at once): it backs off to nearly all that is free, and what it allocates "
                         "beside its pool (its autotuner's tries, cuDNN's handle, the kernels it loads) has little "
                         "room")
    GPU_UNAVAILABLE = ("gpu-unavailable", (ERROR, WARNING), False, "a GPU's compute mode lets no new process use it "
                       "(prohibited, or exclusive-process while another process holds it): \"CUDA-capable device(s) "
                       "is/are busy or unavailable\"; an error on the GPU programs start on, else a warning")
    DRIVER_ERROR = ("driver-error", ERROR, False, "the driver failed to initialise for another reason (the "
                    "CUresult and a remedy are given)")
    DRIVER_UNCHECKED = ("driver-unchecked", WARNING, False, "cuda-python is not importable: driver and GPUs were "
                        "not checked")
    DRIVER_TOO_OLD = ("driver-too-old", ERROR, False, "the driver supports an older CUDA major than cuDNN was "
                      "built for (`cudnnGetCudartVersion`)")
    DRIVER_MINOR_COMPAT = ("driver-minor-compat", INFO, False, "same CUDA major, older minor: runs under CUDA "
                           "minor-version compatibility")
    GPU_TOO_OLD = ("gpu-too-old", ERROR, False, "a GPU's compute capability is below what this cuDNN supports "
                   "(cuDNN 9.11+: sm_75)")
    GPU_TOO_NEW = ("gpu-too-new", (WARNING, ERROR), False, "a GPU newer than `cudnnGetMaxDeviceVersion`; a "
                   "warning where PTX can be JIT-compiled for it")
    NO_KERNELS_FOR_GPU = ("no-kernels-for-gpu", ERROR, False, "a library has neither SASS nor usable PTX for a "
                          "GPU's architecture")
    # the frameworks
    CONSUMER_PIN_UNMET = ("consumer-pin-unmet", WARNING, False, "a framework's `Requires-Dist` pin on "
                          "`nvidia-cudnn-*` is not met by what is installed")
    CONSUMER_NEEDS_OTHER_MAJOR = ("consumer-needs-other-major", ERROR, False, "a framework's libraries NEED "
                                  "`libcudnn.so.N` of another major than the cuDNN it gets (a program linked against "
                                  "cuDNN N that gets another major's shim under that name does not start)")
    CONSUMER_RUNTIME_OLDER_THAN_BUILD = ("consumer-runtime-older-than-build", (ERROR, WARNING), False, "the cuDNN a "
                                         "framework "
                                         "gets is older than the one it was built with (its own rule)")
    CONSUMER_KNOWN_BAD = ("consumer-known-bad", (ERROR, WARNING), False, "a cuDNN release the framework lists as "
                          "broken")
    CONSUMER_BROKEN = ("consumer-broken", ERROR, False, "a framework is installed but cannot be imported or read")
    LINKS_GONE = ("links-gone", ERROR, False, "distributions installed here as symbolic links into an installer's "
                  "cache that is gone (`uv pip install --link-mode=symlink`, then `uv cache clean`): every file of "
                  "theirs, their metadata too, points at nothing; installed again, they are whole")
    FRAMEWORK_GPU_OFF = ("framework-gpu-off", (ERROR, WARNING), False, "a framework's own setting keeps it off the "
                         "GPU (`JAX_PLATFORMS` without `cuda`): it never loads cuDNN; a warning where no GPU is seen")
    FRAMEWORK_CALLS_FAIL = ("framework-calls-fail", ERROR, False, "a call a framework makes for its first convolution "
                            "fails with the cuDNN it gets (which call, what it prints, and the file that decides it)")
    # a program's run (`doctor -- COMMAND`)
    PREDICTION_DISAGREES = ("prediction-disagrees", (WARNING, ERROR), False, "(`doctor`) the probe or the program "
                            "did otherwise than predicted; an error where another cuDNN was already in the process")
    PROGRAM_DIED = ("program-died", ERROR, False, "(`doctor --`) the program died of a signal; where (abort after "
                    "which cuDNN message, SIGBUS mapping which file)")
    PROGRAM_TIMED_OUT = ("program-timed-out", ERROR, False, "(`doctor --`) the program did not end within "
                         "`--timeout` (what was then ended: `processes-killed`)")
    PROGRAM_INTERRUPTED = ("program-interrupted", WARNING, False, "(`doctor --`) SIGINT, SIGTERM or SIGHUP "
                           "interrupted cudnnload while the program ran: the report covers the run until then")
    PROCESSES_KILLED = ("processes-killed", WARNING, False, "(`doctor --`) the program's processes cudnnload ended, "
                        "each seen to end: pid, command, why (timeout, interrupted, left running when the program "
                        "ended) and the signal")
    PROCESSES_NOT_STOPPED = ("processes-not-stopped", ERROR, False, "(`doctor --`) processes of the program's "
                             "cudnnload could not end (permission denied), which may still run")
    PROGRAM_FAILED = ("program-failed", WARNING, False, "(`doctor --`) the program exited non-zero for reasons of "
                      "its own; cuDNN is not blamed (the run still counts as failed: exit 1)")
    LOAD_FAILED = ("load-failed", ERROR, False, "(`doctor --`) a cuDNN, cuBLAS or NVRTC name the program asked for "
                   "was not found, and where it was looked for")
    MIXED_IN_PROCESS = ("mixed-in-process", ERROR, False, "(`doctor --`, `--pid`) cuDNN libraries from several "
                        "folders or releases were mapped in one process; (`doctor TARGET`) a cuDNN shim, or a "
                        "sub-library no load of the install takes, of another folder is in the process before the "
                        "program (`LD_PRELOAD`, a start-up line)")
    MAPPED_FILE_REPLACED = ("mapped-file-replaced", WARNING, False, "(`doctor --pid`) a library the process has "
                            "mapped was replaced or deleted on disk since: the process runs the file it mapped, and "
                            "what it loads later comes from the disk")
    CUDNN_ERROR = ("cudnn-error", (INFO, WARNING), False, "(`doctor --`) a cuDNN call returned an error in the API "
                   "log (info where the prediction expected it, e.g. no GPU)")
    LOGS_LOST = ("logs-lost", ERROR, False, "(`doctor --`) the file system holding the run's logs (TMPDIR) filled up "
                 "while the program ran: the linker's and cuDNN's logs may be cut short, so no verdict is made on them")
    UNLOGGED_LOAD = ("unlogged-load", INFO, False, "(`doctor --`) a shim mapped where the linker kept no log "
                     "(secure-execution mode): its rule cannot be shown")
    PROGRAM_UNWATCHED = ("program-unwatched", WARNING, False, "(`doctor --`) the program replaced itself with one "
                         "started without the linker's log switches (`env -i`, sudo, su clear them): what it loaded "
                         "after is not known, so its run proves nothing about cuDNN")
    SHADOWED_RELEASE = ("shadowed-release", (ERROR, WARNING), False, "(`doctor PROGRAM`) a program's own cuDNN (the "
                        "one its RPATH/RUNPATH or search would find) loses to an `LD_LIBRARY_PATH` entry holding "
                        "another release: the program runs that release (a warning when it is a later minor release "
                        "of the same major, which cuDNN keeps compatible with what was built against the earlier)")
    PRELOAD_CANNOT_LOAD = ("preload-cannot-load", ERROR, False, "an `LD_PRELOAD` entry needs a library that "
                           "cannot be found: every program started with it, cudnnload's own Python included, stops "
                           "before it starts (\"error while loading shared libraries\"); "
                           "`LD_PRELOAD= cudnnload doctor --env LD_PRELOAD=\"$LD_PRELOAD\"` diagnoses it")
    STARTUP_FAILED = ("startup-failed", ERROR, False, "(`doctor --python`) the interpreter does not start: it dies "
                      "of a signal, or does not answer, during its start-up (where: a `.pth` line, sitecustomize), "
                      "in this environment or in one a fix was tried in")
    # search-path policy
    RELATIVE_SEARCH_PATH = ("relative-search-path", WARNING, False, "an empty or relative entry in "
                            "`LD_LIBRARY_PATH` or in a DT_RPATH/DT_RUNPATH: glibc searches it from the current "
                            "directory, so libraries are loaded from wherever the program runs (`load()` passes "
                            "such an install over)")
    WRITABLE_SEARCH_PATH = ("writable-search-path", WARNING, False, "a folder on `LD_LIBRARY_PATH` or in a "
                            "DT_RPATH/DT_RUNPATH that someone other than root and its owner can put a library in")
    UNTRUSTED_LIBRARY = ("untrusted-library", ERROR, True, "a library a program would map (a cuDNN file, one it "
                         "NEEDs or dlopens, an `LD_PRELOAD` entry) that someone other than root and you can change "
                         "(the file, or a folder on its way), or that an empty or relative search-path entry gives "
                         "from the current folder: the program runs whatever is there; cudnnload judges it from its "
                         "bytes and never maps it")
    WRITABLE_LIBRARY = ("writable-library", WARNING, False, "a cuDNN file (symlinks followed) writable by others, "
                        "or by a group other than its owner's user private group")
    FOREIGN_OWNER = ("foreign-owner", WARNING, False, "a cuDNN file owned by a user who is neither root nor you")
    ORIGIN_IN_SETUID = ("origin-in-setuid", (WARNING, ERROR), False, "(`doctor PROGRAM`) a set-user-ID, "
                        "set-group-ID or file-capability program's DT_RPATH/DT_RUNPATH entry that secure-execution "
                        "mode drops; an error where its cuDNN is found through that entry")


class SubjectKind(_Word):
    FILE = "file"  # one library file
    INSTALL = "install"  # a folder holding one cuDNN generation
    DISTRIBUTION = "distribution"  # a pip distribution (its RECORD)
    VARIABLE = "variable"  # an environment variable, or one entry of it
    CONSUMER = "consumer"  # a framework, program or shared object that uses cuDNN
    PROGRAM = "program"  # a program run under `doctor -- COMMAND`, or a running process
    DRIVER = "driver"  # the NVIDIA driver and the GPUs it shows
    TARGET = "target"  # what doctor was pointed at, as a whole


class ActionKind(_Word):
    ENV_REMOVE_ENTRY = "env-remove-entry"  # {variable, entry}
    ENV_UNSET = "env-unset"  # {variable}
    ENV_SET = "env-set"  # {variable, value}
    DELETE = "delete"  # {path}
    PIP_INSTALL = "pip-install"  # {requirements, options, target, python}
    PIP_UNINSTALL = "pip-uninstall"  # {requirements (names), target, python}
    RELINK = "relink"  # {path, target}: path becomes a symbolic link to target
    CHMOD = "chmod"  # {path, mode, owner}: mode in octal, "0644"; owner: who must run it (None: the user)
    REMOVE_LINE = "remove-line"  # {path, line}: that line taken out of a start-up file (.pth, sitecustomize, profile)
    RUN = "run"  # {argv}: run the program as argv + program
    RESTART = "restart"  # {pid, argv}: stop that running process and start it again as it was started
    MANUAL = "manual"  # {text}: no automatic action exists (a driver upgrade, relinking)
