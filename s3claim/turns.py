"""Turns: which of one model turn's tool results are checked in besides those over the threshold.

The spec decides one result at a time: ten results of 4,000 characters put 40,000 into the
conversation while one of 4,097 is checked in. Two policy knobs decide by the turn instead
(`ClaimCheckPolicy`, both off by default):

- `turn_budget_chars`: when a turn's results together exceed it, the largest are checked in
  first (ties by call order), threshold or not, until the turn fits.
- `max_share_of_room` (with the model's `context_window_chars`): a result that would take
  more than that share of the room left (the window less the conversation so far, and less
  the turn's earlier results) is checked in, never later than at the threshold.

A result is never checked in for either when it would not shrink: no longer than its own head,
tail and marker. `plan_turn` is a pure function of the results' sizes, their policies and the
conversation's size, so a replayed or resumed turn makes the same choices; `RunningTurn` is
the same rule for a host that sees a turn's results one at a time (an adapter's framework).
Sizes only: nothing here sees content. A check-in counts as what it leaves in the
conversation: measured exactly by the host (`ClaimCheck.preview_chars`, the preview built
once more before the claim is stored), or at its longest (`kept_chars`) when not measured.

docs/reading.md ("Deciding by the turn") has the knobs and when not to use them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from s3claim.claimcheck import most_notes_chars
from s3claim.errors import ConfigurationError
from s3claim.handles import HANDLE_PREFIX
from s3claim.policy import ClaimCheckPolicy
from s3claim.wording import marker

__all__ = [
    "CheckInReason",
    "RunningTurn",
    "TurnResult",
    "plan_turn",
]

if TYPE_CHECKING:
    from s3claim.claimcheck import ClaimCheck

CheckInReason = Literal["threshold", "turn_budget", "room"]
"""Why a result was checked in: at its threshold, for its turn's budget, or for the room left."""

