"""The import graph keeps its layers (docs/architecture.md): no new import circle, no new import from a
lower layer into a higher one, and the loop and the review stay peers that never import each other.

Every import counts — top-level, inside a function, under TYPE_CHECKING — because each one is a
dependency a reader has to hold in mind. Run it as a script to print the graph's standing:

    python tests/unit/test_architecture.py [repo root]
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

# Bottom to top. A package may import its own layer and the ones below it.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "durations", "__init__"}),
    frozenset({"run"}),
    frozenset({"git", "gitstatus", "treewatch", "goal", "guard", "checkpoint", "redact", "agent", "notify", "doctor",
               "finish", "forge", "sandbox", "verify", "process_group", "tamper", "project_config"}),
    frozenset({"settings", "review_roles"}),
    frozenset({"session"}),
    frozenset({"loop", "review"}),
    frozenset({"runner", "ui"}),
    frozenset({"web", "fleet", "mcp_server", "tui"}),
    frozenset({"onboarding"}),
    frozenset({"commands", "cli", "cli_help", "entry", "__main__", "reference"}),
)
# Same layer, yet neither may import the other.
PEERS: tuple[frozenset[str], ...] = (frozenset({"loop", "review"}),)

# What is left, each with why; the test fails when one goes away too (shrink the list) or a new one comes.
# None today (issue 22 item 9 allows at most two, each written down here with its reason).
KNOWN_AGAINST_LAYERS: frozenset[tuple[str, str]] = frozenset()
MAX_AGAINST_LAYERS = 2
# No import circle is allowed, and none is left.
KNOWN_CIRCLES: frozenset[frozenset[str]] = frozenset()

ROOT = Path(__file__).resolve().parents[2]


def modules(src: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((src / "kilo_loop").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(node: ast.AST, package: str) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = node.module or ""
        yield module
        yield from (f"{module}.{alias.name}" for alias in node.names)


def import_graph(src: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports (a `from package import module` names the module)."""
    known = modules(src)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = {target for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 for target in _targets(node, package) if target in known and target != name}
        # `from kilo_loop.x import y` names both the package and its module y: keep the deepest.
        graph[name] = {t for t in edges if not any(o.startswith(t + ".") for o in edges)}
    return graph


def component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(module: str) -> int:
    name = component(module)
    return next(i for i, layer in enumerate(LAYERS) if name in layer)


def against_layers(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for source, targets in graph.items():
        for target in targets:
            a, b = component(source), component(target)
            if a == b:
                continue
            if layer_of(target) > layer_of(source) or any({a, b} == set(peers) for peers in PEERS):
                found.add((source, target))
    return found


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.add(frozenset(members))
    return found


def test_every_package_has_a_layer() -> None:
    placed = set().union(*LAYERS)
    assert {component(m) for m in modules(ROOT / "src")} <= placed


def test_no_new_import_against_the_layers() -> None:
    found = against_layers(import_graph(ROOT / "src"))
    assert found - KNOWN_AGAINST_LAYERS == set(), "imports against the layers (docs/architecture.md)"
    assert KNOWN_AGAINST_LAYERS - found == set(), "fixed: take them off KNOWN_AGAINST_LAYERS"


def test_no_new_import_circle() -> None:
    found = circles(import_graph(ROOT / "src"))
    assert found - KNOWN_CIRCLES == set(), "new import circles"
    assert KNOWN_CIRCLES - found == set(), "fixed or changed: update KNOWN_CIRCLES"


def test_the_allowances_stay_small() -> None:
    assert len(KNOWN_AGAINST_LAYERS) <= MAX_AGAINST_LAYERS
    assert frozenset() == KNOWN_CIRCLES, "no import circle is allowed"


def test_the_checks_catch_what_they_claim() -> None:
    graph = {"kilo_loop.run.a": {"kilo_loop.loop.b"}, "kilo_loop.loop.b": {"kilo_loop.run.a"},
             "kilo_loop.review.c": {"kilo_loop.loop.b"}}
    assert circles(graph) == {frozenset({"kilo_loop.run.a", "kilo_loop.loop.b"})}
    assert against_layers(graph) == {("kilo_loop.run.a", "kilo_loop.loop.b"), ("kilo_loop.review.c", "kilo_loop.loop.b")}


def _report(root: Path) -> None:
    graph = import_graph(root / "src")
    found_circles = circles(graph)
    against = against_layers(graph)
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports")
    print(f"{len(found_circles)} import circle(s):")
    for members in sorted(found_circles, key=sorted):
        print("  " + " <-> ".join(sorted(members)))
    print(f"{len(against)} import(s) against the layers:")
    for source, target in sorted(against):
        print(f"  {source} -> {target}")


if __name__ == "__main__":
    _report(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
