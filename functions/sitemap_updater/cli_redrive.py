"""``sitemap-updater redrive QUEUE``: dead letters that failed on every receive, sent back to their queue; each
one's reason printed; the rejected ones left (or, when asked, deleted)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sitemap_updater.cli_parser import stack_option, whole_number
from sitemap_updater.core.terminal import shown
from sitemap_updater.service.redrive import DEFAULT_MAX, Action, Decision, RedriveFailed, RedriveOptions, redrive

if TYPE_CHECKING:
    from sitemap_updater.service.redrive import RedriveResult

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Each queue with a dead-letter queue: the environment variables naming both (the functions' own names, and
# INGEST_QUEUE_URL as the webhook function has it).
QUEUES = {
    "ingest": ("INGEST_DLQ_URL", "INGEST_QUEUE_URL"),
    "rebuild": ("REBUILD_DLQ_URL", "REBUILD_QUEUE_URL"),
    "index": ("INDEX_DLQ_URL", "INDEX_QUEUE_URL"),
    "notify": ("NOTIFY_DLQ_URL", "NOTIFY_QUEUE_URL"),
}
# The same two queues as the stack's outputs name them (--stack NAME).
STACK_OUTPUTS = {
    "ingest": ("IngestDeadLetterQueueUrl", "IngestQueueUrl"),
    "rebuild": ("RebuildDeadLetterQueueUrl", "RebuildQueueUrl"),
    "index": ("IndexDeadLetterQueueUrl", "IndexQueueUrl"),
    "notify": ("NotifyDeadLetterQueueUrl", "NotifyQueueUrl"),
}
_DONE = {Action.REDRIVE: "redriven", Action.KEEP: "kept", Action.DISCARD: "discarded"}
_WOULD = {Action.REDRIVE: "would redrive", Action.KEEP: "would keep", Action.DISCARD: "would discard"}
_EXCERPT = 300  # characters of a body shown in the text report


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``redrive`` command's options."""
    r = commands.add_parser(
        "redrive",
        help="send dead letters that failed on every receive back to their queue; print each one's reason",
        description=(
            "Read a dead-letter queue and print each message's reason. A message that failed on every receive (a "
            "throttle, an outage, a bug since fixed) is sent back to the queue it died on, as it was received (on a "
            "FIFO queue in its message group, under its own deduplication ID), and deleted from the dead-letter "
            "queue only once the send succeeded. A message refused as it is (an invalid event, an unreadable "
            "message) is left where it is: it would be refused again. A message without a reason (moved by SQS "
            "itself) is sent again only with --include-unexplained. The queue URLs come from the stack's outputs "
            "(--stack NAME), else from the environment variables the functions use (INGEST_DLQ_URL and "
            "INGEST_QUEUE_URL, REBUILD_..., INDEX_..., NOTIFY_...); --dlq-url and --queue-url override either. "
            "Exit status: 0 done (messages may have been kept); 1 a read, send "
            "or delete failed (what was done before it stands; run again); 2 the queues are not named."
        ),
    )
    r.add_argument("queue", choices=list(QUEUES), help="the queue whose dead letters to read")
    r.add_argument(
        "--dry-run",
        action="store_true",
        help="print each dead letter's reason and what a redrive would do with it; change nothing",
    )
    r.add_argument(
        "--max",
        type=whole_number,
        default=DEFAULT_MAX,
        metavar="N",
        help=f"read at most N dead letters (default {DEFAULT_MAX})",
    )
    r.add_argument(
        "--matching",
        metavar="TEXT",
        help="redrive only the failures whose reason holds TEXT (any case), e.g. ProvisionedThroughputExceeded",
    )
    r.add_argument(
        "--include-unexplained",
        action="store_true",
        help="also redrive dead letters without a reason (moved there by SQS when the function's own send failed)",
    )
    r.add_argument(
        "--discard-rejected",
        action="store_true",
        help="delete the rejected dead letters (invalid events, unreadable messages) after printing them: save "
        "them first with --dry-run --json",
    )
    r.add_argument("--json", action="store_true", help="print one JSON object a dead letter, body and attributes whole")
    stack_option(r, "the deployed stack whose queues to use (its outputs, read with DescribeStacks)")
    r.add_argument("--dlq-url", metavar="URL", help="the dead-letter queue (default: the QUEUE's environment variable)")
    r.add_argument("--queue-url", metavar="URL", help="where to send them (default: the QUEUE's environment variable)")
    r.add_argument("--endpoint-url", metavar="URL", help="an AWS-compatible endpoint instead of AWS")


