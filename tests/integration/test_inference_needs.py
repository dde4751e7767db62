"""What a model reads at inference decides what the task reads and annotates (issue 45): a model loaded to translate
(``task.build_model(..., from_checkpoint=True)``, as fairseq-generate, fairseq-interactive and the hub load it)
needs the streams its parts declare for inference alone; training needs every stream; ``--source-parse`` says how
translation gets them. No model is trained here."""

import os
import shutil

import pytest
import torch

from conftest import build_task_and_model
from syntax_nmt.models.modules.inference_needs import describe_needs, inference_needs, inference_streams
from syntax_nmt.models.modules.methods import registered_methods
from syntax_nmt.tasks.syntax_translation import StreamConfigError

LISA = ["--syntax-attention", "lisa", "--source-features="]
SGNET = ["--syntax-attention", "sgnet", "--source-features="]


@pytest.fixture(scope="module")
def plain(stream_bin, tmp_path_factory):
    """The binarized corpus without a stream file: words and their dictionaries only."""
    out = tmp_path_factory.mktemp("plain")
    for f in os.listdir(stream_bin):
        if f.endswith((".en.bin", ".en.idx", ".de.bin", ".de.idx")) or f in ("dict.en.txt", "dict.de.txt"):
            shutil.copy(os.path.join(stream_bin, f), out / f)
    return str(out)


