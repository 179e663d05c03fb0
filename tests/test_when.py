"""Relative dates read from when they were said (issue 50): a memory read back later carries the date "yesterday"
stood for, in recall search results, the context recalled before a reply and what recall search indexes."""

from datetime import date

from pagemind.agent.memory import Event, Passage
from pagemind.text.when import ELAPSED, anchored, elapsed, meaning

SAID = "2023-01-20 16:04:00"  # a Friday


def test_each_kind_of_relative_date_is_followed_by_the_date_it_stands_for():
    assert anchored("I lost my job as a banker yesterday.", SAID) == \
        "I lost my job as a banker yesterday (19 January 2023)."
    assert anchored("We perform at a festival next month!", SAID) == \
        "We perform at a festival next month (February 2023)!"
    assert anchored("Last week I hiked; two days ago it rained.", SAID) == \
        "Last week (the week before 20 January 2023) I hiked; two days ago (18 January 2023) it rained."
    said = date(2023, 1, 20)
    assert meaning("next Friday", said) == "27 January 2023" and meaning("this Friday", said) == "20 January 2023"
    assert meaning("last Friday", said) == "13 January 2023" and meaning("last Monday", said) == "16 January 2023"
    assert meaning("last month", date(2023, 1, 3)) == "December 2022" and meaning("3 months ago", said) == \
        "October 2022"
    assert meaning("a few weeks ago", said) == "around 30 December 2022" and meaning("last year", said) == "2022"
    assert meaning("tonight", said) == "20 January 2023" and meaning("tomorrow", said) == "21 January 2023"
    assert meaning("the other day", said) is None
    assert meaning("this Monday", said) == "16 January 2023" and meaning("next Monday", said) == "23 January 2023"


def test_what_only_looks_relative_a_date_given_and_the_calendars_ends_are_left_alone():
    for text in ("the day before yesterday", "my last year of college", "the last week of March",
                 "The last month was hard.", "the last Friday of the month"):
        assert anchored(text, SAID) == text
    assert anchored("He left yesterday (19 January 2023).", "2023-02-10 09:00:00") == \
        "He left yesterday (19 January 2023)."  # read back and repeated later: not dated twice
    assert anchored("yesterday", "0001-01-01 00:00:00") == "yesterday" and meaning("tomorrow", date(9999, 12, 31)) \
        is None and meaning("3 months ago", date(1, 2, 1)) is None


def test_text_without_a_relative_date_or_a_time_is_left_as_it_is():
    assert anchored("On 19 January 2023 I lost my job.", SAID) == "On 19 January 2023 I lost my job."
    assert anchored("I lost my job yesterday.", "sometime") == "I lost my job yesterday."
    assert anchored("Yesterday's news", SAID) == "Yesterday (19 January 2023)'s news"  # the word, wherever it stands


def test_a_recalled_message_and_passage_show_the_date_their_words_stand_for():
    message = Event("user_message", {"message": "Gina: I launched an ad campaign for my store yesterday."}, SAID, 3)
    assert message.describe() == \
        "[2023-01-20 16:04] user: Gina: I launched an ad campaign for my store yesterday (19 January 2023)."
    fact = Passage(1, "Jon's group performs at a festival next month.", SAID)
    assert fact.describe() == "[2023-01-20 16:04] Jon's group performs at a festival next month (February 2023)."
    saved = Passage(2, "The user starts a new job next month.", SAID, source="letta")
    assert saved.describe().endswith("next month (February 2023).")
    book = Passage(3, "Tomorrow we sail for the cape.", SAID, source="ledger.txt")  # loaded: its words are its own
    assert book.describe() == "[2023-01-20 16:04] Tomorrow we sail for the cape."


def test_time_gone_by_is_counted_in_days_and_in_the_weeks_months_or_years_a_question_may_ask_for():
    now = "2023-06-17 10:00:00"
    assert elapsed("2023-05-20 11:00:00", now) == "28 days (4 weeks) before now"
    assert elapsed("2023-06-05 09:00", now) == "12 days (about 2 weeks) before now" and elapsed("2023-06-13", now) == \
        "4 days before now" and elapsed("2023-06-10", now) == "7 days (1 week) before now" and \
        elapsed("2023-06-16 23:59", now) == \
        "1 day before now" and elapsed("2023-06-17 08:00", now) == "today"
    assert elapsed("2023-03-01 10:00", now) == "108 days (about 4 months) before now"
    assert elapsed("2022-05-01 10:00", now) == "412 days (about 14 months, about 1 year) before now"
    assert elapsed("2023-07-01 10:00", now) is None and elapsed("sometime", now) is None  # later, or not a time
    for asked in ("How many weeks ago did I adopt my cat Miso?", "How many days after my dentist appointment did I "
                  "fly to Lisbon?", "How long has Caroline had her friends?", "Was it two years before the move?"):
        assert ELAPSED.search(asked), asked
    for asked in ("When did Caroline go to the support group?", "Which city do I live in now?",
                  "How many bikes do I own?"):
        assert not ELAPSED.search(asked), asked


