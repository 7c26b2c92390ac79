"""The dependency rules of the layout (ARCHITECTURE.md), read from the source with `ast`, nothing imported:

- no import cycle among rag_core's modules, nor among its subpackages (rag_core/agent/, rag_core/store/, ...: one
  module of a subpackage importing one of another makes the first depend on the second; a leaf shared by two
  subpackages lives at the top, as rag_core/phrases.py, names.py, scope.py and identity.py do);
- only entry points import `rag_core.bootstrap` (the CLI, the HTTP service, `python -m rag_core`; outside the
  package: app.py, pages/, ui/, bench/, tests/): everything else is handed what bootstrap builds;
- the ports and the records that cross them import no adapter.

An import counts wherever it is written: at the top, inside a function, under `if TYPE_CHECKING:` (a type
checker follows those too, and a lazy import only hides a cycle until someone moves it). Importing `a.b.c`
also runs the packages `a` and `a.b` (their `__init__`), so it is an import of those too, except of the
importing module's own packages, which Python has always loaded before it. Each test lists every offence at
once, with the lines that make it, so one run shows all there is to fix.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "rag_core"
BOOTSTRAP = f"{PACKAGE}.bootstrap"
ADAPTER_PACKAGES = ("embedding", "rerank", "clients", "store", "agent")


@dataclass
class Graph:
    root: Path
    files: dict[str, Path]  # module -> its file
    imports: dict[str, dict[str, int]] = field(default_factory=dict)  # module -> {module it imports: first line}

    def where(self, module: str, target: str) -> str:
        return f"{self.files[module].relative_to(self.root).as_posix()}:{self.imports[module][target]}"


def module_files(root: Path, package: str) -> dict[str, Path]:
    files = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def imported(node: ast.Import | ast.ImportFrom, module: str, files: dict[str, Path]) -> list[str]:
    """The modules of the package one import statement names explicitly."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in files]
    if node.level:  # relative: from the module's package, one level up per extra dot
        base = module.split(".") if files[module].name == "__init__.py" else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source not in files and not any(f"{source}.{alias.name}" in files for alias in node.names):
        return []  # not ours (typing, numpy, ...)
    found = [f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in files]
    if source in files and len(found) < len(node.names):  # a name defined in `source` itself
        found.append(source)
    return found


def build_graph(root: Path, package: str) -> Graph:
    g = Graph(root, module_files(root, package))
    for module, path in g.files.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in imported(node, module, g.files):
                parts = target.split(".")
                # The packages on the way run first, unless they are the importing module's own.
                for i in range(1, len(parts) + 1):
                    name = ".".join(parts[:i])
                    own = module == name or module.startswith(name + ".")
                    if name in g.files and (name == target or not own) and name != module:
                        edges.setdefault(name, node.lineno)
        g.imports[module] = edges
    return g


@cache
def graph() -> Graph:
    return build_graph(ROOT, PACKAGE)


