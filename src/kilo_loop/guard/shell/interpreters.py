"""Interpreters on the command line: where their program text is (`python -c CODE`, `node -e`,
`awk 'PROG'`, `sed 'SCRIPT'`, stdin), which shell strings that text hands to a shell, and
whether the text computes what it runs (so nothing can be known about it statically)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.shell.model import UNKNOWN, parse_options
from kilo_loop.guard.shell.sed import sed_executes
from kilo_loop.guard.shell.words import ansi_c


class Interpreter(NamedTuple):
    language: str
    code_short: str
    code_long: frozenset[str] = frozenset()
    arg_short: str = ""
    module_short: str = ""
    first_code_ends_options: bool = False


_PYTHON = Interpreter("python", "c", arg_short="WXQ", module_short="m", first_code_ends_options=True)
_NODE = Interpreter("node", "ep", frozenset({"eval", "print"}), arg_short="r")
_RUBY = Interpreter("ruby", "e", arg_short="rICEF")
_PERL = Interpreter("perl", "eE", arg_short="ICDFMmx")
_PHP = Interpreter("php", "r", arg_short="cdz")
_INTERPRETERS: list[tuple[LazyRegex, Interpreter]] = [
    (LazyRegex(r"(i?python|pypy)[0-9.]*"), _PYTHON),
    (LazyRegex(r"node(js)?|bun|deno|ts-node(-esm)?|tsx|esno|swc-node"), _NODE),
    (LazyRegex(r"ruby[0-9.]*|jruby"), _RUBY),
    (LazyRegex(r"perl[0-9.]*"), _PERL),
    (LazyRegex(r"php[0-9.]*"), _PHP),
    # languages whose programs the guard does not read: code that may run or delete anything is denied
    (LazyRegex(r"lua[0-9.]*|luajit"), Interpreter("lua", "e", arg_short="l")),
    (LazyRegex(r"r|rscript"), Interpreter("r", "e", frozenset({"eval"}))),
    (LazyRegex(r"julia"), Interpreter("julia", "eE", frozenset({"eval", "print"}))),
    (LazyRegex(r"pwsh|powershell(\.exe)?"), Interpreter("powershell", "c", frozenset(
        {"command", "Command", "c", "encodedcommand", "EncodedCommand", "ec"}))),
    (LazyRegex(r"elixir|iex"), Interpreter("elixir", "e", frozenset({"eval"}))),
    (LazyRegex(r"erl"), Interpreter("erlang", "", frozenset({"eval"}))),
    (LazyRegex(r"racket|guile|sbcl|clisp|gnuplot|octave"), Interpreter("lisp", "ecx", frozenset({"eval"}))),
    (LazyRegex(r"emacs(-nox)?|emacsclient"), Interpreter("lisp", "", frozenset({"eval", "execute"}))),
    (LazyRegex(r"groovy|jrunscript|jjs|bb|clojure|clj|kotlin|scala"), Interpreter("jvm", "e", frozenset({"eval"}))),
    (LazyRegex(r"dc"), Interpreter("dc", "e", frozenset({"expression"}))),
]
_SINGLE_DASH_LONG = frozenset({"-eval", "-execute"})
"""emacs spells its long options with one dash too (`emacs -batch -eval CODE`)."""
AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
SEDS = frozenset({"sed", "gsed"})

UNREAD_LANGUAGES = ("lua", "r", "julia", "powershell", "elixir", "erlang", "lisp", "tcl", "jvm")
"""Languages whose programs the guard does not read: one that may run or delete anything is denied."""
_EXEC_HINT = LazyRegex(
    r"\$`|\bposix_spawnp?\s*\(|"
    r"\b(system|exec|execSync|execFile|execFileSync|spawn|spawnSync|popen|Popen|call|check_call|check_output|"
    r"run|getoutput|getstatusoutput|shell_exec|passthru|proc_open|Open3|capture2e?|capture3|qx|\$)\s*[({'\"\[]"
    # a runner reached under another name: every string in the program may be a command
    r"|\bfrom\s+(?:os|subprocess|pty|commands|posix)\s+import\b|\bimport\s+(?:os|subprocess|pty)\s+as\b"
    r"|child_process|\bKernel\b|\bIPC::"
)
_STRING_LITERAL = LazyRegex(r"'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"")
_TEMPLATE = LazyRegex(r"`([^`$]*)`")
_ARG_LIST = LazyRegex(r"""\b(?:system|exec|spawn)\s*\(?\s*((?:(['"])(?:(?!\2)[^\\\n]|\\.)*\2\s*,\s*)+['"][^'"\n]*['"])""")
_LIST_LITERAL = LazyRegex(r"\[([^\[\]]*)\]")
_NAME_THEN_LIST = LazyRegex(r"(['\"])([^'\"\n]*)\1\s*,\s*\[([^\[\]]*)\]")
_BACKTICKS = LazyRegex(r"`([^`]*)`|%x\{([^}]*)\}|%x\(([^)]*)\)|qx\{([^}]*)\}|qx\(([^)]*)\)|qx/([^/]*)/|qx!([^!]*)!"
                        r"|qx\|([^|]*)\|")

# Program text that computes what it runs, decodes it, or reaches a function by a computed name.
_RUNS_SOMETHING = r"(?:system|popen|Popen|run|call|check_output|check_call|getoutput|exec[lv]?p?e?|spawn[lv]?p?e?" \
                  r"|posix_spawnp?" \
                  r"|execSync|execFileSync|spawnSync|execFile|shell_exec|passthru|proc_open)"
_NOT_A_LITERAL = r"\s*\(\s*(?![\s'\"\[\])]|f?r?b?['\"])"
_DYNAMIC: dict[str, LazyRegex] = {
    "python": LazyRegex(
        r"\b(?:exec|eval|compile|__import__|breakpoint)\s*\(|\bimportlib\b|\bgetattr\s*\(\s*(?:os|subprocess|shutil"
        r"|posix|pty|builtins|__builtins__|sys|importlib|pathlib|ctypes)\b|\bgetattr\s*\([^,()]+,\s*(?![\s]*['\"][A-Za-z_]+['\"]\s*[,)])"
        r"|\bfromhex\b|\b(?:b64|b32|b16|a85|b85|urlsafe_b64)decode\b|\bunhexlify\b|\bcodecs\s*\.\s*decode\b"
        r"|\bmarshal\b|\bpickle\s*\.\s*loads?\b|\bctypes\b|\bvars\s*\(\s*(?:os|subprocess|shutil)\b|__dict__"
        r"|\bglobals\s*\(\s*\)\s*\[|\bos\s*\.\s*exec|\bpty\s*\.\s*spawn"
        rf"|\b(?:os|subprocess|commands)\s*\.\s*{_RUNS_SOMETHING}{_NOT_A_LITERAL}"
        # a runner's command built by formatting, or the runner kept under another name
        rf"|\b{_RUNS_SOMETHING}\s*\(\s*\[?\s*[rRbBuU]?[fF][rRbB]?['\"][^'\"]*\{{"
        rf"|\b{_RUNS_SOMETHING}\s*\(\s*\[?\s*[rRbBuU]?['\"][^'\"]*['\"]\s*(?:%|\.\s*format\b)"
        rf"|\b(?:os|subprocess|pty)\s*\.\s*{_RUNS_SOMETHING}\b(?!\s*\()"),
    "node": LazyRegex(
        r"\beval\s*\(|\bFunction\s*\(|\bBuffer\s*\.\s*from\s*\([^)]*,\s*['\"](?:base64|hex|base64url)['\"]"
        r"|\batob\s*\(|\brequire\s*\(\s*(?!['\"`][\w@/.:-]+['\"`]\s*\))|\bimport\s*\(\s*(?!['\"][\w@/.:-]+['\"]\s*\))"
        r"|\bprocess\s*\.\s*binding\b|\bvm\s*\.\s*run|\[\s*['\"`][^'\"`]*['\"`]\s*\+"
        r"|\bDeno\s*\.\s*(?:Command|run)\b|\$`[^`]*\$\{"
        rf"|\b(?:exec|execSync|spawn|spawnSync|execFile|execFileSync|fork){_NOT_A_LITERAL}(?!`[^`$]*`)"),
    "ruby": LazyRegex(r"\b(?:eval|instance_eval|class_eval|send|public_send|const_get)\b|\bBase64\b|\.unpack1?\b"
                       r"|#\{|\b(?:system|exec|spawn)\s*\(?\s*(?!['\"])[A-Za-z_$@]"),
    "perl": LazyRegex(r"\beval\b|\bpack\s*\(|\bMIME::Base64\b|\bdecode_base64\b"
                       r"|\b(?:system|exec|open)\s*\(?\s*(?:[$@<]|STDIN)|`[^`]*\$|qx[{(][^)}]*\$"),
    "php": LazyRegex(r"\beval\s*\(|\bbase64_decode\b|\bhex2bin\b|\bcreate_function\b|\$\w+\s*\("
                      r"|\b(?:system|exec|shell_exec|passthru|popen|proc_open)\s*\(\s*\$"),
    **{language: LazyRegex(
        r"\b(?:execute|system2?|popen|run|spawn|exec|cmd|shell|unlink|remove|rm|delete|Remove-Item|Invoke-Expression"
        r"|iex|Start-Process|Invoke-Command|FromBase64String|EncodedCommand|rmdir|rmtree|syscmd|esyscmd|eval|load)\b"
        r"|`|\bos\s*:\s*cmd")
       for language in UNREAD_LANGUAGES},
    "dc": LazyRegex(r"!"),  # dc's `!` runs the rest of the line in a shell
    "cmd": LazyRegex(r"(?i)\b(?:rd|rmdir|del|erase|format|diskpart|shutdown|taskkill|cipher|robocopy|reg|"
                     r"powershell|pwsh|wsl|bash|git|start|call|cmd)\b|%|!|\^"),
    "m4": LazyRegex(r"\be?syscmd\b"),
    "make": LazyRegex(r"(?m)^\t|;|\$\(shell\b"),  # a recipe line, an inline recipe, $(shell …)
    "ed": LazyRegex(r"(?:^|\n)\s*[0-9,.$;'a-z+-]*\s*[rwe]?\s*!"),
    "awk": LazyRegex(r"\bsystem\s*\(|\|\s*&|\bprintf?\b[^;{}]*\|\s*[\"A-Za-z_$]|\|\s*getline"),
    "sed": LazyRegex(
        r"(?:^|[;\n{}])\s*(?:\d+|\$|/(?:[^/\\\n]|\\.)*/)?\s*(?:,\s*(?:\d+|\$|/(?:[^/\\\n]|\\.)*/))?\s*!?\s*e(?:\s|;|$)"
        r"|(?:^|[;\n{}])\s*(?:\d+|\$|/(?:[^/\\\n]|\\.)*/)?\s*!?\s*s(.)(?:(?!\1)[^\\\n]|\\.)*\1(?:(?!\1)[^\\\n]|\\.)*\1"
        r"[gpiImM0-9]*e"),
}


_SHELL_FEEDERS = frozenset({"python", "node", "ruby", "perl", "php"})
_SHELL_ON_A_PIPE = LazyRegex(
    # perl `open(F, "|sh")` / `open(F, "|-", "bash")`, `popen("sh", "w")`, `Popen(["bash"], stdin=PIPE)`: a shell
    # that runs whatever the program writes to it
    r"""['"]\s*\|-?\s*(?:['"]\s*,\s*['"])?\s*(?:/[\w/]*/)?(?:ba|z|da|k|fi|c|tc)?sh\b"""
    r"""|\b(?:popen|Popen|spawn|open3|popen3|popen2|run|exec|execFile|spawnSync)\s*\(\s*\[?\s*['"](?:/[\w/]*/)?"""
    r"""(?:ba|z|da|k|fi)?sh['"]\s*[,)\]]""")


@lru_cache(maxsize=1024)  # asked for every command run, by a name that repeats
def interpreter(name: str) -> Interpreter | None:
    return next((interp for pattern, interp in _INTERPRETERS if pattern.fullmatch(name)), None)


def inline_codes(interp: Interpreter, args: Sequence[str]) -> tuple[list[str], bool, str | None]:
    """The code strings passed on the command line, whether the program is read from stdin,
    and the script file it runs (None when there is none)."""
    if interp.language == "node" and args[:1] == ["eval"]:  # `deno eval CODE`
        return [a for a in args[1:] if not a.startswith("-")][:1], False, None
    codes: list[str] = []
    args = ["-" + a if a in _SINGLE_DASH_LONG else a for a in args]
    i = 0
    while i < len(args):
        arg = args[i]
        step = 1
        if arg == "--":
            rest = args[i + 1:]
            return codes, not codes and not rest, (rest[0] if rest and not codes else None)
        if arg.startswith("--") or (interp.language == "powershell" and arg[1:].partition(":")[0] in interp.code_long):
            name, eq, value = arg.lstrip("-").partition("=")
            if name in interp.code_long:
                codes.append(value if eq else (args[i + 1] if i + 1 < len(args) else ""))
                step = 1 if eq else 2
        elif arg.startswith("-") and len(arg) > 1:
            for j, letter in enumerate(arg[1:], start=1):
                attached = arg[j + 1:]
                if letter in interp.code_short:
                    codes.append(attached or (args[i + 1] if i + 1 < len(args) else ""))
                    step = 1 if attached else 2
                    break
                if letter in interp.module_short:
                    return codes, False, None
                if letter in interp.arg_short:
                    step = 1 if attached else 2
                    break
        elif arg == "-":
            return codes, not codes, None
        else:
            return codes, False, (None if codes else arg)
        if codes and codes[-1] == "-":  # `pwsh -Command -`: the code comes from stdin
            return codes[:-1], True, None
        if codes and interp.first_code_ends_options:
            return codes, False, None
        i += step
    return codes, not codes, None


def awk_program(args: Sequence[str]) -> str | None:
    """The program text of `awk [options] 'PROGRAM' files…` (None with `-f FILE`)."""
    opts, i = parse_options(args, "Fvfe", frozenset({"file", "assign", "field-separator", "source", "exec"}))
    if "--source" in opts or "-e" in opts:
        return opts.get("--source") or opts.get("-e")
    if "-f" in opts or "--file" in opts:
        return None
    return args[i] if i < len(args) else None


def sed_scripts(args: Sequence[str]) -> list[str]:
    """The scripts of `sed [-e SCRIPT]… [SCRIPT] files…`."""
    scripts: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg.startswith("-e") and len(arg) > 2:
            scripts.append(arg[2:])
        elif arg in ("-f", "--file", "-l", "--line-length"):
            i += 1
        elif not arg.startswith("-") or arg == "-":
            if not scripts:
                scripts.append(arg)
            break
        i += 1
    return scripts


def dynamic_code(language: str, code: str) -> str | None:
    """The part of `code` that computes, decodes or looks up what it runs, or None."""
    pattern = _DYNAMIC.get(language)
    found = pattern.search(code) if pattern is not None else None
    if found is None and language in _SHELL_FEEDERS:
        found = _SHELL_ON_A_PIPE.search(code)
    if found is None and language == "python":
        found = _aliased_runner(code)
    if found is None and language == "sed":
        return sed_executes(code)
    return found.group(0).strip() if found else None


_PYTHON_ALIAS = LazyRegex(r"\bimport\s+(?:os|subprocess|pty|posix|commands)\s+as\s+(\w+)"
                          r"|\bfrom\s+(?:os|subprocess|pty|posix|commands)\s+import\s+[^\n;]*")
_INDEXED_MODULE = LazyRegex(rf"\]\s*\.\s*{_RUNS_SOMETHING}{_NOT_A_LITERAL}")


def _aliased_runner(code: str) -> re.Match[str] | None:
    """A runner reached under another name (`import subprocess as sp; sp.run(cmd)`, `from os import system;
    system(cmd)`, `sys.modules['os'].system(cmd)`) given something computed."""
    found = _INDEXED_MODULE.search(code)
    if found is not None:
        return found
    for match in _PYTHON_ALIAS.finditer(code):
        prefix = rf"\b{re.escape(match.group(1))}\s*\.\s*" if match.group(1) else r"(?<![\w.])"
        called = re.search(prefix + _RUNS_SOMETHING + _NOT_A_LITERAL, code)
        if called is not None:
            return called
    return None


def _literal_text(match: re.Match[str]) -> str:
    raw = match.group(1) if match.group(1) is not None else match.group(2)
    return ansi_c(raw or "")


_IPYTHON_ESCAPE = LazyRegex(r"(?:^|[;\n])\s*!!?([^\n;]+)")
_JOINED_LITERALS = LazyRegex(r"""(['"])((?:(?!\1)[^\\\n]|\\.)*)\1\s*(?:\+|\.(?!\w))?\s*"""
                             r"""(['"])((?:(?!\3)[^\\\n]|\\.)*)\3""")


def _join_literals(code: str) -> str:
    """`'git ' + 'push'`, `'rm' ' -rf ~'` (adjacent literals), `"git" . " push"` as one literal."""
    for _ in range(16):
        joined = _JOINED_LITERALS.sub(lambda m: '"' + (m.group(2) + m.group(4)).replace('"', '\\"') + '"', code)
        if joined == code:
            break
        code = joined
    return code


_MORE_ARGUMENTS = LazyRegex(r"\s*,\s*[^\s)'\"]")
_LITERAL_THEN_COMPUTED = LazyRegex(r"""'((?:[^'\\\n]|\\.)*)'\s*(?:\+|\.(?!\w)|<<)\s*(?!['"\s])"""
                                   r"""|"((?:[^"\\\n]|\\.)*)"\s*(?:\+|\.(?!\w)|<<)\s*(?!['"\s])""")


def _argv_text(items: str) -> str:
    """The words of a literal argv list (`['make', 'test']`), in place; an element that is not a literal is
    unknown (`[cmd, 'push']` runs a command whose name is only known at run time)."""
    words: list[str] = []
    cursor = 0
    for match in _STRING_LITERAL.finditer(items):
        if items[cursor:match.start()].replace(",", "").strip():
            words.append(UNKNOWN)
        words.append(_literal_text(match))
        cursor = match.end()
    if items[cursor:].replace(",", "").strip():
        words.append(UNKNOWN)
    return " ".join(words)


def shell_strings_in_code(language: str, code: str) -> list[str]:
    """Strings inside program text that the program hands to a shell (or to exec) to run."""
    found: list[str] = []
    if language == "python":  # IPython runs `!CMD` lines in a shell (plain Python rejects them)
        found += [m.group(1) for m in _IPYTHON_ESCAPE.finditer(code)]
    if language in ("ruby", "perl", "php"):
        found += [next(g for g in m.groups() if g is not None) for m in _BACKTICKS.finditer(code)]
    if not _EXEC_HINT.search(code):
        return found
    if language == "node":
        found += [m.group(1) for m in _TEMPLATE.finditer(code)]
    code = _join_literals(code)
    found += [_literal_text(m) for m in _STRING_LITERAL.finditer(code)]
    for match in _LIST_LITERAL.finditer(code):
        found.append(_argv_text(match.group(1)))
    for match in _ARG_LIST.finditer(code):  # perl/ruby `system "git", "push"`: one argv
        rest = code[match.end():]
        found.append(_argv_text(match.group(1)) + (" " + UNKNOWN if _MORE_ARGUMENTS.match(rest) else ""))
    for match in _LITERAL_THEN_COMPUTED.finditer(code):  # `'chmod -R 777 ' + home`: the end is computed
        if _literal_text(match).strip():
            found.append(_literal_text(match) + UNKNOWN)
    for match in _NAME_THEN_LIST.finditer(code):
        rest = " ".join(_literal_text(m) for m in _STRING_LITERAL.finditer(match.group(3)))
        found.append(f"{match.group(2)} {rest}")
    return [text for text in dict.fromkeys(found) if text.strip()]


def shell_invocation(args: Sequence[str]) -> tuple[str | None, bool, str | None]:
    """`(command string, reads stdin, script file)` for `bash [options] [-c string | script | -s]`."""
    has_c = reads_stdin = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if arg.startswith("--"):
            i += 1
            continue
        if arg[:1] in ("-", "+") and len(arg) > 1:
            has_c = has_c or "c" in arg[1:]
            reads_stdin = reads_stdin or "s" in arg[1:]
            i += 1
            continue
        break
    operands = args[i:]
    if has_c:
        return (operands[0] if operands else ""), False, None
    if reads_stdin or not operands:
        return None, True, None
    return None, False, operands[0]
