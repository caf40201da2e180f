"""The package layout stays true: no import circles, and no import against the stage order.

Data flows one way: resolve -> judge -> loading -> dispatch -> diagnose, with the CLI and the report on
top and a few shared modules (the vocabulary of a verdict, errors, cachedir, files) at the bottom. The
judge decides, pure: it reads no file itself (the facts come from resolve). No module decides anything
by reading a finding's message. Every import in
``cudnnload/`` is read with ``ast`` (module level, inside functions and under ``TYPE_CHECKING``
alike: a type-only import is still a dependency a reader has to follow), resolved to the module
it names, and checked.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cudnnload"

# Lowest first. A module may import from its own level and any level below it.
BASE = ("cudnnload.codes", "cudnnload.verdicts", "cudnnload.errors", "cudnnload.cachedir", "cudnnload.files",
        "cudnnload.children")
STAGES = ("cudnnload.resolve", "cudnnload.judge", "cudnnload.loading", "cudnnload.dispatch", "cudnnload.diagnose")


def level(module: str) -> int:
    """0 for the shared modules, 1-5 for the stages in order, 6 for everything else at the top
    (``__init__``, ``cli``, ``report``)."""
    if module in BASE:
        return 0
    for index, stage in enumerate(STAGES, start=1):
        if module == stage or module.startswith(stage + "."):
            return index
    return len(STAGES) + 1


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: Mapping[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported cudnnload module, line) for every import statement in the file, wherever it is.
    ``from cudnnload import X`` imports the module ``cudnnload.X`` when there is one; a name the
    package root re-exports (``load``, ``conv``) counts as importing the root itself."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
                       if not (base == "cudnnload" and alias.name.startswith("__"))]  # the root's own constants
        else:
            continue
        for target in targets:
            if target == "cudnnload" or target.startswith("cudnnload."):
                yield target, node.lineno


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}, within the package."""
    known = modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges = graph.setdefault(name, {})
        for target, line in imports_of(name, path, known):
            while target not in known:  # "cudnnload.loading.gpu.checked" style: the module part
                target = target.rpartition(".")[0]
            if target != name:
                edges.setdefault(target, line)
    return graph


def against_the_order(graph: Mapping[str, Mapping[str, int]]) -> list[str]:
    return [f"{importer}:{line} imports {target} (level {level(target)} > {level(importer)})"
            for importer, edges in sorted(graph.items()) for target, line in sorted(edges.items())
            if level(target) > level(importer)]


