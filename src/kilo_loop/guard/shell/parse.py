"""Walking a bash syntax tree (tree-sitter-bash) the way bash runs it.

The walker follows lists, pipelines, subshells, groups, if/while/until/for/case, functions,
`$(…)`, backticks, `<(…)`, heredocs and here-strings, evaluates each word (quotes, `$'…'`,
parameters, `~`, brace expansion, field splitting) and hands every simple command to the
analyzer. Text it cannot parse is reported, never guessed at.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from tree_sitter import Language, Node, Parser

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell.flow import Flow, Outcome, State, Step, fold
from kilo_loop.guard.shell.grammar import bash_language
from kilo_loop.guard.shell.model import HOME, KEEP, SHELL_PID, UNKNOWN, Executed, Unanalysable
from kilo_loop.guard.shell.words import ansi_c, brace_alternatives, integer_arithmetic

MAX_SOURCE_BYTES = 200_000
MAX_NESTING = 150
"""Syntax nested deeper than this is denied rather than followed: the walk is recursive, and a
bound of its own keeps it off the C stack whatever the interpreter's recursion limit is."""
_LANGUAGE = Language(bash_language())
_LOCAL = threading.local()

_STATEMENTS = frozenset({
    "command", "list", "pipeline", "redirected_statement", "subshell", "compound_statement", "if_statement",
    "while_statement", "for_statement", "c_style_for_statement", "case_statement", "function_definition",
    "negated_command", "test_command", "declaration_command", "unset_command", "variable_assignment",
    "variable_assignments",
})
_BRANCHING = frozenset({"if_statement", "while_statement", "for_statement", "c_style_for_statement",
                        "case_statement"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"})
_OUTPUT_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
_LOOP_PASSES_NESTING = 3
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_ARITH_NAME = LazyRegex(r"(?<![\w$])[A-Za-z_]\w*")
PIPE = UNKNOWN
"""stdin that comes from a pipe or file whose content cannot be known."""


class TooDeep(Exception):
    """The syntax tree nests deeper than MAX_NESTING."""


class Analyst(Protocol):
    """What the walker hands on and asks back (`analyze.Analyzer` answers): every simple command,
    assignment, declaration, redirect and substitution goes there; variables and files come back.
    A protocol, so the walker names no module above it."""

    out: list[Executed]
    functions: dict[str, str]
    descriptors: int

    def run_simple(self, argv: list[str], state: State, stdin: str | None,
                   env: Mapping[str, str | None], depth: int) -> Outcome: ...
    def script(self, text: str, state: State, depth: int, stdin: str | None = None) -> Flow: ...
    def declaration(self, keyword: str, declared: Sequence[tuple[str, str | None]], state: State) -> State: ...
    def assigned(self, name: str, value: str | None, state: State, depth: int) -> None: ...
    def watches(self, name: str) -> bool: ...
    def lookup(self, name: str, state: State) -> str | None: ...
    def variable(self, name: str, state: State) -> str: ...
    def substitution_value(self, argv: Sequence[str] | None, state: State) -> str: ...
    def printed(self, argv: Sequence[str]) -> str | None: ...
    def wrote(self, path: str, content: str | None, cwds: frozenset[str | None]) -> None: ...
    def output_redirect(self, target: str, cwds: frozenset[str | None], record: bool = True) -> None: ...
    def file_content(self, path: str, cwds: frozenset[str | None]) -> str | None: ...
    def disk_input(self, target: str, cwds: frozenset[str | None]) -> str | None: ...


def _parser() -> Parser:
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = Parser(_LANGUAGE)
    return parser


# tree-sitter-bash 0.25.1 crashes the process (SIGSEGV, with tree-sitter 0.25 and 0.26 alike) on some
# code points past U+7FFFF, e.g. `{` U+FBC7E U+01C0: a guard that dies lets the command through an
# agent's hook, or takes the loop down. To bash every byte from 0x80 up is a plain word character, so
# the grammar is shown an ASCII letter in its place: the tree has the same shape and byte offsets, and
# words are still read from `source`.
_ASCII_STAND_INS = bytes(range(0x80)) + b"a" * 0x80


def parse(source: bytes) -> Node | str:
    """The syntax tree of `source`, or why it cannot be analysed (node offsets index `source`)."""
    if len(source) > MAX_SOURCE_BYTES:
        return f"the command is longer than {MAX_SOURCE_BYTES} bytes"
    if b"\x00" in source:
        return "the command contains a NUL byte"
    parsable = source if source.isascii() else source.translate(_ASCII_STAND_INS)
    root = _parser().parse(parsable).root_node
    if root.has_error:
        bad = _first_error(root)
        where = source[bad.start_byte:bad.start_byte + 30].decode("utf-8", "replace") if bad else ""
        return f"it is not valid bash (tree-sitter-bash cannot parse it near {where!r})"
    return root


def join_continuations(source: bytes) -> bytes:
    """`source` with every backslash-newline removed where bash removes it before reading words
    (`r\\<newline>m` is `rm`, in any position of any word): everywhere except inside single quotes,
    `$'…'`, comments and quoted heredoc bodies. tree-sitter-bash reads the pair as a word break, so
    the text is joined first and parsed again; what is protected is found in the tree of the text
    as it stands, until nothing changes."""
    for _ in range(8):
        if b"\\\n" not in source:
            return source
        root = _parser().parse(source if source.isascii() else source.translate(_ASCII_STAND_INS)).root_node
        joined = _remove_pairs(source, sorted(_literal_spans(root)))
        if joined == source:
            return source
        source = joined
    return source


def _literal_spans(root: Node) -> Iterator[tuple[int, int]]:
    """Byte ranges where a backslash-newline is kept as it is."""
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in ("raw_string", "ansi_c_string", "comment"):
            yield node.start_byte, node.end_byte
        elif kind == "heredoc_redirect":
            start = next((c for c in node.children if c.type == "heredoc_start"), None)
            quoted = start is not None and any(q in (start.text or b"") for q in (b"'", b'"', b"\\"))
            for child in node.children:
                if child.type == "heredoc_body" and quoted:
                    yield child.start_byte, child.end_byte
                else:
                    stack.append(child)
        else:
            stack.extend(node.children)


def _remove_pairs(source: bytes, protected: Sequence[tuple[int, int]]) -> bytes:
    """Drop each backslash-newline outside `protected`; a backslash escapes the byte after it, so
    `\\\\<newline>` keeps its newline."""
    out = bytearray()
    i, spans, n = 0, list(protected), len(source)
    while i < n:
        if spans and i >= spans[0][0]:
            end = spans.pop(0)[1]
            if i < end:
                out += source[i:end]
                i = end
            continue
        byte = source[i]
        if byte == 0x5C and i + 1 < n:
            if source[i + 1] != 0x0A:
                out += source[i:i + 2]
            i += 2
            continue
        out.append(byte)
        i += 1
    return bytes(out)


def _first_error(node: Node) -> Node | None:
    while not (node.type == "ERROR" or node.is_missing):
        child = next((c for c in node.children if c.has_error), None)
        if child is None:
            return None
        node = child
    return node


def _flatten_list(node: Node) -> list[tuple[str | None, Node]]:
    """`a && b || c` (left-nested lists) as [(None, a), ("&&", b), ("||", c)], without recursion
    (a long `&&` chain nests as deep as it is long)."""
    chain = [node]
    while chain[-1].children and chain[-1].children[0].type == "list":
        chain.append(chain[-1].children[0])
    items: list[tuple[str | None, Node]] = []
    for level in reversed(chain):
        op: str | None = None
        for index, child in enumerate(level.children):
            if index == 0 and child.type == "list":
                continue
            if child.type in ("&&", "||"):
                op = child.type
            elif child.is_named and child.type != "comment":
                items.append((op if items else None, child))
    return items


class Walker:
    """One parsed script: walks its tree, evaluating words against the analyzer's state."""

    def __init__(self, analyzer: Analyst, source: bytes, depth: int) -> None:
        self.an = analyzer
        self.source = source
        self.braces = b"{" in source
        self.depth = depth
        self.loops = 0
        self.nesting = 0
        self.piped_stdin: str | None = None
        # A substitution's value, per node and state: words are evaluated twice (to run a command and
        # to know what `$(cmd)` prints), and re-walking nested substitutions would be exponential.
        self._substituted: dict[tuple[int, int, int], tuple[State, str]] = {}

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")

    # -- statements
    def run(self, root: Node, state: State) -> Flow:
        return self.sequence(root.children, state)

    def sequence(self, children: Sequence[Node], state: State) -> Flow:
        """Statements separated by `;`, `&` or newlines; a `&` statement runs in the background."""
        items: list[tuple[str | None, Step]] = []
        for index, child in enumerate(children):
            if not child.is_named or child.type in ("comment", "heredoc_body"):
                continue
            background = index + 1 < len(children) and children[index + 1].type == "&"
            items.append((";", self._step(child, background)))
        return fold(items, state)

    def _step(self, node: Node, background: bool = False) -> Step:
        def step(state: State) -> Flow:
            flow = self.walk(node, state)
            return (state, state) if background else flow
        return step

    def walk(self, node: Node, state: State) -> Flow:
        self.nesting += 1
        try:
            if self.nesting > MAX_NESTING:
                raise TooDeep
            return self._walk(node, state)
        finally:
            self.nesting -= 1

    def _walk(self, node: Node, state: State) -> Flow:
        kind = node.type
        if kind == "command":
            succ, fail, _ = self.command(node, state, self.piped_stdin)
            return succ, fail
        if kind == "list":
            return fold([(op, self._step(part)) for op, part in _flatten_list(node)], state)
        if kind == "pipeline":
            return self._pipeline([c for c in node.children if c.is_named], state)
        if kind == "redirected_statement":
            succ, fail, _ = self._redirected(node, state, self.piped_stdin)
            return succ, fail
        if kind in ("compound_statement", "subshell", "do_group"):
            flow = self.sequence(node.children, state)
            return (state, state) if kind == "subshell" else flow
        if kind in _BRANCHING:
            return self._branches(node, state)
        if kind == "function_definition":
            body = node.child_by_field_name("body")
            name = node.child_by_field_name("name")
            if body is not None:
                self.walk(body, state)
                if name is not None:  # a call runs the body again, with the call's arguments
                    self.an.functions[self.text(name)] = self.text(body)
            return state, state
        if kind == "negated_command":
            succ, fail = self.sequence(node.children, state)
            return succ.join(fail), succ.join(fail)
        if kind in ("variable_assignment", "variable_assignments"):
            new = self._assign(node, state)
            return new, new
        if kind == "test_command":
            self._test(node, state)
            return state, state
        if kind in ("declaration_command", "unset_command"):
            new = self.an.declaration(node.children[0].type, self._declared(node, state), state)
            return new, new
        self.substitutions(node, state)
        return state, state

    def _test(self, node: Node, state: State) -> None:
        """`[[ … ]]`: its substitutions run, and an operand of `-eq`/`-lt`/… is evaluated as arithmetic,
        which runs the substitutions in an array subscript it holds (`[[ 'a[$(cmd)]' -eq 1 ]]`)."""
        self.substitutions(node, state)
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "binary_expression" and any(
                    c.type == "test_operator" and self.text(c) in _ARITH_TESTS for c in current.children):
                operands = [c for c in current.children if c.is_named and c.type != "test_operator"]
                self.arithmetic_values([self.word_text(c, state, split=False) for c in operands] +
                                       [self.an.lookup(self.text(c), state) for c in operands if c.type == "word"],
                                       state)
            stack.extend(c for c in current.children if c.child_count)

    def _pipeline(self, parts: Sequence[Node], state: State, stdin: str | None = None) -> Flow:
        for index, part in enumerate(parts):
            if index:
                stdin = PIPE if stdin is None else stdin
            stdin = self._pipe_element(part, state, stdin)
        return state, state

    def _pipe_element(self, part: Node, state: State, stdin: str | None) -> str | None:
        """Run one pipeline element reading `stdin`; what it prints (None when not known)."""
        if part.type == "command":
            return self.command(part, state, stdin)[2]
        if part.type == "redirected_statement":
            return self._redirected(part, state, stdin)[2]
        saved, self.piped_stdin = self.piped_stdin, stdin
        try:
            self.walk(part, state)
        finally:
            self.piped_stdin = saved
        return None

    def _branches(self, node: Node, state: State) -> Flow:
        """if/while/until/for/case: every branch may run. A loop body is walked twice, for what one
        pass leaves to the next (only for the outer loops: nested doubling would be exponential)."""
        loop = node.type != "if_statement" and node.type != "case_statement"
        passes = 2 if loop and self.loops < _LOOP_PASSES_NESTING else 1
        variable = node.child_by_field_name("variable")
        self.loops += loop
        try:
            acc = state
            for _ in range(passes):
                if variable is not None:
                    acc = acc.with_var(self.text(variable), None)
                for part in self._branch_parts(node):
                    if part.type in _STATEMENTS:
                        succ, fail = self.walk(part, acc)
                        acc = acc.join(succ).join(fail)
                    elif part.type in ("do_group", "compound_statement"):
                        succ, fail = self.sequence(part.children, acc)
                        acc = acc.join(succ).join(fail)
                    else:
                        self.substitutions(part, acc)
            return acc, acc
        finally:
            self.loops -= loop

    def _branch_parts(self, node: Node) -> Iterator[Node]:
        for index, child in enumerate(node.children):
            if not child.is_named or child.type == "comment":
                continue
            if node.type == "for_statement" and node.field_name_for_child(index) == "variable":
                continue
            if child.type in ("elif_clause", "else_clause", "case_item"):
                yield from self._branch_parts(child)
            else:
                yield child

    # -- simple commands
    def command(self, node: Node, state: State, stdin: str | None,
                extra_redirects: Sequence[Node] = ()) -> Outcome:
        words: list[str] = []
        assignments: list[tuple[str, str | None]] = []
        redirects: list[Node] = list(extra_redirects)
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                assignments.append(self._assignment(child, state))
            elif kind in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                redirects.append(child)
            elif kind == "command_name":
                words += self.fields(child.children[0] if child.children else child, state)
            elif child.is_named and kind != "comment":
                words += self.fields(child, state)
        for redirect in redirects:
            fed = self.redirect(redirect, state)
            stdin = fed if fed is not None else stdin
        if not words:
            new = state
            for name, value in assignments:
                new = new.with_var(name, value)
            return new, new, None
        outcome = self.an.run_simple(words, state, stdin, dict(assignments), self.depth)
        written = [r for r in redirects if self._output_target(r) is not None]
        if written:
            for target in (self._output_target(r) for r in written):
                self.an.wrote(target or UNKNOWN, outcome[2], state.cwds)
            return outcome[0], outcome[1], None
        return outcome

    def _redirected(self, node: Node, state: State, stdin: str | None) -> Outcome:
        """A statement with redirections. tree-sitter-bash hangs what follows a heredoc's start on
        the heredoc node (`cat <<EOF | sh`, `cat <<EOF > f && sh f`): that is put back in order."""
        body = node.child_by_field_name("body")
        redirects: list[Node] = []
        pipe_tail: list[Node] = []
        after: list[tuple[str, Node]] = []
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) != "redirect":
                continue
            redirects.append(child)
            if child.type == "heredoc_redirect":
                self._heredoc_tail(child, redirects, pipe_tail, after)
        if body is None:
            for redirect in redirects:
                self.redirect(redirect, state)
            return state, state, None
        if body.type == "command":
            outcome = self.command(body, state, stdin, redirects)
        else:
            inputs = [r for r in redirects if r.type != "file_redirect"]
            fed = [f for f in (self.redirect(r, state) for r in inputs) if f is not None]
            saved, self.piped_stdin = self.piped_stdin, (fed[-1] if fed else stdin)
            try:
                succ, fail = self.walk(body, state)
            finally:
                self.piped_stdin = saved
            # tree-sitter-bash hangs `a && b > f` 's redirect on the whole list: b may run anywhere a or b did
            after_body = state.join(succ).join(fail)
            for redirect in redirects:
                if redirect.type == "file_redirect":
                    self.redirect(redirect, after_body)
            outcome = (succ, fail, None)
        if pipe_tail:
            self._pipeline(pipe_tail, state, outcome[2] if outcome[2] is not None else PIPE)
            outcome = (state, state, None)
        if after:
            def first(_s: State) -> tuple[State, State]:
                return outcome[0], outcome[1]

            succ, fail = fold([(None, first), *((op, self._step(n)) for op, n in after)], state)
            return succ, fail, None
        return outcome

    def _heredoc_tail(self, heredoc: Node, redirects: list[Node], pipe_tail: list[Node],
                      after: list[tuple[str, Node]]) -> None:
        op = ";"
        for index, child in enumerate(heredoc.children):
            field = heredoc.field_name_for_child(index)
            if field == "redirect":
                redirects.append(child)
            elif field == "operator":
                op = child.type
            elif field == "right":
                after.append((op, child))
            elif child.type == "pipeline":
                elements = [c for c in child.children if c.is_named]
                if elements and elements[0].type == "list":
                    flat = _flatten_list(elements[0])
                    elements = [flat[0][1], *elements[1:]]
                    after.extend((o or ";", n) for o, n in flat[1:])
                pipe_tail.extend(elements)
            elif child.type in _STATEMENTS:
                after.append((op, child))

    def redirect(self, node: Node, state: State) -> str | None:
        """Handle one redirection; return the text it feeds to stdin (heredoc, here-string), if any."""
        if node.type == "heredoc_redirect":
            return self._heredoc(node, state)
        if node.type == "herestring_redirect":
            value = [c for c in node.children if c.is_named]
            return " ".join(self.fields(value[-1], state)) + "\n" if value else ""
        destination = node.child_by_field_name("destination")
        operator = next((c.type for c in node.children if not c.is_named), "")
        if destination is None:
            return None
        target = self.word_text(destination, state)
        if operator in _OUTPUT_OPERATORS and not (operator in (">&", "<&") and destination.type == "number"):
            self.an.output_redirect(target, state.cwds)
        elif operator == "<":
            content = self.an.file_content(target, state.cwds)
            return content if content is not None else self.an.disk_input(target, state.cwds)
        elif operator == "<&" and target not in ("-", "0"):
            return PIPE  # stdin from another descriptor: a pipe or process substitution opened earlier
        return None

    def _output_target(self, node: Node) -> str | None:
        if node.type != "file_redirect":
            return None
        operator = next((c.type for c in node.children if not c.is_named), "")
        destination = node.child_by_field_name("destination")
        descriptor = node.child_by_field_name("descriptor")
        if destination is None or operator not in _OUTPUT_OPERATORS or destination.type == "number":
            return None
        if descriptor is not None and self.text(descriptor) not in ("1",):
            return None
        return self.text(destination)

    def _heredoc(self, node: Node, state: State) -> str:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return ""
        quoted = start is not None and any(q in self.text(start) for q in "'\"\\")
        text = self.text(body) if quoted else self._expand_spans(body, state, heredoc=True)
        if any(c.type == "<<-" for c in node.children):
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return text

    # -- assignments
    def _assignment(self, node: Node, state: State) -> tuple[str, str | None]:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        appends = any(c.type == "+=" for c in node.children)
        key = self.text(name) if name is not None else ""
        if name is not None and name.type == "subscript":  # `a[$(cmd)]=v` runs cmd
            self.substitutions(name, state)
        if value is None:
            return key, "" if not appends else None
        if value.type == "array":
            self.substitutions(value, state)
            if self.an.watches(key):  # `PROMPT_COMMAND=(cmd …)`: each element runs
                for element in (c for c in value.children if c.is_named):
                    self.an.assigned(key, self.word_text(element, state, split=False), state, self.depth)
            return key, None
        text = self.word_text(value, state, split=False)
        result = None if appends or name is None or name.type != "variable_name" else text
        self.an.assigned(key, result, state, self.depth)
        return key, result

    def _assign(self, node: Node, state: State) -> State:
        parts = [node] if node.type == "variable_assignment" else [c for c in node.children if c.is_named]
        for part in parts:
            name, value = self._assignment(part, state)
            state = state.with_var(name, value)
        return state

    def _declared(self, node: Node, state: State) -> list[tuple[str, str | None]]:
        declared: list[tuple[str, str | None]] = []
        flags = "".join(self.text(c)[1:] for c in node.children[1:] if c.type == "word" and self.text(c)[:1] == "-")
        for child in node.children[1:]:
            if child.type == "variable_assignment":
                name, value = self._assignment(child, state)
                if "i" in flags and value:  # an integer's value is evaluated as arithmetic
                    self.arithmetic_values([value], state)
                # a nameref (`declare -n r=X`) stands for another variable: its value is not known here
                declared.append((name, None if "n" in flags else value))
            elif child.type == "variable_name":
                declared.append((self.text(child), KEEP))
            elif child.is_named:
                for word in self.fields(child, state):
                    declared.append((word, KEEP))
        return declared

    # -- words
    def word_text(self, node: Node, state: State, split: bool = True) -> str:
        return " ".join(self.fields(node, state, split))

    def fields(self, node: Node, state: State, split: bool = True) -> list[str]:
        """The words `node` expands to: quotes removed, parameters and substitutions expanded,
        unquoted expansions split on whitespace, brace expansion applied."""
        builder = _Fields()
        self._collect(node, state, builder, split)
        words = builder.words()
        if split and self.braces and self._has_braces(node):
            expanded: list[str] = []
            for word in words:
                alternatives = brace_alternatives(word)
                expanded += alternatives if alternatives is not None else [UNKNOWN]
            return expanded
        return words

    def _has_braces(self, node: Node) -> bool:
        if node.type == "brace_expression":
            return True
        if node.type == "word":
            return "{" in self.text(node)
        return node.type == "concatenation" and any(self._has_braces(c) for c in node.children)

    def _collect(self, node: Node, state: State, out: _Fields, split: bool) -> None:
        kind = node.type
        if kind == "concatenation":
            if self.nesting > MAX_NESTING:
                raise TooDeep
            for child in node.children:
                self._collect(child, state, out, split)
        elif kind == "word":
            out.literal(self._unquoted_word(self.text(node)))
        elif kind == "raw_string":
            out.literal(self.text(node)[1:-1], quoted=True)
        elif kind == "ansi_c_string":
            out.literal(ansi_c(self.text(node)[2:-1]), quoted=True)
        elif kind in ("string", "translated_string"):
            string = node if kind == "string" else next((c for c in node.children if c.type == "string"), node)
            out.literal(self._expand_spans(string, state), quoted=True)
        elif kind in _EXPANSIONS or kind == "process_substitution":
            value = self.expansion(node, state)
            if split and kind != "arithmetic_expansion":
                out.expanded(value, ifs_changed="IFS" in state.vars)
            else:
                out.literal(value, quoted=True)
        elif kind == "$":
            if self.text(node) == "$$":  # the grammar's token for `$$` (the shell's pid) after a word: `-$$`
                out.literal(SHELL_PID)
            return
        else:
            self.substitutions(node, state)
            out.literal(self.text(node))

    def _unquoted_word(self, raw: str) -> str:
        if raw.startswith("~"):
            user, slash, rest = raw[1:].partition("/")
            raw = (UNKNOWN if user else HOME) + slash + rest
        return _unescape(raw, None)

    def _expand_spans(self, node: Node, state: State, heredoc: bool = False) -> str:
        """The content of a double-quoted string or heredoc body: literal text between the
        expansions (with the backslash escapes double quotes honour), expansions evaluated."""
        start = node.start_byte + (0 if heredoc else 1)
        end = node.end_byte - (0 if heredoc else 1)
        out: list[str] = []
        cursor = start
        for child in node.children:
            if child.type not in _EXPANSIONS:
                continue
            out.append(_dquote_literal(self.source[cursor:child.start_byte].decode("utf-8", "surrogateescape")))
            out.append(self.expansion(child, state))
            cursor = child.end_byte
        out.append(_dquote_literal(self.source[cursor:max(cursor, end)].decode("utf-8", "surrogateescape")))
        return "".join(out)

    def expansion(self, node: Node, state: State) -> str:
        """The value of `$x`, `${…}`, `$(…)`, `` `…` ``, `<(…)` or `$((…))`."""
        self.nesting += 1
        try:
            if self.nesting > MAX_NESTING:
                raise TooDeep
            return self._expansion(node, state)
        finally:
            self.nesting -= 1

    def _expansion(self, node: Node, state: State) -> str:
        kind = node.type
        if kind == "simple_expansion":
            name = next((c for c in node.children if c.is_named), None)
            return self.an.variable(self.text(name) if name is not None else "", state)
        if kind == "expansion":
            return self._parameter(node, state)
        if kind in _SUBSTITUTIONS:
            key = (node.start_byte, node.end_byte, id(state))
            cached = self._substituted.get(key)
            if cached is not None:
                return cached[1]
            inner = [c for c in node.children if c.is_named]
            # `>(cmd)` reads what the outer command writes into it: a pipe whose content is not known
            writes_into = kind == "process_substitution" and self.source[node.start_byte:node.start_byte + 1] == b">"
            saved, self.piped_stdin = self.piped_stdin, PIPE if writes_into else self.piped_stdin
            try:
                self.sequence(inner, state)
            finally:
                self.piped_stdin = saved
            value = self._process_output(inner, state) if kind == "process_substitution" and not writes_into \
                else UNKNOWN if kind == "process_substitution" else \
                self.an.substitution_value(self._plain_argv(inner, state), state)
            self._substituted[key] = (state, value)  # the state is kept so that its id is not reused
            return value
        self.substitutions(node, state)
        literal = self.text(node)[3:-2].strip()
        self.arithmetic_values([self.an.lookup(m.group(0), state) for m in _ARITH_NAME.finditer(literal)], state)
        number = integer_arithmetic(literal)  # `$((-1))`, `$((0-1))`: plain numbers are worked out
        return str(number) if number is not None else UNKNOWN

    def arithmetic_values(self, values: Sequence[str | None], state: State) -> None:
        """Arithmetic evaluates a variable's value as an expression, and an array subscript in it runs
        its command substitutions (`x='a[$(cmd)]'; echo $((x))`)."""
        for value in values:
            if value and ("$(" in value or "`" in value):
                self.an.script(": " + value, state, self.depth + 1)

    def _process_output(self, inner: Sequence[Node], state: State) -> str:
        """`<(echo TEXT)`: a descriptor whose content is known (a file this command wrote, named /dev/fd/N)."""
        argv = self._plain_argv(inner, state)
        printed = self.an.printed(argv) if argv else None
        if printed is None:
            return UNKNOWN
        self.an.descriptors += 1
        path = f"/dev/fd/{62 + self.an.descriptors}"
        self.an.wrote(path, printed, frozenset({None}))
        return path

    def _plain_argv(self, inner: Sequence[Node], state: State) -> list[str] | None:
        if len(inner) != 1 or inner[0].type != "command":
            return None
        words: list[str] = []
        for child in inner[0].children:
            if child.type == "command_name":
                words += self.fields(child.children[0] if child.children else child, state)
            elif child.is_named:
                words += self.fields(child, state)
        return words

    def _parameter(self, node: Node, state: State) -> str:
        """`${name}`, `${name:-default}`, `${name:=default}`; anything else is UNKNOWN."""
        named = [c for c in node.children if c.is_named]
        operators = [c.type for c in node.children if not c.is_named and c.type not in ("${", "}")]
        for child in named[1:]:
            self.substitutions(child, state)
        if not named or named[0].type not in ("variable_name", "special_variable_name"):
            for child in named:
                self.substitutions(child, state)
            return UNKNOWN
        name = self.text(named[0])
        if not operators:
            return self.an.variable(name, state)
        if operators[0] == "@" and "P" in operators and named[0].type == "variable_name":
            # `${x@P}` expands x as a prompt string, running the command substitutions in it
            value = self.an.lookup(name, state)
            if value is None or "$(" in value or "`" in value:
                self.an.script(": " + (value if value is not None else "$(" + UNKNOWN + ")"), state, self.depth + 1)
            return UNKNOWN
        value = self.an.lookup(name, state) if named[0].type == "variable_name" else None
        if operators[0] in (":-", "-", ":=", "=") and len(named) <= 2 and value is not None:
            if value == "":
                return self.word_text(named[1], state, split=False) if len(named) > 1 else ""
            return value
        return UNKNOWN

    def substitutions(self, node: Node, state: State) -> None:
        """Walk every command substitution inside `node` (they run even where the value is ignored)."""
        if self.nesting > MAX_NESTING:
            raise TooDeep
        for child in node.children:
            if child.type in _SUBSTITUTIONS:
                self.expansion(child, state)
            elif child.type in _STATEMENTS:
                self.walk(child, state)
            elif child.child_count:
                self.nesting += 1
                try:
                    self.substitutions(child, state)
                finally:
                    self.nesting -= 1


def _dquote_literal(raw: str) -> str:
    """Literal text inside double quotes: a backslash escapes only `$`, `` ` ``, `"`, `\\`, newline."""
    return _unescape(raw, '$`"\\\n')


def _unescape(raw: str, escapable: str | None) -> str:
    """Backslash removal: before any character (`escapable` None) or only before those in `escapable`;
    a backslash-newline disappears."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw) and (escapable is None or raw[i + 1] in escapable):
            out.append("" if raw[i + 1] == "\n" else raw[i + 1])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


class _Fields:
    """Builds the words of one shell word: unquoted expansions split on whitespace."""

    def __init__(self) -> None:
        self._done: list[str] = []
        self._current = ""
        self._present = False

    def literal(self, text: str, quoted: bool = False) -> None:
        self._current += text
        self._present = self._present or quoted or bool(text)

    def expanded(self, value: str, ifs_changed: bool) -> None:
        if ifs_changed and value:
            self.literal(UNKNOWN)
            return
        parts = value.split()
        if not parts:
            if value:
                self._break()
            return
        if value[0].isspace():
            self._break()
        self.literal(parts[0])
        for part in parts[1:]:
            self._break()
            self.literal(part)
        if value[-1].isspace():
            self._break()

    def _break(self) -> None:
        if self._present:
            self._done.append(self._current)
        self._current, self._present = "", False

    def words(self) -> list[str]:
        self._break()
        return self._done


def walk_script(analyzer: Analyst, text: str, state: State, depth: int, stdin: str | None = None) -> Flow:
    """Parse `text` and walk it; unparsable text is reported as Unanalysable."""
    source = text.replace(HOME, "${HOME}").replace(UNKNOWN, "${__kilo_loop_unknown__}").encode(
        "utf-8", "surrogatepass")
    if b"\\\n" in source:
        source = join_continuations(source)
    root = parse(source)
    if isinstance(root, str):
        analyzer.out.append(Unanalysable(
            f"{root}; an input the guard cannot parse is denied — write it as plain bash", rule="unparsable"))
        return state, state
    walker = Walker(analyzer, source, depth)
    walker.piped_stdin = stdin
    return walker.run(root, state)
