"""Forbidden built-ins found by reading the student's source, before anything runs.

Torch-free, so `kata check` can refuse a file that calls `torch.softmax` in kata 9.1 within
milliseconds. The runtime guard (`kata.student.guard`, advice in the student's process) catches what
reading cannot (names built at run time); together they name the offending line either way.

Resolved: `import torch.nn.functional as F` then `F.softmax`; `from torch import softmax as s`;
method calls on tensors for forbidden `torch.Tensor.<name>` (`x.softmax(...)`); torch's other names
for the same function, private or C-level (`torch._C._VariableFunctions.softmax`, `torch._VF.softmax`,
`torch.ops.aten._softmax.default`, `torch.special.softmax`: any name under `torch.` whose last parts
normalise to a forbidden function's, with `normalise`, as the run-time guard does); and string constants
naming one, also when glued from pieces (`getattr(torch, "soft" + "max")`, `f"_{'softmax'}"`), except
where a string goes nowhere a lookup could take it: an argument of `print` or an assert's message
(`print("softmax", x.shape)` is a label).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    name: str  # the forbidden built-in, as listed in course.toml
    line: int
    code: str  # the source line, stripped

    def describe(self, filename: str) -> str:
        return f"{filename}:{self.line}: uses {self.name}, which this kata forbids: {self.code}"


_NAME_PREFIXES = ("special_", "sparse_", "masked_", "native_", "nested_")


def normalise(name: str) -> str:
    """`_softmax.default` -> `softmax`, `special_log_softmax` -> `log_softmax`: one name for torch's aliases.

    Shared with the run-time guard (`kata.student.guard`), which matches functions by the same name."""
    name = name.split(".", 1)[0].lstrip("_")
    for prefix in _NAME_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name


def _text(node: ast.AST) -> str | None:
    """The value of a string expression made only of constants ("soft" + "max", f"..." of constants)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                value = value.value
            text = _text(value)
            if text is None:
                return None
            parts.append(text)
        return "".join(parts)
    return None


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases:
        return ".".join([aliases[node.id], *reversed(parts)])
    return None


def _labels(tree: ast.AST) -> set[int]:
    """The ids of the string expressions that end in `print(...)` or an assert's message: printed, never looked up
    (print returns None, the message goes only into the AssertionError), with every piece they are glued from."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            roots += node.args + [keyword.value for keyword in node.keywords]
        elif isinstance(node, ast.Assert) and node.msg is not None:
            roots.append(node.msg)
    return {id(inner) for root in roots if _text(root) is not None for inner in ast.walk(root)}


def scan(source: str, forbidden: tuple[str, ...] | list[str]) -> list[Violation]:
    """Every use of a forbidden built-in in `source` (which must parse), in line order."""
    if not forbidden:
        return []
    tree = ast.parse(source)
    lines = source.splitlines()
    forbidden_set = set(forbidden)
    method_names = {name.rsplit(".", 1)[1] for name in forbidden if name.startswith("torch.Tensor.")}
    leaf_names: dict[str, str] = {}
    for name in forbidden:
        leaf_names.setdefault(name.rsplit(".", 1)[1], name)
    # Functions (not classes) by normalised name: torch's other names for them are caught too.
    function_names: dict[str, str] = {}
    for name in forbidden:
        leaf = name.rsplit(".", 1)[1]
        if not leaf[:1].isupper():
            function_names.setdefault(normalise(leaf), name)

    def alias_of(full: str) -> str | None:
        parts = full.split(".")[1:]
        for part in reversed(parts[-2:]):
            found = function_names.get(normalise(part))
            if found:
                return found
        return None
    found: dict[tuple[int, str], Violation] = {}
    labels = _labels(tree)

    def flag(name: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        found.setdefault((line, name), Violation(name, line, code))

    # Names bound to torch modules or objects, from the imports anywhere in the file.
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or alias.name.startswith("torch."):
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases["torch"] = "torch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (
                node.module == "torch" or node.module.startswith("torch.")):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                aliases[alias.asname or alias.name] = full
                if full in forbidden_set:
                    flag(full, node)

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            full = _dotted(node, aliases)
            if full in forbidden_set:
                flag(full, node)
            elif full is not None and full.startswith("torch.") and alias_of(full):
                flag(alias_of(full), node)
            elif full is None and node.attr in method_names:
                flag(f"torch.Tensor.{node.attr}", node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            full = aliases.get(node.id)
            if full in forbidden_set:
                flag(full, node)
            elif full is not None and full.startswith("torch.") and alias_of(full):
                flag(alias_of(full), node)
        elif isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)):
            text = _text(node)
            if text is None or id(node) in labels:
                continue
            if text in leaf_names:
                flag(leaf_names[text], node)
            elif text.isidentifier() and function_names.get(normalise(text)) and normalise(text) != text:
                flag(function_names[normalise(text)], node)  # "_softmax", "special_softmax"
    return sorted(found.values(), key=lambda v: (v.line, v.name))
