"""Forbidden built-ins found by reading the student's source, before anything runs.

Torch-free, so `kata check` can refuse a file that calls `torch.softmax` in kata 9.1 within
milliseconds. The runtime guard (`kata.grading.guard`) catches what reading cannot (names built at
run time); together they name the offending line either way.

Resolved: `import torch.nn.functional as F` then `F.softmax`; `from torch import softmax as s`;
method calls on tensors for forbidden `torch.Tensor.<name>` (`x.softmax(...)`); and string
constants naming a forbidden built-in (`getattr(torch, "softmax")`).
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


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases:
        return ".".join([aliases[node.id], *reversed(parts)])
    return None


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
    found: dict[tuple[int, str], Violation] = {}

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
            elif full is None and node.attr in method_names:
                flag(f"torch.Tensor.{node.attr}", node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            full = aliases.get(node.id)
            if full in forbidden_set:
                flag(full, node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in leaf_names:
            flag(leaf_names[node.value], node)
    return sorted(found.values(), key=lambda v: (v.line, v.name))
