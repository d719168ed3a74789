"""Differential tests: each of our BFCL decoders against the ``decode_execute`` of every handler
class of bfcl-eval's model config that uses it, run from the fetched wheel
(:mod:`bfcl_handler_reference`), on a generated corpus of every family's format, its malformed
variants and prose (:mod:`bfcl_decode_corpus`), and on hypothesis-generated text."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import pytest
from bfcl_decode_corpus import corpus
from bfcl_handler_reference import UnsafeReference, handler_classes, reference_decoder
from conftest import RESOURCES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefix_audit.benchmarks.bfcl.data import DEFAULT_PIN
from prefix_audit.benchmarks.bfcl.decoders import (
    HANDLER_DECODERS,
    NotEvaluated,
    Undecodable,
    decode_step,
    decoder_for,
    literal_arithmetic,
)
from prefix_audit.benchmarks.bfcl.handlers import model_config
from prefix_audit.core.fetch import fetch_wheel

ROOT = fetch_wheel(DEFAULT_PIN, RESOURCES)  # fetched when absent, as the bfcl fixture fetches it

RAISES = "raises"


def _outcome(decode, raw: Any) -> tuple[str, Any]:
    """("ok", the call strings) or ("raises", None): all BFCL's runner tells apart."""
    try:
        return "ok", decode(copy.deepcopy(raw))
    except UnsafeReference:
        return "unsafe", None
    except NotEvaluated:
        return "not evaluated", None
    except Exception:  # noqa: BLE001  # BFCL's runner skips a step whatever its decoder raises
        return RAISES, None


@functools.cache
def _decoders() -> list[tuple[str, bool, Any, Any]]:
    """(handler class, is_fc_model, BFCL's decoder, ours) for every pair the config uses."""
    return [(cls, fc, reference_decoder(ROOT, cls, fc), decoder_for(cls, fc))
            for cls, flags in sorted(handler_classes(ROOT).items()) for fc in sorted(flags)]


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, bool]]:
    return sorted((cls, fc) for cls, flags in handler_classes(ROOT).items() for fc in flags)


@pytest.fixture(scope="module")
def items() -> list[Any]:
    return corpus()


def test_our_static_reading_of_the_config_is_the_references(pairs):
    ours = {(e.handler, e.is_fc) for e in model_config(ROOT).values()}
    assert ours == set(pairs)
    assert {cls for cls, _ in pairs} == set(HANDLER_DECODERS)  # every handler has a decoder, none extra


def test_every_decoder_equals_its_handlers_decode_execute_on_the_corpus(pairs, items):
    assert len(items) >= 500
    mismatches, compared, decoded = [], 0, 0
    for cls, fc in pairs:
        theirs, ours = reference_decoder(ROOT, cls, fc), decoder_for(cls, fc)
        for raw in items:
            expected, got = _outcome(theirs, raw), _outcome(ours, raw)
            if expected[0] == "unsafe":  # BFCL would evaluate non-literal text: we refuse to
                if got[0] not in ("not evaluated", RAISES):
                    mismatches.append((cls, fc, raw, expected, got))
                continue
            compared += 1
            decoded += expected[0] == "ok" and bool(expected[1])
            if expected != got:
                mismatches.append((cls, fc, raw, expected, got))
    assert not mismatches[:5], f"{len(mismatches)} mismatches"
    assert compared > 40_000 and decoded > 2_000


def test_refusing_to_evaluate_is_what_bfcl_would_evaluate(items):
    """Where our decoder refuses (NotEvaluated), the reference's guard refused to run BFCL's eval
    too: we never refuse text BFCL's evaluation would have read as a literal."""
    for cls in ("LlamaHandler_3_1", "OpenAIResponsesHandler", "MiniCPMFCHandler", "NemotronHandler"):
        fc = cls in ("LlamaHandler_3_1", "MiniCPMFCHandler")
        theirs, ours = reference_decoder(ROOT, cls, fc), decoder_for(cls, fc)
        for raw in items:
            if _outcome(ours, raw)[0] == "not evaluated":
                assert _outcome(theirs, raw)[0] == "unsafe", (cls, raw)


_TEXT = st.text(alphabet=st.sampled_from(list("[]{}()<>:;,='\"` \n_-.abcdfnlrtu0123456789|")), max_size=60)
_TAGGED = st.builds(lambda pre, body, post: pre + body + post,
                    st.sampled_from(["", "<tool_call>\n", "<TOOLCALL>", "<start_function_call>call:", "```",
                                     "<function_call>", "<|tool_call_start|>", "</think>"]),
                    _TEXT,
                    st.sampled_from(["", "\n</tool_call>", "</TOOLCALL>", "<end_function_call>", "```",
                                     "<|tool_call_end|>"]))
_JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                            ["name", "arguments", "parameters", "tool_name", "tool_calls", "cd", "a"]), inner,
                            max_size=3), max_leaves=8)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.one_of(_TEXT, _TAGGED, _JSONISH, _JSONISH.map(json.dumps)))
def test_hypothesis_steps_decode_as_every_handler_decodes_them(raw):
    for cls, fc, theirs, ours in _decoders():
        expected = _outcome(theirs, raw)
        if expected[0] != "unsafe":
            assert _outcome(ours, raw) == expected, (cls, fc, raw)


@given(raw=st.one_of(_TEXT, _TAGGED, _JSONISH))
def test_decode_step_never_raises_anything_but_undecodable(raw):
    for cls in HANDLER_DECODERS:
        for fc in (True, False):
            try:
                decoded = decode_step(decoder_for(cls, fc), raw)
            except Undecodable:
                continue
            assert isinstance(decoded, list) and all(isinstance(c, str) for c in decoded)


@pytest.mark.parametrize("text, value", [("1 + 2", 3), ("-3", -3), ("2 * 3.5", 7.0), ("'a' * 3", "aaa"),
                                         ("[1, 2] + [3]", [1, 2, 3]), ("{'a': -1}", {"a": -1}), ("7 // 2", 3)])
def test_literal_arithmetic_computes_what_python_does(text, value):
    import ast

    assert literal_arithmetic(ast.parse(text, mode="eval")) == value


@pytest.mark.parametrize("text", ["len('ab')", "__import__('os')", "'a'.upper()", "2 ** 10 ** 8", "'a' * 10 ** 9",
                                  "[i for i in range(3)]", "print"])
def test_literal_arithmetic_refuses_anything_else(text):
    import ast

    with pytest.raises(NotEvaluated):
        literal_arithmetic(ast.parse(text, mode="eval"))


def test_an_unknown_name_fails_as_evals_does_before_anything_runs():
    import ast

    for text in ("x.y", "cd(folder='a')", "1 + f(2)", "true"):
        with pytest.raises(NameError):
            literal_arithmetic(ast.parse(text, mode="eval"))
