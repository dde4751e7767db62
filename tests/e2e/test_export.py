"""Train with syntax, ship a stock Transformer (issue 55): ``syntax-nmt-export`` turns a trained LISA model (and the
stock Transformer trained through the plugin, and LISA with target factors) into a stock fairseq checkpoint that
``fairseq-generate`` and ``fairseq-interactive`` load in a process where ``syntax_nmt`` cannot be imported
(tests/support/no_plugin.py), with the plugin's translations; models whose inference needs the plugin are refused in
one line; CTranslate2 converts the export and translates as stock fairseq does; the plugin-free raw-text path
(examples/deploy/translate_ct2.py) gives the hub's subwords.

The fixture: the synthetic corpus annotated from its gold trees with the recorded Moses step, binarized; a LISA model
and a stock ``transformer`` (``--task translation`` through ``--user-dir``, as the recipes train it) trained a few
updates in this process (tests/support/tiny_annotated.py: the corpus is tests/e2e/test_parse_free.py's, built once
per process; with 60 updates, as there, too few of the LISA model's translations differ).
"""

import argparse
import contextlib
import io
import json
import os
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("syntax_nmt.synthetic.generate")

from conftest import USER_DIR  # noqa: E402
from support.console import console_argv
from support.no_plugin import run_without_plugin  # noqa: E402
from support.tiny_annotated import COMMON, LISA, annotated_corpus, trained_model  # noqa: E402

pytestmark = pytest.mark.e2e

N_TEST = 30
DECODE = ["--beam", "4", "--batch-size", "8", "--num-workers", "0", "--required-batch-size-multiple", "1",
          "--gen-subset", "test", "--remove-bpe"]
TRANSFORMER = ["--task", "translation", "--arch", "transformer_tiny", "--share-all-embeddings", "--criterion",
               "label_smoothed_cross_entropy", "--label-smoothing", "0.1", "--max-update", "40"]
RAW_EXTRA = ["A  «quoted»   line with <unk> and x@@y inside .", "\ufeffWhat's this -- a dash-split?", ""]
#: names that tie a checkpoint to this plugin
PLUGIN_NAMES = ("syntax_nmt", "syntax_translation", "syntax_transformer", "_with_syntax")
HAS_CT2 = True
try:
    import ctranslate2  # noqa: F401
except ImportError:
    HAS_CT2 = False


_argv = console_argv  # tests/support/console.py


def _train(data, save, *args):
    from fairseq_cli import train

    with _argv("fairseq-train", data, *COMMON, *args, "--save-dir", save):
        train.cli_main()
    return os.path.join(save, "checkpoint_last.pt")


def export(*argv):
    """syntax-nmt-export in this process: (exit status, stderr)."""
    from syntax_nmt.export.cli import cli_main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            cli_main([str(a) for a in argv])
            status = 0
        except SystemExit as e:
            status = e.code
    return status, err.getvalue()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    corpus = annotated_corpus(tmp_path_factory, test=N_TEST)  # shared with tests/e2e/test_parse_free.py
    lisa = trained_model(corpus, "lisa", *COMMON, *LISA, "--lisa-loss-weight", "0.1", "--max-update", "200")
    transformer = trained_model(corpus, "transformer", *COMMON, *TRANSFORMER)
    out = tmp_path_factory.mktemp("exported")
    argv = ["--ctranslate2", out / "lisa-ct2", "--data", corpus.data] if HAS_CT2 else []
    status, err = export(lisa, out / "lisa.pt", "-s", "en", "-t", "de", *argv)
    assert status == 0, err
    status, err = export(transformer, out / "transformer.pt")
    assert status == 0, err
    return SimpleNamespace(data=corpus.data, paths=corpus.paths, lisa=lisa, transformer=transformer,
                           lisa_export=str(out / "lisa.pt"), transformer_export=str(out / "transformer.pt"),
                           ct2=str(out / "lisa-ct2"), codes=corpus.codes, text=corpus.text)


_GENERATED = {}


