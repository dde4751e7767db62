"""Raw text in, translation out: fairseq-interactive and the hub give what fairseq-generate gives.

The fixture runs the whole pipeline on the synthetic corpus: the tiny spaCy pipeline
(fixture ``synth`` of tests/conftest.py: trained once and kept in pytest's cache),
``syntax-nmt-annotate`` on the raw English (joint BPE), ``syntax-nmt-binarize``, and
``fairseq-train`` of a features model and an SG-Net model. The raw test source, annotated
on the fly, must then give exactly the source tokens, streams and hypotheses of the
binarized test split.
"""

import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("spacy")
generate = pytest.importorskip("syntax_nmt.synthetic.generate")

from syntax_nmt.annotate.cli import main as annotate  # noqa: E402

from syntax_nmt.annotate.online import ensure_data_settings  # noqa: E402
from conftest import USER_DIR, run_cli  # noqa: E402

pytestmark = pytest.mark.e2e

TRAIN = [
    "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
    "--optimizer", "adam", "--lr", "0.01", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "20",
    "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1", "--max-tokens", "2000",
    "--max-update", "80", "--seed", "1", "--no-epoch-checkpoints", "--disable-validation", "--save-interval", "1000",
    "--num-workers", "0", "--log-format", "simple", "--no-progress-bar",
]
MODELS = {"features": [], "sgnet": ["--source-features=", "--syntax-attention", "sgnet"]}
N_TEST = 30
DECODE = ["--beam", "4", "--nbest", "2", "--batch-size", "8", "--max-len-b", "30"]
#: Bad input appended after the test source in one interactive session: empty, 2000 words,
#: control characters, two sentences on one line, only whitespace control characters.
BAD = ["", " ".join(["the old dog"] * 667), "The\x07 teacher \x1b[1m saw\x7f a dog .",
       "The dog sleeps. A cat runs.", "\x1c\x1f"]


@pytest.fixture(scope="module")
def pipeline(synth, tmp_path_factory):
    spacy_model = synth[1]
    root = tmp_path_factory.mktemp("raw")
    paths = generate.generate_corpus(str(root / "corpus"), {"train": 300, "valid": 20, "test": N_TEST}, seed=5)
    argv = {}
    for split in ("train", "valid", "test"):
        sub = (["--learn-subword", "300", "--subword-model-out", str(root / "bpe.codes")] if split == "train"
               else ["--subword-model", str(root / "bpe.codes")])
        argv[split] = ["--source", paths[split]["en"], "--target", paths[split]["tok.de"], "--src-lang", "en",
                       "--tgt-lang", "de", "-o", str(root / "text" / split), "--spacy-model", spacy_model,
                       "--subword", "bpe", *sub, "--quiet"]
        annotate(argv[split])
    data = str(root / "data-bin")
    run_cli("syntax-nmt-binarize", "--source-lang", "en", "--target-lang", "de", "--joined-dictionary",
            "--trainpref", root / "text/train", "--validpref", root / "text/valid", "--testpref", root / "text/test",
            "--destdir", data, "--workers", "1")
    ensure_data_settings(data, argv["test"])
    checkpoints = {}
    for name, extra in MODELS.items():
        save = root / f"ckpt-{name}"
        run_cli("fairseq-train", data, *TRAIN, *extra, "--save-dir", save)
        checkpoints[name] = str(save / "checkpoint_last.pt")
    return {"root": root, "data": data, "paths": paths, "ckpt": checkpoints, "spacy": spacy_model,
            "text": str(root / "text")}


def hypotheses(stdout):
    """``{id: [(hypothesis, score), ...]}`` and ``{id: source}`` from fairseq's output."""
    hyps, src = {}, {}
    for line in stdout.splitlines():
        m = re.match(r"([SH])-(\d+)\t(.*)$", line)
        if m and m.group(1) == "H":
            score, text = m.group(3).split("\t")
            hyps.setdefault(int(m.group(2)), []).append((text, float(score)))
        elif m:
            src[int(m.group(2))] = m.group(3)
    return hyps, src


def unbpe(text):
    """fairseq's --remove-bpe (also a trailing '@@' of a hypothesis cut by --max-len-b)."""
    return (text + " ").replace("@@ ", "").rstrip()


