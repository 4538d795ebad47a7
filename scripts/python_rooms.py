#!/usr/bin/env python3
"""Checks the Python package's rooms (bindings/python/ringload, docs/architecture.md): each module
imports only from its own room or a floor below, no module imports another module's private
names or reaches into the private members of another module's objects (`x._name` where only
another module of the package defines `_name`), and no modules import each other in a circle
(imports inside functions count too).

    floor 0  ringload._ringload (the engine), ringload.errors
    floor 1  ringload.ground     what every room stands on
    floor 2  ringload.dropin     tensorizer's and safetensors' APIs
    floor 3  ringload.params, ringload.reads   (beside each other: neither imports the other)
    floor 4  ringload.servers
    top      ringload/__init__.py, __main__.py and the public names kept as aliases

    scripts/python_rooms.py bindings/python/ringload     # exit 1 naming each import out of place
"""
import argparse
import ast
import pathlib
import sys

FLOORS = {"_ringload": 0, "errors": 0, "ground": 1, "dropin": 2, "params": 3, "reads": 3, "servers": 4}
TOP = 5


def module_name(package, path):
    """'ringload.ground.tensors' for .../ringload/ground/tensors.py ('ringload' for __init__)."""
    parts = ["ringload"] + list(path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(name):
    """The room a module of the package is in ('ground', ...), or None for the package's top."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FLOORS else None


def floor_of(name):
    room = room_of(name)
    return FLOORS[room] if room else TOP


def imports_of(name, path, is_package):
    """(line, imported module, names) for each import of the package's own modules."""
    tree = ast.parse(path.read_text(), str(path))
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if not module.startswith("ringload"):
                continue
            found.append((node.lineno, module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names if alias.name.startswith("ringload"))
    return found


def circles(edges):
    """Every module that lies on a circle of imports, with one circle through it."""
    found, done = {}, set()

    def visit(node, stack):
        for nxt in sorted(edges.get(node, ())):
            if nxt in stack:
                circle = stack[stack.index(nxt):] + [nxt]
                found.setdefault(nxt, circle)
            elif nxt not in done:
                visit(nxt, stack + [nxt])
        done.add(node)

    for node in sorted(edges):
        if node not in done:
            visit(node, [node])
    return found


def misplaced(where, line, name, imported, taken):
    """What is wrong with module `name` importing `taken` from `imported` (or the module itself)."""
    if imported in (name, "ringload") and floor_of(name) == TOP:
        return []
    if imported == "ringload":
        return [f"{where}:{line}: imports the package's top (a room imports rooms)"]
    if taken is not None and taken.startswith("_") and not taken.startswith("__"):
        return [f"{where}:{line}: imports {taken}, private to {imported}"]
    if floor_of(name) == TOP:
        return []
    if floor_of(imported) == TOP:
        return [f"{where}:{line}: imports {imported}, the package's top (a room imports rooms)"]
    if floor_of(imported) > floor_of(name) or (floor_of(imported) == floor_of(name) and
                                               room_of(imported) != room_of(name)):
        return [f"{where}:{line}: {room_of(name)} (floor {floor_of(name)}) imports {imported} "
                f"(floor {floor_of(imported)}): a room imports only its own modules and those below"]
    return []


def names_defined(tree):
    """Every name a module defines: functions, classes, attributes it stores, variables, arguments."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[-1])
    return names


def private_reaches(trees):
    """(module, line, expression) for each `x._name` (x not self or cls) where `_name` is defined
    by another module of the package and not by this one: a reach into another module's
    private members (a library's own privates, torch._C, are not the package's business here)."""
    defined = {name: names_defined(tree) for name, tree in trees.items()}
    reaches = []
    for name, tree in trees.items():
        others = set().union(*(names for other, names in defined.items() if other != name))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr not in defined[name] and node.attr in others:
                reaches.append((name, node.lineno, ast.unparse(node)))
    return reaches


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("package", type=pathlib.Path)
    args = parser.parse_args()
    package = args.package.resolve()
    modules = {module_name(package, path): path for path in sorted(package.rglob("*.py"))}
    modules["ringload._ringload"] = None  # the native module
    problems, edges = [], {}
    for name, path in modules.items():
        if path is None:
            continue
        where = path.relative_to(package.parent)
        for line, module, names in imports_of(name, path, path.name == "__init__.py"):
            # `from .ground import tensors` imports a module; `from .ground.tensors import ITEMSIZE` a name
            for imported, taken in ([(f"{module}.{n}", None) if f"{module}.{n}" in modules else (module, n)
                                     for n in names] or [(module, None)]):
                problems.extend(misplaced(where, line, name, imported, taken))
                if imported not in (name, "ringload"):
                    edges.setdefault(name, set()).add(imported)
    trees = {name: ast.parse(path.read_text()) for name, path in modules.items() if path is not None}
    for name, line, expression in private_reaches(trees):
        problems.append(f"{modules[name].relative_to(package.parent)}:{line}: {expression} reaches into "
                        "another module's private member")
    for start, circle in circles(edges).items():
        problems.append(f"a circle of imports: {' -> '.join(circle)}")
    for problem in problems:
        print(problem)
    rooms = {room_of(name) for name in modules} - {None, "_ringload", "errors"}
    print(f"{len(modules)} modules in {len(rooms)} rooms; "
          f"{sum(map(len, edges.values()))} imports between them; {len(problems)} out of place")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
