"""A first deploy succeeds on the defaults, and every parameter value the template allows gives resources AWS
accepts: the rules of SAM CLI, CloudFront and CloudWatch that cfn-lint does not know, held over the template's
allowed range (tests/cfn_template.py evaluates it for each set of values)."""

from __future__ import annotations

import copy
import itertools
import re
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest

from sitemap_updater.local.iam import matches
from sitemap_updater.settings import Settings
from tests.cfn_template import ROOT, Stack, parameter_values, source, stack, transformed, translate

DOMAIN = "sitemaps.example.com"
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0b1f2a3c-4d5e-6f70-8192-a3b4c5d6e7f8"
TOPIC = "arn:aws:sns:eu-west-1:123456789012:operations"
ACTIONS = [{"Fn::If": ["CreateAlarmTopic", {"Ref": "AlarmTopic"}, {"Ref": "AlarmTopicArn"}]}]
CLOUDFRONT = ("AWS::CloudFront::Distribution", "AWS::CloudFront::CachePolicy")


# --- SAM CLI: no question whose default answer fails the deploy -------------------------------------------
def guided_auth_questions(template: dict[str, Any]) -> list[str]:
    """The resources `sam deploy --guided` asks "<resource> has no authentication. Is this okay? [y/N]" about
    (samcli/commands/deploy/auth_utils.py, auth_per_resource): every AWS::Serverless::Function with a
    FunctionUrlConfig whose AuthType is NONE, or an Api/HttpApi event without Auth, whatever its Condition
    (SAM CLI does not evaluate resource conditions); N, the default, ends the deploy."""
    asked = []
    for name, spec in template["Resources"].items():
        if spec["Type"] != "AWS::Serverless::Function":
            continue
        props = spec.get("Properties", {})
        if props.get("FunctionUrlConfig") and props["FunctionUrlConfig"].get("AuthType") == "NONE":
            asked.append(f"{name} Function Url")
        for event in props.get("Events", {}).values():
            if event["Type"] in ("Api", "HttpApi") and not event.get("Properties", {}).get("Auth"):
                asked.append(name)
    return asked


def test_guided_deploy_asks_no_question_whose_default_answer_fails_it() -> None:
    assert guided_auth_questions(source()) == []


def test_the_webhook_endpoint_is_the_url_and_permissions_sam_would_make_of_function_url_config() -> None:
    # Given the webhook function as SAM's FunctionUrlConfig would declare it (which makes SAM CLI ask)
    template = source()
    declared = {
        n: template["Resources"].pop(n) for n in list(template["Resources"]) if n.startswith("WebhookFunctionU")
    }
    template["Resources"]["WebhookFunction"]["Properties"]["FunctionUrlConfig"] = {"AuthType": "NONE"}
    assert guided_auth_questions(template) == ["WebhookFunction Function Url"]
    made = translate(template)["Resources"]
    # Then the resources the template declares itself are those, with the same logical IDs (a deployed URL stays):
    # the URL, InvokeFunctionUrl for anyone, and InvokeFunction through the URL only (needed since October 2025)
    by_hand = {n: {k: v for k, v in r.items() if k != "Metadata"} for n, r in declared.items()}
    sam = {n: r for n, r in made.items() if n in by_hand or n.startswith("WebhookFunctionU")}
    assert by_hand == sam
    assert {r["Properties"].get("Action") for r in sam.values()} == {
        None,
        "lambda:InvokeFunctionUrl",
        "lambda:InvokeFunction",
    }


# --- CloudFront: every value the template allows --------------------------------------------------------------
def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                yield value
            elif key == "Fn::Sub" and isinstance(value, str):
                yield from re.findall(r"\$\{([A-Za-z0-9]+)\}", value)
            yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def boundaries(name: str) -> list[str]:
    """A parameter's values at and next to the ends of what the template allows, and its default."""
    spec = transformed()["Parameters"][name]
    if "AllowedValues" in spec:
        return [str(v) for v in spec["AllowedValues"]]
    if spec["Type"] == "Number":
        low = int(spec.get("MinValue", 0))
        high = int(spec.get("MaxValue", low + 1_000_000))
        return sorted({str(v) for v in (low, low + 1, int(spec["Default"]), high - 1, high)}, key=int)
    return [str(spec.get("Default", ""))]


