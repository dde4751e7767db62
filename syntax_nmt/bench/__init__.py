"""The benchmarks, one module each:

* :mod:`~syntax_nmt.bench.model` (``make bench``, ``python -m syntax_nmt.bench``): training and generation speed and
  training memory of every system against the stock fairseq Transformer, measured in the same run;
* :mod:`~syntax_nmt.bench.length` (``make bench-length``, ``python -m syntax_nmt.bench.length``): the encoders alone,
  time and memory against the sequence length;
* :mod:`~syntax_nmt.bench.memory` (``python -m syntax_nmt.bench.memory``): the in-process training memory measure
  that ``make bench`` runs per system;
* :mod:`~syntax_nmt.bench.parse` (``python -m syntax_nmt.bench.parse``): raw-text translation with and without the
  parser;
* :mod:`~syntax_nmt.bench.gpu_targets` (``python -m syntax_nmt.bench.gpu_targets FILES...``): issue 49's GPU targets
  against the JSON files of the two benches (``scripts/gpu/bench_all.sh`` writes them on a GPU).
"""
