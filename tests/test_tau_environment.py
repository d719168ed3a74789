"""τ environments on copy-on-write databases: isolated per rollout, and equal call for call to
environments on a freshly validated database (the reference they replace); tau2's hash put together
from the rows calls changed equals tau2's own."""

from __future__ import annotations

import copy
import importlib
import json

import pytest
from conftest import SAMPLE_OR_WHOLE, swept

from prefix_audit.benchmarks.tau.domain.copy_on_write import AccessMode, CopyOnWriteTable
from prefix_audit.benchmarks.tau.domain.environment import LiveEnvironment, _fingerprint, quiet_serializer


class Record:
    """A mutable stand-in for a pydantic record (deep-copied like one)."""

    def __init__(self, value):
        self.value = value


def _table():
    template = {"a": Record([1]), "b": Record([2])}
    mode = AccessMode()
    return template, mode, CopyOnWriteTable(template, mode)


@pytest.mark.parametrize("reach", [
    lambda t: t["a"],
    lambda t: t.get("a"),
    lambda t: dict(t.items())["a"],
    lambda t: list(t.values())[0],
    lambda t: t.setdefault("a"),
    lambda t: t.pop("a"),
    lambda t: t.popitem()[1] if list(t)[-1] == "a" else t.pop("a"),
    lambda t: t.copy()["a"],
    lambda t: dict(t)["a"],
    lambda t: {**t}["a"],
    lambda t: (t | {})["a"],
    lambda t: ({} | t)["a"],
    lambda t: copy.copy(t)["a"],
])
def test_a_writing_call_never_reaches_a_template_record(reach):
    template, _, table = _table()
    record = reach(table)
    assert record is not template["a"] and record.value == [1]
    record.value.append(9)
    assert template["a"].value == [1]


def test_a_record_is_copied_once_and_what_a_call_stores_is_kept_as_is():
    template, _, table = _table()
    assert table["a"] is table["a"] is table.get("a")
    new = Record([3])
    table["c"] = new
    assert table["c"] is new and "c" not in template
    table.update(d=Record([4]))
    assert table["d"] is table["d"]
    del table["b"]
    assert "b" not in table and "b" in template


def test_reading_calls_see_the_template_records_and_copy_nothing():
    template, mode, table = _table()
    with mode.reading():
        assert table["a"] is template["a"] and list(table.values()) == list(template.values())
    assert mode.copying
    assert table["a"] is not template["a"]  # after the read, a writing call gets its own copy
    with mode.reading():
        assert table["a"] is not template["a"]  # and from then on everyone sees that copy


def test_copy_on_write_database_serialises_like_the_validated_one(tau):
    for bench in (tau["tau_airline"], tau["tau_retail"]):  # telecom copies its databases outright
        backend = bench.backend
        db = backend.copy_on_write_db(AccessMode())
        assert type(db) is type(backend.template_db)
        assert db.model_dump_json() == backend.validated_db().model_dump_json()
        assert backend.initial_db_hash == backend.validated_environment().get_db_hash()


def test_concurrent_rollouts_do_not_see_each_others_writes(tau):
    bench = tau["tau_airline"]
    backend = bench.backend
    before, during = LiveEnvironment(backend), LiveEnvironment(backend)
    assert during.call("cancel_reservation", {"reservation_id": "EHGLP3"})[0]
    after = LiveEnvironment(backend)
    for env in (before, after):
        accepted, text = env.call("get_reservation_details", {"reservation_id": "EHGLP3"})
        assert accepted and json.loads(text)["status"] is None
        assert env.db_hash() == backend.initial_db_hash and env.db_fingerprint() == backend.initial_fingerprint
    accepted, text = during.call("get_reservation_details", {"reservation_id": "EHGLP3"})
    assert json.loads(text)["status"] == "cancelled"
    assert during.db_hash() != backend.initial_db_hash
    assert backend.template_db.model_dump_json() == backend.validated_db().model_dump_json()


