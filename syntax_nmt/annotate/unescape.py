"""The surface form a parser should see for a Moses-tokenized token (``--parser-unescape``).

Moses-style preprocessing (``tokenizer.perl``, sacremoses) leaves two kinds of forms in the
text that no pretrained parser was trained on:

* **placeholders** for characters split out of a word: ``@-@`` (``aggressive_dash_splits``:
  ``well-known`` -> ``well @-@ known``), ``@/@`` (intra-token slashes), and ``@,@`` /
  ``@.@`` (number separators in WikiText-style tokenization). Any token ``@c@`` whose inner
  character ``c`` is a single character that is not a letter, digit, ``@`` or whitespace is
  read as ``c``; so is tensor2tensor's ``##AT##-##AT##``;
* **escaped characters**: Moses' XML escapes ``&amp; &#124; &lt; &gt; &apos; &quot; &#91;
  &#93;`` (and the legacy ``&bar; &bra; &ket;``), and any other HTML character reference
  (``&#8217;``, ``&#x27;``, ``&eacute;``; only with the closing ``;``), unescaped in one pass
  (``&amp;lt;`` -> ``&lt;``).

:func:`parser_form` maps a token to the form shown to the parser, and nothing else changes:
the token itself, its subwords and every stream stay as in the input (the case stream too,
which is computed from the token). A form that would be empty or contain whitespace (e.g.
``&nbsp;``) is not used: the token is shown as it is. Pure functions, no parser import.
"""

import html.entities
import re
from typing import List, Sequence

#: Moses' XML escapes (sacremoses ``MosesTokenizer.escape_xml``) plus its legacy ones.
MOSES_ENTITIES = {
    "&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">", "&apos;": "'", "&quot;": '"', "&#91;": "[", "&#93;": "]",
    "&bar;": "|", "&bra;": "[", "&ket;": "]",
}
#: Other placeholders than ``@c@``.
PLACEHOLDERS = {"##AT##-##AT##": "-"}

_PLACEHOLDER = re.compile(r"@([^\w\s@])@")
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});")


def _entity(match: "re.Match") -> str:
    whole, name = match.group(0), match.group(1)
    if whole in MOSES_ENTITIES:
        return MOSES_ENTITIES[whole]
    if name[0] == "#":
        try:
            code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
            return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else whole
        except ValueError:
            return whole
    return html.entities.html5.get(name + ";", whole)


def parser_form(token: str) -> str:
    """The form of one Moses token shown to the parser (see the module docstring).

    Examples: ``@-@`` -> ``-``, ``&apos;s`` -> ``'s``, ``&quot;`` -> ``"``,
    ``AT&amp;T`` -> ``AT&T``, ``well`` -> ``well``, ``&nbsp;`` -> ``&nbsp;``.
    """
    if len(token) == 3 and token[0] == "@" == token[2]:
        m = _PLACEHOLDER.fullmatch(token)
        return m.group(1) if m else token
    if token in PLACEHOLDERS:
        return PLACEHOLDERS[token]
    if "&" not in token:
        return token
    form = _ENTITY.sub(_entity, token)
    if not form or len(form.split()) != 1 or form.split()[0] != form or not form.isprintable():
        return token
    return form


def parser_forms(tokens: Sequence[str]) -> List[str]:
    """:func:`parser_form` of every token (same length, same order)."""
    return [parser_form(t) for t in tokens]