def assert_same(a, b, tol=1e-4):
    assert sorted(a) == sorted(b)
    for i in a:
        assert [h for h, _ in a[i]] == [h for h, _ in b[i]], i
        assert all(abs(x - y) < tol for (_, x), (_, y) in zip(a[i], b[i])), (i, a[i], b[i])


def fairseq_generate(p, name):
    """fairseq-generate on the binarized test split (run once per model and module)."""
    if name not in p.setdefault("generated", {}):
        out = run_cli("fairseq-generate", p["data"], "--user-dir", USER_DIR, "--task", "syntax_translation",
                      "--path", p["ckpt"][name], *DECODE)
        p["generated"][name] = hypotheses(out.stdout)
    return p["generated"][name]


def interactive(p, name, input_path, *extra):
    return run_cli("fairseq-interactive", p["data"], "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", p["ckpt"][name], *DECODE, "--buffer-size", "8", "--input", input_path, *extra)


def raw_test_lines(p):
    with open(p["paths"]["test"]["en"], encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


# -- the heart: same source, streams and hypotheses as the binarized split ---------------------------
@pytest.mark.parametrize("options", [[], ["--left-pad-source", "--source-prepend-bos"],
                                     ["--truncate-source", "--max-source-positions", "12", "--source-prepend-bos"]],
                         ids=["default", "right-pad-bos", "truncate-bos"])
def test_annotated_batches_equal_the_binarized_split(pipeline, options):
    """Every stream of every raw test line, collated, equals the binarized test split's batch."""
    import torch
    from fairseq import options as fairseq_options, tasks

    parser = fairseq_options.get_generation_parser()
    args = fairseq_options.parse_args_and_arch(parser, [
        pipeline["data"], "--user-dir", USER_DIR, "--task", "syntax_translation", "--source-streams",
        "pos,case,subword,head,dep", "--annotation-settings-file", os.path.join(pipeline["data"], "annotation.json"),
        *options])
    task = tasks.setup_task(args)
    task.load_dataset("test")
    binarized = task.dataset("test")
    lines = raw_test_lines(pipeline)
    tokens = task.annotate_lines(lines[:13]) + task.annotate_lines(lines[13:])  # two buffers
    online = task.build_dataset_for_inference(tokens, [len(t) for t in tokens])
    assert len(online) == len(binarized) == N_TEST
    for i in range(len(binarized)):
        a, b = online[i], binarized[i]
        assert torch.equal(a["source"], b["source"]), i
        for name in ("pos", "case", "subword", "head", "dep"):
            assert torch.equal(a["streams"][name].long(), b["streams"][name].long()), (i, name)
    ids = [3, 0, 17, N_TEST - 1, 8]
    x, y = online.collater([online[i] for i in ids]), binarized.collater([binarized[i] for i in ids])
    assert torch.equal(x["net_input"]["src_tokens"], y["net_input"]["src_tokens"])
    for name, t in y["net_input"]["src_streams"].items():
        assert torch.equal(x["net_input"]["src_streams"][name], t), name


def test_interactive_equals_generate_features_model(pipeline):
    """fairseq-interactive on the raw test source == fairseq-generate on the binarized split; fairseq's
    --tokenizer detokenizes the output only (the annotation settings tokenize the input)."""
    from sacremoses import MosesDetokenizer

    expected, expected_src = fairseq_generate(pipeline, "features")
    proc = interactive(pipeline, "features", pipeline["paths"]["test"]["en"], "--tokenizer", "moses",
                       "-s", "en", "-t", "de", "--remove-bpe")
    got, got_src = hypotheses(proc.stdout)
    assert len(got) == N_TEST
    assert got_src == {i: unbpe(s) for i, s in expected_src.items()}  # --remove-bpe: S- lines too
    assert_same(got, {i: [(unbpe(h), s) for h, s in hs] for i, hs in expected.items()})
    detok = MosesDetokenizer(lang="de")
    d_lines = [line.split("\t") for line in proc.stdout.splitlines() if line.startswith("D-")]
    assert d_lines and all(d[2] == detok.detokenize(got[int(d[0][2:])][k % 2][0].split())
                           for k, d in enumerate(d_lines))


def test_interactive_equals_generate_sgnet_model_and_survives_bad_input(pipeline, tmp_path):
    expected, expected_src = fairseq_generate(pipeline, "sgnet")
    raw = tmp_path / "raw.en"
    raw.write_text("\n".join(raw_test_lines(pipeline) + BAD) + "\n", encoding="utf-8")
    proc = interactive(pipeline, "sgnet", raw)
    got, got_src = hypotheses(proc.stdout)
    assert_same({i: got[i] for i in range(N_TEST)}, expected)
    assert {i: got_src[i] for i in range(N_TEST)} == expected_src
    bad = {k: got_src[N_TEST + k] for k in range(len(BAD))}
    assert sorted(got) == list(range(N_TEST + len(BAD)))  # every bad line translated, the session went on
    assert bad[0] == "" and bad[4] == ""  # empty / whitespace control characters
    assert bad[1] == ""  # 2001 words: more than the model's 1024 positions, translated as an empty line
    log = proc.stdout + proc.stderr
    assert f"input line {N_TEST + 2}: " in log and "source positions: translated as an empty line" in log
    assert "<unk>" in bad[2] or "\x07" in bad[2]  # control characters are ordinary characters
    assert unbpe(bad[3]).startswith("The dog sleeps . A cat runs")


def test_hub_equals_generate(pipeline):
    from syntax_nmt import SyntaxTransformerModel

    lines = raw_test_lines(pipeline)
    for name in MODELS:
        expected, _ = fairseq_generate(pipeline, name)
        path = pipeline["ckpt"][name]
        m = SyntaxTransformerModel.from_pretrained(os.path.dirname(path), checkpoint_file=os.path.basename(path),
                                                   data_name_or_path=pipeline["data"], max_len_b=30)
        assert type(m).__name__ == "SyntaxHubInterface"
        hyps = m.generate(m.encode_batch(lines), beam=4)
        got = {i: [(m.string(h["tokens"]), h["score"] / 0.6931471805599453) for h in hs[:2]]
               for i, hs in enumerate(hyps)}
        assert_same(got, expected)
        # translate(): a string for a string, a list for a list, subwords removed
        best = [unbpe(expected[i][0][0]) for i in range(3)]
        assert m.translate(lines[:3], beam=4) == best
        assert m.translate(lines[1], beam=4) == best[1]
        assert m.string(m.generate(m.encode(lines[2]), beam=4)[0]["tokens"]) == expected[2][0][0]
        # score() reproduces the beam search's score of its best hypothesis (when the target words,
        # segmented again, give the hypothesis' own subwords)
        scored = m.score(lines[:6], [unbpe(expected[i][0][0]) for i in range(6)])
        same = [i for i, s in enumerate(scored) if m.string(s["tokens"]) == expected[i][0][0]]
        assert len(same) >= 3
        for i in same:
            assert abs(scored[i]["score"] / 0.6931471805599453 - expected[i][0][1]) < 1e-4
        assert m.sample(lines[:2], beam=4) == best[:2]  # sample(): greedy or beam, as fairseq's


@pytest.mark.parametrize("stdin_env,from_file", [({"LC_ALL": "C.UTF-8"}, False),
                                                 ({"PYTHONIOENCODING": "utf-8:strict"}, False),
                                                 ({"PYTHONIOENCODING": "utf-8:strict"}, True)],
                         ids=["c-utf8", "strict", "input-file"])
def test_an_invalid_byte_ends_no_session(pipeline, stdin_env, from_file, tmp_path):
    """``printf 'A dog .\\nBad \\xff .\\n' | fairseq-interactive``: stdin is read with surrogateescape (the
    task sets it up so where Python decodes stdin strictly, as under en_US.UTF-8, emulated here by
    PYTHONIOENCODING), the byte reaches the task as a lone surrogate and is parsed as U+FFFD, with a
    warning naming its line; every line is translated. ``--input FILE`` with the same bytes gives the same
    (fairseq opened it with a strict UTF-8 hook, and the run ended before any line was translated). The hub
    takes the same path."""
    import torch

    from syntax_nmt import SyntaxTransformerModel

    expected, expected_src = fairseq_generate(pipeline, "sgnet")
    lines = raw_test_lines(pipeline)
    stdin = (lines[0] + "\nThe \udcff dog .\n" + lines[1] + "\n").encode("utf-8", "surrogateescape")
    assert b"\xff" in stdin
    source = []
    if from_file:
        (tmp_path / "in.txt").write_bytes(stdin)
        source, stdin = ["--input", str(tmp_path / "in.txt")], b""
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "fairseq-interactive"), pipeline["data"],
                           "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", pipeline["ckpt"]["sgnet"],
                           *DECODE, "--buffer-size", "8", *source], input=stdin, capture_output=True,
                          env={**{k: v for k, v in os.environ.items() if k != "PYTHONIOENCODING"}, **stdin_env})
    log = (proc.stdout + proc.stderr).decode("utf-8", "backslashreplace")
    assert proc.returncode == 0, log[-3000:]
    got, got_src = hypotheses(proc.stdout.decode("utf-8"))
    assert sorted(got) == [0, 1, 2]  # every line translated, the session went on
    assert_same({0: got[0], 2: got[2]}, {0: expected[0], 2: expected[1]})
    assert (got_src[0], got_src[2]) == (expected_src[0], expected_src[1])
    assert "input line 2: 1 undecodable character (invalid bytes, read as lone surrogates) replaced by U+FFFD" in log
    assert "input line 1:" not in log and "input line 3:" not in log
    path = pipeline["ckpt"]["sgnet"]
    m = SyntaxTransformerModel.from_pretrained(os.path.dirname(path), checkpoint_file=os.path.basename(path),
                                               data_name_or_path=pipeline["data"], max_len_b=30)
    bad, clean = m.encode("The \udcff dog ."), m.encode("The \ufffd dog .")
    assert torch.equal(bad, clean) and got_src[1] == m.src_dict.string(clean)
    for name, stream in clean.syntax_streams.items():
        assert torch.equal(bad.syntax_streams[name], stream), name
    assert m.translate("x \udcff .", beam=4) == m.translate("x \ufffd .", beam=4)
    assert m.translate(["A dog .", "x \udcff ."], beam=4)[0] == m.translate("A dog .", beam=4)


