"""docs/differences.md lists the tester's normalisation rules and protected fields as the code has them,
and its table of known differences parses."""

from __future__ import annotations

from tests.differential import docs
from tests.differential.run import DIFFERENCES_MD, known_differences


def test_rules_and_protected_fields_are_current() -> None:
    text = DIFFERENCES_MD.read_text()
    assert docs.render(text) == text, "run: python -m tests.differential.docs"


def test_known_differences_parse_with_a_reason_each() -> None:
    for k in known_differences():
        assert k.reason, f"a known difference of {k.api} without a reason"
        assert k.api == "*" or k.api[0].isupper()
