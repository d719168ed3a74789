"""Y of imported BFCL result files against bfcl-eval's own evaluation, entry for entry: on real
models' result files (``../shared/fixtures/real-logs/bfcl``) and on generated output with the
quirks real output has (malformed JSON, empty and text steps, parallel calls, missing and extra
turns, inference errors)."""

from __future__ import annotations

import functools
import json
import random
from collections import Counter
from pathlib import Path

import pytest
from bfcl_handler_reference import reference_decoder
from bfcl_reference import BfclReference
from conftest import RESOURCES, SHARED

from prefix_audit.benchmarks.bfcl import BfclBenchmark, import_result_file, load_data
from prefix_audit.benchmarks.bfcl.data import V3_ERA_PIN
from prefix_audit.benchmarks.bfcl.handlers import model_config
from prefix_audit.benchmarks.bfcl.reading import BfclReading
from prefix_audit.core.calls import parse_call_string
from prefix_audit.core.records import BadLine
from prefix_audit.replay.checker import replay

REAL = SHARED / "fixtures" / "real-logs" / "bfcl"


@pytest.fixture(scope="module")
def reference(bfcl):
    return BfclReference(bfcl)


@pytest.fixture(scope="module")
def releases(bfcl) -> BfclBenchmark:
    """The benchmark as ``import bfcl`` opens it: the pinned data and the v3 era's."""
    return BfclBenchmark(bfcl.data, releases={V3_ERA_PIN.version: functools.partial(load_data, RESOURCES,
                                                                                      V3_ERA_PIN)})