def test_truncation_the_checkpoint_was_trained_with_is_applied(pipeline):
    """A model trained with ``--truncate-source --max-source-positions 20``: fairseq-generate without options,
    and fairseq-interactive without options and with ``--truncate-source`` alone, cut every source to its first
    19 tokens and EOS, as in training (no "sample too long", no empty translation of a long line, no cut at the
    command line's 1024 positions), and give the hub's hypotheses (the hub sets its task up from the
    checkpoint's options)."""
    from syntax_nmt import SyntaxTransformerModel

    save = pipeline["root"] / "ckpt-truncate"
    run_cli("fairseq-train", pipeline["data"], *TRAIN, "--truncate-source", "--max-source-positions", "20",
            "--max-update", "40", "--save-dir", save)
    m = SyntaxTransformerModel.from_pretrained(str(save), checkpoint_file="checkpoint_last.pt",
                                               data_name_or_path=pipeline["data"], max_len_b=30)
    lines = raw_test_lines(pipeline)
    cut = {i: m.src_dict.string(m.encode(line)[:19]) for i, line in enumerate(lines)}
    assert sum(len(m.encode(line)) > 20 for line in lines) > N_TEST // 2  # most sources are longer
    expected = {i: [(m.string(h["tokens"]), h["score"] / 0.6931471805599453) for h in hs[:2]]
                for i, hs in enumerate(m.generate(m.encode_batch(lines), beam=4))}
    common = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--path", save / "checkpoint_last.pt", *DECODE]
    got, got_src = hypotheses(run_cli("fairseq-generate", pipeline["data"], *common).stdout)
    assert got_src == cut
    assert_same(got, expected)
    for extra in ([], ["--truncate-source"]):
        proc = run_cli("fairseq-interactive", pipeline["data"], *common, "--buffer-size", "8",
                       "--input", pipeline["paths"]["test"]["en"], *extra)
        got, got_src = hypotheses(proc.stdout)
        assert got_src == cut, extra
        assert_same(got, expected)


