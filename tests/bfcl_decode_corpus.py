"""A generated corpus of raw BFCL steps (the ``result[turn][step]`` items of a result file) for
differential tests of the handlers' decoders (:mod:`bfcl_handler_reference`).

Every handler family's own format, written for the same call groups (:data:`GROUPS`: several calls
per step, zero-argument calls, nested dict/list arguments, unicode, ints, floats, negative and
large numbers, booleans and null, an empty dict argument, a dict-of-dicts argument, an empty
string, strings with quotes, backslashes, newlines and ``;``, a dotted name):

* function calling: ``[{name: json_args}]`` and ``[{name: dict_args}]`` (OpenAI, Claude, Mistral,
  Nova, Arch, Phi-FC, Granite-3, Gemini-FC), Cohere's ``tool_name/parameters``, the
  ``name/arguments`` objects of Mining and DM-Cito;
* Python-call text (the stock prompting decoder), bare (Gorilla wraps it in ``[…]``), in
  Gemini's ```` ```tool_code```` fence, Phi's ```` ```json````/```` ```python```` fence, Nemotron's
  ``<TOOLCALL>``, MiniCPM's ``<|tool_call_start|>`` block;
* JSON text: xLAM/Salesforce (array, object, ``;``-separated objects), Hammer (array, fenced,
  ``{"tool_calls": …}``), BitAgent, Falcon's ``<tool_call>…</tool_call>``, the Qwen-FC family's
  ``<tool_call>\\n…\\n</tool_call>`` (Qwen-FC, Granite-4, Nanbeige-FC, Pelican-VL-FC), Granite's
  ``<function_call>``, GLM's ``name\\nargs``, Llama 3.1's ``<|python_tag|>`` and ``;`` split or
  evaluated literal, ThinkAgent's ``<think>…</think>[…]``;
* FunctionGemma's ``<start_function_call>call:name{key:<escape>value<escape>}<end_function_call>``;

then hand-written Python-call oddities (:data:`PY_SPECIAL`: arithmetic, unary operators, bare
names, nested calls with and without keywords, positional arguments, dotted names, subscripts,
lambdas, sets, tuples, f-strings, ``**`` unpacking, comparisons), expressions the eval guard must
refuse (:data:`UNSAFE_PY_CALLS`, :data:`UNSAFE_LLAMA`), each family's malformed variants, wrong
types (int, None, dict where a list is expected, lists of strings), empty values, whitespace and
prose. Deterministic: no randomness; duplicates are dropped keeping the first.
"""

from __future__ import annotations

import json
from typing import Any

Call = tuple[str, dict[str, Any]]

CD: Call = ("cd", {"folder": "documents"})
LS: Call = ("ls", {})
LS_A: Call = ("ls", {"a": True})
MKDIR: Call = ("mkdir", {"dir_name": "temp"})
MV: Call = ("mv", {"source": "final_report.pdf", "destination": "temp"})
TOUCH: Call = ("touch", {"file_name": "notes.txt"})
ECHO: Call = ("echo", {"content": 'He said "hi"\nit\'s in C:\\temp\\new', "file_name": "log.txt"})
TWEET: Call = ("post_tweet", {"content": "Café ☕ naïve 日本語 🚀", "tags": ["#fun", "#ünïcode"], "mentions": []})
STOCK: Call = ("get_stock_info", {"symbol": "AAPL"})
ORDER: Call = ("place_order", {"order_type": "Buy", "symbol": "NVDA", "price": 220.5, "amount": 100})
NUMBERS: Call = ("calculate", {"a": 0, "b": -7, "c": 3.25, "d": -0.001, "e": 12345678901234567890, "f": 1e21})
BUDGET: Call = ("set_budget_limit", {"access_token": "ABCD1234", "budget_limit": -1000.0})
NULLS: Call = ("add_contact", {"user_name": None, "verbose": False, "force": True})
NESTED: Call = ("update_settings", {"settings": {"display": {"theme": "dark", "sizes": [1, 2, {"x": None}]},
                                                 "enabled": False}})
