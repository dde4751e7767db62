"""The per-batch syntax context shared by every syntax method of the encoder.

One :class:`SyntaxContext` is made per encoder forward pass from the batch's streams. It
computes the word-level tree (word index, parents, ancestors, distances) lazily, once, on the
model's device, and caches whatever the methods derive from it (SDOI, SLA and Syntax-BERT
masks...) so that no layer recomputes them. Every computation is a batched tensor op from
:mod:`syntax_nmt.syntax.tree` (no Python loop over tokens or sentences, no host sync).
"""

import contextlib
from typing import Any, Callable, Dict, Hashable, Iterator, Optional

import torch
from torch import Tensor

from syntax_nmt.syntax.tree import WordTree, additive_mask, word_tree


class SyntaxContext:
    """Syntax facts of one batch.

    Args:
        heads (Tensor): ``(batch, src_len)`` relative head offsets (stream ``head``), or None: a batch without the
            parse (translation by a model that needs none at inference); then :attr:`tree` raises.
        word_start (Tensor): bool ``(batch, src_len)``, first subwords (tags ``B``/``O``), or None with ``heads``.
        special (Tensor): bool ``(batch, src_len)``, pad/EOS/BOS positions.
        padding_mask (Tensor): bool ``(batch, src_len)``, True at pads.
    """

    def __init__(self, heads: Optional[Tensor], word_start: Optional[Tensor], special: Tensor,
                 padding_mask: Tensor):
        self.heads = heads
        self.word_start = word_start
        self.special = special
        self.padding_mask = padding_mask
        self._cache: Dict[Hashable, Any] = {}
        #: tensors a method hands to the criterion (e.g. LISA's parse-head scores)
        self.outputs: Dict[str, Any] = {}

    def cached(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per batch under ``key``; later calls return the same object. In a compiled layer
        (``--syntax-compile``) ``compute`` runs eagerly: its shapes and loops depend on the batch's length."""
        if key not in self._cache:
            compiling = _untraced is not None and torch.compiler.is_compiling()
            self._cache[key] = _untraced(compute) if compiling else compute()
        return self._cache[key]

    def record_output(self, key: str, value: Any) -> None:
        """Hand ``value`` to the criterion under ``outputs[key]``. The first value of a batch stays:
        recomputing a layer in the backward pass (``--checkpoint-activations``) records again, and
        the criterion has used (and must keep) the forward's."""
        self.outputs.setdefault(key, value)

    @property
    def has_parse(self) -> bool:
        """Whether the batch carries the parse (heads and word boundaries)."""
        return self.heads is not None and self.word_start is not None

    @property
    def tree(self) -> WordTree:
        """The word-level :class:`~syntax_nmt.syntax.tree.WordTree` of the batch.

        Raises:
            ValueError: the batch carries no parse (:attr:`has_parse`).
        """
        if not self.has_parse:
            raise ValueError("the batch carries no source parse (streams subword, head), which this computation "
                             "reads: give the model the streams it was trained with")
        return self.cached("word_tree", lambda: word_tree(self.heads, self.word_start, self.special))

    @property
    def word_index(self) -> Tensor:
        return self.tree.word_index

    def additive(self, key: Hashable, allowed: Callable[[], Tensor], dtype: torch.dtype = torch.float32) -> Tensor:
        """Cached additive version (0 / very negative, finite in ``dtype``) of a bool mask."""
        return self.cached(("additive", key, dtype), lambda: additive_mask(allowed(), dtype))


def _call(compute: Callable[[], Any]) -> Any:
    return compute()


#: ``_call`` under ``torch.compiler.disable`` once a layer is compiled (:func:`untraced_context`); None before: the
#: decorator imports torch._dynamo, seconds that an eager process does not need to spend
_untraced: Optional[Callable[[Callable[[], Any]], Any]] = None


def untraced_context() -> None:
    """From now on, compiled code (``--syntax-compile``, :mod:`syntax_nmt.models.modules.compiled`) computes what
    :meth:`SyntaxContext.cached` computes eagerly, untraced (a graph break where it first reads it)."""
    global _untraced
    if _untraced is None:
        _untraced = torch.compiler.disable(_call)


class BoundContext:
    """The :class:`SyntaxContext` bound now: through it the modules built inside fairseq's encoder layers reach
    the context of the batch being encoded (fairseq calls its layers, and they their self-attention, with ``x`` and
    the padding mask only).

    The context is bound only while a call that holds it runs: the encoder binds it for its
    forward, and each :class:`~syntax_nmt.models.modules.syntax_transformer_encoder.SyntaxEncoderLayer`
    reads it once when called and binds that same object again around its own computation, so
    that recomputing the layer in the backward pass (``--checkpoint-activations``), after the
    encoder's forward has returned, sees the batch's context and not whatever is bound then.
    """

    def __init__(self):
        self.ctx: Optional[SyntaxContext] = None

    def current(self) -> SyntaxContext:
        if self.ctx is None:
            raise RuntimeError("a syntax module ran outside SyntaxTransformerEncoder.forward (no syntax context set)")
        return self.ctx

    @contextlib.contextmanager
    def bound(self, ctx: SyntaxContext) -> Iterator[SyntaxContext]:
        """Bind ``ctx`` for the ``with`` block, then restore what was bound before (calls nest)."""
        previous, self.ctx = self.ctx, ctx
        try:
            yield ctx
        finally:
            self.ctx = previous


#: the old name of :class:`BoundContext` (methods written against it, the ``state`` their modules are given, keep
#: working)
SyntaxState = BoundContext