def test_hub_moves_to_gpu(pipeline):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from syntax_nmt import SyntaxTransformerModel

    path = pipeline["ckpt"]["sgnet"]
    m = SyntaxTransformerModel.from_pretrained(os.path.dirname(path), checkpoint_file=os.path.basename(path),
                                               data_name_or_path=pipeline["data"], max_len_b=30)
    lines = raw_test_lines(pipeline)[:8]
    cpu = m.translate(lines, beam=4)
    assert m.cuda().translate(lines, beam=4) == cpu


def test_interactive_with_input_conllu(pipeline, tmp_path):
    """Bring your own parse: the gold CoNLL-U of the test set, as `syntax-nmt-annotate --backend conllu`
    would annotate it; its source lines and heads reach the SG-Net model."""
    test = pipeline["paths"]["test"]
    argv = ["--backend", "conllu", "--conllu", test["en.conllu"], "--source", test["en"], "--src-lang", "en",
            "-o", str(tmp_path / "gold"), "--subword", "bpe", "--subword-model", str(pipeline["root"] / "bpe.codes"),
            "--quiet"]
    annotate(argv)
    with open(tmp_path / "gold.en", encoding="utf-8") as f:
        gold = f.read().split("\n")[:-1]
    proc = interactive(pipeline, "sgnet", test["en"], "--input-conllu", test["en.conllu"])
    got, got_src = hypotheses(proc.stdout)
    assert got_src == dict(enumerate(gold)) and len(got) == N_TEST

    from syntax_nmt import SyntaxTransformerModel

    path = pipeline["ckpt"]["sgnet"]
    m = SyntaxTransformerModel.from_pretrained(os.path.dirname(path), checkpoint_file=os.path.basename(path),
                                               data_name_or_path=pipeline["data"], max_len_b=30)
    with open(test["en.conllu"], encoding="utf-8") as f:
        text = f.read()
    hub = m.translate_conllu(text, raw_test_lines(pipeline), beam=4)
    assert hub == [unbpe(got[i][0][0]) for i in range(N_TEST)]


