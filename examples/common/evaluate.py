#!/usr/bin/env python
"""Thin wrapper: ``syntax-nmt-evaluate`` (syntax_nmt/evaluation/evaluate.py) for the recipe's scripts."""

from syntax_nmt.evaluation.evaluate import cli_main

if __name__ == "__main__":
    cli_main()