EMPTY_DICT: Call = ("set_options", {"options": {}})
DICT_OF_DICTS: Call = ("configure", {"profile": {"home": {"city": "Paris"}}})
EMPTY_STR: Call = ("create_ticket", {"title": "", "priority": 3})
DOTTED: Call = ("file_system.cd", {"folder": "docs"})
SEMICOLON: Call = ("send_message", {"receiver_id": "USR002", "message": "It's 5 o'clock; see you"})
LIST_OF_DICTS: Call = ("book_flight", {"access_token": "t0k", "passengers": [{"name": "Ann", "age": 30}],
                                       "insurance": None})

GROUPS: list[list[Call]] = [
    [CD], [LS], [CD, LS_A], [MKDIR, MV, TOUCH], [ECHO], [TWEET], [STOCK, ORDER], [NUMBERS], [BUDGET],
    [NULLS], [NESTED], [EMPTY_DICT], [DICT_OF_DICTS], [EMPTY_STR], [DOTTED], [SEMICOLON], [LIST_OF_DICTS],
]


# --- renderers: one call group in one family's format -------------------------------------------


def py_call(call: Call) -> str:
    name, args = call
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def _xlam(call: Call, args_key: str = "arguments") -> dict[str, Any]:
    return {"name": call[0], args_key: call[1]}


def _gemma_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"<escape>{value}<escape>"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in sorted(value.items())) + "}"
    return str(value)


def _gemma_call(call: Call) -> str:
    return f"<start_function_call>call:{call[0]}{_gemma_value(call[1])}<end_function_call>"


def python_wrappers(calls: list[str]) -> list[str]:
    """Python-call text as each prompting family writes it."""
    bare = ", ".join(calls)
    listed = f"[{bare}]"
    lines = "\n".join(calls)
    return [
        listed,
        bare,  # the stock decoder adds the brackets; Gorilla always does
        f"```tool_code\n{listed}\n```",  # Gemini
        f"```json\n{listed}\n```",  # Phi
        f"```python\n{listed}\n```",
        f"<TOOLCALL>{listed}</TOOLCALL>",  # Nemotron
        f"<|thought_start|>\nI will call the tools.\n<|thought_end|>\n<|tool_call_start|>\n```python\n"
        f"{lines}\n```\n<|tool_call_end|>\nDone.",  # MiniCPM
    ]


def render(group: list[Call]) -> list[Any]:
    """The call group in every family's format."""
    xlam = [_xlam(c) for c in group]
    items: list[Any] = [
        [{n: json.dumps(a)} for n, a in group],  # function calling, JSON-text arguments
        [{n: a} for n, a in group],  # function calling, dict arguments (Gemini)
        dict(group),  # one dict for all calls (not a list)
        [{"tool_name": n, "parameters": a} for n, a in group],  # Cohere
        xlam,  # Mining, DM-Cito
        json.dumps(xlam),  # xLAM, BitAgent, Hammer
        json.dumps(xlam, ensure_ascii=False, indent=2),
        "; ".join(json.dumps(x) for x in xlam),  # xLAM's ;-separated objects
        json.dumps({"tool_calls": xlam}),  # Hammer
        "```\n" + json.dumps(xlam) + "\n```",  # Hammer fenced
        "```json\n" + json.dumps(xlam) + "\n```",
        "<tool_call>" + json.dumps(xlam) + "</tool_call>",  # Falcon
        "<tool_call>\n```json\n" + json.dumps(xlam) + "\n```\n</tool_call>",
        "\n".join(f"<tool_call>\n{json.dumps(x)}\n</tool_call>" for x in xlam),  # Qwen-FC family
        "<think>\nThe user asks for it.\n</think>\n\n" + "\n".join(f"<tool_call>\n{json.dumps(x)}\n</tool_call>" for x in xlam),
        "".join(f"<function_call> {json.dumps(x)}" for x in xlam),  # Granite
        "\n".join(f"{n}\n{json.dumps(a)}" for n, a in group),  # GLM
        "<|python_tag|>" + "; ".join(json.dumps(_xlam(c, "parameters")) for c in group),  # Llama 3.1
        json.dumps([_xlam(c, "parameters") for c in group]),  # Llama 3.1, evaluated
        repr([_xlam(c, "parameters") for c in group]),  # Llama 3.1, a Python literal
        "<think>I should call the tools.</think>" + json.dumps(xlam),  # ThinkAgent
        "<think>I should call the tools.</think>" + repr(xlam),
        "".join(_gemma_call(c) for c in group),  # FunctionGemma
    ]
    if len(group) == 1:
        items += [json.dumps(xlam[0]), json.dumps(_xlam(group[0], "parameters")),
                  "<|python_tag|>" + json.dumps(_xlam(group[0], "parameters"))]
    return items + python_wrappers([py_call(c) for c in group])


