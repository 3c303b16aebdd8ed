"""The mutants of a module for ``tests/mutation.py``: one per small change at each site of its syntax tree, in a
fixed walk order, named by a key that survives edits to other lines."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "functions" / "sitemap_updater"

_SWAP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_SWAP_BINOP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
_QUIET_CALLS = ("Error", "Exception", "Rejected", "LimitExceeded", "Field", "warning", "exception", "info", "debug")


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int  # the index-th mutation site of the module, in walk order
    line: int
    description: str
    source_line: str
    occurrence: int = 0  # among mutants of the module with the same description and source line (0: unique)

    @property
    def ident(self) -> str:
        return f"{self.module}:{self.line}: {self.description} in `{self.source_line}`"

    @property
    def key(self) -> str:
        """The ident without the line number (stable while other lines are edited)."""
        key = f"{self.module}: {self.description} in `{self.source_line}`"
        return f"{key} #{self.occurrence}" if self.occurrence else key


Apply = Callable[[ast.AST], ast.AST | None]


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _constant(value: str | bool | int) -> Apply:
    return lambda _node: ast.Constant(value)


def _mutations(node: ast.AST, quiet: bool) -> list[tuple[str, Apply]]:
    """The mutations of one node: (description, function returning the replacement node)."""
    found: list[tuple[str, Apply]] = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swap = _SWAP_COMPARE.get(type(op))
            if swap is not None:

                def compare(n: ast.AST, i: int = i, swap: type[ast.cmpop] = swap) -> ast.AST:
                    assert isinstance(n, ast.Compare)
                    n.ops[i] = swap()
                    return n

                found.append((f"{type(op).__name__} -> {swap.__name__}", compare))
    elif isinstance(node, ast.BinOp) and type(node.op) in _SWAP_BINOP:
        swap_op = _SWAP_BINOP[type(node.op)]

        def binop(n: ast.AST, swap_op: type[ast.operator] = swap_op) -> ast.AST:
            assert isinstance(n, ast.BinOp)
            n.op = swap_op()
            return n

        found.append((f"{type(node.op).__name__} -> {swap_op.__name__}", binop))
    elif isinstance(node, ast.BoolOp):
        other: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And

        def boolop(n: ast.AST, other: type[ast.boolop] = other) -> ast.AST:
            assert isinstance(n, ast.BoolOp)
            n.op = other()
            return n

        found.append((f"{type(node.op).__name__} -> {other.__name__}", boolop))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        found.append(("not removed", lambda n: n.operand if isinstance(n, ast.UnaryOp) else n))
    elif isinstance(node, ast.Constant) and not quiet:
        value = node.value
        if isinstance(value, bool):
            found.append((f"{value} -> {not value}", _constant(not value)))
        elif isinstance(value, int):
            found.append((f"{value} -> {value + 1}", _constant(value + 1)))
            if value > 1:
                found.append((f"{value} -> {value - 1}", _constant(value - 1)))
        elif isinstance(value, str) and value:
            found.append((f"{value[:30]!r} -> 'XX'+...", _constant("XX" + value)))
    elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and isinstance(node.func, ast.Name):
        if not isinstance(node.args[0], ast.Starred):
            found.append((f"call {node.func.id}(x) -> x", lambda n: n.args[0] if isinstance(n, ast.Call) else n))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        found.append((f"call {_call_name(node.value)}() removed", lambda _n: ast.Pass()))
    elif isinstance(node, ast.Continue | ast.Break):
        found.append((f"{type(node).__name__.lower()} -> pass", lambda _n: ast.Pass()))
    elif isinstance(node, ast.If | ast.While | ast.IfExp) and not isinstance(node.test, ast.Compare | ast.UnaryOp):

        def negate(n: ast.AST) -> ast.AST:
            assert isinstance(n, ast.If | ast.While | ast.IfExp)
            n.test = ast.UnaryOp(ast.Not(), n.test)
            return n

        found.append(("condition negated", negate))
    return found


def _is_docstring(parent: ast.AST, field: str, index: int) -> bool:
    body_owner = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    return isinstance(parent, body_owner) and field == "body" and index == 0


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str, int, ast.AST, list[tuple[str, Apply]]]]:
    """(parent, field, index in list or -1, node, mutations) in a fixed order."""

    def visit(parent: ast.AST, quiet: bool) -> Iterator[tuple[ast.AST, str, int, ast.AST, list[tuple[str, Apply]]]]:
        for field, value in ast.iter_fields(parent):
            if field in ("annotation", "returns", "type_comment", "decorator_list"):
                continue
            children = value if isinstance(value, list) else [value]
            for index, child in enumerate(children):
                if not isinstance(child, ast.AST):
                    continue
                if _is_docstring(parent, field, index) and isinstance(child, ast.Expr):
                    continue
                if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                    continue
                child_quiet = quiet or isinstance(child, ast.Raise | ast.Assert | ast.JoinedStr)
                if isinstance(child, ast.Call) and _call_name(child).endswith(_QUIET_CALLS):
                    child_quiet = True
                if isinstance(child, ast.Import | ast.ImportFrom):
                    continue
                mutations = _mutations(child, quiet)
                if mutations:
                    yield parent, field, index if isinstance(value, list) else -1, child, mutations
                yield from visit(child, child_quiet)

    yield from visit(tree, False)


def enumerate_mutants(module: str) -> list[Mutant]:
    source = (PACKAGE / module).read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    mutants: list[Mutant] = []
    count = 0
    for _parent, _field, _index, node, mutations in _sites(tree):
        for description, _apply in mutations:
            line = getattr(node, "lineno", 0)
            mutants.append(Mutant(module, count, line, description, lines[line - 1].strip()[:80] if line else ""))
            count += 1
    # Mutants that would share a key (the same change on two equal lines, or twice on one line) are numbered.
    seen: dict[str, int] = {}
    for mutant in mutants:
        seen[mutant.key] = seen.get(mutant.key, 0) + 1
    numbered: dict[str, int] = {}
    for i, mutant in enumerate(mutants):
        if seen[mutant.key] > 1:
            numbered[mutant.key] = numbered.get(mutant.key, 0) + 1
            mutants[i] = replace(mutant, occurrence=numbered[mutant.key])
    return mutants


def mutated_source(mutant: Mutant) -> str:
    tree = ast.parse((PACKAGE / mutant.module).read_text())
    count = 0
    for parent, field, index, node, mutations in _sites(tree):
        for _description, apply in mutations:
            if count == mutant.index:
                replacement = apply(copy.deepcopy(node))
                if index >= 0:
                    getattr(parent, field)[index] = replacement
                else:
                    setattr(parent, field, replacement)
                return ast.unparse(ast.fix_missing_locations(tree))
            count += 1
    raise LookupError(mutant.ident)
