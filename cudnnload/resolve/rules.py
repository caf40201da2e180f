"""glibc's rules for which file a library name maps to, and why a load fails: one entry per rule, read from
glibc's source (glibc 2.28 to 2.41: ``elf/rtld.c``, ``elf/dl-load.c``, ``elf/dl-cache.c``, ``elf/dl-hwcaps.c``,
``elf/dl-open.c``, ``elf/dl-version.c``, ``elf/dl-deps.c``, ``elf/dl-object.c``, ``elf/get-dynamic-info.h``,
``sysdeps/unix/sysv/linux/dl-origin.c``), each with the versions it holds for.

The linker model (`linker`, `process`) cites these ids: every attempt, dropped entry and outcome records the rule
that decided it, so a report can say "passed over by rule open-eacces". A behaviour that changed between
versions is two rules with adjacent ranges (``relative-entry-not-folder-ends-list`` until 2.38,
``relative-entry-not-folder-passed`` from 2.39); the model takes the one that holds for the glibc it models and,
for a glibc outside `KNOWN`, says it cannot decide (`undecided`) rather than guess.

Each rule that holds for glibc 2.36 is checked against the real ``ld.so`` of the development machine
(tests/test_rules.py, fixtures/glibc/); `Rule.untested` says why the others cannot be.
"""

from __future__ import annotations

import re

from cudnnload.resolve.records import record

Glibc = tuple[int, int]

# The versions whose source was read for this table (bminor/glibc tags glibc-2.28 .. glibc-2.41).
OLDEST: Glibc = (2, 28)
NEWEST: Glibc = (2, 41)
KNOWN: tuple[Glibc, Glibc] = (OLDEST, NEWEST)


@record  # (not a dataclass: linker imports the table on `which`'s path)
class Rule:
    """One rule of glibc's loader: what it does, where glibc does it, and for which glibc versions."""

    id: str
    does: str  # one sentence
    source: str  # the glibc source file
    function: str  # the function (or macro) that does it
    since: Glibc = OLDEST  # the first version it holds for (OLDEST: 2.28 or earlier)
    until: Glibc | None = None  # the last version it holds for; None: still in NEWEST
    untested: str | None = None  # why no test runs it against a real ld.so (None: tests/test_rules.py does)

    def holds(self, glibc: Glibc) -> bool:
        return self.since <= glibc and (self.until is None or glibc <= self.until)

    @property
    def versions(self) -> str:
        first = "" if self.since == OLDEST else _dotted(self.since)
        last = "" if self.until is None else _dotted(self.until)
        return f"{first or '2.28'}-{last or '2.41'}" if first or last else "all"


def _dotted(version: Glibc) -> str:
    return f"{version[0]}.{version[1]}"


_START, _LOAD, _CACHE, _OPEN = "elf/rtld.c", "elf/dl-load.c", "elf/dl-cache.c", "elf/dl-open.c"
_DEPS, _VERSION, _HWCAPS = "elf/dl-deps.c", "elf/dl-version.c", "elf/dl-hwcaps.c"
_EXPLICIT = "only with an explicit `ld.so PROGRAM` invocation, which the model is not given"

