"""Syntax methods of the encoder, one module each, registered in a fixed order."""

from syntax_nmt.models.modules.methods.base import (  # noqa: F401
    SYNTAX_METHODS,
    SyntaxMethod,
    build_methods,
    parse_layers,
    parse_methods,
    register_syntax_method,
)
from syntax_nmt.models.modules.methods import sgnet  # noqa: F401,E402
from syntax_nmt.models.modules.methods import sla  # noqa: F401,E402
from syntax_nmt.models.modules.methods import syntax_bert  # noqa: F401,E402
