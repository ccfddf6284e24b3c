"""The adaptive engine (README "Engines"): on a bounded input of a pattern the columnar
engine evaluates, that engine; else (a pipe, a Kleene pattern, ``--stats-every``) eager where
the variables' rates are alike, the tree where they differ, chosen per time segment. The
same matches as every engine (the oracle tests run it with the case table and the hypothesis
properties, with segments of four windows and of half a window: tests/test_cases.py). The
tests of the segments here run them on bounded inputs (``columnar.IN_ADAPTIVE`` off); the
first one says what a bounded input runs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.automata import columnar
from cepcli.automata.adaptive import SEGMENT_WINDOWS
from cepcli.cli import cli
from tests.harness import run_engine

QUERY = "PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x WITHIN 2 s"


def test_a_bounded_input_runs_the_columnar_engine() -> None:
    data = _burst()
    found, stats = run_engine(QUERY, data, "adaptive")
    assert found == run_engine(QUERY, data, "eager")[0] and len(found) > 100
    assert stats.extra["adaptive_ran"] == "columnar" and "adaptive_segments" not in stats.extra
    assert [step["variable"] for step in stats.extra["columnar_joins"][0]][0] == "c"  # the rarest
    kleene = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 2 s"  # segments: the columnar engine has no Kleene
    _, stats = run_engine(kleene, data, "adaptive")
    assert "adaptive_segments" in stats.extra and "columnar_joins" not in stats.extra


@pytest.fixture(autouse=True)
def segments(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other test is about the segments: on these bounded inputs too."""
    if request.function.__name__ not in (
        "test_a_bounded_input_runs_the_columnar_engine",
        "test_explain_says_how_it_chooses",
    ):
        monkeypatch.setattr(columnar, "IN_ADAPTIVE", False)


def _burst() -> str:
    """600 s: A and B 3 times a second and C once every 50 s (1:150), then 200 s of A, B
    and C 3 times a second each (1:1), then 1:150 again. Segments are 32 windows (64 s)."""
    rows = ["type,ts,x"]
    for t in range(600):
        for j in range(3):
            kinds = "ABC" if 200 <= t < 400 or (t % 50 == 0 and j == 0) else "AB"
            rows += [f"{kind},{t}.{j}{i},{(t * 7 + j * 3 + i) % 11}" for i, kind in enumerate(kinds)]
    return "\n".join(rows) + "\n"


def test_a_burst_of_equal_rates_switches_to_eager_and_back() -> None:
    assert SEGMENT_WINDOWS == 32
    data = _burst()
    adaptive, stats = run_engine(QUERY, data, "adaptive")
    eager, _ = run_engine(QUERY, data, "eager")
    tree, _ = run_engine(QUERY, data, "tree")
    assert adaptive == eager == tree and len(adaptive) > 100
    changes = stats.extra["adaptive_changes"]
    assert [c["engine"] for c in changes] == ["tree", "eager", "tree"]  # type: ignore[index]
    assert [c["variables"] for c in changes] == [  # type: ignore[index]
        dict.fromkeys("abc", "buffered"),
        dict.fromkeys("abc", "on arrival"),
        dict.fromkeys("abc", "buffered"),
    ]
    segments = [c["segment"] for c in changes]  # type: ignore[index]
    # Segment k is [64k, 64(k+1)) s; it starts when its input does (64k - 2 s) and is chosen
    # from what the segment before it counted until then. Segments 0-2 count 186 A and 1 or
    # 2 C: too few C, but 186 A put the ratio past 1:50 whatever C's count (the tree). The
    # burst (200-400 s) gives segment 3 (192-254 s) 186 A to 162 C, so segment 4 is the
    # first eager one; segment 6 (384-446 s) still has 49 C (16 s of the burst, and 400 s)
    # to 186 A, within 1:6 (segment 7 eager too); segment 7 (448-510 s) has 2 C: the tree
    # again from segment 8.
    assert segments == [0, 4, 8]
    assert changes[1]["ratio"] == round(186 / 162, 3)  # type: ignore[index]
    assert changes[2]["ratio"] == 93.0  # type: ignore[index]
    assert stats.extra["adaptive_segments"] == {"eager": 4, "chain": 0, "tree": 6}
    assert stats.extra["adaptive_switches"] == 3
    # a segment that keeps its engine continues the runtime before it: three runtimes in all
    assert stats.extra["adaptive_runtimes"] == 3


