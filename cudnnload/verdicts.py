"""The vocabulary of a verdict: what is wrong (`Code`), how bad (`Severity`), how it shows (`Effect`), what
it is about (`Subject`), and what to do (`Fix`, made of `Action`s), put together in a `Finding`.

At the bottom of the stage order: every stage reports in these terms and no code decides anything by
reading a message; the message is for people, rendered where the finding is made, and the JSON contract
(README "Fixes") is `Fix.json`. A `Code` carries its severity (the one it has, or the ones it may have,
first the usual), whether it keeps ``load()`` from taking an install, and the line README's table gives it
(tests/test_verdicts.py checks the table against this module).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
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
    NO_CUDNN = ("no-cudnn", ERROR, False, "what was asked about holds no cuDNN that would load: a folder without "
                "`libcudnn*.so.7/8/9`, a file not named so, a venv or program that finds none")
    NOT_ELF = ("not-elf", ERROR, True, "the file is not an ELF object")
    EMPTY_FILE = ("empty-file", ERROR, True, "the file is 0 bytes")
    TRUNCATED = ("truncated", ERROR, True, "the ELF header, section table or a section runs past the end of the file")
    DAMAGED_ELF = ("damaged-elf", ERROR, True, "ELF structures that do not parse")
    UNREADABLE = ("unreadable", ERROR, True, "permission denied (the file, or a folder on its path) or another "
                  "read error")
    BROKEN_SYMLINK = ("broken-symlink", ERROR, True, "a symbolic link to nothing")
    NOT_A_REGULAR_FILE = ("not-a-regular-file", ERROR, True, "a FIFO, a socket, a device or a /proc or /sys file "
                          "where a library is expected: never opened (glibc's dlopen of a FIFO hangs, of a device "
                          "fails)")
    SYMLINK_LOOP = ("symlink-loop", ERROR, True, "a symbolic link loop")
    FOREIGN_ELF = ("foreign-elf", ERROR, True, "wrong ELF class or machine for this host (32-bit, aarch64 on "
                   "x86-64, ...)")
    SONAME_MISMATCH = ("soname-mismatch", WARNING, False, "the SONAME is not the one the file name promises")
    GLIBC_TOO_OLD = ("glibc-too-old", ERROR, True, "the file needs a newer `GLIBC_x.y` than this machine has")
    LIBSTDCXX_TOO_OLD = ("libstdcxx-too-old", ERROR, True, "the file needs a newer `GLIBCXX_`/`CXXABI_` than the "
                         "libstdc++ that would load")
    UNKNOWN_LIBRARY = ("unknown-library", WARNING, False, "a `libcudnn*` file of no known generation")
    # one install
    MISSING_SHIM = ("missing-shim", (WARNING, ERROR), False, "the folder has sub-libraries but no `libcudnn.so.N` "
                    "(a warning for cuDNN 9, whose sub-libraries are found through a shim elsewhere)")
    MISSING_SUBLIBRARY = ("missing-sublibrary", ERROR, True, "a sub-library the shim will open is missing from its "
                          "folder")
    MIXED_RELEASE = ("mixed-release", ERROR, True, "a sub-library (in the folder, or the one the linker would pick) "
                     "is from another release")
    SUBLIBRARY_ELSEWHERE = ("sublibrary-elsewhere", WARNING, False, "the shim would load a sub-library from "
                            "outside its own folder")
    SUBLIBRARY_UNLOADABLE = ("sublibrary-unloadable", ERROR, False, "a sub-library the shim would get cannot load "
                             "(a dependency or a symbol of another release missing), with what calls then do")
    ORIGIN_THROUGH_SYMLINK = ("origin-through-symlink", ERROR, True, "the shim is reached through a symlink; "
                              "`$ORIGIN` is the link's folder, where the sub-libraries are not")
    MISSING_DEPENDENCY = ("missing-dependency", (ERROR, WARNING), False, "a NEEDED library (libz) or one cuDNN "
                          "dlopens (cuBLASLt: error; NVRTC: warning) would not be found")
    RECORD_MISSING_FILE = ("record-missing-file", ERROR, False, "a pip distribution's RECORD lists a library that "
                           "is not on disk")
    RECORD_MISMATCH = ("record-mismatch", ERROR, False, "a library's size (or, with `--verify`, its sha256) is not "
                       "the one its distribution's RECORD lists: replaced or damaged")
    RECORD_CONFLICT = ("record-conflict", ERROR, False, "two distributions claim the same file (e.g. cu12 and cu13 "
                       "in one environment)")
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
                                  "`libcudnn.so.N` of another major than the cuDNN it gets")
    CONSUMER_RUNTIME_OLDER_THAN_BUILD = ("consumer-runtime-older-than-build", ERROR, False, "the cuDNN a framework "
                                         "gets is older than the one it was built with (its own rule)")
    CONSUMER_KNOWN_BAD = ("consumer-known-bad", (ERROR, WARNING), False, "a cuDNN release the framework lists as "
                          "broken")
    CONSUMER_BROKEN = ("consumer-broken", ERROR, False, "a framework is installed but cannot be imported or read")
    # a program's run (`doctor -- COMMAND`)
    PREDICTION_DISAGREES = ("prediction-disagrees", (WARNING, ERROR), False, "(`doctor`) the probe or the program "
                            "did otherwise than predicted; an error where another cuDNN was already in the process")
    PROGRAM_DIED = ("program-died", ERROR, False, "(`doctor --`) the program died of a signal; where (abort after "
                    "which cuDNN message, SIGBUS mapping which file)")
    PROGRAM_TIMED_OUT = ("program-timed-out", ERROR, False, "(`doctor --`) killed at `--timeout`, with every "
                         "process it started")
    PROGRAM_FAILED = ("program-failed", ERROR, False, "(`doctor --`) the program exited non-zero for reasons of its "
                      "own; cuDNN is not blamed")
    LOAD_FAILED = ("load-failed", ERROR, False, "(`doctor --`) a cuDNN, cuBLAS or NVRTC name the program asked for "
                   "was not found, and where it was looked for")
    MIXED_IN_PROCESS = ("mixed-in-process", ERROR, False, "(`doctor --`, `--pid`) cuDNN libraries from several "
                        "folders or releases were mapped in one process")
    CUDNN_ERROR = ("cudnn-error", (INFO, WARNING), False, "(`doctor --`) a cuDNN call returned an error in the API "
                   "log (info where the prediction expected it, e.g. no GPU)")
    UNLOGGED_LOAD = ("unlogged-load", INFO, False, "(`doctor --`) a shim mapped where the linker kept no log "
                     "(secure-execution mode): its rule cannot be shown")
    # search-path policy
    RELATIVE_SEARCH_PATH = ("relative-search-path", WARNING, False, "an empty or relative entry in "
                            "`LD_LIBRARY_PATH` or in a DT_RPATH/DT_RUNPATH: glibc searches it from the current "
                            "directory, so libraries are loaded from wherever the program runs (`load()` passes "
                            "such an install over)")
    WRITABLE_SEARCH_PATH = ("writable-search-path", WARNING, False, "a folder on `LD_LIBRARY_PATH` or in a "
                            "DT_RPATH/DT_RUNPATH that someone other than root and its owner can put a library in")
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


@dataclass(frozen=True)
class Subject:
    """What a finding is about, as data: the file, install, distribution, variable (entry), consumer or
    program; ``library`` names the sub-library key (``"cnn"``) or dependency soname whose load it
    decides, where it decides one."""

    kind: SubjectKind
    path: str | None = None  # the file, the install's folder, the program, the interpreter
    library: str | None = None  # catalog key ("cnn") or a dependency's soname ("libcublasLt.so.12")
    variable: str | None = None  # "LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES" ...
    entry: str | None = None  # the entry of that variable, as written
    name: str | None = None  # a distribution ("nvidia-cudnn-cu12 9.28.0.42"), a framework ("torch 2.11.0")


def file(path: str | None, library: str | None = None) -> Subject:
    return Subject(SubjectKind.FILE, path, library)


def install(folder: str | None, library: str | None = None) -> Subject:
    return Subject(SubjectKind.INSTALL, folder, library)


class ActionKind(_Word):
    ENV_REMOVE_ENTRY = "env-remove-entry"  # {variable, entry}
    ENV_UNSET = "env-unset"  # {variable}
    ENV_SET = "env-set"  # {variable, value}
    DELETE = "delete"  # {path}
    PIP_INSTALL = "pip-install"  # {requirements, options, target, python}
    RUN = "run"  # {argv}: run the program as argv + program
    MANUAL = "manual"  # {text}: no automatic action exists (a driver upgrade, relinking)


# The fields of each action kind in its JSON (README "Fixes": the contract other tools apply).
_FIELDS: dict[ActionKind, tuple[str, ...]] = {
    ActionKind.ENV_REMOVE_ENTRY: ("variable", "entry"), ActionKind.ENV_UNSET: ("variable",),
    ActionKind.ENV_SET: ("variable", "value"), ActionKind.DELETE: ("path",),
    ActionKind.PIP_INSTALL: ("requirements", "options", "target", "python"), ActionKind.RUN: ("argv",),
    ActionKind.MANUAL: ("text",),
}


@dataclass(frozen=True)
class Action:
    """One step of a fix. Paths are absolute."""

    do: ActionKind
    variable: str | None = None
    entry: str | None = None
    value: str | None = None
    path: str | None = None
    requirements: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    target: str | None = None  # the site-packages folder that holds the damaged distribution (its RECORD's)
    python: str | None = None  # the interpreter whose environment it is
    argv: tuple[str, ...] = ()
    text: str | None = None

    def json(self) -> dict[str, object]:
        """The contract's object: ``do`` and that kind's fields (README "Fixes")."""
        out: dict[str, object] = {"do": self.do.value}
        for name in _FIELDS[self.do]:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def __str__(self) -> str:
        if self.do is ActionKind.ENV_REMOVE_ENTRY:
            return f"remove {self.entry or '(the empty entry)'} from {self.variable}"
        if self.do is ActionKind.ENV_UNSET:
            return f"unset {self.variable}"
        if self.do is ActionKind.ENV_SET:
            return f"export {self.variable}={shlex.quote(self.value or '')}"
        if self.do is ActionKind.DELETE:
            return f"delete {self.path}"
        if self.do is ActionKind.PIP_INSTALL:
            words = [self.python or "python", "-m", "pip", "install", *self.options, *self.requirements]
            return " ".join(shlex.quote(word) for word in words)
        if self.do is ActionKind.RUN:
            return f"run the program as: {shlex.join(self.argv)} <program> [args...]"
        return self.text or ""


def remove_entry(variable: str, entry: str) -> Action:
    return Action(ActionKind.ENV_REMOVE_ENTRY, variable=variable, entry=entry)


def unset(variable: str) -> Action:
    return Action(ActionKind.ENV_UNSET, variable=variable)


def set_variable(variable: str, value: str) -> Action:
    return Action(ActionKind.ENV_SET, variable=variable, value=value)


def delete(path: str) -> Action:
    return Action(ActionKind.DELETE, path=path)


def pip_install(requirements: Iterable[str], *, options: Iterable[str] = (), target: str | None = None,
                python: str | None = None) -> Action:
    return Action(ActionKind.PIP_INSTALL, requirements=tuple(requirements), options=tuple(options), target=target,
                  python=python)


def run(argv: Iterable[str]) -> Action:
    return Action(ActionKind.RUN, argv=tuple(argv))


def manual(text: str) -> Action:
    return Action(ActionKind.MANUAL, text=text)


@dataclass(frozen=True)
class Fix:
    """What makes the finding go away: actions to apply in order (the permanent fix), and ``alternatives``
    (each a way on its own, e.g. ``cudnnload run`` pinning the right cuDNN without changing anything).
    No actions: the fix is not known (``note`` may say what to look at); never a guess."""

    actions: tuple[Action, ...] = ()
    note: str | None = None  # said after the actions, for people
    alternatives: tuple[Action, ...] = ()

    @property
    def text(self) -> str | None:
        said = "; then ".join(str(action) for action in self.actions)
        if self.alternatives:
            said += ("; or " if said else "") + "; or ".join(str(action) for action in self.alternatives)
        if self.note:
            said = f"{said} ({self.note})" if said else self.note
        return said or None

    def json(self) -> dict[str, object]:
        return {"text": self.text, "actions": [a.json() for a in (*self.actions, *self.alternatives)]}

    def __bool__(self) -> bool:
        return bool(self.actions or self.note or self.alternatives)


NO_FIX = Fix()


def fix(*actions: Action, note: str | None = None, alternatives: Iterable[Action] = ()) -> Fix:
    return Fix(tuple(actions), note, tuple(alternatives))


@dataclass(frozen=True)
class Consequence:
    """What the user will see because of a finding: which calls, what they do, and what is printed first."""

    calls: str  # "cudnnCnnVersionCheck and every convolution call (cudnnCreateConvolutionDescriptor, ...)"
    effect: Effect
    library: str  # what fails to load: a sub-library key ("cnn") or a dependency's soname
    status: int | None = None  # the cudnnStatus_t the calls return (STATUS)
    status_name: str | None = None
    message: str | None = None  # the first line cuDNN (or the dynamic linker) prints, as printed
    first_call: str | None = None  # the function that meets it first, in an application's usual order

    def __post_init__(self) -> None:
        object.__setattr__(self, "effect", Effect(self.effect))

    def __str__(self) -> str:
        said = f', after cuDNN prints "{self.message}"' if self.message and self.effect is Effect.STATUS else ""
        if self.effect is Effect.STATUS:
            return f"{self.calls}: each returns {self.status} {self.status_name}{said}; the process goes on"
        if self.effect is Effect.ABORT:
            return (f"{self.calls}: cuDNN prints \"{self.message}\" and calls abort(); the process dies of SIGABRT "
                    "(exit status 134, \"Aborted (core dumped)\")")
        if self.effect is Effect.SIGBUS:
            return f"{self.calls}: the process dies of SIGBUS inside dlopen ({self.message}), printing nothing"
        if self.effect is Effect.HANG:
            return f"{self.calls}: the process hangs inside dlopen ({self.message}), printing nothing"
        return f"{self.calls}: {self.message}"


@dataclass(frozen=True)
class Finding:
    """One problem (or notable fact): its code, what it is about, what the user will see, and the fix."""

    code: Code
    message: str  # for people; never read by code
    subject: Subject
    fix: Fix = field(default=NO_FIX)
    consequences: tuple[Consequence, ...] = ()
    severity: Severity = None  # type: ignore[assignment]  # default: the code's usual one

    def __post_init__(self) -> None:
        code = Code(self.code)  # type: ignore[call-arg]  # the value's member (Enum's own lookup)
        severity = code.severity if self.severity is None else Severity(self.severity)
        if severity not in code.severities:
            raise ValueError(f"{code.value} is never {severity.value} (it is {', '.join(code.severities)})")
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "severity", severity)

    @property
    def path(self) -> str | None:
        return self.subject.path

    @property
    def blocks_load(self) -> bool:
        return self.code.blocks_load


def unique(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Each finding once (by code, subject and message, the first kept), errors first."""
    seen: dict[tuple[Code, Subject, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.code, f.subject, f.message), f)
    return tuple(sorted(seen.values(), key=lambda f: f.severity.rank))


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR]
