"""Search-path policy: where the linker would look that moves with the current directory or that others can
write, cuDNN files others can change, and the ``$ORIGIN`` a set-user-ID program loses.

Pure functions from the linker model (`linker.LinkerEnv`, `linker.Requester`) and the access facts
(`resolve.access.Access`: modes and owners, read as asked) to Findings; nothing is loaded and
``os.environ`` is never read. glibc 2.36's rules, each checked against the
real ``ld.so`` in tests/test_policy.py (secure mode with a set-user-ID program run by another user; set-group-ID
and file capabilities set AT_SECURE by the same kernel rule and are not run there):

- an empty element of LD_LIBRARY_PATH, DT_RPATH or DT_RUNPATH is the current directory (``fillin_rpath``
  in elf/dl-load.c keeps "" as a directory name), and a relative element is opened relative to it;
- in secure-execution mode (``AT_SECURE``: a set-user-ID or set-group-ID program run by someone else, or a
  program with file capabilities) LD_LIBRARY_PATH is ignored (rtld.c drops the unsecure variables), and
  in the program's own DT_RPATH/DT_RUNPATH an element using ``$ORIGIN`` is dropped unless ``$ORIGIN``
  starts it and the expanded path lies under a system folder (``_dl_dst_substitute``,
  ``is_trusted_path_normalize``). A library's ``$ORIGIN`` at the start of an element is still expanded
  there, so the wheel's shim keeps its sub-libraries.
"""

from __future__ import annotations

import posixpath as path_
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from cudnnload.codes import Code, SubjectKind
from cudnnload.resolve.access import Access
from cudnnload.resolve.linker import LinkerDefaults, LinkerEnv, Requester, expand
from cudnnload.verdicts import ERROR, WARNING, Finding, Fix, Subject, fix, manual, remove_entry, set_variable

RELATIVE_SEARCH_PATH, WRITABLE_SEARCH_PATH, WRITABLE_LIBRARY, FOREIGN_OWNER, ORIGIN_IN_SETUID, UNTRUSTED_LIBRARY = (
    Code.RELATIVE_SEARCH_PATH, Code.WRITABLE_SEARCH_PATH, Code.WRITABLE_LIBRARY, Code.FOREIGN_OWNER,
    Code.ORIGIN_IN_SETUID, Code.UNTRUSTED_LIBRARY)
CODES = frozenset({RELATIVE_SEARCH_PATH, WRITABLE_SEARCH_PATH, WRITABLE_LIBRARY, FOREIGN_OWNER, ORIGIN_IN_SETUID,
                   UNTRUSTED_LIBRARY})


class Found(Protocol):
    """One library as the linker would find it (`discovery.Step`)."""

    @property
    def library(self) -> str: ...

    @property
    def requested_by(self) -> str | None: ...

    @property
    def path(self) -> str | None: ...

    @property
    def rule(self) -> str: ...


@dataclass(frozen=True)
class _Entry:
    """One element of a search list, as written and as glibc uses it."""

    search_list: str  # "LD_LIBRARY_PATH", "DT_RPATH" or "DT_RUNPATH"
    owner: str | None  # the object whose DT_RPATH/DT_RUNPATH it is
    text: str  # as written
    folder: str  # DSTs expanded, trailing '/' removed; "" is the current directory

    @property
    def where(self) -> str:
        return f"the {self.search_list} of {self.owner}" if self.owner else self.search_list


# --- the search lists ----------------------------------------------------------------

def search_path_findings(env: LinkerEnv, *objects: Requester, access: Access) -> tuple[Finding, ...]:
    """LD_LIBRARY_PATH, then the DT_RPATH/DT_RUNPATH of the executable and of ``objects``: each empty or
    relative entry (``relative-search-path``), each folder others can write (``writable-search-path``).
    ``access`` answers who may write what, and which folder is current."""
    here = access.cwd
    llp = list(_entries("LD_LIBRARY_PATH", None, env.ld_library_path, env.executable, env.defaults))
    owners = {owner.path: owner for owner in (env.executable, *objects) if owner is not None}
    lists = [entry for owner in owners.values() for entry in _object_entries(owner, env.defaults)]
    return (tuple(_relative(entry, here, llp) for entry in llp if not entry.folder.startswith("/"))
            + tuple(_relative(entry, here, llp) for entry in lists if not entry.folder.startswith("/"))
            + _writable_folders(llp + lists, access))


