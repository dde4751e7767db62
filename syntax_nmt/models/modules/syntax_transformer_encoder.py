"""A fairseq Transformer encoder that reads source streams.

Subclasses :class:`fairseq.models.transformer.TransformerEncoderBase`: the layers,
positions, scaling and padding are fairseq's. It adds (1) source feature embeddings
through ``embed_tokens`` (a :class:`SourceFeatureEmbedding`) and (2) the syntax methods
selected by ``--syntax-attention`` (a comma-separated list, see
:mod:`syntax_nmt.models.modules.methods`), which plug in through fairseq's own
``build_encoder_layer``/``build_self_attention`` hooks and share one
:class:`~syntax_nmt.models.modules.syntax_context.SyntaxContext` per forward pass.
"""

from typing import Dict, List, Optional

import torch
import torch.utils.checkpoint
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerEncoderBase
from fairseq.modules import transformer_layer
from torch import Tensor, nn

from syntax_nmt.models.modules.compiled import compile_module, compile_options, compiled
from syntax_nmt.models.modules.inference_needs import (describe_needs, inference_needs, inference_streams,
                                                       required_streams)
from syntax_nmt.models.modules.methods import SyntaxMethod, build_methods
from syntax_nmt.models.modules.source_feature_embedding import SourceFeatureEmbedding
from syntax_nmt.models.modules.syntax_context import BoundContext, SyntaxContext


class SyntaxEncoderLayer(transformer_layer.TransformerEncoderLayerBase):
    """fairseq's encoder layer whose self-attention and/or input come from syntax methods.

    The layer reads the batch's :class:`SyntaxContext` from ``state`` once, when it is called,
    and hands that object to :meth:`forward_with_context`; with ``checkpoint`` that call is
    recomputed in the backward pass (``torch.utils.checkpoint``, non-reentrant: tensors a method
    leaves in ``ctx.outputs``, e.g. LISA's parse scores, keep their gradient) with the same
    context, whatever the encoder has bound by then.

    Args:
        cfg: fairseq TransformerConfig.
        state (BoundContext): where the encoder binds the batch's context.
        attention_builder: ``f(embed_dim, cfg) -> module`` replacing ``build_self_attention``, or None.
        input_builders (Dict[str, callable]): method name -> ``f(embed_dim) -> module`` applied
            to the layer input, in order (``module(x, ctx) -> x``).
        return_fc (bool): as fairseq's layer.
        checkpoint (bool): recompute the layer in the backward pass instead of storing its
            activations (``--checkpoint-activations``; identical results). With
            ``--offload-activations`` the layer is recomputed too, but its inputs stay on the device.
        compile_options (dict): ``torch.compile`` options of the layer's computation (``--syntax-compile``,
            :mod:`~syntax_nmt.models.modules.compiled`), or None.
    """

    def __init__(self, cfg, state, attention_builder=None, input_builders=None, return_fc=False,
                 checkpoint=False, compile_options=None):
        self._attention_builder = attention_builder  # read by build_self_attention during __init__
        super().__init__(cfg, return_fc=return_fc)
        self._attention_builder = None
        self.bound_context = state
        self.checkpoint = checkpoint
        #: ``torch.compile`` options of :meth:`layer_body` (``--syntax-compile``), or None: eager
        self.compile_options = compile_options
        self.syntax_inputs = None
        if input_builders:
            self.syntax_inputs = nn.ModuleDict({name: b(self.embed_dim) for name, b in input_builders.items()})

    def build_self_attention(self, embed_dim, cfg):
        if self._attention_builder is None:
            return super().build_self_attention(embed_dim, cfg)
        return self._attention_builder(embed_dim, cfg)

    def forward(self, x, encoder_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor] = None):
        ctx = self.bound_context.current()
        if self.checkpoint and self.training and torch.is_grad_enabled():
            # same RNG state in the recomputation (dropout), so results are identical
            return torch.utils.checkpoint.checkpoint(self.forward_with_context, x, encoder_padding_mask, attn_mask,
                                                     ctx, use_reentrant=False)
        return self.forward_with_context(x, encoder_padding_mask, attn_mask, ctx)

    def forward_with_context(self, x, encoder_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor],
                             ctx: SyntaxContext):
        """fairseq's layer forward with the batch's context ``ctx`` given explicitly."""
        with self.bound_context.bound(ctx):  # for the self-attention, which fairseq calls without it
            if self.compile_options is not None:  # --syntax-compile: the layer's computation, compiled
                return compiled(SyntaxEncoderLayer.layer_body, self.compile_options)(
                    self, x, encoder_padding_mask, attn_mask, ctx)
            return self.layer_body(x, encoder_padding_mask, attn_mask, ctx)

    def layer_body(self, x, encoder_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor],
                   ctx: SyntaxContext):
        """The layer's computation, ``ctx`` bound: its input modules, then fairseq's layer."""
        if self.syntax_inputs is not None:
            for module in self.syntax_inputs.values():
                x = module(x, ctx)
        return super().forward(x, encoder_padding_mask, attn_mask)