def cloudfront_stacks() -> Iterator[Stack]:
    """Every combination of the boundary values of the parameters CloudFront's resources use, with and without a
    domain of the sitemaps' own."""
    resources = transformed()["Resources"]
    used = sorted(
        {r for spec in resources.values() if spec["Type"] in CLOUDFRONT for r in refs(spec)}
        & set(transformed()["Parameters"]) - {"SiteUrl", "SitemapDomain", "CertificateArn"}
    )
    assert "CdnMaxAgeSeconds" in used
    for values in itertools.product(*(boundaries(name) for name in used)):
        for domain in ({}, {"SitemapDomain": DOMAIN, "CertificateArn": CERTIFICATE}):
            yield stack({"SiteUrl": "https://www.example.com", **dict(zip(used, values, strict=True)), **domain})


def cache_policy_problems(name: str, config: dict[str, Any]) -> list[str]:
    """What CloudFront refuses in a cache policy (CreateCachePolicy)."""
    problems = []
    ttl = [int(config[k]) for k in ("MinTTL", "DefaultTTL", "MaxTTL")]
    if not 0 <= ttl[0] <= ttl[1] <= ttl[2] <= 31_536_000:
        problems.append(f"{name}: MinTTL <= DefaultTTL <= MaxTTL does not hold: {ttl}")
    key = config["ParametersInCacheKeyAndForwardedToOrigin"]
    if ttl == [0, 0, 0]:  # caching disabled: nothing may be cached apart, compressed objects included
        for flag in ("EnableAcceptEncodingGzip", "EnableAcceptEncodingBrotli"):
            if key.get(flag) is True:
                problems.append(f"{name}: {flag} is invalid for a policy with caching disabled (TTLs all 0)")
        for part, field in (("Headers", "Header"), ("Cookies", "Cookie"), ("QueryStrings", "QueryString")):
            if key[f"{part}Config"][f"{field}Behavior"] != "none":
                problems.append(f"{name}: {field}Behavior is invalid for a policy with caching disabled")
    return problems


def distribution_problems(config: dict[str, Any], policies: set[str]) -> list[str]:
    """What CloudFront refuses in a distribution: behaviours naming missing policies or origins, path patterns
    given twice, cached methods that are not allowed, and a viewer certificate that does not fit the aliases."""
    problems = []
    origins = {o["Id"] for o in config["Origins"]}
    behaviours = [config["DefaultCacheBehavior"], *config.get("CacheBehaviors", [])]
    patterns = [b["PathPattern"] for b in behaviours[1:]]
    if len(patterns) != len(set(patterns)):
        problems.append(f"a path pattern is given twice: {patterns}")
    for behaviour in behaviours:
        where = behaviour.get("PathPattern", "default")
        if behaviour["CachePolicyId"] not in policies:
            problems.append(f"{where}: cache policy {behaviour['CachePolicyId']} is not one of the stack's")
        if behaviour["TargetOriginId"] not in origins:
            problems.append(f"{where}: no origin {behaviour['TargetOriginId']}")
        if not set(behaviour["CachedMethods"]) <= set(behaviour["AllowedMethods"]):
            problems.append(f"{where}: caches methods it does not allow")
    aliases = config.get("Aliases", [])
    certificate = config["ViewerCertificate"]
    if aliases:
        if set(certificate) != {"AcmCertificateArn", "SslSupportMethod", "MinimumProtocolVersion"}:
            problems.append(f"aliases {aliases} need an ACM certificate, an SSL support method and a TLS version")
        elif not re.fullmatch(r"arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate/.+", certificate["AcmCertificateArn"]):
            problems.append("CloudFront takes ACM certificates from us-east-1 only")
        elif (certificate["SslSupportMethod"], certificate["MinimumProtocolVersion"]) != ("sni-only", "TLSv1.2_2021"):
            problems.append(f"not SNI with TLS 1.2 or newer: {certificate}")
    elif certificate != {"CloudFrontDefaultCertificate": True}:
        problems.append(f"without aliases the default certificate and no other field: {certificate}")
    return problems


