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

A compiled template runs as Python code generated from its nodes once (kept on the template, one
function per set of nodes a caller replaces), so a chart's text is read and turned into code once
per chart and each pool only runs it; the tree walker it is generated from stays as the reference
(:meth:`Template.interpret`), and a test holds the two to the same text and the same errors.

Values print as Helm prints them (``fmt.Sprint``; a missing value prints nothing). Its edge: text and
a context in, text out; pure.

Why one module: the reader's lexer, pipeline parser, tree and evaluator are one small language; each
part knows the others' shapes, and no other module uses a part alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api.frozen import fast_init
from .goyaml import to_yaml
from .quantity import go_quote_text, go_str, nindent, truthy

__all__ = [
    "SPRIG",
    "DataPath",
    "Template",
    "TemplateError",
    "compile_define",
    "compile_template",
    "data_read",
    "read_value",
]


class TemplateError(Exception):
    """Template text outside the subset this reader renders, or a failure while rendering it."""


Scope = dict[str, Any]  # "." (dot), "$" (root), "$name" (variables), and "functions"
Evaluator = Callable[[Scope], Any]


@fast_init
@dataclass(frozen=True, slots=True)
class Text:
    text: str


@fast_init
@dataclass(frozen=True, slots=True)
class Action:
    """``{{ pipeline }}`` (printed) or ``{{ $x := pipeline }}`` (``variable`` set, nothing printed)."""

    evaluate: Evaluator
    source: str
    line: int
    variable: str | None = None
    where: str = ""  # "<file>:<line>", as the action's own errors name it


@fast_init
@dataclass(frozen=True, slots=True)
class Block:
    """``{{ if }}`` / ``{{ with }}`` ... ``{{ else }}`` ... ``{{ end }}``."""

    kind: str
    evaluate: Evaluator
    source: str
    line: int
    body: tuple[Node, ...]
    otherwise: tuple[Node, ...] = ()
    where: str = ""  # "<file>:<line>", as the test's own errors name it


Node = Text | Action | Block


@dataclass(frozen=True)
class Template:
    """A compiled template: its nodes, and where it came from (for messages).

    :meth:`render` runs the nodes as Python code generated from them once per set of replaced
    nodes (:func:`_generate`, kept on the template); :meth:`interpret` walks the nodes instead,
    the reference the generated code is tested against. Both print the same text and raise the
    same errors."""

    name: str
    nodes: tuple[Node, ...]
    _code: dict[frozenset[int], _Generated] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

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
        replaced = frozenset(key for key, text in replace.items() if text is not None) if replace else frozenset()
        generated = self._code.get(replaced)
        if generated is None:
            generated = _generate(self, replaced)
            if len(self._code) >= 16:  # a few combinations of class-era inputs at most
                self._code.clear()
            self._code[replaced] = generated
        if generated is _NOT_GENERATED:
            return self.interpret(dot, functions=functions, root=root, replace=replace)
        return generated(dot, dot if root is None else root, functions, replace or {})

    def interpret(
        self,
        dot: Any,
        *,
        functions: Mapping[str, Callable[..., Any]],
        root: Any = None,
        replace: Mapping[int, str] | None = None,
    ) -> str:
        """What :meth:`render` returns, by walking the nodes."""
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
            current.append(Action(evaluate, token.text, token.line, variable, where))
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
            current.append(Block(kind, evaluate, source, line, tuple(body), tuple(other or ()), f"{name}:{line}"))
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


# ------------------------------------------------------------------ what a part of a template reads

#: A path into the data a template reads: the names of a field chain from ``$`` (or the top dot).
DataPath = tuple[str, ...]


def data_read(nodes: Sequence[Node]) -> tuple[DataPath, ...] | None:
    """The paths whose values decide everything ``nodes`` print and every failure they raise, for a
    render whose ``$`` is its dot (``root`` unset), in the order they are first read; or None when
    their text may depend on anything else.

    Every field chain from the top-level dot or from ``$`` is a path (``.`` or ``$`` alone: ``()``,
    the whole data). What a ``with`` body reads of its own dot is a part of the value its test
    read, and a variable the nodes declare holds what its pipeline read: neither adds a path. A
    variable the nodes do not declare themselves (set before them) makes it None, and so does a
    pipeline the code generator does not read. The functions are pure: two renders whose data holds
    equal values at every path (read as the generated code reads them, :func:`read_value`) print the
    same text, or fail the same way."""
    out: list[DataPath] = []
    try:
        known = _read_nodes(nodes, False, set(), out)
    except (_NotGenerated, TemplateError):
        return None
    return tuple(dict.fromkeys(out)) if known else None


