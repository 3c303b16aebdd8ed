"""A stack as CloudFormation records it after ``sam deploy``, on a moto endpoint: for the ``--stack`` options.

moto cannot deploy template.yaml itself (its SAM transform and most of its resource types), so the resources are
created as ``local`` creates them (local/stack.py) and a stack is recorded beside them whose outputs are
template.yaml's own Outputs resolved against those resources, and whose parameters are template.yaml's with the
values given: what DescribeStacks answers for a real deployment (OutputKey/OutputValue, ParameterKey/ParameterValue).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sitemap_updater.local.iam import Names, PolicyError, resolve
from sitemap_updater.local.stack import LocalStack, create_stack, load_template, session

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"


def template_outputs(stack: LocalStack, parameters: dict[str, str]) -> dict[str, str]:
    """template.yaml's Outputs with the values this stack gives them (those naming what a local stack does not
    create, such as the state machine, left out)."""
    template = load_template(TEMPLATE)
    params = {key: str(spec.get("Default", "")) for key, spec in template["Parameters"].items()} | parameters
    names = Names(params, stack.physical, stack.arns, template.get("Conditions", {}), stack.domains)
    outputs = {}
    for key, output in template["Outputs"].items():
        if "Condition" in output:
            continue
        try:
            outputs[key] = str(resolve(output["Value"], names))
        except (KeyError, PolicyError):
            continue
    return outputs


def record_stack(
    endpoint_url: str, name: str, stack: LocalStack, parameters: dict[str, str], leave_out: tuple[str, ...] = ()
) -> None:
    """Record ``stack`` in the endpoint's CloudFormation as stack ``name``, with template.yaml's outputs (but those
    in ``leave_out``) and every parameter of template.yaml (``parameters`` over the defaults)."""
    template = load_template(TEMPLATE)
    outputs = {k: v for k, v in template_outputs(stack, parameters).items() if k not in leave_out}
    body: dict[str, Any] = {
        "Parameters": {
            key: {"Type": "String", "Default": str(spec.get("Default", ""))}
            for key, spec in template["Parameters"].items()
        },
        "Resources": {"Placeholder": {"Type": "AWS::SNS::Topic"}},  # a stack has at least one resource
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    cloudformation = session().client("cloudformation", endpoint_url=endpoint_url)
    cloudformation.create_stack(
        StackName=name,
        TemplateBody=json.dumps(body),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
    )


def deployed(endpoint_url: str, name: str, parameters: dict[str, str], leave_out: tuple[str, ...] = ()) -> LocalStack:
    """A stack's resources created on the endpoint and the stack recorded there, as after ``sam deploy``."""
    stack = create_stack(TEMPLATE, endpoint_url, parameters, name)
    record_stack(endpoint_url, name, stack, parameters, leave_out)
    return stack
