"""``memtrellis demo``: the story it tells (capture, recall with sources and reasons, a fact
superseded, time travel, where next), with the real offline embedder and with the hashing one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli_helpers import run_script
from memtrellis.cli import app
from memtrellis.cli._story import exchanges, load_sample, sample_turns

STEPS = ("1 · ", "2 · ", "3 · ", "4 · ", "5 · ")
# The hits a newcomer must see for the two questions of step 2, best first: the dinner
# question gets the three turns about that dinner (the first of them first), the beach
# question the answer first.
COOKING = ["s1-m3", "s1-m4", "s1-m5"]
BEACH_FIRST = "s2-m3"
LISBON = "I live in Lisbon"
PORTO = "I moved to Porto last week!"


def steps(output: str) -> list[str]:
    """The demo's output cut at its five numbered steps (the header first)."""
    parts: list[str] = []
    rest = output
    for marker in STEPS:
        assert f"\n{marker}" in rest, (marker, output)
        head, rest = rest.split(f"\n{marker}", 1)
        parts.append(head)
    parts.append(rest)
    return parts


def sources(text: str) -> list[str]:
    """The message ids of the hits, in the order shown ("from s1-m3 · Ines (user) ...")."""
    return re.findall(r"from (s\d-m\d) · ", text)


def test_sample_conversation_ships_as_package_data() -> None:
    sample = load_sample()
    messages = [m for session in sample["sessions"] for m in session["messages"]]
    assert [s["session_id"] for s in sample["sessions"]] == ["s1", "s2"]
    assert 8 <= len(messages) <= 16  # short enough to read in the demo
    assert all({"id", "role", "content", "timestamp"} <= set(m) for m in messages)
    assert len({m["id"] for m in messages}) == len(messages)
    assert [m["content"] for m in messages if m.get("fact")] == [
        "Hi! I'm Ines, a data engineer. I live in Lisbon, in a flat in Alfama.",
        f"Big news: {PORTO}",
    ]


def test_the_conversation_is_captured_exchange_by_exchange() -> None:
    turns = sample_turns(load_sample())
    cut = [[turn.message["id"] for turn in exchange] for exchange in exchanges(turns)]
    assert cut[0] == ["s1-m1", "s1-m2"] and cut[-1] == ["s2-m3", "s2-m4"]
    assert all(ids[0].split("-")[0] == ids[-1].split("-")[0] for ids in cut)  # one session
    # Dates move so that the second chat was last week, six months after the first.
    first, last = turns[0].message["timestamp"], turns[-1].message["timestamp"]
    assert first < last and "fact" not in turns[0].message