def install_findings(folder: str, found_via: str, files: Sequence[Requester], loads: Sequence[Found],
                     defaults: LinkerDefaults, access: Access) -> tuple[Finding, ...]:
    """An install's own: what it would load through an empty or relative entry, its files that others can
    write or another user owns, and the empty, relative or writable entries of their DT_RPATH/DT_RUNPATH
    (``$ORIGIN`` expanded with each file's folder as opened)."""
    here = access.cwd
    found: list[Finding] = []
    if not folder.startswith("/"):
        found.append(Finding(RELATIVE_SEARCH_PATH, f"found through a relative folder ({found_via}): '{folder}' is "
                             f"{path_.join(here, folder)} only while a program runs in {here}; load() passes it "
                             "over unless given the folder", Subject(SubjectKind.INSTALL, folder),
                             fix(manual("write the folder as an absolute path where it is set"))))
    through: dict[tuple[str, str, str], list[Found]] = {}  # (opener, rule, folder as searched): its loads
    for load in _lent(folder, loads, here):
        opener = path_.basename(load.requested_by) if load.requested_by else "the program"
        through.setdefault((opener, load.rule, path_.dirname(load.path or "")), []).append(load)
    for (opener, rule, searched), group in through.items():
        entry = getattr(group[0], "entry", None)
        repair = fix(remove_entry("LD_LIBRARY_PATH", entry)) if rule == "ld-library-path" and entry is not None \
            else fix(manual(_RELINK))
        found.append(Finding(
            RELATIVE_SEARCH_PATH, f"{opener} would load {', '.join(load.library for load in group)} from "
            f"{searched or 'the current directory'} through an empty or relative {_LISTS.get(rule, rule)} entry: "
            f"{path_.join(here, searched)} from here, other files wherever the program runs",
            Subject(SubjectKind.VARIABLE, group[0].path, group[0].library, variable=_LISTS.get(rule, rule),
                    entry=entry), repair))
    found += file_findings([file.path for file in files], access)
    entries = [entry for file in files for entry in _object_entries(file, defaults)]
    found += [_relative(entry, here, []) for entry in entries if not entry.folder.startswith("/")]
    found += _writable_folders(entries, access)
    return tuple(found)


def lent_loads(folder: str, loads: Iterable[Found], *, cwd: str) -> tuple[str, ...]:
    """Paths of the planned loads outside the install's ``folder`` that an empty or relative search-path entry
    gave (the linker model joins such an entry to the name, so the path stays relative; one inside the folder is
    the file the install has anyway; ``cwd``, the current folder, places it)."""
    return tuple(load.path for load in _lent(folder, loads, cwd) if load.path is not None)


def relative_loads(folder: str, lent: Sequence[str], *, given: bool = False) -> tuple[str, ...]:
    """Paths an install would load that an empty or relative search-path entry gave: its own files when its
    folder is relative, unless ``given`` (the caller named it), then what such an entry lent it (`lent_loads`)."""
    return (*(() if given or folder.startswith("/") else (folder,)), *lent)


def _lent(folder: str, loads: Iterable[Found], here: str) -> list[Found]:
    """Planned loads with a relative path, the mark of an empty or relative entry, from outside ``folder``
    (``here``: the current folder)."""
    own = path_.normpath(path_.join(here, folder))
    return [load for load in loads if load.path is not None and not load.path.startswith("/")
            and path_.normpath(path_.join(here, path_.dirname(load.path))) != own]


