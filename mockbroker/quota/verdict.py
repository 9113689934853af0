"""Did a client wait out its throttles (KIP-219)?  The one rule the broker's record
(``quota.throttle.ThrottleEvent``, the journal's ``after_throttle``), its API
(``ControlPlane.violations``) and the report (``mockbroker/report/job.py``) all apply.

Per throttled response, in every ``mock.throttle.mode``:

* the deadline is when the client may send again on that connection: KIP-219 has the client
  back off for ``throttle_time_ms`` from its receipt of the response, so it is the response's
  sending plus the throttle (``mute``/``observe``: the response goes out at once; ``delay``: it
  goes out after the hold, and the client's own back-off starts then);
* the next request on the connection *arrived* when its first byte reached the broker (``mute``:
  the muted connection still sees that byte, without serving the request early);
* it is *pipelined* when it was already waiting when the response went out: the client sent it
  before it could know of the throttle, so it is not judged;
* a throttle is *judged* when a next request came, was not pipelined, and the throttle is longer
  than the tolerance (a shorter one cannot be broken by more than the tolerance);
* *early* (a violation): a judged throttle whose next request arrived more than the tolerance
  before the deadline.

The tolerance is one millisecond: the broker stamps the response in whole milliseconds
(``start_ms``, floored) and a client that counts in whole milliseconds of its own clock (Java's
``time.milliseconds()``) may send up to just under 1 ms before its exact receipt + throttle; so an
honouring client's next request is at most 1 ms "early" on the broker's clock, never 2.

The verdict of a connection or a client counts only the throttles of response versions that
oblige the client to back off (KIP-219's versions, ``ApiSpec.client_throttles``).
"""

from __future__ import annotations

#: A request this many ms (or fewer) before the deadline is not early (whole-ms clocks on both sides).
EARLY_TOLERANCE_MS = 1
#: Verdict ``ignores`` when at least this share of the judged throttles was followed by an early request.
IGNORES_SHARE = 0.9

HONOURS, PARTLY, IGNORES = "honours", "partly", "ignores"
NOT_THROTTLED, NO_JUDGED, UNDETERMINED = "not throttled", "no judged throttles", "undetermined"


def is_judged(has_next: bool, pipelined: bool, throttle_ms: int) -> bool:
    """Whether this throttle says anything of the client: a next request that was not pipelined,
    after a throttle longer than the tolerance."""
    return has_next and not pipelined and throttle_ms > EARLY_TOLERANCE_MS


def is_early(judged: bool, early_ms: int | None) -> bool:
    """A KIP-219 violation: judged, and the next request arrived more than the tolerance early."""
    return judged and (early_ms or 0) > EARLY_TOLERANCE_MS


def verdict(throttles: int, judged: int, violations: int, undetermined: int = 0) -> str:
    """The verdict of a connection or a client: ``judged`` and ``violations`` count the throttles
    of versions that oblige the client; ``undetermined`` (the report, journals from before the
    broker judged mute mode itself) the throttles that could not be judged from the record."""
    if throttles == 0:
        return NOT_THROTTLED
    if judged == 0:
        return UNDETERMINED if undetermined > 0 else NO_JUDGED
    if violations == 0:
        return HONOURS
    if violations >= judged * IGNORES_SHARE:
        return IGNORES
    return PARTLY