def _hub(pipeline, name="sgnet"):
    from syntax_nmt import SyntaxTransformerModel

    path = pipeline["ckpt"][name]
    return SyntaxTransformerModel.from_pretrained(os.path.dirname(path), checkpoint_file=os.path.basename(path),
                                                  data_name_or_path=pipeline["data"], max_len_b=30)


@pytest.mark.parametrize("bad, message", [
    (None, "translate() takes sentences as a str or a list of str, got NoneType"),
    ([None], "translate() takes sentences as a str or a list of str, but item 0 is NoneType"),
    (b"A dog .", "translate() takes sentences as a str or a list of str, got bytes: decode it first "
                 "(e.g. data.decode('utf-8'))"),
    (["A dog .", b"x"], "translate() takes sentences as a str or a list of str, but item 1 is bytes: decode it "
                        "first (e.g. data.decode('utf-8'))"),
    (5, "translate() takes sentences as a str or a list of str, got int"),
], ids=["None", "[None]", "bytes", "[str, bytes]", "int"])
def test_hub_arguments_are_checked_at_the_api_boundary(pipeline, bad, message):
    """Bad arguments of translate() are refused at the API boundary with a message saying what it takes (not
    a TypeError/AttributeError from inside the annotator)."""
    m = _hub(pipeline)
    with pytest.raises(TypeError) as e:
        m.translate(bad)
    assert str(e.value) == message
    with pytest.raises(TypeError) as e:
        m.sample(bad)
    assert str(e.value) == message.replace("translate()", "sample()")
    with pytest.raises(TypeError, match=r"^score\(\) takes sentences as a str or a list of str"):
        m.score(bad, "Ein Hund .")
    if bad is not None:  # lines=None: the blocks' words
        with pytest.raises(TypeError, match=r"^translate_conllu\(\) takes lines as a str or a list of str"):
            m.translate_conllu([], bad)


def test_translate_conllu_numbers_the_lines_of_each_call(pipeline):
    """translate_conllu's error messages number each call's input lines from 1 (not on from the previous
    call)."""
    from syntax_nmt.annotate.textio import InputError

    m = _hub(pipeline)
    lines = raw_test_lines(pipeline)
    with open(pipeline["paths"]["test"]["en.conllu"], encoding="utf-8") as f:
        blocks = f.read().split("\n\n")
    first_two = "\n\n".join(blocks[:2]) + "\n\n"
    assert len(m.translate_conllu(first_two, lines[:2], beam=2)) == 2
    for _ in range(2):  # the block of line 1 against line 2: the message names line 1 of this call, every time
        with pytest.raises(InputError, match=r"^<conllu> sentence block 1 .*does not match <input>:1: "):
            m.translate_conllu(blocks[0] + "\n\n", [lines[1]], beam=2)