def plugin_generate(data, path, *extra):
    """The plugin's fairseq-generate (in this process, --user-dir): its S/H/D lines."""
    from fairseq_cli import generate as generate_cli

    key = (data, path, extra)
    if key not in _GENERATED:
        out = io.StringIO()
        with _argv("fairseq-generate", data, "--user-dir", USER_DIR, "--path", path, *DECODE, *extra), \
                contextlib.redirect_stdout(out):
            generate_cli.cli_main()
        _GENERATED[key] = [line for line in out.getvalue().splitlines() if line[:2] in ("S-", "H-", "D-")]
    return list(_GENERATED[key])


def hypotheses(lines):
    """``{id: (text, score)}`` of the H lines."""
    out = {}
    for line in lines:
        if line.startswith("H-"):
            sid, score, text = (line.split("\t") + [""])[:3]
            out[int(sid[2:])] = (text, float(score))
    return out


#: run without the plugin: the exports loaded by torch's weights-only loader with nothing allow-listed (and the
#: plugin's own checkpoint refused by it), then stock fairseq-generate and fairseq-interactive on them
STOCK = r"""
import contextlib, io, json, pickle, sys, torch
out, export, original, data, source, decode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
result = {}
state = torch.load(export)  # torch >= 2.6: weights_only=True by default
result["state"] = {"keys": sorted(state), "args": state["args"], "cfg": state["cfg"],
                   "tensors": {k: list(v.shape) for k, v in state["model"].items()}}
try:
    torch.load(original, weights_only=True)
    result["original"] = "loaded"
except pickle.UnpicklingError as e:
    result["original"] = str(e)
from fairseq_cli import generate, interactive
buf = io.StringIO()
sys.argv = ["fairseq-generate", data, "--path", export, *decode]
with contextlib.redirect_stdout(buf):
    generate.cli_main()
result["generate"] = buf.getvalue().splitlines()
buf = io.StringIO()
sys.argv = ["fairseq-interactive", data, "--path", export, "--input", source, "-s", "en", "-t", "de",
            "--beam", "4", "--buffer-size", "8", "--batch-size", "8", "--remove-bpe"]
with contextlib.redirect_stdout(buf):
    interactive.cli_main()
result["interactive"] = buf.getvalue().splitlines()
result["modules"] = sorted(m for m in sys.modules if m.split(".")[0] == "syntax_nmt")
json.dump(result, open(out, "w"))
"""


@pytest.fixture(scope="module")
def stock(trained, tmp_path_factory):
    """What stock fairseq does with the LISA export in a process without the plugin (the script STOCK)."""
    out = tmp_path_factory.mktemp("stock") / "stock.json"
    proc = run_without_plugin(STOCK, [out, trained.lisa_export, trained.lisa, trained.data,
                                      os.path.join(trained.text, "test.en"), *DECODE])
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_export_holds_plain_data_and_names_nothing_of_the_plugin(stock, trained):
    state = stock["state"]
    # loaded by the weights-only loader with nothing allow-listed, where the plugin's own checkpoint is refused
    assert "Unsupported global: GLOBAL argparse.Namespace" in stock["original"]
    assert state["args"] is None
    cfg = state["cfg"]
    assert cfg["model"]["arch"] == cfg["model"]["_name"] == "transformer"
    assert cfg["task"]["_name"] == "translation" and cfg["model"]["task"] == "translation"
    assert (cfg["task"]["source_lang"], cfg["task"]["target_lang"]) == ("en", "de")
    assert cfg["criterion"]["_name"] == "label_smoothed_cross_entropy"
    assert cfg["common"]["user_dir"] is None and cfg["model"]["user_dir"] is None

    from syntax_nmt.models.syntax_transformer import model_config
    from syntax_nmt.tasks.syntax_translation import SyntaxTranslationConfig
    from dataclasses import fields
    from fairseq.tasks.translation import TranslationConfig

    plugin_options = ({f.name for f in fields(model_config())} | {f.name for f in fields(SyntaxTranslationConfig)}) - {
        f.name for f in fields(TranslationConfig)}
    found = []

    def walk(x, path):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in plugin_options or k in ("source_stream_dicts", "word_dict_signature", "annotation_settings",
                                                "word_start_ids", "source_streams", "target_factor_dicts"):
                    found.append(f"{path}.{k}")
                walk(v, f"{path}.{k}")
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif isinstance(x, str) and any(n in x for n in PLUGIN_NAMES):
            found.append(f"{path} = {x!r}")

    walk(cfg, "cfg")
    assert "syntax_attention" in plugin_options and "lisa_head" in plugin_options  # the walk looks for them
    assert not found
    # the stock Transformer's tensors: the parse head's U and u are gone
    original = torch.load(trained.lisa, weights_only=True)["model"]
    assert sorted(state["tensors"]) == sorted(k for k in original if "parse_" not in k)
    assert sorted(set(original) - set(state["tensors"])) == ["encoder.layers.1.self_attn.parse_bilinear",
                                                            "encoder.layers.1.self_attn.parse_key_bias"]
    assert stock["modules"] == []


