# SPDX-License-Identifier: MIT
"""The type stubs (weft/__init__.pyi) against the package: every public
name and every public attribute of weft.Trace has a stub, with the
parameters of the real call, so the stubs cannot fall behind."""

import ast
import inspect
import pathlib

import pytest

import weft

STUB = pathlib.Path(weft.__file__).with_name("__init__.pyi")


def stub_tree():
    return ast.parse(STUB.read_text())


def stub_class(tree, name):
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def stub_names(tree):
    names = set()
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.AnnAssign):
            names.add(n.target.id)
    return names


def params(fn):
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    names += [a.vararg.arg] if a.vararg else []
    names += [x.arg for x in a.kwonlyargs]
    return names + ([a.kwarg.arg] if a.kwarg else [])


def test_installed_next_to_the_package():
    assert STUB.is_file()
    assert STUB.with_name("py.typed").is_file()


def test_every_public_name_has_a_stub():
    missing = set(weft.__all__) - stub_names(stub_tree())
    assert not missing


CLASSES = ["Trace", "Grammar", "HephWriter", "HephStream", "PallasWriter", "PallasThread"]


@pytest.mark.parametrize("name", CLASSES)
def test_every_class_attribute_has_a_stub_with_its_parameters(name):
    cls = stub_class(stub_tree(), name)
    real_cls = getattr(weft, name)
    stubs = {}
    for n in cls.body:
        if isinstance(n, ast.FunctionDef):
            stubs[n.name] = n
        elif isinstance(n, ast.AnnAssign):
            stubs[n.target.id] = None
    public = [n for n in dir(real_cls) if not n.startswith("_")]
    assert not set(public) - set(stubs)
    for attr, fn in stubs.items():
        real = getattr(real_cls, attr, None)
        if fn is None or isinstance(real, property) or not callable(real) or \
                attr in ("__enter__", "__exit__"):
            continue
        try:
            sig = inspect.signature(real)
        except ValueError:  # a C method without a signature
            continue
        if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()) and \
                fn.args.kwonlyargs:
            # **options spelled out in the stub: the named parameters first
            named = [p for p, v in sig.parameters.items() if v.kind is not v.VAR_KEYWORD]
            assert params(fn)[:len(named)] == named, attr
            continue
        assert params(fn) == list(sig.parameters), attr


def test_open_has_the_settings_of_the_library():
    fn = next(n for n in stub_tree().body if isinstance(n, ast.FunctionDef) and n.name == "open")
    for setting in weft._OPEN_SETTINGS:
        assert setting in params(fn)


def test_everything_public_has_a_docstring():
    """Every public name of the package, and every public attribute and
    method of its classes, says what it is (help(weft) is the reference)."""
    missing = []
    for name in weft.__all__:
        obj = getattr(weft, name)
        if isinstance(obj, (tuple, str, int)):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if attr.startswith("_") or not (callable(value) or isinstance(value, property)
                                                or type(value).__name__ == "getset_descriptor"):
                    continue
                if not (getattr(value, "__doc__", None) or "").strip():
                    missing.append(f"{name}.{attr}")
    assert not missing
    for attr in dir(weft.Trace):
        if not attr.startswith("_"):
            assert (getattr(weft.Trace, attr).__doc__ or "").strip(), attr