# --- Python-call oddities -----------------------------------------------------------------------

PY_SPECIAL: list[str] = [
    "sum_values(a=1+2, b=-3, c=2*3.5)",
    "compute(x=2**8, y=7%3, z=10//4, w=1/4, v=5-8)",
    "shift(n=1<<4, m=256>>2, k=6&3, j=6|1, i=6^3)",
    "concat(s='ab'+'cd', t='ab'*3, u=[1]+[2])",
    "signs(a=+3, b=not True, c=~1, d=--3, e=-(-2), f=-2.5)",
    "signs(a=+3)", "signs(b=not True)", "signs(c=~1)", "signs(d=--3)", "signs(e=-(2))", "signs(f=-2.5)",
    "negate(x=-y)",
    "compute(a=1+cd())",
    "compute(a=1/0)",
    "cd(folder=documents)",
    "toggle(flag=true, value=null, other=None, on=True)",
    "f(x=g(1))",
    "f(x=g())",
    "f(x=g(a=1, b='two'))",
    "f(x=g(a=h(b=2)))",
    "f(x=g(a={}))",
    "f(x=[g(a=1), g(b=2)])",
    "cd('documents')",
    "mv('a.txt', destination='b')",
    "os.path.join(a='x', b='y')",
    "GorillaFileSystem.cd(folder='docs')",
    "set_options(options={})",
    "configure(profile={'home': {'city': 'Paris'}})",
    "configure(profile={'home': {}, 'work': {}})",
    "configure(profile={'home': {'city': 'Paris'}, 'zip': 75001})",
    "store(items=(1, 2, 3))",
    "store(items={1, 2})",
    "store(items=[1, [2, [3, []]]], empty=[], blank='')",
    "pick(x=a[0])",
    "pick(x=a.b)",
    "pick(x=lambda: 1)",
    "pick(x=...)",
    "fmt(s=f'{x}')",
    "unpack(**{'a': 1})",
    "unpack(*args)",
    "cmp(x=1 < 2)",
    "logic(x=True and False)",
    "big(n=10**30, f=1e308, i=0x1F, o=0o17, b=0b101, u=1_000_000, c=1j)",
    "uni(s='naïve ☕ 日本語', e='\\u00e9')",
    "esc(s='line1\\nline2', q=\"it's\", d='say \"hi\"', b='C:\\\\temp')",
    "ls()",
    "ls",
    "cd(folder='a'); ls()",
    "cd(folder='a')\nls()",
    "[cd(folder='a')], [ls()]",
    "cd(folder='a',)",
    "cd(folder='a'",
    "cd(folder='a')) ",
    "post_tweet(content='Hello, world! (again)', tags=['#a', '#b'], mentions=['@bob'])",
    "get_stock_info(symbol='AAPL'), get_stock_info(symbol='GOOG'), get_stock_info(symbol='MSFT')",
]

# Arguments the stock decoder would evaluate (``ast.BinOp``) and the guard must refuse.
UNSAFE_PY_CALLS: list[str] = [
    "compute(a=1+len('ab'))",
    "compute(a=1+__import__('os').getpid())",
    "compute(a=2**10**10)",
    "compute(a='x'*10**12)",
    "compute(a=[0]*10**9+[])",
    "compute(a=(lambda: 1)()+1)",
    "compute(a=[i for i in range(3)]+[1])",
    "compute(a=1+print.__name__)",
    "compute(a=1+__debug__)",
    "compute(a=-len('x')+0)",
]

# Text Llama 3.1's decoder evaluates (no ';'), which the guard must refuse.
UNSAFE_LLAMA: list[str] = [
    '[{"name": "cd", "parameters": {"folder": print("x")}}]',
    '[{"name": __import__("os").getcwd(), "parameters": {}}]',
    '{"name": "ls", "parameters": {}}["name"]',
    '[x for x in [{"name": "ls", "parameters": {}}]]',
    '"a" * 10**10',
    '(lambda: {"name": "ls", "parameters": {}})()',
    '{"name": "ls", "parameters": dict(a=1)}',
    '[{"name": "ls", "parameters": {}}] + [().__class__]',
]


