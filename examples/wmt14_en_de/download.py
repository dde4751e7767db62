#!/usr/bin/env python
"""Download the WMT14 English-German archives, resumably and with checksums.

The archive list lives in ``manifest.json`` next to this file (the files of
fairseq's ``examples/translation/prepare-wmt14en2de.sh``: Europarl v7, Common
Crawl, News Commentary v9, the WMT14 ``dev.tgz`` with newstest2013, and
``test-full.tgz`` with the 3003-line newstest2014; ``test-filtered.tgz`` holds
the 2737-line official version).

Downloads resume, skip what is there and check sha256/md5 (:mod:`syntax_nmt.recipes.download`, shared with
the other recipes); every file's sha256 is recorded in ``DEST/SHA256SUMS``. ``--mirror`` (or the
``WMT14_MIRROR`` environment variable) replaces the official URLs by ``MIRROR/NAME``: an ``http(s)://`` or
``file://`` base URL, or a local directory, holding the archives under their official file names.
"""

import argparse
import os
from typing import Dict, List

from syntax_nmt.recipes.download import (  # noqa: F401  (the recipe's tests reach them through this module)
    DownloadError, download, download_all, fetch, file_hashes, source_url, time, verify,
)
from syntax_nmt.recipes.download import load_manifest as _load_manifest

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MANIFEST = os.path.join(HERE, "manifest.json")
MIRROR_ENV = "WMT14_MIRROR"
TEST_SETS = ("full", "filtered", "both")


def load_manifest(path: str = DEFAULT_MANIFEST) -> List[Dict]:
    return _load_manifest(path)


def select(entries: List[Dict], test_set: str = "full") -> List[Dict]:
    """The entries needed for a run: training data, dev and the chosen test set(s)."""
    if test_set not in TEST_SETS:
        raise ValueError(f"test_set must be one of {TEST_SETS}, got {test_set!r}")
    groups = {"train", "dev"}
    groups |= {"test-full", "test-filtered"} if test_set == "both" else {f"test-{test_set}"}
    return [e for e in entries if e["group"] in groups]


def main(args: argparse.Namespace) -> List[Dict[str, str]]:
    entries = select(load_manifest(args.manifest), args.test_set)
    mirror = args.mirror if args.mirror is not None else os.environ.get(MIRROR_ENV) or None
    return download_all(entries, args.dest, mirror, retries=args.retries, timeout=args.timeout, quiet=args.quiet)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  python examples/wmt14_en_de/download.py --dest wmt14/download\n"
        "  WMT14_MIRROR=file:///data/wmt14-archives python examples/wmt14_en_de/download.py --dest d",
    )
    parser.add_argument("--dest", required=True, help="directory for the archives")
    parser.add_argument("--manifest", default=DEFAULT_MANIFEST, help="file list with URLs and checksums")
    parser.add_argument("--mirror", default=None,
                        help=f"base URL (http(s)://, file://) or directory holding the archives by name "
                        f"(default: ${MIRROR_ENV}, else the official statmt.org URLs)")
    parser.add_argument("--test-set", choices=TEST_SETS, default="full",
                        help="newstest2014 variant: full (3003 lines, test-full.tgz), filtered "
                        "(2737 lines, test-filtered.tgz) or both")
    parser.add_argument("--retries", type=int, default=5, help="attempts per file (each resumes)")
    parser.add_argument("--timeout", type=float, default=60.0, help="socket timeout in seconds")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


def cli_main() -> None:
    main(get_parser().parse_args())


if __name__ == "__main__":
    cli_main()
