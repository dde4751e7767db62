"""Names of the files that one part of syntax-nmt writes and another reads (no imports).

Each name is spelled here once; the modules that write or read the file format it.
"""

#: The annotation settings of a binarized data directory: ``DATA/annotation.json``
#: (``syntax-nmt-binarize`` copies them there; the task reads them).
DATA_SETTINGS_FILE = "annotation.json"
#: Suffix of the annotation settings ``syntax-nmt-annotate -o P`` writes beside its outputs:
#: ``P.annotation.json`` (``syntax-nmt-binarize`` reads them).
SETTINGS_SUFFIX = ".annotation.json"
#: fairseq's dictionary of a language or of a tag stream in a data directory: ``dict.{name}.txt``.
DICT_FILE = "dict.{}.txt"
#: The record of a noisy copy of a data directory (``syntax-nmt-analyze noise``): ``noise-{stream}.json``.
NOISE_RECORD_FILE = "noise-{}.json"