# --- malformed variants, wrong types, empties, prose --------------------------------------------

_J = json.dumps

WRONG_TYPES: list[Any] = [
    None, 0, 1, -1, 3.5, True, False, "", " ", "\n", "\t \n ", "[]", "{}", "null", "None", "0",
    [], {}, [[]], [{}], [None], [1, 2], ["cd(folder='documents')"], [["cd", {"folder": "documents"}]],
    {"cd": None}, {"cd": "{\"folder\": \"documents\"}"}, [{"cd": {"folder": "documents"}}, "ls()"],
]

MALFORMED_FC: list[Any] = [
    [{"cd": '{"folder": "documents"'}],
    [{"cd": "{'folder': 'documents'}"}],
    [{"cd": ""}], [{"cd": "null"}], [{"cd": "[1, 2]"}], [{"cd": '"documents"'}], [{"cd": "{}"}],
    [{"cd": 5}], [{"cd": None}], [{"cd": ["documents"]}], [{"cd": True}],
    [{"cd": {"folder": "documents"}}, {"ls": "{}"}],
    [{"cd": '{"folder": "documents"}', "ls": "{}"}],
    [{"function": {"name": "cd", "arguments": '{"folder": "documents"}'}}],
    [{"name": "cd", "arguments": {"folder": "documents"}}],
    [{"name": "cd", "arguments": "{}"}],
    [{"cd": '{"folder": "documents", "folder": "temp"}'}],
    [{"": "{}"}], [{"cd ; rm": "{}"}], [{"cd": '{"folder": NaN}'}], [{"cd": '{"n": 1e400}'}],
    [{"type": "function", "id": "call_1", "function": {"name": "ls", "arguments": "{}"}}],
]

MALFORMED_COHERE: list[Any] = [
    [{"tool_name": "cd"}], [{"tool_name": "cd", "parameters": '{"folder": "documents"}'}],
    [{"parameters": {}}], [{"tool_name": "ls", "parameters": {}}], [{"tool_name": None, "parameters": {"a": 1}}],
    {"tool_name": "cd", "parameters": {"folder": "documents"}}, "tool_name",
    [{"tool_name": "cd", "parameters": None}], [{"tool_name": "cd", "parameters": []}],
]

MALFORMED_XLAM_OBJECTS: list[Any] = [
    [{"name": "cd"}], [{"arguments": {"a": 1}}], [{"name": "cd", "arguments": '{"folder": "documents"}'}],
    [{"name": "cd", "arguments": None}], ["cd"], [{"name": None, "arguments": {}}],
    [{"name": "cd", "arguments": {"folder": "documents"}}, 7, None],
    {"name": "cd", "arguments": {"folder": "documents"}},
    [{"name": "ls", "arguments": {}, "extra": 1}], [{"name": "cd", "arguments": []}],
]

MALFORMED_JSON_TEXT: list[str] = [
    '[{"name": "cd", "arguments": {"folder": "documents"}},]',
    "[{'name': 'cd', 'arguments': {'folder': 'documents'}}]",
    '{"name": "cd", "arguments": {"folder": "documents"}}\n{"name": "ls", "arguments": {}}',
    '{"name": "cd", "arguments": {"folder": "documents"}};',
    '{"name": "cd", "arguments": {"folder": "documents"}} ; {"name": "ls", "arguments": {}} ; ',
    '{"name": "cd", "arguments": "{\\"folder\\": \\"documents\\"}"}',
    '{"name": "cd"}', '{"arguments": {"folder": "documents"}}',
    '{"tool_calls": {"name": "cd", "arguments": {}}}', '{"tool_calls": null}', '{"tool_calls": []}',
    '{"tool_calls": "cd"}', '{"calls": [{"name": "cd", "arguments": {}}]}',
    '[{"name": "cd", "arguments": {"folder": "documents"}}',
    "42", '"cd"', "true", "[1, 2]", '[["cd", {}]]', '["ls"]',
    '[{"name": "mv", "arguments": {"source": "a;b", "destination": "c"}}]',
    '{"name": "mv", "arguments": {"source": "a;b"}}; {"name": "ls", "arguments": {}}',
    '[{"name": "ls", "arguments": {"a": NaN, "b": Infinity}}]',
    '[{"name": "ls", "arguments": {"a": True, "b": None}}]',
    '```json[{"name": "ls", "arguments": {}}]```',
    'Sure! [{"name": "ls", "arguments": {}}]',
    '[{"name": "ls", "arguments": {}}] Done.',
    '{"name": "echo", "arguments": {"content": "\\u00e9\\ud83d\\ude80\\n\\"q\\""}}',
]

