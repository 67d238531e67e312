"""Built-in toolsets: small, pure, deterministic tools that rebuild identically in every process."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from typing import Any, Literal

# Fixed tables, so every process and every run gives the same answers.
CAPITALS = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo",
    "Canada": "Ottawa", "Australia": "Canberra", "Brazil": "Brasilia", "Egypt": "Cairo", "Kenya": "Nairobi",
    "Norway": "Oslo", "Peru": "Lima", "Chile": "Santiago", "India": "New Delhi", "Mexico": "Mexico City",
    "Poland": "Warsaw", "Portugal": "Lisbon", "Sweden": "Stockholm", "Turkey": "Ankara", "Vietnam": "Hanoi",
}
WEATHER = {
    "Paris": (18, "cloudy"), "Berlin": (15, "rainy"), "Rome": (24, "sunny"), "Madrid": (27, "sunny"),
    "Tokyo": (21, "humid"), "Ottawa": (9, "snowy"), "Canberra": (12, "windy"), "Brasilia": (29, "sunny"),
    "Cairo": (33, "sunny"), "Nairobi": (22, "cloudy"), "Oslo": (6, "rainy"), "Lima": (19, "foggy"),
    "Santiago": (16, "clear"), "New Delhi": (35, "hazy"), "Mexico City": (20, "cloudy"), "Warsaw": (11, "rainy"),
    "Lisbon": (23, "sunny"), "Stockholm": (7, "cloudy"), "Ankara": (17, "clear"), "Hanoi": (30, "humid"),
}
#: Units per metre / per gram / per litre.
LENGTH = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254, "ft": 0.3048, "mi": 1609.344}
MASS = {"g": 1.0, "kg": 1000.0, "lb": 453.59237, "oz": 28.349523125}
VOLUME = {"ml": 0.001, "l": 1.0, "gal": 3.785411784}
#: Fixed exchange rates in euros per unit.
RATES = {"EUR": 1.0, "USD": 0.9, "GBP": 1.15, "JPY": 0.006, "CHF": 1.05}


def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def subtract(a: float, b: float) -> float:
    """Subtract b from a.

    Args:
        a: The number to subtract from.
        b: The number to subtract.
    """
    return a - b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def divide(a: float, b: float) -> float:
    """Divide a by b.

    Args:
        a: The dividend.
        b: The divisor (not zero).
    """
    if b == 0:
        raise ValueError("division by zero")
    return a / b


def sqrt(x: float) -> float:
    """The square root of a non-negative number.

    Args:
        x: The number.
    """
    if x < 0:
        raise ValueError("square root of a negative number")
    return math.sqrt(x)


def get_capital(country: str) -> str:
    """The capital city of a country.

    Args:
        country: The country's English name, e.g. "France".
    """
    for name, capital in CAPITALS.items():
        if name.lower() == country.strip().lower():
            return capital
    raise ValueError(f"unknown country {country!r}")


def get_weather(city: str) -> dict[str, Any]:
    """Today's weather in a city: temperature in Celsius and conditions.

    Args:
        city: The city's English name, e.g. "Paris".
    """
    for name, (temp, cond) in WEATHER.items():
        if name.lower() == city.strip().lower():
            return {"city": name, "temperature_c": temp, "conditions": cond}
    raise ValueError(f"no weather data for {city!r}")


def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a length, mass or volume between units (mm, cm, m, km, in, ft, mi, g, kg, lb, oz, ml, l, gal).

    Args:
        value: The amount to convert.
        from_unit: The unit of the amount.
        to_unit: The unit to convert to.
    """
    for table in (LENGTH, MASS, VOLUME):
        if from_unit in table and to_unit in table:
            return round(value * table[from_unit] / table[to_unit], 6)
    raise ValueError(f"cannot convert {from_unit!r} to {to_unit!r}")


def convert_currency(amount: float, from_currency: Literal["EUR", "USD", "GBP", "JPY", "CHF"],
                     to_currency: Literal["EUR", "USD", "GBP", "JPY", "CHF"]) -> float:
    """Convert money between currencies at today's fixed rates.

    Args:
        amount: The amount of money.
        from_currency: The currency of the amount.
        to_currency: The currency to convert to.
    """
    return round(amount * RATES[from_currency] / RATES[to_currency], 2)


def days_between(start: str, end: str) -> int:
    """The number of days from one ISO date (YYYY-MM-DD) to another.

    Args:
        start: The first date, e.g. "2024-01-31".
        end: The second date.
    """
    return (_dt.date.fromisoformat(end) - _dt.date.fromisoformat(start)).days


def count_letter(text: str, letter: str) -> int:
    """How many times a letter occurs in a text (case-insensitive).

    Args:
        text: The text to search.
        letter: One letter.
    """
    if len(letter) != 1:
        raise ValueError("letter must be a single character")
    return text.lower().count(letter.lower())


CALCULATOR: tuple[Callable[..., Any], ...] = (add, subtract, multiply, divide, sqrt)
UTILITIES: tuple[Callable[..., Any], ...] = (
    get_capital, get_weather, convert_units, convert_currency, days_between, count_letter, add, multiply)


def calculator() -> list[Callable[..., Any]]:
    """The arithmetic toolset."""
    return list(CALCULATOR)


def utilities() -> list[Callable[..., Any]]:
    """Lookups, conversions, dates, text and arithmetic: for tasks that make the model choose among tools."""
    return list(UTILITIES)


def notes(task: Any = None, seed: int | None = None) -> list[Callable[..., Any]]:
    """A per-episode scratchpad (a fresh one each time the factory runs): the pattern for stateful toolsets."""
    store: dict[str, str] = {}

    def remember(key: str, value: str) -> str:
        """Save a note under a key (overwrites an older note).

        Args:
            key: The note's name.
            value: The text to keep.
        """
        store[key] = value
        return f"saved {key!r}"

    def recall(key: str) -> str:
        """Read a note saved earlier in this episode.

        Args:
            key: The note's name.
        """
        if key not in store:
            raise KeyError(f"no note named {key!r}; saved: {', '.join(sorted(store)) or 'none'}")
        return store[key]

    return [remember, recall]