def test_stock_fairseq_generate_without_the_plugin_gives_the_plugins_translations(stock, trained):
    ours = hypotheses(plugin_generate(trained.data, trained.lisa, "--task", "syntax_translation"))
    theirs = hypotheses(stock["generate"])
    assert sorted(theirs) == sorted(ours) == list(range(N_TEST))
    assert {i: t for i, (t, _) in theirs.items()} == {i: t for i, (t, _) in ours.items()}
    assert len({t for t, _ in ours.values()}) > N_TEST // 2  # a model whose translations differ, not one line
    for i in ours:  # scores: fp32 rounding of another attention kernel
        assert theirs[i][1] == pytest.approx(ours[i][1], abs=1e-4)


def test_stock_fairseq_interactive_without_the_plugin_translates_the_subword_lines(stock, trained):
    """fairseq-interactive (no --user-dir) on the test split's subword lines: the same translations."""
    ours = hypotheses(plugin_generate(trained.data, trained.lisa, "--task", "syntax_translation"))
    theirs = hypotheses(stock["interactive"])
    assert {i: t for i, (t, _) in theirs.items()} == {i: t for i, (t, _) in ours.items()}


def test_the_exported_encoder_is_the_plugins_within_1e_5(trained):
    """Encoder outputs of the export (fairseq's own model, loaded by fairseq's loader) against the plugin's, fp32, on
    the whole test split in one left-padded batch."""
    from fairseq import checkpoint_utils

    [plugin], _, ptask = checkpoint_utils.load_model_ensemble_and_task([trained.lisa],
                                                                      arg_overrides={"data": trained.data})
    [stock], cfg, stask = checkpoint_utils.load_model_ensemble_and_task([trained.lisa_export],
                                                                       arg_overrides={"data": trained.data})
    assert type(stock).__module__.startswith("fairseq.") and type(stask).__name__ == "TranslationTask"
    assert type(stock.encoder.layers[1].self_attn).__name__ == "MultiheadAttention"
    ptask.set_source_parse("never")
    ptask.load_dataset("test")
    ds = ptask.dataset("test")
    batch = ds.collater([ds[i] for i in range(len(ds))])
    net = batch["net_input"]
    assert net["src_tokens"][:, 0].eq(ptask.source_dictionary.pad()).any()  # padding in the batch
    plugin.eval(), stock.eval()
    with torch.no_grad():
        a = plugin.encoder(net["src_tokens"], net["src_lengths"], src_streams=net.get("src_streams"))["encoder_out"][0]
        b = stock.encoder(net["src_tokens"], net["src_lengths"])["encoder_out"][0]
    real = ~net["src_tokens"].eq(ptask.source_dictionary.pad()).t()  # T x B
    assert a.dtype == b.dtype == torch.float32
    diff = (a - b).abs()[real]
    assert diff.max().item() < 1e-5
    # the parse head mattered: the plugin's encoder without the fold differs by far more
    with torch.no_grad():
        unfolded = stock.encoder.layers[1].self_attn
        state = torch.load(trained.lisa, weights_only=True)["model"]
        unfolded.q_proj.weight.copy_(state["encoder.layers.1.self_attn.q_proj.weight"])
        unfolded.q_proj.bias.copy_(state["encoder.layers.1.self_attn.q_proj.bias"])
        c = stock.encoder(net["src_tokens"], net["src_lengths"])["encoder_out"][0]
    assert (a - c).abs()[real].max().item() > 1e-2


