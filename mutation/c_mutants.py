"""Our own generator of C mutants: small, deterministic, documented (mutation/README.md, "Operators").

    for mutant in generate(Path("engine/c/llm_memory.c").read_text()):
        mutant.id, mutant.diff, mutant.source

It works on tokens, never inside comments, string or character literals, or preprocessor lines. Each mutant
is one edit; its id is `<operator>@<line>:<col>#k` (the 1-based line and column of the edited token, k
numbering the mutants one operator makes there), and mutants come in source order, then operator order.
Mutants that do not compile are expected (a swap that breaks a declaration, say): the campaign drops them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

OPERATORS = ("relational", "logical", "arithmetic", "increment", "assignment", "constant", "negate",
             "delete", "jump", "swap_args")

RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")
ARITHMETIC = {"+": ("-",), "-": ("+",), "*": ("/",), "/": ("*", "%"), "%": ("/",)}
INCREMENT = {"++": "--", "--": "++"}
ASSIGNMENT = {"+=": "-=", "-=": "+=", "*=": "/=", "/=": "*="}
LOGICAL = {"&&": "||", "||": "&&"}
JUMP = {"continue": "break", "break": "continue"}
KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
    void volatile while _Bool _Static_assert _Alignof _Noreturn""".split())
TYPE_WORDS = frozenset("""char const double enum float int long short signed static struct union unsigned void
    volatile register extern _Bool size_t ssize_t ptrdiff_t uint8_t uint16_t uint32_t uint64_t int8_t int16_t
    int32_t int64_t uintptr_t intptr_t bool""".split())

_PUNCT = sorted("""... <<= >>= -> ++ -- << >> <= >= == != && || *= /= %= += -= &= ^= |= ## [ ] ( ) { } . & * + - ~ !
    / % < > ^ | ? : ; = , #""".split(), key=len, reverse=True)
_TOKEN = re.compile(
    r"(?P<ws>[ \t\r\f\v]+)|(?P<nl>\n)|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<string>[LuU8]*\"(?:\\.|[^\"\\\n])*\"|[LuU]*'(?:\\.|[^'\\\n])*')"
    r"|(?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)|(?P<ident>[A-Za-z_]\w*)|(?P<punct>"
    + "|".join(re.escape(p) for p in _PUNCT) + r")|(?P<other>.)",
    re.S,
)
_INT = re.compile(r"^(0[xX][0-9a-fA-F]+|[1-9]\d*|0[0-7]*)([uUlL]*)$")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+(.+?)\s*(?://.*|/\*.*)?$", re.M)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # ident, number, punct, string, other
    text: str
    start: int  # offset in the source
    line: int  # 1-based
    col: int  # 1-based

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True, slots=True)
class Mutant:
    id: str  # <operator>@<line>:<col>#k
    operator: str
    line: int
    col: int
    diff: str  # unified diff of the original and the mutant
    source: str  # the whole mutated source

    @property
    def mutated_lines(self) -> list[str]:
        """The diff's added lines, stripped: what the triage file quotes to pin an entry to its mutant."""
        return [x[1:].strip() for x in self.diff.splitlines() if x.startswith("+") and not x.startswith("+++")]


def tokenize(source: str) -> list[Token]:
    """The code tokens of a C source: comments, whitespace and preprocessor lines (with their backslash
    continuations) are skipped; string and character literals are single tokens that no operator edits."""
    tokens: list[Token] = []
    line, line_start, at_line_start, in_directive = 1, 0, True, False
    for m in _TOKEN.finditer(source):
        kind, text = m.lastgroup, m.group()
        col = m.start() - line_start + 1
        newlines = text.count("\n")
        if kind == "nl":
            ends_directive = not source[line_start:m.start()].rstrip(" \t\r").endswith("\\")
            in_directive = in_directive and not ends_directive
            at_line_start = True
        elif kind not in ("ws", "comment"):
            if at_line_start and text == "#":
                in_directive = True
            at_line_start = False
            if not in_directive:
                tokens.append(Token(kind, text, m.start(), line, col))
        if newlines:
            line += newlines
            line_start = m.start() + text.rfind("\n") + 1
    return tokens


def integer_macros(source: str, header_dirs: tuple[Path, ...] = ()) -> set[str]:
    """Object-like macros the source and its local headers ("x.h" in header_dirs) define as integer
    constant expressions (digits, other such macros, operators, parentheses): e.g. BLOCK_SIZE."""
    texts = [source]
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', source, re.M):
        for directory in header_dirs:
            if (directory / name).is_file():
                texts.append((directory / name).read_text())
                break
    defines = {}
    for text in texts:  # `#define NAME body`: _DEFINE needs blank space after NAME, so NAME( is left out
        for name, body in _DEFINE.findall(text):
            defines.setdefault(name, body)
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in defines.items():
            words = re.findall(r"[A-Za-z_]\w*", body)
            if name not in found and re.fullmatch(r"[\w\s()+\-*/%]+", body) and all(w in found for w in words):
                found.add(name)
                changed = True
    return found


