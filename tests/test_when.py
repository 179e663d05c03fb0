"""Relative dates read from when they were said (issue 50): a memory read back later carries the date "yesterday"
stood for, in recall search results, the context recalled before a reply and what recall search indexes."""

from datetime import date

from pagemind.agent.memory import Event, Passage
from pagemind.text.when import anchored, meaning

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
