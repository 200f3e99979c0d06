"""routing.stats.forked: a part computed in a forked child gives what computing it here gives; its
errors reach the parent; a child that dies, or whose answer cannot be sent, loses nothing."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from routing.stats.forked import Forked, blas_share, worth_forking


def test_the_childs_answer_equals_the_inline_one() -> None:
    table = np.random.default_rng(0).random((2_000, 50))  # the child reads it without a copy or a pickle

    def compute() -> dict[str, object]:
        return {"pid": os.getpid(), "sums": table.sum(axis=0).tolist(), "mean": float(table.mean())}

    with Forked(compute, beside=True, what="test part") as forked:
        here = compute()
        there = forked.result()
    assert there["pid"] != here["pid"]  # it did run elsewhere
    assert there["sums"] == here["sums"] and there["mean"] == here["mean"]
    with Forked(compute, beside=False, what="test part") as inline:
        assert inline.result()["pid"] == os.getpid()


def test_an_error_in_the_child_is_raised_in_the_parent() -> None:
    def compute() -> None:
        raise ValueError("fold 3 has no item")

    with pytest.raises(ValueError, match="fold 3 has no item"):
        Forked(compute, beside=True, what="test part").result()


def test_a_child_that_dies_is_replaced_by_computing_here(capsys: pytest.CaptureFixture[str]) -> None:
    parent = os.getpid()

    def compute() -> str:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)  # the kernel's out-of-memory killer, say
        return "computed in the parent"

    assert Forked(compute, beside=True, what="test part").result() == "computed in the parent"
    err = capsys.readouterr().err
    assert "the child process computing the test part ended without an answer (exit code -9)" in err


def test_an_answer_that_cannot_be_sent_back_is_an_error_that_says_so() -> None:
    with pytest.raises(RuntimeError, match="could not be sent back"):
        Forked(lambda: lambda: None, beside=True, what="test part").result()  # a lambda does not pickle


def test_an_interrupted_parent_stops_its_child() -> None:
    def compute() -> None:
        signal.pause()  # runs until stopped

    forked = Forked(compute, beside=True, what="test part")
    process = forked._process
    forked.close()
    assert not process.is_alive() and process.exitcode == -signal.SIGTERM


def test_small_tables_and_single_cpus_are_computed_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not worth_forking(1_000) and not worth_forking(10**7)  # too little work; too much memory
    monkeypatch.setattr("routing.stats.forked.usable_cpus", lambda: 1)
    assert not worth_forking(10**6) and blas_share() == 1
