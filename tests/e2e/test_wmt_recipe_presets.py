"""The recipe's presets (examples/wmt14_en_de, PRESET=fairseq|sit-paper|sgnet-paper): every setting of the
README's preset table reaches fairseq's parsed configuration, its optimizer, schedule and model.

train.sh / generate.sh / run_all.sh run with stand-ins for fairseq-train, fairseq-generate and python that
record their arguments; the recorded command lines are parsed with fairseq's own parsers
(``options.get_training_parser`` / ``get_generation_parser``, ``parse_args_and_arch``,
``convert_namespace_to_omegaconf``). No download, no GPU.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import USER_DIR

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "wmt14_en_de"
PRESETS = ["fairseq", "sit-paper", "sgnet-paper"]
CONFIGS = ["baseline", "syntax", "syntax_concat", "sgnet", "syntax_sgnet"]
ARCH = {"baseline": "transformer_wmt_en_de", "syntax": "syntax_transformer_wmt_en_de",
        "syntax_concat": "syntax_transformer_wmt_en_de", "sgnet": "syntax_transformer_wmt_en_de",
        "syntax_sgnet": "syntax_transformer_wmt_en_de"}


def noam_peak(warmup, d_model=512):
    """Vaswani et al. (2017), eq. 3 at step = warmup: d^-0.5 * warmup^-0.5."""
    return d_model ** -0.5 * warmup ** -0.5


# The README's preset table, as numbers: what each preset must give fairseq (NGPU=1).
TRAIN = {
    "fairseq": dict(update_freq=8, adam_betas=(0.9, 0.98), adam_eps=1e-8, lr=7e-4, warmup_init_lr=1e-7,
                    max_update=100000, dropout=0.1, attention_dropout=0.0, eval_bleu=False, metric="loss",
                    keep_interval=5),
    "sit-paper": dict(update_freq=2, adam_betas=(0.9, 0.998), adam_eps=1e-9, lr=noam_peak(4000), warmup=4000,
                      warmup_init_lr=0.0, max_update=100000, dropout=0.1, attention_dropout=0.0, eval_bleu=False,
                      metric="loss", keep_interval=5),
    "sgnet-paper": dict(update_freq=4, adam_betas=(0.9, 0.98), adam_eps=1e-9, lr=noam_peak(8000), warmup=8000,
                        warmup_init_lr=0.0, max_update=300000, dropout=0.1, attention_dropout=0.1, eval_bleu=True,
                        metric="bleu", keep_interval=1),
}
GENERATE = {
    "fairseq": dict(lenpen=0.6, max_len_a=0, max_len_b=200),
    "sit-paper": dict(beam=4, lenpen=0.6, max_len_a=1, max_len_b=50),
    "sgnet-paper": dict(beam=5, lenpen=1.0, max_len_a=0, max_len_b=200, checkpoint="checkpoint_best.pt"),
}
DATA = {"fairseq": ("full", "32000"), "sit-paper": ("filtered", "37000"), "sgnet-paper": ("full", "40000")}


@pytest.fixture(autouse=True)
def _read_the_table_once(systems_cache, monkeypatch):
    """The scripts read the table of systems from the cache (examples/common/systems.sh), not with a python each."""
    monkeypatch.setenv("SYSTEMS_CACHE", str(systems_cache))


@pytest.fixture(scope="module")
def recorder(tmp_path_factory):
    """A stand-in for fairseq-train / fairseq-generate / python: appends its argv as one JSON line to $CALLS."""
    path = tmp_path_factory.mktemp("bin") / "record"
    path.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    "with open(os.environ['CALLS'], 'a') as f:\n    f.write(json.dumps(sys.argv) + '\\n')\n")
    path.chmod(0o755)
    return str(path)


def run_script(script, args, tmp_path, recorder, **env):
    calls = tmp_path / f"calls-{len(list(tmp_path.glob('calls-*')))}.jsonl"
    full_env = dict(os.environ, CALLS=str(calls), FAIRSEQ_TRAIN=recorder, FAIRSEQ_GENERATE=recorder,
                    USER_DIR=USER_DIR, PYTHON=recorder, SYSTEMS_PYTHON=sys.executable, **env)
    for name in ("PRESET", "NGPU", "UPDATE_FREQ", "LR", "WARMUP", "BEAM", "LENPEN", "TEST_SET", "BPE_MERGES"):
        if name not in env:
            full_env.pop(name, None)  # the caller's environment must not leak into the defaults
    proc = subprocess.run(["bash", str(RECIPE / script), *args], env=full_env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else [], proc


def train_argv(preset, config, data, tmp_path, recorder, **env):
    calls, _ = run_script("train.sh", [config], tmp_path, recorder, PRESET=preset, DATA=data, AVERAGE="0",
                          SAVE=str(tmp_path / "ckpt" / preset / config), **env)
    [call] = [c for c in calls if not c[1].endswith(".py")]
    return call[1:]


def parse_train(argv):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    return convert_namespace_to_omegaconf(args)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("preset", PRESETS)
def test_train_settings_reach_fairseq(stream_bin, tmp_path, recorder, preset, config):
    from fairseq import optim
    from fairseq.optim.lr_scheduler import build_lr_scheduler

    cfg = parse_train(train_argv(preset, config, stream_bin, tmp_path, recorder))
    want = TRAIN[preset]
    m = cfg.model
    assert m.arch == ARCH[config]
    assert cfg.common.user_dir == USER_DIR
    assert cfg.task._name == ("translation" if config == "baseline" else "syntax_translation")
    assert (m.encoder_layers, m.decoder_layers, m.encoder_embed_dim, m.decoder_embed_dim) == (6, 6, 512, 512)
    assert (m.encoder_ffn_embed_dim, m.encoder_attention_heads, m.decoder_attention_heads) == (2048, 8, 8)
    assert cfg.dataset.max_tokens == 4096 and cfg.optimization.update_freq == [want["update_freq"]]
    assert cfg.optimization.max_update == want["max_update"] and cfg.optimization.clip_norm == 0.0
    assert cfg.optimizer._name == "adam" and cfg.lr_scheduler._name == "inverse_sqrt"
    assert (m.dropout, m.attention_dropout) == (want["dropout"], want["attention_dropout"])
    assert cfg.criterion._name == "label_smoothed_cross_entropy" and cfg.criterion.label_smoothing == 0.1
    warmup = want.get("warmup", 8000 if "sgnet" in config else 4000)
    assert cfg.lr_scheduler.warmup_updates == warmup
    assert cfg.checkpoint.save_interval_updates == 1000
    assert cfg.checkpoint.keep_interval_updates == 1  # AVERAGE=0 in this test
    assert cfg.common.fp16 and cfg.common.seed == 1

    # optimizer and schedule as fairseq builds them
    opt = optim.build_optimizer(cfg.optimizer, [torch.nn.Parameter(torch.zeros(2))])
    defaults = opt._optimizer.defaults
    assert defaults["betas"] == pytest.approx(want["adam_betas"]) and defaults["eps"] == want["adam_eps"]
    assert defaults["weight_decay"] == 0.0
    sched = build_lr_scheduler(cfg.lr_scheduler, opt)
    assert sched.step_update(0) == pytest.approx(want["warmup_init_lr"], abs=1e-12)
    assert sched.step_update(warmup) == pytest.approx(want["lr"], rel=1e-5)
    if preset != "fairseq":  # Vaswani et al.'s schedule d^-0.5 * min(step^-0.5, step * warmup^-1.5), exactly
        for step in (1, warmup // 3, warmup, 3 * warmup, 100000):
            noam = 512 ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
            assert sched.step_update(step) == pytest.approx(noam, rel=1e-5), step

    # checkpoint selection
    assert cfg.task.eval_bleu == want["eval_bleu"]
    assert cfg.checkpoint.best_checkpoint_metric == want["metric"]
    assert cfg.checkpoint.maximize_best_checkpoint_metric == want["eval_bleu"]
    if want["eval_bleu"]:  # dev BLEU every 1000 updates, beam 5, BPE removed, tokenized (multi-bleu style)
        assert json.loads(cfg.task.eval_bleu_args) == {"beam": 5}
        assert cfg.task.eval_bleu_remove_bpe == "@@ " and cfg.task.eval_tokenized_bleu
        assert cfg.task.eval_bleu_detok == "space"
        assert cfg.dataset.validate_interval_updates == 1000

    # the model flags of the configuration
    if config in ("syntax", "syntax_sgnet"):
        assert (m.source_features, m.feature_merge, m.feature_embed_dim, m.feature_combine) == (
            "pos,case,subword", "sum", 20, "concat")
    if config == "syntax_concat":
        assert (m.feature_merge, m.feature_embed_dims, m.feature_embed_dim) == ("concat", "8,4,8", None)
    assert ("sgnet" in config) == (getattr(m, "syntax_attention", "none") == "sgnet")


def test_update_freq_follows_the_gpus(stream_bin, tmp_path, recorder):
    """BATCH_TOKENS stays the preset's on several GPUs; what cannot be reached is reported."""
    for preset, ngpu, freq in (("fairseq", "8", 1), ("fairseq", "2", 4), ("sgnet-paper", "2", 2),
                               ("sit-paper", "2", 1)):
        argv = train_argv(preset, "baseline", stream_bin, tmp_path, recorder, NGPU=ngpu)
        assert argv[argv.index("--update-freq") + 1] == str(freq)
        assert argv[argv.index("--distributed-world-size") + 1] == ngpu
    _, proc = run_script("train.sh", ["baseline"], tmp_path, recorder, PRESET="sit-paper", NGPU="4",
                         DATA=stream_bin, SAVE=str(tmp_path / "x"), AVERAGE="0")
    assert "16384 tokens per update, not the preset's 8192" in proc.stderr


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("config", ["baseline", "syntax", "sgnet"])
def test_generate_settings_reach_fairseq(stream_bin, tmp_path, recorder, preset, config):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    save = tmp_path / "ckpt"
    save.mkdir()
    (save / "checkpoint_avg.pt").write_text("")  # present: chosen unless the preset picks the best checkpoint
    calls, _ = run_script("generate.sh", [config], tmp_path, recorder, PRESET=preset, DATA=stream_bin,
                          SAVE=str(save), PREP=str(tmp_path / "prep"), EVAL=str(tmp_path / "eval"))
    gen = [c for c in calls if not c[1].endswith(".py")]
    score = [c for c in calls if c[1].endswith("evaluate.py")]
    assert len(gen) == 1 and score[0][2] == "score"
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_generation_parser(), gen[0][1:]))
    want = GENERATE[preset]
    g = cfg.generation
    beam = want.get("beam", 5 if "sgnet" in config else 4)
    assert (g.beam, g.lenpen, g.max_len_a, g.max_len_b) == (beam, want["lenpen"], want["max_len_a"], want["max_len_b"])
    assert cfg.common_eval.post_process == "@@ " and cfg.dataset.required_batch_size_multiple == 1
    assert cfg.dataset.gen_subset == "test" and cfg.common.user_dir == USER_DIR
    assert os.path.basename(cfg.common_eval.path) == want.get("checkpoint", "checkpoint_avg.pt")


