"""The dates that relative words stand for, read from when they were said.

"I lost my job yesterday", said on 20 January 2023, means 19 January 2023; read back weeks later from a memory (a
recall search, the context recalled before a reply, an eviction's summary), "yesterday" means nothing unless the
date is written beside it. Memory systems that answer temporal questions well resolve such words at the time they
store or show a message (Zep/Graphiti's bi-temporal facts; LoCoMo's temporal category is mostly such questions);
here the words are kept as said, with the date they stand for after them: "yesterday (19 January 2023)",
"next month (February 2023)", "last week (the week before 20 January 2023)".
"""

from __future__ import annotations

import re
from datetime import date, timedelta

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_COUNT = r"(\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
# not "the day before yesterday", "my last year of college", "the last week of March", nor a date already given
_RELATIVE = re.compile(
    r"(?<!\bthe )(?<!\bmy )(?<!\bour )(?<!\bhis )(?<!\bher )(?<!\btheir )(?<!\bday before )(?<!\bday after )"
    r"\b(?:(?P<day>yesterday|today|tonight|tomorrow|last night)"
    r"|(?P<which>last|next|this) (?P<span>week|weekend|month|year)"
    r"|(?P<count>" + _COUNT[1:-1] + r") (?P<unit>day|week|month|year)s? ago"
    r"|(?P<wday_which>last|next|this) (?P<wday>" + "|".join(WEEKDAYS) + r"))\b(?! of\b)(?!\s*\()",
    re.IGNORECASE)


def day_of(time: str) -> date | None:
    """The day of an ISO time (``2023-01-20 16:04:00``), None for another form."""
    try:
        return date(int(time[:4]), int(time[5:7]), int(time[8:10]))
    except ValueError:
        return None


def spoken(day: date) -> str:
    """A day as people write it: ``19 January 2023``."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _month(day: date, step: int) -> str:
    index = day.year * 12 + day.month - 1 + step
    if index // 12 < 1:
        raise OverflowError("before the calendar")
    return f"{MONTHS[index % 12]} {index // 12}"


def _year(year: int) -> str:
    if year < 1:
        raise OverflowError("before the calendar")
    return str(year)


def meaning(words: str, said: date) -> str | None:
    """The date a relative expression (one :data:`_RELATIVE` match) stands for, said on ``said`` (None where it
    is not one, or falls outside the calendar)."""
    m = _RELATIVE.fullmatch(words.strip())
    return None if m is None else _meaning(m, said)


def _meaning(m: re.Match[str], said: date) -> str | None:
    """The date the matched expression stands for; None where it falls outside the calendar."""
    try:
        return _resolved(m, said)
    except (OverflowError, ValueError):
        return None


def _resolved(m: re.Match[str], said: date) -> str:
    if m["day"]:
        shift = {"yesterday": -1, "last night": -1, "today": 0, "tonight": 0, "tomorrow": 1}[m["day"].lower()]
        return spoken(said + timedelta(days=shift))
    if m["span"]:
        which, span = m["which"].lower(), m["span"].lower()
        if span == "month":
            return _month(said, {"last": -1, "this": 0, "next": 1}[which])
        if span == "year":
            return _year(said.year + {"last": -1, "this": 0, "next": 1}[which])
        return f"the {span} {({'last': 'before', 'this': 'of', 'next': 'after'})[which]} {spoken(said)}"
    if m["unit"]:
        n, unit = _COUNTS.get(m["count"].lower()) or int(m["count"]), m["unit"].lower()
        if unit == "day":
            return spoken(said - timedelta(days=n))
        if unit == "week":
            return f"around {spoken(said - timedelta(weeks=n))}"
        if unit == "month":
            return _month(said, -n)
        return _year(said.year - n)
    target = WEEKDAYS.index(m["wday"].lower())
    which = m["wday_which"].lower()
    if which == "last":  # the latest such day before
        return spoken(said - timedelta(days=(said.weekday() - target) % 7 or 7))
    monday = said - timedelta(days=said.weekday())  # "this Monday": of this week; "next Monday": of the next
    return spoken(monday + timedelta(days=target + (7 if which == "next" else 0)))


def anchored(text: str, time: str) -> str:
    """``text`` with the date each relative expression stands for after it, read from ``time`` (when it was said):
    "I lost my job yesterday." said 2023-01-20 -> "I lost my job yesterday (19 January 2023)."; unchanged when
    ``time`` is not an ISO time or nothing in ``text`` is relative."""
    said = day_of(time)
    if said is None:
        return text

    def dated(m: re.Match[str]) -> str:
        what = _meaning(m, said)  # the match itself: not matched again
        return m.group() if what is None else f"{m.group()} ({what})"

    return _RELATIVE.sub(dated, text)


# --- dates written in a text, and the dates a message stands for ---------------------------------------------
# (year, month, day): a day; (year, month, 0): a month; (year, 0, 0): a year
Day = tuple[int, int, int]
_MONTH = r"(?P<{0}>Sept|" + "|".join(f"{m[:3]}(?:{m[3:]})?" if len(m) > 3 else m for m in MONTHS) + r")\.?"
_WRITTEN = re.compile(
    r"\b(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})(?!\d)"
    r"|\b(?P<dd>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH.format("dm") + r",?\s+(?P<dy>\d{4})\b"
    r"|\b" + _MONTH.format("md") + r"\s+(?P<mdd>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<mdy>\d{4})\b"
    r"|\b" + _MONTH.format("mo") + r",?\s+(?P<my>\d{4})\b"
    r"|\b(?P<y>(?:19|20)\d{2})\b(?!-\d)",
    re.IGNORECASE)


def _month_number(name: str) -> int:
    return next(i for i, m in enumerate(MONTHS, 1) if m.lower().startswith(name.lower().rstrip(".")[:3]))


def written_dates(text: str) -> frozenset[Day]:
    """The dates ``text`` writes out, each as precise as written: "21 January 2022", "May 3, 2023" and
    "2023-05-03" a day, "December 2022" a month, "2018" a year (a year 1900-2099 standing alone)."""
    found: set[Day] = set()
    for m in _WRITTEN.finditer(text):
        try:
            if m["iy"]:
                found.add(_checked(int(m["iy"]), int(m["im"]), int(m["id"])))
            elif m["dm"]:
                found.add(_checked(int(m["dy"]), _month_number(m["dm"]), int(m["dd"])))
            elif m["md"]:
                found.add(_checked(int(m["mdy"]), _month_number(m["md"]), int(m["mdd"])))
            elif m["mo"]:
                found.add((int(m["my"]), _month_number(m["mo"]), 0))
            else:
                found.add((int(m["y"]), 0, 0))
        except ValueError:  # "31 February 2023": no date
            continue
    return frozenset(found)


def _checked(year: int, month: int, day: int) -> Day:
    date(year, month, day)  # ValueError when there is no such day
    return year, month, day


def dates_of(text: str, time: str) -> frozenset[Day]:
    """The dates a message said at ``time`` stands for: the day it was said and those its relative words stand
    for ("last Saturday", said 25 May 2023: 20 May 2023; "five years ago": 2018; "next month": June 2023) — a
    week's words ("last week", "around 3 weeks ago") as each of the days they may mean."""
    said = day_of(time)
    if said is None:
        return frozenset()
    found: set[Day] = {(said.year, said.month, said.day)}
    for m in _RELATIVE.finditer(text):
        what = _meaning(m, said)
        if what is None:
            continue
        days = written_dates(what)
        if days and what.startswith(("the week", "around")):
            try:
                days = _week(what, date(*max(days)))
            except (OverflowError, ValueError):  # the calendar's ends
                continue
        found |= days
    return frozenset(found)


