"""The path of the model's arguments ``cfg`` from ``SyntaxTranslationTask.build_model`` (issue 57.1).

Before, the task's helpers took the task and ``cfg`` and read and wrote ``cfg`` through ``utils.cfg_value`` /
``set_cfg_value``: counted as below (at 6b73da9), ``cfg`` visited 6 modules of the plugin and climbed back up 10 times
in a training (8 when a checkpoint is loaded). Now the task reads ``cfg`` once and writes it once (``ModelRecords``),
its helpers take values and return values, and the model carries its parsed options on ``cfg`` itself: 3 modules,
2 climbs, the same walk when training and when loading (the test saw the old walk fail).

How it is counted: a profiler follows every call of the plugin's code whose arguments hold ``cfg`` itself (the very
object the task's ``build_model`` received; fairseq's own functions, which pass it on, are not counted, nor is the
``TransformerConfig`` fairseq makes of it for the encoder and the methods, another object). The *walk* is
the plugin module holding ``cfg``, step by step, as such calls enter and return. *Visited*: the modules of the walk.
*Climbs back up*: the returns of ``cfg`` to a function of another subpackage (``tasks``, ``models``, ``utils``, ...):
the floors (tests/unit/test_layering.py) let a subpackage call only into its own floor or below, so coming back from
another one is climbing back up. The issue asks for at most 4 modules and 2 climbs.
"""

import copy
import sys

import pytest

from conftest import USER_DIR

TASK, RECORDS, MODEL = "tasks.syntax_translation", "tasks.checkpoint_records", "models.syntax_transformer"


def cfg_walk(build, cfg):
    """``(walk, climbs)``: the plugin modules (without the ``syntax_nmt.`` prefix) that hold ``cfg`` while ``build()``
    runs, in order (a module once per stay), and how many times ``cfg`` returned to a function of another
    subpackage."""
    stack, walk, climbs = [], [], 0

    def unit(module):
        return module.split(".")[0]

    def profile(frame, event, arg):
        nonlocal climbs
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if not module.startswith("syntax_nmt."):
                return
            code = frame.f_code
            n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04)  # (*args)
            values = [frame.f_locals.get(name) for name in code.co_varnames[:n]]
            values += [v for value in values if isinstance(value, tuple) for v in value]
            if any(v is cfg for v in values):
                stack.append((frame, module[len("syntax_nmt."):]))
                if not walk or walk[-1] != stack[-1][1]:
                    walk.append(stack[-1][1])
        elif event == "return" and stack and stack[-1][0] is frame:
            _, left = stack.pop()
            if stack:
                back = stack[-1][1]
                climbs += unit(back) != unit(left)
                if walk[-1] != back:
                    walk.append(back)

    sys.setprofile(profile)
    try:
        build()
    finally:
        sys.setprofile(None)
    return walk, climbs


@pytest.fixture(scope="module")
def parsed(stream_bin):
    """The parsed command line of a training (LISA, target-side nothing), before its task and model are built."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), [
        stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
        "--syntax-attention", "lisa", "--truncate-source"])
    return convert_namespace_to_omegaconf(args)


def test_the_path_of_cfg_when_training_and_when_loading(parsed):
    from fairseq import tasks

    from syntax_nmt.models.syntax_transformer import OPTIONS_ARG

    task = tasks.setup_task(parsed.task)
    cfg = parsed.model
    assert [m.name for m in vars(cfg)[OPTIONS_ARG].methods] == ["lisa"]  # what the architecture hook parsed
    built = {}
    training, climbs = cfg_walk(lambda: built.setdefault("model", task.build_model(cfg)), cfg)
    assert training == [TASK, RECORDS, TASK, RECORDS, TASK, MODEL, TASK, MODEL, TASK]
    assert climbs == 2  # the architecture hook fairseq applies, and the model's build_model
    assert {"word_dict_signature", "source_prepend_bos", "truncate_source", "target_factor_dicts"} <= set(vars(cfg))
    assert OPTIONS_ARG not in vars(cfg) and OPTIONS_ARG not in vars(built["model"].cfg)  # taken off by the model

    saved = copy.deepcopy(cfg)  # the arguments as the checkpoint keeps them
    loading_task = tasks.setup_task(parsed.task)
    loading, climbs = cfg_walk(lambda: loading_task.build_model(saved, from_checkpoint=True), saved)
    assert loading == training and climbs == 2
    assert len(set(loading)) == 3 and OPTIONS_ARG not in vars(saved)
