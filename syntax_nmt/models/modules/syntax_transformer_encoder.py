"""A fairseq Transformer encoder that reads source streams.

Subclasses :class:`fairseq.models.transformer.TransformerEncoderBase`: the layers,
positions, scaling and padding are fairseq's. It adds (1) source feature embeddings
through ``embed_tokens`` (a :class:`SourceFeatureEmbedding`) and (2) optional
syntax-guided attention over the final states (``--syntax-attention``), whose masks are
built from the head stream inside the forward pass on the model's device.
"""

from typing import Dict, Optional

import torch
from fairseq.models.transformer import TransformerEncoderBase
from torch import Tensor

from syntax_nmt.models.modules.sgnet_layer import SGNetLayer, gelu_layer_config
from syntax_nmt.models.modules.source_feature_embedding import SourceFeatureEmbedding

#: Choices of ``--syntax-attention``.
SYNTAX_ATTENTIONS = ["none", "sgnet"]


class SyntaxTransformerEncoder(TransformerEncoderBase):
    """Transformer encoder with source features and syntax-guided attention.

    Args:
        cfg (TransformerConfig): fairseq config carrying the syntax options as attributes.
        dictionary (Dictionary): source dictionary.
        embed_tokens (nn.Module): ``nn.Embedding`` or :class:`SourceFeatureEmbedding`.
    """

    def __init__(self, cfg, dictionary, embed_tokens):
        super().__init__(cfg, dictionary, embed_tokens)
        self.feature_names = list(embed_tokens.names) if isinstance(embed_tokens, SourceFeatureEmbedding) else []
        self.syntax_attention = getattr(cfg, "syntax_attention", "none")
        self.syntax_layer = None
        if self.syntax_attention == "sgnet":
            self.syntax_layer = SGNetLayer(
                self.build_encoder_layer(gelu_layer_config(cfg)),
                num_heads=cfg.encoder.attention_heads,
                alpha=cfg.sgnet_alpha,
                learn_alpha=cfg.sgnet_learn_alpha,
                convention=cfg.sgnet_subword,
            )
            ids = [int(i) for i in (getattr(cfg, "word_start_ids", "") or "").split(",") if i]
            self.register_buffer("word_start_ids", torch.tensor(ids, dtype=torch.long), persistent=False)
        elif self.syntax_attention != "none":
            raise ValueError(f"unknown --syntax-attention {self.syntax_attention!r}; choose from {SYNTAX_ATTENTIONS}")
        self.required_streams = list(self.feature_names)
        if self.syntax_layer is not None:
            self.required_streams += [s for s in ("subword", "head") if s not in self.required_streams]

    def _check_streams(self, src_streams: Optional[Dict[str, Tensor]], src_tokens: Tensor) -> Dict[str, Tensor]:
        src_streams = src_streams or {}
        missing = [s for s in self.required_streams if s not in src_streams]
        if missing:
            raise ValueError(
                f"this model needs the source streams {self.required_streams} but the batch lacks {missing}; "
                "use --task syntax_translation on data binarized with syntax-nmt-binarize "
                "(fairseq-interactive cannot annotate raw input)"
            )
        for name in self.required_streams:
            if src_streams[name].shape != src_tokens.shape:
                raise ValueError(
                    f"stream {name!r} has shape {tuple(src_streams[name].shape)}, src_tokens {tuple(src_tokens.shape)}"
                )
        return src_streams

    def special_positions(self, src_tokens: Tensor) -> Tensor:
        """Bool ``(batch, src_len)``: pad, EOS and BOS positions."""
        d = self.dictionary
        return src_tokens.eq(d.pad()) | src_tokens.eq(d.eos()) | src_tokens.eq(d.bos())

    def forward(self, src_tokens, src_lengths: Optional[Tensor] = None, return_all_hiddens: bool = False,
                token_embeddings: Optional[Tensor] = None, src_streams: Optional[Dict[str, Tensor]] = None):
        """Like fairseq's encoder, plus ``src_streams``: name -> ``(batch, src_len)`` LongTensor."""
        streams = self._check_streams(src_streams, src_tokens)
        if self.feature_names and token_embeddings is None:
            token_embeddings = self.embed_tokens(src_tokens, streams)
        out = self.forward_scriptable(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        if self.syntax_layer is not None:
            tags = streams["subword"]
            word_start = (tags.unsqueeze(-1) == self.word_start_ids).any(-1)
            x = out["encoder_out"][0]
            out["encoder_out"] = [
                self.syntax_layer(x, streams["head"], word_start, self.special_positions(src_tokens),
                                  out["encoder_padding_mask"][0])
            ]
        return out
