"""The project's documents stand alone: every relative link in its Markdown
files reaches a file (and, with #anchor, a heading of it), and every citation
of a document's section in the tree (code comments included), such as
docs/internals.md, "CUDA ABI", names a heading that exists.

usage: doc_links.py SOURCE_ROOT"""
import os
import re
import sys

SKIP_DIRS = {".git", "__pycache__"}
TEXT_EXT = {".c", ".h", ".md", ".sh", ".py", ".map", ".build", ".txt", ".1", ""}


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def headings(path):
    """(titles, anchors) of a Markdown file's headings, outside code fences."""
    titles, anchors, seen, fence = set(), set(), {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            title = m.group(1)
            titles.add(title)
            base = slug(title)
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchors.add(base if n == 0 else f"{base}-{n}")
    return titles, anchors


def files(root):
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for n in sorted(names):
            if os.path.splitext(n)[1] in TEXT_EXT:
                yield os.path.join(d, n)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    docs = os.path.join(root, "docs")
    cache, bad, links, cites = {}, [], 0, 0

    def heads(path):
        if path not in cache:
            cache[path] = headings(path)
        return cache[path]

    for path in files(root):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        rel = os.path.relpath(path, root)
        if path.endswith(".md"):
            body = re.sub(r"```.*?```", "", text, flags=re.S)
            body = re.sub(r"`[^`\n]*`", "", body)
            for target in re.findall(r"\]\(([^)\s]+)\)", body):
                if re.match(r"[a-z]+:", target):
                    continue  # http:, https:, mailto:
                links += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                if not os.path.exists(dest):
                    bad.append(f"{rel}: link to {target}: no such file")
                elif anchor and dest.endswith(".md") and anchor not in heads(dest)[1]:
                    bad.append(f"{rel}: link to {target}: no heading with that anchor")
        # Citations may wrap over comment lines: join them first.
        flat = re.sub(r"\s*\n\s*(?:\*(?!/)|#|//)?\s*", " ", text)
        for doc, title in re.findall(r"\b(?:docs/)?([\w.-]+\.md), \"([^\"]+)\"", flat):
            dest = os.path.join(docs, doc)
            if title.startswith("<") or not os.path.exists(dest):
                continue  # a placeholder, or a file of another project
            cites += 1
            if title not in heads(dest)[0]:
                bad.append(f"{rel}: cites docs/{doc}, \"{title}\": no such heading")
    for b in bad:
        print("FAIL:", b)
    print(f"{links} links, {cites} section citations checked, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