@pytest.mark.parametrize("preset", PRESETS)
def test_run_all_data_settings_and_fractions(tmp_path, recorder, preset):
    """run_all.sh: the preset's test set and BPE size reach download.py and prepare.py; PERCENT with
    several values runs the Table 1 fractions, each in its own directories; scoring adds tokenized BLEU."""
    percents = ["5", "50", "100"] if preset == "sit-paper" else ["100"]  # three of Table 1's fractions
    work = tmp_path / "work"
    calls, proc = run_script("run_all.sh", [], tmp_path, recorder, PRESET=preset, WORK=str(work),
                             PERCENT=" ".join(percents), STAGES="download prepare train evaluate",
                             CONFIGS="baseline syntax", WORKERS="1")
    test_set, merges = DATA[preset]
    by_script = {}
    for c in calls:
        by_script.setdefault(os.path.basename(c[1]), []).append(c[2:])
    for args in by_script["download.py"]:
        assert args[args.index("--test-set") + 1] == test_set
    prepares = by_script["prepare.py"]
    assert [a[a.index("--subsample-percent") + 1] for a in prepares] == percents
    for pct, args in zip(percents, prepares):
        assert args[args.index("--test-set") + 1] == test_set and args[args.index("--bpe-merges") + 1] == merges
        tag = f"p{pct}" if preset == "fairseq" else f"{preset}-p{pct}"
        assert args[args.index("--out-dir") + 1] == str(work / "prep" / tag)
    trains = [c for c in calls if "--arch" in c]
    assert len(trains) == 2 * len(percents)
    want = TRAIN[preset]
    for argv in trains:
        assert argv[argv.index("--update-freq") + 1] == str(want["update_freq"])
        assert argv[argv.index("--max-update") + 1] == str(want["max_update"])
    summaries = [a for a in by_script["evaluate.py"] if a[0] == "summary"]
    assert len(summaries) == len(percents)
    for args in summaries:
        assert args[args.index("--ref-tok") + 1].endswith("/test.de") and "--baseline" in args
        assert f"preset {preset}" in args[args.index("--title") + 1]
    averaged = "average_checkpoints.py" in by_script
    assert averaged == (want["keep_interval"] > 1)