def test_demo_tells_the_story_with_the_default_embedder(tmp_path: Path) -> None:
    """The real console script, the real MiniLM model, the network guarded: what a newcomer
    sees after `nox -s demo`."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    result = run_script(tmp_path, "demo", guard_network=True, env={"TMPDIR": str(temp)})
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "network.log").exists(), (tmp_path / "network.log").read_text()
    header, captured, recalled, changed, travel, where = steps(result.stdout)
    assert "all-MiniLM-L6-v2" in header and "temporary" in header

    # 1: every turn stored, with its id; the two facts as facts.
    for message_id in ("s1-m1", "s1-m8", "s2-m1", "s2-m4"):
        assert message_id in captured
    assert "12 turns → 12 memories" in captured
    assert len(re.findall(r"\bfact\b", captured.split("session s1", 1)[1])) == 2

    # 2: the relevant turns and only them, each with its source and its reasons.
    cooking, beach = recalled.split("Does Pimiento like the beach?")
    found = sources(cooking)  # the three turns of that dinner, the question's answer first
    assert found[0] == COOKING[0] and sorted(found) == COOKING
    assert sources(beach)[0] == BEACH_FIRST and len(sources(beach)) == 3
    assert "Ines (user) · session s1" in cooking and "assistant · session s1" in cooking
    assert cooking.count("why: dense") == 3 and "keyword" in cooking and "final" in cooking
    assert "graph: next to" in cooking

    # 3: the old fact superseded by the new one, by the rules, and kept as history.
    assert "superseded by s2-m1" in changed
    assert "change cue 'moved to'" in changed
    assert "s1-m1 → s2-m1" in changed and "created, then superseded by s2-m1" in changed
    assert re.search(r"s2-m1\s+valid from .*current", changed)

    # 4: now Porto (Lisbon left out as superseded), as of the summer Lisbon.
    now, then = travel.split("as_of=")
    assert PORTO in now and LISBON not in now.split("left out")[0]
    assert "left out: s1-m1, superseded by s2-m1" in now
    assert LISBON in then and PORTO not in then
    assert "left out: s2-m1, not yet valid" in then

    # 5: where to go next, and nothing left behind.
    assert "memtrellis demo --keep" in where and "--graph ines.html" in where
    assert "docs/lifecycle.md" in where and "the temporary store was removed" in where
    assert "1 memories" not in result.stdout
    # Nothing in the working directory (HOME may hold the tokenizer's vocabulary cache).
    assert {p.name for p in tmp_path.iterdir()} <= {"guard", "home", "tmp"}
    assert list(temp.iterdir()) == []


def _run(runner: CliRunner, *args: str) -> Any:
    result = runner.invoke(app, ["--embedder", "hashing", *args], env={"COLUMNS": "140"})
    assert result.exit_code == 0, result.output
    return result


def test_demo_json_holds_the_story(tmp_path: Path) -> None:
    payload = json.loads(_run(CliRunner(), "--json", "demo").stdout)
    assert not Path(payload["store"]).exists()  # the temporary store is removed
    assert payload["entity_id"] == "ines"
    stored = {turn["message_id"]: turn["memory_type"] for turn in payload["turns"]}
    assert len(stored) == 12 and stored["s1-m1"] == stored["s2-m1"] == "fact"
    assert {kind for key, kind in stored.items() if key not in ("s1-m1", "s2-m1")} == {"episode"}
    old, new = payload["supersession"]["old"], payload["supersession"]["new"]
    assert old["superseded_by"] == new["id"] and old["valid_until"] == new["valid_from"]
    assert payload["supersession"]["versions"] == [old["id"], new["id"]]
    assert [hit["memory"]["id"] for hit in payload["now"]["items"]] == [new["id"]]
    assert [(s["id"], s["reason"]) for s in payload["now"]["skipped"]] == [
        (old["id"], "superseded")
    ]
    assert [hit["memory"]["id"] for hit in payload["then"]["items"]] == [old["id"]]
    assert payload["health"]["total_memories"] == len(payload["memories"]) == 12
    assert payload["health"]["superseded"] == 1


def test_demo_keeps_its_store_at_path_and_draws_the_graph(tmp_path: Path) -> None:
    store, picture = tmp_path / "demo-store", tmp_path / "ines.html"
    result = _run(CliRunner(), "--path", str(store), "demo", "--graph", str(picture))
    assert store.is_dir() and "(kept)" in result.stdout
    assert "<html" in picture.read_text(encoding="utf-8").lower()
    assert f"memtrellis --path {store} --embedder hashing --entity ines list" in " ".join(
        result.stdout.split()
    )
    # The kept store is a real one: the superseded fact is there, listed as such.
    listed = _run(
        CliRunner(), "--path", str(store), "--entity", "ines", "list", "--include-superseded"
    )
    assert "superseded by" in listed.stdout and "memories 1–12" in listed.stdout


def test_demo_refuses_a_graph_file_it_cannot_write_before_it_starts(tmp_path: Path) -> None:
    store = tmp_path / "demo-store"
    result = CliRunner().invoke(
        app, ["--path", str(store), "--embedder", "hashing", "demo", "--graph", "x.txt"]
    )
    assert result.exit_code == 2
    assert ".html, .png, .graphml or .json" in result.stderr
    assert not store.exists()


def test_list_shows_superseded_memories_when_asked(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    runner = CliRunner()
    _run(runner, "--path", store, "add", "I live in Lyon", "--type", "fact")
    _run(runner, "--path", store, "add", "I moved to Porto", "--type", "fact")
    plain = _run(runner, "--path", store, "list").stdout
    assert "Porto" in plain and "Lyon" not in plain
    # A superseded memory has an end date, but it is superseded, not expired.
    listed = _run(runner, "--path", store, "list", "--include-superseded").stdout
    assert "Lyon" in listed and "superseded by" in listed
