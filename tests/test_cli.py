"""The ``memtrellis`` command line, through typer's runner and through the real console script."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_helpers import run_script, script_env
from memtrellis.cli import app
from memtrellis.transfer import parse_line
from memtrellis.types import MemoryItem


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def cli(runner: CliRunner, store: Path, *args: str, input: str | None = None) -> Any:
    """Invoke the app on ``store`` with the fast deterministic embedder."""
    return runner.invoke(app, ["--path", str(store), "--embedder", "hashing", *args], input=input)


def add_json(runner: CliRunner, store: Path, *args: str) -> list[dict[str, Any]]:
    result = cli(runner, store, "--json", "add", *args)
    assert result.exit_code == 0, result.output
    items: list[dict[str, Any]] = json.loads(result.stdout)
    return items


def test_help_lists_every_command(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("demo", "add", "recall", "list", "get", "forget", "history", "health"):
        assert command in result.output
    assert "export" in result.output and "import" in result.output


def test_add_list_get_and_recall(runner: CliRunner, store: Path) -> None:
    added = add_json(runner, store, "Ines keeps a greyhound called Pimiento", "--tag", "pet")
    assert len(added) >= 1
    memory_id = added[0]["id"]

    listed = cli(runner, store, "list")
    assert listed.exit_code == 0, listed.output
    assert memory_id[:8] in listed.output and "Pimiento" in listed.output

    # A unique id prefix, as list prints it, is enough.
    shown = cli(runner, store, "get", memory_id[:8])
    assert shown.exit_code == 0, shown.output
    assert memory_id in shown.output and "Pimiento" in shown.output

    recalled = cli(runner, store, "recall", "greyhound Pimiento", "-k", "3")
    assert recalled.exit_code == 0, recalled.output
    assert "Pimiento" in recalled.output
    assert "dense" in recalled.output and "keyword" in recalled.output
    assert "final" in recalled.output


def test_add_message_file_with_session(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    messages = [
        {
            "id": "m1",
            "role": "user",
            "content": "I moved to Valencia.",
            "timestamp": "2025-04-01T10:00:00Z",
        },
        {"id": "m2", "role": "assistant", "content": "Welcome to Valencia!"},
    ]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    added = add_json(runner, store, "--file", str(path), "--session", "s-42")
    assert added
    assert all(item["scope"]["session_id"] == "s-42" for item in added)
    assert any(source["message_id"] == "m1" for item in added for source in item["sources"])


def test_list_filters_and_pages(runner: CliRunner, store: Path) -> None:
    add_json(runner, store, "Ines is vegetarian", "--type", "preference", "--tag", "food")
    add_json(runner, store, "Ines lives in Valencia", "--type", "fact")
    add_json(runner, store, "The prototype is due on 25 April", "--type", "fact", "--tag", "work")

    def texts(*args: str) -> list[str]:
        result = cli(runner, store, "--json", "list", *args)
        assert result.exit_code == 0, result.output
        return [item["text"] for item in json.loads(result.stdout)]

    assert texts("--type", "preference") == ["Ines is vegetarian"]
    assert texts("--tag", "work") == ["The prototype is due on 25 April"]
    assert len(texts()) == 3
    assert texts("--limit", "1", "--offset", "1") == [texts()[1]]
    assert cli(runner, store, "list", "--type", "nonsense").exit_code == 2


def test_add_needs_text_or_file(runner: CliRunner, store: Path) -> None:
    result = cli(runner, store, "add")
    assert result.exit_code == 2


def test_add_reports_unreadable_file(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    result = cli(runner, store, "add", "--file", str(broken))
    assert result.exit_code == 2
    assert "not valid JSON" in result.stderr
    assert "Traceback" not in result.output


def test_recall_json_carries_explanations(runner: CliRunner, store: Path) -> None:
    add_json(runner, store, "The routing prototype is due on 25 April")
    result = cli(runner, store, "--json", "recall", "prototype due", "--budget", "200")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["query"] == "prototype due"
    assert payload["token_budget"] == 200
    assert payload["items"], payload
    explanation = payload["items"][0]["explanation"]
    assert {"dense_score", "keyword_score", "graph_path", "final_score"} <= set(explanation)


def test_memtrellis_error_is_one_red_line_and_exit_2(runner: CliRunner, store: Path) -> None:
    add_json(runner, store, "something to make the store exist")
    result = cli(runner, store, "get", "no-such-memory")
    assert result.exit_code == 2
    assert "Error:" in result.stderr and "no-such-memory" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_invalid_entity_is_reported_not_raised(runner: CliRunner, store: Path) -> None:
    add_json(runner, store, "something to make the store exist")
    result = cli(runner, store, "--entity", " ", "list")
    assert result.exit_code == 2
    assert "Error:" in result.stderr
    assert "Traceback" not in result.output


def test_store_refuses_another_embedder(runner: CliRunner, store: Path) -> None:
    add_json(runner, store, "written with the hashing embedder")
    result = runner.invoke(app, ["--path", str(store), "--embedder", "minilm", "list"])
    assert result.exit_code == 2, result.output
    assert "Error:" in result.stderr
    assert "Traceback" not in result.output


def test_forget_asks_for_confirmation(runner: CliRunner, store: Path) -> None:
    memory_id = add_json(runner, store, "Ines cannot stand coriander")[0]["id"]

    declined = cli(runner, store, "forget", memory_id, input="n\n")
    assert declined.exit_code == 1
    assert "Forget memory" in declined.stderr
    assert cli(runner, store, "get", memory_id).exit_code == 0

    accepted = cli(runner, store, "forget", memory_id, input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert "Forgot 1 memory" in accepted.stdout
    assert cli(runner, store, "get", memory_id).exit_code == 2


def test_forget_yes_skips_the_prompt(runner: CliRunner, store: Path) -> None:
    memory_id = add_json(runner, store, "Tuesday evenings are Spanish lessons")[0]["id"]
    result = cli(runner, store, "--json", "forget", memory_id, "--yes")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"forgotten": 1}


def test_forget_all_for_entity(runner: CliRunner, store: Path) -> None:
    add_json(runner, store, "first memory of ines")
    add_json(runner, store, "second memory of ines")
    cli(runner, store, "--entity", "other", "add", "a memory of someone else")

    declined = cli(runner, store, "forget", "--all-for-entity", input="n\n")
    assert declined.exit_code == 1
    assert "EVERY memory" in declined.stderr

    result = cli(runner, store, "--json", "forget", "--all-for-entity", "--yes")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["forgotten"] == 2
    assert json.loads(cli(runner, store, "--json", "list").stdout) == []
    others = json.loads(cli(runner, store, "--json", "--entity", "other", "list").stdout)
    assert len(others) == 1


def test_forget_needs_exactly_one_target(runner: CliRunner, store: Path) -> None:
    assert cli(runner, store, "forget", "--yes").exit_code == 2
    assert cli(runner, store, "forget", "abc", "--all-for-entity", "--yes").exit_code == 2


def test_history_and_health(runner: CliRunner, store: Path) -> None:
    memory_id = add_json(runner, store, "Rafael is the CTO of Cargolina")[0]["id"]
    history = cli(runner, store, "--json", "history", memory_id)
    assert history.exit_code == 0, history.output
    events = json.loads(history.stdout)
    assert events and all("action" in event for event in events)
    assert cli(runner, store, "history", memory_id).exit_code == 0

    health = cli(runner, store, "--json", "health")
    assert health.exit_code == 0, health.output
    report = json.loads(health.stdout)
    assert report["total_memories"] == 1
    table = cli(runner, store, "health")
    assert table.exit_code == 0 and "total memories" in table.output


def _write_items(runner: CliRunner, store: Path, count: int) -> list[dict[str, Any]]:
    dishes = ["paella", "tortilla", "gazpacho", "churros", "croquetas", "fabada"]
    texts = [f"Ines cooks {dishes[n]} with smoky pimentón" for n in range(count)]
    return [item for text in texts for item in add_json(runner, store, text)]


def test_export_import_round_trip(runner: CliRunner, tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    items = _write_items(runner, source, 4)
    dump = tmp_path / "memories.jsonl"

    exported = cli(runner, source, "export", str(dump))
    assert exported.exit_code == 0, exported.output
    lines = dump.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(items) == 4

    imported = cli(runner, target, "import", str(dump))
    assert imported.exit_code == 0, imported.output
    assert "Imported 4 memories" in imported.stdout
    landed = json.loads(cli(runner, target, "--json", "list").stdout)
    assert {(i["id"], i["text"]) for i in landed} == {(i["id"], i["text"]) for i in items}


def test_export_to_stdout_and_import_from_stdin(runner: CliRunner, tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    items = _write_items(runner, source, 2)
    exported = cli(runner, source, "export", "-")
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    assert len(lines) == 2
    assert {parse_line(line).item.id for line in lines} == {i["id"] for i in items}

    imported = cli(runner, target, "--json", "import", "-", input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout) == {"imported": 2, "skipped": []}


def test_import_skips_bad_lines_and_keeps_good_ones(runner: CliRunner, tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    items = _write_items(runner, source, 2)
    good = [MemoryItem.model_validate(item).model_dump_json() for item in items]
    out_of_range = json.loads(good[0])
    out_of_range.update(id="other-id", confidence=7)
    dump = tmp_path / "mixed.jsonl"
    dump.write_text(
        "\n".join([good[0], "{not json", json.dumps(out_of_range), "", good[1]]) + "\n",
        encoding="utf-8",
    )

    result = cli(runner, target, "import", str(dump))
    assert result.exit_code == 1, result.output
    assert "Imported 2 memories" in result.stdout
    assert "line 2" in result.stdout and "line 3" in result.stdout
    assert "confidence" in result.stdout
    assert "line 4" not in result.stdout  # a blank line is not an error

    as_json = cli(runner, tmp_path / "c", "--json", "import", str(dump))
    assert [s["line"] for s in json.loads(as_json.stdout)["skipped"]] == [2, 3]
    landed = json.loads(cli(runner, target, "--json", "list").stdout)
    assert {i["id"] for i in landed} == {i["id"] for i in items}


def test_import_rescope_moves_memories_to_the_entity(runner: CliRunner, tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    items = _write_items(runner, source, 1)
    dump = tmp_path / "one.jsonl"
    cli(runner, source, "export", str(dump))
    result = cli(runner, target, "--entity", "ines", "import", str(dump), "--rescope")
    assert result.exit_code == 0, result.output
    landed = json.loads(cli(runner, target, "--json", "--entity", "ines", "list").stdout)
    assert [i["id"] for i in landed] == [items[0]["id"]]
    assert landed[0]["scope"]["entity_id"] == "ines"


def test_export_all_writes_every_entity(runner: CliRunner, tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    _write_items(runner, source, 2)
    assert cli(runner, source, "--entity", "bob", "add", "Bob is vegan").exit_code == 0
    dump = tmp_path / "all.jsonl"
    one = cli(runner, source, "export", str(tmp_path / "one.jsonl"))
    assert one.exit_code == 0 and "Exported 2 memories of entity 'default'" in one.stdout
    every = cli(runner, source, "export", "--all", str(dump))
    assert every.exit_code == 0 and "Exported 3 memories of every entity" in every.stdout
    assert cli(runner, target, "import", str(dump)).exit_code == 0
    bob = json.loads(cli(runner, target, "--json", "--entity", "bob", "list").stdout)
    assert [m["text"] for m in bob] == ["Bob is vegan"]


def test_import_of_a_file_that_is_not_utf8_is_an_error(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "latin1.jsonl"
    dump.write_bytes(b"\xff\xfe not text\n")
    result = cli(runner, store, "import", str(dump))
    assert result.exit_code == 2
    assert "is not UTF-8 text" in result.stderr


def test_import_missing_file_is_an_error(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    result = cli(runner, store, "import", str(tmp_path / "absent.jsonl"))
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def test_script_export_import_round_trip(runner: CliRunner, tmp_path: Path) -> None:
    """Export to and import from a pipe between real console-script processes; the store is
    filled and read through the runner (each console script pays ~2 CPU-s of imports)."""
    source, target = tmp_path / "a", tmp_path / "b"
    base = ["--embedder", "hashing", "--json"]
    for text in ("Ines lives in Valencia", "Pimiento is a greyhound", "Rafael is the CTO"):
        add_json(runner, source, text)
    exported = run_script(tmp_path, "--path", str(source), *base, "export", "-")
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert len(lines) == 3

    imported = run_script(
        tmp_path, "--path", str(target), *base, "import", "-", input=exported.stdout
    )
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["imported"] == 3
    listed = cli(runner, target, "--json", "list")
    assert listed.exit_code == 0, listed.output
    landed = {(i["id"], i["text"]) for i in json.loads(listed.stdout)}
    original = {(e.item.id, e.item.text) for e in map(parse_line, lines)}
    assert landed == original


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memtrellis", "--help"],
        capture_output=True,
        text=True,
        env=script_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "recall" in result.stdout


# -- first contact: read-only commands on a mistyped path, the entity hint, help, plurals ---
READ_ONLY = [
    ["list"],
    ["recall", "tea"],
    ["get", "abc123"],
    ["history", "abc123"],
    ["health"],
    ["export", "out.jsonl"],
    ["graph", "--json", "graph.json"],
    ["forget", "abc123", "--yes"],
]


@pytest.mark.parametrize("command", READ_ONLY, ids=lambda command: command[0])
def test_read_only_command_on_a_mistyped_path_creates_nothing(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["--path", "./typo", "--embedder", "hashing", *command])
    assert result.exit_code == 2, result.output
    error = " ".join(result.stderr.split())
    assert "no memtrellis store at ./typo" in error, error
    assert str(tmp_path / "typo") in error  # where it looked, in full
    assert "memtrellis --path ./typo add TEXT" in error  # how to make one
    assert "Traceback" not in result.output
    assert sorted(tmp_path.iterdir()) == []  # no store, no output file


def test_read_only_command_without_a_store_leaves_the_default_path_alone(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMTRELLIS_HOME", raising=False)
    result = runner.invoke(app, ["--embedder", "hashing", "list"])
    assert result.exit_code == 2, result.output
    error = " ".join(result.stderr.split())
    assert "no memtrellis store at .memtrellis" in error and "the default store" in error
    assert not (tmp_path / ".memtrellis").exists()


def test_read_only_command_on_an_empty_directory_leaves_it_empty(
    runner: CliRunner, store: Path
) -> None:
    store.mkdir()
    result = cli(runner, store, "health")
    assert result.exit_code == 2, result.output
    assert "no memtrellis store" in result.stderr
    assert list(store.iterdir()) == []


def test_read_only_commands_still_open_an_existing_store(runner: CliRunner, store: Path) -> None:
    [item] = add_json(runner, store, "Ines keeps a greyhound called Pimiento")
    for command in (["list"], ["health"], ["get", item["id"][:8]], ["export", "-"]):
        result = cli(runner, store, *command)
        assert result.exit_code == 0, (command, result.output)


def test_list_names_the_entities_the_store_holds(runner: CliRunner, store: Path) -> None:
    for text in ("Alice prefers green tea", "Alice lives in Lyon"):
        result = cli(runner, store, "--entity", "alice", "add", text)
        assert result.exit_code == 0, result.output
    assert cli(runner, store, "--entity", "bob", "add", "Bob plays chess").exit_code == 0

    listed = cli(runner, store, "list")
    assert listed.exit_code == 0, listed.output
    hint = " ".join(listed.stdout.split())
    assert "no memories of entity 'default'; this store holds: alice (2), bob (1)" in hint
    assert "--entity alice" in hint

    # --json keeps stdout parseable and gives the hint on stderr.
    as_json = cli(runner, store, "--json", "list")
    assert json.loads(as_json.stdout) == []
    assert "this store holds: alice (2), bob (1)" in " ".join(as_json.stderr.split())

    # recall on the wrong entity says the same.
    recalled = cli(runner, store, "recall", "tea")
    assert "this store holds: alice (2), bob (1)" in " ".join(recalled.stderr.split())

    # An entity with memories that match no filter is told so, not sent elsewhere.
    filtered = cli(runner, store, "--entity", "alice", "list", "--tag", "nothing")
    assert "no memories of entity 'alice' match" in " ".join(filtered.stdout.split())


def test_flags_are_shown_without_a_value_in_help(runner: CliRunner) -> None:
    names = ["add", "recall", "list", "get", "forget", "history", "health", "export"]
    commands = [[], *([name] for name in names), ["import"], ["graph"], ["demo"], ["keys"]]
    for command in commands:
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "<bool>" not in result.output, (command, result.output)
    root = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--json\s+Print machine-readable JSON", root), root
    listing = runner.invoke(app, ["list", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--include-superseded\s+Also show", listing), listing


def test_counts_have_their_plural_forms(runner: CliRunner, store: Path) -> None:
    added = cli(runner, store, "add", "Ines keeps a greyhound called Pimiento")
    assert "1 memory added" in added.output, added.output
    recalled = cli(runner, store, "recall", "greyhound", "-k", "1")
    assert "1 memory ·" in recalled.output, recalled.output
    listed = cli(runner, store, "list")
    exported = cli(runner, store, "export", "-")
    forgot = cli(runner, store, "forget", "--all-for-entity", "--yes")
    assert "Forgot 1 memory." in forgot.output
    for result in (added, recalled, listed, exported, forgot):
        assert "1 memories" not in result.output