def test_the_transformer_trained_through_the_plugin_exports_as_it_is(trained):
    """The stock transformer of the recipes (--task translation, --user-dir): the same tensors, its configuration
    freed of the plugin; stock fairseq-generate without the plugin gives its translations."""
    original = torch.load(trained.transformer, weights_only=True)
    exported = torch.load(trained.transformer_export, weights_only=True)
    assert sorted(exported["model"]) == sorted(original["model"])
    assert all(torch.equal(exported["model"][k], original["model"][k]) for k in original["model"])
    assert exported["cfg"]["model"]["arch"] == "transformer_tiny" and exported["cfg"]["common"]["user_dir"] is None
    proc = run_without_plugin("from fairseq_cli.generate import cli_main\ncli_main()\n",
                              [trained.data, "--path", trained.transformer_export, *DECODE])
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = hypotheses(plugin_generate(trained.data, trained.transformer, "--task", "translation"))
    assert hypotheses(proc.stdout.splitlines()).keys() == ours.keys()
    assert {i: t for i, (t, _) in hypotheses(proc.stdout.splitlines()).items()} == {i: t for i, (t, _) in ours.items()}


def _variant(trained, tmp_path, **model_args):
    """The trained LISA checkpoint with other model arguments (the refusal reads only them)."""
    state = torch.load(trained.lisa, weights_only=True)
    args = argparse.Namespace(**{**vars(state["cfg"]["model"]), **model_args})
    state["cfg"]["model"] = args
    path = tmp_path / "variant.pt"
    torch.save(state, path)
    return path


FACTOR = [{"name": "pos", "size": 19, "digest": "0123456789", "stream": "pos"}]


@pytest.mark.parametrize("model_args,message", [
    (dict(syntax_attention="sgnet"), "--syntax-attention sgnet reads the source parse (streams subword, head)"),
    (dict(syntax_attention="sla"), "--syntax-attention sla reads the source parse"),
    (dict(syntax_attention="seprem"), "--syntax-attention seprem reads the source parse"),
    (dict(syntax_attention="syntax_bert"), "--syntax-attention syntax_bert reads the source parse"),
    (dict(syntax_attention="none", source_features="pos,case"),
     "--source-features pos,case reads the parser's annotation (streams pos, case)"),
    (dict(lisa_inject_parse=True), "--syntax-attention lisa --lisa-inject-parse reads the source parse"),
    (dict(target_factor_dicts=FACTOR, target_factor_input=True),
     "--target-factor-input embeds the predicted target factors into the decoder's input"),
    (dict(source_prepend_bos=True), "--source-prepend-bos: the model was trained on sources starting with BOS"),
    (dict(syntax_attention="sgnet,lisa", source_features="pos"),
     "--source-features pos reads the parser's annotation (streams pos); --syntax-attention sgnet reads"),
])
def test_a_model_whose_inference_needs_the_plugin_is_refused_in_one_line(trained, tmp_path, model_args, message):
    variant = _variant(trained, tmp_path, **model_args)
    out = tmp_path / "out.pt"
    status, err = export(variant, out, "--ctranslate2", tmp_path / "ct2", "--data", trained.data)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith(f"syntax-nmt-export: error: {variant} cannot be a stock fairseq "
                                                   f"checkpoint: its inference needs the plugin: ")
    assert message in err
    assert sorted(os.listdir(tmp_path)) == ["variant.pt"]  # nothing written


