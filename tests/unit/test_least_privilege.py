"""Least privilege where the integration tests cannot see it: what CloudFront may read from the bucket (the bucket
policy, evaluated by tests/cfn_template.py for given parameters), how the local enforcer finds the partition keys
a DynamoDB call touches, and docs/security.md against the template's grants, role by role."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest

from sitemap_updater.core.feed import FEED_NAME, FEED_STATE
from sitemap_updater.core.render import index_name
from sitemap_updater.core.sharding import KeyRange, text_twin
from sitemap_updater.core.snapshots import object_key
from sitemap_updater.local.iam import LEADING_KEYS, Condition, Statement, decide, requests
from sitemap_updater.service.bootstrap import export_prefix, ranges_name
from tests.cfn_template import ROOT, source, stack

KEY = "0123456789abcdef"
SITE = {"SiteUrl": "https://www.example.com"}


@cache
def cloudfront_grant(indexnow_key: str) -> tuple[Statement, ...]:
    """The bucket policy's statements on CloudFront's GetObject (an Allow, and a Deny that wins over it), for a stack
    with this IndexNow key."""
    policy = stack({**SITE, "IndexNowKey": indexnow_key}).of_type("AWS::S3::BucketPolicy")["SitemapBucketPolicy"]
    statements = policy["PolicyDocument"]["Statement"]
    found = [s for s in statements if s.get("Principal") == {"Service": "cloudfront.amazonaws.com"}]
    assert [(s["Effect"], s["Action"]) for s in found] == [("Allow", "s3:GetObject"), ("Deny", "s3:GetObject")]
    resources = [[s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"] for s in found]
    return tuple(Statement(("s3:GetObject",), tuple(r), (), s["Effect"]) for s, r in zip(found, resources, strict=True))


def cloudfront_may_read(indexnow_key: str, key: str) -> bool:
    return decide(cloudfront_grant(indexnow_key), "s3:GetObject", f"<SitemapBucket.Arn>/{key}")


@cache
def template_source() -> dict[str, Any]:
    return source()


def test_cloudfront_reads_what_crawlers_and_indexnow_fetch_and_nothing_a_run_keeps_beside_it() -> None:
    section_file = KeyRange(0, 1 << 63, 1).file_name("blog")
    published = [index_name(0), index_name(3), section_file, text_twin(section_file), FEED_NAME]
    assert all(cloudfront_may_read(KEY, name) for name in published)
    assert cloudfront_may_read(KEY, f"{KEY}.txt")
    # Not the snapshots, the feed's state, nor what a bootstrap keeps (an export may be text, as any .txt was)
    private = [
        object_key("blog", 1_700_000_000_000_000, 1, 0),
        FEED_STATE,
        f"{export_prefix('2026-11-26')}pages.txt",
        f"{export_prefix('2026-11-26')}part-0001.jsonl.gz",
        ranges_name("2026-11-26"),
        "notes.txt",
    ]
    assert not any(cloudfront_may_read(KEY, name) for name in private)
    # Without IndexNow no text file outside the sitemaps' names is readable
    assert not cloudfront_may_read("", f"{KEY}.txt") and cloudfront_may_read("", text_twin(section_file))
    # Each site added at run time: the same files and its own key file under sites/<host>/, and nothing it keeps
    # under a segment starting with _ (which sites/*/sitemap* would match: * crosses /)
    site = "sites/www.example.de/"
    assert all(cloudfront_may_read("", site + name) for name in [*published, "site-key-0002.txt"])
    assert not any(cloudfront_may_read(KEY, site + name) for name in private[:2])
    assert not any(cloudfront_may_read(KEY, f"{site}_bootstrap/x/{name}") for name in ("pages.txt", "sitemap-1.txt"))


def test_leading_keys_are_the_partition_keys_each_call_touches() -> None:
    hashes = {"manifest": "pk"}

    def keys(operation: str, **params: Any) -> list[list[str] | None]:
        return [c.get(LEADING_KEYS) for _, _, c in requests("dynamodb", operation, params, hashes)]

    item = {"pk": {"S": "doc#ghost#1"}, "sk": {"S": "urls"}}
    assert keys("GetItem", TableName="manifest", Key=item) == [["doc#ghost#1"]]
    assert keys("PutItem", TableName="manifest", Item={**item, "urls": {"L": []}}) == [["doc#ghost#1"]]
    query = {"KeyConditionExpression": "#p = :p AND sk > :s", "ExpressionAttributeNames": {"#p": "pk"}}
    values = {":p": {"S": "sec#blog"}, ":s": {"S": "a"}}
    assert keys("Query", TableName="manifest", ExpressionAttributeValues=values, **query) == [["sec#blog"]]
    batch = {"manifest": [{"PutRequest": {"Item": item}}, {"DeleteRequest": {"Key": {"pk": {"S": "page#1"}}}}]}
    assert keys("BatchWriteItem", RequestItems=batch) == [["doc#ghost#1", "page#1"]]
    transaction = [
        {"Put": {"TableName": "manifest", "Item": item}},
        {"Delete": {"TableName": "manifest", "Key": {"pk": {"S": "import"}}}},
    ]
    assert keys("TransactWriteItems", TransactItems=transaction) == [["doc#ghost#1"], ["import"]]
    assert keys("Scan", TableName="manifest") == [None]  # a Scan names no partition


def test_a_leading_keys_condition_holds_as_iam_evaluates_it() -> None:
    own = Condition("ForAllValues:StringLike", "dynamodb:LeadingKeys", ("doc#*",))
    present = Condition("Null", "dynamodb:LeadingKeys", ("false",))
    assert own.holds({LEADING_KEYS: ["doc#ghost#1", "doc#sanity#2"]})
    assert not own.holds({LEADING_KEYS: ["doc#ghost#1", "page#1"]})  # every key of a batch must match
    assert own.holds({})  # ForAllValues over no key at all is true in IAM: hence the template's Null check
    assert not present.holds({}) and present.holds({LEADING_KEYS: ["doc#ghost#1"]})
    guarded = Statement(("dynamodb:GetItem", "dynamodb:Scan"), ("arn:aws:dynamodb:*:*:table/manifest",), (own, present))
    table = "arn:aws:dynamodb:us-east-1:123456789012:table/manifest"
    assert guarded.allows("dynamodb:GetItem", table, {LEADING_KEYS: ["doc#ghost#1"]})
    assert not guarded.allows("dynamodb:Scan", table, {})


# --- docs/security.md is the template's reference ---------------------------------------------------------------
def _sub(value: Any) -> str | None:
    """An S3 object grant as the reference writes it (``<bucket>/sitemap-*``); None for any other resource."""
    text = value.get("Fn::Sub") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text.startswith("${SitemapBucket.Arn}/"):
        return None
    return re.sub(r"\$\{(\w+)\}", r"<\1>", text.replace("${SitemapBucket.Arn}", "<bucket>"))


def _statements(node: Any) -> list[dict[str, Any]]:
    """Every statement under ``node``, in both branches of a condition."""
    if isinstance(node, list):
        return [s for item in node for s in _statements(item)]
    if not isinstance(node, dict):
        return []
    if "Statement" in node:
        return list(node["Statement"])
    return [s for value in node.values() for s in _statements(value)]


def granted() -> dict[str, list[dict[str, Any]]]:
    """Each role's statements in template.yaml: the functions' and the roles the template declares itself."""
    roles: dict[str, list[dict[str, Any]]] = {}
    for name, spec in template_source()["Resources"].items():
        if spec["Type"] == "AWS::Serverless::Function":
            roles[name] = _statements(spec["Properties"].get("Policies", []))
        elif spec["Type"] == "AWS::IAM::Role":
            roles[name] = _statements([p["PolicyDocument"] for p in spec["Properties"]["Policies"]])
    return roles


def documented() -> dict[str, list[tuple[set[str], str]]]:
    """Each role's rows in docs/security.md's IAM table: (actions, the rest of the row)."""
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    rows: dict[str, list[tuple[set[str], str]]] = {}
    for line in text.split("\n## IAM", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"`\w+`", cells[0]):
            continue
        actions, service = set(), ""
        for token in re.findall(r"`([^`]+)`", cells[1]):  # `dynamodb:GetItem`, `PutItem`: the service carries on
            service, _, action = token.rpartition(":") if ":" in token else (service, ":", token)
            actions.add(f"{service}:{action}")
        rows.setdefault(cells[0].strip("`"), []).append((actions, " | ".join(cells[2:])))
    return rows


def test_the_security_reference_lists_every_role_with_exactly_its_grants() -> None:
    roles, rows = granted(), documented()
    assert set(rows) == set(roles) and len(roles) >= 10
    problems = []
    for role, statements in roles.items():
        listed = {a for actions, _ in rows[role] for a in actions}
        actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
        problems += [f"{role}: {a} granted, not documented" for a in sorted(actions - listed)]
        problems += [f"{role}: {a} documented, not granted" for a in sorted(listed - actions)]
        for statement in statements:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            wanted = [r for r in map(_sub, resources) if r] + [
                v for keys in statement.get("Condition", {}).values() for values in keys.values()
                for v in (values if isinstance(values, list) else []) if "*" in v
            ]  # fmt: skip
            for action in [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]:
                where = [rest for actions, rest in rows[role] if action in actions]
                problems += [
                    f"{role}: {action} on {w} not in its rows" for w in wanted if not any(w in r for r in where)
                ]
    assert problems == []


def test_the_security_reference_names_what_cloudfront_may_read() -> None:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `SitemapBucket` | bucket policy"))
    policy = template_source()["Resources"]["SitemapBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    patterns = [_sub(r) or _sub(r["Fn::If"][1]) for r in policy["Resource"]]
    assert patterns == ["<bucket>/sitemap*", "<bucket>/<IndexNowKey>.txt", "<bucket>/sites/*/sitemap*",
                        "<bucket>/sites/*/*.txt"]  # fmt: skip
    deny = template_source()["Resources"]["SitemapBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][1]
    assert deny["Effect"] == "Deny" and _sub(deny["Resource"]) == "<bucket>/sites/*/_*"
    assert all(f"`{p}`" in row for p in [*patterns, "<bucket>/sites/*/_*"] if p)


@pytest.mark.parametrize("reserved", ["10", "0"])
def test_the_webhook_function_is_reserved_unless_zero(reserved: str) -> None:
    """0 must leave the function unreserved: a reservation of 0 is Lambda's switch that throttles every request."""
    hooks = {"WebhookSecretArn": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf"}
    function = stack({**SITE, **hooks, "WebhookConcurrency": reserved}).of_type("AWS::Lambda::Function")
    assert function["WebhookFunction"].get("ReservedConcurrentExecutions") == (None if reserved == "0" else "10")
    assert all("ReservedConcurrentExecutions" not in f for n, f in function.items() if n != "WebhookFunction")


ROUTING = ("IngestFunction", "RebuildShardFunction", "RebuildIndexFunction", "NotifyFunction", "SweepFunction",
           "UpkeepFunction", "ReconcileFunction")  # fmt: skip
# Beside what every function that routes by site needs (a site read by host, GetItem, or with all the sites, Query):
# the marks and cursors of service/site_marks.py each function writes or deletes.
MARKS = {"IngestFunction": {"PutItem"}, "RebuildShardFunction": {"PutItem"}, "RebuildIndexFunction": {"PutItem"},
         "NotifyFunction": {"PutItem", "DeleteItem"}, "SweepFunction": {"PutItem", "DeleteItem"},
         "UpkeepFunction": {"PutItem"}, "ReconcileFunction": {"PutItem"}}  # fmt: skip


@pytest.mark.parametrize("feed", ["0", "20"])
@pytest.mark.parametrize("indexnow", ["", KEY])
def test_every_function_that_routes_by_site_may_read_the_sites_and_write_their_marks(feed: str, indexnow: str) -> None:
    """Whatever the parameters (a grant under a condition of its own, such as the feed's, is not enough)."""
    roles = stack({**SITE, "IndexNowKey": indexnow, "RecentChangesFeed": feed}).of_type("AWS::IAM::Role")
    for function in ROUTING:
        role = roles.get(f"{function}Role")
        if role is None:
            continue  # not deployed with these parameters (the notifier without IndexNow, Search Console and feed)
        granted = set()
        for policy in role.get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                if statement["Effect"] != "Allow" or "ManifestTable" not in str(statement["Resource"]):
                    continue
                actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
                keys = statement.get("Condition", {}).get("ForAllValues:StringEquals", {}).get("dynamodb:LeadingKeys")
                if "Condition" not in statement:
                    granted |= {action.removeprefix("dynamodb:") for action in actions}
                elif keys is not None and "sites" in keys and "dynamodb:Query" in actions:
                    granted.add("Query")  # the sites' partition only: what the cache's listing reads
        assert {"GetItem", "Query"} | MARKS[function] <= granted, (function, granted)
