"""Prometheus figures of one service: requests and latencies, and the store's own totals.

Each service keeps its own registry (not the process-wide default), so two services in
one process, as in tests, never mix their counts. The store figures are read from
[`memtrellis.Memory.health`][memtrellis.Memory.health] when ``/metrics`` is scraped.

Examples:
    >>> from memtrellis.types import Health
    >>> metrics = ServiceMetrics(health=None)
    >>> metrics.observe("GET", "/health", 200, 0.002)
    >>> metrics.observe_disconnect("POST", "/v1/memories")
    >>> text = metrics.render().decode()
    >>> 'route="/health"' in text, "memtrellis_http_client_disconnects_total" in text
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from memtrellis.types import Health

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

#: The Prometheus text exposition format, version 0.0.4.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _StoreCollector:
    """Store-wide figures, read from ``Memory.health()`` at each scrape."""

    def __init__(self, health: Callable[[], Health]) -> None:
        self._health = health

    def describe(self) -> list[Metric]:
        return []  # figures are only known at scrape time

    def collect(self) -> Iterator[Metric]:
        h = self._health()
        gauges = {
            "memtrellis_memories": ("Memories in the store, every state.", h.total_memories),
            "memtrellis_memories_active": (
                "Memories neither superseded nor expired.",
                h.active_memories,
            ),
            "memtrellis_memories_superseded": ("Memories superseded.", h.superseded),
            "memtrellis_entities": (
                "Subjects (people, places, things) the memories mention.",
                h.subjects,
            ),
            "memtrellis_tenants": (
                "Entities (entity ids) holding memories.",
                h.entities_with_memories,
            ),
            "memtrellis_capture_queue_depth": (
                "Captured turns waiting for extraction.",
                h.capture_queue_depth,
            ),
            "memtrellis_store_size_bytes": ("Store size on disk.", h.size_on_disk_bytes),
        }
        for name, (text, value) in gauges.items():
            yield GaugeMetricFamily(name, text, value=value)
        failures = CounterMetricFamily(
            "memtrellis_extraction_failures",
            "Extraction failures since the service started, by kind.",
            labels=["kind"],
        )
        failures.add_metric(["capture"], h.capture_failures)
        failures.add_metric(["llm"], h.llm_failures)
        failures.add_metric(["judge"], h.relation_judge_failures)
        failures.add_metric(["fallback"], h.extraction_fallbacks)
        failures.add_metric(["timeout"], h.extraction_timeouts)
        failures.add_metric(["error"], h.extraction_errors)
        failures.add_metric(["garbage"], h.extraction_garbage)
        yield failures
        adapters = CounterMetricFamily(
            "memtrellis_adapter_failures",
            "Fail-open failures adapters reported (Memory.report_failure), by kind.",
            labels=["kind"],
        )
        for kind in ("recall", "capture", "context"):
            adapters.add_metric([kind], getattr(h, f"adapter_{kind}_failures"))
        yield adapters
        yield CounterMetricFamily(
            "memtrellis_recalls", "Recalls since the service started.", value=h.recalls
        )


class ServiceMetrics:
    """Request counters, latency histograms and the store collector in one registry.

    Args:
        health: Returns the store's health figures; ``None`` leaves them out.
    """

    def __init__(self, health: Callable[[], Health] | None) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "memtrellis_http_requests",
            "HTTP requests by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.disconnects = Counter(
            "memtrellis_http_client_disconnects",
            "HTTP requests whose client received no answer (it went away first, or the "
            "server closed the connection), by method and route template.",
            ["method", "route"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "memtrellis_http_request_duration_seconds",
            "HTTP request latency by method and route template.",
            ["method", "route"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        if health is not None:
            self.registry.register(_StoreCollector(health))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one request and its latency."""
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def observe_disconnect(self, method: str, route: str) -> None:
        """Count one request whose client received no answer (no status, no latency)."""
        self.disconnects.labels(method, route).inc()

    def render(self) -> bytes:
        """Everything in the Prometheus text format (calls ``health`` when set)."""
        return generate_latest(self.registry)