def loaded(data, *extra):
    """``(task, model)``: the model built as a checkpoint is loaded to translate (its task on ``data``)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from conftest import USER_DIR

    args = options.parse_args_and_arch(options.get_training_parser(), [
        data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny", *extra])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    return task, task.build_model(cfg.model, from_checkpoint=True)


def test_each_part_declares_what_it_reads_and_the_model_takes_the_union():
    from syntax_nmt.models.modules.source_feature_embedding import SourceFeatureEmbedding
    from syntax_nmt.models.modules.target_factors import FactoredTransformerDecoder

    methods = registered_methods()
    assert methods["lisa"].inference_streams == ()
    for name in ("sgnet", "sla", "syntax_bert", "seprem"):
        assert tuple(methods[name].inference_streams) == ("subword", "head"), name
    assert SourceFeatureEmbedding.reads_features_at_inference
    assert FactoredTransformerDecoder.source_streams_at_inference == ()
    needs = inference_needs(["pos", "case"], [methods["lisa"], methods["sla"], methods["sgnet"]], factors=True)
    assert needs == {"--source-features pos,case": ["pos", "case"], "--syntax-attention sla": ["subword", "head"],
                     "--syntax-attention sgnet": ["subword", "head"]}
    assert inference_streams(needs) == ["pos", "case", "subword", "head"]
    assert inference_needs([], [methods["lisa"]], factors=True) == {}
    assert describe_needs({"--syntax-attention sla": ["subword", "head"]}) == (
        "--syntax-attention sla reads the source parse (streams subword, head)")


def test_lisa_translates_from_a_directory_without_stream_files(plain, stream_bin):
    """LISA's model is built on data without stream files to translate (not to train: its loss reads the parse), reads
    none, and annotates raw text with none; with --lisa-inject-parse it reads the parse; --source-parse always
    reads and annotates every stream it was trained with."""
    task, model = loaded(plain, *LISA)
    assert (task.streams, task.annotated_streams, task.inference_needs) == ([], [], {})
    assert model.encoder.inference_streams == [] and model.encoder.required_streams == ["subword", "head"]
    task, _ = loaded(stream_bin, *LISA)  # the data has them: read (for validation, analysis), not needed
    assert (task.streams, task.annotated_streams) == (["subword", "head"], [])
    task, _ = loaded(stream_bin, *LISA, "--lisa-inject-parse")
    assert (task.streams, task.annotated_streams) == (["subword", "head"], ["subword", "head"])
    assert task.inference_needs == {"--syntax-attention lisa --lisa-inject-parse": ["subword", "head"]}
    task, _ = loaded(stream_bin, *LISA, "--source-parse", "always")
    assert task.annotated_streams == ["subword", "head"]
    task, _ = loaded(stream_bin, *LISA, "--source-parse", "never")
    assert (task.streams, task.annotated_streams) == ([], [])
    with pytest.raises(StreamConfigError, match=r"missing streams \['subword', 'head'\]"):
        build_task_and_model(plain, *LISA)  # training
    with pytest.raises(StreamConfigError, match=r"missing streams \['subword', 'head'\]"):
        loaded(plain, *LISA, "--source-parse", "always")


@pytest.mark.parametrize("extra, reader", [
    (SGNET, "--syntax-attention sgnet reads the source parse (streams subword, head)"),
    (LISA + ["--lisa-inject-parse"], "--syntax-attention lisa --lisa-inject-parse reads the source parse (streams "
                                     "subword, head)"),
    (["--syntax-attention", "none"], "--source-features pos,case,subword reads the parser's annotation (streams pos, "
                                     "case, subword)"),
], ids=["sgnet", "lisa-inject-parse", "features"])
def test_a_model_that_reads_the_annotation_names_what_reads_it(plain, stream_bin, extra, reader):
    with pytest.raises(StreamConfigError) as e:
        loaded(plain, *extra)
    assert str(e.value).startswith(f"the data directory {plain} lacks the streams [")
    assert f"the model reads at inference what only the annotation gives: {reader}; give the data directory the " \
           f"model was trained on (syntax-nmt-binarize" in str(e.value)
    with pytest.raises(StreamConfigError, match=r"^--source-parse never: .*" + reader.replace("(", r"\(")
                       .replace(")", r"\)")):
        loaded(stream_bin, *extra, "--source-parse", "never")
    task, _ = loaded(stream_bin, *extra)
    with pytest.raises(StreamConfigError, match=r"^source_parse='never': .*leave --source-parse at auto"):
        task.set_source_parse("never")
    plain_tokens = [task.src_dict.encode_line("a b c", add_if_not_exist=False).long()]
    with pytest.raises(StreamConfigError, match=r"^plain token tensors lack the source streams .*" +
                       reader.split(" reads")[0]):
        task.build_dataset_for_inference(plain_tokens, [4])


def test_the_parse_is_printed_only_for_a_model_that_predicts_one(stream_bin):
    """--print-source-parse needs a parse head (LISA); the model computes its parents in one encoder pass."""
    with pytest.raises(StreamConfigError, match=r"^--print-source-parse heads: the model predicts no parse of the "
                                                r"source \(only --syntax-attention lisa has a parse head; its "
                                                r"--syntax-attention: sgnet\)"):
        loaded(stream_bin, *SGNET, "--print-source-parse", "heads")
    task, model = loaded(stream_bin, *LISA, "--print-source-parse", "conllu")
    assert model.predicts_source_parse
    task.load_dataset("test")
    ds = task.dataset("test")
    sample = ds.collater([ds[i] for i in range(4)])
    model.eval()
    with torch.no_grad():
        parents = model.predict_source_parents(sample["net_input"])
        parses = task.source_parses(model, sample["net_input"])
    tokens = sample["net_input"]["src_tokens"]
    assert parents.shape == tokens.shape and parents.dtype == torch.long
    assert not tokens.gather(1, parents).eq(task.src_dict.pad()).any()  # padded keys are masked
    for row, parse in zip(tokens, parses):
        words = task.src_dict.string(row[row.ne(task.src_dict.pad())], "subword_nmt").split()  # left-padded
        assert parse.words == words and len(parse.heads) == len(words)
        assert all(0 <= h <= len(words) for h in parse.heads)
    _, sgnet = loaded(stream_bin, *SGNET)
    assert not sgnet.predicts_source_parse
    with pytest.raises(ValueError, match="predicts no parse"):
        sgnet.predict_source_parents(sample["net_input"])


# -- issue 60: ensembles, the hub's source_parse, the messages and the stream list ------------------------------------
FEATURES = ["--syntax-attention", "none"]  # --source-features pos,case,subword (the default)
ARGS = {"lisa": LISA, "sgnet": SGNET, "features": FEATURES, "inject": LISA + ["--lisa-inject-parse"]}


def ensemble(data, *members, task_extra=()):
    """The task after fairseq built each member of ``--path a.pt:b.pt`` on it, in that order (its task is the first
    member's: fairseq's load_model_ensemble_and_task)."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from conftest import USER_DIR

    task, _ = loaded(data, *ARGS[members[0]], *task_extra)
    for name in members[1:]:
        args = options.parse_args_and_arch(options.get_training_parser(), [
            data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
            *ARGS[name]])
        task.build_model(convert_namespace_to_omegaconf(args).model, from_checkpoint=True)
    return task


@pytest.mark.parametrize("members, needs, streams", [
    (("sgnet", "lisa"), {"--syntax-attention sgnet": ["subword", "head"]}, ["subword", "head"]),
    (("lisa", "sgnet"), {"--syntax-attention sgnet": ["subword", "head"]}, ["subword", "head"]),
    (("lisa", "lisa"), {}, ["subword", "head"]),
    (("features", "sgnet"), {"--source-features pos,case,subword": ["pos", "case", "subword"],
                             "--syntax-attention sgnet": ["subword", "head"]}, ["pos", "case", "subword", "head"]),
    (("sgnet", "features"), {"--syntax-attention sgnet": ["subword", "head"],
                             "--source-features pos,case,subword": ["pos", "case", "subword"]},
     ["subword", "head", "pos", "case"]),
], ids=["sgnet:lisa", "lisa:sgnet", "lisa:lisa", "features:sgnet", "sgnet:features"])
def test_an_ensemble_reads_what_any_member_reads(stream_bin, members, needs, streams):
    """The task reads and annotates the union of its members' needs at inference (in order of first appearance),
    whichever comes last; it reads from binarized data every stream any member was trained with."""
    task = ensemble(stream_bin, *members)
    assert task.inference_needs == needs
    assert task.annotated_streams == [s for s in streams if any(s in v for v in needs.values())]
    assert task.streams == streams