def _scored(bench, path: Path, data_release: str | None = None) -> list[tuple[dict, int | None, object]]:
    """(result line, our Y, episode) for every line of a result file read as ``import bfcl``
    reads it (the handler and the data release chosen); every line is an episode."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    located = list(import_result_file(path, reading=BfclReading(
        model_config(bench.data.root), {r: bench.data_of(r) for r in bench.releases()}, data_release)))
    assert not [item for item in located if isinstance(item, BadLine)]
    assert len(located) == len(lines)
    return [(obj, (ep := replay(item.rollout, bench)).Y, ep) for obj, item in zip(lines, located)]


def _bfcls_decoder(bfcl, episode):
    """BFCL's own decode_execute of the handler the import chose for the episode's file."""
    choice = episode.rollout.meta["bfcl_handler"]
    return reference_decoder(bfcl.data.root, choice["handler"], choice["is_fc"])


def _disagreements(bfcl, reference, path: Path) -> tuple[list, Counter]:
    wrong, outcomes = [], Counter()
    for obj, ours, ep in _scored(bfcl, path):
        theirs = reference.evaluate(bfcl.entry(obj["id"]), obj["result"], _bfcls_decoder(bfcl, ep))
        outcomes[theirs] += 1
        if ours != theirs:
            wrong.append((obj["id"], ours, theirs, ep.y_detail))
    return wrong, outcomes


REAL_FILES = sorted(REAL.glob("*_result.json")) if REAL.is_dir() else []
# bfcl-eval's own evaluation (the reference) runs on the pinned release's data and environment only.
ON_PINNED_DATA = [p for p in REAL_FILES if not p.name.startswith("xLAM")]


@pytest.mark.slow
@pytest.mark.skipif(not ON_PINNED_DATA, reason="../shared/fixtures/real-logs/bfcl is absent")
@pytest.mark.parametrize("path", ON_PINNED_DATA, ids=lambda p: p.name)
def test_real_result_files_agree_with_bfcl_entry_for_entry(bfcl, releases, reference, path):
    assert {ep.rollout.meta["bfcl_data"] for _, _, ep in _scored(releases, path)} == {bfcl.data.release}
    wrong, outcomes = _disagreements(bfcl, reference, path)
    assert not wrong
    assert outcomes[0] and outcomes[1]


@pytest.mark.slow
@pytest.mark.skipif(not REAL_FILES, reason="../shared/fixtures/real-logs/bfcl is absent")
@pytest.mark.parametrize("score_file", sorted(REAL.glob("*_score.json")) if REAL.is_dir() else [],
                         ids=lambda p: p.name)
def test_final_success_over_every_entry_equals_bfcls_score_file(releases, score_file):
    """Y against BFCL's own verdicts, on the data each file was made on. One entry may differ:
    BFCL's own evaluation of *_109 depends on the entries evaluated before it (post_tweet's shared
    default list of mentions, docs/benchmarks/bfcl.md)."""
    summary = json.loads(score_file.read_text().splitlines()[0])
    failed = {json.loads(line)["id"] for line in score_file.read_text().splitlines()[1:]}
    result = score_file.with_name(score_file.name.replace("_score.json", "_result.json"))
    scored = _scored(releases, result)
    assert len(scored) == summary["total_count"]
    differ = {obj["id"] for obj, y, _ in scored if y != int(obj["id"] not in failed)}
    assert differ <= {"multi_turn_base_109"}
    infra = [ep for _, _, ep in scored if ep.T is None]
    assert all(ep.Y == 0 and ep.rollout.task_id in failed for ep in infra)


@pytest.mark.slow
@pytest.mark.skipif(not (REAL / "xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_result.json").is_file(),
                    reason="../shared/fixtures/real-logs/bfcl is absent")
def test_a_v3_file_on_todays_data_is_scored_whole_and_says_where_the_data_differs(releases):
    """--bfcl-data 2026.3.23 on a v3-era file: the TradingBot entries that lost a turn since run
    more turns than their data (force-terminated, Y = 0, never a crash) and every entry whose
    recorded run the data contradicts is flagged data_version."""
    scored = _scored(releases, REAL / "xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_result.json",
                     data_release=releases.data.release)
    longer = [ep for obj, _, ep in scored if len(obj["result"]) > len(releases.entry(obj["id"]).question)]
    assert len(longer) == 11 and all(ep.Y == 0 and "force_terminated" in ep.y_detail for ep in longer)
    flagged = {ep.rollout.task_id for _, _, ep in scored
               if any(i.code == "data_version" for i in ep.rollout.recorded.issues)}
    assert {ep.rollout.task_id for ep in longer} <= flagged and len(flagged) >= 60


# --- generated output -----------------------------------------------------------------------


def _keyword_gold(bfcl) -> list[str]:
    """Entries whose ground truth uses keyword arguments only (function calling cannot carry
    positional ones)."""
    ids = []
    for task_id in bfcl.task_ids()[::9]:
        calls = [parse_call_string(c) for turn in bfcl.entry(task_id).ground_truth for c in turn]
        if all(not c.args for c in calls):
            ids.append(task_id)
    return ids


def _fc_step(calls) -> list[dict]:
    return [{c.name: json.dumps(c.kwargs)} for c in calls]


def _perturbed_function_calling(bfcl, task_id: str, rng: random.Random) -> object:
    """The entry's ground truth as function-calling output, with one quirk of real output."""
    turns = [[parse_call_string(c) for c in turn] for turn in bfcl.entry(task_id).ground_truth]
    quirk = rng.choice(["gold", "split", "bad_json", "bad_json_retry", "list_args", "empty_args", "text_step",
                        "empty_turn", "drop_turn", "extra_turn", "inference_error", "merged_keys", "wrong_value"])
    if quirk == "inference_error":
        return "Error during inference: Connection reset by peer"
    result = []
    for calls in turns:
        if quirk == "split":
            steps = [_fc_step([c]) for c in calls]
        else:
            steps = [_fc_step(calls)] if calls else []
        result.append([*steps, []])
    busy = [t for t, calls in enumerate(turns) if calls]
    t = rng.choice(busy)
    if quirk in ("bad_json", "bad_json_retry", "list_args", "empty_args"):
        # The last call of the busiest step: the calls before it in that step must not run either.
        t = max(busy, key=lambda b: len(turns[b]))
    step = result[t][0]
    (name, args), = step[-1].items()
    if quirk in ("bad_json", "bad_json_retry"):
        step[-1] = {name: args[:-1] or "{"}
        if quirk == "bad_json_retry":  # the model sends the broken call again, whole
            result[t].insert(1, [{name: args}])
    elif quirk == "list_args":
        step[-1] = {name: "[1, 2]"}
    elif quirk == "empty_args":
        step[-1] = {name: ""}
    elif quirk == "text_step":
        result[t].insert(0, "Let me look into that for you.")
    elif quirk == "empty_turn":
        result[t] = [[]]
    elif quirk == "drop_turn":
        result.pop()
    elif quirk == "extra_turn":
        result.append([[]])
    elif quirk == "merged_keys" and len(step) >= 2:
        result[t][0] = [{k: v for item in step for k, v in item.items()}]
    elif quirk == "wrong_value":
        (name, args), = step[0].items()
        kwargs = json.loads(args)
        for key, value in kwargs.items():
            if isinstance(value, str):
                kwargs[key] = value + "_zz"
                break
        step[0] = {name: json.dumps(kwargs)}
    return result


