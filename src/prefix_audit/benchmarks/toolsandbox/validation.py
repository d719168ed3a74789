"""Registered argument validators, with ToolSandbox's published rules.

Phone numbers must parse with the ``phonenumbers`` library without a default region (so a national
number such as ``4155550100`` fails, as in ToolSandbox); timestamps must lie between 1980-01-01 and
2050-01-01 (catching second/millisecond mix-ups); latitudes lie in [-90, 90] and longitudes in
[-180, 180]. Each validator returns the message of the exception ToolSandbox raises, or None.
Values of the wrong type pass here: the declared JSON types report those.
"""

from __future__ import annotations

from typing import Any

import phonenumbers

# ToolSandbox's own constants, named "Jan 1 1980" and "Jan 1 2050" there; they are those midnights at
# UTC+1 (an hour before midnight UTC), kept as they are so the same values pass and fail.
TIMESTAMP_RANGE = (315529200.0, 2524604400.0)
LATITUDE_RANGE = (-90.0, 90.0)
LONGITUDE_RANGE = (-180.0, 180.0)


def phone_number(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        phonenumbers.parse(value)
    except phonenumbers.NumberParseException as exc:
        return f"NumberParseException: {exc}"
    return None


def _range(name: str, low: float, high: float):
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if value < low:
            return f"ValueError: Parameter '{name}' is smaller than its valid range minimum of {low}."
        if value > high:
            return f"ValueError: Parameter '{name}' is larger than its valid range maximum of {high}."
        return None

    return check


def timestamp(name: str):
    return _range(name, *TIMESTAMP_RANGE)


def latitude(name: str):
    return _range(name, *LATITUDE_RANGE)


def longitude(name: str):
    return _range(name, *LONGITUDE_RANGE)
