"""Each function's IAM policy from template.yaml, enforced on its AWS clients in local runs and tests.

The template stays the one source: the statements of every function's ``Policies`` are resolved against the
local stack's physical names and ARNs, and a botocore hook in front of every call of a function's clients
allows or denies it as IAM would (Allow and Deny statements, an explicit Deny winning over any Allow, action and
resource wildcards, and the condition operators the template uses, over ``dynamodb:LeadingKeys``: the partition
keys a call touches). ``bucket_policy`` reads the bucket policy the same way, for what CloudFront may read. A
denied call answers what AWS answers (403 ``AccessDenied``), and so does S3 for a missing key when the function may
not list the bucket: HeadObject and GetObject say 403, not 404, without ``s3:ListBucket``.

SAM policy templates (``DynamoDBCrudPolicy`` and friends) are refused: the template names the actions each
function uses, so that a missing or an extra permission shows up in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from botocore.awsrequest import AWSResponse, HTTPHeaders

ACCOUNT = "123456789012"
PARTITION = "aws"

# API operations whose IAM action has another name; every other operation is "<service>:<operation>".
_ACTIONS = {
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("s3", "ListObjects"): "s3:ListBucket",
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility",
}
# TransactWriteItems has no IAM action of its own: each item needs the action of its kind on its table.
_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}


class PolicyError(ValueError):
    """A function's policy in the template is not something this evaluator can check."""


# The request's condition keys: name (lower case, as IAM compares them) -> its values; a key a call does not
# have is absent.
Context = Mapping[str, Sequence[str]]
LEADING_KEYS = "dynamodb:leadingkeys"
_OPERATORS = {"StringEquals", "StringLike", "Null", "Bool"}
_SETS = {"ForAllValues", "ForAnyValue"}


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition of a statement: ``operator`` (``StringLike``, ``ForAllValues:StringLike``, ``Null``, ...) on
    ``key`` with the policy's ``values`` (any of which may match)."""

    operator: str
    key: str
    values: tuple[str, ...]

    def holds(self, context: Context) -> bool:
        """As IAM evaluates it: a single-valued operator is false without the key; ``ForAllValues`` is true when
        every value of the key matches (so also without the key, which is why a policy pairs it with ``Null``);
        ``ForAnyValue`` when one does; ``Null`` ``"true"`` when the key is absent, ``"false"`` when present."""
        found = context.get(self.key.lower())
        qualifier, _, operator = self.operator.rpartition(":")
        if operator == "Null":
            return (not found) == (self.values == ("true",))
        if operator == "Bool":
            return found is not None and len(found) == 1 and found[0].lower() in self.values
        like = operator == "StringLike"

        def one(value: str) -> bool:
            return any(matches(v, value, case=True) if like else v == value for v in self.values)

        if qualifier == "ForAllValues":
            return all(one(value) for value in found or ())
        if qualifier == "ForAnyValue":
            return any(one(value) for value in found or ())
        return found is not None and len(found) == 1 and one(found[0])


@dataclass(frozen=True, slots=True)
class Statement:
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[Condition, ...] = ()
    effect: str = "Allow"  # or "Deny"

    def applies(self, action: str, resource: str, context: Context | None = None) -> bool:
        """Whether the statement covers the request (whatever its effect)."""
        return (
            any(matches(p, action, case=False) for p in self.actions)
            and any(matches(p, resource, case=True) for p in self.resources)
            and all(c.holds(context or {}) for c in self.conditions)
        )

    def allows(self, action: str, resource: str, context: Context | None = None) -> bool:
        """An Allow statement that covers the request (a Deny statement allows nothing)."""
        return self.effect == "Allow" and self.applies(action, resource, context)


def decide(statements: Iterable[Statement], action: str, resource: str, context: Context | None = None) -> bool:
    """IAM's evaluation of one policy: allowed when an Allow statement covers the request and no Deny does."""
    found = list(statements)
    if any(s.effect == "Deny" and s.applies(action, resource, context) for s in found):
        return False
    return any(s.allows(action, resource, context) for s in found)