# Reads that walk whole tables (flight search, user search, product listing), run after the writes.
_SWEEPS = {
    "tau_airline": [("search_onestop_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}),
                    ("search_direct_flight", {"origin": "JFK", "destination": "ORD", "date": "2024-05-17"}),
                    ("get_flight_status", {"flight_number": "HAT001", "date": "2024-05-16"})],
    "tau_retail": [("find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}),
                   ("list_all_product_types", {})],
}


@pytest.mark.slow
@SAMPLE_OR_WHOLE
@pytest.mark.parametrize("dataset", ["tau_airline", "tau_retail"])
def test_copy_on_write_environments_answer_every_call_like_validated_ones(tau, dataset, whole):
    """Every base task's gold calls (every eighth task's in the default run), then the same calls again
    (most writes now fail), then table sweeps — on a copy-on-write environment and on a freshly
    validated one: the same acceptance, the same result text after every call, and the same database
    JSON at the end (field and insertion order included, so the same tau2 hash)."""
    bench = tau[dataset]
    backend = bench.backend
    for task_id in swept(bench.task_ids(), whole, 8):
        gold = [(a.name, dict(a.arguments)) for a in bench.task(task_id).gold]
        live, reference = LiveEnvironment(backend), backend.validated_environment()
        for name, arguments in gold + gold + _SWEEPS[dataset]:
            assert live.call(name, arguments) == backend.call(reference, name, arguments), (task_id, name)
        assert live.db_fingerprint() == _fingerprint(reference.tools.db), task_id
        with quiet_serializer():
            assert live.db_hash() == reference.get_db_hash(), task_id  # tau2's own hash of the validated one
    assert backend.template_db.model_dump_json() == backend.validated_db().model_dump_json()


def _tau2_hash(environment):
    with quiet_serializer():
        return environment.get_db_hash()


def test_the_hash_put_together_from_changed_rows_is_tau2s(tau):
    """tau2's hash from the template's rows and those calls changed equals tau2's own ``get_db_hash``
    after a write, a booking (a new record) and a removed record; a record reached and left as it was
    changes no row."""
    bench = tau["tau_airline"]
    backend = bench.backend
    assert backend._template_rows is not None  # the rows give tau2's own hash of the template
    booking = next(a for t in bench.task_ids() for a in bench.task(t).gold if a.name == "book_reservation")
    live, reference = LiveEnvironment(backend), backend.validated_environment()
    hashes = set()
    for name, arguments in [("cancel_reservation", {"reservation_id": "EHGLP3"}),
                            (booking.name, dict(booking.arguments))]:
        assert live.call(name, arguments) == (True, backend.call(reference, name, arguments)[1])
        assert live.db_hash() == _tau2_hash(reference) not in hashes | {backend.initial_db_hash}
        hashes.add(live.db_hash())
    for db in (live._environment.tools.db, reference.tools.db):
        del db.reservations["EHGLP3"]
    assert live.db_hash() == _tau2_hash(reference) not in hashes
    untouched = backend.copy_on_write_db(AccessMode())
    assert untouched.reservations["EHGLP3"] is not backend.template_db.reservations["EHGLP3"]  # reached: a copy
    assert backend.db_hash_of(untouched) == backend.initial_db_hash
    assert backend.template_db.model_dump_json() == backend.validated_db().model_dump_json()


@pytest.mark.parametrize("dataset", ["tau_airline", "tau_retail"])
def test_tau2s_evaluators_get_fresh_environments_that_hash_as_tau2s(tau, dataset):
    """What tau2's evaluators are handed: a fresh environment on its own copy of the database, which
    answers reads that walk whole tables as a validated one does and hashes as tau2 hashes that, fresh,
    after those reads and after a write, and leaves the template as it was."""
    bench = tau[dataset]
    backend = bench.backend
    module = importlib.import_module(f"tau2.domains.{backend.domain.name}.environment")
    write = next(a for t in bench.task_ids() for a in bench.task(t).gold
                 if backend.tools[a.name].may_write and backend.call(backend.validated_environment(), a.name,
                                                                     dict(a.arguments))[0])
    environments = [backend.evaluator_environment(module.get_environment) for _ in range(2)]
    reference = backend.validated_environment()
    assert [_tau2_hash(e) for e in environments] == [_tau2_hash(reference)] * 2 == [backend.initial_db_hash] * 2
    for environment in (environments[0], reference):
        environment.make_tool_call(write.name, **copy.deepcopy(dict(write.arguments)))
    assert _tau2_hash(environments[0]) == _tau2_hash(reference) != backend.initial_db_hash
    fresh = backend.validated_environment()
    for name, arguments in _SWEEPS[dataset]:
        assert environments[1].make_tool_call(name, **arguments) == fresh.make_tool_call(name, **arguments)
    assert _tau2_hash(environments[1]) == backend.initial_db_hash  # the other copy saw reads only
    assert backend.template_db.model_dump_json() == backend.validated_db().model_dump_json()