def _week(what: str, day: date) -> frozenset[Day]:
    """The days a week's words may mean, ``day`` the one they are read from: "the week before X" the seven days
    before X and the calendar week before X's; "the week after X" the seven after and the next calendar week; "the
    week of X" X's calendar week; "around X" X ± 3 days."""
    monday = day - timedelta(days=day.weekday())
    which = what.split()[2] if what.startswith("the week") else "around"
    first, last = {"before": (min(monday - timedelta(days=7), day - timedelta(days=7)), day - timedelta(days=1)),
                   "after": (day + timedelta(days=1), max(monday + timedelta(days=13), day + timedelta(days=7))),
                   "of": (monday, monday + timedelta(days=6))}.get(which, (day - timedelta(days=3),
                                                                          day + timedelta(days=3)))
    return frozenset((d.year, d.month, d.day) for d in (first + timedelta(days=k)
                                                        for k in range((last - first).days + 1)))


def same_date(asked: Day, told: Day) -> bool:
    """Whether a date written in an answer (``asked``) is one a message stands for (``told``): the same date as
    precisely written, or a day or month within a month or year the message names ("20 February 2023" for "next
    month", said in January 2023) — never a year or month for a day (every message of 2023 was said in 2023)."""
    if asked == told:
        return True
    year, month, day = told
    if day or asked[0] != year:
        return False
    return month == 0 or (asked[1] == month and asked[2] != 0)


# a question about time gone by: "How many weeks ago did I adopt my cat?", "How many days after my dentist
# appointment did I fly to Lisbon?", "How long has she had her friends?"
ELAPSED = re.compile(r"\bhow\s+(?:many\s+(?:days|weeks|months|years)|long)\b|"
                     r"\b(?:days|weeks|months|years)\s+(?:ago|after|before|since|between|later|earlier)\b",
                     re.IGNORECASE)


def elapsed(time: str, now: str) -> str | None:
    """How long before ``now`` an ISO ``time`` was, in whole days and, from a week, in the weeks, months or years a
    question may count in: "3 days before now", "28 days (4 weeks) before now", "400 days (about 13 months, about 1
    year) before now"; "today" for the same day; None where either is not an ISO time or ``time`` is
    later. A small model subtracts dates badly (benchmarks (z): "How many weeks ago did I adopt my cat?" answered
    1 week for 4); each recalled line carries its own count instead."""
    then, today = day_of(time), day_of(now)
    if then is None or today is None or then > today:
        return None
    days = (today - then).days
    if days == 0:
        return "today"
    if days < 7:
        return f"{days} day{'s' if days > 1 else ''} before now"
    weeks = round(days / 7)
    counts = [f"{'' if days % 7 == 0 else 'about '}{weeks} week{'s' if weeks > 1 else ''}"] if days < 70 else []
    if days >= 45:
        months = round(days / 30.44)
        counts.append(f"about {months} month{'s' if months > 1 else ''}")
    if days >= 330:
        years = round(days / 365.25)
        counts.append(f"about {years} year{'s' if years > 1 else ''}")
    return f"{days} days ({', '.join(counts)}) before now"


__all__ = ["ELAPSED", "MONTHS", "WEEKDAYS", "Day", "anchored", "dates_of", "day_of", "elapsed", "meaning", "same_date",
           "spoken", "written_dates"]
