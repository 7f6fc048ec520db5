"""The bash grammar for tree-sitter, loaded without running `tree_sitter_bash/__init__.py`.

That `__init__` imports `importlib.resources` (and with it pathlib, urllib and zip helpers) only to
read a highlighting query the guard never uses — about a sixth of the start-up of the guard's
pre-tool hook, which runs before every agent tool call. The grammar itself is the package's
compiled `_binding` module, a stateless extension; it is loaded here from the installed package
with the standard import machinery, and through the package when that cannot be done.
"""

from __future__ import annotations

from importlib.machinery import ExtensionFileLoader, PathFinder
from types import ModuleType

PACKAGE = "tree_sitter_bash"


def _binding() -> ModuleType | None:
    package = PathFinder.find_spec(PACKAGE)
    if package is None or not package.submodule_search_locations:
        return None
    spec = PathFinder.find_spec(f"{PACKAGE}._binding", list(package.submodule_search_locations))
    if spec is None or not isinstance(spec.loader, ExtensionFileLoader):
        return None
    module = spec.loader.create_module(spec)
    spec.loader.exec_module(module)
    return module


def bash_language() -> object:
    """The tree-sitter language pointer of tree-sitter-bash (a capsule for `tree_sitter.Language`)."""
    binding = _binding()
    if binding is None:
        import tree_sitter_bash  # here, not at the top: the package route is the slow fallback

        return tree_sitter_bash.language()
    language: object = binding.language()
    return language
