"""Offline stand-ins for the utilities ToolSandbox backs with libraries: units, holidays, distance.

* Units: a fixed table of common length, mass, volume, temperature, speed and time units with
  English names, plurals and abbreviations (ToolSandbox uses ``pint``, which knows far more).
* Holidays: the eleven US federal holidays by their statutory rule, without weekend observance
  shifts (ToolSandbox uses the ``holidays`` package).
* Distance: the haversine great-circle distance on a 6371.0088 km sphere (ToolSandbox uses
  geopy's geodesic distance; the two differ by up to about 0.5%).

Times are UTC throughout (ToolSandbox uses the machine's local time zone).
"""

from __future__ import annotations

import calendar
import math
from datetime import UTC, date, datetime

from .text import match_score, ratio


class UtilityError(ValueError):
    """A utility could not do what was asked; ``kind`` names the exception ToolSandbox raises."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# unit name → (dimension, factor to the base unit); temperatures are handled apart.
_UNITS: dict[str, tuple[str, float]] = {
    "meter": ("length", 1.0), "kilometer": ("length", 1000.0), "centimeter": ("length", 0.01),
    "millimeter": ("length", 0.001), "mile": ("length", 1609.344), "yard": ("length", 0.9144),
    "foot": ("length", 0.3048), "inch": ("length", 0.0254), "nautical_mile": ("length", 1852.0),
    "gram": ("mass", 0.001), "kilogram": ("mass", 1.0), "milligram": ("mass", 1e-6),
    "pound": ("mass", 0.45359237), "ounce": ("mass", 0.028349523125), "tonne": ("mass", 1000.0),
    "liter": ("volume", 1.0), "milliliter": ("volume", 0.001), "gallon": ("volume", 3.785411784),
    "quart": ("volume", 0.946352946), "pint": ("volume", 0.473176473), "cup": ("volume", 0.2365882365),
    "fluid_ounce": ("volume", 0.0295735295625),
    "meter_per_second": ("speed", 1.0), "kilometer_per_hour": ("speed", 1000.0 / 3600.0),
    "mile_per_hour": ("speed", 1609.344 / 3600.0), "knot": ("speed", 1852.0 / 3600.0),
    "second": ("time", 1.0), "minute": ("time", 60.0), "hour": ("time", 3600.0), "day": ("time", 86400.0),
    "week": ("time", 604800.0),
}
_TEMPERATURES = ("celsius", "fahrenheit", "kelvin")
_ALIASES = {
    "m": "meter", "metre": "meter", "km": "kilometer", "kilometre": "kilometer", "cm": "centimeter",
    "centimetre": "centimeter", "mm": "millimeter", "millimetre": "millimeter", "mi": "mile", "yd": "yard",
    "feet": "foot", "ft": "foot", "in": "inch", "inches": "inch", "nmi": "nautical_mile",
    "g": "gram", "kg": "kilogram", "mg": "milligram", "lb": "pound", "lbs": "pound", "oz": "ounce",
    "ton": "tonne", "metric_ton": "tonne", "l": "liter", "litre": "liter", "ml": "milliliter",
    "millilitre": "milliliter", "gal": "gallon", "qt": "quart", "pt": "pint", "fl_oz": "fluid_ounce",
    "m/s": "meter_per_second", "km/h": "kilometer_per_hour", "kph": "kilometer_per_hour", "kmh": "kilometer_per_hour",
    "mph": "mile_per_hour", "kn": "knot", "s": "second", "sec": "second", "min": "minute", "h": "hour",
    "hr": "hour", "c": "celsius", "degc": "celsius", "degree_celsius": "celsius", "centigrade": "celsius",
    "f": "fahrenheit", "degf": "fahrenheit", "degree_fahrenheit": "fahrenheit", "k": "kelvin",
}


def canonical_unit(name: str) -> str | None:
    """The table's name for a unit written in English (``'Miles'``, ``'km/h'``), or None."""
    key = "_".join(name.strip().casefold().replace("°", "deg").split())
    for candidate in (key, key.removesuffix("es"), key.removesuffix("s"), key.replace("s_per_", "_per_")):
        unit = _ALIASES.get(candidate, candidate)
        if unit in _UNITS or unit in _TEMPERATURES:
            return unit
    return None


def _to_kelvin(value: float, unit: str) -> float:
    return {"kelvin": value, "celsius": value + 273.15, "fahrenheit": (value - 32.0) * 5.0 / 9.0 + 273.15}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"kelvin": value, "celsius": value - 273.15, "fahrenheit": (value - 273.15) * 9.0 / 5.0 + 32.0}[unit]


def convert_units(amount: float, from_unit: str, to_unit: str) -> float:
    units = []
    for name in (from_unit, to_unit):
        unit = canonical_unit(name)
        if unit is None:
            raise UtilityError("UndefinedUnitError", f"'{name}' is not defined in the unit registry")
        units.append(unit)
    source, target = units
    if source in _TEMPERATURES or target in _TEMPERATURES:
        if not (source in _TEMPERATURES and target in _TEMPERATURES):
            raise UtilityError("DimensionalityError", f"Cannot convert from '{from_unit}' to '{to_unit}'")
        return _from_kelvin(_to_kelvin(amount, source), target)
    (dim_a, factor_a), (dim_b, factor_b) = _UNITS[source], _UNITS[target]
    if dim_a != dim_b:
        raise UtilityError("DimensionalityError",
                           f"Cannot convert from '{from_unit}' ({dim_a}) to '{to_unit}' ({dim_b})")
    return amount * factor_a / factor_b


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th given weekday (0 = Monday) of a month; n = -1 for the last one."""
    days = [d for d in range(1, calendar.monthrange(year, month)[1] + 1) if date(year, month, d).weekday() == weekday]
    return date(year, month, days[n if n < 0 else n - 1])


_MON, _THU = 0, 3
HOLIDAYS = {
    "New Year's Day": lambda y: date(y, 1, 1),
    "Martin Luther King Jr. Day": lambda y: _nth_weekday(y, 1, _MON, 3),
    "Washington's Birthday": lambda y: _nth_weekday(y, 2, _MON, 3),
    "Memorial Day": lambda y: _nth_weekday(y, 5, _MON, -1),
    "Juneteenth National Independence Day": lambda y: date(y, 6, 19),
    "Independence Day": lambda y: date(y, 7, 4),
    "Labor Day": lambda y: _nth_weekday(y, 9, _MON, 1),
    "Columbus Day": lambda y: _nth_weekday(y, 10, _MON, 2),
    "Veterans Day": lambda y: date(y, 11, 11),
    "Thanksgiving": lambda y: _nth_weekday(y, 11, _THU, 4),
    "Christmas Day": lambda y: date(y, 12, 25),
}


def holiday_timestamp(name: str, year: int) -> float | None:
    """Midnight UTC of the best-matching US holiday in ``year`` (match score above 90), or None.
    Ties (a query whose words all occur in several names) go to the closest whole name."""
    score, _, best = max((match_score(name, holiday), ratio(name, holiday), holiday) for holiday in HOLIDAYS)
    if score <= 90:
        return None
    day = HOLIDAYS[best](year)
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)


def haversine_km(lat0: float, lon0: float, lat1: float, lon1: float) -> float:
    p0, p1 = math.radians(lat0), math.radians(lat1)
    dp, dl = p1 - p0, math.radians(lon1 - lon0)
    h = math.sin(dp / 2) ** 2 + math.cos(p0) * math.cos(p1) * math.sin(dl / 2) ** 2
    return 2 * 6371.0088 * math.asin(min(1.0, math.sqrt(h)))
