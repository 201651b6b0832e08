"""The HTTP API: store, recall, list, change and forget memories over one shared ``Memory``.

Every route is ``async`` and reaches the store through the facade's async methods, which
run in worker threads, so one slow call never blocks the event loop. Turns posted with
``background: true`` go through the capture queue; shutting the service down drains it.

Examples:
    >>> import tempfile
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
    >>> app = create_app(memory, keys=None)
    >>> sorted(app.openapi()["paths"]["/v1/memories"])
    ['delete', 'get', 'post']
    >>> memory.close()
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, create_model

from memtrellis.errors import InvalidInputError, MemoryNotFoundError
from memtrellis.health import HEALTH_RENAMES
from memtrellis.memory import Memory
from memtrellis.relations import Relations
from memtrellis.service._openapi_tidy import tidy
from memtrellis.service.auth import KeyRing, Principal
from memtrellis.service.error_handlers import install_error_handlers
from memtrellis.service.errors import (
    ForbiddenScopeError,
    NotAuthenticatedError,
    QueryParameterError,
)
from memtrellis.service.metrics import CONTENT_TYPE, ServiceMetrics
from memtrellis.service.middleware import (
    BodyLimitMiddleware,
    MetricsMiddleware,
    SingleHeaderMiddleware,
)
from memtrellis.service.schemas import (
    AddRequest,
    AddResponse,
    CaptureResponse,
    ErrorResponse,
    ForgetResponse,
    HistoryResponse,
    ListResponse,
    PatchRequest,
    QueryBool,
    RecallRequest,
    RecallResponse,
    RelateRequest,
    ScopeId,
)
from memtrellis.types import Health, MemoryItem, MemoryType

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServiceState", "create_app"]

log = logging.getLogger("memtrellis.service")

#: Largest request body accepted by default (1 MiB).
DEFAULT_MAX_BODY_BYTES = 1 << 20

_ERROR_TEXT = {
    400: "Bad input (a typed error says what).",
    401: "No API key, or an unknown one.",
    403: "The key may not act on the entity, process or endpoint named.",
    404: "No such memory in the key's scope (another tenant's memory is never shown).",
    413: "The request body is too large.",
    422: "The request does not match the schema.",
    503: "The store is busy or closing; retry.",
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {
        code: {"model": ErrorResponse, "description": _ERROR_TEXT[code]}
        for code in (*codes, 401, 422, 503)
    }


@dataclass
class ServiceState:
    """What every request shares: the memory, the keys (``None``: no auth) and metrics."""

    memory: Memory
    keys: KeyRing | None
    default_entity: str
    metrics: ServiceMetrics


_bearer = HTTPBearer(
    auto_error=False, description="An API key made by `memtrellis keys add`, as a bearer token."
)


def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


async def _principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    state = _state(request)
    if state.keys is None:
        return Principal(entity_ids=None, monitor=True, default_entity=state.default_entity)
    if credentials is None:
        raise NotAuthenticatedError()
    record = state.keys.authenticate(credentials.credentials)
    if record is None:
        raise NotAuthenticatedError("unknown or revoked API key")
    return Principal.of(record)


Caller = Annotated[Principal, Depends(_principal)]
State = Annotated[ServiceState, Depends(_state)]
MemoryId = Annotated[str, Path(min_length=1, max_length=128, description="A memory id.")]
EntityQuery = Annotated[
    ScopeId | None, Query(description="Whose memory; default: the key's entities.")
]


async def _find(state: ServiceState, caller: Principal, memory_id: str, entity: str | None) -> Any:
    """The memory with this id in the caller's scope, or 404 (same for other tenants')."""
    for tenant in caller.entities_for(entity):
        try:
            item: MemoryItem = await state.memory.aget(memory_id, entity_id=tenant)
        except MemoryNotFoundError:
            continue
        if caller.process_id is None or item.scope.process_id == caller.process_id:
            return item
    raise MemoryNotFoundError(memory_id)


#: Query parameters that may be repeated; every other one takes a single value.
_LIST_PARAMETERS = frozenset({"memory_type", "tags"})


_QUERY_NAMES: dict[tuple[str, frozenset[str]], frozenset[str]] = {}


def _query_names(route: APIRoute) -> frozenset[str]:
    key = (route.path, frozenset(route.methods or ()))
    if key in _QUERY_NAMES:
        return _QUERY_NAMES[key]
    names: set[str] = set()
    pending = [route.dependant]
    while pending:  # the route's own parameters and those of its dependencies
        dependant = pending.pop()
        names.update(field.alias for field in dependant.query_params)
        pending.extend(dependant.dependencies)
    _QUERY_NAMES[key] = frozenset(names)
    return _QUERY_NAMES[key]


async def _strict_query(request: Request) -> None:
    """Refuse unknown query parameters, and ``?session_id=a&session_id=b`` rather than
    silently keep one of the two."""
    route = request.scope.get("route")
    known = _query_names(route) if isinstance(route, APIRoute) else frozenset()
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name not in known:
            raise QueryParameterError(f"unknown query parameter {name!r}")
        if name in seen and name not in _LIST_PARAMETERS:
            raise QueryParameterError(f"query parameter {name!r} takes one value")
        seen.add(name)


router = APIRouter(dependencies=[Depends(_strict_query)])


@router.post(
    "/v1/memories",
    status_code=201,
    response_model=AddResponse,
    responses={
        202: {"model": CaptureResponse, "description": "Queued for background capture."},
        **_errors(400, 403, 413),
    },
    summary="Remember text or messages",
)
async def add_memories(body: AddRequest, caller: Caller, state: State) -> Any:
    """Store ``text`` or ``messages`` now (201), or queue them with ``background`` (202)."""
    entity = caller.entity_for(body.entity_id)
    process = caller.process_for(body.process_id)
    if body.background:
        if body.memory_type is not None or body.entities:
            raise InvalidInputError("memory_type and entities cannot be given with background")
        capture_id = await asyncio.to_thread(
            state.memory.capture,
            body.data(),
            entity_id=entity,
            process_id=process,
            session_id=body.session_id,
            mode=body.mode,
            tags=body.tags,
            metadata=body.metadata,
        )
        return JSONResponse({"capture_id": capture_id}, status_code=202)
    items = await state.memory.aadd(
        body.data(),
        entity_id=entity,
        process_id=process,
        session_id=body.session_id,
        memory_type=body.memory_type,
        tags=body.tags,
        entities=body.entities,
        metadata=body.metadata,
        mode=body.mode,
    )
    return AddResponse(memories=items)


@router.post(
    "/v1/recall",
    response_model=RecallResponse,
    responses=_errors(400, 403, 413),
    summary="Recall the memories most relevant to a query",
)
async def recall(body: RecallRequest, caller: Caller, state: State) -> Any:
    """Items with scores and explanations, what was skipped, and the memory context."""
    result = await state.memory.arecall(
        body.query,
        entity_id=caller.entity_for(body.entity_id),
        process_id=caller.process_for(body.process_id),
        session_id=body.session_id,
        k=body.k,
        token_budget=body.token_budget,
        as_of=body.as_of,
        include_superseded=body.include_superseded,
        include_expired=body.include_expired,
        graph_context=body.graph_context,
        memory_types=body.memory_types,
        tags=body.tags,
        context_hint=body.context_hint,
    )
    opened = []
    if body.open_items:
        opened = await state.memory.aopen_items(
            entity_id=result.scope.entity_id, process_id=result.scope.process_id, as_of=body.as_of
        )
    answer = RecallResponse.of(result, token_budget=body.token_budget, open_items=opened)
    # The hot path: serialise once with pydantic-core rather than validate and encode again.
    return Response(answer.model_dump_json(), media_type="application/json")


@router.post(
    "/v1/relate",
    response_model=Relations,
    responses=_errors(400, 403, 413),
    summary="How two names or memories are related: paths through the memory graph",
)
async def relate(body: RelateRequest, caller: Caller, state: State) -> Relations:
    """The paths between ``a`` and ``b``, each edge's kind, the memories and their sources,
    best supported first (no LLM)."""
    return await state.memory.arelate(
        body.a,
        body.b,
        entity_id=caller.entity_for(body.entity_id),
        process_id=caller.process_for(body.process_id),
        max_hops=body.max_hops,
        limit=body.limit,
        include_superseded=body.include_superseded,
        as_of=body.as_of,
    )


@router.get(
    "/v1/memories",
    response_model=ListResponse,
    responses=_errors(400, 403),
    summary="List memories with filters and paging",
)
async def list_memories(
    caller: Caller,
    state: State,
    entity_id: EntityQuery = None,
    process_id: Annotated[ScopeId | None, Query()] = None,
    session_id: Annotated[ScopeId | None, Query()] = None,
    memory_type: Annotated[list[MemoryType] | None, Query(description="Any of these.")] = None,
    tags: Annotated[list[str] | None, Query(description="Any of these tags.")] = None,
    key: Annotated[str | None, Query(max_length=200)] = None,
    include_superseded: QueryBool = True,
    include_expired: QueryBool = True,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> Any:
    """Memories of one entity in the order they were stored."""
    filters: dict[str, Any] = {
        "include_superseded": include_superseded,
        "include_expired": include_expired,
    }
    if memory_type:
        filters["memory_type"] = [t.value for t in memory_type]
    if tags:
        filters["tags"] = tags
    if key is not None:
        filters["key"] = key
    page = await state.memory.alist(
        entity_id=caller.entity_for(entity_id),
        process_id=caller.process_for(process_id),
        session_id=session_id,
        limit=limit + 1,
        offset=offset,
        filters=filters,
    )
    more = len(page) > limit
    return ListResponse(
        items=page[:limit], limit=limit, offset=offset, next_offset=offset + limit if more else None
    )


@router.delete(
    "/v1/memories",
    response_model=ForgetResponse,
    responses=_errors(400, 403),
    summary="Forget every memory of an entity",
)
async def forget_entity(
    caller: Caller,
    state: State,
    entity_id: Annotated[ScopeId, Query(description="The entity to forget entirely.")],
) -> Any:
    """Delete every memory of ``entity_id`` from graph and index; says how many."""
    tenant = caller.entity_for(entity_id)
    if caller.process_id is not None:
        raise ForbiddenScopeError("a key bound to one process cannot forget a whole entity")
    return ForgetResponse(forgotten=await state.memory.aforget(entity_id=tenant))


async def _found(
    memory_id: MemoryId, caller: Caller, state: State, entity_id: EntityQuery = None
) -> MemoryItem:
    item: MemoryItem = await _find(state, caller, memory_id, entity_id)
    return item


#: The memory a ``/v1/memories/{memory_id}`` route names, found in the caller's scope.
Found = Annotated[MemoryItem, Depends(_found)]


@router.get(
    "/v1/memories/{memory_id}",
    response_model=MemoryItem,
    responses=_errors(403, 404),
    summary="Get one memory",
)
async def get_memory(item: Found) -> Any:
    """One memory with its sources and lifecycle fields."""
    return item


@router.patch(
    "/v1/memories/{memory_id}",
    response_model=MemoryItem,
    responses=_errors(400, 403, 404, 413),
    summary="Change fields of a memory",
)
async def update_memory(item: Found, body: PatchRequest, state: State) -> Any:
    """Fields given replace the stored ones; the change is kept in the history."""
    changes = body.model_dump(exclude_none=True)
    return await state.memory.aupdate(item.id, entity_id=item.scope.entity_id, **changes)


@router.delete(
    "/v1/memories/{memory_id}",
    response_model=ForgetResponse,
    responses=_errors(403, 404),
    summary="Forget one memory",
)
async def forget_memory(item: Found, state: State) -> Any:
    """Delete one memory from graph and index."""
    forgotten = await state.memory.aforget(item.id, entity_id=item.scope.entity_id)
    return ForgetResponse(forgotten=forgotten)


@router.get(
    "/v1/memories/{memory_id}/history",
    response_model=HistoryResponse,
    responses=_errors(403, 404),
    summary="What happened to a memory",
)
async def memory_history(item: Found, state: State) -> Any:
    """Created, merged, updated, superseded: oldest first."""
    events = await state.memory.ahistory(item.id, entity_id=item.scope.entity_id)
    return HistoryResponse(memory_id=item.id, events=events)


def _health_response() -> type[BaseModel]:
    """`Health` as the service sends it: the fields renamed in 0.2 also under their old
    names, marked deprecated in the OpenAPI document, for one release."""
    fields: dict[str, Any] = {
        name: (field.annotation, field) for name, field in Health.model_fields.items()
    }
    for old, new in HEALTH_RENAMES.items():
        fields[old] = (
            int,
            Field(0, description=f"Deprecated: renamed to {new}.", deprecated=True),
        )
    model: type[BaseModel] = create_model(
        "HealthResponse", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


HealthResponse = _health_response()


@router.get(
    "/health",
    response_model=HealthResponse,
    responses=_errors(403),
    summary="Store figures (monitor keys)",
)
async def health(caller: Caller, state: State) -> Any:
    """Counts, recall latency, capture queue and disk size of the whole store.

    The fields renamed in 0.2 (``entities``, ``tenants``, ``judge_failures``,
    ``repaired_on_open``) are still sent under their old names too, for one release.
    """
    caller.require_monitor()
    figures = await state.memory.ahealth()
    body = figures.model_dump(mode="json")
    for old, new in HEALTH_RENAMES.items():
        body[old] = body[new]
    return HealthResponse.model_validate(body)


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text format.",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        **_errors(403),
    },
    summary="Prometheus metrics (monitor keys)",
)
async def metrics(caller: Caller, state: State) -> Response:
    """Requests and latencies by route, memory totals, capture queue, extraction failures."""
    caller.require_monitor()
    body = await asyncio.to_thread(state.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)


def create_app(
    memory: Memory | None,
    *,
    keys: KeyRing | None,
    default_entity: str = "default",
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    close_memory: bool = True,
) -> FastAPI:
    """The FastAPI application over ``memory``.

    Args:
        memory: The store every request shares; ``None`` builds the app only to read its
            OpenAPI document.
        keys: The API keys; ``None`` runs without authentication (loopback only: the
            ``serve`` command enforces that).
        default_entity: The entity of requests that name none when there is no auth.
        max_body_bytes: Larger request bodies get 413.
        close_memory: Close ``memory`` (draining the capture queue) on shutdown.

    Examples:
        >>> create_app(None, keys=None).openapi()["info"]["title"]
        'memtrellis'
    """
    from memtrellis import __version__

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if memory is not None and close_memory:
                log.info("draining the capture queue and closing the store")
                await asyncio.to_thread(memory.close)

    app = FastAPI(
        title="memtrellis",
        version=__version__,
        summary="Long-term memory for chat models: store, recall, list and forget memories.",
        description=(
            "Every `/v1` route needs `Authorization: Bearer <key>` (keys from "
            "`memtrellis keys add`), bound to the entities and process it may touch. "
            "Another tenant's memory is answered with 404. `/health` and `/metrics` need "
            "a monitor key. Errors are JSON: `{error, message, details}`."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    metrics = ServiceMetrics(memory.health if memory is not None else None)
    if memory is not None:
        app.state.service = ServiceState(memory, keys, default_entity, metrics)
    app.include_router(router)
    generate = app.openapi
    # FastAPI caches the document on the app: tidy it once, on first use.
    setattr(app, "openapi", lambda: app.openapi_schema or tidy(generate()))  # noqa: B010
    install_error_handlers(app)
    app.state.metrics = metrics  # for the server's protocol (memtrellis.service.server)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    app.add_middleware(SingleHeaderMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=metrics, router=router)  # outermost
    return app
