#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown files: every
[text](target) whose target is not a URL must name a file or folder that
exists inside the repository, and a #fragment into a Markdown file must
name one of its headings (GitHub's anchors). Prints one line per broken
link and exits 1 if there is any.

    scripts/check_doc_links.py [ROOT]      (default: this clone)

python/tests/test_doc_links.py runs it as part of scripts/test.sh.
"""

import os
import re
import subprocess
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
SKIP_DIRS = {".git", ".venv", ".cache", "node_modules"}


def markdown_files(root):
    """The tracked *.md files (git), else every *.md outside build folders."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "*.md"], capture_output=True,
                             text=True, check=True).stdout.split()
        if out:
            return [os.path.join(root, f) for f in out]
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        found += [os.path.join(folder, f) for f in files if f.endswith(".md")]
    return found


def anchors(path):
    """GitHub's heading anchors of a Markdown file (code blocks skipped)."""
    result, fenced = set(), False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
                result.add(slug)
    return result


def broken_links(root):
    root = os.path.abspath(root)
    problems = []
    for path in sorted(markdown_files(root)):
        fenced = False
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            if line.startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK.findall(line):
                if URL.match(target):
                    continue
                where = "%s:%d: %s" % (os.path.relpath(path, root), number, target)
                file_part, _, fragment = target.partition("#")
                full = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                        if file_part else path)
                if os.path.commonpath([root, full]) != root:
                    problems.append(where + " (outside the repository)")
                elif not os.path.exists(full):
                    problems.append(where + " (no such file)")
                elif fragment and full.endswith(".md") and fragment not in anchors(full):
                    problems.append(where + " (no such heading)")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..")
    problems = broken_links(root)
    for problem in problems:
        print(problem)
    print("%d broken link(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