MALFORMED_TAGS: list[str] = [
    # Falcon
    "<tool_call>", "<tool_call></tool_call>", '<tool_call>{"name": "ls", "arguments": {}}',
    '<tool_call>{"name": "cd"}</tool_call>', '<tool_call>{"name": "cd", "arguments": []}</tool_call>',
    '<tool_call>[{"name": "ls", "arguments": {}}]</tool_call><tool_call>[{"name": "cd", "arguments": {}}]</tool_call>',
    "<tool_call>```[{\"name\": \"ls\", \"arguments\": {}}]```</tool_call>",
    # Qwen-FC family
    '<tool_call>{"name": "ls", "arguments": {}}</tool_call>',
    "<tool_call>\nnot json\n</tool_call>",
    '<tool_call>\n[{"name": "ls", "arguments": {}}]\n</tool_call>',
    '<tool_call>\n{"name": "cd"}\n</tool_call>',
    '<tool_call>\n{"name": "cd", "arguments": "{\\"folder\\": \\"documents\\"}"}\n</tool_call>',
    '<tool_call>\n"ls"\n</tool_call>', "<tool_call>\n\n</tool_call>",
    '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>\n<tool_call>\nbroken\n</tool_call>',
    '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call> and some prose afterwards',
    '<tool_call>\n{"name": "cd", "arguments": {"folder": "documents"}}\n',
    # Granite
    '<function_call> {"name": "no_function", "arguments": {}}', "<function_call> not json",
    "<function_call> [1, 2]", '<function_call> {"arguments": {"a": 1}}', "<function_call>",
    '<function_call> {"name": "ls"}<function_call> {"name": "cd", "arguments": {"folder": "x"}}',
    '<function_call> {"name": "  cd  ", "arguments": {"folder": "x"}}',
    # Nemotron
    "<TOOLCALL></TOOLCALL>", "<TOOLCALL>I will list the files.</TOOLCALL>",
    "I will do it. <TOOLCALL>[cd(folder='documents')]</TOOLCALL> Done.",
    "<TOOLCALL>[ls()]</TOOLCALL><TOOLCALL>[cd(folder='documents')]</TOOLCALL>",
    "<TOOLCALL>[cd(folder='documents')]", "<toolcall>[ls()]</toolcall>",
    # GLM
    "cd\n{\"folder\": \"documents\"}", "cd\nnot json", "cd\n", "\n{}", "cd", "ls\n{}\nextra line",
    "cd\n{\"folder\": \"documents\"}\nls\n{}",
    # Llama 3.1
    '<|python_tag|>{"name": "cd", "parameters": {"folder": "documents"}};',
    '<|python_tag|>{"name": "cd", "arguments": {"folder": "documents"}}',
    '{"name": "cd", "parameters": {"folder": "a;b"}}',
    '{"name": "ls", "parameters": {"a": true}}', '{"name": "ls", "parameters": {"a": True}}',
    '[{"name": "ls", "parameters": {}}, {"name": "cd", "parameters": {"folder": "documents"}}]',
    '{"name": "ls"}', '<|python_tag|>', '<|python_tag|>ls()',
    # MiniCPM
    "<|tool_call_start|>\ncd(folder='documents')\nls()\n<|tool_call_end|>",
    "<|tool_call_start|>\n```python\nx = 1\n```\n<|tool_call_end|>",
    "<|tool_call_start|>\n```python\n```\n<|tool_call_end|>",
    "<|tool_call_start|>\n```python\ncd('documents')\n```\n<|tool_call_end|>",
    "<|tool_call_start|>\n```python\ncd(folder=1+2)\n```\n<|tool_call_end|>",
    "<|tool_call_start|>\n```python\ncd(folder='documents')\n```",
    "<|thought_start|>\nthinking only\n<|thought_end|>\nI have done it.",
    "<|tool_call_start|>\n```python\nset_options(options={})\n```\n<|tool_call_end|>",
    "<|tool_call_start|>\n```python\nf(x=g(a=1))\n```\n<|tool_call_end|>",
    # ThinkAgent
    "<think>plan</think>[]", "<think>plan</think>", "<think>plan</think>not json", "[]</think>[]",
    "<think>plan</think>{\"name\": \"ls\", \"arguments\": {}}",
    # FunctionGemma
    "<start_function_call>call:ls{}<end_function_call>", "<start_function_call>call:ls<end_function_call>",
    "<start_function_call>call:cd{folder:documents}<end_function_call>",
    "<start_function_call>call:cd{<escape>folder<escape>:<escape>documents<escape>}<end_function_call>",
    "<start_function_call>call:echo{content:a,b:c}<end_function_call>",
    "<start_function_call>call:echo{content:<escape>abc}<end_function_call>",
    "<start_function_call>cd{folder:<escape>x<escape>}<end_function_call>",
    "Sure. <start_function_call>call:ls{}<end_function_call> Done.",
    "<start_function_call>call:ls{}", "call:cd{folder:<escape>documents<escape>}",
    "<start_function_call>call:{a:1}<end_function_call>",
    "<start_function_call>call:cd{folder:{a:1}<end_function_call>",
    "<start_function_call>call:cd[1,2]<end_function_call>",
    "<start_function_call> call:cd {folder: x , n: 2 }<end_function_call>",
    "<start_function_call>call:calc{a:-7,b:3.25,c:1e21,d:null,e:true,f:false,g:[]}<end_function_call>",
    "<start_function_call>call:ls{a:1}}}]]<end_function_call>",
    "<start_function_call>call:ls{:1,b:}<end_function_call>",
    # Phi / Gemini fences
    "```json\n[cd(folder='documents')]```", "```python[ls()]```", "```tool_code\n[ls()]```",
    "```tool_code\nls()\n```\n```tool_code\ncd(folder='documents')\n```",
]

