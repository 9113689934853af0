"""docs/differences.md's sections about the tester, written from the code: the normalisation rules
(``normalise.RULES``) and the fields never mutated (``generate.PROTECTED_REASONS``).
``python -m tests.differential.docs`` rewrites them; ``test_docs.py`` checks they are current."""

from __future__ import annotations

import re
import sys

from . import generate, normalise
from .run import DIFFERENCES_MD


def sections() -> dict[str, str]:
    rules = "\n".join(f"* **{name}**: {reason}." for name, reason in normalise.RULES)
    protected = "\n".join(f"* `{field}`: {reason}." for field, reason in generate.PROTECTED_REASONS.items())
    return {"differential-rules": rules, "differential-protected": protected}


def render(text: str) -> str:
    for name, body in sections().items():
        text = re.sub(rf"(<!-- {name} -->\n).*?(<!-- /{name} -->)", lambda m, b=body: m.group(1) + b + "\n" + m.group(2),
                      text, flags=re.S)
    return text


def main() -> int:
    text = DIFFERENCES_MD.read_text()
    new = render(text)
    if new != text:
        DIFFERENCES_MD.write_text(new)
        print(f"rewrote {DIFFERENCES_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
