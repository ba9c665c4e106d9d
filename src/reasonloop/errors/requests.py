"""Errors of a caller's request: invalid settings or answers, a path or method the server does not
serve, a missing or unknown key, a call from another site, too many requests.
Re-exported by :mod:`reasonloop.errors`."""

from __future__ import annotations

from reasonloop.errors.base import ReasonLoopError

__all__ = [
    "ApprovalInvalid",
    "AuthError",
    "CrossSiteRefused",
    "MethodNotAllowed",
    "RateLimited",
    "RequestInvalid",
    "RequestNotFound",
]


class RequestInvalid(ReasonLoopError):
    """A request names an unknown plugin or carries invalid settings; ``field`` names the culprit."""

    code = "request.invalid"


class ApprovalInvalid(RequestInvalid):
    """An answer to an approval that cannot be taken (modified arguments that do not fit the tool's
    schema, a decision that is not one); the approval stays pending."""

    code = "approval.invalid"


class RequestNotFound(RequestInvalid):
    """A request for a path the server does not serve."""

    code = "request.not_found"


class MethodNotAllowed(RequestInvalid):
    """A request with a method its path does not take (``GET`` on a ``POST`` route)."""

    code = "request.method_not_allowed"


class AuthError(ReasonLoopError):
    """Missing or unknown API key."""

    code = "auth.invalid_key"


class CrossSiteRefused(AuthError):
    """A web page of another site called a server whose authentication is off."""

    code = "auth.cross_site"


class RateLimited(ReasonLoopError):
    """An API key made more requests than its limit allows; ``retry_after`` is in seconds."""

    code = "auth.rate_limited"
    retryable = True