def read_value(data: Any, path: DataPath) -> Any:
    """The value the generated code reads at ``path`` of ``data`` (a missing step is None)."""
    value = data
    for name in path:
        value = value.get(name) if value.__class__ is dict else _step(value, name)
    return value


def _read_nodes(nodes: Sequence[Node], in_with: bool, defined: set[str], out: list[DataPath]) -> bool:
    for node in nodes:
        if isinstance(node, Text):
            continue
        if isinstance(node, Action):
            lexemes = _lex(node.source, node.where)
            if node.variable is not None:
                lexemes = lexemes[2:]
            pipeline, _ = _parse_pipeline(lexemes, 0)
            if not _read_pipeline(pipeline, in_with, defined, out):
                return False
            if node.variable is not None:
                defined.add(node.variable)
            continue
        keyword = _KEYWORD.match(node.source)
        if keyword is None:  # pragma: no cover - the tree holds only the blocks it read
            return False
        pipeline, _ = _parse_pipeline(_lex(keyword.group(2), node.where), 0)
        if not _read_pipeline(pipeline, in_with, defined, out):
            return False
        if not _read_nodes(node.body, in_with or node.kind == "with", set(defined), out):
            return False
        if not _read_nodes(node.otherwise, in_with, set(defined), out):
            return False
    return True


def _read_pipeline(commands: list[_Command], in_with: bool, defined: set[str], out: list[DataPath]) -> bool:
    for _, parts in commands:
        for part in parts:
            kind = part[0]
            if kind == "pipe":
                if not _read_pipeline(part[1], in_with, defined, out):
                    return False
            elif kind == "field":
                if not in_with:  # in a with body the dot is what the with's test read
                    out.append(tuple(part[1]))
            elif kind == "var":
                if part[1] == "$":
                    out.append(tuple(part[2]))
                elif part[1] not in defined:
                    return False
    return True


# ------------------------------------------------------------------ the nodes as Python code
#
# ``_generate`` writes one Python function per template (and set of replaced nodes) that prints what
# ``_run`` prints: the texts between actions joined into constants, each pipeline as statements
# in the interpreter's order of evaluation (so the same function fails first), dot and ``$`` as
# locals, variables in a dict copied where a ``with`` body declares its own, and every action and
# block in a ``try`` that names it as ``_run`` does. Fields of a dict are read inline; anything
# else goes through ``_step``, one step of ``_chain``.

_Generated = Callable[[Any, Any, Mapping[str, Callable[..., Any]], Mapping[int, str]], str]
_Operand = tuple[Any, ...]  # ("const", value) | ("field", names) | ("var", head, names) | ("pipe", pipeline)
_Command = tuple[str | None, list[_Operand]]
_MISSING = object()


def _NOT_GENERATED(dot: Any, root: Any, functions: Mapping[str, Callable[..., Any]], replace: Mapping[int, str]) -> str:
    raise AssertionError("a template outside what the generator writes is interpreted")  # pragma: no cover


class _NotGenerated(Exception):
    """A construct the generator leaves to the interpreter (none of the known charts has one)."""


def _step(value: Any, name: str) -> Any:
    if value is None:
        return None
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _no_function(where: str, name: str) -> None:
    raise TemplateError(f"{where}: the function {name} is not one the port provides")


def _undefined(where: str, head: str) -> None:
    raise TemplateError(f"{where}: undefined variable {head}")


def _wrap(prefix: str, error: Exception) -> TemplateError:
    return TemplateError(f"{prefix}{error}")


def _parse_pipeline(lexemes: list[tuple[str, str]], position: int) -> tuple[list[_Command], int]:
    """``_Parser.pipeline``'s reading, as data."""
    commands = []
    command, position = _parse_command(lexemes, position)
    commands.append(command)
    while position < len(lexemes) and lexemes[position] == ("punct", "|"):
        command, position = _parse_command(lexemes, position + 1)
        commands.append(command)
    return commands, position