@pytest.mark.parametrize("members", [("lisa", "sgnet"), ("sgnet", "lisa")], ids=["lisa:sgnet", "sgnet:lisa"])
def test_an_ensemble_with_a_member_that_reads_the_parse(plain, stream_bin, members):
    """Data without stream files, and --source-parse never, are refused naming the member that reads the parse,
    whichever its place."""
    with pytest.raises(StreamConfigError, match=rf"^the data directory {plain} lacks the streams \['subword', "
                                                r"'head'\]: .*--syntax-attention sgnet reads the source parse"):
        ensemble(plain, *members)
    with pytest.raises(StreamConfigError, match=r"^--source-parse never: .*--syntax-attention sgnet reads the "
                                                r"source parse"):
        ensemble(stream_bin, *members, task_extra=["--source-parse", "never"])
    task = ensemble(stream_bin, *members, task_extra=["--source-parse", "always"])
    assert task.annotated_streams == ["subword", "head"] and task.streams == ["subword", "head"]
    with pytest.raises(StreamConfigError, match=r"^source_parse='never': .*--syntax-attention sgnet reads"):
        task.set_source_parse("never")


def test_the_hubs_source_parse_on_a_loaded_model(plain, stream_bin):
    """The hub's source_parse, applied once the model is loaded: "never" is judged by what the model reads at
    inference (LISA: nothing; it was trained with the parse), "always" needs the dictionaries of the tag streams it
    was trained with, "auto" goes back to its needs; an unknown mode names the three."""
    task, _ = loaded(stream_bin, *LISA)
    for mode, annotated in (("never", []), ("always", ["subword", "head"]), ("auto", []), ("always",
                                                                                           ["subword", "head"])):
        task.set_source_parse(mode)
        assert (task.source_parse, task.annotated_streams) == (mode, annotated)
    task, _ = loaded(plain, *LISA)
    task.set_source_parse("never")
    with pytest.raises(StreamConfigError) as e:
        task.set_source_parse("always")
    assert str(e.value) == ("source_parse='always': the data directory has no dictionary of the streams ['subword'] "
                            "(dict.STREAM.txt): use the training data's")
    assert task.annotated_streams == [] and task.source_parse == "never"
    with pytest.raises(ValueError) as e:
        task.set_source_parse("sometimes")
    assert str(e.value) == "source_parse must be one of auto, always, never, got 'sometimes'"
    task, _ = loaded(stream_bin, *SGNET)
    with pytest.raises(StreamConfigError) as e:
        task.set_source_parse("never")
    assert str(e.value) == (
        "source_parse='never': the model reads at inference what only the annotation gives: --syntax-attention sgnet "
        "reads the source parse (streams subword, head); leave --source-parse at auto (hub: source_parse='auto'): raw "
        "text is then annotated with the recorded parser (or --input-conllu FILE, hub: translate_conllu), and "
        "fairseq-generate reads the data directory's stream files (syntax-nmt-binarize)")
    assert task.annotated_streams == ["subword", "head"] and task.source_parse == "auto"
    task.set_source_parse("always")
    assert task.annotated_streams == ["subword", "head"]


def test_source_parse_before_a_model_is_loaded(stream_bin):
    """A task with no model yet: "never" and "always" are accepted and raw text keeps the streams of the data."""
    from syntax_nmt.tasks.source_streams import SourceStreams

    source = SourceStreams("auto", stream_bin, "en", "de")
    for mode in ("never", "always", "auto"):
        source.set_source_parse(mode)
        assert source.annotated == ["pos", "case", "subword", "head", "dep"]


