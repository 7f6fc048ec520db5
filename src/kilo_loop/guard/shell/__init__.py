"""Static analysis of bash command strings for the guard: what a command would execute.

- model: the reported items and text helpers; flow: cwd/variable state across `&&`/`||`/`;`;
- parse: the tree-sitter-bash walker and word evaluation; words: `$'…'`, printf, braces;
- wrappers: commands that run other commands (their `Unwrapped` result in unwrapped;
  package_runners, remote and script_options hold the npm/npx/…, ssh/kubectl/…, and
  tmux/expect/nc/… handlers); interpreters: inline programs;
- scripts_on_disk / sql_scripts: script files a shell or SQL client reads, found and read;
  file_changes: commands that change files they do not redirect into (`sed -i`, `git checkout`);
- git: git's command line; analyze: the analyzer tying them together.
"""

from kilo_loop.guard.shell.analyze import analyze, find_roots
from kilo_loop.guard.shell.git import GitCall, parse_git_argv
from kilo_loop.guard.shell.model import (
    HOME,
    UNKNOWN,
    Analysis,
    Executed,
    InlineCode,
    OutputRedirect,
    SimpleCommand,
    Unanalysable,
    Unread,
    display,
    normalize_path,
)
from kilo_loop.guard.shell.words import brace_alternatives

__all__ = [
    "HOME", "UNKNOWN", "Analysis", "Executed", "GitCall", "InlineCode", "OutputRedirect", "SimpleCommand",
    "Unanalysable", "Unread", "analyze", "brace_alternatives", "display", "find_roots", "normalize_path", "parse_git_argv",
]
