"""The import structure of the package, the harness and scripts/, read from
their source with ``ast`` (nothing is imported, so a broken module fails here
by name rather than at collection).

Rules: no import circle among these modules, no ``sys.path`` edit, scripts/
are entry points that import no other script, the installed package never
imports the harness (which is not installed with it), and no module uses
another module's private (``_name``) function or attribute."""

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("spectralnet_tf", "harness")
TREES = PACKAGES + ("scripts",)


def _module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources():
    """{module name: (path, parsed tree)} for every .py file of TREES
    (scripts/NAME.py is ``scripts.NAME``)."""
    sources = {}
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            if any(part.endswith(".egg-info") or part == "__pycache__" for part in path.parts):
                continue
            sources[_module_name(path)] = (path, ast.parse(path.read_text(), filename=str(path)))
    return sources


SOURCES = _sources()
MODULES = set(SOURCES)


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package_of(module, path):
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(module, path, node):
    """The dotted module an ``ImportFrom`` names, relative imports resolved."""
    if not node.level:
        return node.module
    base = _package_of(module, path).split(".")
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _resolve(importer, name):
    """The project module that importing ``name`` from ``importer`` loads,
    or None for an outside module. A script's bare ``import NAME`` finds
    scripts/NAME.py, the script's own folder being first on sys.path."""
    if importer.startswith("scripts.") and "." not in name and f"scripts.{name}" in MODULES:
        return f"scripts.{name}"
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module):
    """[(imported module name as written, line, imported names or None)] of
    every import statement in ``module``, at any depth (inside functions,
    ``try`` and ``if`` blocks too), plus ``importlib.import_module("x")``
    and ``__import__("x")`` calls with a literal name."""
    path, tree = SOURCES[module]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((_absolute(module, path, node), node.lineno, [alias.name for alias in node.names]))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            found.append((node.args[0].value, node.lineno, None))
    return found


def _edges(module):
    """{project module imported by ``module``: first line}. ``from P import
    name`` imports P.name when that is a module, else P itself."""
    edges = {}
    for name, line, names in _imports(module):
        targets = []
        if names is None:
            targets.append(_resolve(module, name))
        else:
            for imported in names:
                sub = f"{name}.{imported}"
                targets.append(sub if sub in MODULES else _resolve(module, name))
        for target in targets:
            if target is not None and target != module:
                edges.setdefault(target, line)
    return edges


GRAPH = {module: _edges(module) for module in sorted(MODULES)}


def _cycles(graph):
    """One import circle per strongly connected component of more than one
    module (Tarjan), as the list of modules along it, first one repeated."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for component in components:
        start = min(component)
        # Breadth-first within the component from start until an edge leads
        # back to it: a shortest circle through start.
        parents, frontier, closing = {start: None}, [start], None
        while closing is None:
            nxt = []
            for v in frontier:
                if start in graph[v]:
                    closing = v
                    break
                for w in sorted(graph[v]):
                    if w in component and w not in parents:
                        parents[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [closing]
        while parents[path[-1]] is not None:
            path.append(parents[path[-1]])
        cycles.append(path[::-1] + [start])
    return cycles


def _where(module, line):
    return f"{SOURCES[module][0].relative_to(ROOT)}:{line}"


def test_every_file_is_seen():
    assert "spectralnet_tf.estimator" in MODULES and "harness.reproduce" in MODULES
    assert "scripts.run" in MODULES
    # The resolver follows relative and absolute imports alike.
    assert "spectralnet_tf.distribute" in GRAPH["spectralnet_tf.estimator"]
    assert "harness.reproduce" in GRAPH["scripts.run"]


def test_cycle_finder_reports_a_circle():
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


def test_no_import_circle():
    circles = [" -> ".join(cycle) for cycle in _cycles(GRAPH)]
    assert not circles, "import circles:\n" + "\n".join(circles)


def _is_sys_path(node):
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def _sys_path_edits(tree):
    """Lines of ``tree`` that change ``sys.path``: assignment (also to a slice
    or an item, and ``+=``), deletion, a mutating method, ``from sys import path``."""
    lines = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
            if _is_sys_path(target):
                lines.append(node.lineno)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and _is_sys_path(node.func.value)
                and node.func.attr in ("insert", "append", "extend", "remove", "pop", "clear")):
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "sys" and any(
                alias.name == "path" for alias in node.names):
            lines.append(node.lineno)
    return sorted(lines)


def test_sys_path_edit_finder():
    source = ("import sys\nsys.path.insert(0, 'x')\nsys.path = []\nsys.path[0:0] = ['y']\n"
              "sys.path += ['z']\nprint(sys.path)\nfrom sys import path\nsys.path.append('w')\n")
    assert _sys_path_edits(ast.parse(source)) == [2, 3, 4, 5, 7, 8]


def test_no_sys_path_edit():
    edits = [_where(module, line) for module in sorted(MODULES)
             for line in _sys_path_edits(SOURCES[module][1])]
    assert not edits, "sys.path edited at " + ", ".join(edits)


def test_scripts_import_no_other_script():
    found = [f"{_where(module, line)} imports {target}"
             for module in sorted(MODULES) if module.startswith("scripts.")
             for target, line in GRAPH[module].items() if target.startswith("scripts.")]
    assert not found, "\n".join(found)


def test_package_never_imports_the_harness():
    found = [f"{_where(module, line)} imports {name}"
             for module in sorted(MODULES) if module.split(".")[0] == "spectralnet_tf"
             for name, line, _ in _imports(module)
             if name and name.split(".")[0] in ("harness", "scripts")]
    assert not found, "\n".join(found)


def _defined_names(tree):
    """Every name ``tree`` defines: functions, classes, assigned names and
    assigned attributes (``self._x = ...``), at any depth."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


