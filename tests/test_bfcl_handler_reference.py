"""bfcl-eval's own per-handler decoders (``bfcl_handler_reference``) load from the pinned wheel and
run on the generated corpus of raw steps (``bfcl_decode_corpus``): every (handler class,
``is_fc_model``) pair the config uses, every item, with no exception but the decoders' own; the SDK
stubs do not outlive the imports; and the eval guard lets nothing unsafe run."""

from __future__ import annotations

import ast
import builtins
import importlib.util
import sys
from collections import Counter

import bfcl_handler_reference as ref
import pytest
from bfcl_decode_corpus import UNSAFE_LLAMA, UNSAFE_PY_CALLS, corpus, python_wrappers
from conftest import RESOURCES

from prefix_audit.benchmarks.bfcl import DEFAULT_PIN
from prefix_audit.core.fetch import fetch_wheel

ROOT = fetch_wheel(DEFAULT_PIN, RESOURCES)  # fetched when absent, as the bfcl fixture fetches it

# SDKs the handler modules import that a --no-deps wheel does not bring.
SDKS = ("anthropic", "cohere", "google.genai", "mistralai", "boto3", "overrides", "datamodel_code_generator",
        "qwen_agent", "writerai")
# Where a decoder's own exception may be raised from in this module: the guard and the wrapper.
GUARD_FUNCTIONS = {"guarded_eval", "_namespace_check", "_walk", "decode"}
# What an expression ``eval`` actually ran may never hold.
FORBIDDEN = (ast.Call, ast.Attribute, ast.Subscript, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
             ast.GeneratorExp, ast.JoinedStr, ast.NamedExpr, ast.Starred, ast.Await, ast.Yield, ast.YieldFrom)


def _missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:
        return True


def _raised_from(exc: BaseException) -> tuple[str, str]:
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name


def _pairs() -> list[tuple[str, bool]]:
    return [(h, fc) for h, fcs in sorted(ref.handler_classes(ROOT).items()) for fc in sorted(fcs)]


@pytest.fixture(scope="module")
def run():
    """Outcomes of every pair on every item, with builtins.eval a tripwire for bfcl_eval code, the
    expressions the guard let eval run, and the SDKs missing before and after loading."""
    missing_before = {name for name in SDKS if _missing(name)}
    items = corpus()
    bypassed: list[str] = []

    def tripwire(source, globals=None, locals=None, /):
        caller = sys._getframe(1)
        if str(caller.f_globals.get("__name__", "")).startswith("bfcl_eval"):
            bypassed.append(repr(source))
            raise AssertionError(f"bfcl_eval called eval past the guard: {source!r:.200}")
        if globals is None:
            globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
        return real_eval(source, globals, locals)

    real_eval = builtins.eval
    outcomes: dict[tuple[str, bool], list[tuple[str, object]]] = {}
    escaped: list[str] = []
    with pytest.MonkeyPatch.context() as mp, ref.recording_evals() as evaluated:
        mp.setattr(builtins, "eval", tripwire)
        for handler, is_fc in _pairs():
            decode = ref.reference_decoder(ROOT, handler, is_fc)
            results = []
            for item in items:
                try:
                    results.append(("ok", decode(item)))
                except Exception as exc:
                    filename, function = _raised_from(exc)
                    if filename == ref.__file__ and function not in GUARD_FUNCTIONS:
                        escaped.append(f"{handler}/{is_fc}: {type(exc).__name__} in {function} on {item!r:.100}")
                    results.append(("raises", type(exc).__name__))
            outcomes[handler, is_fc] = results
    missing_after = {name for name in SDKS if _missing(name)}
    return {"items": items, "outcomes": outcomes, "evaluated": list(evaluated), "bypassed": bypassed,
            "escaped": escaped, "missing_before": missing_before, "missing_after": missing_after}


def test_config_is_read_statically():
    entries = ref.model_entries(ROOT)
    text = (ROOT / ref.MODEL_CONFIG).read_text(encoding="utf-8")
    assert len(entries) == text.count("ModelConfig(") > 100
    assert len({e.key for e in entries}) == len(entries)
    classes = ref.handler_classes(ROOT)
    assert classes["ClaudeHandler"] == {True, False}
    assert classes["CohereHandler"] == {True} and classes["PhiHandler"] == {False}
    assert sum(map(len, classes.values())) == len({(e.handler, e.is_fc) for e in entries})
    for name in classes:
        assert ref.handler_instance(ROOT, name, min(classes[name])).__class__.__name__ == name


