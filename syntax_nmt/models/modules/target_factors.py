"""Target factors: a fairseq Transformer decoder that predicts, beside each target token, its tags (POS, dependency
label...) from the same decoder state, as Sockeye's target factors do (Garcia-Martinez et al., 2016, "Factored
Neural Machine Translation"; Sockeye 3's ``--target-factors``).

* Each factor has an output layer ``W_f h_t + b_f`` over the decoder's final state ``h_t`` (the state the token's
  output projection reads); the criterion adds its cross-entropy, weighted (``--target-factor-loss-weight``), to
  the translation loss.
* With ``--target-factor-input``, the previous token's factors are embedded and added to the previous token's
  embedding at the decoder input (Sockeye's default combination is a sum too), so the decoder conditions on the
  tags it predicted. In training the previous factors are the data's (teacher forcing, shifted like
  ``prev_output_tokens``); in incremental decoding each hypothesis's own prediction of the step before (the
  argmax), kept in the incremental state and reordered with the beam by fairseq's
  ``reorder_incremental_state``, so beam search carries every hypothesis's factors. As in Sockeye, factors do not
  enter the beam's score.
* The factors of a finished hypothesis are those its decoding predicted: :meth:`FactoredTransformerDecoder.
  predict_factors` runs the decoder again over the hypothesis's tokens, step by step with its own predictions as
  factor inputs (one pass when the factors are not an input), which is what the search computed for it.

Without factors the model keeps fairseq's own decoder (same parameters, same state-dict keys). The factors the model
is built with are typed records (:class:`~syntax_nmt.data.signatures.TargetFactor`, in its arguments); the task's
side of them (dictionaries, adoption from a checkpoint, the ``F-`` lines) is :mod:`syntax_nmt.tasks.target_factors`.
"""

from typing import Dict, List, Optional

import torch
from fairseq.models.transformer import TransformerDecoder
from fairseq.models.transformer.transformer_base import Embedding
from fairseq.models.transformer.transformer_decoder import Linear
from torch import Tensor, nn

#: key of the decoder's ``extra`` dict holding the factor logits (name -> ``(B, T, |factor vocabulary|)``)
FACTOR_LOGITS = "factor_logits"


