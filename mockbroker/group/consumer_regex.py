"""The regexes KIP-848 members subscribe with, and the topics they are resolved to.

Mirrors Kafka 4.4's ``GroupMetadataManager.maybeUpdateRegularExpressions``,
``handleRegularExpressionsResult`` and ``TopicRegexResolver``: a regex new to the group is checked
(RE2, as Kafka's RE2/J: INVALID_REGULAR_EXPRESSION) and resolved after the heartbeat that brought it
(Kafka resolves it on a background thread and applies the result a few milliseconds later), at most
once every 10 s per group, and again when topics were created or the refresh interval passed; a regex
another member already has is resolved already.  The group epoch moves when what a regex matches
changed.  The topics a regex resolves to are not filtered by the member's DESCRIBE permission (Kafka
leaves out those it may not describe).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol.errors import ErrorCode

from .consumer_group import ConsumerGroup, topic_regex

# GroupMetadataManager.UpdateRegularExpressionStatus
NO_CHANGE, UPDATED, UPDATED_AND_RESOLVED = "no change", "updated", "updated and resolved"
MIN_REFRESH_MS = 10_000  # a group's regexes are resolved at most this often
REFRESH_INTERVAL_MS = 600_000  # group.consumer.regex.refresh.interval.ms, Kafka's default (not settable here)


class InvalidRegex(Exception):
    """An invalid regex new to the group: INVALID_REGULAR_EXPRESSION with this message."""

    error = ErrorCode.invalid_regular_expression


def update_regexes(group: ConsumerGroup, old: str, new: str, counts: dict[str, int], now: int,
                   topics: Mapping[str, Any]) -> tuple[str, set[str] | None]:
    """maybeUpdateRegularExpressions for a member whose regex goes from ``old`` to ``new`` ("" for
    none); ``counts``: the group's regexes and their members before this heartbeat.  (The member's
    regex status, the regexes to resolve after this heartbeat or None.)"""
    status, require = NO_CHANGE, False
    if old != new:
        status = UPDATED
        if new:
            if counts.get(new, 0) == 0:
                import re2  # loaded by topic_regex anyway; not at start-up

                try:
                    topic_regex(new)
                except re2.error as e:
                    detail = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else e
                    raise InvalidRegex(f"SubscribedTopicRegex `{new}` is not a valid regular expression: "
                                       f"{detail}.") from None
                require = True
            elif new in group.resolved_regexes:
                status = UPDATED_AND_RESOLVED
        elif old:
            status = UPDATED_AND_RESOLVED
        if old and counts.get(old, 0) == 1:  # the last member with it: its resolution goes
            group.resolved_regexes.pop(old, None)
    if not require and not counts:
        return status, None
    if now <= group.regex_refresh_ms + MIN_REFRESH_MS:
        return status, None
    after = dict(counts)
    if old:
        after[old] = after.get(old, 0) - 1
    if new:
        after[new] = after.get(new, 0) + 1
    subscribed = {r for r, n in after.items() if n > 0}
    require |= len(subscribed) != len(group.resolved_regexes)
    require |= bool(set(topics) - group.regex_topics_seen)  # topics created since
    require |= now > group.regex_refresh_ms + REFRESH_INTERVAL_MS
    return status, (subscribed if require and subscribed else None)


def resolve_regexes(group: ConsumerGroup, regexes: set[str], now: int, topics: Mapping[str, Any]) -> bool:
    """TopicRegexResolver.resolveRegularExpressions and the regex part of handleRegularExpressionsResult:
    the topics each regex a member still subscribes with matches.  True when one changed (the group
    epoch moves)."""
    counts = group.regex_subscribers()
    changed = False
    for regex in regexes:
        if counts.get(regex, 0) == 0:
            continue
        rx = topic_regex(regex)
        resolved = frozenset(t for t in topics if not t.startswith("__") and rx.fullmatch(t))
        if group.resolved_regexes.get(regex, frozenset()) != resolved:
            changed = True
        group.resolved_regexes[regex] = resolved
    group.regex_refresh_ms = now
    group.regex_topics_seen = frozenset(topics)
    return changed


def drop_unsubscribed(group: ConsumerGroup) -> None:
    """maybeDeleteResolvedRegularExpressions: the resolutions of regexes no member has any more go."""
    subscribed = group.regex_subscribers()
    for regex in [r for r in group.resolved_regexes if r not in subscribed]:
        del group.resolved_regexes[regex]