class SyntaxTransformerEncoder(TransformerEncoderBase):
    """Transformer encoder with source features and syntax methods.

    Args:
        cfg (TransformerConfig): fairseq config carrying the syntax options as attributes.
        dictionary (Dictionary): source dictionary.
        embed_tokens (nn.Module): ``nn.Embedding`` or :class:`SourceFeatureEmbedding`.
        methods (List[SyntaxMethod]): the syntax methods, built from ``cfg.syntax_attention`` by the model's
            :func:`~syntax_nmt.models.syntax_transformer.parse_options`; None: built here (an encoder made on its
            own).
    """

    def __init__(self, cfg, dictionary, embed_tokens, methods: Optional[List[SyntaxMethod]] = None):
        # plain attributes used while fairseq's __init__ calls build_encoder_layer
        self.bound_context = BoundContext()
        #: the syntax methods (built objects, in --syntax-attention's order)
        self.methods = list(methods) if methods is not None else build_methods(cfg, cfg.encoder.layers)
        self._layer_counter = 0
        self._compile = compile_options(cfg)
        super().__init__(cfg, dictionary, embed_tokens)
        self.feature_names = list(embed_tokens.names) if isinstance(embed_tokens, SourceFeatureEmbedding) else []
        self.syntax_methods = [m.name for m in self.methods]
        self.syntax_modules = nn.ModuleDict()
        for m in self.methods:
            module = m.build_encoder_module(self, self.bound_context)
            if module is not None:
                self.syntax_modules[m.name] = module
        #: the streams a training batch must carry (what the features, the methods and their losses read) ...
        self.required_streams = required_streams(self.feature_names, self.methods)
        #: ... and, in eval mode, what the forward pass reads at inference, by reader, and their union
        #: (:mod:`~syntax_nmt.models.modules.inference_needs`): LISA alone needs none, so translates plain tokens
        self.inference_needs = inference_needs(self.feature_names, self.methods)
        self.inference_streams = inference_streams(self.inference_needs)
        if self.methods:
            ids = [int(i) for i in (getattr(cfg, "word_start_ids", "") or "").split(",") if i]
            self.register_buffer("word_start_ids", torch.tensor(ids, dtype=torch.long), persistent=False)

    # -- fairseq hooks ---------------------------------------------------------------------
    def build_encoder_layer(self, cfg):
        index = self._layer_counter
        self._layer_counter += 1
        state = self.bound_context
        attention = None
        inputs = {}
        for m in self.methods:
            if index in m.attention_layers():
                attention = (lambda m: lambda dim, c: m.build_self_attention(index, dim, c, state))(m)
            layer_input = m.build_layer_input(index, cfg.encoder.embed_dim, cfg, state)
            if layer_input is not None:
                inputs[m.name] = (lambda mod: lambda dim: mod)(layer_input)
        if attention is None and not inputs:
            return self.build_plain_encoder_layer(cfg)
        # checkpointed by the layer itself, not by fairseq's checkpoint_wrapper: that one recomputes
        # the layer from its arguments, which lack the syntax context (and runs the first forward
        # without gradients, which would cut off the tensors methods leave in ctx.outputs)
        layer = SyntaxEncoderLayer(cfg, state, attention, inputs, return_fc=self.return_fc,
                                   checkpoint=cfg.checkpoint_activations, compile_options=self._compile)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)

    def build_plain_encoder_layer(self, cfg):
        """fairseq's own encoder layer (compiled in place with ``--syntax-compile``)."""
        layer = super().build_encoder_layer(cfg)
        return layer if self._compile is None else compile_module(layer, self._compile)

    def build_syntax_encoder_layer(self, cfg, attention_builder):
        """An encoder layer outside the stack (for modules that need one, e.g. SG-Net's): fairseq's layer whose
        self-attention is ``attention_builder(embed_dim, cfg)``, called with the batch's context
        (:meth:`SyntaxEncoderLayer.forward_with_context`); not checkpointed by itself."""
        return SyntaxEncoderLayer(cfg, self.bound_context, attention_builder, compile_options=self._compile)

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints from before the method registry kept SG-Net at ``{name}.syntax_layer``
        and aggregated special tokens like words: move it and keep that behaviour."""
        super().upgrade_state_dict_named(state_dict, name)
        old, new = f"{name}.syntax_layer.", f"{name}.syntax_modules.sgnet."
        moved = [k for k in list(state_dict) if k.startswith(old)]
        for k in moved:
            state_dict[new + k[len(old):]] = state_dict.pop(k)
        if moved and new + "keep_specials" not in state_dict:
            state_dict[new + "keep_specials"] = torch.tensor(False)
        return state_dict

    # -- forward -----------------------------------------------------------------------------
    def _check_streams(self, src_streams: Optional[Dict[str, Tensor]], src_tokens: Tensor) -> Dict[str, Tensor]:
        """The batch's streams, checked: in training every stream of :attr:`required_streams`, in eval mode those
        the model reads at inference (:attr:`inference_streams`); each one given as wide as the tokens."""
        src_streams = src_streams or {}
        needed = self.required_streams if self.training else self.inference_streams
        missing = [s for s in needed if s not in src_streams]
        if missing and self.training:
            raise ValueError(
                f"this model needs the source streams {self.required_streams} but the batch lacks {missing}; "
                "use --task syntax_translation on data binarized with syntax-nmt-binarize"
            )
        if missing:
            raise ValueError(
                f"the batch lacks the source streams {missing}, which this model reads at inference: "
                f"{describe_needs(self.inference_needs)}; translate with --task syntax_translation (data binarized "
                "with syntax-nmt-binarize, or raw text, which it parses)"
            )
        for name in self.required_streams:
            if name in src_streams and src_streams[name].shape != src_tokens.shape:
                raise ValueError(
                    f"stream {name!r} has shape {tuple(src_streams[name].shape)}, src_tokens {tuple(src_tokens.shape)}"
                )
        return src_streams

    def special_positions(self, src_tokens: Tensor) -> Tensor:
        """Bool ``(batch, src_len)``: pad, EOS and BOS positions."""
        d = self.dictionary
        return src_tokens.eq(d.pad()) | src_tokens.eq(d.eos()) | src_tokens.eq(d.bos())

    def syntax_context(self, src_tokens: Tensor, streams: Dict[str, Tensor]) -> SyntaxContext:
        """The :class:`SyntaxContext` of a batch (word starts from the subword tags ``B``/``O``); without the
        streams ``head`` and ``subword`` (a model that reads no parse at inference), a context without the parse."""
        heads = word_start = None
        if "head" in streams and "subword" in streams:
            heads = streams["head"]
            word_start = (streams["subword"].unsqueeze(-1) == self.word_start_ids).any(-1)
        return SyntaxContext(heads, word_start, self.special_positions(src_tokens), src_tokens.eq(self.padding_idx))

    def forward_non_torchscript(self, net_input: Dict[str, Tensor]):
        """fairseq's (how its sequence generator calls the encoder: every ``net_input`` entry but the decoder's
        ``prev_output_tokens``), leaving out the decoder's ``prev_output_factors`` too (target factors)."""
        return super().forward_non_torchscript({k: v for k, v in net_input.items() if k != "prev_output_factors"})

    def forward(self, src_tokens, src_lengths: Optional[Tensor] = None, return_all_hiddens: bool = False,
                token_embeddings: Optional[Tensor] = None, src_streams: Optional[Dict[str, Tensor]] = None):
        """Like fairseq's encoder, plus ``src_streams``: name -> ``(batch, src_len)`` LongTensor.

        With syntax methods, the returned dict also holds ``"syntax"``: the batch's
        :class:`SyntaxContext` (its ``outputs`` carry what methods hand to the criterion).
        """
        streams = self._check_streams(src_streams, src_tokens)
        if self.feature_names and token_embeddings is None:
            token_embeddings = self.embed_tokens(src_tokens, streams)
        if not self.syntax_methods:
            return self.forward_scriptable(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        ctx = self.syntax_context(src_tokens, streams)
        with self.bound_context.bound(ctx):  # the layers read it when fairseq calls them
            out = self.forward_scriptable(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        x = out["encoder_out"][0]
        for module in self.syntax_modules.values():
            x = module(x, ctx)
        out["encoder_out"] = [x]
        out["syntax"] = ctx
        return out