def test_user_errors_are_one_line_and_write_nothing(trained, tmp_path):
    cases = [
        ([tmp_path / "missing.pt", tmp_path / "o.pt"], "checkpoint: no such file"),
        ([trained.lisa, trained.lisa], "is the input"),
        ([trained.lisa, tmp_path / "o.pt", "--data", trained.data], "--data, --quantization and --force go with "
                                                                      "--ctranslate2"),
        ([trained.lisa, tmp_path / "o.pt", "--ctranslate2", tmp_path / "c"], "--ctranslate2 needs --data"),
        ([trained.lisa, tmp_path / "o.pt", "--ctranslate2", tmp_path / "c", "--data", trained.data],
         "--ctranslate2 needs the language pair: the checkpoint records none"),
        ([trained.lisa, tmp_path / "o.pt", "-s", "en", "-t", "fr", "--ctranslate2", tmp_path / "c", "--data",
          trained.data], "has no dict.fr.txt"),
        ([trained.lisa, tmp_path / "no" / "o.pt"], "the directory of"),
        ([trained.paths["test"]["en"], tmp_path / "o.pt"], "is not a fairseq checkpoint torch can read"),
    ]
    if HAS_CT2:
        cases.append(([trained.lisa, tmp_path / "o.pt", "-s", "en", "-t", "de", "--ctranslate2", trained.ct2,
                       "--data", trained.data], "exists: give --force to replace it"))
    for argv, message in cases:
        status, err = export(*argv)
        assert status == 2 and err.count("\n") == 1 and message in err, (argv, err)
        assert err.startswith("syntax-nmt-export: error: ")
    assert os.listdir(tmp_path) == []


def _ct2_script():
    return os.path.join(os.path.dirname(USER_DIR), "examples", "deploy", "translate_ct2.py")


#: without the plugin (and without fairseq): the raw-text path of examples/deploy/translate_ct2.py, and CTranslate2
#: translating the test split's subwords in float32 and int8
CT2 = r"""
import json, runpy, sys
blocked = type(sys.meta_path[0])
class NoFairseq(blocked):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("fairseq", "fairseq_cli"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None
sys.meta_path.insert(0, NoFairseq())
out, script, settings, codes, raw, subwords, model = sys.argv[1:8]
mod = runpy.run_path(script)
pre = mod["Preprocessor"](json.load(open(settings, encoding="utf-8")), codes)
result = {"raw": [pre(line) for line in open(raw, encoding="utf-8").read().split("\n")[:-1]]}
if model != "-":
    import ctranslate2
    src = [line.split() for line in open(subwords, encoding="utf-8").read().split("\n")[:-1]]
    for ct in ("float32", "int8"):
        tr = ctranslate2.Translator(model, device="cpu", compute_type=ct, intra_threads=1)
        res = mod["translate"](tr, src, beam=4, batch_size=8)
        result[ct] = [[mod["join_subwords"](r.hypotheses[0], "bpe"), r.scores[0]] for r in res]
result["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in ("syntax_nmt", "fairseq", "fairseq_cli"))
json.dump(result, open(out, "w"))
"""