def test_steady_equal_rates_run_one_eager_runtime() -> None:
    """The first events are held until C, like every variable, is counted 10 times (30
    events, 1:1): eager from the first segment on, in one runtime that goes on from segment
    to segment (no restart at their borders)."""
    data = "type,ts,x\n" + "".join(f"{k},{t}.{i},{t % 5}\n" for t in range(700) for i, k in enumerate("ABC"))
    found, stats = run_engine(QUERY, data, "adaptive")
    assert found == run_engine(QUERY, data, "eager")[0] and len(found) > 100
    assert stats.extra["adaptive_segments"] == {"eager": 11, "chain": 0, "tree": 0}
    assert stats.extra["adaptive_runtimes"] == 1
    assert stats.extra["adaptive_first_choice_events"] == 30
    assert [(c["segment"], c["engine"], c["ratio"]) for c in stats.extra["adaptive_changes"]] == [  # type: ignore[union-attr]
        (0, "eager", 1.0)
    ]


def test_a_short_stream_of_equal_rates_runs_eager_not_the_tree() -> None:
    """A stream shorter than one segment (a day of minute bars at a 30-minute window) is
    all first segment: chosen from its first events, eager, as at equal rates everywhere
    (without the look-ahead the tree ran it, 5-10x eager's time)."""
    data = "type,ts,x\n" + "".join(f"{k},{t}.{i},{t % 5}\n" for t in range(40) for i, k in enumerate("ABC"))
    found, stats = run_engine(QUERY, data, "adaptive")
    assert found == run_engine(QUERY, data, "eager")[0] and len(found) > 10
    assert stats.extra["adaptive_segments"] == {"eager": 1, "chain": 0, "tree": 0}
    assert (
        stats.predicate_evaluations == run_engine(QUERY, data, "eager")[1].predicate_evaluations
    )  # eager's work


def test_one_rare_event_is_no_ratio_until_three_are_counted() -> None:
    """A and B every 2 s, C once near the end of each segment: each segment counts 31 A,
    31 B and 1 C. One event says nothing of a rate (it could as well be 1:10 as 1:100),
    and 31 A are too few to put it past 1:50 anyway: the counts are carried, and the tree it
    started with goes on, until three segments hold 3 C to 93 A (1:31): the chain, C first,
    which then goes on (carrying again) in one runtime."""
    rows = [f"{k},{t}.{i},{t % 7}" for t in range(0, 640, 2) for i, k in enumerate("AB")]
    rows += [f"C,{64 * k - 5}.5,9" for k in range(1, 10)]
    data = "type,ts,x\n" + "\n".join(sorted(rows, key=lambda r: float(r.split(",")[1]))) + "\n"
    found, stats = run_engine(QUERY, data, "adaptive")
    assert found == run_engine(QUERY, data, "eager")[0] and len(found) >= 9
    assert stats.extra["adaptive_segments"] == {"eager": 0, "chain": 8, "tree": 3}
    assert stats.extra["adaptive_runtimes"] == 2
    changes = stats.extra["adaptive_changes"]
    assert [(c["segment"], c["engine"], c["ratio"]) for c in changes] == [
        (0, "tree", None),
        (3, "chain", 31.0),
    ]  # type: ignore[index]
    assert changes[1]["order"][0] == "c"  # type: ignore[index]


