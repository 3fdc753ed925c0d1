"""The research harness runs on the package's public API: every name it
imports from ``spectralnet_tf`` is exported (``spectralnet_tf.__all__``) or
documented in docs/api.md, the page of the lower-level API."""

import ast
import os

import spectralnet_tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = os.path.join(ROOT, "docs", "api.md")


def _imports(folder):
    """``(file, module, name)`` for every ``from spectralnet_tf[.module] import
    name`` in the Python files of ``folder`` (module "" for the package)."""
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(folder, name)
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module == "spectralnet_tf" or node.module.startswith("spectralnet_tf.")):
                module = node.module[len("spectralnet_tf."):] if "." in node.module else ""
                for alias in node.names:
                    yield name, module, alias.name


def test_the_harness_imports_only_exported_or_documented_names():
    documented = open(API).read()
    missing = []
    for folder in ("harness", "scripts"):
        for file, module, name in _imports(os.path.join(ROOT, folder)):
            if not module and name in spectralnet_tf.__all__:
                continue
            spelled = f"`{module}.{name}`" if module else f"`{name}`"
            if spelled not in documented:
                missing.append(f"{folder}/{file}: {spelled}")
    assert not missing, "not exported nor in docs/api.md:\n" + "\n".join(sorted(set(missing)))


def test_the_check_sees_every_import_form():
    """The walk finds plain, parenthesised and function-local imports, and
    names the module of each (the check above would pass on finding none)."""
    found = set(_imports(os.path.join(ROOT, "harness")))
    modules = {module for _, module, _ in found}
    assert {"train", "spectral", "affinity"} <= modules
    assert any(module == "" for _, module, _ in found)  # from spectralnet_tf import ...
