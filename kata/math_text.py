"""The LaTeX math of a kata's README as Unicode text, for the terminal (`kata show`).

The READMEs keep their LaTeX (`$...$` inline, `$$...$$` on its own line): GitHub and notebooks typeset
it. A terminal cannot, so `kata show` converts each formula with pylatexenc's LatexNodes2Text, which
knows the macros (Greek letters, \\sum, \\sqrt, \\mathbb{R}, \\mathrm{...}) and is told here the three things
a flat line of text needs to stay unambiguous:

    \\frac{e^{x_i - c}}{\\sum_j e^{x_j - c}}   ->   (e^(x_i - c))/(∑_j e^(x_j - c))   not  e^x_i - c/∑_j e^x_j - c

a fraction's numerator and denominator get brackets when they are more than one symbol, so does a
sub- or superscript of more than one symbol, and `\\|` is the norm bar ‖. Code (fenced blocks and
`inline code`) is left alone, and the converted text is escaped so that Markdown shows it as it is
(an `x_i` never starts italics).
"""

from __future__ import annotations

import re
from functools import cache

from pylatexenc import latexwalker
from pylatexenc.latex2text import EnvironmentTextSpec, LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

_FENCE = re.compile(r"^(```|~~~)")
# Inline code spans first (their $ are code), then display math, then inline math ($ not escaped).
_SPANS = re.compile(r"(?P<code>`+[^`]*?`+)|\$\$(?P<display>.+?)\$\$"
                    r"|(?<![\\$])\$(?P<inline>(?:[^$\n]|\n(?!\n))+?)(?<!\\)\$", re.DOTALL)  # inline: one paragraph
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]<>#|~])")
_OPERATORS = set("+-−=<>≤≥≈≠·×/,∈←→ ")
_SPACED = set("=<>≤≥≈≠·×∈←→±")  # relations and binary operators: a space on each side
_RUNS, _INSIDE = re.compile(r" {2,}"), re.compile(r"(?<=[(\[]) | (?=[)\],])")  # `a  b`, `( a )`, `a ,`


def _bracketed(text: str, script: bool = False) -> str:
    """text, in brackets unless it is one term: `x`, `model`, `√(d_k)` (a script's `x_i` gets them too)."""
    text = text.strip()
    depth, compound = 0, text.startswith(("-", "−"))
    for char in text:
        depth += char in "([{" or -(char in ")]}")
        compound |= depth == 0 and (char in _OPERATORS or (script and char in "_^"))
    return f"({text})" if compound else text


class _MathToText(LatexNodes2Text):
    """LatexNodes2Text with brackets around compound sub- and superscripts (`e^{x_i - c}` -> `e^(x_i - c)`)."""

    def nodelist_to_text(self, nodelist):
        out = ""
        previous = None
        for node in nodelist:
            text = self.node_to_text(node)
            script = (previous is not None and previous.isNodeType(latexwalker.LatexCharsNode)
                      and previous.chars.endswith(("^", "_")))
            if script and node.isNodeType(latexwalker.LatexGroupNode):
                text = _bracketed(text, script=True)
            elif node.isNodeType(latexwalker.LatexMacroNode) and text.strip() in _SPACED:
                text = f" {text.strip()} "
            elif _is_bare_macro(previous) and node.isNodeType(latexwalker.LatexCharsNode):
                text = previous.macro_post_space + text  # `\ell = 0`: the space LaTeX swallows, kept
            elif _is_bare_macro(previous) and out[-1:].isalnum() and text[:1].isalnum():
                text = " " + text  # `\log p`, `\cos\omega`: a function's name and its argument stay apart
            out += text
            previous = node
        return out


def _is_bare_macro(node) -> bool:
    return node is not None and node.isNodeType(latexwalker.LatexMacroNode) and not (
        node.nodeargd and node.nodeargd.argnlist)


def _rows(node, l2tobj) -> list[list[str]]:
    """The cells of an array-like environment (`&` between cells, `\\\\` between rows), as text."""
    rows, cells, cell = [], [], []
    for child in node.nodelist:
        if child.isNodeType(latexwalker.LatexSpecialsNode) and child.specials_chars == "&":
            cells.append(cell)
            cell = []
        elif child.isNodeType(latexwalker.LatexMacroNode) and child.macroname == "\\":
            rows.append([*cells, cell])
            cells, cell = [], []
        else:
            cell.append(child)
    rows.append([*cells, cell])
    texts = [[l2tobj.nodelist_to_text(c).strip() for c in row] for row in rows]
    return [row for row in texts if any(row)]


def _cases(node, l2tobj) -> str:
    """`\\begin{cases} a & j \\le i \\\\ b & j > i \\end{cases}` -> `{ a if j ≤ i; b if j > i }`."""
    return "{ " + "; ".join(" if ".join(filter(None, row)) for row in _rows(node, l2tobj)) + " }"


def _matrix(node, l2tobj) -> str:
    """A matrix row by row: `[a, b; c, d]`."""
    return "[" + "; ".join(", ".join(row) for row in _rows(node, l2tobj)) + "]"


def _frac(node, l2tobj) -> str:
    numerator, denominator = (l2tobj.nodelist_to_text([arg]) for arg in node.nodeargd.argnlist[-2:])
    return f" {_bracketed(numerator)}/{_bracketed(denominator)} "


@cache
def _converter() -> _MathToText:
    db = get_default_latex_context_db()
    db.add_context_category("kata-terminal", prepend=True, macros=[
        MacroTextSpec("frac", simplify_repl=_frac),
        MacroTextSpec("dfrac", simplify_repl=_frac),
        MacroTextSpec("tfrac", simplify_repl=_frac),
        MacroTextSpec("|", simplify_repl="‖"),
        MacroTextSpec("quad", simplify_repl="\u2003"),  # em spaces: wider than the spaces that are merged
        MacroTextSpec("qquad", simplify_repl="\u2003\u2003"),
    ], environments=[
        EnvironmentTextSpec("cases", simplify_repl=_cases),
        *(EnvironmentTextSpec(name, simplify_repl=_matrix) for name in ("matrix", "pmatrix", "bmatrix")),
    ])
    return _MathToText(latex_context=db, math_mode="text")


def latex_to_text(latex: str) -> str:
    """One formula (without its $ delimiters) as Unicode text on one line."""
    text = _converter().latex_to_text(latex).replace("\n", " ")
    return _INSIDE.sub("", _RUNS.sub(" ", text)).strip()


def render_math(markdown: str) -> str:
    """A README's Markdown with every formula as Unicode text (escaped for Markdown); code is left as it is.

    A display formula ($$...$$) becomes a block quote of its own (set off by a bar); an inline one stays in
    its sentence."""
    out, prose = [], []
    in_fence = False

    def flush() -> None:
        if prose:
            out.append(_SPANS.sub(_replace, "".join(prose)))
            prose.clear()

    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line.lstrip()):
            if not in_fence:
                flush()
            in_fence = not in_fence
            out.append(line)
        elif in_fence:
            out.append(line)
        else:
            prose.append(line)
    flush()
    return "".join(out)


def _replace(match: re.Match) -> str:
    if match.group("code") is not None:
        return match.group("code")
    if match.group("display") is not None:
        return "\n\n> " + _escape(latex_to_text(match.group("display"))) + "\n\n"
    return _escape(latex_to_text(match.group("inline")))


def _escape(text: str) -> str:
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)