def _parse_command(lexemes: list[tuple[str, str]], position: int) -> tuple[_Command, int]:
    parts: list[_Operand] = []
    function: str | None = None
    first = True
    while position < len(lexemes) and lexemes[position] not in (("punct", "|"), ("punct", ")")):
        kind, text = lexemes[position]
        position += 1
        if kind == "punct" and text == "(":
            inner, position = _parse_pipeline(lexemes, position)
            parts.append(("pipe", inner))
            position += 1  # the ")" (the interpreter's parser has checked it)
        elif kind == "word" and first and text not in ("true", "false", "nil"):
            function = text
        elif kind == "string":
            parts.append(("const", _unquote(text)))
        elif kind == "raw":
            parts.append(("const", text[1:-1]))
        elif kind == "number":
            parts.append(("const", float(text) if "." in text else int(text)))
        elif kind == "word":
            parts.append(("const", {"true": True, "false": False, "nil": None}[text]))
        elif kind == "field":
            parts.append(("field", [part for part in text.split(".") if part]))
        elif kind == "variable":
            head, *names = text.split(".")
            parts.append(("var", head, names))
        else:  # pragma: no cover - the interpreter's parser refuses it first
            raise _NotGenerated(text)
        first = False
    return (function, parts), position


def _declares(nodes: Sequence[Node]) -> bool:
    for node in nodes:
        if isinstance(node, Action) and node.variable is not None:
            return True
        if isinstance(node, Block) and (_declares(node.body) or _declares(node.otherwise)):
            return True
    return False


