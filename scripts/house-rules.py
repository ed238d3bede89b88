#!/usr/bin/env python3
"""Checks the workspace's house rules that the compiler does not:

- no module circles: within a crate, no two modules use each other, directly
  or through others (a module using its own ancestor's or descendant's items
  is containment, not a circle; an edge between cousins counts between the
  two ancestors that are siblings under their common parent);
- no glob re-exports (`pub use …::*`, `pub(crate) use …::*`) outside a
  crate's `lib.rs`;
- no source file under a crate's `src/` over 800 lines;
- the binary's `src/` (command line, configuration, wiring; its `tests.rs`
  files aside) at most 3,000 lines in all: a protocol or an endpoint belongs
  in a crate of its own.

Test code (`#[cfg(test)]` modules, inline or in files) is not counted for
circles: it is compiled only into the crate's own test binary.

Exit status 1 and one line per breach when a rule is broken.
"""

import pathlib
import re
import sys

MAX_LINES = 800
MAX_BINARY_LINES = 3000
ROOT = pathlib.Path(__file__).resolve().parent.parent

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
MOD_DECL = re.compile(r"^\s*(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", re.M)
GLOB_REEXPORT = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+[^;]*::\*\s*;", re.M)
USE_STMT = re.compile(r"\buse\s+([^;]+);", re.S)
INLINE_PATH = re.compile(r"\b(crate|super)((?:::" + IDENT + r")+)")


def crates():
    for manifest in sorted(ROOT.glob("*/Cargo.toml")) + [ROOT / "Cargo.toml"]:
        src = manifest.parent / "src"
        for root_file in ("lib.rs", "main.rs"):
            if (src / root_file).exists():
                yield manifest.parent, src, src / root_file


def strip_comments_and_strings(text):
    """The code with comments removed and string and char literals emptied."""
    out = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if text.startswith("//", index):
            end = text.find("\n", index)
            index = length if end < 0 else end
        elif text.startswith("/*", index):
            depth, index = 1, index + 2
            while index < length and depth:
                if text.startswith("/*", index):
                    depth, index = depth + 1, index + 2
                elif text.startswith("*/", index):
                    depth, index = depth - 1, index + 2
                else:
                    index += 1
        elif char in "rb" and (index == 0 or not (text[index - 1].isalnum() or text[index - 1] == "_")) and re.match(r"b?r#*\"", text[index:index + 300]):
            raw = re.match(r"b?r(#*)\"", text[index:])
            closing = '"' + raw.group(1)
            end = text.find(closing, index + raw.end())
            index = length if end < 0 else end + len(closing)
            out.append('""')
        elif char == '"' or (char == "b" and text.startswith('b"', index) and (index == 0 or not text[index - 1].isalnum())):
            index += 1 if char == '"' else 2
            while index < length and text[index] != '"':
                index += 2 if text[index] == "\\" else 1
            index += 1
            out.append('""')
        elif char == "'":
            literal = re.match(r"'(?:\\[^']*|[^'\\])'", text[index:index + 12])
            if literal:
                index += literal.end()
                out.append("' '")
            else:
                out.append(char)
                index += 1
        else:
            out.append(char)
            index += 1
    return "".join(out)


