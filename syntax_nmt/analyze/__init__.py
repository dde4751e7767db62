"""Analyses of trained syntax-nmt models (``syntax-nmt-analyze``): attention maps, SLA gates,
BLEU by source length, robustness to parse noise, learning curves by data fraction."""