def test_unknown_preset_is_refused(tmp_path, recorder):
    proc = subprocess.run(["bash", str(RECIPE / "train.sh"), "baseline"], capture_output=True, text=True,
                          env=dict(os.environ, PRESET="paper", DATA="d", SAVE=str(tmp_path), USER_DIR=USER_DIR))
    assert proc.returncode != 0 and "unknown preset 'paper' (expected one of: fairseq sit-paper sgnet-paper)" in proc.stderr


# ------------------------------------------------------------------ the built models
def build(argv):
    from fairseq import tasks

    argv = list(argv)
    argv[argv.index("--distributed-world-size") + 1] = "1"
    cfg = parse_train(argv)
    return tasks.setup_task(cfg.task).build_model(cfg.model)


def test_sgnet_paper_dropouts_reach_every_attention(stream_bin, tmp_path, recorder):
    """Attention dropout 0.1 in every attention, the SG-Net layer's included (0 under the fairseq preset)."""
    from fairseq.modules import MultiheadAttention

    for preset, p in (("sgnet-paper", 0.1), ("fairseq", 0.0)):
        model = build(train_argv(preset, "syntax_sgnet", stream_bin, tmp_path, recorder))
        attns = {name: m.dropout_module.p for name, m in model.named_modules() if isinstance(m, MultiheadAttention)}
        sg = [n for n in attns if "syntax" in n or "sgnet" in n]
        assert sg and len(attns) == 6 + 2 * 6 + len(sg)
        assert set(attns.values()) == {p}, preset
        dropouts = {name: m.p for name, m in model.named_modules() if name.endswith("dropout_module")}
        residual = {p for name, p in dropouts.items() if name.split(".")[-1] == "dropout_module"
                    and ".self_attn." not in name and ".encoder_attn." not in name}
        activation = {p for name, p in dropouts.items() if name.endswith("activation_dropout_module")}
        assert residual == {0.1} and activation == {0.0}  # residual/embedding dropout; none after ReLU/GELU


