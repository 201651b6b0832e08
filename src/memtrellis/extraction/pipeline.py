"""The reader entry point: normalise → windows → extract (fine or fast) → quality.

Fine mode is written once as a sans-I/O generator per window that yields the LLM calls it
needs and receives their replies; a thin sync driver and a thin async driver run it, so
the logic is never copied between sync and async.

Examples:
    >>> from memtrellis.testing import ScriptedLLM
    >>> from memtrellis.types import Scope
    >>> reply = '{"memories": [{"value": "Ana lives in Porto", "memory_type": "fact"}]}'
    >>> llm = ScriptedLLM([reply])
    >>> result = Extractor(llm).extract(
    ...     [{"role": "user", "content": "I'm Ana, I live in Porto", "id": "m1"}],
    ...     Scope(entity_id="ana"), mode="fine")
    >>> [(i.text, i.sources[0].message_id) for i in result.items]
    [('Ana lives in Porto', 'm1')]
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tenacity import AsyncRetrying, Retrying, stop_after_attempt, wait_exponential

from memtrellis._deprecated import renamed
from memtrellis._progress import bar
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.exchanges import Provenance, tool_provenance, with_tool_sources
from memtrellis.extraction.failures import (
    ExtractionFailure,
    FailureCounts,
    call_with_timeout,
    failure_kind,
)
from memtrellis.extraction.fast import FAST_UNITS, fast_items
from memtrellis.extraction.fine import FineResult, items_from_reply
from memtrellis.extraction.model import ExtractionResult, LLMRequest, Mode, Normalized, Window
from memtrellis.extraction.normalize import extractable, normalize
from memtrellis.extraction.prompts.custom import check_prompt, system_prompt
from memtrellis.extraction.prompts.extract import EXTRACTION_SCHEMA, build_extraction_messages
from memtrellis.extraction.prompts.skill import SKILL_SCHEMA
from memtrellis.extraction.quality import (
    JUDGE_SCHEMA,
    REWRITE_SCHEMA,
    apply_judgement,
    apply_rewrite,
    build_judge_messages,
    build_rewrite_messages,
)
from memtrellis.extraction.skills import (
    SkillOutcome,
    Trajectory,
    skill_from_reply,
    skill_messages,
    trajectories,
)
from memtrellis.extraction.windows import (
    BURST_GAP,
    BURST_MAX_TOKENS,
    chat_windows,
    document_windows,
)
from memtrellis.llm import LLM, acomplete, as_llm, complete
from memtrellis.types import MemoryItem, MemoryType, Scope, utcnow

__all__ = ["ExtractionConfig", "ExtractionResult", "Extractor", "LLMRequest"]

log = logging.getLogger("memtrellis.extraction")


#: The capture settings ExtractionConfig held before CaptureConfig, and their defaults.
_CAPTURE_DEFAULTS = {"capture_attempts": 4, "capture_backoff": 0.5, "capture_max_backoff": 30.0}


@dataclass(frozen=True)
class ExtractionConfig:
    """Knobs of the extraction core; the defaults follow the design.

    Pass it as ``Memory(extraction=...)``.

    Attributes:
        max_tokens: Longest extraction window, in ``o200k_base`` tokens.
        overlap_tokens: Tokens a window repeats from the one before it.
        max_messages: Most messages in one window.
        message_overlap: Messages a window repeats from the one before it.
        extract_tools: Also extract from tool results (a tool's output is otherwise only
            a source of the memories made from the turn; see
            `memtrellis.extraction.exchanges`).
        skills: In fine mode, ask the LLM how each successful tool trajectory did its task
            and keep the answer as a ``skill`` memory (`memtrellis.extraction.skills`).
        rewrite: A second LLM pass resolves pronouns and adds missing subjects.
        judge: A third LLM pass drops memories their sources do not support.
        llm_attempts: Tries per LLM call of [`Memory.add`][memtrellis.Memory.add] before
            the fallback memory is kept.
        llm_timeout: Seconds one LLM call may take before it counts as a timeout (and is
            tried again); ``None`` waits forever.
        llm_backoff: Seconds before the second try of an LLM call; doubles each try.
        llm_max_backoff: Longest wait between two tries of an LLM call.
        capture_attempts: Deprecated: ``CaptureConfig(attempts=...)``, passed as
            ``Memory(capture=...)`` (capture's settings are not extraction's). Still
            honoured, with a ``DeprecationWarning``, when given here.
        capture_backoff: Deprecated: ``CaptureConfig(backoff=...)``.
        capture_max_backoff: Deprecated: ``CaptureConfig(max_backoff=...)``.
        concurrency: Windows extracted at once by the async driver.
        fast_unit: How fast mode cuts a conversation: ``"burst"`` (consecutive messages
            of one speaker said close together are one memory, each message one of its
            sources) or ``"message"`` (one memory per message). See
            `memtrellis.extraction.fast`.
        burst_gap: Longest pause, in seconds, between two messages of one burst.
        burst_max_tokens: Most tokens of message text in one burst.
        attachment_bytes: Inline bytes of an image, file or audio part up to this size
            are kept (base64) in its message's source; 0, the default, keeps none (the
            sha256, size, media type, URL or file id and caption are always kept). See
            `memtrellis.attachments`.
        instructions: The application's own instructions for fine-mode extraction,
            appended to the built-in system prompt ("Only remember what matters for
            cooking.").
        prompt: A whole system prompt of the application's own instead of the built-in
            one; it must hold ``{reply_format}`` (memtrellis writes the reply format there)
            and no other placeholder (literal braces doubled). Checked here: an
            [`InvalidInputError`][memtrellis.errors.InvalidInputError] names what is wrong. See
            `memtrellis.extraction.prompts.custom`.

    Examples:
        >>> import tempfile
        >>> from memtrellis import ExtractionConfig, Memory
        >>> from memtrellis.testing import HashingEmbedder, ScriptedLLM
        >>> config = ExtractionConfig(max_messages=4, rewrite=True)
        >>> llm = ScriptedLLM(lambda messages: '{"memories": []}')
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder(), llm=llm,
        ...             extraction=config) as memory:
        ...     memory.extractor.config.max_messages
        4
    """

    max_tokens: int = 1024
    overlap_tokens: int = 200
    max_messages: int = 10
    message_overlap: int = 2
    extract_tools: bool = False
    rewrite: bool = False  # LLM resolves pronouns and adds missing subjects
    judge: bool = False  # LLM drops memories its sources do not support
    llm_attempts: int = 3
    llm_timeout: float | None = 120.0
    llm_backoff: float = 0.2
    llm_max_backoff: float = 2.0
    # Deprecated (CaptureConfig): None when not given, then read as CaptureConfig's default.
    capture_attempts: int | None = None
    capture_backoff: float | None = None
    capture_max_backoff: float | None = None
    concurrency: int = 4  # windows extracted at once by the async driver
    instructions: str | None = None
    prompt: str | None = None
    fast_unit: str = "burst"
    burst_gap: float = BURST_GAP
    burst_max_tokens: int = BURST_MAX_TOKENS
    attachment_bytes: int = 0
    skills: bool = True  # fine mode: a skill memory from each successful tool trajectory

    #: Whether the deprecated ``capture_*`` fields were given.
    legacy_capture: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, default in _CAPTURE_DEFAULTS.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)  # read as before: the default
            else:
                object.__setattr__(self, "legacy_capture", True)
                renamed(f"ExtractionConfig.{name}", f"CaptureConfig.{name[8:]}", stacklevel=4)
        for name in ("instructions", "prompt"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInputError(f"{name} must be non-empty text or None")
        if self.prompt is not None:
            check_prompt(self.prompt)
        if self.fast_unit not in FAST_UNITS:
            raise InvalidInputError(
                f"fast_unit must be one of {FAST_UNITS}, not {self.fast_unit!r}"
            )
        if not self.burst_gap >= 0 or self.burst_max_tokens < 1:
            raise InvalidInputError("burst_gap must be >= 0 and burst_max_tokens >= 1")
        if isinstance(self.attachment_bytes, bool) or not (
            isinstance(self.attachment_bytes, int) and self.attachment_bytes >= 0
        ):
            raise InvalidInputError("attachment_bytes must be an int >= 0 (0 keeps no bytes)")
        if self.llm_timeout is not None and self.llm_timeout <= 0:
            raise InvalidInputError("llm_timeout must be positive or None")
        if self.llm_attempts < 1 or (self.capture_attempts or 0) < 1:
            raise InvalidInputError("llm_attempts and capture_attempts must be at least 1")
        if min(self.llm_backoff, self.llm_max_backoff, self.capture_backoff or 0.0) < 0:
            raise InvalidInputError("backoff times cannot be negative")


Step = Generator[LLMRequest, "str | None", FineResult]


def _fine_window(window: Window, scope: Scope, now: datetime, config: ExtractionConfig) -> Step:
    system = None
    if config.prompt is not None or config.instructions is not None:
        system = system_prompt(
            window.language, prompt=config.prompt, instructions=config.instructions
        )
    raw = yield LLMRequest(build_extraction_messages(window, system), EXTRACTION_SCHEMA, "extract")
    result = items_from_reply(raw, window, scope, now=now)
    if result.fallback or not result.items:
        return result
    if config.rewrite:
        raw = yield LLMRequest(
            build_rewrite_messages(result.items, window), REWRITE_SCHEMA, "rewrite"
        )
        result.items = apply_rewrite(result.items, raw)
    if config.judge:
        raw = yield LLMRequest(build_judge_messages(result.items, window), JUDGE_SCHEMA, "judge")
        result.items = apply_judgement(result.items, raw)
    return result


class Extractor:
    """Turns messages, texts and documents into memory items.

    Args:
        llm: Any [`memtrellis.llm.LLM`][memtrellis.LLM]; required for fine mode.
        config: Window sizes, quality passes, retries.

    Examples:
        >>> from memtrellis import Scope
        >>> result = Extractor().extract("Ana moved to Porto.", Scope(entity_id="ana"))
        >>> result.mode.value, [item.text for item in result.items]
        ('fast', ['Ana moved to Porto.'])
    """

    def __init__(self, llm: LLM | None = None, config: ExtractionConfig | None = None) -> None:
        self.llm = as_llm(llm) if llm is not None else None
        self.config = config or ExtractionConfig()
        #: LLM calls that still failed after their last try.
        self.llm_failures = 0
        #: Timeouts, errors and garbage replies of every try, and the tries repeated.
        self.failures = FailureCounts()

    # -- shared, pure parts ----------------------------------------------------------------
    def resolve_mode(self, mode: Mode | str | None) -> Mode:
        """The mode a call runs in: as asked, else fine with an LLM and fast without."""
        if mode is not None and not isinstance(mode, str):  # Enum would repr any object
            raise InvalidInputError(f"mode must be 'fine' or 'fast', not {type(mode).__name__}")
        try:
            chosen = Mode(mode) if mode is not None else (Mode.FINE if self.llm else Mode.FAST)
        except ValueError as exc:
            raise InvalidInputError(f"mode must be 'fine' or 'fast', not {mode!r}") from exc
        if chosen is Mode.FINE and self.llm is None:
            raise InvalidInputError("fine mode needs an LLM: Memory(llm=...) or Extractor(llm)")
        return chosen

    def _chat_windows(self, normalized: Normalized) -> list[Window]:
        cfg = self.config
        return [
            window
            for conversation in normalized.conversations
            if any(extractable(t, extract_tools=cfg.extract_tools) for t in conversation)
            for window in chat_windows(
                [turn for turn in conversation if not turn.context],
                max_tokens=cfg.max_tokens,
                overlap_tokens=cfg.overlap_tokens,
                max_messages=cfg.max_messages,
                message_overlap=cfg.message_overlap,
            )
        ]

    def _doc_windows(self, normalized: Normalized) -> list[Window]:
        cfg = self.config
        return [
            window
            for document in normalized.documents
            for window in document_windows(
                document, max_tokens=cfg.max_tokens, overlap_tokens=cfg.overlap_tokens
            )
        ]

    def _prepare(
        self, data: Any, scope: Scope | None, mode: Mode | str | None, now: datetime | None
    ) -> tuple[Mode, Normalized, datetime, Scope]:
        if not isinstance(scope, Scope):
            raise InvalidInputError("extraction needs a Scope with at least an entity_id")
        moment = now or utcnow()
        chosen = self.resolve_mode(mode)
        return (
            chosen,
            normalize(
                data,
                now=moment,
                extract_tools=self.config.extract_tools,
                attachment_bytes=self.config.attachment_bytes,
            ),
            moment,
            scope,
        )

    def _fast(
        self,
        normalized: Normalized,
        docs: list[Window],
        scope: Scope,
        now: datetime,
        memory_type: MemoryType | None,
        tags: Sequence[str],
        entities: Sequence[str],
        metadata: Mapping[str, Any] | None,
        one_turn: bool = False,
    ) -> ExtractionResult:
        found = [tool_provenance(conversation) for conversation in normalized.conversations]
        items = fast_items(
            normalized,
            docs,
            scope,
            now=now,
            memory_type=memory_type,
            tags=tags,
            entities=entities,
            metadata=metadata,
            extract_tools=self.config.extract_tools,
            unit=self.config.fast_unit,
            burst_gap=self.config.burst_gap,
            burst_max_tokens=self.config.burst_max_tokens,
            one_turn=one_turn,
            skip={message_id for provenance in found for message_id in provenance.folded},
        )
        with_tool_sources(items, found)
        return ExtractionResult(items, Mode.FAST, normalized.skipped, len(docs))

    def _skill_requests(self, normalized: Normalized) -> list[tuple[Trajectory, LLMRequest]]:
        found = trajectories(normalized.conversations) if self.config.skills else []
        return [(t, LLMRequest(skill_messages(t), SKILL_SCHEMA, "skill")) for t in found]

    def _skill(self, result: ExtractionResult, outcome: SkillOutcome, answered: bool) -> None:
        """Keep a skill, or count a reply that could not be used (never a failed turn)."""
        if outcome.item is not None:
            result.items.append(outcome.item)
            result.skills += 1
        elif outcome.bad:
            result.skills_skipped += 1
            if answered:  # a failed call is counted as its timeout or error already
                self.failures.count("garbage")
            log.info("skill reply unusable; no skill kept: %s", outcome.error)

    @staticmethod
    def _finish(
        result: ExtractionResult,
        fine: Sequence[FineResult],
        tags: Sequence[str],
        entities: Sequence[str],
        metadata: Mapping[str, Any] | None,
        provenance: Sequence[Provenance] = (),
    ) -> ExtractionResult:
        seen: dict[str, MemoryItem] = {}
        for outcome in fine:
            result.fallbacks += int(outcome.fallback)
            result.errors.extend(outcome.errors)
            for item in [*outcome.items, *([outcome.summary] if outcome.summary else [])]:
                # Overlapping windows often yield the same memory twice: keep one, with
                # the sources of both.
                twin = seen.get(" ".join(item.text.casefold().split()))
                if twin is not None:
                    known = {(s.message_id, s.content) for s in twin.sources}
                    twin.sources = [
                        *twin.sources,
                        *(s for s in item.sources if (s.message_id, s.content) not in known),
                    ]
                    continue
                seen[" ".join(item.text.casefold().split())] = item
        for item in seen.values():
            if tags:
                item.tags = [*item.tags, *tags]
            if entities:
                item.entities = [*item.entities, *entities]
            if metadata:
                item.metadata = {**item.metadata, **metadata}
        result.items = list(seen.values())
        with_tool_sources(result.items, provenance)
        return result

    # -- sync -------------------------------------------------------------------------------
    def extract(
        self,
        data: Any,
        scope: Scope,
        *,
        mode: Mode | str | None = None,
        now: datetime | None = None,
        memory_type: MemoryType | None = None,
        tags: Sequence[str] = (),
        entities: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        strict: bool = False,
        progress: bool | None = False,
        one_turn: bool = False,
    ) -> ExtractionResult:
        """Extract memories from ``data`` (messages, conversations, texts or document paths).

        By default a failed LLM call is tried ``llm_attempts`` times and a window whose
        reply stays unusable becomes one fallback memory; a partly usable reply keeps what
        it could salvage. ``strict=True`` (captured turns) tries each call once and
        raises `ExtractionFailure` (`memtrellis.extraction.failures`) on a timeout,
        an error or any reply that is not usable whole, so that the caller can try the
        whole turn again later: a turn is stored from whole replies only, or not at all.
        ``progress``: a bar of the fine-mode windows on stderr (``None``: when stderr is
        a terminal and the work lasts; see `memtrellis._progress`). ``one_turn``: ``data``
        is one captured turn, sent before one reply, so in fast mode its undated messages
        may form bursts (`memtrellis.extraction.fast`).
        """
        chosen, normalized, moment, scope = self._prepare(data, scope, mode, now)
        docs = self._doc_windows(normalized)
        if chosen is Mode.FAST:
            return self._fast(
                normalized, docs, scope, moment, memory_type, tags, entities, metadata, one_turn
            )
        windows = self._chat_windows(normalized) + docs
        outcomes: list[FineResult] = []
        with bar(progress, desc="extracting", total=len(windows), unit="window") as shown:
            for window in windows:
                outcomes.append(
                    self._drive(_fine_window(window, scope, moment, self.config), strict)
                )
                shown.update(1)
        result = ExtractionResult([], chosen, normalized.skipped, len(windows))
        found = [tool_provenance(turns) for turns in normalized.conversations]
        self._finish(result, outcomes, tags, entities, metadata, found)
        for trajectory, request in self._skill_requests(normalized):
            raw = self._call(request)
            self._skill(
                result, skill_from_reply(raw, trajectory, scope, now=moment), raw is not None
            )
        return result

    def _drive(self, step: Step, strict: bool = False) -> FineResult:
        assert self.llm is not None
        answered = True
        try:
            request = next(step)
            while True:
                reply = self._call(request, strict)
                answered = answered and reply is not None
                request = step.send(reply)
        except StopIteration as done:
            outcome: FineResult = done.value
            return self._judge_reply(outcome, strict, answered)

    def _judge_reply(self, outcome: FineResult, strict: bool, answered: bool) -> FineResult:
        """Count a reply that cannot be used whole; in strict mode, refuse it.

        ``answered`` is false when a call failed (already counted as a timeout or error).
        """
        if answered and (outcome.fallback or outcome.partial):
            self.failures.count("garbage")
            detail = outcome.errors[-1] if outcome.errors else "unusable reply"
            if strict:  # the caller tries the whole turn again later
                raise ExtractionFailure("garbage", detail)
            if outcome.fallback:
                log.warning("extraction reply unusable; the window is kept whole: %s", detail)
            else:
                log.info("extraction reply repaired or partly invalid: %s", detail)
        elif outcome.fallback and not strict:
            log.warning("extraction call failed; the window is kept whole as a fallback memory")
        return outcome

    def _retrying(self, attempts: int) -> dict[str, Any]:
        cfg = self.config
        return {
            "stop": stop_after_attempt(attempts),
            "wait": wait_exponential(multiplier=cfg.llm_backoff, max=cfg.llm_max_backoff),
            "reraise": True,
            "before_sleep": lambda _: self.failures.retried(),
        }

    def _failed(self, request: LLMRequest, exc: Exception, strict: bool) -> None:
        self.llm_failures += 1
        log.warning("LLM %s call failed after retries: %s", request.purpose, exc)
        if strict:
            raise ExtractionFailure(failure_kind(exc), f"{type(exc).__name__}: {exc}") from exc

    def _call(self, request: LLMRequest, strict: bool = False) -> str | None:
        assert self.llm is not None
        llm = self.llm

        def once() -> str:
            try:
                return call_with_timeout(
                    lambda: complete(llm, request.messages, request.schema),
                    self.config.llm_timeout,
                )
            except Exception as exc:
                self.failures.count(failure_kind(exc))
                raise

        try:
            for attempt in Retrying(**self._retrying(1 if strict else self.config.llm_attempts)):
                with attempt:
                    return once()
        except Exception as exc:
            self._failed(request, exc, strict)
        return None

    # -- async ------------------------------------------------------------------------------
    async def aextract(
        self,
        data: Any,
        scope: Scope,
        *,
        mode: Mode | str | None = None,
        now: datetime | None = None,
        memory_type: MemoryType | None = None,
        tags: Sequence[str] = (),
        entities: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        progress: bool | None = False,
    ) -> ExtractionResult:
        """Async [`extract`][memtrellis.extraction.Extractor.extract]: windows are extracted
        concurrently, the loop never blocks."""
        chosen, normalized, moment, scope = await asyncio.to_thread(
            self._prepare, data, scope, mode, now
        )
        docs = await asyncio.to_thread(self._doc_windows, normalized)
        if chosen is Mode.FAST:
            return await asyncio.to_thread(
                self._fast, normalized, docs, scope, moment, memory_type, tags, entities, metadata
            )
        windows = await asyncio.to_thread(self._chat_windows, normalized) + docs
        gate = asyncio.Semaphore(self.config.concurrency)

        with bar(progress, desc="extracting", total=len(windows), unit="window") as shown:

            async def one(window: Window) -> FineResult:
                async with gate:
                    done = await self._adrive(_fine_window(window, scope, moment, self.config))
                shown.update(1)
                return done

            outcomes = await asyncio.gather(*(one(w) for w in windows))
        result = ExtractionResult([], chosen, normalized.skipped, len(windows))
        found = [tool_provenance(turns) for turns in normalized.conversations]
        self._finish(result, outcomes, tags, entities, metadata, found)

        async def skill(trajectory: Trajectory, request: LLMRequest) -> tuple[SkillOutcome, bool]:
            async with gate:
                raw = await self._acall(request)
            return skill_from_reply(raw, trajectory, scope, now=moment), raw is not None

        for outcome, answered in await asyncio.gather(
            *(skill(*pair) for pair in self._skill_requests(normalized))
        ):
            self._skill(result, outcome, answered)
        return result

    async def _adrive(self, step: Step) -> FineResult:
        answered = True
        try:
            request = next(step)
            while True:
                reply = await self._acall(request)
                answered = answered and reply is not None
                request = step.send(reply)
        except StopIteration as done:
            outcome: FineResult = done.value
            return self._judge_reply(outcome, False, answered)

    async def _acall(self, request: LLMRequest) -> str | None:
        assert self.llm is not None
        llm = self.llm

        async def once() -> str:
            try:
                return await asyncio.wait_for(
                    acomplete(llm, request.messages, request.schema), self.config.llm_timeout
                )
            except Exception as exc:
                self.failures.count(failure_kind(exc))
                raise

        try:
            async for attempt in AsyncRetrying(**self._retrying(self.config.llm_attempts)):
                with attempt:
                    return await once()
        except Exception as exc:
            self._failed(request, exc, strict=False)
        return None
