"""schemathesis hooks for tests/unit/admin/test_admin_api.py's run (``SCHEMATHESIS_HOOKS``): hostile bodies.

Besides the bodies schemathesis derives from the document, every operation with a body also gets
it nested 33 to 300 levels deep (as an object's member or a list's item): the API must answer
400 naming the nesting, never 500.  Deeper bodies than the JSON encoder here can write are sent
raw by ``test_a_body_nested_beyond_the_parser_is_400_on_every_operation``.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import strategies as st


def _nest(body: Any, depth: int, as_list: bool) -> Any:
    for _ in range(depth):
        body = [body] if as_list else {"nested": body}
    return body


@schemathesis.hook
def flatmap_body(context: Any, body: Any) -> Any:
    if not isinstance(body, (dict, list)):  # raw bytes (another media type) or no body: as generated
        return st.just(body)
    deep = st.builds(_nest, st.just(body), st.integers(33, 300), st.booleans())
    return st.one_of(st.just(body), deep)
