"""With IndexNow, Search Console and the feed all off, rebuilds send no change record (the notifier's queue is not
polled then: template.yaml's HasNotifier); a notifier turned on later announces every change published after,
compared with the files as they are, also one a rebuild that died while it was off had put."""

from __future__ import annotations

from tests.unit.test_recovery import CONSOLE, Stack, crash, page, replace_settings


def _changed(stack: Stack) -> dict[str, str]:
    """URL name -> change, over the change records on the notify queue."""
    return {url.rsplit("/", 1)[1]: kind for r in stack.notifications() for url, kind in r.get("changed", {}).items()}


def test_with_nothing_to_notify_no_change_record_is_sent_and_the_files_are_published() -> None:
    # Given a stack with no notifier on
    stack = Stack(notifiers=False)
    # When pages are added, changed and deleted
    stack.send(*[page(f"p{n}", version=1) for n in range(5)])
    stack.drain()
    stack.send(page("p1", version=2, priority=0.9), page("p2", type="delete", version=2))
    stack.drain()
    # Then the files show them, and nothing was sent to the notifier: no change record, no index record
    stack.check()
    assert stack.queues["notify"].counter == 0


def test_a_notifier_turned_on_later_announces_exactly_the_changes_published_after() -> None:
    # Given pages published while nothing notified
    stack = Stack(notifiers=False)
    stack.send(*[page(f"p{n}", version=1) for n in range(5)])
    stack.drain()
    # When IndexNow is turned on, and a page changes, one is added and one deleted
    stack.pipeline = replace_settings(stack, indexnow_key="later-key-0001")
    stack.send(page("p1", version=2, priority=0.9), page("p9", version=1), page("p3", type="delete", version=2))
    stack.drain()
    # Then the change records name those three and no other; no index record (Search Console is off)
    assert _changed(stack) == {"p1": "updated", "p9": "added", "p3": "removed"}
    assert not any("index" in record for record in stack.notifications())


def test_with_search_console_alone_only_changed_indexes_are_sent() -> None:
    # Given a stack whose only notifier is Search Console
    stack = Stack(notifiers=False)
    stack.pipeline = replace_settings(stack, search_console_secret_arn=CONSOLE)
    # When pages are published
    stack.send(*[page(f"p{n}", version=1) for n in range(5)])
    stack.drain()
    # Then the notifier hears of the index it is to submit, and of no page
    records = stack.notifications()
    assert records and all("index" in record for record in records)


def test_a_change_a_rebuild_put_while_nothing_notified_is_announced_by_its_retry_once_a_notifier_is_on() -> None:
    # Given a published page, then an edit whose rebuild dies right after its put while nothing notifies
    stack = Stack(notifiers=False)
    stack.send(page("a", version=1), page("b", version=1))
    stack.drain()
    stack.send(page("a", version=2, priority=0.9))
    with crash(stack.store, "put_file") as hits:
        stack.until(hits)
    # When IndexNow is turned on before the retry
    stack.pipeline = replace_settings(stack, indexnow_key="later-key-0001")
    stack.drain()
    # Then the retry announces the edit (its bytes may have been served), and only it
    stack.check()
    assert _changed(stack) == {"a": "updated"}
