"""The tree shows the architecture, and these rules keep it that way.

- Everything that speaks S3 lives in `s3claim/s3/`: no other module imports boto3,
  botocore, aiobotocore or the S3 type stubs, at any depth (functions included).
- Families are held together by their public faces, not each other's privates: a module
  imports another package's private module only where the table below says why.
- No import cycle among the modules (their module-level imports, type-checking aside).
- No module over 400 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "s3claim"
S3_LIBRARIES = ("boto3", "botocore", "aiobotocore", "mypy_boto3_s3")

ALLOWED_PRIVATE_IMPORTS: dict[tuple[str, str], str] = {}
"""(importer, private module of another package) -> why. At most two, each with a reason."""


def _modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text(encoding="utf-8"))


def _is_package(name: str) -> bool:
    return (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module or ""] if node.level == 0 else []


def test_only_the_s3_package_speaks_s3() -> None:
    strays = [
        f"{name}: {module}"
        for name, _, tree in _modules()
        if not (name == "s3claim.s3" or name.startswith("s3claim.s3."))
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for module in _imported(node)
        if module.split(".")[0] in S3_LIBRARIES
    ]
    assert strays == []


def test_private_modules_are_imported_only_inside_their_family() -> None:
    found: dict[tuple[str, str], int] = {}
    for name, path, tree in _modules():
        here = _package_of(name, path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom | ast.Import):
                continue
            for module in _imported(node):
                parts = module.split(".")
                private = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
                if parts[0] != "s3claim" or private is None:
                    continue
                owner = ".".join(parts[:private])
                if here != owner and not here.startswith(owner + "."):
                    found[(name, module)] = found.get((name, module), 0) + 1
    assert set(found) <= set(ALLOWED_PRIVATE_IMPORTS), sorted(
        set(found) - set(ALLOWED_PRIVATE_IMPORTS)
    )
    assert len(ALLOWED_PRIVATE_IMPORTS) <= 2


def _edges() -> dict[str, set[str]]:
    """Module-level imports between s3claim modules. `from pkg import name` is an edge to
    `pkg` (its `__init__` runs), and to `pkg.name` as well when that is a module."""
    graph: dict[str, set[str]] = {}
    for name, _, tree in _modules():
        targets: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    break  # a function's imports run when it is called: lazy, not an edge
                if isinstance(inner, ast.Import):
                    targets |= {a.name for a in inner.names if a.name.startswith("s3claim")}
                elif isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                    if not inner.module.startswith("s3claim"):
                        continue
                    targets.add(inner.module)
                    for alias in inner.names:
                        child = f"{inner.module}.{alias.name}"
                        if (
                            _is_package(child)
                            or (PACKAGE.parent / f"{child.replace('.', '/')}.py").exists()
                        ):
                            targets.add(child)
        graph[name] = targets - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_there_is_no_import_cycle() -> None:
    assert _cycles(_edges()) == []


def test_the_cycle_check_can_fail() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    graph = _edges()
    assert "s3claim.s3._store" in graph["s3claim.s3"]  # the package imports its store ...
    assert "s3claim.s3" not in graph["s3claim.s3._store"]  # ... which must not import it back


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for _, path, _ in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}