def circles(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_against_the_stage_order() -> None:
    assert against_the_order(import_graph()) == []


def test_the_package_has_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_the_stage_check_catches_resolve_importing_from_loading() -> None:
    graph = {name: dict(edges) for name, edges in import_graph().items()}
    graph["cudnnload.resolve.catalog"]["cudnnload.loading.capi"] = 1
    assert against_the_order(graph) == [
        "cudnnload.resolve.catalog:1 imports cudnnload.loading.capi (level 3 > 1)"]


def test_the_circle_check_catches_two_modules_importing_each_other() -> None:
    graph = {name: dict(edges) for name, edges in import_graph().items()}
    graph["cudnnload.loading.cudadriver"]["cudnnload.loading.gpu"] = 1  # gpu imports cudadriver already
    assert circles(graph) == [["cudnnload.loading.cudadriver", "cudnnload.loading.gpu"]]


def test_a_stage_module_importing_a_name_the_root_re_exports_is_caught(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("from cudnnload import load, __version__\nfrom cudnnload import report\n")
    known = {**modules(), "cudnnload.loading.probe": source}
    found = dict(imports_of("cudnnload.loading.probe", source, known))
    assert found == {"cudnnload": 1, "cudnnload.report": 2}
    assert against_the_order({"cudnnload.loading.probe": found}) == [
        "cudnnload.loading.probe:1 imports cudnnload (level 6 > 3)",
        "cudnnload.loading.probe:2 imports cudnnload.report (level 6 > 3)"]


# The judge's modules decide from facts; the two that gather them first are its doors to resolve: `inventory`
# (every install) and `which` (what each name resolves to, then the install it leads to).
# What reads the file system or the process: never called by a judge module itself.
IO_CALLS = {"open", "os.stat", "os.lstat", "os.listdir", "os.scandir", "os.access", "os.readlink", "os.getcwd",
            "os.path.exists", "os.path.lexists", "os.path.isdir", "os.path.isfile", "os.path.islink",
            "os.path.realpath", "os.path.getsize", "os.path.samefile", "subprocess.run", "subprocess.Popen",
            "ctypes.CDLL", "os.environ.get"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def io_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = [f"{path.name}:{node.lineno} {_dotted(node.func)}" for node in ast.walk(tree)
             if isinstance(node, ast.Call) and _dotted(node.func) in IO_CALLS]
    found += [f"{path.name}:{node.lineno} import {alias.name}" for node in ast.walk(tree)
              if isinstance(node, ast.Import) for alias in node.names if alias.name in ("subprocess", "ctypes")]
    return found


# resolve's doors to the machine: a judge that called one would gather facts itself instead of judging the facts
# it is handed (the command's context, its installs, its `Access`)
GATHERING = {"context", "gather", "install_of", "build_install", "cudnn_distributions", "mapped_libraries",
             "open_cache", "find_consumers", "Access", "read_process", "observe", "this_python"}


def gathering_calls(path: Path) -> list[str]:
    return [f"{path.name}:{node.lineno} {_dotted(node.func)}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and _dotted(node.func).rpartition(".")[2] in GATHERING]


def judge_modules() -> dict[str, Path]:
    return {name: path for name, path in modules().items() if name.startswith("cudnnload.judge")}


def test_the_judge_reads_nothing_itself() -> None:
    judged = judge_modules()
    assert len(judged) >= 12
    assert [call for path in judged.values() for call in io_calls(path)] == []


def test_the_judge_gathers_nothing_itself() -> None:
    assert [call for path in judge_modules().values() for call in gathering_calls(path)] == []


def test_the_gathering_check_catches_a_judge_that_makes_its_own_context(tmp_path: Path) -> None:
    source = tmp_path / "rule.py"
    source.write_text("from cudnnload.resolve import discovery\n"
                      "def rule(env):\n    return discovery.context(env), discovery.gather([])\n")
    assert gathering_calls(source) == ["rule.py:3 discovery.context", "rule.py:3 discovery.gather"]


def test_no_resolve_record_holds_a_later_stages_verdict() -> None:
    """resolve's records are facts: no field typed ``Any`` (a slot for what a later stage says of them)."""
    found = [f"{path.name}:{node.lineno} {record.name}.{node.target.id}"
             for path in PACKAGE.joinpath("resolve").glob("*.py") for record in ast.walk(ast.parse(path.read_text()))
             if isinstance(record, ast.ClassDef) for node in record.body if isinstance(node, ast.AnnAssign)
             and isinstance(node.target, ast.Name) and "Any" in ast.unparse(node.annotation)]
    assert found == []


def test_the_io_check_catches_a_judge_that_stats_a_file(tmp_path: Path) -> None:
    source = tmp_path / "rule.py"
    source.write_text("import os\ndef rule(path):\n    return os.path.exists(path) or open(path)\n")
    assert io_calls(source) == ["rule.py:3 os.path.exists", "rule.py:3 open"]


def message_reads(path: Path) -> list[str]:
    """Places that parse a ``.message``: ``x in y.message``, ``y.message.startswith(...)`` and the like, or a
    regular expression run over one. What people read is never what code decides on."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
                isinstance(side, ast.Attribute) and side.attr == "message" for side in node.comparators):
            found.append(f"{path.name}:{node.lineno} in .message")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(
                node.func.value, ast.Attribute) and node.func.value.attr == "message" and node.func.attr in (
                "startswith", "endswith", "find", "index", "split", "partition", "rpartition", "count"):
            found.append(f"{path.name}:{node.lineno} .message.{node.func.attr}")
        elif isinstance(node, ast.Call) and _dotted(node.func).startswith("re.") and any(
                isinstance(arg, ast.Attribute) and arg.attr == "message" for arg in node.args):
            found.append(f"{path.name}:{node.lineno} {_dotted(node.func)}(.message)")
    return found


def test_no_module_decides_by_parsing_a_message() -> None:
    edge = {"cudnnload.report", "cudnnload.cli"}
    assert [read for name, path in modules().items() if name not in edge for read in message_reads(path)] == []


def test_the_message_check_catches_a_decision_on_a_message(tmp_path: Path) -> None:
    source = tmp_path / "rule.py"
    source.write_text("def soname(f):\n    return 'libz' in f.message or f.message.startswith('needs')\n")
    assert message_reads(source) == ["rule.py:2 in .message", "rule.py:2 .message.startswith"]


def test_every_stage_folder_says_what_it_answers_and_hands_on() -> None:
    for stage in STAGES:
        init = PACKAGE / stage.split(".")[1] / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "Hands" in doc or "hands" in doc, f"{init}: say what the stage hands on"


# --- the public paths stay --------------------------------------------------------------------------------

def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter that imports this checkout, warnings shown as errors' text."""
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent), "PYTHONWARNINGS": "always::DeprecationWarning"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def test_the_old_call_layer_path_answers_with_a_warning() -> None:
    child = run_python("""
        from cudnnload import dispatch
        from cudnnload.dispatch import dispatcher
        assert dispatch.conv is dispatcher.conv
        print("ok")
    """)
    assert child.stdout.strip() == "ok", child.stderr
    assert "cudnnload.dispatch.conv has moved to cudnnload.dispatch.dispatcher.conv" in child.stderr


def test_the_plugin_interface_is_the_public_api_and_no_alias_module_is_left() -> None:
    child = run_python("""
        import importlib, cudnnload
        from cudnnload import ConvSpec, ActivationSpec, TensorRef, Registry
        import cudnnload.dispatch.backends, cudnnload.dispatch.tensors
        assert ConvSpec is cudnnload.dispatch.backends.ConvSpec and TensorRef is cudnnload.dispatch.tensors.TensorRef
        for old in ("backends", "tensors", "status", "handles", "logs"):
            try:
                importlib.import_module("cudnnload." + old)
            except ModuleNotFoundError:
                continue
            raise AssertionError("cudnnload." + old + " is still there")
        print("ok")
    """)
    assert child.stdout.strip() == "ok", child.stderr


def test_cudnnload_load_stays_the_function_whatever_was_imported_first() -> None:
    # the loading stage's folder is not called load/: importing it would make cudnnload.load a module
    child = run_python("""
        import cudnnload, cudnnload.loading.loader, cudnnload.dispatch.warmup
        assert callable(cudnnload.load) and cudnnload.load is cudnnload.preload
        assert cudnnload.load.__module__ == "cudnnload.dispatch.warmup"
        print("ok")
    """)
    assert child.stdout.strip() == "ok", child.stderr


ONE_CONTEXT = """
    import collections, sys, tempfile
    from click.testing import CliRunner
    import cudnnload.resolve.discovery as discovery
    made = collections.Counter()
    original = discovery.context

    def counted(environ=None, **facts):
        world = (tuple(sorted((environ if environ is not None else {"": "os.environ"}).items())),
                 tuple(sorted((k, repr(v)) for k, v in facts.items() if k not in ("cache", "use_cache"))))
        made[world] += 1
        return original(environ, **facts)

    import cudnnload.cli, cudnnload.diagnose.doctor, cudnnload.diagnose.targets, cudnnload.diagnose.which
    import cudnnload.diagnose.inventory, cudnnload.diagnose.observe, cudnnload.diagnose.scoped, cudnnload.loading.plans
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("cudnnload") and getattr(module, "context", None) is original:
            module.context = counted
    discovery.context = counted
    folder = tempfile.mkdtemp()
    for command in (["doctor"], ["doctor", folder], ["inspect", folder], ["which"], ["doctor", "--", "true"]):
        made.clear()
        result = CliRunner().invoke(cudnnload.cli.make_cli(), command)
        twice = {world: n for world, n in made.items() if n > 1}
        print(" ".join(command), result.exit_code, sum(made.values()), len(twice))
"""


def test_each_command_builds_one_context_per_world() -> None:
    """One context per command for the world it judges: a second one of the same environment and facts would
    read the machine twice, and could disagree with the first (a file changed between). Contexts of other
    worlds (the environment a fix would make, a process holding a set) are that world's own."""
    child = run_python(ONE_CONTEXT)
    lines = [line.split() for line in child.stdout.splitlines()]
    assert len(lines) == 5, child.stderr
    for *command, code, made, twice in lines:
        assert code in ("0", "1") and int(made) >= 1 and twice == "0", (command, code, made, twice, child.stderr)