def test_checkpoint_without_settings_fails_only_for_raw_text(pipeline, tmp_path):
    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401
    from syntax_nmt import SyntaxTransformerModel

    state = torch.load(pipeline["ckpt"]["features"], map_location="cpu", weights_only=True)
    del state["cfg"]["model"].annotation_settings
    old = tmp_path / "old.pt"
    torch.save(state, old)
    proc = run_cli("fairseq-generate", pipeline["data"], "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", old, *DECODE)
    assert len(hypotheses(proc.stdout)[0]) == N_TEST  # binarized data: nothing to annotate, works as before
    m = SyntaxTransformerModel.from_pretrained(str(tmp_path), checkpoint_file="old.pt",
                                               data_name_or_path=pipeline["data"], max_len_b=30)
    with pytest.raises(ValueError, match="records no annotation settings.*annotation_settings_file"):
        m.translate("The dog sleeps .")
    m = SyntaxTransformerModel.from_pretrained(
        str(tmp_path), checkpoint_file="old.pt", data_name_or_path=pipeline["data"], max_len_b=30,
        annotation_settings_file=os.path.join(pipeline["data"], "annotation.json"))
    assert m.translate(raw_test_lines(pipeline)[0], beam=4) == unbpe(fairseq_generate(
        pipeline, "features")[0][0][0][0])


def _write_json(path, values):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(values, f)