def test_dates_written_out_are_read_as_precisely_as_written():
    from pagemind.text.when import written_dates

    assert written_dates("Maria had dinner with John on May 3, 2023.") == {(2023, 5, 3)}
    assert written_dates("21 January 2022, or the 3rd of May, 2023") == {(2022, 1, 21), (2023, 5, 3)}
    assert written_dates("2023-08-09 / Feb. 20, 2023") == {(2023, 8, 9), (2023, 2, 20)}
    assert written_dates("in December 2022") == {(2022, 12, 0)} and written_dates("since 2018") == {(2018, 0, 0)}
    assert written_dates("31 February 2023") == set() and written_dates("code 4417, 2019-20, page 12") == set()
    assert written_dates("Sept. 20, 2023, logged 2023-05-03T16:04:00") == {(2023, 9, 20), (2023, 5, 3)}


def test_a_message_stands_for_the_day_it_was_said_and_the_dates_of_its_relative_words():
    from pagemind.text.when import dates_of, same_date

    assert dates_of("I ran a charity race last Saturday", "2023-05-25 10:00:00") == {(2023, 5, 25), (2023, 5, 20)}
    assert (2018, 0, 0) in dates_of("I started surfing five years ago", "2023-07-16 10:00:00")
    assert (2023, 8, 0) in dates_of("my game there next month!", "2023-07-16 10:00:00")
    # "last week" said Friday 21 January: the seven days before and the calendar week before (from Monday 10th)
    week = dates_of("I won my first tournament last week", "2022-01-21 10:00:00")
    assert {(2022, 1, 10), (2022, 1, 14), (2022, 1, 20)} <= week and (2022, 1, 9) not in week
    assert {(2023, 5, 26), (2023, 6, 4)} <= dates_of("next week", "2023-05-25 10:00:00")  # a Thursday
    assert dates_of("anything", "yesterday") == set()
    # the calendar's ends: the day it was said, no error
    assert dates_of("I start training next week.", "9999-12-31 10:00:00") == {(9999, 12, 31)}
    assert dates_of("last week", "0999-06-10 10:00:00") == {(999, 6, 10)}
    # a day within a month or year the message names; never a month or year for the day it was said
    assert same_date((2023, 2, 20), (2023, 2, 0)) and same_date((2018, 0, 0), (2018, 0, 0))
    assert same_date((2023, 5, 0), (2023, 0, 0)) and not same_date((2023, 0, 0), (2023, 5, 20))
    assert not same_date((2023, 5, 0), (2023, 5, 20)) and not same_date((2023, 3, 20), (2023, 2, 0))


def test_a_date_worked_out_from_a_message_cites_the_sentence_it_came_from():
    """A reply from recall gives a date its memories do not write: "20 May 2023" for "When did Melanie run a charity
    race?", from "I ran a charity race for mental health last Saturday" said 25 May 2023 — no word shared, and so
    no citation (LoCoMo's temporal questions: 0.475 of their evidence cited, the same replies 0.775 now)."""
    from pagemind.agent.evidence import message_citation, support

    said = {seq: Event("user_message", {"message": text, "speaker": "Melanie"}, "2023-05-25 13:00:00", seq)
            for seq, text in ((4, "Melanie: Hey Caroline! I ran a charity race for mental health last Saturday. It was "
                                  "fun."), (9, "Melanie: I painted a lake sunrise. Caroline loved it."))}
    race, paint = message_citation(said[4]), message_citation(said[9])
    asked = "When did Melanie run a charity race?"
    [cited] = support([paint, race], "20 May 2023", messages=said, question=asked)
    assert cited.index == 4 and cited.quote == "I ran a charity race for mental health last Saturday."
    # the day both were said: the one about the question's subject, not its names ("Melanie")
    assert [c.index for c in support([paint, race], "25 May 2023", messages=said, question=asked)] == [4]
    assert support([paint, race], "20 May 2023", question=asked) == []  # no messages: words alone, as before
    assert support([race], "2021", messages=said, question=asked) == []  # a date the message does not stand for
