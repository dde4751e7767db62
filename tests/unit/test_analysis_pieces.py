"""The schema of a recording module's ``analysis_maps`` (syntax_nmt/analyze/models.py): what follows it becomes
numpy pieces with their titles; a module that shows nothing says why; an answer off the schema is an error
naming the module."""

import numpy as np
import pytest
import torch
from torch import nn

from syntax_nmt.analyze.common import AnalyzeError
from syntax_nmt.analyze.models import analysis_pieces

T = 3


class Recorder(nn.Module):
    record_kind = "rec"

    def __init__(self, answer, recorded=None):
        super().__init__()
        self.record, self.recorded, self.answer = True, {"x": torch.zeros(1)} if recorded is None else recorded, answer

    def analysis_maps(self, recorded):
        return self.answer


def good():
    return {"maps": {"attn": {"title": "attention", "values": torch.full((T, T), 1 / T, dtype=torch.float16),
                              "within": "allowed"},
                     "weights": {"title": "per part", "values": np.ones((T, 2)), "columns": ["a", "b"]}},
            "masks": {"allowed": {"title": "keys", "values": torch.eye(T)}},
            "vectors": {"gate": {"title": "gate", "values": [0.1, 0.2, 0.3]}}}


def test_pieces_follow_the_schema_as_numpy():
    out, why = analysis_pieces("enc.m", Recorder(good()), T)
    assert why == ""
    assert out["title"] == "rec"  # no title: the kind
    assert out["maps"] == {"attn": {"title": "attention", "within": "allowed"},
                           "weights": {"title": "per part", "columns": ["a", "b"]}}
    assert out["masks"] == {"allowed": {"title": "keys"}} and out["vectors"] == {"gate": {"title": "gate"}}
    assert out["attn"].dtype == np.float32 and out["weights"].shape == (T, 2)
    assert out["allowed"].dtype == bool and np.array_equal(out["allowed"], np.eye(T, dtype=bool))
    np.testing.assert_allclose(out["gate"], [0.1, 0.2, 0.3], rtol=1e-6)


def test_a_module_that_shows_nothing_says_why():
    plain = nn.Module()
    plain.record, plain.recorded = True, {"x": torch.zeros(1)}
    assert analysis_pieces("a", plain, T) == (None, "it has no analysis_maps hook")
    assert analysis_pieces("b", Recorder(good(), recorded={}), T) == (None, "it recorded nothing")
    assert analysis_pieces("c", Recorder(None), T) == (None, "its analysis_maps returned no pieces")
    empty = Recorder({"title": "x", "maps": {}})
    assert analysis_pieces("d", empty, T) == (None, "its analysis_maps returned no pieces")


def _off(change):
    answer = good()
    change(answer)
    return answer


@pytest.mark.parametrize("answer, message", [
    (_off(lambda a: a["maps"]["attn"].update(values=torch.zeros(T, T + 1))), r"maps piece 'attn' has shape \(3, 4\)"),
    (_off(lambda a: a["maps"]["weights"].update(columns=["a"])),
     r"maps piece 'weights' has shape \(3, 2\), expected \(3, 1\)"),
    (_off(lambda a: a["vectors"]["gate"].update(values=[1.0, 2.0])), r"vectors piece 'gate' has shape \(2,\)"),
    (_off(lambda a: a["maps"]["attn"].update(within="gate")), "map 'attn' is within 'gate', which is no mask"),
    (_off(lambda a: a["vectors"]["gate"].update(within="allowed")), "vectors piece 'gate' has keys"),
    (_off(lambda a: a["masks"]["allowed"].pop("title")), "masks piece 'allowed' has keys"),
    (_off(lambda a: a["vectors"].update(layer={"title": "l", "values": [0, 0, 0]})), "names a piece 'layer'"),
    (_off(lambda a: a.update(extra={})), r"returned unknown keys \['extra'\]"),
], ids=["map-shape", "columns", "vector-shape", "within-no-mask", "within-on-vector", "no-title", "reserved-name",
        "unknown-key"])
def test_an_answer_off_the_schema_is_an_error_naming_the_module(answer, message):
    with pytest.raises(AnalyzeError, match=r"^encoder\.layers\.1\.m: analysis_maps .*" + message):
        analysis_pieces("encoder.layers.1.m", Recorder(answer), T)