def test_conflicting_or_broken_settings_are_named(pipeline, tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(pipeline["data"], data)
    with open(data / "annotation.json", encoding="utf-8") as f:
        settings = json.load(f)
    _write_json(data / "annotation.json", dict(settings, case="rich"))
    proc = run_cli("fairseq-generate", data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", pipeline["ckpt"]["features"], *DECODE, check=False)
    assert proc.returncode != 0
    assert "annotation setting 'case' differs: 'binary' in the checkpoint, 'rich' in" in proc.stderr
    del settings["multi_root"]
    _write_json(data / "annotation.json", settings)
    proc = run_cli("fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", pipeline["ckpt"]["features"], check=False)
    assert proc.returncode != 0 and "annotation setting 'multi_root' is missing" in proc.stderr


def test_package_exports_the_model_lazily():
    code = ("import sys, syntax_nmt; assert 'fairseq' not in sys.modules; "
            "from syntax_nmt import SyntaxTransformerModel; assert 'fairseq' in sys.modules; "
            "print(SyntaxTransformerModel.from_pretrained.__func__.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.path.dirname(USER_DIR)})
    assert out.stdout.strip() == "syntax_nmt.models.syntax_transformer"


# -- the glue, without a trained model ----------------------------------------------------------------
def test_interactive_samples_get_the_streams_of_their_batch(stream_bin):
    """fairseq-interactive keeps only src_tokens/src_lengths of a batch; inference_step restores the
    streams of the batch the task handed out last, and refuses any other sample."""
    import torch

    from conftest import build_task_and_model
    from syntax_nmt.tasks import raw_inference
    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    assert task.streams == ["pos", "case", "subword", "head"]
    plain = [task.src_dict.encode_line(line, add_if_not_exist=False).long() for line in ("a b c", "d e")]
    with pytest.raises(StreamConfigError, match=r"lack the source streams \['pos', 'case', 'subword', 'head'\]"):
        task.build_dataset_for_inference(plain, [3, 2])
    gen = torch.Generator().manual_seed(0)
    tokens = [raw_inference.attach(t, {n: torch.randint(4, 9, t.shape, generator=gen) for n in task.streams})
              for t in plain]
    for t in tokens:
        t.syntax_streams["head"][:] = 0
    captured = []

    class Recorder:
        def generate(self, models, sample, **kwargs):
            captured.append(sample["net_input"]["src_streams"])
            return [[] for _ in range(sample["net_input"]["src_tokens"].size(0))]

    itr = task.get_batch_iterator(dataset=task.build_dataset_for_inference(tokens, [3, 2]), max_sentences=1,
                                  max_tokens=None, max_positions=(1024, 1024)).next_epoch_itr(shuffle=False)
    for batch in itr:  # as fairseq_cli.interactive.make_batches, then main()
        sample = {"net_input": {"src_tokens": batch["net_input"]["src_tokens"],
                                "src_lengths": batch["net_input"]["src_lengths"]}}
        task.inference_step(Recorder(), [model], sample)
        for name, value in batch["net_input"]["src_streams"].items():
            assert torch.equal(captured[-1][name], value)
    assert len(captured) == 2
    other = task.src_dict.encode_line("e d", add_if_not_exist=False).long()
    stale = {"net_input": {"src_tokens": other[None], "src_lengths": torch.tensor([3])}}
    with pytest.raises(RuntimeError, match="not the batch the task built last"):
        task.inference_step(Recorder(), [model], stale)


def test_dictionaries_only_directory_is_enough_for_raw_text(stream_bin, tmp_path):
    """A model directory with dict.*.txt only (no binarized split) provides heads (they need no dictionary)."""
    import shutil

    from conftest import build_task_and_model

    for f in os.listdir(stream_bin):
        if f.startswith("dict."):
            shutil.copy(os.path.join(stream_bin, f), tmp_path / f)
    task, _, _ = build_task_and_model(str(tmp_path), "--syntax-attention", "sgnet", "-s", "en", "-t", "de")
    assert task.streams == ["pos", "case", "subword", "head"]


def _settings_naming(src_lang):
    from syntax_nmt.annotate.settings import KEYS, SETTINGS_VERSION

    return {**dict.fromkeys(KEYS), "version": SETTINGS_VERSION, "src_lang": src_lang}


def test_dictionaries_only_directory_names_its_language_pair(stream_bin, tmp_path):
    """A directory holding only the dictionaries: its language pair is the two language dictionaries, the
    source the one annotation.json names, with no ``-s/-t``; without annotation.json an error asks for them;
    a directory with a binarized split: fairseq's own inference."""
    import shutil

    from conftest import build_task_and_model

    for f in os.listdir(stream_bin):
        if f.startswith("dict."):
            shutil.copy(os.path.join(stream_bin, f), tmp_path / f)
    with pytest.raises(ValueError) as e:
        build_task_and_model(str(tmp_path), "--syntax-attention", "sgnet")
    assert str(e.value) == (f"cannot tell the language pair of {tmp_path}: it holds no binarized split and "
                            f"dict.de.txt, dict.en.txt without an annotation.json naming the source language; "
                            f"pass --source-lang and --target-lang (-s/-t)")
    task, _, _ = build_task_and_model(str(tmp_path), "--syntax-attention", "sgnet", "-s", "de")
    assert (task.cfg.source_lang, task.cfg.target_lang) == ("de", "en")
    for src, pair in (("en", ("en", "de")), ("de", ("de", "en"))):
        _write_json(tmp_path / "annotation.json", _settings_naming(src))
        task, _, _ = build_task_and_model(str(tmp_path), "--syntax-attention", "sgnet")
        assert (task.cfg.source_lang, task.cfg.target_lang) == pair
        assert task.streams == ["pos", "case", "subword", "head"]
    # a directory with a binarized split: fairseq's own inference, whatever annotation.json says
    task, _, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    assert (task.cfg.source_lang, task.cfg.target_lang) == ("en", "de")


def test_interactive_on_dictionaries_only_needs_no_language_options(pipeline, tmp_path):
    """fairseq-interactive DIR, DIR holding only the dictionaries and annotation.json, needs no -s/-t and
    translates as with the whole data directory."""
    import shutil

    for f in os.listdir(pipeline["data"]):
        if f.startswith("dict.") or f == "annotation.json":
            shutil.copy(os.path.join(pipeline["data"], f), tmp_path / f)
    lines = tmp_path / "in.en"
    lines.write_text("\n".join(raw_test_lines(pipeline)[:4]) + "\n", encoding="utf-8")
    full = interactive(pipeline, "sgnet", lines)
    only = run_cli("fairseq-interactive", tmp_path, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", pipeline["ckpt"]["sgnet"], *DECODE, "--buffer-size", "8", "--input", lines)
    assert hypotheses(only.stdout) == hypotheses(full.stdout) and len(hypotheses(full.stdout)[0]) == 4


def test_analyze_attention_of_raw_text_equals_the_test_sentence(pipeline, tmp_path):
    """``syntax-nmt-analyze attention --text`` annotates the raw line on the fly: the same source
    subwords, SDOI mask, syntax-guided attention and cross-attention as ``--sentence`` on the
    binarized split; a raw sentence outside the corpus gets its own maps; errors are one line."""
    import json

    import numpy as np

    from syntax_nmt.analyze import cli

    def analyze(*argv):
        return cli.main(cli.get_parser().parse_args([str(a) for a in argv]))

    sid = 3
    line = raw_test_lines(pipeline)[sid]
    common = ["--data", pipeline["data"], "--system", f"sgnet={pipeline['ckpt']['sgnet']}", "--beam", "2"]
    by_id = json.loads(open(analyze("attention", *common, "--sentence", sid, "--out", tmp_path / "id")[0]).read())
    paths = analyze("attention", *common, "--text", line, "--out", tmp_path / "text")
    by_text = json.loads(open(paths[0]).read())
    ident = by_text["sentence"]
    assert ident.startswith("text-") and by_text["text"] == line
    assert sorted(os.path.basename(p) for p in paths) == sorted(
        [f"attention-{ident}.json", f"attention-{ident}.md", f"attention-{ident}-cross.png",
         f"attention-{ident}-sgnet-sgnet.png"])
    assert by_text["source"] == by_id["source"]
    a, b = by_text["systems"][0], by_id["systems"][0]
    assert a["target"] == b["target"]
    np.testing.assert_allclose(np.array(a["cross_attention"]), np.array(b["cross_attention"]), atol=1e-5)
    (ea,), (eb,) = a["encoder"], b["encoder"]
    np.testing.assert_array_equal(np.array(ea["mask"]), np.array(eb["mask"]))
    np.testing.assert_allclose(np.array(ea["attn"]), np.array(eb["attn"]), atol=1e-5)
    # a sentence of its own, with its reference as the rows
    other = analyze("attention", *common, "--text", "The old teacher saw a small dog .", "--reference",
                    "--text-target", "Der alte Lehrer sah einen kleinen Hund .", "--out", tmp_path / "other")
    result = json.loads(open(other[0]).read())
    assert result["source"][-1] == "</s>" and len(result["source"]) >= 8
    assert "".join(result["systems"][0]["target"]).replace("@@", "") == "DeralteLehrersaheinenkleinenHund.</s>"
    np.testing.assert_allclose(np.array(result["systems"][0]["cross_attention"]).sum(1), 1.0, atol=1e-5)
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.analyze.cli", "attention", *map(str, common), "--text",
                           line, "--reference", "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "syntax-nmt-analyze: error: --reference with --text needs the reference translation: --text-target"]


def test_interactive_without_a_parse_for_a_conllu_model_is_one_line(pipeline, tmp_path):
    """A model trained on CoNLL-U parses, given raw text with neither --annotate-parser-model nor --input-conllu:
    the message was right, but it ended a ValueError traceback (conllu_backend.for_raw_text; issue 46.5)."""
    import shutil

    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401

    data = tmp_path / "data"
    shutil.copytree(pipeline["data"], data)
    with open(data / "annotation.json", encoding="utf-8") as f:
        settings = json.load(f)
    _write_json(data / "annotation.json", dict(settings, backend="conllu", spacy_model=None))
    state = torch.load(pipeline["ckpt"]["sgnet"], map_location="cpu", weights_only=True)
    del state["cfg"]["model"].annotation_settings  # the data's settings are the model's
    torch.save(state, tmp_path / "conllu.pt")
    command = ["fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "syntax_translation",
               "--path", tmp_path / "conllu.pt", *DECODE, "--buffer-size", "8",
               "--input", raw_test_lines_file(pipeline, tmp_path)]
    # the checkpoint records no settings: the settings file is needed first (that error was a traceback too)
    proc = run_cli(*command, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "fairseq-interactive: error: the checkpoint records no annotation settings"), proc.stderr
    proc = run_cli(*command, "--annotation-settings-file", data / "annotation.json", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "fairseq-interactive: error: annotation setting backend='conllu': the training data was parsed by an "
        "external parser, so raw text needs its parse too: pass --input-conllu FILE"), proc.stderr


def raw_test_lines_file(p, tmp_path):
    path = tmp_path / "raw.en"
    path.write_text("".join(line + "\n" for line in raw_test_lines(p)[:2]), encoding="utf-8")
    return path
