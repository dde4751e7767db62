

def ascii_locale_env() -> dict:
    """The environment of a subprocess under an ASCII locale (LC_ALL=C, without Python's UTF-8 mode or locale
    coercion, as in many containers) that imports the same ``syntax_nmt`` as this process (the package's folder
    first on PYTHONPATH: under mutation testing, the mutated copy)."""
    import os

    import syntax_nmt

    here = os.path.dirname(os.path.dirname(os.path.abspath(syntax_nmt.__file__)))
    return {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
            "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
