"""What a model reads: in training, every stream of its parts (:func:`required_streams`); at inference, the union of
what its parts declare.

Each part says it beside its other data: a syntax method in
:attr:`~syntax_nmt.models.modules.methods.base.SyntaxMethod.inference_streams` (the parse, or nothing: LISA without
``--lisa-inject-parse`` attends with the parse its own head predicts), the source feature embeddings in
:attr:`~syntax_nmt.models.modules.source_feature_embedding.SourceFeatureEmbedding.reads_features_at_inference` (their
streams), the decoder of target factors in
:attr:`~syntax_nmt.models.modules.target_factors.FactoredTransformerDecoder.source_streams_at_inference` (nothing on
the source side). :func:`inference_needs` collects them by reader; :func:`inference_streams` is the union, which the
task reads or annotates when translating (``fairseq-generate``, ``fairseq-interactive``, the hub: a model that needs
nothing translates raw text with no parser) and the encoder requires in eval mode. Training needs every stream the
parts read, the losses' too: :func:`required_streams`, the one list the model, its encoder and the task go by.
"""

from typing import Dict, List, Sequence

from syntax_nmt.models.modules.methods.base import PARSE


def required_streams(features: Sequence[str], methods: Sequence) -> List[str]:
    """The streams a model reads in training (a batch must carry them): its ``--source-features``, then those its
    syntax methods read in their forward pass and their losses (heads, word boundaries), in order of first
    appearance. ``methods``: built :class:`SyntaxMethod` objects or classes."""
    needed = list(features)
    for m in methods:
        needed += [s for s in m.streams if s not in needed]
    return needed


def inference_needs(features: Sequence[str], methods: Sequence, factors: bool = False) -> Dict[str, List[str]]:
    """What each part of a model reads at inference, by the option that adds the part.

    Args:
        features: the ``--source-features`` names.
        methods: the model's syntax methods (built :class:`SyntaxMethod` objects, whose options may change their
            need, or classes).
        factors: whether the decoder predicts target factors.

    Returns:
        ``{"--source-features pos,case": ["pos", "case"], "--syntax-attention sgnet": ["subword", "head"]}``, in
        the model's order; a part that reads no stream at inference is left out (empty: the model translates from
        the tokens alone).
    """
    from syntax_nmt.models.modules.source_feature_embedding import SourceFeatureEmbedding
    from syntax_nmt.models.modules.target_factors import FactoredTransformerDecoder

    needs: Dict[str, List[str]] = {}
    if features and SourceFeatureEmbedding.reads_features_at_inference:
        needs[f"--source-features {','.join(features)}"] = list(features)
    for m in methods:
        if m.inference_streams:
            option = f" {m.inference_option}" if m.inference_option else ""
            needs[f"--syntax-attention {m.name}{option}"] = list(m.inference_streams)
    if factors and FactoredTransformerDecoder.source_streams_at_inference:
        needs["--target-factors"] = list(FactoredTransformerDecoder.source_streams_at_inference)
    return needs


def inference_streams(needs: Dict[str, List[str]]) -> List[str]:
    """The union of :func:`inference_needs`, in order of first appearance."""
    out: List[str] = []
    for streams in needs.values():
        out += [s for s in streams if s not in out]
    return out


def describe_needs(needs: Dict[str, List[str]]) -> str:
    """``"--syntax-attention sgnet reads the source parse (streams subword, head)"``: what reads what at inference,
    ``"; "``-joined (empty string for no need)."""
    parts = []
    for reader, streams in needs.items():
        what = ("the source parse" if sorted(streams) == sorted(PARSE) else
                "the parser's annotation" if reader.startswith("--source-features") else "the streams")
        parts.append(f"{reader} reads {what} (streams {', '.join(streams)})")
    return "; ".join(parts)