def test_paper_concat_variant_and_fairseq_initialisation(stream_bin, tmp_path, recorder):
    """syntax_concat: 492-d words + 8+4+8 features. Initialisation as the README states it: fairseq uses
    Glorot (xavier_uniform) for the attention projections only (q, k, v with gain 1/sqrt(2)); the
    feed-forward layers keep PyTorch's default (bound 1/sqrt(fan_in)), embeddings are N(0, d^-1/2)."""
    torch.manual_seed(0)
    model = build(train_argv("sit-paper", "syntax_concat", stream_bin, tmp_path, recorder))
    emb = model.encoder.embed_tokens
    assert emb.word.embedding_dim == 492 and emb.feature_dims == {"pos": 8, "case": 4, "subword": 8}
    layer = model.encoder.layers[0]

    def bound(w):
        return w.abs().max().item()

    glorot = (6 / (512 + 512)) ** 0.5
    assert bound(layer.self_attn.q_proj.weight) == pytest.approx(glorot / 2 ** 0.5, rel=2e-3)
    assert bound(layer.self_attn.out_proj.weight) == pytest.approx(glorot, rel=2e-3)
    assert bound(layer.fc1.weight) == pytest.approx(512 ** -0.5, rel=2e-3)  # not Glorot's (6/2560)^0.5 = 0.0484
    assert bound(layer.fc2.weight) == pytest.approx(2048 ** -0.5, rel=2e-3)
    assert (6 / (512 + 2048)) ** 0.5 > 1.09 * 512 ** -0.5
    assert model.decoder.embed_tokens.weight[4:].std().item() == pytest.approx(512 ** -0.5, rel=0.02)


