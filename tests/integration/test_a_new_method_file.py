"""Adding a method is one new file, and it leaves the suite green (issue 35.2).

A copy of the package gets one more module, ``methods/headbias.py`` (a toy method: a learned bias on the layer
input of every token whose word has a head), and the tests that read the table of systems and the method
registry run on that copy: the tests of the table, the demo's budget, the registries, the floors, the benches'
targets, and the contract of a syntax method for the new one. They must pass without an edit, and the new method
must be in the table while ``all`` keeps its published layout.
"""

import json
import subprocess
import sys

import pytest

from support.package_copy import copy_package

HEADBIAS = '''"""A toy method: a learned bias added to the layer input of every token whose word has a head."""

from dataclasses import dataclass, field

import torch
from fairseq.dataclass import FairseqDataclass
from torch import nn

from syntax_nmt.models.modules.methods import base


@dataclass
class HeadBiasConfig(FairseqDataclass):
    headbias_layers: str = field(default="0", metadata={"help": "encoder layers whose input gets the bias"})
    headbias_scale: float = field(default=1.0, metadata={"help": "factor of the bias (0: the stock Transformer)"})


class HeadBiasInput(nn.Module):
    def __init__(self, embed_dim, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(embed_dim) * 0.02)
        self.scale = scale

    def forward(self, x, ctx):
        has_head = (ctx.heads != 0) & ~ctx.special  # (B, T): a head offset of 0 is a root
        return x + self.scale * has_head.transpose(0, 1).unsqueeze(-1).to(x.dtype) * self.bias


@base.register_syntax_method("headbias")
class HeadBias(base.SyntaxMethod):
    """A learned bias on the input of tokens whose word has a head."""

    config = HeadBiasConfig
    layers_option = "--headbias-layers"
    identity_args = ("--headbias-scale", "0")

    def __init__(self, cfg, num_layers):
        super().__init__(cfg, num_layers)
        self.layers = base.parse_layers(cfg.headbias_layers, num_layers, "--headbias-layers")

    def build_layer_input(self, layer, embed_dim, cfg, state):
        return HeadBiasInput(embed_dim, cfg.headbias_scale) if layer in self.layers else None
'''

#: the tests that read the table of systems or the registries
TESTS = ["tests/unit/test_systems.py", "tests/unit/test_demo_budget.py", "tests/unit/test_registry.py",
         "tests/unit/test_layering.py", "tests/unit/test_bench_wps.py", "tests/unit/test_bench_length.py",
         "tests/integration/test_method_registry.py"]
#: their slow tests that read no table (command lines, operation counts): the main run has them
SKIP = "not shell_interface and not count_ops and not tiny_run and not user_errors"


@pytest.fixture(scope="module")
def copy_with_headbias(tmp_path_factory):
    return copy_package(tmp_path_factory.mktemp("plugin"), {"models/modules/methods/headbias.py": HEADBIAS})


def test_the_copy_imports_the_new_method_and_all_keeps_its_layout(copy_with_headbias):
    root, env = copy_with_headbias
    code = ("import json, syntax_nmt, syntax_nmt.systems as S\n"
            "t = S.systems()\n"
            "print(json.dumps({'file': syntax_nmt.__file__, 'names': list(t), 'headbias': t['headbias'].args(),"
            " 'all': t['all'].args()}))\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["file"] == str(root / "syntax_nmt" / "__init__.py")
    assert "headbias" in got["names"] and got["headbias"][:4] == ["--source-features", "", "--syntax-attention",
                                                                  "headbias"]
    from syntax_nmt import systems as S

    assert got["all"] == S.systems()["all"].args()  # the published all row: the new method does not join it


def _pytest(root, env, *args):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], env=env,
                          capture_output=True, text=True, cwd=str(root))
    return proc.returncode, (proc.stdout + proc.stderr)[-4000:]


def test_the_suite_that_reads_the_registry_stays_green(copy_with_headbias):
    root, env = copy_with_headbias
    rc, tail = _pytest(root, env, "-x", "-m", "not slow", *TESTS, "-k", SKIP)
    assert rc == 0 and " passed" in tail, tail


@pytest.mark.slow
def test_the_new_method_passes_the_contract_of_a_method(copy_with_headbias):
    """The contract of ``tests/integration/test_method_contract.py`` is read from the registry: the copy checks the
    new method too (identity setting, fp16/bf16, gradients, batching, padding, recomputation, fairseq-train and
    -generate)."""
    root, env = copy_with_headbias
    rc, listed = _pytest(root, env, "--collect-only", "tests/integration/test_method_contract.py", "-k", "headbias")
    assert rc == 0 and "test_identity_setting_is_the_stock_transformer[headbias]" in listed, listed
    rc, tail = _pytest(root, env, "-x", "-m", "not slow", "tests/integration/test_method_contract.py", "-k", "headbias")
    assert rc == 0 and " passed" in tail, tail
