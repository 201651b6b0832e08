"""memory.register(litellm): the real LiteLLM, routing ``openai/...`` models to an
OpenAI-compatible base URL through the real ``openai`` SDK over an httpx2.MockTransport.

No ``mock_response``: LiteLLM's own request mapping, response conversion and stream
wrapper all run; only the server is scripted (`sdk_fakes.ScriptedModel`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

# LiteLLM fetches its model price list at import unless told to use the copy it ships.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Imported by the first of these tests to run (see _restored), not at collection: the import
# costs ~3.5 CPU-s, which every pytest-xdist worker would pay, whichever runs these tests.
litellm: Any = None
pytestmark = [  # LiteLLM's own models and its own use of pydantic
    pytest.mark.filterwarnings("ignore::UserWarning:pydantic"),
    pytest.mark.filterwarnings("ignore:Accessing the 'model_:DeprecationWarning"),
]

import httpx2  # noqa: E402
import openai  # noqa: E402

from memtrellis import Memory  # noqa: E402
from memtrellis.clients import registration_of  # noqa: E402
from memtrellis.context import OPEN_TAG  # noqa: E402
from sdk_fakes import CHAT_MODEL, OPENAI_KEY, ScriptedModel, captured  # noqa: E402

QUESTION = "Which snack is safe with my peanut allergy?"
MODEL = "openai/gpt-4o-mini"
BASE_URL = "http://localhost:8000/v1"  # a local OpenAI-compatible server (vLLM's port)


def server(model: ScriptedModel, *, asynchronous: bool = False) -> Any:
    """The OpenAI SDK client LiteLLM sends through (``client=``) to the scripted server."""
    if asynchronous:
        http: Any = httpx2.AsyncClient(transport=httpx2.MockTransport(model))
        return openai.AsyncOpenAI(api_key=OPENAI_KEY, base_url=BASE_URL, http_client=http)
    http = httpx2.Client(transport=httpx2.MockTransport(model))
    return openai.OpenAI(api_key=OPENAI_KEY, base_url=BASE_URL, http_client=http)


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    global litellm
    if litellm is None:
        litellm = pytest.importorskip("litellm")
    own = (litellm.completion, litellm.acompletion)
    yield
    assert (litellm.completion, litellm.acompletion) == own  # closing the memory restored it


def test_completion_places_context_and_captures(seeded: Memory) -> None:
    model = ScriptedModel("Try hummus with carrots.")
    registered = seeded.register(litellm)
    assert registered is litellm and registration_of(litellm) is not None

    response = litellm.completion(
        model=MODEL,
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": QUESTION},
        ],
        client=server(model),
        api_base=BASE_URL,
    )

    assert isinstance(response, litellm.ModelResponse)
    assert response.choices[0].message.content == "Try hummus with carrots."
    assert model.requests[-1].url.host == "localhost" and model.requests[-1].url.port == 8000
    system, question = model.last["messages"]
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\n")
    assert OPEN_TAG in system["content"] and "allergic to peanuts" in system["content"]
    assert question == {"role": "user", "content": QUESTION}
    assert model.last["model"] == "gpt-4o-mini"  # LiteLLM took the route prefix off
    items = captured(seeded)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", QUESTION),
        ("assistant", "Try hummus with carrots."),
    ]
    meta = items[1].metadata
    assert (meta["provider"], meta["sdk"], meta["api"]) == ("openai", "litellm", "completion")
    assert meta["model"] == CHAT_MODEL and meta["endpoint"] is None
    assert meta["usage"]["total_tokens"] == 49 and meta["sdk_version"]
    assert OPENAI_KEY not in str([i.metadata for i in items])


def test_positional_model_and_messages(seeded: Memory) -> None:
    model = ScriptedModel("OK")
    seeded.register(litellm)

    litellm.completion(MODEL, [{"role": "user", "content": QUESTION}], client=server(model))

    system = model.last["messages"][0]
    assert system["role"] == "system" and "allergic to peanuts" in system["content"]
    assert [i.text for i in captured(seeded)] == [QUESTION, "OK"]


def test_a_streamed_completion_is_passed_through_and_captured(seeded: Memory) -> None:
    model = ScriptedModel("Apple slices are safe")
    seeded.register(litellm)

    stream = litellm.completion(
        model=MODEL,
        messages=[{"role": "user", "content": QUESTION}],
        client=server(model),
        stream=True,
    )
    assert isinstance(stream, litellm.CustomStreamWrapper)  # LiteLLM's own stream
    text = "".join(c.choices[0].delta.content or "" for c in stream)

    assert text == "Apple slices are safe"
    assert "allergic to peanuts" in model.last["messages"][0]["content"]
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Apple slices are safe"]
    meta = items[1].metadata
    assert meta["stream"] is True and meta["complete"] is True
    assert meta["provider"] == "openai"


def test_a_stream_left_early_is_captured_with_what_arrived(memory: Memory) -> None:
    model = ScriptedModel("one two three four")
    memory.register(litellm)

    stream = litellm.completion(
        model=MODEL, messages=[{"role": "user", "content": "Count"}], client=server(model),
        stream=True,
    )  # fmt: skip
    for chunk in stream:
        if chunk.choices[0].delta.content == " two":
            break
    stream.close()

    items = captured(memory)
    assert [i.text for i in items] == ["Count", "one two"]
    assert items[1].metadata["complete"] is False


async def test_acompletion_with_and_without_stream(seeded: Memory) -> None:
    model = ScriptedModel("Rice cakes.", "async words here")
    seeded.register(litellm)
    client = server(model, asynchronous=True)

    response = await litellm.acompletion(
        model=MODEL, messages=[{"role": "user", "content": QUESTION}], client=client
    )
    assert response.choices[0].message.content == "Rice cakes."
    assert "allergic to peanuts" in model.bodies[0]["messages"][0]["content"]
    stream = await litellm.acompletion(
        model=MODEL, messages=[{"role": "user", "content": "Talk"}], client=client, stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream])

    assert text == "async words here"
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Rice cakes.", "Talk", "async words here"]
    assert items[1].metadata["api"] == "acompletion"  # one capture each: no double wrapping


def test_per_call_scope_and_unregister(memory: Memory) -> None:
    model = ScriptedModel("Noted.")
    own = litellm.completion
    memory.register(litellm, entity_id="alice")
    assert litellm.completion is not own
    ask = {"model": MODEL, "messages": [{"role": "user", "content": "I like jazz."}]}

    with memory.scope(entity_id="bob"):
        litellm.completion(**ask, client=server(model))
    assert [i.text for i in captured(memory, entity_id="bob")] == ["I like jazz.", "Noted."]
    assert captured(memory, entity_id="alice") == []

    assert memory.unregister(litellm) is True
    assert litellm.completion is own  # LiteLLM's own function again
    assert registration_of(litellm) is None
    litellm.completion(**ask, client=server(model))
    assert model.last["messages"] == [{"role": "user", "content": "I like jazz."}]
    assert len(captured(memory, entity_id="bob")) == 2


def test_named_registration(seeded: Memory) -> None:
    model = ScriptedModel("OK")
    seeded.register(litellm=litellm)

    litellm.completion(model=MODEL, messages=[{"role": "user", "content": QUESTION}],
                       client=server(model))  # fmt: skip

    assert "allergic to peanuts" in model.last["messages"][0]["content"]