def test_every_pair_runs_on_the_whole_corpus(run):
    assert len(run["items"]) >= 300
    assert len(run["outcomes"]) == len(_pairs())
    assert not run["escaped"], run["escaped"][:5]
    for key, results in run["outcomes"].items():
        assert len(results) == len(run["items"])
        for kind, value in results:
            if kind == "ok":
                assert isinstance(value, list) and all(isinstance(s, str) for s in value), (key, value)


def test_stubs_do_not_outlive_the_imports(run):
    assert run["missing_after"] == run["missing_before"]
    for name in run["missing_before"]:
        assert name not in sys.modules


def test_no_eval_bypasses_the_guard(run):
    assert not run["bypassed"], run["bypassed"][:5]


def test_eval_only_ever_ran_plain_expressions(run):
    assert run["evaluated"], "the corpus never reaches an eval"
    for source in run["evaluated"]:
        try:
            tree = ast.parse(source.lstrip(" \t"), mode="eval")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            assert not isinstance(node, FORBIDDEN), source
            assert not (isinstance(node, ast.Name) and node.id.startswith("__")), source


def test_unsafe_arguments_are_refused(run):
    outcome = dict(zip(map(repr, run["items"]), zip(*run["outcomes"].values())))
    pairs = list(run["outcomes"])

    def of(item, pair):
        return outcome[repr(item)][pairs.index(pair)]

    for text in UNSAFE_PY_CALLS:
        listed, bare, _, _, _, toolcall, minicpm = python_wrappers([text])
        for item in (listed, bare):
            assert of(item, ("ClaudeHandler", False)) == ("raises", "UnsafeReference"), item
        assert of(toolcall, ("NemotronHandler", True)) == ("raises", "UnsafeReference")
        # fc2dict swallows every exception; the reference decoder still reports the refusal
        assert of(minicpm, ("MiniCPMFCHandler", True)) == ("raises", "UnsafeReference")
    for text in UNSAFE_LLAMA:
        assert of(text, ("LlamaHandler_3_1", True)) == ("raises", "UnsafeReference"), text


@pytest.mark.parametrize("source", [
    "__import__('os')", "len('x')", "().__class__", "x.y", "a[0]", "[i for i in y]", "lambda: 1", "f'{x}'",
    "(y := 1)", "9**9**9**9", "'a' * 10**10", "[0] * 10**9", "1 << 10**9", "x * 10", "__debug__",
    "{**x}", "[*x]", "print(1)", "1 + open('f')",
])
def test_guard_refuses(source):
    with pytest.raises(ref.UnsafeReference):
        ref.check_expression(source, names={"x", "y", "a", "f", "len", "open", "print"})


@pytest.mark.parametrize("source", [
    "1 + 2", "-3", "2 * 3.5", "'ab' * 3", "[1, {'a': (2, None)}] + []", "{'name': 'cd', 'parameters': {}}",
    "true", "x + 1", "2 ** 64", "1 / 0", "cd(folder='x')", "[true, __import__('os')]", "not a syntax (",
])
def test_guard_passes(source):
    ref.check_expression(source, names={"x"})


def test_guard_raises_the_name_error_eval_would():
    decode = ref.reference_decoder(ROOT, "LlamaHandler_3_1", True)
    with pytest.raises(NameError, match="'cd'"):
        decode("[cd(folder='documents')]")
    assert decode('[{"name": "cd", "parameters": {"folder": "documents"}}]') == ["cd(folder='documents')"]


def test_some_decoders_decode_their_own_format(run):
    decoded = Counter({key: sum(1 for kind, value in results if kind == "ok" and value)
                       for key, results in run["outcomes"].items()})
    for key in [("ClaudeHandler", False), ("ClaudeHandler", True), ("CohereHandler", True),
                ("FunctionGemmaHandler", True), ("QwenFCHandler", True), ("LlamaHandler_3_1", True),
                ("SalesforceQwenHandler", True), ("MiniCPMFCHandler", True), ("GLMHandler", True)]:
        assert decoded[key] > 0, key