class _Writer:
    def __init__(self, template: Template, replaced: frozenset[int]) -> None:
        self.name, self.replaced = template.name, replaced
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.functions: dict[str, str] = {}
        self.count = 0

    def temporary(self, prefix: str = "t") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def constant(self, value: Any) -> str:
        name = f"k{len(self.constants)}"
        self.constants[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def nodes(self, nodes: Sequence[Node], depth: int, dot: str, scope: str, defined: set[str]) -> None:
        pending: list[str] = []
        start = len(self.lines)

        def flush() -> None:
            if pending:
                self.emit(depth, f"a({self.constant(''.join(pending))})")
                pending.clear()

        for node in nodes:
            if id(node) in self.replaced:
                flush()
                self.emit(depth, f"a(R[{id(node)}])")
            elif isinstance(node, Text):
                pending.append(node.text)
            else:
                flush()
                self.node(node, depth, dot, scope, defined)
        flush()
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def node(self, node: Action | Block, depth: int, dot: str, scope: str, defined: set[str]) -> None:
        prefix = self.constant(f"{self.name}:{node.line}: {node.source}: ")
        self.emit(depth, "try:")
        inner = depth + 1
        if isinstance(node, Action):
            lexemes = _lex(node.source, node.where)
            if node.variable is not None:
                if node.variable == "$" or "." in node.variable:
                    raise _NotGenerated(node.source)
                lexemes = lexemes[2:]
            pipeline, _ = _parse_pipeline(lexemes, 0)
            value = self.pipeline(pipeline, inner, dot, scope, defined, node.where)
            if node.variable is not None:
                self.emit(inner, f"{scope}[{node.variable!r}] = {value}")
                defined.add(node.variable)
            else:
                self.emit(inner, f"a({value} if {value}.__class__ is str else P({value}))")
        else:
            keyword = _KEYWORD.match(node.source)
            assert keyword is not None
            pipeline, _ = _parse_pipeline(_lex(keyword.group(2), node.where), 0)
            value = self.pipeline(pipeline, inner, dot, scope, defined, node.where)
            self.emit(inner, f"if T({value}):")
            if node.kind == "with":
                inner_dot, inner_scope = self.temporary("d"), scope
                self.emit(inner + 1, f"{inner_dot} = {value}")
                if _declares(node.body):
                    inner_scope = self.temporary("S")
                    self.emit(inner + 1, f"{inner_scope} = dict({scope})")
                self.nodes(node.body, inner + 1, inner_dot, inner_scope, set(defined))
            else:
                self.nodes(node.body, inner + 1, dot, scope, set(defined))
            if node.otherwise:
                self.emit(inner, "else:")
                self.nodes(node.otherwise, inner + 1, dot, scope, set(defined))
        self.emit(depth, "except TemplateError:")
        self.emit(depth + 1, "raise")
        self.emit(depth, "except Exception as error:")
        self.emit(depth + 1, f"raise W({prefix}, error) from None")

    def pipeline(
        self, commands: list[_Command], depth: int, dot: str, scope: str, defined: set[str], where: str
    ) -> str:
        value = self.command(commands[0], None, depth, dot, scope, defined, where)
        for command in commands[1:]:
            value = self.command(command, value, depth, dot, scope, defined, where)
        return value

    def command(
        self,
        command: _Command,
        piped: str | None,
        depth: int,
        dot: str,
        scope: str,
        defined: set[str],
        where: str,
    ) -> str:
        function, parts = command
        tail = [] if piped is None else [piped]
        result = self.temporary()
        if function is not None:
            local = self.functions.setdefault(function, f"f{len(self.functions)}")
            self.emit(depth, f"if {local} is M:")
            self.emit(depth + 1, f"N({where!r}, {function!r})")
            arguments = [self.operand(part, depth, dot, scope, defined, where) for part in parts]
            self.emit(depth, f"{result} = {local}({', '.join(arguments + tail)})")
            return result
        head = self.operand(parts[0], depth, dot, scope, defined, where)
        if len(parts) == 1 and piped is None:
            return head
        message = f"{where}: arguments given to a value that is no method"
        self.emit(depth, f"if not callable({head}):")
        self.emit(depth + 1, f"raise TemplateError({message!r})")
        arguments = [self.operand(part, depth, dot, scope, defined, where) for part in parts[1:]]
        self.emit(depth, f"{result} = {head}({', '.join(arguments + tail)})")
        return result

    def operand(self, part: _Operand, depth: int, dot: str, scope: str, defined: set[str], where: str) -> str:
        kind = part[0]
        if kind == "const":
            return self.constant(part[1])
        if kind == "pipe":
            return self.pipeline(part[1], depth, dot, scope, defined, where)
        if kind == "field":
            return self.chain(dot, part[1], depth)
        head, names = part[1], part[2]
        if head == "$":
            return self.chain("r", names, depth)
        if head not in defined:
            self.emit(depth, f"if {head!r} not in {scope}:")
            self.emit(depth + 1, f"U({where!r}, {head!r})")
        value = self.temporary()
        self.emit(depth, f"{value} = {scope}[{head!r}]")
        return self.chain(value, names, depth)

    def chain(self, base: str, names: list[str], depth: int) -> str:
        if not names:
            return base
        value = self.temporary()
        self.emit(depth, f"{value} = {base}")
        for name in names:
            self.emit(depth, f"{value} = {value}.get({name!r}) if {value}.__class__ is dict else G({value}, {name!r})")
        return value


def _generate(template: Template, replaced: frozenset[int]) -> _Generated:
    """The template as one Python function of (dot, root, functions, replace), or
    :data:`_NOT_GENERATED` for a construct the generator leaves to :meth:`Template.interpret`."""
    writer = _Writer(template, replaced)
    try:
        writer.nodes(template.nodes, 1, "d0", "S", set())
    except _NotGenerated:
        return _NOT_GENERATED
    head = ["def _render(d0, r, F, R):", "    S = {}", "    o = []", "    a = o.append"]
    head += [f"    {local} = F.get({name!r}, M)" for name, local in writer.functions.items()]
    source = "\n".join([*head, *writer.lines, "    return ''.join(o)", ""])
    namespace: dict[str, Any] = {
        "TemplateError": TemplateError,
        "P": _printed,
        "T": truthy,
        "G": _step,
        "M": _MISSING,
        "N": _no_function,
        "U": _undefined,
        "W": _wrap,
        **writer.constants,
    }
    exec(compile(source, f"<template {template.name}>", "exec"), namespace)  # our own code, generated from the nodes
    generated: _Generated = namespace["_render"]
    return generated
