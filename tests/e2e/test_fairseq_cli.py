"""The real command lines: fairseq-train --user-dir ... --task syntax_translation, then fairseq-generate."""

import os
import re
import shutil

import pytest

from conftest import TRAIN, USER_DIR, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def trained(stream_bin, tmp_path_factory):
    """An SG-Net + features model trained a few updates through fairseq-train (2 data workers)."""
    save = tmp_path_factory.mktemp("ckpt")
    proc = run_cli("fairseq-train", stream_bin, *TRAIN, "--arch", "syntax_transformer_tiny",
                   "--syntax-attention", "sgnet", "--num-workers", "2", "--required-batch-size-multiple", "4",
                   "--max-source-positions", "40", "--skip-invalid-size-inputs-valid-test", "--save-dir", save)
    assert "done training" in proc.stdout + proc.stderr
    return os.path.join(save, "checkpoint_last.pt")


def _hypotheses(output):
    return [line for line in output.splitlines() if line.startswith("H-")]


def test_generate_translates_every_test_line(stream_bin, stream_corpus, trained):
    proc = run_cli("fairseq-generate", stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", trained, "--beam", "3", "--nbest", "2", "--remove-bpe", "--batch-size", "8")
    hyps = _hypotheses(proc.stdout)
    n_test = sum(1 for _ in open(stream_corpus["test"] + ".en"))
    ids = [int(re.match(r"H-(\d+)", h).group(1)) for h in hyps]
    assert sorted(set(ids)) == list(range(n_test))  # a hypothesis for every test line (21: not a multiple of 8)
    assert len(hyps) == 2 * n_test  # --nbest 2
    sources = [line.split("\t", 1)[1] for line in proc.stdout.splitlines() if line.startswith("S-")]
    assert sources and not any("@@" in s for s in sources)  # --remove-bpe


def test_generate_without_a_stream_the_model_needs_names_it(stream_bin, trained, tmp_path):
    partial = tmp_path / "no-head"
    shutil.copytree(stream_bin, partial)
    for f in os.listdir(partial):
        if ".head." in f:
            os.remove(partial / f)
    proc = run_cli("fairseq-generate", partial, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", trained, "--beam", "2", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert f"the data directory {partial} lacks the streams ['head']" in last
    assert "--syntax-attention sgnet reads the source parse (streams subword, head)" in last  # who reads it


def _swap_first_words(path):
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]
    path.write_text("".join(lines), encoding="utf-8")


def _cut_short(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])


@pytest.mark.parametrize("case", ["no pos dictionary", "pos stream cut short", "other target dictionary"])
def test_data_errors_are_one_line(stream_bin, trained, tmp_path, case):
    """What a user gets wrong about the data directory ends fairseq-generate with one line naming the file and
    exit status 2 (a traceback of 7 to 18 frames through fairseq before)."""
    other = tmp_path / "data-bin"
    shutil.copytree(stream_bin, other)
    if case == "no pos dictionary":
        os.remove(other / "dict.pos.txt")
        expected = (f"the data directory {other} lacks the streams ['pos']: the model reads at inference what only "
                    f"the annotation gives: --source-features pos,case,subword reads the parser's annotation")
    elif case == "pos stream cut short":
        _cut_short(other / "test.en-de.pos.bin")
        expected = (f"stream 'pos': {other}/test.en-de.pos.bin holds "
                    f"{(other / 'test.en-de.pos.bin').stat().st_size} bytes, its index {other}/test.en-de.pos.idx "
                    f"needs {(other / 'test.en-de.pos.bin').stat().st_size + 7}: the file is cut short; binarize "
                    f"again or copy it whole")
    else:
        _swap_first_words(other / "dict.de.txt")
        expected = f"the target dictionary {other}/dict.de.txt differs from the one the checkpoint was trained with"
    proc = run_cli("fairseq-generate", other, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", trained, "--beam", "2", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.splitlines()[-1]
    assert last.startswith(f"fairseq-generate: error: {expected}"), last


def test_generate_with_extra_streams_names_them(stream_bin, trained):
    proc = run_cli("fairseq-generate", stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--source-streams", "pos,case,subword,head,dep", "--path", trained, check=False)
    assert proc.returncode != 0
    assert "extra streams ['dep']" in proc.stderr


def test_stock_transformer_trains_on_the_same_data(stream_bin, tmp_path):
    """The binarized directory is also a plain fairseq translation directory (the baseline)."""
    proc = run_cli("fairseq-train", stream_bin, "--task", "translation", "--arch", "transformer_tiny", "--optimizer", "adam",
                   "--lr", "0.005", "--max-tokens", "1500", "--max-update", "2", "--save-dir", tmp_path / "ckpt",
                   "--no-progress-bar")
    assert "done training" in proc.stdout + proc.stderr


def test_checkpoint_loads_weights_only(trained):
    """torch's weights-only loading stays on: the plugin allow-lists what fairseq checkpoints hold."""
    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401

    state = torch.load(trained, map_location="cpu", weights_only=True)
    assert state["cfg"]["model"].source_streams == "pos,case,subword,head"
    assert [r["name"] for r in state["cfg"]["model"].source_stream_dicts] == ["pos", "case", "subword"]  # records
