"""Each function runs under the IAM policy template.yaml gives it: nothing it does is denied, and nothing the
template grants goes unused (a missing or an extra permission fails here, not on AWS)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from botocore.exceptions import ClientError
from pytest_httpserver import HTTPServer

from sitemap_updater.adapters.manifest import page_pk
from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.adapters.webhook_documents import DocumentUrls
from sitemap_updater.handlers import notify as notify_handler
from sitemap_updater.handlers import rebuild_index as index_handler
from sitemap_updater.handlers import reconcile as reconcile_handler
from sitemap_updater.handlers import sweep as sweep_handler
from sitemap_updater.handlers import upkeep
from sitemap_updater.handlers import webhook as webhook_handler
from sitemap_updater.local.bootstrap import LocalStateMachine
from sitemap_updater.local.iam import ACCOUNT, Names, Policy, bucket_policy, matches
from sitemap_updater.local.runner import TEMPLATE, LocalContext, LocalRun
from sitemap_updater.local.stack import load_template, session
from sitemap_updater.local.webhooks import Sample, function_url_event
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.rebuild import rebuild_section
from sitemap_updater.service.sites import add_site
from sitemap_updater.sites import SiteConfig
from sitemap_updater.wiring.pipeline import use_pipeline
from sitemap_updater.wiring.sites import site_pipeline
from sitemap_updater.wiring.webhooks import use_receiver
from tests.conftest import BASE, event
from tests.integration.conftest import FIXED_NOW, bodies

ROOT = Path(__file__).resolve().parents[2]

NEWS = {
    "publication_name": "Example Times",
    "publication_language": "en",
    "publication_date": "2026-11-21T09:00:00Z",
    "title": "Fresh",
}


@pytest.fixture
def indexnow(httpserver: HTTPServer) -> Iterator[str]:
    httpserver.expect_request("/indexnow", method="POST").respond_with_data("", status=200)
    yield httpserver.url_for("/indexnow")


MESSAGES = "sitemap_updater.service.batches"


def _fail() -> Any:
    raise OSError("persistent")


def _unused(policy: Policy) -> list[str]:
    return [
        f"{policy.function}: {action} on {resource}"
        for action, resource in policy.granted()
        if not any(matches(action, a, case=False) and matches(resource, r, case=True) for a, r in policy.used)
    ]


def _dead_letter_reasons(run: LocalRun, logical: str) -> list[str]:
    sqs = session().client("sqs", endpoint_url=run.endpoint_url)
    found = sqs.receive_message(
        QueueUrl=run.stack.queue_url(logical), MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", [])
    return [str(m.get("MessageAttributes", {})["reason"]["StringValue"]) for m in found]


WEBHOOK_SECRET = "iam-exact-generic-webhook-secret"


def _webhook(run: LocalRun, endpoint: str, name: str, secret_arn: str) -> int:
    """One signed generic webhook through the handler, whose cold start reads the function's environment."""
    sample = Sample.load(ROOT / "events" / "webhooks" / "generic" / f"{name}.json")
    event = function_url_event("POST", sample.path, sample.signed(WEBHOOK_SECRET), sample.body)
    # The function's own variables, as template.yaml gives them (the globals are in the stack's environment)
    own = {"INGEST_QUEUE_URL": run.stack.queue_url("IngestQueue"), "WEBHOOK_SECRET_ID": secret_arn}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {**run.stack.environment, **own}.items():
            patch.setenv(key, value)
        patch.setattr("sitemap_updater.wiring.webhooks.BotocoreClients", lambda: _Clients(run, endpoint))
        use_receiver(None)
        try:
            with run.iam.acting_as("WebhookFunction"):
                answer = webhook_handler.handler(event, cast(Any, LocalContext("webhook")))
        finally:
            use_receiver(None)
    return int(answer["statusCode"])


class _Clients:
    """The cold start's client factory, each client checked against the running function's policy."""

    def __init__(self, run: LocalRun, endpoint: str) -> None:
        self._make = run.iam.guarded(session().client)
        self._endpoint = endpoint

    def client(self, service_name: str, **_kwargs: Any) -> Any:
        return self._make(service_name, endpoint_url=self._endpoint)