def test_cloudfront_accepts_the_distribution_and_cache_policies_for_every_allowed_value() -> None:
    checked = 0
    for each in cloudfront_stacks():
        policies = each.of_type("AWS::CloudFront::CachePolicy")
        problems = [p for n, c in policies.items() for p in cache_policy_problems(n, c["CachePolicyConfig"])]
        distribution = each.of_type("AWS::CloudFront::Distribution")["Distribution"]["DistributionConfig"]
        problems += distribution_problems(distribution, {f"<{n}>" for n in policies})
        # the index queue waits out the CDN's lifetime: SQS takes a delay of 0 to 900 seconds
        delay = int(each.of_type("AWS::SQS::Queue")["IndexQueue"]["DelaySeconds"])
        problems += [] if 0 <= delay <= 900 else [f"IndexQueue DelaySeconds {delay}"]
        assert not problems, (each.parameters, problems)
        checked += 1
    assert checked >= 10


def test_the_rules_hold_both_ends_of_each_policy_check() -> None:
    # The checks above find what CloudFront refuses: the index policy as it was (gzip at every lifetime) at 0
    caching_off = stack({"SiteUrl": "https://www.example.com", "CdnMaxAgeSeconds": "0"})
    index = copy.deepcopy(caching_off.of_type("AWS::CloudFront::CachePolicy")["SitemapIndexCachePolicy"])
    config = index["CachePolicyConfig"]
    assert config["ParametersInCacheKeyAndForwardedToOrigin"]["EnableAcceptEncodingGzip"] is False
    assert cache_policy_problems("index", config) == []
    config["ParametersInCacheKeyAndForwardedToOrigin"]["EnableAcceptEncodingGzip"] = True
    assert cache_policy_problems("index", config) != []
    # and at 1 second the index is compressed and cached per encoding again
    caching = stack({"SiteUrl": "https://www.example.com", "CdnMaxAgeSeconds": "1"})
    config = caching.of_type("AWS::CloudFront::CachePolicy")["SitemapIndexCachePolicy"]["CachePolicyConfig"]
    assert config["ParametersInCacheKeyAndForwardedToOrigin"]["EnableAcceptEncodingGzip"] is True
    assert (config["MinTTL"], config["DefaultTTL"], config["MaxTTL"]) == (0, "1", "1")


# --- A domain of the sitemaps' own ----------------------------------------------------------------------------
def test_a_sitemap_domain_is_an_alias_with_its_certificate_and_the_index_and_robots_line_follow_it() -> None:
    own = stack({"SiteUrl": "https://www.example.com", "SitemapDomain": DOMAIN, "CertificateArn": CERTIFICATE})
    config = own.of_type("AWS::CloudFront::Distribution")["Distribution"]["DistributionConfig"]
    assert config["Aliases"] == [DOMAIN]
    assert config["ViewerCertificate"]["AcmCertificateArn"] == CERTIFICATE
    assert own.outputs["SitemapIndexUrl"] == f"https://{DOMAIN}/sitemap.xml"
    # the cross-submission: the site's robots.txt names the index on the other host
    assert own.outputs["RobotsTxtLine"] == f"Sitemap: https://{DOMAIN}/sitemap.xml"
    functions = [r for r in own.resources.values() if r["Type"] == "AWS::Lambda::Function"]
    assert functions and all(
        f["Properties"]["Environment"]["Variables"]["SITEMAP_BASE_URL"] == f"https://{DOMAIN}" for f in functions
    )
    plain = stack({"SiteUrl": "https://www.example.com"})
    config = plain.of_type("AWS::CloudFront::Distribution")["Distribution"]["DistributionConfig"]
    assert "Aliases" not in config and config["ViewerCertificate"] == {"CloudFrontDefaultCertificate": True}
    assert plain.outputs["RobotsTxtLine"] == "Sitemap: https://www.example.com/sitemap.xml"
    assert plain.outputs["SitemapIndexUrl"] == "https://www.example.com/sitemap.xml"
    functions = [r for r in plain.resources.values() if r["Type"] == "AWS::Lambda::Function"]
    assert all(f["Properties"]["Environment"]["Variables"]["SITEMAP_BASE_URL"] == "" for f in functions)


