"""Read the chart's own template text and render it: the subset of Go's text/template the port needs.

Where the port needs the chart's literal text (the talos-reconcile Job's spec, whose sha256 names
the Job, and PR 3315's pre-delete unpin hook), it does not keep a copy: it reads the template from the
chart it was given, compiles it once (:func:`compile_template`, :func:`compile_define`) and renders it
with a context the port computes (:meth:`Template.render`). Owns that reader: text and actions,
Go's ``{{-`` / ``-}}`` whitespace trimming, comments, variables (``$x :=``), ``if`` / ``with`` /
``else`` / ``end``, pipelines with fields (``.a.b``, ``$.a``, ``$x.a``), string and number literals,
parentheses, and the functions the caller passes (sprig's and Helm's as the port implements them:
:data:`SPRIG`). A construct outside that subset is a :class:`TemplateError` naming the template and
line: the known charts use none (a test compiles every template the port reads from each of them).

Values print as Helm prints them (``fmt.Sprint``; a missing value prints nothing). Its edge: text and
a context in, text out; pure.

Why one module: the reader's lexer, pipeline parser, tree and evaluator are one small language; each
part knows the others' shapes, and no other module uses a part alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .goyaml import to_yaml
from .quantity import go_quote_text, go_str, nindent, truthy

__all__ = ["SPRIG", "Template", "TemplateError", "compile_define", "compile_template"]


class TemplateError(Exception):
    """Template text outside the subset this reader renders, or a failure while rendering it."""


Scope = dict[str, Any]  # "." (dot), "$" (root), "$name" (variables), and "functions"
Evaluator = Callable[[Scope], Any]


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Action:
    """``{{ pipeline }}`` (printed) or ``{{ $x := pipeline }}`` (``variable`` set, nothing printed)."""

    evaluate: Evaluator
    source: str
    line: int
    variable: str | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """``{{ if }}`` / ``{{ with }}`` ... ``{{ else }}`` ... ``{{ end }}``."""

    kind: str
    evaluate: Evaluator
    source: str
    line: int
    body: tuple[Node, ...]
    otherwise: tuple[Node, ...] = ()


Node = Text | Action | Block


@dataclass(frozen=True)
class Template:
    """A compiled template: its nodes, and where it came from (for messages)."""

    name: str
    nodes: tuple[Node, ...]

    def render(
        self,
        dot: Any,
        *,
        functions: Mapping[str, Callable[..., Any]],
        root: Any = None,
        replace: Mapping[int, str] | None = None,
    ) -> str:
        """The template's text for ``dot`` (``$`` is ``root``, default ``dot``).

        ``replace`` maps ``id(node)`` of a node of :attr:`nodes` (found with :meth:`find`) to the
        text to print in its place: how a class-era input replaces what the chart would print."""
        scope: Scope = {".": dot, "$": dot if root is None else root, "functions": functions}
        out: list[str] = []
        _run(self.nodes, scope, out, self.name, replace or {})
        return "".join(out)

    def find(self, predicate: Callable[[Node], bool]) -> list[Node]:
        """Every node (blocks' bodies included), in order, for which ``predicate`` holds."""
        found: list[Node] = []
        _walk(self.nodes, predicate, found)
        return found


def _walk(nodes: Sequence[Node], predicate: Callable[[Node], bool], found: list[Node]) -> None:
    for node in nodes:
        if predicate(node):
            found.append(node)
        if isinstance(node, Block):
            _walk(node.body, predicate, found)
            _walk(node.otherwise, predicate, found)


def _run(nodes: Sequence[Node], scope: Scope, out: list[str], name: str, replace: Mapping[int, str]) -> None:
    for node in nodes:
        if replace:
            substitute = replace.get(id(node))
            if substitute is not None:
                out.append(substitute)
                continue
        if isinstance(node, Text):
            out.append(node.text)
            continue
        try:
            if isinstance(node, Action):
                value = node.evaluate(scope)
                if node.variable is not None:
                    scope[node.variable] = value
                else:
                    out.append(_printed(value))
            else:
                value = node.evaluate(scope)
                if truthy(value):
                    if node.kind == "with":
                        inner = dict(scope)
                        inner["."] = value
                        _run(node.body, inner, out, name, replace)
                    else:
                        _run(node.body, scope, out, name, replace)
                else:
                    _run(node.otherwise, scope, out, name, replace)
        except TemplateError:
            raise
        except Exception as error:  # a function's failure, named with the action
            raise TemplateError(f"{name}:{node.line}: {node.source}: {error}") from None


def _printed(value: Any) -> str:
    if value is None:
        return ""  # Helm prints a missing value as nothing
    return go_str(value)


# ------------------------------------------------------------------ the functions the port provides


def _quote(*values: Any) -> str:
    return " ".join(go_quote_text(go_str(value)) for value in values if value is not None)


def _default(fallback: Any, *given: Any) -> Any:
    return given[0] if given and truthy(given[0]) else fallback


_PRINTF_VERB = re.compile(r"%([svdq%])")


def _printf(pattern: str, *values: Any) -> str:
    pieces = iter(values)

    def one(match: re.Match[str]) -> str:
        verb = match.group(1)
        if verb == "%":
            return "%"
        value = next(pieces)
        return go_quote_text(go_str(value)) if verb == "q" else _printed(value)

    return _PRINTF_VERB.sub(one, pattern)


#: sprig's and Go's functions as the templates the port reads use them (a caller adds ``include``).
SPRIG: Mapping[str, Callable[..., Any]] = {
    "quote": _quote,
    "replace": lambda old, new, text: go_str(text).replace(go_str(old), go_str(new)),
    "trimSuffix": lambda suffix, text: go_str(text).removesuffix(go_str(suffix)),
    "trimPrefix": lambda prefix, text: go_str(text).removeprefix(go_str(prefix)),
    "trim": lambda text: go_str(text).strip(" \t\n\r\v\f"),
    "toYaml": to_yaml,
    "nindent": lambda width, text: nindent(go_str(text), int(width)),
    "indent": lambda width, text: nindent(go_str(text), int(width))[1:],
    "ne": lambda left, right: left != right,
    "eq": lambda left, right: left == right,
    "not": lambda value: not truthy(value),
    "default": _default,
    "printf": _printf,
}


# ------------------------------------------------------------------ reading the text

_SPACE = " \t\r\n"


@dataclass
class _Token:
    kind: str  # "text" | "action" | "comment"
    text: str
    line: int


def _tokens(text: str, name: str) -> list[_Token]:
    """Text and actions, Go's trimming applied to the text beside a ``{{-`` or ``-}}``."""
    tokens: list[_Token] = []
    position, trim_next = 0, False
    while True:
        start = text.find("{{", position)
        chunk = text[position:] if start < 0 else text[position:start]
        if trim_next:
            chunk = chunk.lstrip(_SPACE)
        if start < 0:
            if chunk:
                tokens.append(_Token("text", chunk, text.count("\n", 0, position) + 1))
            return tokens
        line = text.count("\n", 0, start) + 1
        inner_start = start + 2
        if text.startswith("- ", inner_start) or text[inner_start : inner_start + 2] in ("-\t", "-\n", "-\r"):
            chunk = chunk.rstrip(_SPACE)
            inner_start += 2
        if chunk:
            tokens.append(_Token("text", chunk, text.count("\n", 0, position) + 1))
        body_start = inner_start
        while body_start < len(text) and text[body_start] in _SPACE:
            body_start += 1
        if text.startswith("/*", body_start):
            close = text.find("*/", body_start)
            if close < 0:
                raise TemplateError(f"{name}:{line}: an unclosed comment")
            end = close + 2
            while end < len(text) and text[end] in _SPACE:
                end += 1
            kind, inner = "comment", ""
        else:
            end = _action_end(text, body_start, name, line)
            kind, inner = "action", text[body_start:end]
        trim_next = False
        if text.startswith("-}}", end) and end > 0 and text[end - 1] in _SPACE:
            trim_next = True
            close_at = end + 3
        elif text.startswith("}}", end):
            close_at = end + 2
        else:
            raise TemplateError(f"{name}:{line}: an action that does not end with }}}}")
        if kind == "action":
            tokens.append(_Token("action", inner.strip(_SPACE), line))
        position = close_at


def _action_end(text: str, position: int, name: str, line: int) -> int:
    """Where an action's body ends (before ``}}`` or `` -}}``), strings and raw strings skipped."""
    index = position
    while index < len(text):
        char = text[index]
        if char in "\"'":
            index = _skip_quoted(text, index, char, name, line)
            continue
        if char == "`":
            close = text.find("`", index + 1)
            if close < 0:
                raise TemplateError(f"{name}:{line}: an unclosed raw string")
            index = close + 1
            continue
        if text.startswith("}}", index):
            back = index
            if back > position and text[back - 1] == "-" and back - 1 > position and text[back - 2] in _SPACE:
                return back - 1
            return index
        index += 1
    raise TemplateError(f"{name}:{line}: an unclosed action")


def _skip_quoted(text: str, index: int, quote: str, name: str, line: int) -> int:
    index += 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == quote:
            return index + 1
        if text[index] == "\n":
            break
        index += 1
    raise TemplateError(f"{name}:{line}: an unclosed string")


# ------------------------------------------------------------------ pipelines

_LEXEME = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\\n]|\\.)*")
    | (?P<raw>`[^`]*`)
    | (?P<number>-?[0-9]+(?:\.[0-9]+)?)
    | (?P<declare>:=)
    | (?P<punct>[|()])
    | (?P<variable>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", '"': '"', "'": "'"}


def _unquote(literal: str) -> str:
    def one(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] in "xuU":
            return chr(int(escape[1:], 16))
        if escape[0].isdigit():
            return chr(int(escape, 8))
        return _ESCAPES.get(escape, escape)

    return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", one, literal[1:-1])


def _lex(source: str, where: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    position = 0
    while position < len(source):
        if source[position:].strip() == "":
            break
        match = _LEXEME.match(source, position)
        if match is None or match.end() == position:
            raise TemplateError(f"{where}: cannot read {source[position:].strip()[:40]!r}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        position = match.end()
    return out


def _chain(value: Any, names: Sequence[str]) -> Any:
    for name in names:
        if value is None:
            return None
        value = value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
    return value


def _operand(kind: str, text: str, where: str) -> Evaluator:
    if kind == "string":
        literal = _unquote(text)
        return lambda scope: literal
    if kind == "raw":
        raw = text[1:-1]
        return lambda scope: raw
    if kind == "number":
        number = float(text) if "." in text else int(text)
        return lambda scope: number
    if kind == "field":
        names = [part for part in text.split(".") if part]
        return lambda scope: _chain(scope["."], names)
    if kind == "variable":
        head, *names = text.split(".")
        key = "$" if head == "$" else head

        def variable(scope: Scope) -> Any:
            if key not in scope:
                raise TemplateError(f"{where}: undefined variable {head}")
            return _chain(scope[key], names)

        return variable
    if kind == "word" and text in ("true", "false", "nil"):
        constant = {"true": True, "false": False, "nil": None}[text]
        return lambda scope: constant
    raise TemplateError(f"{where}: cannot read {text!r}")


class _Parser:
    def __init__(self, lexemes: list[tuple[str, str]], where: str) -> None:
        self.lexemes, self.position, self.where = lexemes, 0, where

    def peek(self) -> tuple[str, str] | None:
        return self.lexemes[self.position] if self.position < len(self.lexemes) else None

    def pipeline(self) -> Evaluator:
        commands = [self.command()]
        while (lexeme := self.peek()) is not None and lexeme == ("punct", "|"):
            self.position += 1
            commands.append(self.command())

        def run(scope: Scope) -> Any:
            value = commands[0](scope, ())
            for command in commands[1:]:
                value = command(scope, (value,))
            return value

        return run

    def command(self) -> Callable[[Scope, tuple[Any, ...]], Any]:
        parts: list[Evaluator] = []
        function: str | None = None
        first = True
        while (lexeme := self.peek()) is not None and lexeme not in (("punct", "|"), ("punct", ")")):
            kind, text = lexeme
            self.position += 1
            if kind == "punct" and text == "(":
                parts.append(self.pipeline())
                if self.peek() != ("punct", ")"):
                    raise TemplateError(f"{self.where}: an unclosed parenthesis")
                self.position += 1
            elif kind == "word" and first and text not in ("true", "false", "nil"):
                function = text
            else:
                parts.append(_operand(kind, text, self.where))
            first = False
        if function is None and not parts:
            raise TemplateError(f"{self.where}: an empty command")
        where = self.where

        if function is not None:
            name = function

            def call(scope: Scope, piped: tuple[Any, ...]) -> Any:
                functions = scope["functions"]
                if name not in functions:
                    raise TemplateError(f"{where}: the function {name} is not one the port provides")
                return functions[name](*(part(scope) for part in parts), *piped)

            return call

        head, arguments = parts[0], parts[1:]

        def value(scope: Scope, piped: tuple[Any, ...]) -> Any:
            found = head(scope)
            if arguments or piped:
                if not callable(found):
                    raise TemplateError(f"{where}: arguments given to a value that is no method")
                return found(*(argument(scope) for argument in arguments), *piped)
            return found

        return value


def _compile_action(source: str, where: str) -> tuple[str | None, Evaluator]:
    lexemes = _lex(source, where)
    variable = None
    if len(lexemes) >= 2 and lexemes[0][0] == "variable" and lexemes[1][0] == "declare":
        variable, lexemes = lexemes[0][1], lexemes[2:]
    parser = _Parser(lexemes, where)
    evaluate = parser.pipeline()
    if parser.peek() is not None:
        raise TemplateError(f"{where}: unexpected {parser.peek()}")
    return variable, evaluate


# ------------------------------------------------------------------ the tree

_KEYWORD = re.compile(r"^(if|with|else|end|define|range|block|template|break|continue)\b\s*(.*)$", re.S)


def _tree(tokens: list[_Token], name: str) -> tuple[Node, ...]:
    root: list[Node] = []
    stack: list[tuple[str, str, int, Evaluator, list[Node], list[Node] | None]] = []
    current = root
    for token in tokens:
        if token.kind == "text":
            current.append(Text(token.text))
            continue
        where = f"{name}:{token.line}"
        keyword = _KEYWORD.match(token.text)
        if keyword is None:
            variable, evaluate = _compile_action(token.text, where)
            current.append(Action(evaluate, token.text, token.line, variable))
            continue
        word, rest = keyword.group(1), keyword.group(2)
        if word in ("if", "with"):
            _, evaluate = _compile_action(rest, where)
            body: list[Node] = []
            stack.append((word, token.text, token.line, evaluate, body, None))
            current = body
        elif word == "else":
            if not stack or stack[-1][5] is not None or rest:
                raise TemplateError(f"{where}: an else the port does not read")
            kind, source, line, evaluate, body, _ = stack[-1]
            otherwise: list[Node] = []
            stack[-1] = (kind, source, line, evaluate, body, otherwise)
            current = otherwise
        elif word == "end":
            if not stack:
                raise TemplateError(f"{where}: an end without its block")
            kind, source, line, evaluate, body, other = stack.pop()
            current = stack[-1][5] if stack and stack[-1][5] is not None else stack[-1][4] if stack else root
            current.append(Block(kind, evaluate, source, line, tuple(body), tuple(other or ())))
        else:
            raise TemplateError(f"{where}: {word} is not read by the port")
    if stack:
        raise TemplateError(f"{name}:{stack[-1][2]}: a block without its end")
    return tuple(root)


def compile_template(text: str, name: str) -> Template:
    """A whole template file (no ``define`` in it)."""
    return Template(name, _tree(_tokens(text, name), name))


_DEFINE = re.compile(r'^define\s+"([^"]+)"$')


def compile_define(text: str, define: str, name: str) -> Template:
    """The body of ``{{ define "<define>" }}`` in the template file ``text`` (``name`` for messages)."""
    tokens = _tokens(text, name)
    for index, token in enumerate(tokens):
        match = _DEFINE.match(token.text) if token.kind == "action" else None
        if match is None or match.group(1) != define:
            continue
        depth = 0
        for end in range(index + 1, len(tokens)):
            inner = tokens[end]
            if inner.kind != "action":
                continue
            keyword = _KEYWORD.match(inner.text)
            word = keyword.group(1) if keyword else ""
            if word in ("if", "with", "range", "define", "block"):
                depth += 1
            elif word == "end":
                if depth == 0:
                    return Template(f"{name} ({define})", _tree(tokens[index + 1 : end], name))
                depth -= 1
        raise TemplateError(f"{name}:{token.line}: define {define!r} has no end")
    raise TemplateError(f"{name}: no define {define!r}")