def _is_operand_end(token: Token | None) -> bool:
    """Whether a binary operator may follow this token: the end of an operand."""
    if token is None:
        return False
    if token.kind in ("number", "string"):
        return True
    if token.kind == "ident":
        return token.text not in KEYWORDS
    return token.text in (")", "]", "++", "--")


def _declarator(tokens: list[Token], i: int) -> bool:
    """Whether the `*` at tokens[i] makes a pointer type rather than a product: `struct node *p`,
    `Sequence *seq = ...` at the start of a statement, `(Type *)` in a cast."""
    before = tokens[i - 2] if i > 1 else None
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    if before is None or before.text in (";", "{", "}", "struct", "union", "enum") or before.text in TYPE_WORDS:
        return True
    return before.text == "(" and after is not None and after.text == ")"


def _matching(tokens: list[Token], i: int) -> int | None:
    """The index of the bracket closing tokens[i] (a '(' '[' or '{')."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opening, closing, depth = tokens[i].text, pairs[tokens[i].text], 0
    for j in range(i, len(tokens)):
        if tokens[j].text == opening:
            depth += 1
        elif tokens[j].text == closing:
            depth -= 1
            if depth == 0:
                return j
    return None


def _split_args(tokens: list[Token], open_i: int, close_i: int) -> list[tuple[int, int]]:
    """The (first, last) token indices of each comma-separated argument between two parentheses."""
    args, depth, first = [], 0, open_i + 1
    for j in range(open_i + 1, close_i):
        text = tokens[j].text
        if text in "([{":
            depth += 1
        elif text in ")]}":
            depth -= 1
        elif text == "," and depth == 0:
            args.append((first, j - 1))
            first = j + 1
    if first <= close_i - 1:
        args.append((first, close_i - 1))
    return args


def _brace_depths(tokens: list[Token]) -> list[int]:
    depths, depth = [], 0
    for token in tokens:
        if token.text == "}":
            depth -= 1
        depths.append(depth)
        if token.text == "{":
            depth += 1
    return depths


def _function_returns_void(tokens: list[Token], depths: list[int], i: int) -> bool:
    """Whether the function holding tokens[i] is declared `void name(...)` (not `void *name(...)`)."""
    j = i
    while j > 0 and not (depths[j] == 0 and tokens[j].text == "{"):
        j -= 1
    k = j - 1  # back over the parameter list to the name, then look at what precedes the name
    if k < 0 or tokens[k].text != ")":
        return False
    depth = 0
    while k >= 0:
        if tokens[k].text == ")":
            depth += 1
        elif tokens[k].text == "(":
            depth -= 1
            if depth == 0:
                break
        k -= 1
    return k >= 2 and tokens[k - 2].text == "void" and tokens[k - 1].kind == "ident"


class _Edits:
    """Collects (operator, anchor token, [(start, end, replacement), ...]) edits in generation order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Token, list[tuple[int, int, str]]]] = []

    def add(self, operator: str, anchor: Token, *changes: tuple[int, int, str]) -> None:
        self.items.append((operator, anchor, list(changes)))