@pytest.mark.e2e
def test_sgnet_paper_selects_the_best_dev_bleu_checkpoint(stream_bin, stream_corpus, tmp_path, recorder):
    """The sgnet-paper preset trains through the real fairseq-train with --eval-bleu on the syntax task:
    dev BLEU is computed at each validation, checkpoint_best.pt follows it, and fairseq-generate (weights-only
    loading: the checkpoint holds numpy BLEU counts) translates the test set with it."""
    env = dict(os.environ, PRESET="sgnet-paper", DATA=stream_bin, SAVE=str(tmp_path / "ckpt"), TINY="1", CPU="1",
               USER_DIR=USER_DIR, PYTHON=sys.executable, MAX_TOKENS="1024", UPDATE_FREQ="1", MAX_UPDATE="4",
               SAVE_INTERVAL="2", WARMUP="2", LR="1e-3", FAIRSEQ_TRAIN=os.path.join(os.path.dirname(sys.executable),
                                                                                    "fairseq-train"))
    proc = subprocess.run(["bash", str(RECIPE / "train.sh"), "syntax_sgnet", "--no-progress-bar",
                           "--eval-bleu-args", '{"beam": 2, "max_len_a": 1.2, "max_len_b": 5}'],
                          env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    valid = [line for line in log.splitlines() if "valid on 'valid' subset" in line]
    assert len(valid) == 2 and all("| bleu " in line for line in valid) and "| best_bleu " in valid[-1]
    import syntax_nmt.checkpoint_compat  # noqa: F401

    best = torch.load(tmp_path / "ckpt" / "checkpoint_best.pt", map_location="cpu", weights_only=True)
    bleus = [float(line.split("| bleu ")[1].split()[0]) for line in valid]
    losses = [float(line.split("| loss ")[1].split()[0]) for line in valid]
    assert best["extra_state"]["best"] == pytest.approx(max(bleus), abs=0.01)  # the best BLEU, not the best loss
    assert best["extra_state"]["best"] != pytest.approx(min(losses), abs=0.01)
    assert best["cfg"]["checkpoint"]["best_checkpoint_metric"] == "bleu"
    assert not (tmp_path / "ckpt" / "checkpoint_avg.pt").exists()

    calls = tmp_path / "calls.jsonl"
    gen_env = dict(env, PREP=str(tmp_path / "prep"), EVAL=str(tmp_path / "eval"), PYTHON=recorder, CALLS=str(calls),
                   SYSTEMS_PYTHON=sys.executable,
                   FAIRSEQ_GENERATE=os.path.join(os.path.dirname(sys.executable), "fairseq-generate"),
                   GEN_ARGS="--max-len-a 1.2 --max-len-b 5")
    proc = subprocess.run(["bash", str(RECIPE / "generate.sh"), "syntax_sgnet"], env=gen_env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = (tmp_path / "eval" / "syntax_sgnet.gen").read_text()
    assert "checkpoint_best.pt" in proc.stderr and "beam=5" in out
    n_test = sum(1 for _ in open(stream_corpus["test"] + ".en"))
    assert len([line for line in out.splitlines() if line.startswith("H-")]) == n_test