RULES: tuple[Rule, ...] = (
    # --- the process's start (rtld.c dl_main) ------------------------------------------------------------------
    Rule("secure-mode", "A program started with AT_SECURE (set-user-ID or set-group-ID and run by another user, "
         "or with file capabilities) runs the loader in secure-execution mode (__libc_enable_secure).",
         "sysdeps/unix/sysv/linux/dl-sysdep.c (elf/dl-sysdep.c before 2.36)", "_dl_sysdep_start"),
    Rule("secure-ignores-ld-library-path", "In secure mode LD_LIBRARY_PATH is not read and is removed from the "
         "environment.", _START, "process_envvars (process_envvars_secure from 2.39)"),
    Rule("ld-library-path-split", "LD_LIBRARY_PATH is split on ':' and ';', each element's DSTs expanded with the "
         "program's values, trailing '/' removed, and a folder listed twice searched once.", _LOAD,
         "_dl_init_paths, fillin_rpath"),
    Rule("library-path-option", "`ld.so --library-path PATH PROGRAM` searches PATH instead of LD_LIBRARY_PATH.",
         _START, "dl_main", untested=_EXPLICIT),
    Rule("empty-entry-is-cwd", "An empty element of LD_LIBRARY_PATH, DT_RPATH or DT_RUNPATH (a leading, trailing "
         "or doubled ':') is the current directory.", _LOAD, "fillin_rpath"),
    Rule("relative-entry", "A relative element is opened from the current directory at each lookup and is never "
         "remembered as missing.", _LOAD, "fillin_rpath, open_path"),
    Rule("tilde-not-expanded", "'~' is an ordinary character: '~/lib' is the folder '~/lib' under the current "
         "directory, never the home folder.", _LOAD, "fillin_rpath"),
    Rule("ld-preload", "LD_PRELOAD's entries, split on spaces and ':' (a tab belongs to the name; an empty entry or "
         "one of PATH_MAX bytes or more is skipped), are loaded before the program's DT_NEEDED.", _START,
         "handle_preload_list"),
    Rule("preload-option", "`ld.so --preload LIST PROGRAM` preloads LIST, split as LD_PRELOAD, after LD_PRELOAD's "
         "entries.", _START, "dl_main", since=(2, 30), untested=_EXPLICIT),
    Rule("ld-so-preload", "/etc/ld.so.preload, when readable, preloads its entries (split on spaces, tabs, newlines "
         "and ':', '#' starting a comment) after LD_PRELOAD's, in secure mode too.", _START, "dl_main"),
    Rule("preload-not-loadable", "A preload that cannot be found or loaded is skipped with \"ERROR: ld.so: object "
         "'E' from SOURCE cannot be preloaded (REASON): ignored.\" and the program starts.", _START, "do_preload"),
    Rule("preload-secure-filter", "In secure mode an LD_PRELOAD entry with a '/', or of NAME_MAX bytes or more, is "
         "ignored without a message (an /etc/ld.so.preload entry is not).", _START, "dso_name_valid_for_suid"),
    Rule("preload-secure-setuid-only", "In secure mode a preload named without '/' is only taken from a file with the "
         "set-user-ID bit; any other file is passed over as if absent.", _LOAD, "open_path (__RTLD_SECURE)"),
    Rule("preload-secure-no-cache", "In secure mode a preload named without '/' is not looked up in ld.so.cache.",
         _LOAD, "_dl_map_object (__RTLD_SECURE)"),
    Rule("preload-as-program", "A preload is looked up as a DT_NEEDED of the program would be (its DT_RPATH or "
         "DT_RUNPATH); DSTs of an entry with a '/' take the program's values, an entry without one is searched for "
         "literally, '$' and all.", _START, "do_preload, _dl_map_object"),
    Rule("start-order", "At start the program comes first, then the preloads, then DT_NEEDED entries breadth first "
         "(the program's, each preload's, then theirs); each is looked up from the object that needs it.", _DEPS,
         "_dl_map_object_deps"),
    Rule("needed-not-loadable", "A DT_NEEDED that cannot be loaded at start stops the program before main: \"error "
         "while loading shared libraries: NAME: REASON\", exit status 127.", _DEPS, "_dl_map_object_deps"),
    Rule("needed-dst", "DSTs in a DT_NEEDED name take the values of the object that needs it; a DST without a value "
         "fails the load: \"empty dynamic string token substitution\".", _DEPS, "expand_dst"),
    Rule("needed-dst-secure", "In secure mode a DT_NEEDED name holding a DST fails the load: \"DST not allowed in "
         "SUID/SGID programs\".", _DEPS, "expand_dst"),
    # --- names already in the process --------------------------------------------------------------------------
    Rule("already-loaded", "A name equal to an object's path as loaded, a name it was loaded as, or its DT_SONAME "
         "is that object: no file is searched or opened.", _LOAD, "_dl_map_object, _dl_name_match_p"),
    Rule("same-file", "A file found that is an object already mapped under another path (same device and inode: a "
         "hard link, another path to it) is that object, which now answers the new name too.", _LOAD,
         "_dl_map_object_from_fd"),
    # --- where a name is looked for (dl-load.c _dl_map_object) ------------------------------------------------
    Rule("direct-path", "A name with a '/' is opened as written (from the current directory when relative), after "
         "DST expansion with the requester's values; nothing is searched.", _LOAD, "_dl_map_object"),
    Rule("rpath", "DT_RPATH of the requester, then of the object whose DT_NEEDED loaded it and on up, then of the "
         "program, first of all; not at all when the requester has DT_RUNPATH.", _LOAD, "_dl_map_object"),
    Rule("rpath-ignored-beside-runpath", "An object with DT_RUNPATH has its DT_RPATH ignored, also where it stands "
         "in the chain of another requester.", "elf/get-dynamic-info.h", "elf_get_dynamic_info"),
    Rule("ld-library-path", "LD_LIBRARY_PATH comes after the DT_RPATHs and before the requester's DT_RUNPATH.",
         _LOAD, "_dl_map_object"),
    Rule("runpath", "DT_RUNPATH of the requester only (never inherited), after LD_LIBRARY_PATH.", _LOAD,
         "_dl_map_object"),
    Rule("ld-cache", "/etc/ld.so.cache comes after DT_RUNPATH.", _LOAD, "_dl_map_object"),
    Rule("default-dirs", "The system folders compiled into ld.so come last (Debian x86-64: /lib/x86_64-linux-gnu, "
         "/usr/lib/x86_64-linux-gnu, /lib, /usr/lib).", _LOAD, "_dl_map_object, _dl_init_paths"),
    Rule("nodeflib", "A requester with DF_1_NODEFLIB skips ld.so.cache entries in the system folders, and the "
         "system folders.", _LOAD, "_dl_map_object"),
    Rule("dlopen-caller", "dlopen searches with the DT_RPATH/DT_RUNPATH of the object holding the call (the program "
         "when none does); the object opened keeps no link to it, so what it NEEDs inherits only its own and the "
         "program's DT_RPATH.", _OPEN, "dl_open_worker_begin"),
    Rule("dlopen-name-dst", "A dlopen name with a '/' has its DSTs expanded with the caller's values; one without a "
         "'/' is searched for literally.", _OPEN, "dl_open_worker_begin, _dl_map_object"),
    Rule("inhibit-cache-option", "`ld.so --inhibit-cache PROGRAM` never reads ld.so.cache.", _START, "dl_main",
         untested=_EXPLICIT),
    Rule("inhibit-rpath-option", "`ld.so --inhibit-rpath LIST PROGRAM`: the objects whose name as loaded is in LIST "
         "have no DT_RPATH or DT_RUNPATH (ignored in secure mode).", _LOAD, "decompose_rpath", untested=_EXPLICIT),
    Rule("not-found", "When nothing is found the load fails: \"cannot open shared object file: E\", E the error of "
         "the last open() (No such file or directory; Permission denied for a direct path it may not read).",
         _LOAD, "_dl_map_object"),
    Rule("rtld-strerror", "What ld.so prints at start spells out only six errno values (ENOMEM, EINVAL, ENOENT, "
         "EPERM, EIO, EACCES) and writes \"Error N\" for any other; dlerror spells out all.", "elf/dl-minimal.c",
         "__strerror_r"),
    Rule("wrong-class-error", "When nothing is found but a file of the other ELF class was passed over, the load "
         "fails with \"wrong ELF class: ELFCLASS32\".", _LOAD, "_dl_map_object"),
    # --- $ORIGIN and the other DSTs --------------------------------------------------------------------------
    Rule("origin-program", "The program's $ORIGIN is the folder of /proc/self/exe, links resolved (LD_ORIGIN_PATH "
         "only when /proc cannot tell, not in secure mode).", "sysdeps/unix/sysv/linux/dl-origin.c",
         "_dl_get_origin"),
    Rule("origin-library", "A library's $ORIGIN is the folder of the path it was opened as, a symlink not resolved, "
         "a relative one joined to the current directory.", "elf/dl-object.c", "_dl_new_object"),
    Rule("origin-explicit-invocation", "Under `ld.so PROGRAM` the program's $ORIGIN is the folder of PROGRAM as "
         "written, links not resolved (2.42 makes it canonical).", "elf/dl-object.c", "_dl_new_object",
         untested=_EXPLICIT),
    Rule("dst-tokens", "$ORIGIN, $LIB and $PLATFORM (or ${ORIGIN}...) are replaced; followed by a letter, digit or "
         "'_' the name is no token ($ORIGINAL stays), and any other $NAME stays as written.", _LOAD,
         "is_dst, _dl_dst_substitute"),
    Rule("dst-lib", "$LIB is ld.so's compiled-in library folder (Debian x86-64: lib/x86_64-linux-gnu).", _LOAD,
         "_dl_dst_substitute (DL_DST_LIB)"),
    Rule("dst-platform", "$PLATFORM is the kernel's AT_PLATFORM (x86_64).", _LOAD, "_dl_dst_substitute"),
    Rule("dst-no-value", "An element whose DST has no value is dropped from its list; a single name with one "
         "cannot be opened.", _LOAD, "_dl_dst_substitute, fillin_rpath",
         untested="every DST has a value here: /proc/self/exe gives $ORIGIN and the kernel gives AT_PLATFORM"),
    Rule("secure-origin-position", "In secure mode $ORIGIN counts only as the whole first component of an element "
         "($ORIGIN or $ORIGIN/...); an element using it elsewhere is dropped.", _LOAD, "_dl_dst_substitute"),
    Rule("secure-origin-trusted", "In secure mode an element of the program's own DT_RPATH/DT_RUNPATH expanded from "
         "$ORIGIN is kept only when it lies, normalized, under a system folder.", _LOAD,
         "_dl_dst_substitute, is_trusted_path_normalize"),
    # --- trying one folder (open_path) and one file (open_verify, _dl_map_object_from_fd) ----------------------
    Rule("hwcaps-subdirs", "Each search folder is tried through glibc-hwcaps/<level>/ first, the levels the CPU "
         "supports best first (x86-64-v4, -v3, -v2).", _HWCAPS, "_dl_important_hwcaps", since=(2, 33)),
    Rule("legacy-hwcaps-subdirs", "Each search folder is tried through its legacy subfolders first: tls/, the "
         "platform and the hwcap names the CPU has and their combinations (masked by glibc.cpu.hwcap_mask).",
         _HWCAPS, "_dl_important_hwcaps", until=(2, 36)),
    Rule("hwcaps-options", "`ld.so --glibc-hwcaps-prepend/--glibc-hwcaps-mask` change the glibc-hwcaps subfolders "
         "tried.", _START, "dl_main", since=(2, 33), untested=_EXPLICIT),
    Rule("folder-missing-remembered", "A search folder (with one hwcaps subfolder) found missing is not tried again "
         "in the process; a list none of whose folders exists is dropped.", _LOAD, "open_path"),
    Rule("root-folder-forgotten", "The folder '/' is marked missing after its first try that finds nothing there "
         "(bug 30435), so no later lookup tries it again.", _LOAD, "open_path", until=(2, 37),
         untested="needs libraries in / itself"),
    Rule("open-enoent", "A candidate that does not exist, or a symlink to nothing, is passed over.", _LOAD,
         "open_path"),
    Rule("open-eacces", "A candidate the user may not open (its mode, or a folder on the way it may not search) is "
         "passed over.", _LOAD, "open_path"),
    Rule("absolute-entry-not-folder", "An absolute element that is a file, not a folder, is remembered as missing "
         "and passed over.", _LOAD, "open_path"),
    Rule("relative-entry-not-folder-ends-list", "A relative element that is a file (ENOTDIR) ends the search of its "
         "list there.", _LOAD, "open_path", until=(2, 38)),
    Rule("relative-entry-not-folder-passed", "A relative element that is a file (ENOTDIR) is passed over (bug "
         "31035).", _LOAD, "open_path", since=(2, 39)),
    Rule("open-error-ends-list", "Another open() error in an existing folder (a symlink loop, a socket, a name too "
         "long) ends the search of that list; the lookup goes on with the next list.", _LOAD, "open_path"),
    Rule("skip-other-class", "An ELF file of the other class is passed over.", _LOAD, "open_verify"),
    Rule("skip-other-machine", "An ELF file for another machine is passed over.", _LOAD,
         "open_verify (elf_machine_matches_host)"),
    Rule("fatal-too-short", "A file shorter than an ELF header ends the lookup: \"file too short\".", _LOAD,
         "open_verify"),
    Rule("fatal-not-elf", "A file that is not ELF ends the lookup: \"invalid ELF header\".", _LOAD, "open_verify"),
    Rule("fatal-bad-header", "An ELF header of another data encoding, version, OS ABI, type or program-header size "
         "ends the lookup.", _LOAD, "open_verify"),
    Rule("fatal-unreadable", "Program headers past the end, or a read error (a folder), end the lookup: \"cannot "
         "read file data\".", _LOAD, "open_verify"),
    Rule("fatal-executable", "An ET_EXEC program loaded as a library fails: \"cannot dynamically load "
         "executable\".", _LOAD, "_dl_map_object_from_fd"),
    Rule("fatal-pie", "A position-independent program (DF_1_PIE) loaded as a library fails: \"cannot dynamically "
         "load position-independent executable\".", _LOAD, "_dl_map_object_from_fd", since=(2, 30)),
    Rule("fatal-no-dynamic", "A shared object without a dynamic segment (a debug-info file) fails: \"object file "
         "has no dynamic section\".", _LOAD, "_dl_map_object_from_fd"),
    Rule("fatal-noopen", "dlopen of an object marked DF_1_NOOPEN fails: \"shared object cannot be dlopen()ed\".",
         _LOAD, "_dl_map_object_from_fd"),
    Rule("execstack-allowed", "An object whose PT_GNU_STACK asks for an executable stack makes the stacks "
         "executable, at start and in dlopen.", _LOAD, "_dl_map_object_from_fd", until=(2, 40)),
    Rule("execstack-refused-dlopen", "dlopen of an object whose PT_GNU_STACK asks for an executable stack fails: "
         "\"cannot enable executable stack as shared object requires\".", _LOAD, "_dl_map_object_from_fd",
         since=(2, 41)),
    Rule("segments-past-end", "A PT_LOAD segment reaching past the end of the file is mapped, and the process dies "
         "of SIGBUS when the loader touches it.", "elf/dl-map-segments.h", "_dl_map_segments"),
    Rule("fatal-noexec-mount", "A file on a file system mounted noexec passes open_verify, and the kernel refuses "
         "the mapping of its code (EPERM): \"failed to map segment from shared object\"; the lookup ends there.",
         "elf/dl-map-segments.h", "_dl_map_segments",
         untested="a scene has no mount of its own: tests/test_linker.py mounts a noexec tmpfs (root) for it"),
    Rule("fifo-blocks", "A FIFO where a library is looked for blocks the open() until a writer comes: the lookup "
         "hangs.", _LOAD, "open_verify"),
    Rule("device-read", "A character or block device is opened and read, and what it gives is judged as a file's "
         "header.", _LOAD, "open_verify", untested="needs a device node in a search folder"),
    Rule("isa-level", "An object marked for a higher x86 ISA level than the CPU's fails: \"CPU ISA level is lower "
         "than required\".", "sysdeps/x86/dl-prop.h", "dl_isa_level_check", since=(2, 33),
         untested="this CPU supports every level (x86-64-v4)"),
    # --- /etc/ld.so.cache (dl-cache.c) ----------------------------------------------------------------------
    Rule("ld-cache-new-format", "A glibc-ld.so.cache1.1 cache is read; one whose endianness flag is another "
         "machine's is ignored.", _CACHE, "_dl_load_cache_lookup"),
    Rule("ld-cache-old-format", "An ld.so-1.7.0 cache is read; a new-format cache inside it is read instead.",
         _CACHE, "_dl_load_cache_lookup"),
    Rule("ld-cache-flags", "Cache entries of another ABI (flags) are passed over.", _CACHE,
         "search_cache (_dl_cache_check_flags)"),
    Rule("ld-cache-hwcaps-entries", "An entry from a glibc-hwcaps subfolder of a level the CPU supports is taken "
         "before the plain entry, the best level first.", _CACHE, "search_cache", since=(2, 33)),
    Rule("ld-cache-legacy-hwcap", "An entry from a legacy subfolder (tls/, x86_64/) is taken when its hwcap bits are "
         "the CPU's (masked) and the platform's, before the plain entry.", _CACHE, "search_cache", until=(2, 39)),
    Rule("ld-cache-entry-opened", "The path the cache gives is opened and checked as a candidate: absent or passed "
         "over, the lookup goes on with the default folders; damaged, it fails.", _LOAD, "_dl_map_object"),
    # --- version needs (dl-version.c) -----------------------------------------------------------------------
    Rule("version-needed", "Each version an object needs from a file (DT_VERNEED) must be defined by the object "
         "answering that file's name, else \"version `V' not found (required by F)\": at start each is printed "
         "and the program exits with status 1; a dlopen fails.", _VERSION, "_dl_check_map_versions, match_symbol"),
    Rule("version-no-verdef", "A provider without version definitions satisfies every need (at start with the "
         "warning \"no version information available (required by F)\").", _VERSION, "match_symbol"),
    Rule("version-weak", "A weak version need (VER_FLG_WEAK) that is not met is accepted.", _VERSION,
         "match_symbol", untested="gcc and binutils here write no weak version needs"),
    Rule("dt-relr-abi", "An object with DT_RELR must need GLIBC_ABI_DT_RELR: \"DT_RELR without GLIBC_ABI_DT_RELR "
         "dependency\".", _VERSION, "_dl_check_map_versions", since=(2, 36),
         untested="binutils writes the GLIBC_ABI_DT_RELR need with every DT_RELR"),
)

BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def rule(rule_id: str) -> Rule:
    """The rule named ``rule_id`` (KeyError for an id the table does not have)."""
    return BY_ID[rule_id]


def holds(rule_id: str, glibc: Glibc) -> bool:
    return BY_ID[rule_id].holds(glibc)


def glibc_version(text: str | None) -> Glibc | None:
    """``(2, 36)`` from ``os.confstr("CS_GNU_LIBC_VERSION")`` ("glibc 2.36") or "2.36"; None otherwise."""
    match = re.search(r"(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def undecided(glibc: Glibc | None) -> str | None:
    """Why the model cannot decide for this loader (None when it can): not glibc, or a version whose source this
    table was not read from; the real loader settles it."""
    if glibc is None:
        return ("the dynamic loader is not a glibc this model knows: run the program with LD_DEBUG=libs to see what "
                "it opens")
    if not OLDEST <= glibc <= NEWEST:
        return (f"glibc {_dotted(glibc)} is outside the versions whose rules cudnnload knows ({_dotted(OLDEST)} to "
                f"{_dotted(NEWEST)}): run the program with LD_DEBUG=libs to see what ld.so opens")
    return None
