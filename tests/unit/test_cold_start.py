"""What a function's cold start builds from its environment (wiring/pipeline.py, service/pipeline.py): one
pipeline per process, AWS clients that try a failing call four times in all, dead-letter queues only where they
are configured, and Search Console only with a secret, whose key is read from Secrets Manager."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import botocore.endpoint
import pytest
from pytest_httpserver import HTTPServer

from sitemap_updater.wiring import pipeline as runtime
from sitemap_updater.wiring.pipeline import current_notifiers, current_pipeline, use_pipeline
from tests.conftest import BASE

ENV = {
    "SITE_URL": BASE,
    "MANIFEST_TABLE": "pages",
    "BUCKET_NAME": "sitemaps",
    "REBUILD_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/rebuild.fifo",
    "INDEX_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/index.fifo",
    "NOTIFY_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/notify.fifo",
    "INGEST_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A Lambda environment with the required settings; the process's pipeline is reset around the test."""
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    use_pipeline(None)
    yield monkeypatch
    use_pipeline(None)


def test_a_cold_start_builds_one_pipeline_from_the_environment(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("NOTIFY_DLQ_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/notify-dlq.fifo")
    pipeline = current_pipeline()
    # The settings come from the environment, the pipeline is built once per process
    assert (pipeline.site.base_url, pipeline.limits.max_urls) == (BASE, 10_000)
    assert current_pipeline() is pipeline
    # Only the dead-letter queue that is configured is used by its consumer
    assert pipeline.notify_dead_letters is not None
    assert (pipeline.rebuild_dead_letters, pipeline.index_dead_letters) == (None, None)
    use_pipeline(None)
    assert current_pipeline() is not pipeline


def test_an_aws_call_that_keeps_failing_is_tried_four_times_then_raises(
    environment: pytest.MonkeyPatch, httpserver: HTTPServer
) -> None:
    # Given DynamoDB answering 500 to every request (backoff waits are recorded, not slept)
    httpserver.expect_request("/").respond_with_data("{}", status=500)
    environment.setenv("AWS_ENDPOINT_URL", httpserver.url_for("/"))
    waits: list[float] = []
    environment.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=waits.append))
    pipeline = current_pipeline()
    # When the function reads when a section's latest rebuild began, the call fails after four attempts and three
    # backoffs
    with pytest.raises(Exception, match="reached max retries: 3"):
        pipeline.store.rebuild_times("blog")
    assert len(httpserver.log) == 4 and len(waits) == 3


def _secrets(calls: list[tuple[str, str]]) -> Callable[[Any, str], Callable[[], str]]:
    def token(client: Any, secret_arn: str) -> Callable[[], str]:
        calls.append((client.meta.service_model.service_name, secret_arn))
        return lambda: "token"

    return token


def test_search_console_is_used_only_with_a_secret_read_from_secrets_manager(
    environment: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, str]] = []
    environment.setattr(runtime, "service_account_token", _secrets(calls))
    # Without a secret: IndexNow only
    assert current_notifiers().search_console is None
    assert calls == []
    # With one: Search Console, its token from that secret in Secrets Manager; built once per process
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:search-console"
    use_pipeline(None)
    environment.setenv("SEARCH_CONSOLE_SECRET_ARN", arn)
    notifiers = current_notifiers()
    assert notifiers.search_console is not None
    assert calls == [("secretsmanager", arn)]
    assert current_notifiers() is notifiers
