"""The redaction package has one public face: code outside ``kilo_loop.redact`` imports the package,
never one of its private modules (tests of the internals may)."""

from __future__ import annotations

from tests.unit.test_architecture import ROOT, import_graph


def test_only_the_package_itself_reaches_behind_its_face() -> None:
    graph = import_graph(ROOT / "src")
    behind = {
        (source, target)
        for source, targets in graph.items()
        if not source.startswith("kilo_loop.redact")
        for target in targets
        if target.startswith("kilo_loop.redact._")
    }
    assert behind == set()


def test_the_face_names_what_callers_use() -> None:
    import kilo_loop.redact as face

    for name in face.__all__:
        assert getattr(face, name) is not None
