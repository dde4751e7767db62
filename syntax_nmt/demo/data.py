"""The demo's data: the synthetic corpus, the parser trained on its gold trees, annotation, binarization."""

import os
from typing import List

from syntax_nmt.utils import exe
from syntax_nmt.demo.workdir import Workdir


class DataPipeline(Workdir):
    """Steps 1-4 of the demo (and the bench's data): each skipped when its outputs exist."""

    # -- data ---------------------------------------------------------------------------------
    def corpus(self):
        a = self.args
        self.header(f"synthetic corpus: {a.train}/{a.valid}/{a.test} sentences")
        if not self.done("corpus"):
            self.run([exe("syntax-nmt-synth"), "--out", self.path("corpus"), "--train", a.train,
                      "--valid", a.valid, "--test", a.test, "--seed", a.seed, "--quiet"])
            self.mark("corpus")
        else:
            print("already there")

    def spacy(self):
        if getattr(self.args, "gold_parses", False):
            self.header("gold trees of the corpus instead of a parser (--gold-parses)")
            return
        self.header("tiny spaCy tagger+parser trained on the gold trees, loaded by path")
        if not self.done("spacy"):
            c = self.path("corpus")
            self.run([exe("syntax-nmt-train-spacy"), "--train", f"{c}/train.en.conllu", "--dev",
                      f"{c}/valid.en.conllu", "--test", f"{c}/test.en.conllu", "--output", self.path("spacy-en")])
            self.mark("spacy")
        else:
            print("already there")

    def parser_args(self, split: str) -> List[str]:
        """How ``syntax-nmt-annotate`` reads and parses one split: spaCy on the raw English
        (``--gold-parses``: the gold CoNLL-U of the corpus)."""
        if getattr(self.args, "gold_parses", False):
            return ["--backend", "conllu", "--conllu", self.path("corpus", f"{split}.en.conllu")]
        return ["--source", self.path("corpus", f"{split}.en"), "--backend", "spacy",
                "--spacy-model", self.path("spacy-en")]

    def annotate(self):
        a = self.args
        self.header(f"annotate: parse the English, joint BPE ({a.bpe} merges), aligned streams")
        t = self.path("text")
        for split in ("train", "valid", "test"):
            if self.done(f"annotate-{split}"):
                continue
            sub = (["--learn-subword", a.bpe, "--subword-model-out", f"{t}/bpe.codes"] if split == "train"
                   else ["--subword-model", f"{t}/bpe.codes"])
            self.run([exe("syntax-nmt-annotate"), *self.parser_args(split),
                      "--target", self.path("corpus", f"{split}.tok.de"), "--src-lang", "en", "--tgt-lang", "de",
                      "-o", f"{t}/{split}", "--subword", "bpe", *sub, "--overwrite", "--quiet"])
            self.mark(f"annotate-{split}")

    def binarize(self, trainpref: str = None, dest: str = None, tag: str = "binarize"):
        if tag == "binarize":
            self.header("binarize subword text and streams")
        t = self.path("text")
        trainpref, dest = trainpref or f"{t}/train", dest or self.path("data-bin")
        if not self.done(tag):
            if os.path.exists(dest):
                import shutil

                shutil.rmtree(dest)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            self.run([exe("syntax-nmt-binarize"), "--source-lang", "en", "--target-lang", "de",
                      "--trainpref", trainpref, "--validpref", f"{t}/valid", "--testpref", f"{t}/test",
                      "--destdir", dest, "--joined-dictionary", "--workers", "2"],
                     log=dest + ".log", quiet=tag != "binarize")
            self.mark(tag)
        elif tag == "binarize":
            print("already there")
