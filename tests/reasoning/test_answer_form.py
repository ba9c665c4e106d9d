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
