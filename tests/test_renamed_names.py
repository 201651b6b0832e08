"""Names renamed by issue 18 (an entity owns memories, a subject is mentioned; the relation
judge; repair vs recovery): every old public name still works and warns."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memtrellis import Health, Memory, MemoryItem, Scope
from memtrellis.lifecycle import LifecycleConfig, plan_additions
from memtrellis.store import KeywordIndex, MemoryGraph
from memtrellis.store._repair_report import StoreRepairReport
from memtrellis.testing import HashingEmbedder, store_of


def _graph() -> tuple[MemoryGraph, MemoryItem]:
    graph = MemoryGraph()
    item = MemoryItem(text="Ana lives in Porto", entities=["Porto"], scope=Scope(entity_id="ana"))
    graph.put(item)
    return graph, item


def test_memory_graph_old_method_names_warn_and_answer_as_the_new_ones() -> None:
    graph, item = _graph()
    pairs = [
        ("tenant_ids", ("ana",), "memory_ids"),
        ("entity_names", ("ana",), "subject_names"),
        ("entity_count", (), "subject_count"),
        ("tenants", (), "entity_ids"),
    ]
    for old, args, new in pairs:
        with pytest.warns(DeprecationWarning, match=f"MemoryGraph.{old} is deprecated"):
            assert getattr(graph, old)(*args) == getattr(graph, new)(*args), old
    with pytest.warns(DeprecationWarning, match="neighbours_by_entity"):
        assert list(graph.neighbours_by_entity(item.id)) == []
    with pytest.warns(DeprecationWarning, match="remove_tenant"):
        assert graph.remove_tenant("ana") == [item.id]
    assert len(graph) == 0 and graph.subject_count() == 0
    index = KeywordIndex()
    index.add("ana", "m1", "tea")
    with pytest.warns(DeprecationWarning, match="drop_tenant"):
        index.drop_tenant("ana")
    assert index.search("ana", "tea", 5) == []


def test_old_module_names_warn_and_are_the_new_objects() -> None:
    import memtrellis.lifecycle.judge as old_judge
    import memtrellis.lifecycle.plan as plan
    import memtrellis.store as store
    import memtrellis.store.graph as graph
    import memtrellis.store.repair as repair
    from memtrellis.lifecycle import relation_judge
    from memtrellis.lifecycle.prompts import RELATION_JUDGE_SCHEMA

    olds = [
        (store, "entity_node_id", graph.subject_node_id),
        (store, "normalize_entity", graph.normalize_subject),
        (store, "RepairReport", store.RecoveryReport),
        (graph, "ENTITY_NODE_PREFIX", graph.SUBJECT_NODE_PREFIX),
        (old_judge, "llm_judge", relation_judge.llm_relation_judge),
        (old_judge, "LLMJudge", relation_judge.LLMRelationJudge),
        (old_judge, "JUDGE_SCHEMA", RELATION_JUDGE_SCHEMA),
        (plan, "Judge", plan.RelationJudge),
        (repair, "rebuild_store", repair.repair_files),
    ]
    for module, name, new in olds:
        with pytest.warns(DeprecationWarning, match=f"{name} is deprecated"):
            assert getattr(module, name) is new, name
    with pytest.raises(AttributeError):
        _ = store.no_such_name


def test_health_lifecycle_config_and_repair_report_keep_their_old_fields() -> None:
    figures = dict(
        path="p", vector_backend="embedded", embedder_model_id="m", embedder_dimension=8,
        total_memories=1, active_memories=1, expired=0, superseded=0, edges_by_kind={},
        recalls=0, recall_latency_avg_ms=0.0, recall_latency_p95_ms=0.0, skipped_inputs=0,
        pending_index_writes=0, size_on_disk_bytes=0,
    )  # fmt: skip
    with pytest.warns(DeprecationWarning, match="Health.tenants is deprecated"):
        old = Health(**figures, entities=3, tenants=2, judge_failures=1, repaired_on_open=4)
    new = Health(
        **figures, subjects=3, entities_with_memories=2, relation_judge_failures=1,
        recovered_on_open=4,
    )  # fmt: skip
    assert old == new
    for name, value in (("entities", 3), ("tenants", 2), ("judge_failures", 1)):
        with pytest.warns(DeprecationWarning, match=f"Health.{name}"):
            assert getattr(new, name) == value
    with pytest.warns(DeprecationWarning, match="repaired_on_open"):
        assert new.repaired_on_open == 4
    with pytest.warns(DeprecationWarning, match="judge_candidates"):
        config = LifecycleConfig(judge_candidates=2)
    assert config.relation_judge_candidates == 2
    with pytest.warns(DeprecationWarning):
        assert config.judge_candidates == 2
    with pytest.warns(DeprecationWarning, match="StoreRepairReport.tenants"):
        report = StoreRepairReport(path="s", tenants=2, entities=5)
    assert (report.entities_with_memories, report.subjects) == (2, 5)
    with pytest.warns(DeprecationWarning):
        assert report.tenants == 2


def test_judge_argument_memory_repair_report_and_export_tenant_still_work(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    calls: list[object] = []

    def judge(new: MemoryItem, candidates: object) -> None:
        calls.append(candidates)

    with Memory(tmp_path / "store", entity_id="ana", embedder=embedder) as m:
        m.add("Ana lives in Lyon", memory_type="fact")
        with pytest.warns(DeprecationWarning, match=r"plan_additions\(judge=\) is deprecated"):
            item = MemoryItem(text="Ana lives in Lyon now", scope=Scope(entity_id="ana"))
            plan_additions(
                store_of(m), [item], [embedder.embed_query(item.text)],
                datetime.now(timezone.utc), judge=judge,
            )  # fmt: skip
        assert calls  # the old keyword still reached the planner
        with pytest.raises(TypeError, match="not both"):
            plan_additions(store_of(m), [], [], datetime.now(timezone.utc), judge=judge,
                           relation_judge=judge)  # fmt: skip
        with pytest.warns(DeprecationWarning, match="repair_report"):
            assert m.repair_report is m.recovery_report
        from memtrellis.graph_export import export_graph

        with store_of(m).reading("ana") as shard, pytest.warns(DeprecationWarning, match="tenant="):
            out = export_graph(shard.graph, tmp_path / "g.json", format="json", tenant="ana")
        kinds = {node["kind"] for node in json.loads(out.read_text())["nodes"]}
        assert kinds == {"memory", "subject"}
