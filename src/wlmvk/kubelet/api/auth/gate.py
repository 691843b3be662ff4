"""The kubelet API's gate: authentication and authorization of each request, with the API server.

``Gate.check`` answers None (let it through) or a ``Refusal``: 401 when the
request proves no identity (no verified client certificate, no bearer token
the API server's TokenReview accepts, anonymous access off), 403 when the
API server's SubjectAccessReview allows none of the request's alternatives
(``rules.attributes``) on one of its nodes, 500 when a review could not be
asked. Answers are cached as the kubelet's webhooks cache them: a token for
2 minutes, an allowed review for 5 minutes, a denied one for 30 seconds, in
bounded maps.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog

from wlmvk.core.errors import WlmvkError
from wlmvk.kube.bodies import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, Body, Resource
from wlmvk.kubelet.api.auth import rules

_log = structlog.get_logger(__name__)

TOKEN_TTL = 120.0
ALLOWED_TTL = 300.0
DENIED_TTL = 30.0
CACHE_SIZE = 4096

ALWAYS_ALLOW = "AlwaysAllow"
WEBHOOK = "Webhook"
AUTHORIZATION_MODES = (WEBHOOK, ALWAYS_ALLOW)

Create = Callable[[Resource, Body], Awaitable[Body]]
K = TypeVar("K")
V = TypeVar("V")


class _Cache(Generic[K, V]):
    """A bounded map whose entries expire; the oldest entry goes first when full."""

    def __init__(self, size: int = CACHE_SIZE, clock: Callable[[], float] = time.monotonic) -> None:
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._size = size
        self._clock = clock

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is None:
            return None
        if found[0] <= self._clock():
            del self._items[key]
            return None
        return found[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        self._items[key] = (self._clock() + ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


@dataclass(frozen=True)
class AuthSettings:
    anonymous: bool = False
    token_webhook: bool = True
    authorization_mode: str = WEBHOOK


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str


@dataclass(frozen=True)
class Request:
    """What the gate looks at: the verified client certificate, the Authorization header, method, path."""

    peercert: dict[str, Any] | None
    authorization: str
    method: str
    path: str


class Gate:
    """See the module docstring. ``create`` posts a review (``KubeClient.create``); ``nodes_for``
    names the nodes a path is about."""

    def __init__(
        self,
        settings: AuthSettings,
        *,
        create: Create | None,
        nodes_for: Callable[[str], Sequence[str]],
    ) -> None:
        if settings.authorization_mode not in AUTHORIZATION_MODES:
            raise ValueError(
                f"authorization mode {settings.authorization_mode!r}: not one of {AUTHORIZATION_MODES}"
            )
        self.settings = settings
        self._create = create
        self._nodes_for = nodes_for
        self._tokens: _Cache[str, rules.User | None] = _Cache()
        self._decisions: _Cache[rules.Attributes, bool] = _Cache()

    async def check(self, request: Request) -> Refusal | None:
        try:
            user = await self._authenticate(request)
        except WlmvkError as exc:
            _log.warning("could not review a bearer token", error=exc.message)
            return Refusal(401, "Unauthorized")
        if user is None:
            return Refusal(401, "Unauthorized")
        if self.settings.authorization_mode == ALWAYS_ALLOW:
            return None
        for node in self._nodes_for(request.path):
            alternatives = rules.attributes(user, request.method, request.path, node)
            try:
                allowed = await self._any_allowed(alternatives)
            except WlmvkError as exc:
                _log.warning(
                    "could not review an access", user=user.name, path=request.path, error=exc.message
                )
                first = alternatives[0]
                return Refusal(
                    500,
                    f"Authorization error (user={user.name}, verb={first.verb}, "
                    f"resource=nodes, subresource={first.subresource})",
                )
            if not allowed:
                _log.info("refused a request", user=user.name, path=request.path, node=node)
                return Refusal(403, rules.forbidden_message(alternatives))
        return None

    async def _authenticate(self, request: Request) -> rules.User | None:
        if request.peercert:
            user = rules.user_from_certificate(request.peercert)
            if user is not None:
                return user
        token = rules.bearer_token(request.authorization)
        if token is not None and self.settings.token_webhook and self._create is not None:
            return await self._review_token(token)
        if token is None and self.settings.anonymous:
            return rules.ANONYMOUS_USER
        return None

    async def _review_token(self, token: str) -> rules.User | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._tokens.get(key)
        if cached is not None:
            return cached
        assert self._create is not None
        user = rules.user_from_token_review(await self._create(TOKEN_REVIEWS, rules.token_review(token)))
        if user is not None:
            self._tokens.put(key, user, TOKEN_TTL)
        return user

    async def _any_allowed(self, alternatives: tuple[rules.Attributes, ...]) -> bool:
        for attrs in alternatives:
            cached = self._decisions.get(attrs)
            if cached is None:
                if self._create is None:
                    cached = False
                else:
                    answer = await self._create(SUBJECT_ACCESS_REVIEWS, rules.subject_access_review(attrs))
                    cached = rules.allowed_by(answer)
                self._decisions.put(attrs, cached, ALLOWED_TTL if cached else DENIED_TTL)
            if cached:
                return True
        return False