def test_the_streams_logged(stream_bin, caplog):
    """What the task says it reads: the data's streams with their sizes, then, loading a model to translate, what
    the model reads at inference, the streams read from binarized data, and how raw text is annotated."""
    import logging

    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        task, _ = loaded(stream_bin, *LISA)
        sizes = ", ".join(f"{n} ({len(task.stream_dicts[n])} types)" for n in ("pos", "case", "subword"))
        loaded(stream_bin, *SGNET, "--source-parse", "always")
        loaded(stream_bin, *LISA, "--source-parse", "never")
    messages = [r.getMessage() for r in caplog.records if r.name == "syntax_nmt.tasks.source_streams"]
    assert messages == [
        f"source streams: {sizes}, head, dep ({len(task.stream_dicts['dep'])} types)",
        "translating (--source-parse auto): the model reads no source stream at inference; streams read from "
        "binarized data: subword, head; raw text: tokenized and segmented as recorded, no parser",
        f"source streams: {sizes}, head, dep ({len(task.stream_dicts['dep'])} types)",
        "translating (--source-parse always): --syntax-attention sgnet reads the source parse (streams subword, "
        "head); streams read from binarized data: subword, head; raw text: annotated (subword, head)",
        f"source streams: {sizes}, head, dep ({len(task.stream_dicts['dep'])} types)",
        "translating (--source-parse never): the model reads no source stream at inference; streams read from "
        "binarized data: none; raw text: tokenized and segmented as recorded, no parser"]


def test_an_explicit_stream_list(stream_bin):
    """--source-streams names the streams: training refuses missing and extra ones, naming both lists; translation
    names --source-streams as what lacks a stream; the padding and BOS values of each stream."""
    from syntax_nmt.data.streams import SPECIAL_HEAD
    from syntax_nmt.tasks.source_streams import SourceStreams

    with pytest.raises(StreamConfigError) as e:
        build_task_and_model(stream_bin, *SGNET, "--source-streams", "subword,pos")
    assert str(e.value) == ("missing streams ['head'] (the model needs ['subword', 'head']; --source-streams gives "
                            "['subword', 'pos']); extra streams ['pos'] the model was not trained with (it uses "
                            "['subword', 'head'])")
    with pytest.raises(StreamConfigError) as e:
        build_task_and_model(stream_bin, *SGNET, "--source-streams", "subword,head,dep")
    assert str(e.value) == "extra streams ['dep'] the model was not trained with (it uses ['subword', 'head'])"
    task, _, _ = build_task_and_model(stream_bin, *SGNET, "--source-streams", "subword,head")
    assert task.streams == ["subword", "head"]
    with pytest.raises(StreamConfigError, match=r"^--source-streams lacks the streams \['head'\]: the model reads at "
                                                r"inference .*--syntax-attention sgnet reads the source parse"):
        loaded(stream_bin, *SGNET, "--source-streams", "subword")
    with pytest.raises(StreamConfigError, match=r"^extra streams \['pos'\] the model was not trained with"):
        loaded(stream_bin, *LISA, "--source-streams", "subword,head,pos")
    task, _ = loaded(stream_bin, *LISA, "--source-streams", "subword,head")  # read where given: LISA needs none
    assert task.streams == ["subword", "head"] and task.annotated_streams == []
    source = SourceStreams("auto", stream_bin, "en", "de")
    assert (source.pad("head"), source.bos("head")) == (SPECIAL_HEAD, SPECIAL_HEAD)
    assert (source.pad("pos"), source.bos("pos")) == (source.dicts["pos"].pad(), source.dicts["pos"].bos())
    assert source.pad("pos") != source.bos("pos")
    assert source.dictionary_records(["head", "subword"]) == source.dictionary_records(["subword"]) != []
    assert source.dictionary_records(["head"]) == []


def test_the_contract_called_directly(stream_bin, plain):
    """SourceStreams.model_stream_dictionaries on its own: by default a model being trained (the task narrows itself to
    the model's streams, and a model loaded later to translate is no ensemble member of it); translating with
    ``auto`` by default (a lacking stream is named with what supplies it)."""
    from syntax_nmt.tasks.source_streams import SourceStreams

    source = SourceStreams("auto", stream_bin, "en", "de")
    records = source.model_stream_dictionaries(["subword", "head"])
    assert records == source.dictionary_records(["subword"]) and source.streams == ["subword", "head"]
    assert source.annotated == ["subword", "head"] and source.model_needs == {"the model": ["subword", "head"]}
    source.model_stream_dictionaries(["pos"], translating=True)
    assert (source.streams, source.annotated, source.model_streams) == (["pos"], ["pos"], ["pos"])
    source = SourceStreams("auto", stream_bin, "en", "de")
    assert source.model_stream_dictionaries([]) == [] and (source.streams, source.model_needs) == ([], {})
    source = SourceStreams("auto", plain, "en", "de", dictionaries_only=True)
    with pytest.raises(StreamConfigError, match=rf"^the data directory {plain} lacks the streams \['subword'\]: the "
                                                r"model reads at inference what only the annotation gives: the model "
                                                r"reads the source parse \(streams subword, head\); give the data "
                                                r"directory the model was trained on"):
        source.model_stream_dictionaries(["subword", "head"], translating=True)