@pytest.mark.parametrize(
    ("values", "broken"),
    [
        ({"SitemapDomain": DOMAIN}, ["SitemapDomainNeedsItsCertificate"]),
        ({"CertificateArn": CERTIFICATE}, ["CertificateNeedsItsDomain"]),
        ({"SitemapDomain": DOMAIN, "CertificateArn": CERTIFICATE}, []),
        ({}, []),
        ({"AlarmTopicArn": TOPIC, "AlarmEmail": "ops@example.com"}, ["AlarmEmailNeedsTheStacksTopic"]),
        ({"AlarmTopicArn": TOPIC}, []),
        ({"AlarmEmail": "ops@example.com"}, []),
    ],
)
def test_cloudformation_refuses_the_combinations_no_resource_could_take(
    values: dict[str, str], broken: list[str]
) -> None:
    assert stack({"SiteUrl": "https://www.example.com", **values}).broken_rules == broken


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("CertificateArn", CERTIFICATE, CERTIFICATE.replace("us-east-1", "eu-west-1")),
        ("SitemapDomain", DOMAIN, "https://sitemaps.example.com"),
        ("AlarmTopicArn", TOPIC, TOPIC + ".fifo"),
        ("AlarmEmail", "ops@example.com", "ops"),
        ("WebhookSecretArn", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf", "hooks"),
    ],
)
def test_a_parameter_refuses_what_its_resources_could_not_take(name: str, good: str, bad: str) -> None:
    pattern = transformed()["Parameters"][name]["AllowedPattern"]
    assert re.fullmatch(pattern, good) and re.fullmatch(pattern, "") and not re.fullmatch(pattern, bad)


