"""Target-side schemes: how a system puts the target's syntax into translation, one module each
(:mod:`~syntax_nmt.targets.base`: the interface and the registry; :mod:`~syntax_nmt.targets.factors`,
:mod:`~syntax_nmt.targets.tags`: the built-in ones). ``python -m syntax_nmt.targets`` makes the schemes' data for the
recipes."""

from syntax_nmt.targets.base import (  # noqa: F401
    BUILTIN,
    TARGET_SCHEMES,
    TargetScheme,
    register_target_scheme,
    registered_schemes,
)
