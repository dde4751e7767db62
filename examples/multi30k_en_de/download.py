#!/usr/bin/env python
"""Download Multi30k task 1 (raw, cased English and German), resumably and with checksums.

The files (``train``, ``val``, ``test_2016_flickr``, ``test_2017_flickr``, ``test_2017_mscoco``, each
``.en.gz`` and ``.de.gz``) come from the public repository https://github.com/multi30k/dataset,
``data/task1/raw/``, at the commit named in ``manifest.json`` next to this file, which also holds their sizes
and checksums. Downloads resume, skip what is there and are verified (:mod:`syntax_nmt.recipes.download`,
shared with the WMT14 recipe); every file's sha256 is recorded in ``DEST/SHA256SUMS``.

``--local DIR`` (or the ``MULTI30K_DIR`` environment variable) takes a copy already on disk instead: a
directory holding the files, or a clone of the repository (``DIR/data/task1/raw/`` is then used). The
copies are checked against the manifest like downloads.
"""

import argparse
import os
import sys
from typing import Dict, List, Optional

from syntax_nmt.recipes.download import download_all, load_manifest

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MANIFEST = os.path.join(HERE, "manifest.json")
LOCAL_ENV = "MULTI30K_DIR"
#: where a clone of github.com/multi30k/dataset keeps the files
REPO_SUBDIR = os.path.join("data", "task1", "raw")


def local_source(path: Optional[str]) -> Optional[str]:
    """The directory holding the files: ``path`` itself, or its ``data/task1/raw`` (a clone of the
    repository); None for no local copy.

    Raises:
        FileNotFoundError: ``path`` is not a directory.
    """
    if not path:
        return None
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{LOCAL_ENV}/--local: {path} is not a directory")
    inner = os.path.join(path, REPO_SUBDIR)
    return inner if os.path.isdir(inner) else path


def main(args: argparse.Namespace) -> List[Dict[str, str]]:
    local = args.local if args.local is not None else os.environ.get(LOCAL_ENV) or None
    try:
        source = local_source(local)
    except FileNotFoundError as e:
        sys.exit(f"download.py: error: {e}")
    return download_all(load_manifest(args.manifest), args.dest, source, retries=args.retries,
                        timeout=args.timeout, quiet=args.quiet)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  python examples/multi30k_en_de/download.py --dest multi30k_en_de/download\n"
        "  git clone https://github.com/multi30k/dataset m30k && "
        "python examples/multi30k_en_de/download.py --dest d --local m30k",
    )
    parser.add_argument("--dest", required=True, help="directory for the files")
    parser.add_argument("--manifest", default=DEFAULT_MANIFEST, help="file list with URLs and checksums")
    parser.add_argument("--local", default=None,
                        help=f"a copy on disk: a directory with the files or a clone of the repository "
                        f"(default: ${LOCAL_ENV}, else download from GitHub)")
    parser.add_argument("--retries", type=int, default=5, help="attempts per file (each resumes)")
    parser.add_argument("--timeout", type=float, default=60.0, help="socket timeout in seconds")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


if __name__ == "__main__":
    main(get_parser().parse_args())