# --- Every alarm reaches a person --------------------------------------------------------------------------
def alarms(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    kinds = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
    return {n: r.get("Properties", {}) for n, r in resources.items() if r["Type"] in kinds}


def test_every_alarm_notifies_the_alarm_topic_when_it_fires_and_when_it_is_ok_again() -> None:
    found = alarms(transformed()["Resources"])
    assert len(found) >= 7
    silent = {n: (p.get("AlarmActions"), p.get("OKActions")) for n, p in found.items()}
    assert {n for n, actions in silent.items() if actions != (ACTIONS, ACTIONS)} == set()


def test_the_alarm_topic_is_the_stacks_encrypted_one_with_the_email_or_the_one_given() -> None:
    # By default: a topic of the stack's own, encrypted with a key CloudWatch may use (the AWS managed aws/sns
    # key would silently drop every notification), and no subscription until an address is given
    own = stack({"SiteUrl": "https://www.example.com"})
    topic = own.of_type("AWS::SNS::Topic")["AlarmTopic"]
    assert topic["KmsMasterKeyId"] == "<AlarmTopicKey>"
    key = own.of_type("AWS::KMS::Key")["AlarmTopicKey"]
    grants = [s for s in key["KeyPolicy"]["Statement"] if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]
    assert [set(s["Action"]) for s in grants] == [{"kms:Decrypt", "kms:GenerateDataKey*"}]
    assert key["EnableKeyRotation"] is True
    assert own.of_type("AWS::SNS::Subscription") == {}
    assert {(*p["AlarmActions"], *p["OKActions"]) for p in alarms(own.resources).values()} == {
        ("<AlarmTopic>", "<AlarmTopic>")
    }
    assert own.outputs["AlarmNotificationTopicArn"] == "<AlarmTopic>"
    mailed = stack({"SiteUrl": "https://www.example.com", "AlarmEmail": "ops@example.com"})
    assert list(mailed.of_type("AWS::SNS::Subscription").values()) == [
        {"TopicArn": "<AlarmTopic>", "Protocol": "email", "Endpoint": "ops@example.com"}
    ]
    # With a topic of the operator's: every alarm notifies it, and the stack makes no topic, key or subscription
    given = stack({"SiteUrl": "https://www.example.com", "AlarmTopicArn": TOPIC})
    kinds = {r["Type"] for r in given.resources.values()}
    assert not kinds & {"AWS::SNS::Topic", "AWS::KMS::Key", "AWS::SNS::Subscription"}
    for props in alarms(given.resources).values():
        assert props["AlarmActions"] == props["OKActions"] == [TOPIC]
    assert given.outputs["AlarmNotificationTopicArn"] == TOPIC


# --- What an idle stack pays for --------------------------------------------------------------------------------
def test_the_dashboard_and_the_metrics_only_it_shows_come_with_create_dashboard_alone() -> None:
    # The dashboard ($3 a month) and the custom metrics only it reads ($0.30 a metric-month each) are opt-in
    def dashboards(each: Stack) -> tuple[int, set[str]]:
        functions = each.of_type("AWS::Lambda::Function").values()
        return len(each.of_type("AWS::CloudWatch::Dashboard")), {
            f["Environment"]["Variables"]["DASHBOARD_METRICS"] for f in functions
        }

    assert dashboards(stack({"SiteUrl": "https://www.example.com"})) == (0, {"false"})
    assert dashboards(stack({"SiteUrl": "https://www.example.com", "CreateDashboard": "true"})) == (1, {"true"})


# --- What a user decides, and what `sam deploy --guided` asks -------------------------------------------------
def test_the_parameters_are_grouped_and_labelled_in_the_order_guided_deploy_asks_them() -> None:
    template = source()
    names = list(template["Parameters"])
    interface = template["Metadata"]["AWS::CloudFormation::Interface"]
    grouped = [name for group in interface["ParameterGroups"] for name in group["Parameters"]]
    assert grouped == names  # each in one group, in the order of the Parameters section (which SAM CLI asks in)
    assert set(interface["ParameterLabels"]) == set(names)
    assert all(interface["ParameterLabels"][n]["default"] for n in names)
    # only the site has no default: accepting every other one deploys
    assert [n for n, spec in template["Parameters"].items() if "Default" not in spec] == ["SiteUrl"]
    assert all(spec.get("Description") for spec in template["Parameters"].values())


def test_the_defaults_deploy_given_only_the_site() -> None:
    defaults = stack({"SiteUrl": "https://www.example.com"})
    assert defaults.broken_rules == []
    assert re.fullmatch(transformed()["Parameters"]["SiteUrl"]["AllowedPattern"], "https://www.example.com")
    for name, value in parameter_values({"SiteUrl": "https://www.example.com"}).items():
        spec = transformed()["Parameters"][name]
        if "AllowedPattern" in spec:
            assert re.fullmatch(spec["AllowedPattern"], value), name
        if "AllowedValues" in spec:
            assert value in [str(v) for v in spec["AllowedValues"]], name


def test_the_readme_shows_exactly_what_guided_deploy_asks_in_its_order() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Deploy to AWS", 1)[1].split("\n## ", 1)[0]
    session = section.split("```text\n", 1)[1].split("```", 1)[0]
    asked = re.findall(r"^\s*Parameter (\w+) \[([^\]]*)\]", session, re.MULTILINE)
    # SAM CLI asks every parameter, in the template's order, offering its default
    assert asked == [(name, str(spec.get("Default", ""))) for name, spec in source()["Parameters"].items()]
    # SAM CLI's own questions around them (samcli/commands/deploy/guided_context.py), and no security question
    questions = [line.split(" [", 1)[0].strip() for line in session.splitlines() if " [" in line]
    assert questions[:2] == ["Stack Name", "AWS Region"]
    assert questions[-6:] == [
        "Confirm changes before deploy",
        "Allow SAM CLI IAM role creation",
        "Disable rollback",
        "Save arguments to configuration file",
        "SAM configuration file",
        "SAM configuration environment",
    ]
    assert "authentication" not in session


def test_the_shipped_samconfig_deploys_the_stack_with_what_it_needs_and_no_site_of_its_own() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    deploy = config["default"]["deploy"]["parameters"]
    assert deploy["stack_name"] == "sitemap-updater"
    assert deploy["resolve_s3"] is True
    assert deploy["capabilities"] == "CAPABILITY_IAM"  # the functions' roles; nothing named, no nested stacks
    assert deploy["confirm_changeset"] is True
    assert "SiteUrl" not in deploy.get("parameter_overrides", "")  # never someone else's site by default
    assert not (ROOT / "infra" / "samconfig.example.toml").exists()  # one configuration, not two


@pytest.mark.parametrize("webhooks", ["", "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhooks-AbCdEf"])
def test_every_function_of_the_stack_has_its_errors_alarmed(webhooks: str) -> None:
    # Given the stack with and without the webhook endpoint
    built = stack({"SiteUrl": "https://www.example.com", "WebhookSecretArn": webhooks})
    counted: set[str] = set()
    for props in built.of_type("AWS::CloudWatch::Alarm").values():
        metrics = props.get("Metrics", [])
        used = " ".join(m["Expression"] for m in metrics if "Expression" in m)
        assert len(metrics) <= 10, "a metric math alarm takes at most 10 metrics"
        for metric in metrics:
            stat = metric.get("MetricStat", {}).get("Metric", {})
            if stat.get("MetricName") == "Errors" and re.search(rf"\b{metric['Id']}\b", used):
                counted |= {d["Value"] for d in stat["Dimensions"] if d["Name"] == "FunctionName"}
    # Then every function's errors are in an alarm's expression (a Ref to a function evaluates to "<Name>")
    functions = set(built.of_type("AWS::Lambda::Function"))
    assert ("WebhookFunction" in functions) == bool(webhooks) and len(functions) >= 8
    assert {name for name in functions if f"<{name}>" not in counted} == set()


def _billed_alarm_metrics(built: Stack) -> int:
    """What CloudWatch bills alarms by: one metric a plain alarm, each metric a metric math alarm reads."""
    return sum(
        sum(1 for m in p["Metrics"] if "MetricStat" in m) if "Metrics" in p else 1
        for p in alarms(built.resources).values()
    )


def test_the_idle_cost_counts_the_alarm_metrics_each_deployment_is_billed_for() -> None:
    from bench.incremental import _alarm_metrics
    from sitemap_updater.local.stack import load_template

    defaults = _billed_alarm_metrics(stack({"SiteUrl": "https://www.example.com"}))
    hooks = {"WebhookSecretArn": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf"}
    endpoint = _billed_alarm_metrics(stack({"SiteUrl": "https://www.example.com", **hooks})) - defaults
    # bench/cost.py prices what bench/incremental.py counts: the default deployment's
    template = load_template(ROOT / "template.yaml")
    assert sum(_alarm_metrics(spec) for spec in template["Resources"].values()) == defaults
    # and docs/operations.md says the same, with what the webhook endpoint adds
    rows = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8").split("## What an idle stack costs", 1)[1]
    alarm_row = next(line for line in rows.splitlines() if line.startswith("| CloudWatch alarms"))
    webhook_row = next(line for line in rows.splitlines() if line.startswith("| with `WebhookSecretArn`: the endpoint"))
    assert f": {defaults} alarm metrics |" in alarm_row and f"${defaults * 0.10:.2f} |" in alarm_row
    assert f": {endpoint} alarm metrics;" in webhook_row and f"+ ${endpoint * 0.10:.2f} |" in webhook_row


def _amount(cell: str) -> float:
    """A cost cell of docs/operations.md's table as an upper bound: "$1.25", "< $0.01", "$0", "**about $4.48**"."""
    return float(re.findall(r"\$([\d.]+)", cell)[0])


def test_an_idle_stack_with_the_defaults_costs_what_its_table_says_and_at_most_5_dollars_a_month() -> None:
    from bench import cost

    # Given the default deployment: the queues its functions poll, its alarms, dashboards and keys
    defaults = stack({"SiteUrl": "https://www.example.com"})
    template = source()["Resources"]
    polled = {  # by the enabled event source mappings (the notifier's is off with nothing to notify)
        mapping["EventSourceArn"].removeprefix("<").removesuffix(".Arn>")
        for mapping in defaults.of_type("AWS::Lambda::EventSourceMapping").values()
        if mapping.get("Enabled", True)
    }
    queues = {q: "fifo" if template[q]["Properties"].get("FifoQueue") else "standard" for q in polled}
    computed = cost.idle_month(
        queues,
        _billed_alarm_metrics(defaults),
        len(defaults.of_type("AWS::CloudWatch::Dashboard")),
        len(defaults.of_type("AWS::KMS::Key")),
    )
    # Then each line bench/cost.py computes is the one docs/operations.md shows
    section = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8").split("## What an idle stack costs", 1)[1]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ")][1:]  # after the head
    shown = {row[0].removeprefix("| ").removesuffix(" *"): _amount(row[-1]) for row in rows}
    for line, key in [("SQS: the functions' idle polling", "polling"), ("CloudWatch alarms", "alarms"),
                      ("CloudWatch dashboard", "dashboards"), ("KMS: the alarm topic's key", "keys"),
                      ("CloudWatch custom metrics", "metrics")]:  # fmt: skip
        assert shown[line] == round(computed[key], 2), line
    # And the total is its lines added up (each "< $x" as $x), at most $5 a month
    lines = list(shown.values())[: list(shown).index("**total**")]
    assert round(sum(lines), 2) == shown["**total**"] <= 5.00
    assert len(queues) == 3 and computed["dashboards"] == computed["metrics"] == 0


@pytest.mark.parametrize(
    ("parameters", "polls"),
    [
        ({}, False),
        ({"IndexNowKey": "a1b2c3d4e5f6a7b8"}, True),
        ({"RecentChangesFeed": "5"}, True),
        ({"SearchConsoleSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:sc"}, True),
    ],
)
def test_the_notifier_polls_its_queue_only_when_indexnow_search_console_or_the_feed_is_on(
    parameters: dict[str, str], polls: bool
) -> None:
    deployed = stack({"SiteUrl": "https://www.example.com", **parameters})
    mapping = deployed.of_type("AWS::Lambda::EventSourceMapping")["NotifyFunctionChanges"]
    assert mapping["EventSourceArn"] == "<NotifyQueue.Arn>" and mapping["Enabled"] is polls
    # and the functions learn the same from their settings: a rebuild sends change records exactly then
    env = deployed.of_type("AWS::Lambda::Function")["RebuildShardFunction"]["Environment"]["Variables"]
    settings = Settings.from_env({key: str(value) for key, value in env.items()})
    assert (settings.announces_pages or settings.announces_index) is polls


def test_every_alarm_says_in_the_operations_guide_what_it_means_and_what_to_do() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8").split("## Alarms", 1)[1].split("\n## ", 1)[0]
    described = set(re.findall(r"^### (\w+Alarm):", guide, re.MULTILINE)) | set(
        re.findall(r"\*\*`(\w+Alarm)`\*\*", guide)
    )
    assert set(alarms(transformed()["Resources"])) - described == set()


@pytest.mark.parametrize("webhooks", ["", "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhooks-AbCdEf"])
def test_every_function_logs_to_a_group_of_the_stack_with_its_retention(webhooks: str) -> None:
    """A group Lambda creates itself keeps every line forever: a flood's lines too."""
    built = stack({"SiteUrl": "https://www.example.com", "WebhookSecretArn": webhooks, "LogRetentionDays": "14"})
    groups = {g["LogGroupName"]: g.get("RetentionInDays") for g in built.of_type("AWS::Logs::LogGroup").values()}
    functions = set(built.of_type("AWS::Lambda::Function"))
    assert ("WebhookFunction" in functions) == bool(webhooks)
    assert {f"/aws/lambda/<{name}>": "14" for name in functions}.items() <= groups.items()


@pytest.mark.parametrize(
    ("given", "threshold"),
    [
        ({}, 60),  # the defaults: the promise of 60 s
        ({"FreshnessSeconds": "900"}, 900),  # a longer promise moves the alarm with it
        ({"FreshnessSeconds": "0"}, 60),  # every change at once: the former fixed 60 s
        ({"FreshnessSeconds": "900", "FreshnessAlarmSeconds": "1200"}, 1200),  # set: as set
    ],
)
def test_the_freshness_alarm_follows_the_promise_unless_set(given: dict[str, str], threshold: int) -> None:
    from sitemap_updater.local.iam import Names, resolve
    from sitemap_updater.local.stack import load_template

    template = load_template(ROOT / "template.yaml")
    params = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()} | given
    names = Names(params, {}, {}, template["Conditions"])
    alarm = template["Resources"]["PublishLatencyAlarm"]["Properties"]
    assert float(resolve(alarm["Threshold"], names)) == threshold


def test_every_site_s_index_files_are_served_compressed_like_the_stack_s_own() -> None:
    """CloudFront takes the first behaviour whose path pattern matches (``*`` any characters, ``/`` included; ``?``
    one; case-sensitive), else the default: an index file, the stack's own or a site's under sites/<host>/, gets
    the index cache policy (compressed at the edge); a sitemap file (gzip already), a text twin and a key file the
    default behaviour."""
    config = stack({"SiteUrl": "https://www.example.com"}).of_type("AWS::CloudFront::Distribution")["Distribution"]
    config = config["DistributionConfig"]
    behaviours = config["CacheBehaviors"]
    assert len(behaviours) <= 75  # CloudFront's quota of cache behaviours a distribution

    def served(path: str) -> tuple[str, bool]:
        first = next((b for b in behaviours if matches(b["PathPattern"].lstrip("/"), path, case=True)), None)
        chosen = first or config["DefaultCacheBehavior"]
        return chosen["CachePolicyId"], chosen["Compress"]

    index, files = ("<SitemapIndexCachePolicy>", True), ("<SitemapFileCachePolicy>", False)
    for prefix in ("", "sites/www.example.de/", "sites/shop.example.fr/"):
        assert served(f"{prefix}sitemap.xml") == index
        assert served(f"{prefix}sitemap-index-2.xml") == index
        for name in ("sitemap-blog-00000000.xml.gz", "sitemap-blog-00000000.txt", "site-key-0002.txt"):
            assert served(prefix + name) == files, prefix + name
