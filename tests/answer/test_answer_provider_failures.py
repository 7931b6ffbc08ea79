"""Each way a provider server fails gives a ProviderError naming the URL, the HTTP status and
the server's message, retried exactly when retrying is right (one policy: affidavit.util.retry)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from answer_fake_openai import FakeOpenAI, Scripted, chat

from affidavit.config.settings import ProviderSettings
from affidavit.errors import ProviderError
from affidavit.llm.compiler import compile_prompt
from affidavit.llm.evidence import EvidenceItem
from affidavit.llm.openai import OpenAIProvider
from affidavit.llm.providers import ProviderRequest
from affidavit.util.retry import JITTER, MAX_RETRY_AFTER_SECONDS, RetryPolicy, TryAgain

EVIDENCE = [EvidenceItem("a1b2c3d4", "a1b2c3d4" + "0" * 56, "node-1", "Access policy", "",
                         "Access rights are reviewed quarterly.", "INTERNAL")]
PATH = "/v1/chat/completions"


def _request() -> ProviderRequest:
    return ProviderRequest(compile_prompt("Q?", EVIDENCE, role="authoritative"))


def _provider(base_url: str, delays: list[float], **changes: object) -> OpenAIProvider:
    values: dict[str, object] = {"base_url": base_url, "model": "m", "timeout_seconds": 5.0,
                                 "max_retries": 2, "api_key_env": "NO_SUCH_KEY_ENV"}
    values.update(changes)
    return OpenAIProvider(ProviderSettings(**values), sleep=delays.append)  # type: ignore[arg-type]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """Accepts connections and never answers: every request times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", accepted
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


def test_refused_connection_is_retried_then_names_the_url() -> None:
    delays: list[float] = []
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(ProviderError) as caught:
        _provider(url, delays).generate(_request())
    message = str(caught.value)
    assert f"cannot reach the provider at {url}/chat/completions" in message
    assert "ConnectError" in message and "after 3 attempts" in message
    assert len(delays) == 2


def test_read_timeout_is_retried_then_fails(silent_server: tuple[str, list[socket.socket]]
                                            ) -> None:
    url, accepted = silent_server
    delays: list[float] = []
    with pytest.raises(ProviderError) as caught:
        _provider(url, delays, timeout_seconds=0.3, max_retries=1).generate(_request())
    assert "ReadTimeout" in str(caught.value) and f"{url}/chat/completions" in str(caught.value)
    assert len(delays) == 1 and len(accepted) == 2


def test_401_is_not_retried_and_quotes_the_server(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(PATH, Scripted(status=401, body={"error": {
        "message": "Incorrect API key provided.", "type": "invalid_request_error"}}))
    delays: list[float] = []
    with pytest.raises(ProviderError) as caught:
        _provider(fake_openai.base_url, delays).generate(_request())
    assert str(caught.value) == (f"provider at {fake_openai.base_url}/chat/completions "
                                 "answered HTTP 401: Incorrect API key provided.")
    assert len(fake_openai.requests) == 1 and delays == []


def test_429_is_retried_honouring_retry_after_then_fails(fake_openai: FakeOpenAI) -> None:
    limited = Scripted(status=429, body={"error": {"message": "Rate limit reached"}},
                       headers={"Retry-After": "3"})
    fake_openai.script(PATH, limited, limited, limited)
    delays: list[float] = []
    with pytest.raises(ProviderError) as caught:
        _provider(fake_openai.base_url, delays).generate(_request())
    assert "answered HTTP 429: Rate limit reached (after 3 attempts)" in str(caught.value)
    assert len(fake_openai.requests) == 3 and delays == [3.0, 3.0]


def test_500_is_retried_and_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(PATH, Scripted(status=500, body={"error": "upstream exploded"}),
                       chat("Access rights are reviewed quarterly [src:a1b2c3d4]."))
    delays: list[float] = []
    response = _provider(fake_openai.base_url, delays).generate(_request())
    assert response.text.startswith("Access rights") and len(delays) == 1


def test_500_every_time_fails_with_the_server_message(fake_openai: FakeOpenAI) -> None:
    fake_openai.defaults[PATH] = Scripted(status=500, body={"error": "upstream exploded"})
    with pytest.raises(ProviderError, match=r"HTTP 500: upstream exploded \(after 3 attempts\)"):
        _provider(fake_openai.base_url, []).generate(_request())


def test_a_long_server_message_is_cut(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(PATH, Scripted(status=400, body={"error": {"message": "x" * 5000}}))
    with pytest.raises(ProviderError) as caught:
        _provider(fake_openai.base_url, []).generate(_request())
    assert len(str(caught.value)) < 400


# --------------------------------------------------------------------------- the policy


def test_retry_pauses_grow_exponentially_with_bounded_jitter() -> None:
    low = RetryPolicy(4, 0.5, random=lambda: 0.0)
    high = RetryPolicy(4, 0.5, random=lambda: 0.999999)
    assert [low.pause(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert all(p <= b * (1 + JITTER) for p, b in zip([high.pause(n) for n in (1, 2, 3)],
                                                      [0.5, 1.0, 2.0], strict=True))


def test_retry_after_is_honoured_up_to_its_bound() -> None:
    policy = RetryPolicy(3, 0.5, random=lambda: 0.0)
    assert policy.pause(1, retry_after=4.0) == 4.0
    assert policy.pause(1, retry_after=10_000.0) == MAX_RETRY_AFTER_SECONDS


def test_only_try_again_is_retried() -> None:
    calls: list[int] = []

    def refuse() -> None:
        calls.append(1)
        raise ProviderError("final")

    with pytest.raises(ProviderError):
        RetryPolicy(3, 0.0, sleep=lambda _: None).call(refuse)
    assert len(calls) == 1

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 4:
            raise TryAgain("not yet")
        return "done"

    assert RetryPolicy(3, 0.0, sleep=lambda _: None).call(flaky) == "done"