def _entries(search_list: str, owner: str | None, texts: Sequence[str], expander: Requester | None,
             defaults: LinkerDefaults) -> Iterator[_Entry]:
    """The list as fillin_rpath builds it: DSTs expanded (an element whose DST has no value is dropped),
    trailing slashes removed; "" stays, as the current directory."""
    for text in dict.fromkeys(texts):
        folder = expand(text, expander, defaults) if text else ""
        if folder is None or (text and not folder):
            continue
        yield _Entry(search_list, owner, text, folder.rstrip("/") or ("/" if folder else ""))


def _object_entries(obj: Requester, defaults: LinkerDefaults) -> Iterator[_Entry]:
    """The list glibc uses for ``obj``'s own loads: DT_RUNPATH, else DT_RPATH (ignored beside DT_RUNPATH)."""
    what, texts = ("DT_RUNPATH", obj.runpath) if obj.runpath else ("DT_RPATH", obj.rpath)
    return _entries(what, obj.path, texts, obj, defaults)


_LISTS = {"ld-library-path": "LD_LIBRARY_PATH", "rpath": "DT_RPATH", "runpath": "DT_RUNPATH"}
_RELINK = "relink it without the entry (patchelf --set-rpath), or use $ORIGIN/... for a folder beside the file"


def _relative(entry: _Entry, here: str, llp: Sequence[_Entry]) -> Finding:
    if entry.folder:
        what = (f"the relative entry '{entry.text}': glibc opens it from the current directory "
                f"({path_.join(here, entry.folder)} from here)")
    else:
        shape = "a leading, trailing or doubled ':'" if entry.owner is None else "an empty element"
        what = f"an empty entry ({shape}): glibc searches the current directory for it ({here} from here)"
    if entry.owner is None:
        subject = Subject(SubjectKind.VARIABLE, variable="LD_LIBRARY_PATH", entry=entry.text)
        repair = fix(remove_entry("LD_LIBRARY_PATH", entry.text), note=_ld_library_path_note(llp, here))
    else:
        subject = Subject(SubjectKind.FILE, entry.owner, variable=entry.search_list, entry=entry.text)
        repair = fix(manual(_RELINK))
    return Finding(RELATIVE_SEARCH_PATH, f"{entry.where} has {what}, so a program loads libraries from whatever "
                   "folder it runs in", subject, repair)


def _ld_library_path_note(entries: Sequence[_Entry], here: str) -> str | None:
    """Where a relative entry was meant to point, for the user to write instead."""
    relative = [entry for entry in entries if entry.folder and not entry.folder.startswith("/")]
    if not relative:
        return None
    return "; ".join(f"'{entry.text}' is {path_.join(here, entry.folder)} from here: write that if it is meant"
                     for entry in relative)


def _writable_folders(entries: Sequence[_Entry], access: Access) -> tuple[Finding, ...]:
    """One finding per absolute folder others can put a library in, naming every list that searches it."""
    named: dict[str, dict[str, list[str]]] = {}  # folder -> search list -> the files whose list it is
    texts: dict[str, str] = {}  # folder -> its LD_LIBRARY_PATH entry, as written
    for entry in entries:
        if entry.folder.startswith("/"):
            owners = named.setdefault(entry.folder, {}).setdefault(entry.search_list, [])
            if entry.owner and path_.basename(entry.owner) not in owners:
                owners.append(path_.basename(entry.owner))
            if entry.owner is None:
                texts.setdefault(entry.folder, entry.text)
    found = []
    for folder, lists in named.items():
        plantable = access.plantable(folder)
        if plantable is None:
            continue
        by = " and ".join(f"the {name} of {', '.join(owners)}" if owners else name for name, owners in lists.items())
        steps = [] if plantable.sticky else [manual(f"make {plantable.culprit} writable by its owner only "
                                                    f"(chmod go-w {plantable.culprit})")]
        if folder in texts:
            steps.insert(0, remove_entry("LD_LIBRARY_PATH", texts[folder]))
        elif not steps:
            steps.append(manual(f"take {folder} off the search path (relink without it)"))
        found.append(Finding(WRITABLE_SEARCH_PATH, f"searched for libraries by {by}, and {plantable.why}: they can put "
                             "a library there that a program using this search path loads",
                             Subject(SubjectKind.VARIABLE, folder, variable="LD_LIBRARY_PATH" if folder in texts
                                     else None, entry=texts.get(folder)), fix(steps[0], alternatives=steps[1:])))
    return tuple(found)


