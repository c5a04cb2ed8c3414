"""The agent as adapters see it: ask, decide on a paused step, recover after a crash.

Telegram, the CLI and tests all go through `Agent`; it wires planner → executor and asks
the injected store (a `RunStore`) for the few things that need durable state: the chat's
last order, the atomic claim of a confirmation, and the runs a crash interrupted.
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from agent_core.execution.dependencies import declare_dependencies
from agent_core.execution.executor import Executor, Journal
from agent_core.interpretation import ClarifyOption
from agent_core.models import ClaimResult, PlanStep, PromptRef, Run, utcnow
from agent_core.understanding.order_facts import ObservedStep, can_take, narrow, order_facts
from agent_core.understanding.planner import PlanDraft, Planner, PlanRequest, tag_for

log = logging.getLogger(__name__)

MAX_REQUEST_CHARS = 4096  # Telegram's own message limit; longer text is refused politely.
DEFAULT_APPROVAL_TTL = timedelta(hours=24)


class RunStore(Journal, Protocol):
    """What the agent needs from durable storage. `storage.SqliteRunStore` implements it."""

    async def load_run(self, run_id: str) -> Run | None: ...

    async def last_order_ids(self, chat_id: int, user_id: int) -> list[str]:
        """The orders this customer's last message about orders in this chat named, in
        its order ("this order" is the first; "cancel it" asks which of them)."""
        ...

    async def recent_order_steps(self, chat_id: int, user_id: int) -> list[ObservedStep]:
        """The steps about orders of this customer's recent runs in this chat, newest
        first (what they observed decides which orders a question may offer)."""
        ...

    async def claim_pause(
        self,
        run_id: str,
        *,
        user_id: int,
        approved: bool,
        nonce: str | None,
        now: datetime,
        expires_before: datetime,
        prompt: PromptRef | None = None,
        staff: bool = False,
        approvals: int = 1,
    ) -> tuple[ClaimResult, Run | None]:
        """Atomically write the customer's decision on the paused step; one caller wins.

        Returns the outcome and the run as it is right after the claim (None when there is
        no such run or it is not this user's). `nonce=None` accepts the current pause
        whatever its nonce (the CLI, where the customer types the run id); buttons always
        carry the nonce they were sent with. `prompt` is the message a button was pressed
        on: it must be the one recorded for the pause (`STALE` otherwise). `staff`: the
        caller checked that `user_id` is a staff member; only a staff pause is theirs,
        never one of their own runs. `approvals` > 1 (four eyes): the other approvals must
        be recorded on the pause by other staff members who are not the customer.
        """
        ...

    async def still_held(self, run_id: str) -> bool:
        """Whether this process still owns the running run's lease; then nobody else has
        written the run since this process did."""
        ...

    async def runs_to_recover(self, abandoned: Collection[str] = ()) -> list[str]:
        """Take the runs a crash (or a stalled process) left `running` and that no live
        process drives: ids of runs now this process's to drive (storage's leases).
        `abandoned`: runs of this process whose drive failed, taken back at once."""
        ...

    async def claim_clarification(
        self,
        run_id: str,
        *,
        user_id: int,
        nonce: str | None,
        choice: str,
        now: datetime,
        expires_before: datetime,
        prompt: PromptRef | None = None,
    ) -> tuple[ClaimResult, Run | None]:
        """Atomically record the customer's answer to a clarifying question; one wins.
        `prompt` is the message a button was pressed on: it must be the one the options
        were delivered on (or, while none is recorded, in the run's chat); `STALE` otherwise,
        and the question stays open."""
        ...


class Working:
    """The runs this process is working on right now: driving them, or delivering what a
    drive committed. Storage renews exactly these runs' leases (`storage.leases`), so a
    run whose drive died on an exception is not kept: its lease lapses and it is recovered.

    Counted, not a set: the same run can be held twice at once (a press arriving while its
    answer is still being delivered). A hold that ends in an exception (a storage error
    mid-run) leaves its runs `abandoned`: this process's next recovery takes them back at
    once instead of waiting for its own lease to lapse.
    """

    def __init__(self) -> None:
        self._count: Counter[str] = Counter()
        self._abandoned: set[str] = set()

    def hold(self, *run_ids: str) -> None:
        """Start holding: from now on the keeper renews these runs' leases."""
        self._count.update(run_ids)
        self._abandoned.difference_update(run_ids)

    def release(self, *run_ids: str) -> None:
        self._count.subtract(run_ids)
        for run_id in run_ids:
            if self._count[run_id] <= 0:
                del self._count[run_id]

    @contextmanager
    def holding(self, *run_ids: str) -> Iterator[None]:
        self.hold(*run_ids)
        try:
            yield
        except BaseException:
            self._abandoned.update(run_ids)
            raise
        finally:
            self.release(*run_ids)

    def ids(self) -> list[str]:
        return list(self._count)

    def abandoned(self) -> list[str]:
        """Runs whose drive here failed and that nothing here holds now."""
        return [run_id for run_id in self._abandoned if run_id not in self._count]


@dataclass(frozen=True)
class DecisionOutcome:
    result: ClaimResult
    # Present only for the run's own customer; never another user's data.
    run: Run | None = None


class Agent:
    def __init__(
        self,
        planner: Planner,
        executor: Executor,
        store: RunStore,
        *,
        approval_ttl: timedelta = DEFAULT_APPROVAL_TTL,
        clock: Callable[[], datetime] = utcnow,
        new_id: Callable[[], str] = lambda: secrets.token_hex(6),
    ) -> None:
        self.planner = planner
        self.executor = executor
        self.store = store
        self.approval_ttl = approval_ttl
        self._clock = clock
        self._new_id = new_id
        self.working = Working()

    async def plan(
        self,
        text: str,
        *,
        user_id: int,
        chat_id: int,
        language_hint: str | None = None,
        last_order_id: str | None = None,
        chat_order_ids: Sequence[str] = (),
    ) -> Run:
        """Turn a request into a run with its plan; nothing is executed or stored yet."""
        if len(text) > MAX_REQUEST_CHARS:
            raise ValueError(f"request longer than {MAX_REQUEST_CHARS} characters")
        request = PlanRequest(
            text=text,
            language_hint=language_hint,
            last_order_id=last_order_id,
            chat_order_ids=list(chat_order_ids),
        )
        draft = await self.planner.plan(request)
        draft = await self._narrowed(draft, request, chat_id=chat_id, user_id=user_id)
        steps = []
        for number, item in enumerate(draft.steps, start=1):
            tool = self.executor.registry.get(item.tool)
            steps.append(
                PlanStep(
                    id=f"s{number}",
                    goal=item.goal,
                    tool=item.tool,
                    args=item.args,
                    tag=item.tag,
                    max_retries=tool.max_retries if tool else 0,
                )
            )
        # Each step says which earlier ones it needs: a failure stops only those.
        declare_dependencies(steps, self.executor.rules)
        interpretation = draft.interpretation
        if interpretation is not None and interpretation.clarify is not None:
            # The option buttons carry it: a forged or stale option changes nothing.
            interpretation.clarify.nonce = secrets.token_urlsafe(8)
        now = self._clock()
        return Run(
            id=self._new_id(),
            trace_id=secrets.token_hex(8),
            user_id=user_id,
            chat_id=chat_id,
            request_text=text,
            language=draft.language,
            steps=steps,
            refusal=draft.refusal.value if draft.refusal else None,
            interpretation=interpretation,
            created_at=now,
            updated_at=now,
        )

    async def _narrowed(
        self, draft: PlanDraft, request: PlanRequest, *, chat_id: int, user_id: int
    ) -> PlanDraft:
        """A "which order?" question offers only orders that exist and can take the
        action, as the chat's earlier runs observed them (`agent_core.understanding.order_facts`); with
        one left the action is planned on it (it still pauses for the Confirm)."""
        interp = draft.interpretation
        clarify = interp.clarify if interp is not None else None
        if clarify is None or clarify.tool is None or not clarify.options:
            return draft
        catalog = self.executor.catalog
        facts = order_facts(await self.store.recent_order_steps(chat_id, user_id), catalog)
        tag = tag_for(clarify.tool, catalog).value
        keep = [
            can_take(facts.get(o.label.strip().upper()), clarify.tool, tag, self.executor.rules)
            for o in clarify.options
        ]
        narrowed = narrow(clarify, keep, draft.language)
        if isinstance(narrowed, ClarifyOption):
            chosen = request.model_copy(update={"text": narrowed.text})
            replanned = await self.planner.plan(chosen)
            if replanned.refusal is None and replanned.steps:
                return replanned
            return draft
        assert interp is not None
        interp.clarify = narrowed
        return draft

    async def ask(
        self,
        text: str,
        *,
        user_id: int,
        chat_id: int,
        language_hint: str | None = None,
        chosen: bool = False,
    ) -> Run:
        """Plan the request and run it until it is answered or waits for the customer.

        `chosen`: the text is an option the customer picked from a clarifying question.
        An option names the order when it is about one ("cancel A1001"); one that names
        none ("where is my order", from the menu after "hello") picked a topic, not an
        earlier order, so it is planned without the chat's last order and asks which.
        """
        context = [] if chosen else await self.store.last_order_ids(chat_id, user_id)
        run = await self.plan(
            text,
            user_id=user_id,
            chat_id=chat_id,
            language_hint=language_hint,
            last_order_id=context[0] if context else None,
            chat_order_ids=context,
        )
        with self.working.holding(run.id):
            return await self.executor.start(run)

    async def choose(
        self, run_id: str, *, user_id: int, option: int, nonce: str | None = None
    ) -> DecisionOutcome:
        """The customer picked option `option` (0-based) of a clarifying question: claim it
        (`claim_choice`), then go on as if the customer had written that option's text —
        a new run, returned as `run`."""
        outcome, text = await self.claim_choice(run_id, user_id=user_id, option=option, nonce=nonce)
        if outcome.result is not ClaimResult.OK or outcome.run is None or text is None:
            return outcome
        run = outcome.run
        answered = await self.ask(
            text,
            user_id=user_id,
            chat_id=run.chat_id,
            language_hint=run.language.value,
            chosen=True,
        )
        return DecisionOutcome(ClaimResult.OK, answered)

    async def claim_choice(
        self,
        run_id: str,
        *,
        user_id: int,
        option: int,
        nonce: str | None = None,
        prompt: PromptRef | None = None,
    ) -> tuple[DecisionOutcome, str | None]:
        """Record the customer's pick; at most one pick of a question ever wins.

        Returns the outcome (with the question's run, for its own customer only) and, when
        it won, the text to continue with. Adapters that answer the press first (the bot's
        toast) call this, then `ask` with the text. A button press passes the message it
        was on: the data replayed anywhere else is `STALE` and uses nothing up.
        """
        asked = await self.store.load_run(run_id)
        if asked is None:
            return DecisionOutcome(ClaimResult.NOT_FOUND), None
        if asked.user_id != user_id:
            return DecisionOutcome(ClaimResult.NOT_ALLOWED), None
        if asked.clarify is None or not 0 <= option < len(asked.clarify.options):
            return DecisionOutcome(ClaimResult.STALE, asked), None
        now = self._clock()
        result, run = await self.store.claim_clarification(
            run_id,
            user_id=user_id,
            nonce=nonce,
            choice=asked.clarify.options[option].label,
            now=now,
            expires_before=now - self.approval_ttl,
            prompt=prompt,
        )
        if result is not ClaimResult.OK or run is None:
            return DecisionOutcome(result, run), None
        return DecisionOutcome(result, run), asked.clarify.options[option].text

    async def decide(
        self, run_id: str, *, user_id: int, approved: bool, nonce: str | None = None
    ) -> DecisionOutcome:
        """The customer pressed Confirm or Cancel: claim the decision, then carry it out."""
        outcome = await self.claim(run_id, user_id=user_id, approved=approved, nonce=nonce)
        if outcome.result is ClaimResult.OK and outcome.run is not None:
            return DecisionOutcome(outcome.result, await self.proceed(outcome.run))
        return outcome

    async def claim(
        self,
        run_id: str,
        *,
        user_id: int,
        approved: bool,
        nonce: str | None = None,
        prompt: PromptRef | None = None,
        staff: bool = False,
        approvals: int = 1,
    ) -> DecisionOutcome:
        """Record the decision on the paused step. At most one press ever wins.

        Adapters that want to show the decision before the step runs (the bot edits the
        message) call this, then `proceed`. A button press passes the message it was on.
        """
        now = self._clock()
        result, run = await self.store.claim_pause(
            run_id,
            user_id=user_id,
            approved=approved,
            nonce=nonce,
            now=now,
            expires_before=now - self.approval_ttl,
            prompt=prompt,
            staff=staff,
            approvals=approvals,
        )
        if result in (ClaimResult.NOT_FOUND, ClaimResult.NOT_ALLOWED):
            return DecisionOutcome(result)
        if run is None:
            return DecisionOutcome(ClaimResult.NOT_FOUND)
        if result is ClaimResult.EXPIRED:
            # The store already marked it expired; close the paused step, record, tell.
            with self.working.holding(run.id):
                run = await self.executor.expire(run)
        elif result is ClaimResult.OK:
            # Held from the claim (which took the lease) until `proceed` has driven it: an
            # adapter may queue the proceed behind other work in the chat (a slow read), and
            # a lease left to lapse meanwhile would let recovery drive the run while the
            # queued proceed still waits to drive it too.
            self.working.hold(run.id)
        return DecisionOutcome(result, run)

    def now(self) -> datetime:
        """The agent's clock (the one its claims judge expiry by)."""
        return self._clock()

    async def proceed(self, run: Run) -> Run:
        """Continue a claimed run from its paused step; `run` is the claim's (`claim`).

        Driven only while the run is still this process's (`still_held`): then the claim's
        copy is the database's, since another process must take the lease before it may
        write, and this process's own recovery never drives a held run. If it was taken over
        meanwhile (this process stalled past its lease and another one recovered it), the
        copy is stale and is not driven; the run is returned as it now stands. Ends the
        claim's hold."""
        try:
            with self.working.holding(run.id):
                if not await self.store.still_held(run.id):
                    log.warning(
                        "run %s was taken over before its confirmed step ran here; not driven",
                        run.id,
                        extra={"trace_id": run.trace_id},
                    )
                    return await self.store.load_run(run.id) or run
                return await self.executor.drive(run)
        finally:
            self.working.release(run.id)

    async def recover(self, before: Callable[[Run], Awaitable[None]] | None = None) -> list[Run]:
        """Finish the runs a crash left `running` and no live process drives; paused runs
        keep waiting for their customer. `before` sees each run just before it is driven
        (the bot shows a plan the crash kept from the customer).

        Every taken run is held from the start (its lease renewed), not only while it is
        driven: they are driven one after another, and one that waits its turn must not
        lapse and be taken by another process meanwhile.
        """
        recovered = []
        taken = await self.store.runs_to_recover(self.working.abandoned())
        # A run held here is driven (or about to be) by this process: its lease lapsed only
        # because a renewal failed. Retaking it renewed the lease; driving it would be twice.
        held = set(self.working.ids())
        taken = [run_id for run_id in taken if run_id not in held]
        with self.working.holding(*taken):
            for run_id in taken:
                run = await self.store.load_run(run_id)
                if run is None:
                    continue
                log.info("recovering run %s", run_id, extra={"trace_id": run.trace_id})
                if before is not None:
                    await before(run)
                recovered.append(await self.executor.drive(run))
        return recovered
