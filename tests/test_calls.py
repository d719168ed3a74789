"""The call parser accepts only name(literal, ..., key=literal) and never evaluates anything."""

import pytest

from prefix_audit.benchmarks.bfcl.decoders import python_call_text
from prefix_audit.benchmarks.bfcl.result_entry import read_step
from prefix_audit.core.calls import MAX_CALL_CHARS, looks_like_calls, parse_call_string, structured_call


def test_plain_call_with_positional_and_keyword_literals():
    call = parse_call_string("sort('final_report.pdf', reverse=True, n=[1, 2.5, {'a': None}])")
    assert call.well_formed
    assert call.name == "sort"
    assert call.args == ("final_report.pdf",)
    assert call.kwargs == {"reverse": True, "n": [1, 2.5, {"a": None}]}


@pytest.mark.parametrize("text", [
    "__import__('os').system('touch CANARY')",
    "os.system('touch CANARY')",
    "cd(folder=__import__('os').getcwd())",
    "cd(folder=(lambda: 'x')())",
    "cd(folder=[c for c in 'abc'])",
    "cd(folder=some_name)",
    "cd(*['x'])",
    "cd(**{'folder': 'x'})",
    "cd(folder='a' + 'b')",
    "cd(folder=f'{1}')",
    "open('/etc/passwd').read()",
    "cd(folder='x'); ls()",
    "cd(folder='x', folder='y')",
    "",
    "cd(",
])
def test_anything_but_literal_calls_is_a_parse_error(text):
    call = parse_call_string(text)
    assert not call.well_formed
    assert call.parse_error


def test_oversized_call_text_is_rejected_without_parsing():
    call = parse_call_string("f(x='" + "a" * MAX_CALL_CHARS + "')")
    assert not call.well_formed and "exceeds" in call.parse_error


def test_deeply_nested_literal_is_a_parse_error_not_a_crash():
    call = parse_call_string("f(x=" + "[" * 5000 + "]" * 5000 + ")")
    assert not call.well_formed


def _prompting_calls(text: str):
    """Calls BFCL's prompting decoder reads in model text (None: it reads none)."""
    return list(read_step(text, "step", python_call_text).step.calls) or None


def test_prompting_text_tells_prose_from_calls():
    assert _prompting_calls("I have moved the file for you.") is None
    calls = _prompting_calls("[cd(folder='a'), ls(a=True)]")
    assert [c.name for c in calls] == ["cd", "ls"]
    assert _prompting_calls("[1, 2]") is None


@pytest.mark.parametrize("text, call", [
    ("[cd(folder='a')]", True), ("cd (folder='a')", True),
    # a name that is no Python name, as models leak their channel tokens into it, before its "("
    ("[cd<|channel|>commentary(folder='a'), ls(a=True)]", True), ("[" + "?" * 5_000 + "(x)]", True),
    ('{"name": "cd", "arguments": {}}', True), ('```{"tool_calls": [{"name": "cd"}]}```', True),
    ("<tool_call>\n{}\n</tool_call>", True), ("```tool_code\n[cd()]\n```", True),
    ("I moved the file.", False), ("[see the notes] (below)", False), ("[1, 2]", False), ("", False),
    ("Here is [the link](https://example.com)", False),
])
def test_text_that_looks_like_a_call_in_some_handlers_format(text, call):
    assert looks_like_calls(text) is call


@pytest.mark.parametrize("arguments, ok", [
    ({"folder": "x"}, True), ('{"folder": "x"}', True), ("", True), (None, True),
    ("{not json", False), ("[1, 2]", False), (3, False),
])
def test_structured_calls(arguments, ok):
    call = structured_call("cd", arguments)
    assert call.well_formed is ok
    assert call.structured


def test_an_empty_tool_name_is_a_call_of_an_unknown_tool_not_an_unreadable_one():
    """The benchmarks dispatch an empty name like any unknown one and answer with an error, which a
    log records: so replay runs it too (a schema failure), where a missing name cannot be run."""
    empty = structured_call("", '{"a": 1}', "c1")
    assert empty.well_formed and empty.name == "" and empty.kwargs == {"a": 1}
    assert not structured_call(None, "{}").well_formed