WHITESPACE_AND_QUOTING: list[str] = [
    " [cd(folder='documents')] ", "\n\n[cd(folder='documents')]\n", "`[cd(folder='documents')]`",
    "'[cd(folder=\"documents\")]'", "\"[cd(folder='documents')]\"", "[ cd ( folder = 'documents' ) ]",
    "[cd(folder='documents')]\n\n", "\t[ls()]\t", "[[cd(folder='documents')]]", "[]", "[ ]", "[,]",
]

PROSE: list[str] = [
    "I have changed into the documents directory.",
    "Sure! I'll create the folder now.",
    "The file has been moved (see details).",
    "Done: the tweet was posted [id 42].",
    "I cannot do that; the file does not exist.",
    "yes", "42", "Let me check(the files)",
    "<think>The user wants to list files.</think>",
    "<think>Plan</think>I listed the files.",
    "```\nNo calls needed.\n```",
    "Here are the results:\n- a.txt\n- b.txt",
    "{'answer': 'I do not know'}",
    "<answer>I do not know</answer>",
    "Thank you!", "日本語で答えます。",
    "I'll call cd(folder='documents') next.",
    "The stock price of AAPL is $227.16.",
    "None of the functions can be used.",
]


def corpus() -> list[Any]:
    """Every raw step of the corpus, in a fixed order, without duplicates."""
    items: list[Any] = []
    for group in GROUPS:
        items += render(group)
    for text in PY_SPECIAL + UNSAFE_PY_CALLS:  # the fences are covered by the groups
        listed, bare, _, _, _, toolcall, minicpm = python_wrappers([text])
        items += [listed, bare, toolcall, minicpm]
    items += UNSAFE_LLAMA
    items += WRONG_TYPES + MALFORMED_FC + MALFORMED_COHERE + MALFORMED_XLAM_OBJECTS
    items += MALFORMED_JSON_TEXT + MALFORMED_TAGS + WHITESPACE_AND_QUOTING + PROSE
    seen: set[str] = set()
    unique = []
    for item in items:
        key = f"{type(item).__name__}:{item!r}"
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique
