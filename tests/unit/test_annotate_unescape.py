"""``--parser-unescape``'s pure parts: the plain form a parser is given for each Moses token (placeholders and
XML escapes undone, checked against sacremoses' own output), and the option's defaults and errors. The
annotation with the option on a trained pipeline: tests/integration/test_annotate_parser_unescape.py.
"""

import pytest
from sacremoses import MosesTokenizer

from syntax_nmt.annotate.cli import build_parser, check_args
from syntax_nmt.annotate.unescape import parser_form, parser_forms


@pytest.mark.parametrize("token,form", [
    ("@-@", "-"), ("@/@", "/"), ("@,@", ","), ("@.@", "."), ("@:@", ":"), ("##AT##-##AT##", "-"),
    ("&apos;s", "'s"), ("&quot;", '"'), ("&amp;", "&"), ("&#124;", "|"), ("&lt;", "<"), ("&gt;", ">"),
    ("&#91;", "["), ("&#93;", "]"), ("&bar;", "|"), ("&bra;", "["), ("&ket;", "]"),
    ("AT&amp;T", "AT&T"), ("&amp;lt;", "&lt;"), ("&#8217;", "\u2019"), ("&#x27;", "'"), ("caf&eacute;", "café"),
    # not placeholders or entities, or forms a parser word cannot have: unchanged
    ("@a@", "@a@"), ("@@", "@@"), ("@@@", "@@@"), ("@-@-", "@-@-"), ("a@-@b", "a@-@b"), ("AT&T", "AT&T"),
    ("&amp", "&amp"), ("&nbsp;", "&nbsp;"), ("&#32;", "&#32;"), ("&#0;", "&#0;"), ("&#xD800;", "&#xD800;"),
    ("&#173;", "&#173;"), ("&nosuchentity;", "&nosuchentity;"), ("well", "well"), ("-", "-"),
])
def test_parser_form(token, form):
    assert parser_form(token) == form


def test_parser_forms_of_sacremoses_output():
    tok = MosesTokenizer("en")
    moses = tok.tokenize("The well-known AT&T's \"x\" | [y] <z>", aggressive_dash_splits=True, return_str=True)
    assert moses == "The well @-@ known AT &amp; T &apos;s &quot; x &quot; &#124; &#91; y &#93; &lt; z &gt;"
    plain = tok.tokenize("The well-known AT&T's \"x\" | [y] <z>", aggressive_dash_splits=True, return_str=True,
                         escape=False)
    assert parser_forms(moses.split()) == plain.replace("@-@", "-").split()


def test_option_defaults_and_errors():
    def parsed(*argv):
        args = build_parser().parse_args(["--src-lang", "en", "-o", "x", "--subword", "none", *argv]
                                         + ([] if "--conllu" in argv else ["--source", "s"]))
        check_args(args)
        return args.parser_unescape

    assert parsed("--pretokenized") is True
    assert parsed("--pretokenized", "--no-parser-unescape") is False
    assert parsed() is False  # raw text: spaCy tokenizes it, nothing to unescape
    with pytest.raises(ValueError, match="--parser-unescape needs --pretokenized"):
        parsed("--parser-unescape")
    conllu = ("--backend", "conllu", "--conllu", "c", "--pretokenized")
    assert parsed(*conllu) is False  # an external parse is used as it is
    with pytest.raises(ValueError, match="applies to the spaCy backend"):
        parsed(*conllu, "--parser-unescape")
