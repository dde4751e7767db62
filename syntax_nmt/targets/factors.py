"""``factors``: target factors (Sockeye's ``--target-factors``; Garcia-Martinez et al., 2016): the decoder predicts
the target's POS tags beside each token (:class:`~syntax_nmt.models.modules.target_factors.FactoredTransformerDecoder`).

The task's side of target factors (their dictionaries, records, adoption from a checkpoint, the ``F-`` lines) is
:class:`~syntax_nmt.tasks.target_factors.TargetFactors`.
"""

from syntax_nmt.targets.base import WORD_STREAMS, TargetScheme, register_target_scheme

#: the target factor of the scheme's systems (the task's ``--target-factors``)
FACTOR = "pos"


@register_target_scheme("factors")
class Factors(TargetScheme):
    """Target factors: an output layer per factor over the decoder's state, trained with the translation (the syntax
    criterion's ``--target-factor-loss-weight``), the previous token's factors embedded (``--target-factor-input``);
    generation prints them as ``F-`` lines."""

    systems = (("factors", (), f"target {FACTOR.upper()} factors, the previous token's embedded (Sockeye's)"),
               ("lisa+factors", ("lisa",), f"LISA and target {FACTOR.upper()} factors"))
    needs_syntax_model = True
    train_args = ("--target-factors", FACTOR, "--target-factor-input")
    syntax_criterion = True
    target_streams = (FACTOR,)
    #: the F- lines of any factor with a tag per word are scored (a model trained with other --target-factors too)
    scored_streams = WORD_STREAMS