class FactoredTransformerDecoder(TransformerDecoder):
    """fairseq's ``TransformerDecoder`` plus target factors (module docstring).

    Args:
        args, dictionary, embed_tokens, no_encoder_attn: as fairseq's ``TransformerDecoder``.
        factor_sizes (Dict[str, int]): factor name -> size of its dictionary (fairseq ``Dictionary``: pad 1, EOS 2).
        factor_input (bool): embed the previous token's factors into the decoder input.
    """

    #: source streams its forward pass reads at inference: none (the factors are predicted, on the target side;
    #: :func:`~syntax_nmt.models.modules.inference_needs.inference_needs`)
    source_streams_at_inference = ()

    def __init__(self, args, dictionary, embed_tokens, factor_sizes: Dict[str, int], factor_input: bool = False,
                 no_encoder_attn: bool = False, factor_pad: int = 1, factor_eos: int = 2):
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        if not factor_sizes:
            raise ValueError("FactoredTransformerDecoder needs at least one factor")
        self.factor_names: List[str] = list(factor_sizes)
        self.factor_pad, self.factor_eos = factor_pad, factor_eos
        self.factor_out = nn.ModuleDict({n: Linear(self.output_embed_dim, k) for n, k in factor_sizes.items()})
        self.factor_input = bool(factor_input)
        self._factor_in: Optional[Dict[str, Tensor]] = None
        if self.factor_input:
            dim = embed_tokens.embedding_dim
            self.factor_embed = nn.ModuleDict({n: Embedding(k, dim, factor_pad) for n, k in factor_sizes.items()})

    def _add_factor_embeddings(self, module, args, out: Tensor) -> Optional[Tensor]:
        if self._factor_in is None:
            return None
        for name, factors in self._factor_in.items():
            if factors.shape != out.shape[:2]:
                raise ValueError(f"target factor {name!r}: {tuple(factors.shape)} inputs for "
                                 f"{tuple(out.shape[:2])} tokens")
            out = out + self.factor_embed[name](factors).to(out.dtype)
        return out

    def _previous_factors(self, incremental_state, tokens: Tensor) -> Dict[str, Tensor]:
        """The factor inputs of an incremental step: each hypothesis's prediction of the step before (EOS, as in
        training, at the first step)."""
        state = self.get_incremental_state(incremental_state, "factors")
        if state is None:
            first = tokens.new_full((tokens.size(0), 1), self.factor_eos)
            return {n: first for n in self.factor_names}
        return {n: state[n].unsqueeze(1) for n in self.factor_names}

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only: bool = False,
                full_context_alignment: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, src_lengths=None, return_all_hiddens: bool = False,
                prev_output_factors: Optional[Dict[str, Tensor]] = None):
        """fairseq's ``forward``, plus ``prev_output_factors`` (name -> ``(B, T)``, the data's factors shifted like
        ``prev_output_tokens``; needed with ``factor_input`` unless decoding incrementally); ``extra`` holds
        :data:`FACTOR_LOGITS`."""
        if self.factor_input:
            if incremental_state is not None:
                self._factor_in = self._previous_factors(incremental_state, prev_output_tokens)
            elif prev_output_factors is None:
                raise ValueError("this model embeds the previous target factors (--target-factor-input): the batch "
                                 "needs prev_output_factors (--task syntax_translation --target-factors ...)")
            else:
                self._factor_in = {n: prev_output_factors[n] for n in self.factor_names}
        # fairseq's decoder embeds its input tokens inside extract_features: a forward hook on the token embedding,
        # there only while this call runs (the module may be the encoder's too, --share-all-embeddings; and a copy
        # of the model, e.g. fairseq's EMA, carries no hook bound to this decoder), adds the factors' embeddings
        handle = self.embed_tokens.register_forward_hook(self._add_factor_embeddings) if self._factor_in else None
        try:
            x, extra = self.extract_features(prev_output_tokens, encoder_out=encoder_out,
                                             incremental_state=incremental_state,
                                             full_context_alignment=full_context_alignment,
                                             alignment_layer=alignment_layer, alignment_heads=alignment_heads)
        finally:
            self._factor_in = None
            if handle is not None:
                handle.remove()
        logits = {n: self.factor_out[n](x) for n in self.factor_names}
        extra[FACTOR_LOGITS] = logits
        if self.factor_input and incremental_state is not None:
            self.set_incremental_state(incremental_state, "factors",
                                       {n: logits[n][:, -1].argmax(-1) for n in self.factor_names})
        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        """fairseq's hook (called for every module of the decoder): the factor predictions follow their
        hypotheses through the beam."""
        super().reorder_incremental_state(incremental_state, new_order)
        state = self.get_incremental_state(incremental_state, "factors")
        if state is not None:
            self.set_incremental_state(incremental_state, "factors",
                                       {n: v.index_select(0, new_order) for n, v in state.items()})

    @torch.no_grad()
    def predict_factors(self, encoder_out, tokens: Tensor) -> Dict[str, Tensor]:
        """The factors the decoder predicts for given target ``tokens`` ``(N, L)`` (each row a hypothesis ending in
        EOS, right-padded), name -> ``(N, L)`` factor ids, one per token (EOS included): with ``factor_input`` step
        by step, each step's input factors the prediction of the step before, as in decoding; else in one pass.

        Args:
            encoder_out: the encoder's output for the ``N`` rows.
            tokens: ``(N, L)`` long.
        """
        eos = self.dictionary.eos()
        prev = torch.cat([tokens.new_full((tokens.size(0), 1), eos), tokens[:, :-1]], dim=1)
        if not self.factor_input:
            _, extra = self.forward(prev, encoder_out=encoder_out, features_only=True)
            return {n: v.argmax(-1) for n, v in extra[FACTOR_LOGITS].items()}
        state: Dict[str, Dict[str, Optional[Tensor]]] = {}
        steps = []
        for t in range(tokens.size(1)):
            _, extra = self.forward(prev[:, : t + 1], encoder_out=encoder_out, incremental_state=state,
                                    features_only=True)
            steps.append({n: v[:, -1].argmax(-1) for n, v in extra[FACTOR_LOGITS].items()})
        return {n: torch.stack([s[n] for s in steps], dim=1) for n in self.factor_names}