def _edits(source: str, tokens: list[Token], macros: set[str]) -> _Edits:
    edits = _Edits()
    depths = _brace_depths(tokens)
    line_tokens: dict[int, list[int]] = {}
    for i, token in enumerate(tokens):
        line_tokens.setdefault(token.line, []).append(i)
    for i, token in enumerate(tokens):
        prev = tokens[i - 1] if i else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        text, span = token.text, (token.start, token.end)
        inside = depths[i] > 0  # only code inside function bodies is mutated (no prototypes, no file scope)
        if not inside:
            continue
        if token.kind == "punct":
            if text in RELATIONAL and _is_operand_end(prev):
                for other in RELATIONAL:
                    if other != text:
                        edits.add("relational", token, (*span, other))
            elif text in LOGICAL:
                edits.add("logical", token, (*span, LOGICAL[text]))
            elif text in ARITHMETIC and _is_operand_end(prev) and not (text == "*" and _declarator(tokens, i)):
                for other in ARITHMETIC[text]:
                    edits.add("arithmetic", token, (*span, other))
            elif text in INCREMENT:
                edits.add("increment", token, (*span, INCREMENT[text]))
            elif text in ASSIGNMENT:
                edits.add("assignment", token, (*span, ASSIGNMENT[text]))
            elif text == "(" and prev is not None and prev.text in ("if", "while"):
                close = _matching(tokens, i)
                if close is not None and close > i + 1:
                    edits.add("negate", tokens[i + 1], (tokens[i + 1].start, tokens[i + 1].start, "!("),
                              (tokens[close].start, tokens[close].start, ")"))
            elif text == "(" and prev is not None and prev.text == "for":
                close = _matching(tokens, i)
                semis = [j for j in range(i + 1, close or i) if tokens[j].text == ";" and
                         sum(t.text == "(" for t in tokens[i + 1:j]) == sum(t.text == ")" for t in tokens[i + 1:j])]
                if close is not None and len(semis) == 2 and semis[1] > semis[0] + 1:
                    first, last = tokens[semis[0] + 1], tokens[semis[1] - 1]
                    edits.add("negate", first, (first.start, first.start, "!("), (last.end, last.end, ")"))
            elif text == "(" and prev is not None and prev.kind == "ident" and prev.text not in KEYWORDS:
                close = _matching(tokens, i)
                if close is not None:
                    args = _split_args(tokens, i, close)
                    for a, b in zip(args, args[1:]):
                        left = source[tokens[a[0]].start:tokens[a[1]].end]
                        right = source[tokens[b[0]].start:tokens[b[1]].end]
                        if left != right:
                            edits.add("swap_args", tokens[a[0]], (tokens[a[0]].start, tokens[a[1]].end, right),
                                      (tokens[b[0]].start, tokens[b[1]].end, left))
        elif token.kind == "number" and (m := _INT.match(text)):
            value = int(m[1], 16) if m[1][:2].lower() == "0x" else int(m[1], 8) if m[1].startswith("0") and m[1] != "0" else int(m[1])
            negative = prev is not None and prev.text == "-" and not _is_operand_end(tokens[i - 2] if i > 1 else None)
            if negative:  # -1 -> 0, -2: the literal with its unary minus
                for new in (-value + 1, -value - 1):
                    edits.add("constant", prev, (prev.start, token.end, str(new) + m[2] if new >= 0 else f"-{-new}{m[2]}"))
            else:
                for new in (value + 1, value - 1):
                    replacement = f"{new}{m[2]}" if new >= 0 else f"({new})"
                    edits.add("constant", token, (*span, replacement))
        elif token.kind == "ident":
            if text in macros and not (nxt is not None and nxt.text == "("):
                for sign in ("+", "-"):
                    edits.add("constant", token, (*span, f"({text} {sign} 1)"))
            elif text in JUMP:
                edits.add("jump", token, (*span, JUMP[text]))
        # statement deletion: a statement that starts its line and ends with ';' as the line's last token
        if i == line_tokens[token.line][0]:
            last = line_tokens[token.line][-1]
            words = [tokens[j] for j in line_tokens[token.line]]
            if (tokens[last].text == ";" and _deletable(words, tokens, depths, i)):
                edits.add("delete", token, (token.start, tokens[last].end, "{}"))
    return edits


def _deletable(words: list[Token], tokens: list[Token], depths: list[int], i: int) -> bool:
    """A simple statement whose removal still compiles: no declaration, no control-flow header, no return of
    a value (the function would end without one), no statement that began on an earlier line."""
    first = words[0]
    if first.text in TYPE_WORDS or first.text in ("for", "if", "while", "do", "else", "switch", "case",
                                                   "default", "typedef", "goto", "{", "}"):
        return False
    if first.text == "return":
        return len(words) == 2 and _function_returns_void(tokens, depths, i)
    if len(words) > 1 and first.kind == "ident" and words[1].kind == "ident":
        return False  # `Type name ...`: a declaration
    if len(words) > 2 and first.kind == "ident" and words[1].text == "*" and words[2].kind == "ident" \
            and len(words) > 3 and words[3].text in ("=", ";", ",", "["):
        return False  # `Type *name = ...`
    if len(words) > 1 and first.kind == "ident" and words[1].text == "**":
        return False
    prev = tokens[i - 1] if i else None
    # the previous line must have ended a statement or opened a block (or be an if/for/while/else header)
    return prev is None or prev.text in (";", "{", "}", ")", "else")


def _apply(source: str, changes: list[tuple[int, int, str]]) -> str:
    for start, end, replacement in sorted(changes, reverse=True):
        source = source[:start] + replacement + source[end:]
    return source


def generate(source: str, *, name: str = "llm_memory.c", header_dirs: tuple[Path, ...] = ()) -> list[Mutant]:
    """Every mutant of a C source, in source order then operator order; each differs from the source."""
    tokens = tokenize(source)
    edits = _edits(source, tokens, integer_macros(source, header_dirs))
    order = {op: n for n, op in enumerate(OPERATORS)}
    items = sorted(enumerate(edits.items), key=lambda e: (e[1][1].line, e[1][1].col, order[e[1][0]], e[0]))
    mutants, seen_ids, original_lines = [], {}, source.splitlines(keepends=True)
    for _, (operator, anchor, changes) in items:
        mutated = _apply(source, changes)
        if mutated == source:
            continue
        base = f"{operator}@{anchor.line}:{anchor.col}"
        k = seen_ids.get(base, 0)
        seen_ids[base] = k + 1
        diff = "".join(difflib.unified_diff(original_lines, mutated.splitlines(keepends=True),
                                            f"a/{name}", f"b/{name}", n=1))
        mutants.append(Mutant(f"{base}#{k}", operator, anchor.line, anchor.col, diff, mutated))
    return mutants