def strongly_connected(imports: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's components with more than one module (each a set of modules importing one another), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in imports:
        if start in index:
            continue
        work = [(start, iter(sorted(imports[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(imports[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components)


def shortest_cycle(imports: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """One cycle through the component's first module, shortest first: [a, b, ..., a]."""
    members, start = set(component), component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(imports[node]):
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if target in members and target not in came_from:
                came_from[target] = node
                queue.append(target)
    raise AssertionError(f"no cycle through {start}")  # a strongly connected component always has one


def describe_cycle(g: Graph, component: list[str]) -> str:
    cycle = shortest_cycle(g.imports, component)
    steps = "; ".join(f"{g.where(a, b)} imports {b}" for a, b in zip(cycle, cycle[1:]))
    return f"{len(component)} modules ({', '.join(component)}): {' -> '.join(cycle)} ({steps})"


def subpackage(g: Graph, module: str) -> str | None:
    """The subpackage of the package's top (rag_core.store for rag_core.store.milvus.writes) a module is in, or None
    for the top's own modules."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and ".".join(parts[:2]) in g.files and \
        g.files[".".join(parts[:2])].name == "__init__.py" else None


def subpackage_imports(g: Graph) -> tuple[dict[str, dict[str, int]], dict[tuple[str, str], str]]:
    """Subpackage -> the subpackages its modules import, and for each such pair the first import that makes it."""
    imports: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], str] = {}
    for module in sorted(g.imports):
        source = subpackage(g, module)
        if source is None:
            continue
        imports.setdefault(source, {})
        for target in sorted(g.imports[module], key=lambda t: (-t.count("."), t)):  # the module itself first
            into = subpackage(g, target)
            if into is not None and into != source:
                imports[source].setdefault(into, 0)
                first.setdefault((source, into), f"{g.where(module, target)} imports {target}")
    for targets in list(imports.values()):
        for target in targets:
            imports.setdefault(target, {})
    return imports, first


def is_entry_point(module: str) -> bool:
    return (module in (f"{PACKAGE}.cli", f"{PACKAGE}.__main__", BOOTSTRAP)
            or module.startswith((f"{PACKAGE}.cli.", f"{PACKAGE}.service.")))


# ------------------------------------------------------------------------------------------------ the rules
def test_no_import_cycle() -> None:
    g = graph()
    cycles = [describe_cycle(g, component) for component in strongly_connected(g.imports)]
    assert not cycles, "Import cycles among rag_core's modules (every one found):\n" + "\n".join(cycles)


def test_no_import_cycle_among_subpackages() -> None:
    imports, first = subpackage_imports(graph())
    cycles = []
    for component in strongly_connected(imports):
        cycle = shortest_cycle(imports, component)
        cycles.append(" -> ".join(cycle) + " (" + "; ".join(first[a, b] for a, b in zip(cycle, cycle[1:])) + ")")
    assert not cycles, "Import cycles among rag_core's subpackages (every one found):\n" + "\n".join(cycles)


def test_only_entry_points_import_bootstrap() -> None:
    g = graph()
    offenders = [f"{module} ({g.where(module, BOOTSTRAP)})" for module in sorted(g.imports)
                 if BOOTSTRAP in g.imports[module] and not is_entry_point(module)]
    assert not offenders, ("Only entry points (rag_core/cli*, rag_core/service/, rag_core/__main__.py) may import "
                           "rag_core.bootstrap; these should be handed what they need instead:\n"
                           + "\n".join(offenders))


def test_the_ports_and_their_records_import_no_adapter() -> None:
    g = graph()
    adapters = tuple(f"{PACKAGE}.{name}" for name in ADAPTER_PACKAGES)
    offenders = [f"{module} imports {target} ({g.where(module, target)})"
                 for module in (f"{PACKAGE}.ports", f"{PACKAGE}.records")
                 for target in sorted(g.imports[module])
                 if target in adapters or target.startswith(tuple(a + "." for a in adapters))]
    assert not offenders, "The ports depend on no adapter (a record that crosses a port is in records.py):\n" + \
        "\n".join(offenders)


# ------------------------------------------------------------------------------------------------ the checker
def test_a_cycle_between_subpackages_is_found_without_one_between_modules(tmp_path: Path) -> None:
    g = graph_of(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top.py": "from .a import one\n",  # the top's own modules belong to no subpackage
        "pkg/a/__init__.py": "",
        "pkg/a/one.py": "from ..b.two import x\n",
        "pkg/a/three.py": "",
        "pkg/b/__init__.py": "",
        "pkg/b/two.py": "",
        "pkg/b/four.py": "from ..a import three\n",
    })
    assert strongly_connected(g.imports) == []
    imports, first = subpackage_imports(g)
    assert imports == {"pkg.a": {"pkg.b": 0}, "pkg.b": {"pkg.a": 0}}
    assert strongly_connected(imports) == [["pkg.a", "pkg.b"]]
    assert first["pkg.a", "pkg.b"] == "pkg/a/one.py:1 imports pkg.b.two"
    assert first["pkg.b", "pkg.a"] == "pkg/b/four.py:1 imports pkg.a.three"



def graph_of(root: Path, files: dict[str, str]) -> Graph:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return build_graph(root, "pkg")


def test_imports_are_found_wherever_they_are_written(tmp_path: Path) -> None:
    g = graph_of(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n",
        "pkg/b.py": "def f():\n    from . import c\n    import pkg.sub.d\n",
        "pkg/c.py": "from .sub import d, NAME\nimport numpy\n",
        "pkg/sub/__init__.py": "from .. import a\n",
        "pkg/sub/d.py": "from ..c import thing\nfrom pkg import b\n",
    })
    # pkg.sub.d imports pkg.b but not pkg, its own package; pkg.b imports pkg.sub on the way to pkg.sub.d.
    assert {m: set(t) for m, t in g.imports.items()} == {
        "pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c", "pkg.sub", "pkg.sub.d"}, "pkg.c": {"pkg.sub", "pkg.sub.d"},
        "pkg.sub": {"pkg.a"}, "pkg.sub.d": {"pkg.b", "pkg.c"}}


def test_every_cycle_is_found_with_its_lines(tmp_path: Path) -> None:
    g = graph_of(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "def late():\n    from .b import f\n",  # a function-level import still counts
        "pkg/b.py": "from .c import g\n",
        "pkg/c.py": "from pkg.a import late\n",
        "pkg/sub/__init__.py": "from .d import x\n",  # a package importing its own modules: no cycle
        "pkg/sub/d.py": "from . import k\n",
        "pkg/sub/k.py": "",
        "pkg/e.py": "import pkg.f\n",
        "pkg/f.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import E\n",
    })
    components = strongly_connected(g.imports)
    assert components == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.e", "pkg.f"]]
    assert describe_cycle(g, components[0]).endswith(
        "pkg.a -> pkg.b -> pkg.c -> pkg.a (pkg/a.py:2 imports pkg.b; pkg/b.py:1 imports pkg.c; "
        "pkg/c.py:1 imports pkg.a)")
    assert describe_cycle(g, components[1]).endswith("pkg.e -> pkg.f -> pkg.e (pkg/e.py:1 imports pkg.f; "
                                                     "pkg/f.py:3 imports pkg.e)")