@pytest.fixture(scope="module")
def ct2_run(trained, tmp_path_factory):
    root = tmp_path_factory.mktemp("ct2")
    raw = root / "raw.en"
    with open(trained.paths["test"]["en"], encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    raw.write_text("\n".join(lines + RAW_EXTRA) + "\n", encoding="utf-8")
    out = root / "ct2.json"
    proc = run_without_plugin(CT2, [out, _ct2_script(), os.path.join(trained.data, "annotation.json"),
                                    trained.codes, raw, os.path.join(trained.text, "test.en"),
                                    trained.ct2 if HAS_CT2 else "-"])
    assert proc.returncode == 0, proc.stderr[-4000:]
    return SimpleNamespace(lines=lines + RAW_EXTRA, **json.loads(out.read_text(encoding="utf-8")))


def test_the_plugin_free_raw_text_path_gives_the_hubs_subwords(trained, ct2_run):
    """examples/deploy/translate_ct2.py's preprocessing (sacremoses and subword-nmt only, neither syntax_nmt nor
    fairseq importable) against the plugin hub's parse-free segmentation of the same raw lines, token for token; on
    the test split's raw lines, the binarized split's subwords."""
    from syntax_nmt import SyntaxTransformerModel

    assert ct2_run.modules == []
    hub = SyntaxTransformerModel.from_pretrained(os.path.dirname(trained.lisa), os.path.basename(trained.lisa),
                                                 data_name_or_path=trained.data)
    d = hub.task.source_dictionary
    tokens = hub.encode_batch(ct2_run.lines)
    for line, pieces, t in zip(ct2_run.lines, ct2_run.raw, tokens):
        assert d.encode_line(" ".join(pieces), add_if_not_exist=False, append_eos=True).tolist() == t.tolist(), line
    with open(os.path.join(trained.text, "test.en"), encoding="utf-8") as f:
        assert [" ".join(p) for p in ct2_run.raw[:N_TEST]] == f.read().split("\n")[:-1]
    # the Moses step as recorded: normalized quotes, <unk> and @@ split off (escapes: tests/unit/test_deploy_script.py)
    words = (" ".join(ct2_run.raw[N_TEST]) + " ").replace("@@ ", "").split()
    assert words == ["A", '"', "quoted", '"', "line", "with", "<", "unk", ">", "and", "x", "@", "@", "y", "inside", "."]
    assert ct2_run.raw[-1] == []


@pytest.mark.skipif(not HAS_CT2, reason="CTranslate2 is not installed (the extra deploy: pip install -e .[deploy])")
def test_ctranslate2_translates_the_export_as_stock_fairseq(stock, ct2_run):
    """The export converted by CTranslate2's fairseq converter: float32 gives stock fairseq's translations (beam 4,
    fairseq's length limit and penalty) and their scores (natural log, fairseq's in base 2); int8 runs, close."""
    import math

    theirs = hypotheses(stock["generate"])
    f32 = ct2_run.float32
    assert len(f32) == N_TEST
    assert [h for h, _ in f32] == [theirs[i][0] for i in range(N_TEST)]
    for (_, score), i in zip(f32, range(N_TEST)):
        assert score == pytest.approx(theirs[i][1] * math.log(2), abs=1e-3)
    same = sum(h == theirs[i][0] for i, (h, _) in enumerate(ct2_run.int8))
    assert len(ct2_run.int8) == N_TEST and same >= N_TEST // 2


def test_target_factors_without_factor_input_export_to_the_same_words(tmp_path):
    """A model with target factors but no --target-factor-input (its factors' output layers read the decoder's state
    and feed nothing back; the beam search scores the words): the export drops those layers, and stock
    fairseq-generate without the plugin gives the plugin's hypotheses (which carry F- lines beside them)."""
    from support.streamdata import write_corpus
    from syntax_nmt.data import binarize

    corpus = write_corpus(str(tmp_path / "text"), sizes={"train": 160, "valid": 12, "test": 16}, seed=7,
                          target_streams=True)
    data = str(tmp_path / "data-bin")
    binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"],
                       "--validpref", corpus["valid"], "--testpref", corpus["test"], "--destdir", data,
                       "--joined-dictionary", "--workers", "1", "--target-streams", "pos,subword"])
    ckpt = _train(data, str(tmp_path / "factors"), "--task", "syntax_translation", "--arch",
                  "syntax_transformer_tiny", "--source-features=", "--target-factors", "pos", "--criterion",
                  "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1", "--max-update", "60")
    assert any(k.startswith("decoder.factor_out.") for k in torch.load(ckpt, weights_only=True)["model"])
    status, err = export(ckpt, tmp_path / "stock.pt")
    assert status == 0, err
    assert "the target factors (pos) are not predicted by the export" in err
    exported = torch.load(tmp_path / "stock.pt", weights_only=True)["model"]
    assert not any(k.startswith("decoder.factor_out.") for k in exported)
    ours = plugin_generate(data, ckpt, "--task", "syntax_translation")
    assert any(line.startswith("H-") for line in ours)
    proc = run_without_plugin("from fairseq_cli.generate import cli_main\ncli_main()\n",
                              [data, "--path", tmp_path / "stock.pt", *DECODE])
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = hypotheses(proc.stdout.splitlines())
    assert sorted(theirs) == list(range(16))
    assert {i: t for i, (t, _) in theirs.items()} == {i: t for i, (t, _) in hypotheses(ours).items()}
    assert len({t for t, _ in theirs.values()}) > 1