# --- the files ---------------------------------------------------------------------

def file_findings(paths: Iterable[str], access: Access) -> tuple[Finding, ...]:
    """cuDNN files (symlinks followed) that someone other than root and their owner can write
    (``writable-library``), or that belong to a user who is neither root nor ``access.user`` (``foreign-owner``)."""
    found: list[Finding] = []
    for path in dict.fromkeys(paths):
        facts = access.file(path)
        if facts is None:
            continue  # discovery reports missing and unreadable files
        shown = "" if facts.real == path else f" ({facts.real})"
        if facts.writer is not None:
            found.append(Finding(WRITABLE_LIBRARY, f"writable by {facts.writer}{shown}: they can change the code of "
                                 "every program that loads this cuDNN", Subject(SubjectKind.FILE, path),
                                 fix(manual(f"chmod go-w {facts.real}"))))
        if facts.owner not in (0, access.user):
            found.append(Finding(FOREIGN_OWNER, f"owned by {facts.owner_name}{shown}, neither root nor you "
                                 f"({access.user_name(access.user)}): that user can change the code of every "
                                 "program of yours that loads it", Subject(SubjectKind.FILE, path),
                                 fix(manual(f"install cuDNN as yourself (your own venv) or as root, or chown root "
                                            f"{facts.real}"))))
    return tuple(found)


# --- what a program would map --------------------------------------------------------

@dataclass(frozen=True)
class Mapped:
    """One file a program would map, and how it would get it (the search-path entry, when one gave it)."""

    path: str
    library: str | None = None  # catalog key, or a dependency's soname
    variable: str | None = None  # "LD_LIBRARY_PATH" or "LD_PRELOAD"
    entry: str | None = None  # that variable's entry, as written


def untrusted_findings(mapped: Iterable[Mapped], access: Access, search_path: Sequence[str] = (),
                       taken: Collection[str] = ()) -> tuple[Finding, ...]:
    """``untrusted-library`` for each file a program would map that someone other than root and the user
    can change, or that the current folder gives (`Access.replaceable`): an error, since the program would
    run it; cudnnload only reads such a file (its ELF facts), and maps it nowhere (`loading.probe`). The fix
    takes away the entry that gave it (for a relative path with no entry recorded: the entry of
    ``search_path``, LD_LIBRARY_PATH's entries as written, that names its folder; written as an absolute folder
    instead where that keeps what loads, unless the entry is among ``taken``, the LD_LIBRARY_PATH entries another
    error's fix takes away: what it gives is then part of what fails, seed 3's 3-14550), else makes the folder (or
    file) the user's and root's alone."""
    found = []
    for item in {item.path: item for item in mapped}.values():
        why = access.replaceable(item.path)
        if why is None:
            continue
        relative = not item.path.startswith("/")
        entry = item.entry if item.variable == "LD_LIBRARY_PATH" else _entry_of(item.path, search_path) \
            if relative and "/" in item.path else None
        if relative and entry is not None and entry not in taken:
            repair = _absolute_entry(item.path, entry, search_path, access)
        elif relative and entry is not None:
            repair = fix(remove_entry("LD_LIBRARY_PATH", entry))
        elif item.variable is not None and item.entry is not None:
            repair = fix(remove_entry(item.variable, item.entry))
        elif "/" not in item.path:  # a bare file name: the current folder, which only an empty entry stands for
            repair = fix(remove_entry("LD_LIBRARY_PATH", ""))
        elif relative:
            repair = fix(manual("remove the empty or relative search-path entry that gives it (in LD_LIBRARY_PATH: "
                                "a leading, trailing or doubled ':')"))
        else:
            repair = fix(manual(f"make {why.culprit} changeable by root and its owner only (chmod go-w, or chown "
                                "root), or install the library in a folder only you or root can write"))
        found.append(Finding(UNTRUSTED_LIBRARY, f"{why.why}: a program that loads it runs whatever code is put there "
                             "(cudnnload judged it from its bytes and did not run it)",
                             Subject(SubjectKind.FILE, item.path, item.library, variable=item.variable,
                                     entry=item.entry), repair))
    return tuple(found)