_LONGEST_HANDLE = f"{HANDLE_PREFIX}1{'0' * 32}"


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One of a turn's tool results, by size.

    `policy`: its tool's claim-check policy, or None for a result never checked in (an error,
    a claim tool's window), which still takes its place in the turn. `settled`: already in
    the conversation as it is (decided by a host that sees results one at a time): counted,
    never chosen. `kept`: exactly what it leaves in the conversation once checked in
    (`ClaimCheck.preview_chars`); None, the most it could (`kept_chars`).
    """

    chars: int
    policy: ClaimCheckPolicy | None = None
    settled: bool = False
    kept: int | None = None

    def shrinks(self) -> bool:
        """Whether checking it in makes it smaller than it is."""
        if self.policy is None:
            return False
        kept = self.kept if self.kept is not None else kept_chars(self.chars, self.policy)
        return self.chars > kept


def kept_chars(chars: int, policy: ClaimCheckPolicy) -> int:
    """The most a result of `chars` characters leaves in the conversation once checked in:
    its head, the marker (at its longest: naming search and references), its notes (picked
    lines, a JSON listing: `most_notes_chars`) and its tail."""
    line = marker(
        total_chars=chars,
        shown_chars=0,
        handle=_LONGEST_HANDLE,
        searchable=True,
        references=True,
        tail_chars=policy.tail_chars,
    )
    # The marker names the head's length (twice with a tail): `shown_chars=0` wrote one digit.
    digits = 2 * len(str(policy.head_chars))
    tail = policy.tail_chars + 2 if policy.tail_chars else 0
    return policy.head_chars + 2 + len(line) + digits + tail + most_notes_chars(policy)


def shrinks(chars: int, policy: ClaimCheckPolicy) -> bool:
    """Whether checking a result in makes it smaller: it is longer than what would replace it."""
    return chars > kept_chars(chars, policy)


def turn_budget(results: Sequence[TurnResult]) -> int | None:
    """A turn's budget: the smallest `turn_budget_chars` of its results' policies, if any."""
    budgets = [r.policy.turn_budget_chars for r in results if r.policy is not None]
    return min((b for b in budgets if b is not None), default=None)


def plan_turn(
    results: Sequence[TurnResult], *, used_chars: int = 0, window_chars: int | None = None
) -> dict[int, CheckInReason]:
    """Which of a turn's results to check in (by index, in call order), and why.

    `used_chars`: the conversation's characters before the turn's results (the room's
    measure); `window_chars`: the model's context window when no policy names one.
    First each result on its own, in call order: at its threshold, or past its share of the
    room left after the turn's earlier results; then, while the turn exceeds its budget, the
    largest of the rest (ties by call order) that would shrink.
    """
    chosen: dict[int, CheckInReason] = {}
    spent = used_chars
    for index, result in enumerate(results):
        if result.policy is not None and not result.settled:
            reason = _alone(result, spent, window_chars)
            if reason is not None:
                chosen[index] = reason
        spent += _in_turn(result, index in chosen)
    budget = turn_budget(results)
    if budget is None:
        return chosen
    total = sum(_in_turn(result, index in chosen) for index, result in enumerate(results))
    candidates = [
        index
        for index, result in enumerate(results)
        if result.policy is not None
        and not result.settled
        and index not in chosen
        and result.shrinks()
    ]
    for index in sorted(candidates, key=lambda i: (-results[i].chars, i)):
        if total <= budget:
            break
        chosen[index] = "turn_budget"
        total -= results[index].chars - _in_turn(results[index], True)
    return chosen


def _alone(result: TurnResult, spent: int, window_chars: int | None) -> CheckInReason | None:
    policy, chars = result.policy, result.chars
    assert policy is not None
    if chars >= policy.threshold_chars:
        return "threshold"
    window = policy.context_window_chars or window_chars
    share = policy.max_share_of_room
    if share is None or window is None:
        return None
    room = max(0, window - spent)
    return "room" if chars > share * room and result.shrinks() else None


def _in_turn(result: TurnResult, checked_in: bool) -> int:
    if checked_in and result.policy is not None:
        return result.kept if result.kept is not None else kept_chars(result.chars, result.policy)
    return result.chars


def refuse_room_share(claim_check: ClaimCheck, *, host: str) -> None:
    """For a host that never sees the conversation: `max_share_of_room` measures the room
    left in it, so a policy that sets it is refused rather than silently ignored."""
    policies = [("policy", claim_check.policy), *claim_check.per_tool.items()]
    named = [name for name, each in policies if each.max_share_of_room is not None]
    if named:
        raise ConfigurationError(
            f"{named[0]} sets max_share_of_room, which needs the conversation's size: "
            f"{host} never sees the conversation (AgentRunner does)"
        )


class RunningTurn:
    """`plan_turn` for a host that must answer each of a turn's results as it comes: a result
    is checked in when, added to those before it, the turn would exceed its budget (and it
    would shrink). Not largest first: what came before is already in the conversation.
    Thread-safe: a framework may run a turn's calls at once (then the order they finish in
    is the order they are counted in)."""

    __slots__ = ("_lock", "_results")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: list[TurnResult] = []

    def take(
        self, chars: int, policy: ClaimCheckPolicy, *, kept: int | None = None
    ) -> CheckInReason | None:
        """Why the next result is checked in (None: it passes), counted into the turn as
        what it will leave in the conversation (`kept` once checked in, when known)."""
        with self._lock:
            result = TurnResult(chars, policy, kept=kept)
            reason = plan_turn([*self._results, result]).get(len(self._results))
            left = _in_turn(result, reason is not None)
            self._results.append(TurnResult(left, policy, settled=True))
            return reason

    def count(self, chars: int) -> None:
        """Count a result the turn never checks in (a claim tool's window, a repeat read's
        answer, a refusal): it takes its place in the conversation all the same."""
        with self._lock:
            self._results.append(TurnResult(chars, settled=True))

    @property
    def chars(self) -> int:
        """What the turn's results have taken so far."""
        with self._lock:
            return sum(r.chars for r in self._results)
