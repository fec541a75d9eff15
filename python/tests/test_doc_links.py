"""The Markdown files' relative links resolve (scripts/check_doc_links.py)."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    "check_doc_links", os.path.join(ROOT, "scripts", "check_doc_links.py"))
check_doc_links = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_doc_links)


def test_every_relative_link_of_the_docs_resolves():
    assert check_doc_links.broken_links(ROOT) == []


def test_the_check_finds_each_kind_of_broken_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A title\n\n## Some `code` (here)\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md) [ok](docs/a.md#some-code-here) [ok](#readme) [web](https://x.org)\n"
        "[gone](docs/b.md) [heading](docs/a.md#nothing) [out](../elsewhere/DESIGN.md)\n"
        "```\n[in a code block](not/checked.md)\n```\n# README\n")
    problems = check_doc_links.broken_links(str(tmp_path))
    assert problems == [
        "README.md:2: docs/b.md (no such file)",
        "README.md:2: docs/a.md#nothing (no such heading)",
        "README.md:2: ../elsewhere/DESIGN.md (outside the repository)",
    ], problems
