"""τ's ``calculate`` tool, without eval: the characters tau2 allows, Python's arithmetic on them, the result
rounded as tau2 rounds it (the one call :mod:`.environment` does not hand to tau2,
:data:`.semantics.OWN_IMPLEMENTATION`)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

_CALC_CHARS = frozenset("0123456789+-*/(). ")
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
# Integer results beyond this many bits are refused: `9**9**9` would keep tau2's eval busy for hours.
MAX_INT_BITS = 10_000


def _arithmetic(node: ast.expr) -> int | float:
    # int and float themselves: a bool constant (an int subclass) is no number here
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and type(node.value) is not bool:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int) \
                and right > 0 and max(left.bit_length(), 1) * right > MAX_INT_BITS:
            raise ValueError("result too large")
        value = _BINARY[type(node.op)](left, right)
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise ValueError("result too large")
        return value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_arithmetic(node.operand))
    raise TypeError(f"unsupported expression element: {type(node).__name__}")


def calculate(expression: Any) -> str:
    """τ's ``calculate`` semantics — the allowed characters, Python arithmetic, the result rounded to
    two places as text — by walking the parsed expression instead of evaluating it."""
    if not isinstance(expression, str):
        raise TypeError(f"'{type(expression).__name__}' object is not iterable")
    if not all(char in _CALC_CHARS for char in expression):
        raise ValueError("Invalid characters in expression")
    # Python's eval, which tau2's calculate calls, skips leading spaces and tabs; compile does not.
    tree = ast.parse(expression.lstrip(" \t"), "<string>", mode="eval")
    return str(round(float(_arithmetic(tree.body)), 2))