def _perturbed_prompting(bfcl, task_id: str, rng: random.Random) -> object:
    """The ground truth as prompting output (one string per step), with one quirk."""
    turns = [list(turn) for turn in bfcl.entry(task_id).ground_truth]
    quirk = rng.choice(["gold", "bare", "backticks", "prose", "broken_call", "non_call", "split", "positional"])
    result = []
    for calls in turns:
        if not calls:
            result.append(["I cannot do that with the tools I have."])
            continue
        if quirk == "split":
            steps = [f"[{c}]" for c in calls]
        elif quirk == "bare" and len(calls) == 1:
            steps = [calls[0]]
        elif quirk == "backticks":
            steps = ["```\n[" + ", ".join(calls) + "]\n```"]
        else:
            steps = ["[" + ", ".join(calls) + "]"]
        result.append([*steps, "Done."])
    busy = [t for t, calls in enumerate(turns) if calls]
    t = rng.choice(busy)
    if quirk == "prose":
        result[t][0] = "I will " + result[t][0]
    elif quirk == "broken_call":
        result[t][0] = result[t][0][:-2] + "]"
    elif quirk == "non_call":
        result[t][0] = result[t][0][:-1] + ", 42]"
    elif quirk == "positional":
        call = parse_call_string(turns[t][0])
        if call.kwargs:
            positional = f"{call.name}({', '.join(repr(v) for v in call.kwargs.values())})"
            result[t][0] = "[" + ", ".join([positional, *turns[t][1:]]) + "]"
    return result


@pytest.mark.parametrize("model, perturb, seed", [
    ("gpt-4o-2024-11-20-FC", _perturbed_function_calling, 11),  # a function-calling model of BFCL's config
    ("gpt-4o-2024-11-20", _perturbed_prompting, 12),  # its prompting twin
])
def test_generated_output_agrees_with_bfcl_entry_for_entry(bfcl, reference, tmp_path, model, perturb, seed):
    rng = random.Random(seed)
    ids = _keyword_gold(bfcl) if perturb is _perturbed_function_calling else bfcl.task_ids()[::9]
    path = tmp_path / "result" / model / "BFCL_v4_multi_turn_result.json"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({"id": i, "result": perturb(bfcl, i, rng)}) + "\n" for i in ids))
    wrong, outcomes = _disagreements(bfcl, reference, path)
    assert not wrong
    assert outcomes[0] >= 10 and outcomes[1] >= 10  # both verdicts are common, so agreement means something


def test_the_docs_example_score_file_is_bfcls_own_evaluation(bfcl, reference, tmp_path):
    """docs/examples holds a result file and BFCL's score file of it: each verdict there is what
    bfcl-eval's own evaluation gives (so the audit of the example can agree with it)."""
    from bfcl_logs import write_score_file
    from conftest import ROOT

    example = ROOT / "docs" / "examples" / "BFCL_v4_multi_turn_base_result.json"
    scored = _scored(bfcl, example)
    verdicts = {obj["id"]: reference.verdict(bfcl.entry(obj["id"]), obj["result"], _bfcls_decoder(bfcl, ep))
                for obj, _, ep in scored}
    failing = {i: kind for i, (valid, kind) in verdicts.items() if not valid}
    expected = write_score_file(tmp_path / "score.json", len(scored), failing)
    assert example.with_name("BFCL_v4_multi_turn_base_score.json").read_text() == expected.read_text()