def drop_inline_test_modules(text):
    """Removes `#[cfg(test)] mod name { … }` blocks (brace-matched)."""
    out = []
    pos = 0
    pattern = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+" + IDENT + r"\s*\{")
    while True:
        match = pattern.search(text, pos)
        if not match:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:match.start()])
        depth = 1
        index = match.end()
        while index < len(text) and depth:
            if text[index] == "{":
                depth += 1
            elif text[index] == "}":
                depth -= 1
            index += 1
        pos = index


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` → ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    tree = re.sub(r"\bas" + IDENT, "", tree)
    def expand(text):
        brace = text.find("{")
        if brace < 0:
            return [text]
        prefix = text[:brace]
        inner = text[brace + 1:text.rfind("}")]
        parts, depth, start = [], 0, 0
        for index, char in enumerate(inner):
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            elif char == "," and depth == 0:
                parts.append(inner[start:index])
                start = index + 1
        parts.append(inner[start:])
        result = []
        for part in parts:
            if part:
                result.extend(prefix + item for item in expand(part))
        return result
    return expand(tree)


def module_files(src, root_file):
    """Maps module path (tuple) → (file, test_only) for one crate."""
    modules = {(): (root_file, False)}
    pending = [((), root_file, False)]
    while pending:
        path, file, test_only = pending.pop()
        text = strip_comments_and_strings(file.read_text())
        if file.name in ("lib.rs", "main.rs", "mod.rs"):
            directory = file.parent
        else:
            directory = file.parent / file.stem
        for match in MOD_DECL.finditer(text):
            name = match.group(2)
            child_test = test_only or bool(match.group(1)) or name == "tests"
            for candidate in (directory / f"{name}.rs", directory / name / "mod.rs"):
                if candidate.exists():
                    child = path + (name,)
                    modules[child] = (candidate, child_test)
                    pending.append((child, candidate, child_test))
                    break
    return modules


REEXPORT = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", re.S)


def reexports_of(modules):
    """Per module, the names it re-exports (`pub use a::B`, `pub(crate) use
    a::B as C`) and the path each stands for."""
    table = {}
    for path, (file, _) in modules.items():
        text = strip_comments_and_strings(file.read_text())
        names = {}
        for match in REEXPORT.finditer(text):
            raw = re.sub(r"\s+", " ", match.group(1))
            for item in expand_use_tree(raw.replace(" as ", "@AS@")):
                original, _, alias = item.partition("@AS@")
                segments = [s for s in original.split("::") if s]
                if segments:
                    names[alias or segments[-1]] = segments
        table[path] = names
    return table


def resolve(base, segments, modules, reexports, depth=0):
    """The deepest module a path names, following re-exports of its last names."""
    rest = list(segments)
    if rest and rest[0] == "crate":
        base, rest = (), rest[1:]
    else:
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    target = base
    while rest:
        segment = rest[0]
        if target + (segment,) in modules:
            target = target + (segment,)
            rest = rest[1:]
            continue
        via = reexports.get(target, {}).get(segment)
        if via and depth < 8 and (via[0] in ("crate", "super", "self") or target + (via[0],) in modules):
            return resolve(target, via, modules, reexports, depth + 1)
        break
    return target


def references(path, text, modules, reexports):
    """Module paths this module's code names."""
    found = set()
    paths = []
    for match in USE_STMT.finditer(text):
        paths.extend(expand_use_tree(match.group(1)))
    for match in INLINE_PATH.finditer(text):
        paths.append(match.group(1) + match.group(2))
    for raw in paths:
        segments = [s for s in raw.split("::") if s]
        if not segments or segments[0] not in ("crate", "super", "self"):
            continue
        found.add(resolve(path, segments, modules, reexports))
    return found


def lifted(source, target):
    """The two sibling ancestors an edge between cousins stands for, or None
    when one module contains the other."""
    common = 0
    while common < min(len(source), len(target)) and source[common] == target[common]:
        common += 1
    if common == len(source) or common == len(target):
        return None
    return source[: common + 1], target[: common + 1]


def circles(edges):
    """Strongly connected components of more than one node."""
    index_of, low, stack, on_stack, result = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {t for targets in edges.values() for t in targets}

    def visit(node):
        index_of[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index_of:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index_of[nxt])
        if low[node] == index_of[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(nodes):
        if node not in index_of:
            visit(node)
    return result


def main():
    breaches = []
    for crate_dir, src, root_file in crates():
        crate = crate_dir.relative_to(ROOT).as_posix() or "."
        for file in sorted(src.rglob("*.rs")):
            lines = file.read_text().count("\n")
            if lines > MAX_LINES:
                breaches.append(f"{file.relative_to(ROOT)}: {lines} lines (most {MAX_LINES})")
            if file != root_file:
                for match in GLOB_REEXPORT.finditer(strip_comments_and_strings(file.read_text())):
                    breaches.append(f"{file.relative_to(ROOT)}: glob re-export `{match.group(0).strip()}`")
        modules = module_files(src, root_file)
        reexports = reexports_of(modules)
        edges = {}
        witnesses = {}
        for path, (file, test_only) in modules.items():
            if test_only:
                continue
            text = drop_inline_test_modules(strip_comments_and_strings(file.read_text()))
            for target in references(path, text, modules, reexports):
                pair = lifted(path, target)
                if pair:
                    edges.setdefault(pair[0], set()).add(pair[1])
                    witnesses.setdefault(pair, []).append("::".join(path) or "crate")
        for component in circles(edges):
            names = ", ".join("::".join(m) for m in component)
            detail = []
            for source in component:
                for target in sorted(edges.get(source, ())):
                    if target in component:
                        by = sorted(set(witnesses[(source, target)]))
                        detail.append(f"{'::'.join(source)} → {'::'.join(target)} (in {', '.join(by)})")
            breaches.append(f"{crate}: module circle {{{names}}}: " + "; ".join(detail))
    # Its own test files (`tests.rs`) are not the binary.
    binary = sum(
        f.read_text().count("\n") for f in (ROOT / "src").rglob("*.rs") if f.name != "tests.rs"
    )
    if binary > MAX_BINARY_LINES:
        breaches.append(
            f"src/: {binary} lines (most {MAX_BINARY_LINES}): move what is not wiring into a crate"
        )
    for breach in breaches:
        print(breach)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