def test_a_middling_skew_runs_the_chain_rarest_first() -> None:
    """A 20 times a second, B 5 times, C twice (1:10, past eager's 1:6 and within the
    chain's 1:50): from the first segment on, the chain in the order C, B, A, in one
    runtime."""
    rows = [
        f"{k},{t}.{j:02d},{(t + j) % 9}"
        for t in range(300)
        for j in range(20)
        for k in "A" + ("B" if j % 4 == 0 else "") + ("C" if j % 10 == 5 else "")
    ]
    data = "type,ts,x\n" + "\n".join(rows) + "\n"
    found, stats = run_engine(QUERY, data, "adaptive")
    assert found == run_engine(QUERY, data, "eager")[0] and len(found) > 100
    assert stats.extra["adaptive_segments"] == {"eager": 0, "chain": 5, "tree": 0}
    assert stats.extra["adaptive_runtimes"] == 1
    changes = stats.extra["adaptive_changes"]
    # the 10th C comes at 4.15 s, after 96 A (20 a second, 16 in the 5th second) and 24 B
    assert stats.extra["adaptive_first_choice_events"] == 96 + 24 + 10
    assert changes == [
        {
            "segment": 0,
            "engine": "chain",
            "ratio": 9.6,
            "order": ["c", "b", "a"],
            # how each variable is evaluated from then on: the rarest starts the instances
            "variables": {"a": "buffered, taken 3 of 3", "b": "buffered, taken 2 of 3", "c": "on arrival"},
        }
    ]


def test_a_ratio_near_a_bound_does_not_flip_the_engine() -> None:
    """A and B 4 times a second; C every 1.25 s in the even segments (1:5) and every 2 s in
    the odd ones (1:8), around eager's bound of 1:6. The first 10 C come with 46 A (1:4.6):
    eager; from eager the chain needs more than 1:9 (1:6 x 1.5), so eager
    runs every segment, in one runtime (without the margin: eager, chain, eager, ... a new
    runtime each segment)."""
    rows = []
    for tick in range(640 * 4):
        t, segment = tick / 4, tick // 256
        rows += [f"A,{t:.2f}0,{tick % 7}", f"B,{t:.2f}1,{tick % 5}"]
        if tick % (5 if segment % 2 == 0 else 8) == 0:
            rows.append(f"C,{t:.2f}2,{tick % 9}")
    data = "type,ts,x\n" + "\n".join(rows) + "\n"
    found, stats = run_engine(QUERY, data, "adaptive")
    assert found == run_engine(QUERY, data, "eager")[0] and len(found) > 100
    changes = stats.extra["adaptive_changes"]
    assert [(c["engine"], c["ratio"]) for c in changes] == [("eager", 4.6)]  # type: ignore[index]
    assert stats.extra["adaptive_segments"] == {"eager": 11, "chain": 0, "tree": 0}
    assert stats.extra["adaptive_runtimes"] == 1


def test_a_kleene_pattern_always_runs_the_tree() -> None:
    query = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 2 s"
    data = "type,ts,x\n" + "".join(f"{k},{t}.{i},1\n" for t in range(300) for i, k in enumerate("ABC"))
    found, stats = run_engine(query, data, "adaptive")
    assert found == run_engine(query, data, "tree")[0]
    assert stats.extra["adaptive_segments"]["eager"] == 0  # type: ignore[index]


