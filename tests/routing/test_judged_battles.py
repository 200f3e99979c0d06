"""Judged battles in routing: the budget round-robin, the judged decision, ratings flagged ``battles: judged``."""

from __future__ import annotations

from routing.boards.judged import JudgedBattle, judged_ratings
from routing.decide.judged import TiedPair, battles_within, judged_decision


def test_the_budget_spreads_over_every_pair_and_a_shared_battle_is_judged_once():
    pairs = [
        TiedPair("specialty/domain/x", "m1", "m2", ("i1", "i2", "i3")),
        TiedPair("specialty/system/y", "m1", "m2", ("i1", "i2", "i3")),  # the same items one level up
        TiedPair("specialty/domain/x", "m2", "m3", ("i1", "i2", "i3")),
    ]
    everything = battles_within(pairs, None)
    assert len(everything) == 6 and len(set(everything)) == 6
    first = battles_within(pairs, 4)  # 2 calls a battle: two battles, one per distinct pair
    assert {(a, b) for a, b, _ in first} == {("m1", "m2"), ("m2", "m3")}
    assert battles_within(pairs, 8, judges=2) == first  # two judges: 4 calls a battle
    assert battles_within(pairs, 3) == battles_within(pairs, 2)[:1]


def route(*tied: str) -> dict:
    return {"tied_top": list(tied), "leader": tied[0], "decisive": False}


def wins(a: str, b: str, n: int, outcome: str = "a") -> list[JudgedBattle]:
    return [JudgedBattle(f"{a}{b}{i}", a, b, outcome) for i in range(n)]


def test_five_items_cannot_decide_among_three_tied_models_ten_can():
    five = wins("m1", "m2", 5) + wins("m1", "m3", 5)
    decision = judged_decision(route("m2", "m1", "m3"), five)
    # 5 of 5: mid-p 0.031 each, Holm over two comparisons 0.0625: still tied
    assert decision["leader"] == "m1" and decision["decisive"] is False
    assert [c["p_holm"] for c in decision["comparisons"]] == [0.0625, 0.0625]
    ten = wins("m1", "m2", 10) + wins("m1", "m3", 10)
    decided = judged_decision(route("m2", "m1", "m3"), ten)
    assert decided["decisive"] is True and decided["tied_top"] == ["m1"] and decided["battles"] == "judged"


def test_ties_and_an_even_record_stay_tied():
    battles = wins("m1", "m2", 6, "tie") + wins("m1", "m2", 3) + wins("m1", "m2", 3, "b")
    decision = judged_decision(route("m1", "m2"), battles)
    assert decision["decisive"] is False and decision["comparisons"][0]["ties"] == 6
    assert decision["win_rates"] == {"m1": 0.5, "m2": 0.5}


def test_judged_ratings_order_the_models_and_say_where_their_battles_come_from():
    battles = wins("m3", "m2", 8) + wins("m2", "m1", 8) + wins("m3", "m1", 8) + wins("m1", "m2", 2, "tie")
    ratings = judged_ratings(battles)
    assert ratings["battles"] == "judged" and ratings["n_battles"] == 26
    assert [m["model"] for m in ratings["models"]] == ["m3", "m2", "m1"]
    assert judged_ratings([])["models"] == []
