"""Tools the executor can call, and the one place where their failures become typed results.

A tool declares what it needs (a pydantic args model), how risky it is, how long it may
take and whether calling it twice is harmless; a tool made from a catalog entry
(`Tool.of`) also carries its `ToolSpec`, whose result contract every result must keep.
`ToolRegistry.call` never raises: whatever goes wrong comes back as a `ToolError` with one
of the seed's error types, and a result comes back checked (contract, emptiness) and
bounded (`agent_core.execution.results`), with a note for every value it had to clip.

A side-effecting tool also says whether its backend honours the idempotency key
(`Tool.idempotency`, ignored unless declared) and may bring a reconcile read
(`Tool.reconcile`): `ToolRegistry.reconcile` asks it whether a change that may have reached
the backend happened (`agent_core.execution.policy.Verdict`), so the executor never re-sends one
blindly to a backend that would do it twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from agent_core.catalog.builtin import CATALOG
from agent_core.catalog.spec import ToolSpec, catalog_of
from agent_core.execution.policy import Verdict
from agent_core.execution.results import ContractBroken, bound, check_result, is_empty
from agent_core.models import Decision, ErrorType, Idempotency, Risk, ToolError, ToolOk

log = logging.getLogger(__name__)


class ToolFailure(Exception):
    """Raised by a tool to report a typed failure (not found, permission denied, ...)."""

    def __init__(
        self,
        error_type: ErrorType,
        message: str,
        *,
        code: str | None = None,
        may_have_happened: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        # A reason the catalog explains to the customer (`ToolSpec.refusals`).
        self.code = code
        # Whether the change may have reached the backend (`ToolError.may_have_happened`);
        # None when the tool cannot say, which `may_have_happened` reads conservatively.
        self.may_have_happened = may_have_happened


# The failures after which a request may have reached its backend when the tool does not
# say otherwise: whatever took too long or broke off may have been carried out.
_IN_DOUBT = frozenset({ErrorType.TIMEOUT, ErrorType.UNAVAILABLE})


def may_have_happened(error_type: ErrorType, told: bool | None) -> bool:
    """What a failure says about the change: the tool's word if it gave one, else in doubt
    for a transient failure (the request may have arrived) and not for a refusal."""
    return told if told is not None else error_type in _IN_DOUBT


@dataclass(frozen=True)
class ToolContext:
    """Who a call is for. The idempotency key is stable across retries and crash recovery."""

    user_id: int
    trace_id: str
    run_id: str
    step_id: str

    @property
    def idempotency_key(self) -> str:
        return f"{self.run_id}:{self.step_id}"


ToolHandler = Callable[[Any, ToolContext], Awaitable[Any]]
# The reconcile read of a change: its result if the change is there (what the change would
# have answered), None if it is not; raising means it cannot tell.
ReconcileHandler = Callable[[Any, ToolContext], Awaitable[Any]]


@dataclass(frozen=True)
class Reconciliation:
    """What the reconcile read found; `message` says it for staff."""

    verdict: Verdict
    message: str
    data: Any = None
    notes: tuple[str, ...] = ()


# How long a backend that ignores idempotency keys may take to make a change after it was
# sent, unless the tool declares its own (`settle_s`): a reconcile read that finds nothing
# sooner proves nothing, because the first request may still be in flight.
DEFAULT_SETTLE_S: Final = 30.0


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    handler: ToolHandler
    risk: Risk = Risk.READ
    timeout_s: float = 5.0
    idempotent: bool = True
    max_retries: int = 2
    # Per-tool overrides of the failure policy table (e.g. a tool whose timeouts must stop).
    policy: Mapping[ErrorType, Decision] = field(default_factory=dict)
    # The catalog entry it carries out; None for a bare tool (tests, benchmarks), whose
    # results are only bounded.
    spec: ToolSpec | None = None
    # For a change: does its backend replay a repeated key? Assumed not unless declared.
    idempotency: Idempotency = Idempotency.IGNORED
    # For a change at a backend that ignores keys: the read that tells whether it happened,
    # and how long after a send its "not there" starts to mean anything.
    reconcile: ReconcileHandler | None = None
    settle_s: float = DEFAULT_SETTLE_S

    @classmethod
    def of(
        cls,
        spec: ToolSpec,
        handler: ToolHandler,
        *,
        timeout_s: float = 5.0,
        max_retries: int = 2,
        risk: Risk | None = None,
        idempotency: Idempotency = Idempotency.IGNORED,
        reconcile: ReconcileHandler | None = None,
        settle_s: float = DEFAULT_SETTLE_S,
    ) -> Tool:
        """The catalog's `spec` carried out by `handler`. Only a read tool is idempotent;
        `risk` may raise the catalog's risk (a configured backend), never lower it;
        `idempotency` is what the backend does with a repeated key (see `Tool`)."""
        risk = risk or spec.risk
        return cls(
            name=spec.name,
            description=spec.description.en,
            args_model=spec.args_model,
            handler=handler,
            risk=risk,
            timeout_s=timeout_s,
            idempotent=risk is Risk.READ,
            max_retries=max_retries,
            spec=spec,
            idempotency=idempotency,
            reconcile=reconcile,
            settle_s=settle_s,
        )


class _Within:
    """Awaits a handler, cut off `seconds` after it started, as `asyncio.timeout(seconds)`
    around the `await` would be — but the timer is armed only once the handler first
    suspends, with the same deadline (`asyncio.timeout_at`). A handler that answers without
    suspending (an in-process tool, a cached read) never touches the loop's timer heap: with
    many runs in flight each push and pop of that heap compares `TimerHandle`s in Python
    (bench/README.md §9, sixth pass). A timeout can only fire while the handler is
    suspended anyway, so what is cut off, and when, is the same."""

    __slots__ = ("_seconds", "_steps")

    def __init__(self, handler: Awaitable[Any], seconds: float) -> None:
        self._steps = handler.__await__()
        self._seconds = seconds

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self._steps
        deadline = asyncio.get_running_loop().time() + self._seconds
        try:
            first = steps.send(None)
        except StopIteration as done:
            return done.value
        return (yield from _resumed_within(steps, first, deadline).__await__())


async def _resumed_within(steps: Generator[Any, Any, Any], first: Any, deadline: float) -> Any:
    async with asyncio.timeout_at(deadline):
        return await _Resumed(steps, first)


class _Resumed:
    """The rest of a handler started by `_Within`: hands the task the first thing it waits
    on, then relays what the task sends or throws in (a result, a cancellation) until it ends."""

    __slots__ = ("_first", "_steps")

    def __init__(self, steps: Generator[Any, Any, Any], first: Any) -> None:
        self._steps = steps
        self._first = first

    def __await__(self) -> Generator[Any, Any, Any]:
        steps, waiting = self._steps, self._first
        while True:
            try:
                sent = yield waiting
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # thrown in by the task: a cancellation, a timeout
                try:
                    waiting = steps.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    waiting = steps.send(sent)
                except StopIteration as done:
                    return done.value


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def catalog(self) -> Mapping[str, ToolSpec]:
        """The catalog in use: the built-in entries, replaced or extended by the specs of
        the registered tools (a TOML-declared tool brings its own)."""
        specs = [tool.spec for tool in self._tools.values() if tool.spec is not None]
        return catalog_of([*CATALOG.values(), *specs])

    def check_args(self, name: str, args: Mapping[str, Any]) -> ToolError | None:
        """Why `args` cannot be given to tool `name` (before anything runs), or None."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolError(error_type=ErrorType.UNKNOWN_TOOL, message=f"no tool named {name!r}")
        try:
            tool.args_model.model_validate(dict(args))
        except ValidationError as exc:
            return _invalid(exc)
        return None

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: ToolContext
    ) -> ToolOk | ToolError:
        tool = self._tools.get(name)
        if tool is None:
            return ToolError(error_type=ErrorType.UNKNOWN_TOOL, message=f"no tool named {name!r}")
        try:
            parsed = tool.args_model.model_validate(dict(args))
        except ValidationError as exc:
            return _invalid(exc)
        try:
            # Cut off `timeout_s` after it started, in this task (not `wait_for`: one task and
            # loop turn fewer per call); the timer armed only if the handler suspends.
            data = await _Within(tool.handler(parsed, ctx), tool.timeout_s)
        except ToolFailure as exc:
            return ToolError(
                error_type=exc.error_type,
                message=exc.message,
                code=exc.code,
                may_have_happened=may_have_happened(exc.error_type, exc.may_have_happened),
            )
        except TimeoutError:
            # Cut off mid-call: whatever it sent may have arrived.
            return ToolError(
                error_type=ErrorType.TIMEOUT,
                message=f"{name} took longer than {tool.timeout_s}s",
                may_have_happened=True,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("tool %s raised", name, extra={"trace_id": ctx.trace_id})
            return ToolError(
                error_type=ErrorType.INTERNAL, message=f"{name} failed: {type(exc).__name__}"
            )
        return _checked(tool, data)

    async def reconcile(
        self, name: str, args: Mapping[str, Any], ctx: ToolContext
    ) -> Reconciliation:
        """Whether the change `name(args)` of step `ctx` happened, by the tool's reconcile
        read. Never raises: a read that fails, answers off contract or takes too long, and
        a tool without one, are `undecided`; only an answer decides."""
        tool = self._tools.get(name)
        if tool is None or tool.reconcile is None:
            return Reconciliation(Verdict.UNDECIDED, f"{name} declares no reconcile read")
        try:
            parsed = tool.args_model.model_validate(dict(args))
            found = await asyncio.wait_for(tool.reconcile(parsed, ctx), timeout=tool.timeout_s)
        except asyncio.CancelledError:
            raise
        except ToolFailure as exc:
            return Reconciliation(Verdict.UNDECIDED, f"reconcile read failed: {exc.message}")
        except TimeoutError:
            return Reconciliation(
                Verdict.UNDECIDED, f"reconcile read took longer than {tool.timeout_s}s"
            )
        except Exception as exc:
            log.exception("reconcile of %s raised", name, extra={"trace_id": ctx.trace_id})
            return Reconciliation(Verdict.UNDECIDED, f"reconcile read failed: {type(exc).__name__}")
        if found is None:
            return Reconciliation(Verdict.NOT_HAPPENED, "reconcile read: the change is not there")
        checked = _checked(tool, found)
        if isinstance(checked, ToolError):
            return Reconciliation(
                Verdict.UNDECIDED, f"reconcile read found it but {checked.message}"
            )
        return Reconciliation(
            Verdict.HAPPENED,
            "reconcile read: the change is there",
            data=checked.data,
            notes=checked.notes,
        )


def _checked(tool: Tool, data: Any) -> ToolOk | ToolError:
    """The result as the executor may see it: contract kept, not empty, bounded."""
    spec = tool.spec
    if spec is not None:
        if spec.risk is Risk.READ and is_empty(spec, data):
            return ToolError(error_type=ErrorType.EMPTY_RESULT, message=f"{tool.name}: no results")
        try:
            data = check_result(spec, data)
        except ContractBroken as exc:
            return ToolError(
                error_type=ErrorType.INTERNAL,
                message=f"{tool.name} result breaks the contract: {exc}",
            )
    clipped, notes = bound(data, spec.bounds if spec is not None else None)
    return ToolOk(data=clipped, notes=notes)


def _invalid(exc: ValidationError) -> ToolError:
    """A bad argument: named for staff, and for the customer by its code (`argument:<name>`)."""
    errors = exc.errors(include_url=False, include_input=False)
    loc = errors[0]["loc"] if errors else ()
    return ToolError(
        error_type=ErrorType.INVALID_ARGUMENTS,
        message=_describe_validation(exc),
        code=f"argument:{loc[0]}" if loc else None,
    )


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
