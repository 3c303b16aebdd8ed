"""Google Search Console: submit the sitemap index (sitemaps.submit) with a service account."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sitemap_updater.ports import Http, HttpResponse

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

SCOPE = "https://www.googleapis.com/auth/webmasters"
API = "https://www.googleapis.com/webmasters/v3"
TOKEN_TIMEOUT_S = 20.0


def service_account_token(secrets: SecretsManagerClient, secret_arn: str) -> Callable[[], str]:
    """An access-token provider from service-account JSON kept in Secrets Manager (google-auth)."""
    return _ServiceAccountToken(secrets, secret_arn)


class _ServiceAccountToken:
    """Reads the secret and loads google-auth at the first token, not when built: a function that builds the
    notifiers but never submits (the sweep; notify with IndexNow work only) needs no Secrets Manager call, nor
    the permission for it. Tokens are minted over google-auth's urllib3 transport: urllib3 ships with botocore,
    and ``requests`` is in neither the function package nor the Lambda runtime."""

    def __init__(self, secrets: SecretsManagerClient, secret_arn: str) -> None:
        self._secrets = secrets
        self._secret_arn = secret_arn
        self._credentials: Any = None
        self._request: Any = None

    def __call__(self) -> str:
        if self._credentials is None:
            import urllib3
            from google.auth.transport.urllib3 import Request
            from google.oauth2 import service_account

            info = json.loads(self._secrets.get_secret_value(SecretId=self._secret_arn)["SecretString"])
            self._credentials = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
                info, scopes=[SCOPE]
            )
            http = urllib3.PoolManager(timeout=urllib3.Timeout(total=TOKEN_TIMEOUT_S))
            self._request = Request(http)  # type: ignore[no-untyped-call]
        if not self._credentials.valid:
            self._credentials.refresh(self._request)
        return str(self._credentials.token)


class SearchConsole:
    """``PUT {api}/sites/{siteUrl}/sitemaps/{feedpath}``."""

    def __init__(self, http: Http, token: Callable[[], str], api: str = API) -> None:
        self._http = http
        self._token = token
        self._api = api.rstrip("/")

    def submit(self, property_url: str, feed_url: str) -> HttpResponse:
        url = f"{self._api}/sites/{quote(property_url, safe='')}/sitemaps/{quote(feed_url, safe='')}"
        return self._http.request("PUT", url, headers={"Authorization": f"Bearer {self._token()}"})