@dataclass(slots=True)
class Policy:
    """One function's statements, and what its calls asked for (for the tests' least-privilege checks)."""

    function: str
    statements: list[Statement]
    used: set[tuple[str, str]] = field(default_factory=set)  # (action, resource) allowed
    denied: list[str] = field(default_factory=list)
    hash_keys: dict[str, str] = field(default_factory=dict)  # table name -> its partition key's attribute

    def allows(self, action: str, resource: str, context: Context | None = None) -> bool:
        if decide(self.statements, action, resource, context):
            self.used.add((action, resource))
            return True
        keys = (
            f" (leading keys {', '.join(sorted(context[LEADING_KEYS]))})" if context and LEADING_KEYS in context else ""
        )
        self.denied.append(f"{self.function}: {action} on {resource}{keys}")
        return False

    def granted(self) -> list[tuple[str, str]]:
        """Every (action pattern, resource pattern) pair the template grants this function (its Allow statements)."""
        return [(a, r) for s in self.statements if s.effect == "Allow" for a in s.actions for r in s.resources]


class Enforcer:
    """Attached to every AWS client of a local run: while a function runs (``acting_as``), each call is allowed
    or denied by that function's policy; outside a function (the operator, tests) every call is allowed."""

    def __init__(self, policies: dict[str, Policy]) -> None:
        self.policies = policies
        self.active: Policy | None = None

    @contextmanager
    def acting_as(self, function: str) -> Iterator[Policy]:
        """Run the calls of this block under ``function``'s policy."""
        previous, self.active = self.active, self.policies[function]
        try:
            yield self.active
        finally:
            self.active = previous

    def attach(self, client: Any) -> Any:
        """Check every call of ``client`` (a botocore client); returns the client."""
        events = client.meta.events
        events.register("before-parameter-build", _remember_params)
        events.register("before-call", self._before_call)
        events.register("after-call.s3.HeadObject", self._missing_key)
        events.register("after-call.s3.GetObject", self._missing_key)
        return client

    def guarded(self, make_client: Callable[..., Any]) -> Callable[..., Any]:
        """A client factory whose clients are checked."""

        def make(service_name: str, **kwargs: Any) -> Any:
            return self.attach(make_client(service_name, **kwargs))

        return make

    def _before_call(self, model: Any, context: dict[str, Any], **_kwargs: Any) -> Any:
        policy = self.active
        if policy is None:
            return None
        service = model.service_model.endpoint_prefix
        for action, resource, keys in requests(service, model.name, context.get(_PARAMS, {}), policy.hash_keys):
            if not policy.allows(action, resource, keys):
                message = f"User: {policy.function} is not authorized to perform: {action} on resource: {resource}"
                return _denied(service, model.name, message)
        return None

    def _missing_key(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_kwargs: Any
    ) -> None:
        policy = self.active
        if policy is None or http_response.status_code != 404:
            return
        bucket_arn = f"arn:{PARTITION}:s3:::{context.get(_PARAMS, {}).get('Bucket', '')}"
        if decide(policy.statements, "s3:ListBucket", bucket_arn):
            policy.used.add(("s3:ListBucket", bucket_arn))  # what made this answer a 404
            return
        http_response.status_code = 403
        code = "403" if model.name == "HeadObject" else "AccessDenied"
        parsed["Error"] = {"Code": code, "Message": "Forbidden" if code == "403" else "Access Denied"}
        parsed.setdefault("ResponseMetadata", {})["HTTPStatusCode"] = 403


_PARAMS = "sitemap_updater_params"


def _remember_params(params: dict[str, Any], context: dict[str, Any], **_kwargs: Any) -> None:
    context[_PARAMS] = params


