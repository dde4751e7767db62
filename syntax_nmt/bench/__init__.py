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

The old paths (``syntax_nmt.bench_length``, ``syntax_nmt.bench_memory``, ``syntax_nmt.bench_parse``) are aliases of
these modules, and the names of the old ``syntax_nmt.bench`` module (e.g. ``train_wps``) are read here from
:mod:`~syntax_nmt.bench.model`.
"""

_SUBMODULES = {"model", "length", "memory", "parse", "gpu_targets"}


def __getattr__(name):
    # the old module syntax_nmt.bench was what syntax_nmt.bench.model is now (imported on first use: the package
    # itself stays cheap to import for its siblings)
    if name.startswith("__") or name in _SUBMODULES:  # (``from syntax_nmt.bench import length`` asks first)
        raise AttributeError(name)
    from syntax_nmt.bench import model

    return getattr(model, name)
