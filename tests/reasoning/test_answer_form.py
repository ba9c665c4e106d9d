"""Reading the form of an answer from its question, and comparing the years the evidence gives."""

from __future__ import annotations

import pytest

from reasonloop.reasoning.answer_form import AnswerForm, answer_form, compare_years, year_of


@pytest.mark.parametrize(
    ("question", "options"),
    [
        ("Who was born earlier, Emma Bull or Virginia Woolf?", ("Emma Bull", "Virginia Woolf")),
        ("Which novelist, J. G. Farrell or Louis Aragon, wrote of colonial rule?", ("J. G. Farrell", "Louis Aragon")),
        ("Which Karakoram mountain is higher: Distaghil Sar or The Crown", ("Distaghil Sar", "Crown")),
        ("Which dog is a giant breed, the  Leonberger or the Basset Hound?", ("Leonberger", "Basset Hound")),
        # no punctuation around the options: the capitalised runs beside "or"
        ("Who was a more acclaimed guitarist Stephen Christian or Joe Gooch?", ("Stephen Christian", "Joe Gooch")),
        ("Who was born first Mahbub ul Haq or Ibn Arabi?", ("Mahbub ul Haq", "Ibn Arabi")),
        ("Is Gasherbrum II or Nuptse closest to Everest?", ("Gasherbrum II", "Nuptse")),
        ("Is the Marsilea or the Brabejum the larger genus?", ("Marsilea", "Brabejum")),
        (
            "Which battle occurred earlier--the Battle of Peleliu or the Battle of Belleau Wood?",
            ("Battle of Peleliu", "Battle of Belleau Wood"),
        ),
        ("In which genus are there more species, Lavatera or Oplismenus?", ("Lavatera", "Oplismenus")),
        # lower-case options: the words beside "or"
        ("Is the bowler a left-hand or right-hand batsman?", ("left-hand", "right-hand")),
    ],
)
def test_choice_questions_name_their_options(question: str, options: tuple[str, str]) -> None:
    assert answer_form(question) == AnswerForm("choice", options)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Are Ranger Rick and Tennis both sports magazines?", "yes_no"),
        ("Were Gregory La Cava and Mike Judge both actors? ", "yes_no"),
        ("Does the plan cost ten euros or more?", "yes_no"),  # "more" is no option
        ("What do people wear during Oranjegekte or to celebrate Koningsdag?", "span"),
        ("When was the product launched?", "span"),
        ("How many people live in Lyon?", "span"),
        ("How does the cache stay fresh?", "open"),
        ("为什么天空是蓝色的？", "open"),
        ("故宫始建于哪一年？", "span"),
    ],
)
def test_other_forms(question: str, kind: str) -> None:
    assert answer_form(question).kind == kind


def test_year_of_reads_birth_and_death() -> None:
    lead = "Adeline Virginia Woolf (25 January 1882 – 28 March 1941) was an English writer."
    assert year_of(lead) == 1882
    assert year_of(lead, died=True) == 1941
    assert year_of("Emma Bull (born December 13, 1954) is an American writer.", died=True) is None
    assert year_of("No date here.") is None


def test_compare_years_follows_the_question() -> None:
    dated = {
        "Emma Bull": "Emma Bull (born December 13, 1954) is an American writer.",
        "Virginia Woolf": "Adeline Virginia Woolf (25 January 1882 – 28 March 1941) was an English writer.",
    }
    assert compare_years("Who was born earlier, Emma Bull or Virginia Woolf?", dated) == (
        "Virginia Woolf",
        {"Emma Bull": 1954, "Virginia Woolf": 1882},
    )
    assert compare_years("Who is younger, Emma Bull or Virginia Woolf?", dated)[0] == "Emma Bull"  # type: ignore[index]
    # a death year is missing, a question that compares no dates: the model decides
    assert compare_years("Who died first, Emma Bull or Virginia Woolf?", dated) is None
    assert compare_years("Who wrote more novels, Emma Bull or Virginia Woolf?", dated) is None


def test_compare_years_needs_two_different_years() -> None:
    same = {"A": "A is a 1990 film.", "B": "B is a 1990 film."}
    assert compare_years("Which film came out first, A or B?", same) is None


def test_odd_choices_are_not_taken_for_two_options() -> None:
    assert answer_form("Is A or B or C better?").kind == "yes_no"  # three options: not a choice of two
    assert answer_form("Is Paris or London bigger or smaller?").kind == "yes_no"
    # a comma before "or" is not part of the option
    assert answer_form("Who was born first, Emma Bull, or Virginia Woolf?").options == ("Emma Bull", "Virginia Woolf")


def test_long_runs_of_whitespace_are_read_in_linear_time() -> None:
    import time

    started = time.perf_counter()
    form = answer_form("Which is it, A" + " \t" * 20_000 + "or B?")
    # a quadratic pattern took seconds here; the bound is loose on purpose (not a timing test)
    assert time.perf_counter() - started < 2.0
    assert form.options == ("A", "B")


@pytest.mark.parametrize(
    "question",
    [
        "Who was the first to climb it, Emma Bull or Virginia Woolf?",  # "first" without a date verb
        "Whose last album came out earlier, Emma Bull or Virginia Woolf?",  # later and earlier both
    ],
)
def test_questions_that_do_not_simply_compare_dates_are_left_to_the_model(question) -> None:
    dated = {"Emma Bull": "Emma Bull (born 1954).", "Virginia Woolf": "Virginia Woolf (1882 – 1941)."}
    assert compare_years(question, dated) is None


def test_a_death_year_is_read_only_from_a_range() -> None:
    assert year_of("X (born 1954) won the prize in 1980.", died=True) is None
    assert year_of("X (12 May 1901 – 3 June 1970) won in 1930.", died=True) == 1970


def test_no_year_for_any_option_compares_nothing() -> None:
    assert compare_years("Who was born first, X or Y?", {}) is None
