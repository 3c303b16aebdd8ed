"""template.yaml as CloudFormation sees it for given parameter values: transformed offline by the SAM translator,
then every condition and intrinsic function evaluated, so tests can hold rules of AWS's that cfn-lint does not
know over the values the template allows.

An evaluator of our own (not the local stack's, so the two check each other): Ref, Fn::GetAtt, Fn::Sub, Fn::If,
Fn::Equals, Fn::Not, Fn::And, Fn::Or, Fn::Join and AWS::NoValue; a resource or output whose Condition is false
is left out, like Rules whose assertions fail are reported. A resource's Ref or attribute is a placeholder,
``<Logical>`` or ``<Logical.Attribute>``, since nothing is created.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
PSEUDO = {
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::Region": "eu-west-1",
    "AWS::StackName": "sitemaps",
    "AWS::URLSuffix": "amazonaws.com",
}
_NO_VALUE = object()


class _NoManagedPolicies:
    """The translator's policy loader, offline: SAM policy templates need no AWS call."""

    def load(self) -> dict[str, str]:
        return {}


def source() -> dict[str, Any]:
    """template.yaml as written (SAM resources, short-form tags in their long form)."""
    return dict(yaml_parse(TEMPLATE.read_text(encoding="utf-8")))


def translate(template: dict[str, Any]) -> dict[str, Any]:
    """A SAM template as the CloudFormation template `sam deploy` hands over (conditions and parameters still
    unresolved)."""
    template = copy.deepcopy(template)
    template["Globals"]["Function"]["CodeUri"] = "s3://artifacts/sitemap-updater.zip"  # what `sam package` does
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # the translator asks for a region, nothing more
        return dict(transform(template, {"SiteUrl": "https://www.example.com"}, _NoManagedPolicies()))


@cache
def transformed() -> dict[str, Any]:
    """template.yaml as CloudFormation receives it."""
    return translate(source())


@dataclass(frozen=True)
class Stack:
    """The resources and outputs one set of parameter values gives, resolved; the Rules they break."""

    parameters: dict[str, str]
    resources: dict[str, dict[str, Any]]
    outputs: dict[str, Any]
    broken_rules: list[str]

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {name: r["Properties"] for name, r in self.resources.items() if r["Type"] == kind}


def parameter_values(overrides: dict[str, str] | None = None) -> dict[str, str]:
    """Every parameter's value: its default, as CloudFormation passes it (a string), unless overridden."""
    declared = transformed()["Parameters"]
    values = {name: str(spec["Default"]) for name, spec in declared.items() if "Default" in spec}
    values.update(overrides or {})
    missing = set(declared) - set(values)
    assert not missing, f"no value for {sorted(missing)}"
    return values


def stack(overrides: dict[str, str] | None = None) -> Stack:
    """What CloudFormation creates from the template with these parameter values (defaults for the rest)."""
    template = copy.deepcopy(transformed())
    values = parameter_values(overrides)
    ev = _Evaluator(values, template.get("Conditions", {}))
    broken = [
        name
        for name, rule in template.get("Rules", {}).items()
        if ev.truth(rule.get("RuleCondition", True)) and not all(ev.truth(a["Assert"]) for a in rule["Assertions"])
    ]
    resources = {
        name: ev.value(spec)
        for name, spec in template["Resources"].items()
        if "Condition" not in spec or ev.condition(spec["Condition"])
    }
    outputs = {
        name: ev.value(spec["Value"])
        for name, spec in template.get("Outputs", {}).items()
        if "Condition" not in spec or ev.condition(spec["Condition"])
    }
    return Stack(values, resources, outputs, broken)


class _Evaluator:
    def __init__(self, parameters: dict[str, str], conditions: dict[str, Any]) -> None:
        self.parameters = parameters
        self.conditions = conditions

    def condition(self, name: str) -> bool:
        return self.truth(self.conditions[name])

    def truth(self, node: Any) -> bool:
        value = self.value(node)
        assert isinstance(value, bool), f"not a condition: {node!r}"
        return value

    def ref(self, name: str) -> Any:
        if name in PSEUDO:
            return PSEUDO[name]
        if name in self.parameters:
            return self.parameters[name]
        return f"<{name}>"

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.value(item) for item in node) if v is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) != 1:
            return {k: v for k, v in ((k, self.value(v)) for k, v in node.items()) if v is not _NO_VALUE}
        ((key, arg),) = node.items()
        if key == "Ref":
            return _NO_VALUE if arg == "AWS::NoValue" else self.ref(arg)
        if key == "Fn::GetAtt":
            logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
            return f"<{logical}.{attribute}>"
        if key == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else (arg[0], self.value(arg[1]))
            return re.sub(r"\$\{([^}!]+)\}", lambda m: str(self._sub(m.group(1), names)), text)
        if key == "Fn::If":
            name, when_true, when_false = arg
            return self.value(when_true if self.condition(name) else when_false)
        if key == "Fn::Equals":
            left, right = (self.value(v) for v in arg)
            return str(left) == str(right)
        if key == "Fn::Not":
            return not self.truth(arg[0])
        if key == "Fn::And":
            return all(self.truth(v) for v in arg)
        if key == "Fn::Or":
            return any(self.truth(v) for v in arg)
        if key == "Condition":
            return self.condition(arg)
        if key == "Fn::Join":
            separator, items = arg
            return separator.join(str(v) for v in self.value(items))
        return {key: self.value(arg)}

    def _sub(self, expression: str, names: dict[str, Any]) -> Any:
        if expression in names:
            return names[expression]
        if "." in expression and expression.split(".", 1)[0] not in self.parameters:
            return f"<{expression}>"
        return self.ref(expression)