def _denied(service: str, operation: str, message: str) -> tuple[AWSResponse, dict[str, Any]]:
    code = "AccessDeniedException" if service in ("dynamodb", "secretsmanager") else "AccessDenied"
    if service == "s3" and operation == "HeadObject":
        code = "403"
    parsed = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 403}}
    return AWSResponse("", 403, HTTPHeaders(), None), parsed


def requests(
    service: str, operation: str, params: dict[str, Any], hash_keys: Mapping[str, str] | None = None
) -> list[tuple[str, str, dict[str, list[str]]]]:
    """The (IAM action, resource ARN, condition keys) each authorisation of one API call needs. ``hash_keys``
    (table name -> partition key attribute) gives DynamoDB's ``dynamodb:LeadingKeys``."""
    region = "us-east-1"
    if service == "dynamodb":
        table = f"arn:{PARTITION}:dynamodb:{region}:{ACCOUNT}:table/"
        hashes = hash_keys or {}
        if operation == "TransactWriteItems":  # each item is authorised on its own
            return [
                (f"dynamodb:{_TRANSACT[kind]}", table + op["TableName"],
                 _leading([op.get("Item") or op.get("Key") or {}], hashes.get(op["TableName"])))
                for item in params.get("TransactItems", [])
                for kind, op in item.items()
            ]  # fmt: skip
        if operation in ("BatchWriteItem", "BatchGetItem"):
            return [
                (f"dynamodb:{operation}", table + name, _leading(_batch_items(request), hashes.get(name)))
                for name, request in params.get("RequestItems", {}).items()
            ]
        name = str(params.get("TableName", ""))
        index = f"/index/{params['IndexName']}" if params.get("IndexName") else ""
        attribute = hashes.get(name)
        keys = [] if operation == "Scan" else [params.get("Item") or params.get("Key") or {}]
        if operation == "Query":
            keys = [_queried_key(params, attribute or "")]
        return [(f"dynamodb:{operation}", table + name + index, _leading(keys, attribute))]
    action = _ACTIONS.get((service, operation), f"{service}:{operation}")
    if service == "s3":
        bucket = f"arn:{PARTITION}:s3:::{params.get('Bucket', '')}"
        return [(action, bucket if "Key" not in params else f"{bucket}/{params['Key']}", {})]
    if service == "sqs":
        path = urlsplit(str(params.get("QueueUrl", ""))).path.strip("/").split("/")
        account, queue = (path[0], path[-1]) if len(path) >= 2 else (ACCOUNT, path[-1])
        return [(action, f"arn:{PARTITION}:sqs:{region}:{account}:{queue}", {})]
    if service == "cloudfront":
        distribution = params.get("DistributionId", params.get("Id", ""))
        return [(action, f"arn:{PARTITION}:cloudfront::{ACCOUNT}:distribution/{distribution}", {})]
    if service == "secretsmanager":
        return [(action, str(params.get("SecretId", "")), {})]
    return [(action, "*", {})]


def _batch_items(request: Any) -> list[dict[str, Any]]:
    """The keys or items a BatchGetItem or BatchWriteItem names for one table."""
    if isinstance(request, dict):  # BatchGetItem: {"Keys": [...]}
        return list(request.get("Keys", []))
    return [r.get("PutRequest", {}).get("Item") or r.get("DeleteRequest", {}).get("Key") or {} for r in request]


def _queried_key(params: dict[str, Any], attribute: str) -> dict[str, Any]:
    """The partition key a Query names (``<attribute> = :value`` in its key condition), as an item's key."""
    names = {alias: real for alias, real in params.get("ExpressionAttributeNames", {}).items() if real == attribute}
    wanted = {attribute, *names}
    for name, placeholder in re.findall(
        r"(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)", params.get("KeyConditionExpression", "")
    ):
        if name in wanted:
            return {attribute: params.get("ExpressionAttributeValues", {}).get(placeholder, {})}
    return {}


