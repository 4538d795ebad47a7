#!/usr/bin/env python3
"""Lists functions longer than a limit (default 70 lines) in C++ and Python files under the given
folders.

C++: a function is a block that opens with '{' at the end of a line at column 0 that is not a
namespace, class, struct, enum or extern block, and ends at the next '}' at column 0 (the
code is clang-formatted, so top-level definitions start and end there). Lambdas and member
functions defined inside class bodies are counted with what holds them.
Python: every def (methods and nested functions too, each on its own; a nested one also counts
in what holds it), from its first body line to its last, read with the ast module.

    scripts/long_functions.py engine formats io          # exit 1 if any is over 70 lines
    scripts/long_functions.py --limit 60 --all formats   # every function with its length
"""
import argparse
import ast
import pathlib
import re
import sys

control = re.compile(r"^\s*(\}\s*)?(if|for|while|switch|catch|do|else|try|return|case|default)\b")
not_a_function = re.compile(r"^\s*(namespace|class|struct|enum|union|extern)\b")


def strip_literals(line):
    """The line without string/char literals and // comments (their braces do not count)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def functions(path):
    """(signature, first line, last line, body lines) of each function definition."""
    lines = [strip_literals(line) for line in path.read_text(errors="replace").splitlines()]
    number = 0
    while number < len(lines):
        line = lines[number].rstrip()
        looks_like_function = (line.endswith("{") and not control.match(line) and not not_a_function.match(line)
                               and "[" not in line.split("(")[0] and "](" not in line and "] (" not in line
                               and (")" in line or "const" in line or "override" in line or "noexcept" in line))
        if not looks_like_function:
            number += 1
            continue
        depth = 0
        for end in range(number, len(lines)):
            depth += lines[end].count("{") - lines[end].count("}")
            if depth == 0:
                break
        first = number
        while first > 0 and "(" not in lines[first] and lines[first - 1].strip() and \
                not lines[first - 1].rstrip().endswith((";", "{", "}")):
            first -= 1
        yield lines[first].strip(), number + 1, end + 1, end - number - 1
        number = end + 1


def python_functions(path):
    """(signature, first line, last line, body lines) of each def, nested ones included."""
    tree = ast.parse(path.read_text(errors="replace"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first_body = node.body[0].lineno
            yield f"def {node.name}", node.lineno, node.end_lineno, node.end_lineno - first_body + 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--limit", type=int, default=70)
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args()
    over = 0
    for folder in args.folders:
        for path in sorted(pathlib.Path(folder).rglob("*")):
            if path.suffix in (".cpp", ".hpp", ".cu", ".h"):
                found = functions(path)
            elif path.suffix == ".py":
                found = python_functions(path)
            else:
                continue
            for name, start, end, body in found:
                if body > args.limit or args.all:
                    over += body > args.limit
                    print(f"{body:5d}  {path}:{start}  {name[:100]}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
