"""bfcl-eval's own evaluation of multi-turn output, run from the fetched wheel, for differential tests.

Three pieces of the package, none of ours:

* ``multi_turn_checker`` — the checker (state, response and empty-turn checks);
* the two stock decoders of ``bfcl_eval.model_handler.utils``: ``convert_to_function_call``
  (function-calling handlers) and ``default_decode_execute_prompting`` (prompting handlers);
* the runner's per-entry evaluation, ``_evaluate_single_multi_turn_entry`` of
  ``eval_checker/eval_runner.py`` (inference-error and turn-count checks, per-step decoding that
  skips a step it cannot decode). That module imports every model handler and their SDKs, which a
  ``--no-deps`` wheel does not have, so the one function is compiled from its file alone.

The package executes calls with ``eval`` and caches instances in module globals; this is only
ever called from tests, on benchmark entries and test inputs, with that cache and the module
state the classes mutate reset before every entry.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

# Imported by model_handler.utils for the Java/JavaScript parsers and file locks of other
# categories; the multi-turn decoders never touch them.
_UNUSED_IMPORTS = ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript", "filelock")


def _runner_function(root: Path, name: str, namespace: dict[str, Any]) -> Callable[..., dict]:
    path = root / "bfcl_eval" / "eval_checker" / "eval_runner.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)  # the package's own code, not model output
    return namespace[name]


class _Handler:
    """What the runner asks of a model handler: ``decode_execute``."""

    def __init__(self, decode: Callable[[Any], list[str]]) -> None:
        self._decode = decode

    def decode_execute(self, result: Any, has_tool_call_tag: bool) -> list[str]:
        return self._decode(result)


class BfclReference:
    def __init__(self, bench: Any) -> None:
        self.bench = bench
        for name in _UNUSED_IMPORTS:
            if name not in sys.modules and importlib.util.find_spec(name) is None:
                sys.modules[name] = mock.MagicMock(name=name)
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker as checker_module
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
        from bfcl_eval.model_handler.utils import convert_to_function_call, default_decode_execute_prompting

        self._utils = multi_turn_utils
        self._checker = checker_module.multi_turn_checker
        self._handlers = {"function_calling": _Handler(convert_to_function_call),
                          "prompting": _Handler(default_decode_execute_prompting)}
        namespace = {"multi_turn_checker": checker_module.multi_turn_checker,
                     "is_empty_execute_response": multi_turn_utils.is_empty_execute_response,
                     "BaseHandler": _Handler}
        self._evaluate = _runner_function(bench.data.root, "_evaluate_single_multi_turn_entry", namespace)
        self._twitter = bench.loader.classes["TwitterAPI"]

    def _reset(self) -> None:
        for name in [k for k in vars(self._utils) if k.endswith("_instance")]:
            del vars(self._utils)[name]
        self.bench.loader.reset_module_state()
        self._twitter.post_tweet.__defaults__ = ([], [])

    def _test_entry(self, entry: Any) -> dict[str, Any]:
        return {"id": entry.id, "initial_config": entry.initial_config,
                "involved_classes": list(entry.involved_classes)}

    def checker(self, entry: Any, decoded: list[list[list[str]]]) -> int:
        """The checker alone on already decoded calls (turn count checked as the runner does)."""
        self._reset()
        gt = [list(t) for t in entry.ground_truth]
        if len(decoded) != len(gt):
            return 0
        return int(self._checker(decoded, gt, self._test_entry(entry), entry.category, "audit")["valid"])

    def evaluate(self, entry: Any, result: Any, decoding: str | Callable[[Any], list[str]]) -> int:
        """BFCL's verdict on one entry's ``result`` as ``bfcl generate`` wrote it."""
        return self.verdict(entry, result, decoding)[0]

    def verdict(self, entry: Any, result: Any, decoding: str | Callable[[Any], list[str]]) -> tuple[int, str | None]:
        """BFCL's verdict on one entry's ``result`` and, when it failed, BFCL's error type;
        ``decoding``: one of the two stock decoders by name, or a handler's own ``decode_execute``
        (:func:`bfcl_handler_reference.reference_decoder`)."""
        self._reset()
        gt = [list(t) for t in entry.ground_truth]
        handler = self._handlers[decoding] if isinstance(decoding, str) else _Handler(decoding)
        verdict = self._evaluate(handler, entry.id, result, gt, self._test_entry(entry),
                                 "audit", entry.id.rsplit("_", 1)[0])
        error = verdict.get("error") if isinstance(verdict.get("error"), dict) else {}
        return int(verdict["valid"]), None if verdict["valid"] else error.get("error_type")
