"""The tree shows the architecture, and these rules keep it that way.

- Everything that speaks S3 lives in `s3claim/s3/`: no other module imports boto3,
  botocore or the S3 type stubs, at any depth (functions included).
- Families are held together by their public faces, not each other's privates: no module
  imports another family's private module, the top level's included. The top level's own
  modules are one family (they may use its private packages, `s3claim._reading` and
  `s3claim._boundary`); each subpackage is one with its own subpackages (`s3claim.cli` and
  `s3claim.cli.demo`); a private package's modules import each other, and nothing else
  that is private.
- No import cycle among the modules (their module-level imports, type-checking aside).
- No module over 800 lines; few at the top level that are private.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "s3claim"
S3_LIBRARIES = ("boto3", "botocore", "mypy_boto3_s3")


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


def _family(package: str) -> str:
    """The family a package belongs to: the top level's, or its subpackage of the top."""
    parts = package.split(".")
    return ".".join(parts[:2])


def _violations(importer: str, package: str, module: str) -> list[str]:
    """Why `importer` (a module of `package`) may not import `module`, if it may not."""
    parts = module.split(".")
    if parts[0] != "s3claim":
        return []
    found = []
    for at, part in enumerate(parts):
        if not part.startswith("_") or part.startswith("__"):
            continue
        owner, private = ".".join(parts[:at]), ".".join(parts[: at + 1])
        inside = package == private or package.startswith(private + ".")
        if not inside and _family(package) != _family(owner):
            found.append(f"{importer} imports {module}: {private} is private to {owner}")
    return found


def test_no_family_imports_another_familys_private_module() -> None:
    found = [
        violation
        for name, path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom | ast.Import)
        for module in _imported(node)
        for violation in _violations(name, _package_of(name, path), module)
    ]
    assert found == []


def test_the_family_rule_can_fail() -> None:
    assert _violations("s3claim.memory._store", "s3claim.memory", "s3claim._reading")
    assert _violations("s3claim.store", "s3claim", "s3claim.s3._seal")
    assert _violations("s3claim._boundary._result", "s3claim._boundary", "s3claim._reading")
    assert not _violations("s3claim.store", "s3claim", "s3claim._reading")
    assert not _violations("s3claim._reading._plans", "s3claim._reading", "s3claim._reading._x")
    assert not _violations("s3claim.cli.demo._command", "s3claim.cli.demo", "s3claim.cli._exit")
    assert not _violations("s3claim.s3._store", "s3claim.s3", "s3claim.s3._bucket")


def test_the_top_level_keeps_few_private_modules() -> None:
    """Machinery lives in private packages; what is left at the top is named here."""
    private = sorted(p.name for p in PACKAGE.glob("_*.py") if p.name != "__init__.py")
    assert private == ["__main__.py", "_windows.py"]


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


def test_no_module_is_over_800_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for _, path, _ in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert long == {}