def _leading(items: Iterable[dict[str, Any]], attribute: str | None) -> dict[str, list[str]]:
    """``dynamodb:LeadingKeys`` of the items a call names: their partition key (``attribute``) values; absent when
    it names none (a Scan) or the table's key is unknown."""
    values = sorted({_scalar(item[attribute]) for item in items if attribute and attribute in item})
    return {LEADING_KEYS: values} if values else {}


def _scalar(value: Any) -> str:
    return str(next(iter(value.values()))) if isinstance(value, dict) and value else str(value)


def matches(pattern: str, value: str, case: bool) -> bool:
    """IAM's wildcard match: ``*`` any run of characters, ``?`` one; actions ignore case, ARNs do not."""
    return _compiled(pattern, case).fullmatch(value) is not None


@lru_cache(maxsize=1024)
def _compiled(pattern: str, case: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(regex, 0 if case else re.IGNORECASE)


# --- reading the template ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Names:
    """What the template's intrinsic functions resolve to in one local stack."""

    params: dict[str, str]
    physical: dict[str, str]  # logical ID -> name, URL or ID
    arns: dict[str, str]  # logical ID -> ARN
    conditions: dict[str, Any]
    domains: dict[str, str] = field(default_factory=dict)  # logical ID -> domain name (a distribution's)

    def ref(self, name: str) -> str:
        pseudo = {"AWS::Partition": PARTITION, "AWS::AccountId": ACCOUNT, "AWS::Region": "us-east-1"}
        if name in pseudo:
            return pseudo[name]
        if name in self.params:
            return self.params[name]
        return self.physical[name]

    def attribute(self, logical: str, attribute: str) -> str:
        if attribute == "Arn":
            return self.arns[logical]
        if attribute == "QueueName":
            return self.arns[logical].rsplit(":", 1)[-1]
        if attribute == "DomainName" and logical in self.domains:
            return self.domains[logical]
        raise PolicyError(f"{logical}.{attribute}: not an attribute this evaluator resolves")


_NO_VALUE = object()


def resolve(value: Any, names: Names) -> Any:
    """Resolve Ref, Fn::GetAtt, Fn::Sub and Fn::If (conditions of Fn::Equals, Fn::Not, Fn::Or and Fn::And);
    AWS::NoValue drops the value."""
    if isinstance(value, list):
        return [v for v in (resolve(item, names) for item in value) if v is not _NO_VALUE]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        return _NO_VALUE if value["Ref"] == "AWS::NoValue" else names.ref(value["Ref"])
    if set(value) == {"Fn::GetAtt"}:
        logical, attribute = value["Fn::GetAtt"]
        return names.attribute(logical, attribute)
    if set(value) == {"Fn::Sub"}:
        return re.sub(r"\$\{([^}]+)\}", lambda m: _sub(m.group(1), names), value["Fn::Sub"])
    if set(value) == {"Fn::If"}:
        condition, when_true, when_false = value["Fn::If"]
        return resolve(when_true if _condition(condition, names) else when_false, names)
    return {key: resolve(item, names) for key, item in value.items()}


def _sub(expression: str, names: Names) -> str:
    if "." in expression:
        logical, attribute = expression.split(".", 1)
        return names.attribute(logical, attribute)
    return names.ref(expression)


def _condition(name: str, names: Names) -> bool:
    def evaluate(node: Any) -> Any:
        if isinstance(node, dict) and "Fn::Not" in node:
            return not evaluate(node["Fn::Not"][0])
        if isinstance(node, dict) and "Fn::Or" in node:
            return any(evaluate(item) for item in node["Fn::Or"])
        if isinstance(node, dict) and "Fn::And" in node:
            return all(evaluate(item) for item in node["Fn::And"])
        if isinstance(node, dict) and "Fn::Equals" in node:
            left, right = (resolve(v, names) for v in node["Fn::Equals"])
            return left == right
        if isinstance(node, dict) and "Condition" in node:
            return _condition(node["Condition"], names)
        return resolve(node, names)

    return bool(evaluate(names.conditions[name]))


def function_policies(template: dict[str, Any], names: Names) -> dict[str, Policy]:
    """Every function's policy, by logical ID."""
    hash_keys = {
        str(names.physical.get(logical, logical)): next(k["AttributeName"] for k in spec["Properties"]["KeySchema"]
                                                        if k["KeyType"] == "HASH")
        for logical, spec in template["Resources"].items()
        if spec["Type"] == "AWS::DynamoDB::Table"
    }  # fmt: skip
    policies: dict[str, Policy] = {}
    for logical, spec in template["Resources"].items():
        if spec["Type"] != "AWS::Serverless::Function":
            continue
        statements: list[Statement] = []
        for entry in resolve(spec["Properties"].get("Policies", []), names):
            if not isinstance(entry, dict) or set(entry) != {"Statement"}:
                raise PolicyError(f"{logical}: only inline Statement policies are checked, not {entry!r}")
            statements += [_statement(logical, s) for s in entry["Statement"]]
        policies[logical] = Policy(logical, statements, hash_keys=hash_keys)
    return policies


def _statement(logical: str, raw: dict[str, Any], principal: bool = False) -> Statement:
    allowed = {"Effect", "Action", "Resource", "Sid", "Condition"} | ({"Principal"} if principal else set())
    if raw.get("Effect") not in ("Allow", "Deny") or not {"Action", "Resource"} <= set(raw) or set(raw) - allowed:
        raise PolicyError(f"{logical}: only Allow and Deny statements with Action and Resource are checked: {raw!r}")
    conditions = tuple(
        _condition_of(logical, operator, key, values)
        for operator, keys in raw.get("Condition", {}).items()
        for key, values in keys.items()
    )
    return Statement(tuple(_strings(raw["Action"])), tuple(_strings(raw["Resource"])), conditions, raw["Effect"])


@dataclass(frozen=True, slots=True)
class BucketPolicy:
    """A bucket policy: each statement with the principals it names (``*``, or ``service:<name>``)."""

    statements: tuple[tuple[frozenset[str], Statement], ...]

    def allows(self, principal: str, action: str, resource: str, context: Context | None = None) -> bool:
        """Whether ``principal`` (``service:cloudfront.amazonaws.com``) may: the statements naming it or ``*``,
        an explicit Deny winning. (A same-account role would also need its own grant; a service has none.)"""
        found = [s for names, s in self.statements if "*" in names or principal in names]
        return decide(found, action, resource, context)


def bucket_policy(template: dict[str, Any], names: Names, logical: str = "SitemapBucketPolicy") -> BucketPolicy:
    """The template's bucket policy ``logical``, resolved against ``names``."""
    document = resolve(template["Resources"][logical]["Properties"]["PolicyDocument"], names)
    statements = []
    for raw in document["Statement"]:
        principal = raw.get("Principal")
        if principal == "*":
            who = frozenset({"*"})
        elif isinstance(principal, dict) and set(principal) == {"Service"}:
            who = frozenset(f"service:{p}" for p in _strings(principal["Service"]))
        else:
            raise PolicyError(f"{logical}: only a Service principal or * is checked, not {principal!r}")
        statements.append((who, _statement(logical, raw, principal=True)))
    return BucketPolicy(tuple(statements))


def _condition_of(logical: str, operator: str, key: str, values: Any) -> Condition:
    qualifier, _, name = operator.rpartition(":")
    if name not in _OPERATORS or (qualifier and (qualifier not in _SETS or name == "Null")):
        raise PolicyError(f"{logical}: condition operator {operator} is not one this evaluator checks")
    given = tuple(str(v) for v in (values if isinstance(values, list) else [values]))
    if name in ("Null", "Bool"):
        given = tuple(v.lower() for v in given)
        if given not in (("true",), ("false",)):
            raise PolicyError(f"{logical}: {name} takes true or false, not {values!r}")
    return Condition(operator, key, given)


def _strings(value: Any) -> Iterable[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]