DEFINED = {module: _defined_names(SOURCES[module][1]) for module in MODULES}


def _module_aliases(module):
    """{local name: project module} for names bound to a project module by
    ``import x.y``, ``import x.y as z`` or ``from x import submodule``."""
    path, tree = SOURCES[module]
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    if alias.name in MODULES:
                        aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    if top in MODULES:
                        aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path, node)
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
    return aliases


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _private_uses(module):
    """Where ``module`` reaches into another project module's private name:
    ``from x import _name``; ``mod._name`` on an imported project module; and
    ``obj._name`` on any object but ``self``, ``cls`` or ``super()`` where
    ``_name`` is defined in another project module and nowhere in this one
    (an instance of another module's class: ``net._resolve_params()``)."""
    path, tree = SOURCES[module]
    aliases = _module_aliases(module)
    owners = {}
    for other in MODULES - {module}:
        for name in DEFINED[other]:
            if _is_private(name):
                owners.setdefault(name, set()).add(other)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(module, _absolute(module, path, node) or "")
            if source is not None and source != module:
                found.extend(f"{_where(module, node.lineno)}: from {source} import {alias.name}"
                             for alias in node.names if _is_private(alias.name))
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = _dotted(node.value)
            if owner is not None:
                head, _, rest = owner.partition(".")
                target = aliases.get(head)
                if target is not None:
                    target = ".".join(filter(None, [target, rest]))
                    if target in MODULES and target != module:
                        found.append(f"{_where(module, node.lineno)}: {owner}.{node.attr} ({target}'s private name)")
                        continue
            value = node.value
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                continue
            if node.attr in owners and node.attr not in DEFINED[module]:
                shown = owner or ast.unparse(value)
                found.append(f"{_where(module, node.lineno)}: {shown}.{node.attr} "
                             f"(private to {', '.join(sorted(owners[node.attr]))})")
    return found


def test_private_use_finder():
    """The finder itself, on two made-up modules: each form is caught, and a
    module's own privates and ``self``/``super()`` uses are not."""
    owner = (
        "class Owner:\n"
        "    def _hidden(self):\n"
        "        return 1\n"
        "def _helper():\n"
        "    return 2\n"
    )
    probe = (
        "from spectralnet_tf import probe_owner_\n"
        "import spectralnet_tf.probe_owner_\n"
        "from spectralnet_tf.probe_owner_ import Owner, _helper\n"
        "class Mine(Owner):\n"
        "    def _own(self):\n"
        "        return self._hidden(), super()._hidden()\n"
        "def f(obj):\n"
        "    obj._hidden()\n"
        "    probe_owner_._helper()\n"
        "    spectralnet_tf.probe_owner_._helper()\n"
        "    Mine()._own()\n"
    )
    added = {"spectralnet_tf.probe_owner_": owner, "spectralnet_tf.probe_user_": probe}
    for name, source in added.items():
        SOURCES[name] = (ROOT / (name.replace(".", "/") + ".py"), ast.parse(source))
        MODULES.add(name)
        DEFINED[name] = _defined_names(SOURCES[name][1])
    try:
        found = _private_uses("spectralnet_tf.probe_user_")
        clean = _private_uses("spectralnet_tf.probe_owner_")
    finally:
        for name in added:
            del SOURCES[name], DEFINED[name]
            MODULES.discard(name)
    lines = sorted(int(entry.split(":")[1]) for entry in found)
    assert lines == [3, 8, 9, 10], found
    assert clean == []


def test_no_module_uses_another_modules_private_name():
    found = [entry for module in sorted(MODULES) for entry in sorted(_private_uses(module))]
    assert not found, "\n".join(found)