def _absolute_entry(path: str, entry: str, search_path: Sequence[str], access: Access) -> Fix:
    """A relative LD_LIBRARY_PATH ``entry`` that gives ``path``: written as the folder it names from here, where
    nobody else can change what that gives (the program keeps what it loads now, wherever it runs); else taken
    away."""
    gone = remove_entry("LD_LIBRARY_PATH", entry)
    here = path_.normpath(path_.join(access.cwd, entry or "."))
    if not access.cwd.startswith("/") or entry not in search_path or \
            access.replaceable(path_.join(here, path_.basename(path))) is not None:
        return fix(gone)
    return fix(set_variable("LD_LIBRARY_PATH", ":".join(here if e == entry else e for e in search_path)),
               alternatives=[gone])


def _entry_of(path: str, search_path: Sequence[str]) -> str | None:
    """The relative ``search_path`` entry whose folder holds the relative ``path`` (``./lib`` for
    ``lib/libcudnn.so.9``): the entry ld.so joined the name to."""
    folder = path_.normpath(path_.dirname(path) or ".")
    return next((e for e in search_path if not e.startswith("/") and path_.normpath(e or ".") == folder), None)


# --- set-user-ID programs ----------------------------------------------------------------

# is_dst: $ORIGIN not followed by an identifier character, or ${ORIGIN}
_ORIGIN = re.compile(r"\$(?:\{ORIGIN\}|ORIGIN(?![A-Za-z0-9_]))")


def setuid_findings(program: Requester, defaults: LinkerDefaults, found: str | None = None,
                    *, access: Access) -> tuple[Finding, ...]:
    """``origin-in-setuid`` for each entry of a set-user-ID, set-group-ID or file-capability program's
    DT_RPATH/DT_RUNPATH that secure-execution mode drops for its ``$ORIGIN``: an error when ``found`` (the
    cuDNN the program loads, as predicted) came from that entry, else a warning. ``program``: the main
    program, its ``$ORIGIN`` its resolved folder (`Requester.executable`)."""
    why = access.secure_mode(program.path)
    if why is None:
        return ()
    what, texts = ("DT_RUNPATH", program.runpath) if program.runpath else ("DT_RPATH", program.rpath)
    findings = []
    for text in dict.fromkeys(texts):
        if not _ORIGIN.search(text):
            continue
        folder = expand(text, program, defaults)
        # what secure mode keeps (rules secure-origin-position, secure-origin-trusted): linker.expand says
        if folder is None or expand(text, replace(program, program=True), defaults, secure=True) is not None:
            continue
        folder = folder.rstrip("/") or "/"
        tried = {path_.normpath(path_.join(folder, sub)) for sub in defaults.subdirs}  # with each hwcaps subfolder
        hit = found is not None and path_.normpath(path_.dirname(found)) in tried
        cause = (f"; {found}, the cuDNN it loads, is found through that entry and will not be found then: the "
                 "program does not start, or its dlopen fails") if hit else ""
        findings.append(Finding(
            ORIGIN_IN_SETUID,
            f"{why}: run by anyone else, glibc runs it in secure-execution mode (AT_SECURE) and "
            f"drops the entry '{text}' ({folder}) of its {what}, because $ORIGIN counts there only at the start "
            f"of an entry that expands under a system folder ({', '.join(defaults.default_dirs)}); LD_LIBRARY_PATH "
            f"is ignored then too{cause}", Subject(SubjectKind.FILE, program.path, variable=what, entry=text),
            fix(manual("install cuDNN under a system folder (and point the entry there), link with an absolute "
                       "path to a folder only root can write, or drop the bit (chmod u-s,g-s)")),
            severity=ERROR if hit else WARNING))
    return tuple(findings)