def test_explain_says_how_it_chooses() -> None:
    result = CliRunner().invoke(cli, ["explain", "-e", QUERY, "--engine", "adaptive"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    rows = [  # the short table of the choice and its reasons, in this order
        "adaptive chooses, for this pattern:",
        "columnar a file or a pipe (step by step, the window's tail carried)",
        "segments with --stats-every, or --sort on a pipe: segments of 32 windows",
        "eager the counts within 1:6 of each other (at least 3 of the rarest)",
        "chain within 1:50, the Chain NFA rarest first",
        "tree otherwise",
        "stream in a Spark stream (--stream): one group",
        "a change needs the ratio 1.5x past the bound",
    ]
    places = [said.find(row) for row in rows]
    assert -1 not in places and places == sorted(places), list(zip(rows, places, strict=True))


def test_the_stats_say_how_a_negated_variable_is_evaluated() -> None:
    """With a negation the chain takes the positive variables in their order and checks the
    negated one after a match (post-processing); eager takes it on arrival."""
    from cepcli.prepare import compile_text
    from cepcli.runtime.adaptive import evaluated

    pattern = compile_text("PATTERN SEQ(A a, NOT N n, C c) WITHIN 2 s", "<q>", None).pattern
    assert evaluated(pattern, "chain", ("c", "a")) == {
        "a": "buffered, taken 2 of 2",
        "n": "buffered, checked after a match",
        "c": "on arrival",
    }
    assert evaluated(pattern, "eager", ()) == dict.fromkeys("anc", "on arrival")
    assert evaluated(pattern, "tree", ()) == dict.fromkeys("anc", "buffered")


def test_on_a_pipe_nothing_is_held_and_the_first_segment_is_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a pipe every match is written as soon as it is decided (docs/input.md), so the
    first events are not held for the first choice: the first segment runs the tree for three
    windows from the first event (6 s here), and the next one is chosen from the counts of
    its first two (4 A, 4 B, 4 C: eager), in a runtime of its own."""
    from cepcli.sources.source import Source

    monkeypatch.setattr(Source, "streaming", property(lambda self: True))
    data = "type,ts,x\n" + "".join(f"{k},{t}.{i},{t % 5}\n" for t in range(300) for i, k in enumerate("ABC"))
    found, stats = run_engine(QUERY, data, "adaptive")
    assert found == run_engine(QUERY, data, "eager")[0] and len(found) > 100
    assert stats.extra["adaptive_first_choice_events"] == 0
    changes = stats.extra["adaptive_changes"]
    assert [(c["segment"], c["engine"], c["ratio"]) for c in changes] == [  # type: ignore[index]
        (0, "tree", None),
        (1, "eager", 1.0),
    ]
    assert stats.extra["adaptive_runtimes"] == 2
    # segment 1 is [6 s, 70 s) and the others follow it every 64 s: 5 of them to 299 s
    assert stats.extra["adaptive_segments"] == {"eager": 5, "chain": 0, "tree": 1}


def test_each_event_is_counted_once_in_batches_and_one_by_one() -> None:
    """A file's events reach the engine ``BATCH`` at a time (counted by the batch), a pipe's
    one by one: either way every row a variable can use is one relevant event, as eager
    counts them (here every row)."""
    data = _burst()
    rows = data.count("\n") - 1
    counts = [
        run_engine(QUERY, data, engine)[1].relevant_events
        for engine in ("eager", "adaptive", "adaptive:pipe")
    ]
    assert counts == [rows] * 3


@pytest.mark.parametrize("stop", [1, 40])
def test_stopped_after_some_matches_it_counts_only_the_events_it_took(tmp_path: Path, stop: int) -> None:
    """``--max-matches``: the run stops inside a batch; the events after the one that gave
    the last match never reached the engine and are not counted (eager's count, which takes
    them one by one); the work of the runtimes still live when it stops is counted."""
    data = "type,ts,x\n" + "".join(f"{k},{t}.{i},{t % 5}\n" for t in range(700) for i, k in enumerate("ABC"))
    (tmp_path / "q.sase").write_text(QUERY + "\n")
    (tmp_path / "d.csv").write_text(data)
    counted = {}
    for engine in ("eager", "adaptive"):
        stats = tmp_path / f"{engine}.json"
        args = ["run", str(tmp_path / "q.sase"), "-i", str(tmp_path / "d.csv"), "--engine", engine]
        result = CliRunner().invoke(
            cli, [*args, "--max-matches", str(stop), "--stats-json", str(stats), "-q"]
        )
        assert result.exit_code == 0, result.output
        written = json.loads(stats.read_text())
        assert written["matches"] == stop
        assert written["peak_instances"] > 0 and written["memory_operations"] > 0  # the runtimes' work
        counted[engine] = written["relevant_events"]
    assert counted["adaptive"] == counted["eager"] < 300  # well inside the first batch of 256 or the second


# --- the joins overrule the rates: a chain where eager would pair everything -------------------

KEYED_QUERY = "PATTERN AND(A a, B b, C c) WHERE a.k = c.k AND b.k = c.k AND a.x > b.x WITHIN 2 s"


def _keyed(keys: int) -> str:
    """400 s of A, B and C 3 times a second each (1:1: the rates say eager), their keys
    drawn from ``keys`` values (seeded)."""
    draw = random.Random(keys)
    rows = ["type,ts,k,x"]
    for t in range(400):
        for j in range(3):
            rows += [
                f"{kind},{t}.{j}{i},{draw.randrange(keys)},{draw.randrange(7)}"
                for i, kind in enumerate("ABC")
            ]
    return "\n".join(rows) + "\n"


def test_a_join_of_many_keys_runs_a_chain_that_pairs_by_the_key_first() -> None:
    """AND(a, b, c) with a.k = c.k and b.k = c.k at equal rates: eager pairs every A with
    every B (no condition between them), a chain from a takes c next (the join): with 40
    keys, eager holds about 11x the chain's partial matches, past KEYED (6), so the chain
    runs, in the order a, c, b; the matches are eager's."""
    data = _keyed(40)
    found, stats = run_engine(KEYED_QUERY, data, "adaptive")
    assert found == run_engine(KEYED_QUERY, data, "eager")[0] and len(found) > 20
    assert stats.extra["adaptive_segments"]["eager"] == 0  # type: ignore[index]
    assert stats.extra["adaptive_keyed_segments"] == stats.extra["adaptive_segments"]["chain"] > 0  # type: ignore[index]
    first = stats.extra["adaptive_changes"][0]  # type: ignore[index]
    assert (first["engine"], first["order"]) == ("chain", ["a", "c", "b"])


def test_a_join_of_few_keys_leaves_eager() -> None:
    """The same with 2 keys: a join halves the pairs, eager holds about 3x the chain's
    partial matches (as an AND does without conditions): the rates choose, eager."""
    data = _keyed(2)
    found, stats = run_engine(KEYED_QUERY, data, "adaptive")
    assert found == run_engine(KEYED_QUERY, data, "eager")[0] and len(found) > 100
    assert stats.extra["adaptive_segments"]["chain"] == 0 and stats.extra["adaptive_keyed_segments"] == 0  # type: ignore[index]


def test_a_join_each_eager_step_uses_leaves_eager() -> None:
    """SEQ(a, b, c) with a.k = b.k: eager's partial matches (a, then a and b) are pruned by
    the join as a chain's would be: eager, whatever the number of keys."""
    query = "PATTERN SEQ(A a, B b, C c) WHERE a.k = b.k AND a.x < c.x WITHIN 2 s"
    data = _keyed(40)
    found, stats = run_engine(query, data, "adaptive")
    assert found == run_engine(query, data, "eager")[0] and len(found) > 10
    assert stats.extra["adaptive_segments"]["chain"] == 0 and stats.extra["adaptive_keyed_segments"] == 0  # type: ignore[index]


def test_the_estimate_of_partial_matches() -> None:
    """``Keys``: eager's sets for an AND are every proper subset; a join implied by two
    others divides nothing; SEQ's order halves a pair."""
    from cepcli.automata.adaptive import key_joins
    from cepcli.prepare import compile_text

    keys = key_joins(compile_text(KEYED_QUERY, "<q>", 10**9).pattern)
    assert keys is not None and len(keys.eager_sets) == 6
    rates = dict.fromkeys("abc", 10.0)
    distinct = dict.fromkeys(keys.joins, 50)
    # a, b, c: 30; a-b: 100 (no join); a-c, b-c: 2 each
    assert keys.eager(rates, distinct) == pytest.approx(134)
    assert keys.chain(rates, distinct) == (("a", "c", "b"), pytest.approx(12))
    seq = key_joins(compile_text("PATTERN SEQ(A a, B b) WHERE a.k = b.k WITHIN 2 s", "<q>", 10**9).pattern)
    assert seq is not None and seq.in_order[frozenset("ab")] == 0.5 and seq.eager_sets == (frozenset("a"),)