def _named_queues(args: argparse.Namespace) -> tuple[str, str]:
    """The dead-letter queue's and the queue's URLs: the options, else the stack's outputs or the environment."""
    dlq_env, queue_env = QUEUES[args.queue]
    if args.stack is not None:
        import boto3

        from sitemap_updater.wiring.deployed import describe_stack

        stack = describe_stack(args.stack, boto3.session.Session().client, args.endpoint_url)
        dlq_output, queue_output = STACK_OUTPUTS[args.queue]
        defaults = (stack.output(dlq_output), stack.output(queue_output))
    else:
        defaults = (os.environ.get(dlq_env, ""), os.environ.get(queue_env, ""))
    return args.dlq_url or defaults[0], args.queue_url or defaults[1]


def run_redrive(args: argparse.Namespace) -> int:
    from sitemap_updater.wiring.deployed import StackError

    dlq_env, queue_env = QUEUES[args.queue]
    try:
        dlq_url, queue_url = _named_queues(args)
    except StackError as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    missing = [f"{name} (or {option})" for name, option, url in
               ((dlq_env, "--dlq-url", dlq_url), (queue_env, "--queue-url", queue_url)) if not url]  # fmt: skip
    if missing:
        print(f"sitemap-updater: name the queues: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    if dlq_url.endswith(".fifo") != queue_url.endswith(".fifo"):
        print("sitemap-updater: the dead-letter queue and the queue must both be FIFO or both not", file=sys.stderr)
        return EXIT_USAGE

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from sitemap_updater.adapters.queues import MessageQueue
    from sitemap_updater.wiring.pipeline import CLIENT_CONFIG

    extra = {"endpoint_url": args.endpoint_url} if args.endpoint_url else {}
    sqs = boto3.session.Session().client("sqs", config=CLIENT_CONFIG, **extra)
    dead_letters, queue = MessageQueue(sqs, dlq_url), MessageQueue(sqs, queue_url)
    options = RedriveOptions(args.max, args.dry_run, args.matching, args.include_unexplained, args.discard_rejected)
    show = _json_line if args.json else _text_lines
    try:
        result = redrive(dead_letters, queue, options, lambda d: print(show(d, args.dry_run), flush=True))
    except RedriveFailed as exc:
        print(f"sitemap-updater: {exc.decision.message.message_id}: {exc}", file=sys.stderr)
        if exc.sent:
            print(
                "sitemap-updater: its copy was sent and it is still in the dead-letter queue: a run within five "
                "minutes sends it again, which a FIFO queue drops and ingest takes as a duplicate",
                file=sys.stderr,
            )
        return EXIT_FAILED
    except (BotoCoreError, ClientError) as exc:
        print(f"sitemap-updater: {dlq_url}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        left: int | None = dead_letters.depth()
    except (BotoCoreError, ClientError):
        left = None
    print(_summary(args.queue, queue_url, result, options, left, dead_letters.fifo), file=sys.stderr)
    return EXIT_OK


def _moment(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if ms else "?"


def _text_lines(decision: Decision, dry_run: bool) -> str:
    message = decision.message
    action = (_WOULD if dry_run else _DONE)[decision.action]
    group = f" (group {message.group})" if message.group else ""
    reason = decision.reason or "(no reason: SQS moved it)"
    body = message.body if len(message.body) <= _EXCERPT else message.body[:_EXCERPT] + "..."
    head = f"{action}: {decision.kind} {message.message_id}{group}, dead-lettered {_moment(message.sent_at_ms)}"
    return "\n".join(shown(line) for line in (head, f"  reason: {reason}", f"  body: {body}"))  # a body as sent


def _json_line(decision: Decision, dry_run: bool) -> str:
    message = decision.message
    return json.dumps(
        {
            "action": str(decision.action),
            "done": not dry_run,
            "kind": str(decision.kind),
            "message_id": message.message_id,
            "group": message.group,
            "dead_lettered_at": _moment(message.sent_at_ms),
            "attributes": message.attributes,
            "body": message.body,
        },
        ensure_ascii=False,
    )


def _summary(
    queue: str, queue_url: str, result: RedriveResult, options: RedriveOptions, left: int | None, fifo: bool
) -> str:
    done = _WOULD if options.dry_run else _DONE
    counts = ", ".join(f"{result.actions[action]:,} {done[action]}" for action in Action)
    lines = [f"{queue} dead-letter queue: {result.read:,} read ({counts}); redrive target {queue_url}"]
    if left is not None:
        lines.append(f"about {left:,} messages are in the dead-letter queue now")
    if options.dry_run:
        lines.append("dry run: nothing was sent or deleted")
    if result.read >= options.limit:
        lines.append(f"stopped after --max {options.limit:,}; run again for more")
    if fifo and (options.dry_run or result.actions[Action.KEEP]):
        lines.append(
            "a FIFO queue hands out no message of a group while an earlier one of it is held by this run: a group's "
            "messages behind one it kept (in a dry run, behind its first ten) were not read"
        )
    return "\n".join(lines)