def test_every_function_uses_exactly_the_permissions_the_template_grants(
    moto_endpoint: str, indexnow: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [FIXED_NOW]
    secrets = session().client("secretsmanager", endpoint_url=moto_endpoint)
    secret = secrets.create_secret(Name="iam-exact-webhooks", SecretString=json.dumps({"generic": WEBHOOK_SECRET}))
    # Index files of at most 2 sitemap files: the site gets further index files (written, then deleted),
    # the recent-changes feed on, and a text sitemap beside each file (the section files' other name)
    parameters = {"WebhookSecretArn": secret["ARN"], "MaxFilesPerIndex": "2", "RecentChangesFeed": "20"}
    parameters |= {"TextSitemaps": "true"}
    # and a freshness of 40 s: a section changed again within 25 s of its latest rebuild waits (the time that
    # rebuild began is read, its requests are given back to the queue)
    parameters |= {"FreshnessSeconds": "40"}
    with LocalRun(
        BASE,
        2,
        moto_endpoint,
        clock=lambda: now[0],
        name="iam-exact",
        indexnow_endpoint=indexnow,
        parameters=parameters,
    ) as run:
        # Given a page published and deleted through the webhook endpoint (its events wait on the ingest queue)
        published = [_webhook(run, moto_endpoint, name, secret["ARN"]) for name in ("publish", "delete")]
        assert published == [202, 202]
        # Given pages in two sections (news among them) and a malformed event, files that split, a page that
        # moves section, deletes that merge files (so files retire and are cleaned up), and at last a site
        # with no pages left
        pages = [event(f"{BASE}/blog/p{i}", version=1, lastmod="2026-11-20") for i in range(5)]
        pages.append(event(f"{BASE}/news/today", version=1, news=NEWS))
        malformed = event(f"{BASE}/blog/bad", priority=7)  # rejected: to the dead-letter queue with its reason
        assert run.send_wave(bodies([*pages, malformed])).dlq == 1
        assert any(n.startswith("sitemap-index-") for n in run.published())  # 2 files an index: further ones
        moved = event(f"{BASE}/blog/p0", version=2, section="news", lastmod="2026-11-21")
        deletes = [event(f"{BASE}/blog/p{i}", type="delete", version=3) for i in (1, 2, 3)]
        run.send_wave(bodies([moved, *deletes]))
        # And a change whose rebuild was never queued (ingest died after its transaction), found by the sweep
        queue = run.pipeline.rebuild_queue
        send = queue.send_batch
        object.__setattr__(queue, "send_batch", lambda *_a, **_k: (_ for _ in ()).throw(ConnectionError("died")))
        with run.iam.acting_as("IngestFunction"), pytest.raises(ConnectionError):
            ingest(json.dumps(event(f"{BASE}/blog/p4", version=5, lastmod="2026-11-21")), run.pipeline)
        object.__setattr__(queue, "send_batch", send)
        now[0] += timedelta(hours=1)  # the sweep leaves alone an outbox whose batch might still be running
        use_pipeline(run.pipeline)
        try:
            with run.iam.acting_as("SweepFunction"):
                swept = sweep_handler.handler({}, cast(Any, LocalContext("sweep")))
        finally:
            use_pipeline(None)
        assert swept["requeued"] == 1
        run.drain()
        # And two days later the news turns old (its own hourly function takes it out)
        now[0] = FIXED_NOW + timedelta(days=2)
        use_pipeline(run.pipeline)
        try:
            with run.iam.acting_as("UpkeepFunction"):
                assert upkeep.handler({}, cast(Any, LocalContext("news")))["news_expired"] == 1
        finally:
            use_pipeline(None)
        run.drain()
        # And drift made out of band, found and repaired by the hourly reconciliation: a file deleted, another
        # overwritten, the index deleted, and a stray file (two hours old when it runs)
        healthy = run.published()
        s3 = session().client("s3", endpoint_url=moto_endpoint)
        bucket = run.stack.physical["SitemapBucket"]
        lost, altered = sorted(n for n in healthy if n.endswith(".xml.gz"))[:2]
        for key in (lost, "sitemap.xml"):
            s3.delete_object(Bucket=bucket, Key=key)
        s3.put_object(Bucket=bucket, Key=altered, Body=b"not the file")
        s3.put_object(Bucket=bucket, Key="sitemap-stray-00000000.xml.gz", Body=b"stray")
        now[0] = datetime.now(UTC) + timedelta(hours=2)
        use_pipeline(run.pipeline)
        try:
            with run.iam.acting_as("ReconcileFunction"):
                found = reconcile_handler.handler({}, cast(Any, LocalContext("reconcile")))
        finally:
            use_pipeline(None)
        assert (found["missing"], found["changed"], found["stray"]) == (2, 1, 1)
        run.drain()
        assert run.published() == healthy
        # And a changed page, and a page moving to a section whose rebuild fails on every receive, while the
        # index rebuild and the notifier fail on every receive too: each function dead-letters its messages
        # itself, with the reason
        with monkeypatch.context() as failing:
            failing.setattr(
                f"{MESSAGES}.rebuild_section",
                lambda pipeline, section, marks: (
                    _fail() if section == "broken" else rebuild_section(pipeline, section, marks)
                ),
            )
            failing.setattr(f"{MESSAGES}.rebuild_index", lambda *_a: _fail())
            failing.setattr(f"{MESSAGES}.notify", lambda *_a: _fail())
            changed = event(f"{BASE}/blog/p0", version=6, section="news", lastmod="2026-11-22")
            moved = event(f"{BASE}/blog/p4", version=6, section="broken", lastmod="2026-11-22")
            run.send_wave(bodies([changed, moved]))
        for dlq in ("RebuildDeadLetterQueue", "IndexDeadLetterQueue", "NotifyDeadLetterQueue"):
            reasons = _dead_letter_reasons(run, dlq)
            # a rebuild request may wait for a burst once, an index request that only moves lastmods until it is due
            receives = 5 if dlq == "NotifyDeadLetterQueue" else 6
            assert reasons and all(f"failed on all {receives} receives" in r and "OSError: persistent" in r
                                   for r in reasons)  # fmt: skip
        left = (f"{BASE}/blog/p0", f"{BASE}/blog/p4", f"{BASE}/news/today")
        gone = [event(url, type="delete", version=9) for url in left]
        last = run.send_wave(bodies(gone))
        assert last.events["accepted"] == 3
        assert "sitemap.xml" not in run.published()
        # And the site loaded again by the bootstrap state machine, with a line it rejects, while a change arrives
        # (its rebuild request is parked until the end, then sent again)
        machine = LocalStateMachine(run)
        again = bodies([event(f"{BASE}/blog/b{i}", version=10, lastmod="2026-11-23") for i in range(7)])
        chunks = ["\n".join(again[:3]), "\n".join([*again[3:], json.dumps(malformed)])]  # one line in 5 rejected
        machine.upload("iam", [c.encode() for c in chunks], [0])
        live = event(f"{BASE}/docs/live", version=1, lastmod="2026-11-23")

        def during(state: str) -> None:
            if state == "RenderRanges":
                run.send_wave(bodies([live]))
                assert machine.check()["holder_status"] == "RUNNING"  # the scheduled check asks Step Functions

        machine.execute("iam", before=during)
        run.drain()
        assert {f"{BASE}/docs/live", f"{BASE}/blog/b0"} <= _published_urls(run)
        # And Sections changed from every first segment to "blog" alone, and a re-section run (Scan): the docs
        # page moves to root
        settings = run.pipeline.settings.model_copy(update={"sections": "blog"})
        run.pipeline = replace(run.pipeline, settings=settings)
        assert machine.execute("iam-resection", resection=True).status == "SUCCEEDED"
        run.drain()
        assert any(name.startswith("sitemap-root-") for name in run.published())
        assert not any(name.startswith("sitemap-docs-") for name in run.published())
        # And a CDN that caches for 5 s (the stack's queues as deployed with 0): an index rebuilt within that
        # lifetime of a file's put names the file's previous lastmod and asks for itself again on its own queue,
        # due once the CDN cannot serve the old bytes
        settings = run.pipeline.settings.model_copy(update={"cdn_max_age_seconds": 5})
        run.pipeline = replace(run.pipeline, settings=settings)
        changed = event(f"{BASE}/blog/b0", version=11, lastmod="2026-11-24")
        settled = run.send_wave(bodies([changed, event(f"{BASE}/fresh/a", version=1, section="fresh")]))
        assert settled.events["accepted"] == 2
        indexes = [data for name, data in run.published().items() if name.endswith(".xml")]
        assert any(b"<lastmod>2026-11-24" in data for data in indexes)  # once settled, its own lastmod
        # And a second site added at run time, run through every function that handles sites: its own tree under
        # sites/<host>/, which only the template's grants on sites/*/... reach
        settings = run.pipeline.settings.model_copy(update={"cdn_max_age_seconds": 0})
        run.pipeline = replace(run.pipeline, settings=settings)
        _second_site(run, now)
        # Then nothing any function did was denied
        policies = run.stack.policies
        assert [d for p in policies.values() for d in p.denied] == []
        assert run.errors == []
        # And every permission the template grants was used by its function
        assert [u for p in policies.values() for u in _unused(p)] == []


SECOND = "https://www.example.de"
WAKE_UP = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def _site_tree(run: LocalRun, host: str) -> dict[str, bytes]:
    """Every object of the site on ``host`` (its files, key file, feed, snapshots), by name under its prefix."""
    s3 = session().client("s3", endpoint_url=run.endpoint_url)
    bucket, prefix = run.stack.physical["SitemapBucket"], f"sites/{host}/"
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    names = [o["Key"] for page in pages for o in page.get("Contents", [])]
    return {n[len(prefix) :]: s3.get_object(Bucket=bucket, Key=n)["Body"].read() for n in names}


class _OutOfTime(LocalContext):
    def get_remaining_time_in_millis(self) -> int:
        return 0


def _hourly(run: LocalRun, function: str, handler: Callable[..., Any], event: Any = None, late: bool = False) -> Any:
    use_pipeline(run.pipeline)
    try:
        with run.iam.acting_as(function):
            return handler(event or {}, cast(Any, (_OutOfTime if late else LocalContext)(function)))
    finally:
        use_pipeline(None)


def _second_site(run: LocalRun, now: list[datetime]) -> None:
    """A site added with ``sites add`` (IndexNow key, feed and text sitemaps of its own), through ingest, the shard
    and index rebuilds, the notifier, the sweep, the upkeep and the reconciliation."""
    directory = run.pipeline.directory
    assert directory is not None
    fields = {"origin": SECOND, "sections": "blog,news", "text_sitemaps": True, "feed_entries": 20}
    site = add_site(run.pipeline, directory, SiteConfig.parse({**fields, "indexnow_key": "site-key-0002"}))
    host = site.host
    # Given its pages in two sections (news among them): files that split into several index files
    news = {**NEWS, "publication_date": now[0].strftime("%Y-%m-%dT%H:%M:%SZ")}
    pages = [event(f"{SECOND}/blog/p{i}", version=1, lastmod="2026-11-20") for i in range(5)]
    pages.append(event(f"{SECOND}/news/today", version=1, news=news))
    assert run.send_wave(bodies(pages)).events["accepted"] == 6
    tree = _site_tree(run, host)
    assert {"sitemap.xml", "site-key-0002.txt", "sitemap-changes.atom", "_state/feed.json"} <= set(tree)
    assert any(n.startswith("sitemap-index-") for n in tree) and any(n.endswith(".txt") for n in tree)
    assert f"<loc>{SECOND}/sitemap-".encode() in tree["sitemap.xml"]  # served on its own host (the default)
    # And deletes that merge its files (retired files and their snapshots are cleaned up)
    run.send_wave(bodies([event(f"{SECOND}/blog/p{i}", type="delete", version=2) for i in (1, 2, 3)]))
    # And a change whose rebuild was never queued, found by the sweep
    queue = run.pipeline.rebuild_queue  # the site's queue sends through the stack's
    send = queue.send_batch
    object.__setattr__(queue, "send_batch", lambda *_a, **_k: (_ for _ in ()).throw(ConnectionError("died")))
    with run.iam.acting_as("IngestFunction"), pytest.raises(ConnectionError):
        ingest(
            json.dumps(event(f"{SECOND}/blog/p4", version=5, lastmod="2026-11-21")), site_pipeline(run.pipeline, site)
        )
    object.__setattr__(queue, "send_batch", send)
    now[0] += timedelta(hours=1)
    assert _hourly(run, "SweepFunction", sweep_handler.handler)["requeued"] == 1
    run.drain()
    # And its news turning old
    now[0] += timedelta(days=2)
    assert _hourly(run, "UpkeepFunction", upkeep.handler)["news_expired"] == 1
    run.drain()
    # And drift out of band in its tree, repaired by the reconciliation
    healthy = {n: d for n, d in _site_tree(run, host).items() if not n.startswith("_")}
    s3 = session().client("s3", endpoint_url=run.endpoint_url)
    bucket, prefix = run.stack.physical["SitemapBucket"], f"sites/{host}/"
    lost, altered = sorted(n for n in healthy if n.endswith(".xml.gz"))[:2]
    for name in (lost, "sitemap.xml"):
        s3.delete_object(Bucket=bucket, Key=prefix + name)
    s3.put_object(Bucket=bucket, Key=prefix + altered, Body=b"not the file")
    s3.put_object(Bucket=bucket, Key=prefix + "sitemap-stray-00000000.xml.gz", Body=b"stray")
    s3.put_object(Bucket=bucket, Key=prefix + "_state/sitemap-stray/0000000000000000-1-1.states", Body=b"s")
    runs = []  # a site added at run time is reconciled once a day, in its hour's share
    for _ in range(24):
        runs.append(_hourly(run, "ReconcileFunction", reconcile_handler.handler))
        now[0] += timedelta(hours=1)
    assert [(r["missing"], r["changed"], r["stray"]) for r in runs if r["missing"]] == [(2, 1, 1)]
    run.drain()
    after = _site_tree(run, host)
    assert {n: d for n, d in after.items() if not n.startswith("_")} == healthy
    assert "_state/sitemap-stray/0000000000000000-1-1.states" not in after
    # And at last no pages left: its index files are deleted
    left = (f"{SECOND}/blog/p0", f"{SECOND}/blog/p4", f"{SECOND}/news/today")
    assert run.send_wave(bodies([event(url, type="delete", version=9) for url in left])).events["accepted"] == 3
    assert not any(n.startswith("sitemap") and n.endswith(".xml") for n in _site_tree(run, host))
    # And a run out of time still visits one site beside the stack's own, recording it first, so that the next run
    # begins after it even when this one is killed in its work
    jobs = (("SweepFunction", sweep_handler, "sweep"), ("UpkeepFunction", upkeep, "upkeep"))
    for function, job, name in jobs:
        assert _hourly(run, function, job.handler, late=True)["sites"] == 2
        assert directory.cursor(name) == host
    # And events for more hosts that are no site than a process reads one by one in a minute: the rest are answered
    # from the list of sites, each refused naming its host
    flood = [event(f"https://host{n}.example/a", version=1) for n in range(25)]
    assert run.send_wave(bodies(flood)).events["rejected"] == 25
    # And a page changed twice in IndexNow's quiet window: its second change is held back; the minute's wake-up
    # wakes the site in its own group, which sends it; then, nothing held, the wake-ups stop visiting the site
    run.send_wave(bodies([event(f"{SECOND}/blog/p10", version=20, lastmod="2026-11-22")]))
    run.send_wave(bodies([event(f"{SECOND}/blog/p10", version=21, lastmod="2026-11-23")]))
    assert set(directory.marks("held")) == {host}
    now[0] += timedelta(hours=2)
    wake_up = {"Records": [{"messageId": "w", "body": json.dumps(WAKE_UP), "attributes": {}}]}
    _hourly(run, "NotifyFunction", notify_handler.handler, wake_up)
    run.drain()
    _hourly(run, "NotifyFunction", notify_handler.handler, wake_up)
    assert directory.marks("held") == {}
    assert run.send_wave(bodies([event(f"{SECOND}/blog/p10", type="delete", version=22)])).events["accepted"] == 1
    # And quiet for an hour, the site is no longer visited by the hourly functions
    now[0] += timedelta(hours=2)
    assert _hourly(run, "SweepFunction", sweep_handler.handler)["unmarked"] == 1
    assert directory.marks("active") == {}
    assert _hourly(run, "UpkeepFunction", upkeep.handler)["sites"] == 1


def test_a_call_outside_the_policy_is_denied_as_aws_denies_it(local_run: Any) -> None:
    run: LocalRun = local_run()
    bucket = run.pipeline.bucket
    with run.iam.acting_as("NotifyFunction"), pytest.raises(ClientError) as denied:
        bucket.read("sitemap.xml")  # the notifier may write its key file, nothing else
    assert denied.value.response["Error"]["Code"] == "AccessDenied"
    assert "NotifyFunction is not authorized to perform: s3:GetObject" in str(denied.value)
    with run.iam.acting_as("IngestFunction"), pytest.raises(ClientError) as query:
        run.pipeline.store.outboxes("z")  # only the sweep may Query for outboxes left open
    assert query.value.response["Error"]["Code"] == "AccessDeniedException"


def test_each_function_is_denied_what_its_grant_once_covered_beside_what_it_needs(local_run: Any) -> None:
    run: LocalRun = local_run()
    bucket = run.pipeline.bucket
    assert isinstance(bucket, SitemapBucket)
    # The shard rebuild and the bootstrap write the section files and their text twins
    for role in ("RebuildShardFunction", "BootstrapFunction"):
        with run.iam.acting_as(role):
            assert bucket.put_if_absent(f"sitemap-{role.lower()}-00000000.xml.gz", b"file")
            assert bucket.put_if_absent(f"sitemap-{role.lower()}-00000000.txt", b"urls")
            # but neither an index file (sitemap-*, as the grant was, covered the further ones) nor the feed
            for name in ("sitemap-index-1.xml", "sitemap.xml", "sitemap-changes.atom"):
                with pytest.raises(ClientError) as denied:
                    bucket.put_if_absent(name, b"<sitemapindex/>")
                assert denied.value.response["Error"]["Code"] == "AccessDenied", (role, name)
    assert "sitemap-index-1.xml" not in run.published()
    # The webhook function reads and writes the URLs its CMS documents had
    table = run.stack.physical["ManifestTable"]
    dynamodb = run.iam.attach(session().client("dynamodb", endpoint_url=run.endpoint_url))
    documents = DocumentUrls(dynamodb, table)
    page = {"pk": {"S": page_pk(f"{BASE}/about")}, "sk": {"S": "state"}}
    with run.iam.acting_as("WebhookFunction"):
        assert documents.remember("contentful", "entry-1", [f"{BASE}/blog/hello"], "00000001")
        assert documents.recall("contentful", "entry-1") == [f"{BASE}/blog/hello"]
        # and no other item of the table: a page state, the import hold, a section's entries
        calls: list[Callable[[], Any]] = [
            lambda: dynamodb.get_item(TableName=table, Key=page),
            lambda: dynamodb.put_item(TableName=table, Item={"pk": {"S": "import"}, "sk": {"S": "import"}}),
            lambda: dynamodb.put_item(TableName=table, Item={"pk": {"S": "sec#blog"}, "sk": {"S": "x"}}),
        ]
        for call in calls:
            with pytest.raises(ClientError) as refused:
                call()
            assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert [d.split(" (")[-1] for d in run.stack.policies["WebhookFunction"].denied] == [
        f"leading keys {page_pk(f'{BASE}/about')})",
        "leading keys import)",
        "leading keys sec#blog)",
    ]


def test_the_grants_on_sites_trees_reach_no_further_than_their_own_site_files(local_run: Any) -> None:
    """``*`` in an S3 ARN crosses ``/``: a site's grants also match names under its ``_state/``; the template's Deny
    statements keep each function to what it writes there."""
    run: LocalRun = local_run()
    bucket = run.pipeline.bucket
    assert isinstance(bucket, SitemapBucket)
    site = "sites/www.example.de/"
    # The shard rebuild writes a site's section files, not its index files nor its feed
    with run.iam.acting_as("RebuildShardFunction"):
        assert bucket.put_if_absent(f"{site}sitemap-blog-00000000.xml.gz", b"file")
        for name in ("sitemap.xml", "sitemap-index-1.xml", "sitemap-changes.atom"):
            with pytest.raises(ClientError):
                bucket.put_if_absent(site + name, b"<sitemapindex/>")
    # The notifier writes a site's key file, not its text sitemaps nor what it keeps under _state/
    with run.iam.acting_as("NotifyFunction"):
        assert bucket.put_if_absent(f"{site}site-key-0002.txt", b"site-key-0002")
        for name in ("sitemap-blog-00000000.txt", "_state/notes.txt"):
            with pytest.raises(ClientError) as denied:
                bucket.put_if_absent(site + name, b"x")
            assert denied.value.response["Error"]["Code"] == "AccessDenied", name
    # The reconciliation reads a site's published files and deletes its snapshots, but reads none of them
    bucket.put_if_absent(f"{site}_state/sitemap-blog/0000000000000000-1-1.states", b"states")
    with run.iam.acting_as("ReconcileFunction"):
        assert bucket.read(f"{site}sitemap-blog-00000000.xml.gz") == b"file"
        with pytest.raises(ClientError):
            bucket.read(f"{site}_state/sitemap-blog/0000000000000000-1-1.states")
        bucket.delete(f"{site}_state/sitemap-blog/0000000000000000-1-1.states")
    assert [d.split(" on ")[0] for d in run.stack.policies["ReconcileFunction"].denied] == [
        "ReconcileFunction: s3:GetObject"
    ]


def test_cloudfront_reads_every_site_s_public_files_and_nothing_it_keeps(local_run: Any) -> None:
    run: LocalRun = local_run()
    template = load_template(TEMPLATE)
    params = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
    params |= {"SiteUrl": BASE, "IndexNowKey": run.settings.indexnow_key, "AWS::StackName": run.stack.name}
    names = Names(params, run.stack.physical, run.stack.arns, template["Conditions"], run.stack.domains)
    policy = bucket_policy(template, names)
    arn = f"arn:aws:s3:::{run.stack.physical['SitemapBucket']}/"
    distribution = f"arn:aws:cloudfront::{ACCOUNT}:distribution/{run.stack.physical['Distribution']}"
    ours = {"aws:sourcearn": [distribution], "aws:securetransport": ["true"]}

    def reads(key: str, context: dict[str, list[str]] = ours) -> bool:
        return policy.allows("service:cloudfront.amazonaws.com", "s3:GetObject", arn + key, context)

    key = run.settings.indexnow_key
    public = ["sitemap.xml", "sitemap-blog-1.xml.gz", f"{key}.txt", "sites/h/sitemap.xml",
              "sites/h/sitemap-index-2.xml", "sites/h/sitemap-blog-1.xml.gz", "sites/h/sitemap-blog-1.txt",
              "sites/h/sitemap-changes.atom", "sites/h/site-key-0002.txt"]  # fmt: skip
    kept = ["sites/h/_state/sitemap-blog/0000000000000000-1-1.states", "sites/h/_state/feed.json",
            "sites/h/_state/x.txt", "sites/h/_bootstrap/run/export/part.txt", "_state/feed.json", "other.txt",
            "_state/sitemap-blog/0000000000000000-1-1.states", "_bootstrap/run/export/part.txt"]  # fmt: skip
    assert [k for k in public if not reads(k)] == []
    assert [k for k in kept if reads(k)] == []
    # nor another distribution, nor without TLS
    other = {**ours, "aws:sourcearn": [f"arn:aws:cloudfront::{ACCOUNT}:distribution/EOTHER"]}
    assert not reads("sites/h/sitemap.xml", other)
    assert not reads("sites/h/sitemap.xml", {**ours, "aws:securetransport": ["false"]})


def test_s3_answers_403_for_a_missing_key_without_list_bucket(local_run: Any) -> None:
    run: LocalRun = local_run()
    bucket = run.pipeline.bucket
    assert isinstance(bucket, SitemapBucket)  # a local run wires the S3 adapter
    client = bucket._client
    with run.iam.acting_as("RebuildIndexFunction"), pytest.raises(ClientError) as with_list:
        client.head_object(Bucket=bucket.bucket, Key="sitemap.xml")
    assert with_list.value.response["Error"]["Code"] == "404"  # the index function may list the bucket
    key = f"{run.settings.indexnow_key}.txt"
    with run.iam.acting_as("NotifyFunction"), pytest.raises(ClientError) as without_list:
        client.head_object(Bucket=bucket.bucket, Key=key)
    assert without_list.value.response["Error"]["Code"] == "403"  # the notifier may not: Forbidden, not Not Found
    with run.iam.acting_as("NotifyFunction"):
        assert run.pipeline.bucket.put_if_absent(key, b"k") is True  # so its key file is written without a read
        assert run.pipeline.bucket.put_if_absent(key, b"k") is False
    assert run.pipeline.bucket.read(key) == b"k"


def test_a_failed_index_rebuild_logs_its_cause(local_run: Any, caplog: pytest.LogCaptureFixture) -> None:
    run: LocalRun = local_run()
    use_pipeline(run.pipeline)
    try:
        with run.iam.acting_as("IngestFunction"):  # a role without the index's permissions: its calls fail
            response = index_handler.handler(
                {"Records": [{"messageId": "m1", "body": json.dumps({"section": "blog"})}]}, LocalContext("index")
            )
    finally:
        use_pipeline(None)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    failure = next(r for r in caplog.records if r.getMessage().startswith("index rebuild failed"))
    assert "AccessDeniedException" in failure.__dict__["error"]


def _published_urls(run: LocalRun) -> set[str]:
    found: set[str] = set()
    for name, data in run.published().items():
        if name.endswith(".xml.gz"):
            text = gzip.decompress(data).decode()
            found |= {part.split("</loc>")[0] for part in text.split("<loc>")[1:]}
    return found
