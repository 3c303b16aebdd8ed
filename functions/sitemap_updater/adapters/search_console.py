"""Google Search Console: submit the sitemap index (sitemaps.submit) with a service account."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import quote

from sitemap_updater.adapters.http import HttpClient, HttpResponse

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

SCOPE = "https://www.googleapis.com/auth/webmasters"
API = "https://www.googleapis.com/webmasters/v3"
TOKEN_TIMEOUT_S = 20.0


def service_account_token(secrets: SecretsManagerClient, secret_arn: str) -> Callable[[], str]:
    """An access-token provider from service-account JSON kept in Secrets Manager (google-auth).

    Tokens are minted over google-auth's urllib3 transport: urllib3 already ships with botocore, and
    ``requests`` is in neither the function package nor the Lambda runtime."""
    import urllib3
    from google.auth.transport.urllib3 import Request
    from google.oauth2 import service_account

    info = json.loads(secrets.get_secret_value(SecretId=secret_arn)["SecretString"])
    credentials = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
        info, scopes=[SCOPE]
    )
    http = urllib3.PoolManager(timeout=urllib3.Timeout(total=TOKEN_TIMEOUT_S))
    request = Request(http)  # type: ignore[no-untyped-call]

    def token() -> str:
        if not credentials.valid:
            credentials.refresh(request)
        return str(credentials.token)

    return token


class SearchConsole:
    """``PUT {api}/sites/{siteUrl}/sitemaps/{feedpath}``."""

    def __init__(self, http: HttpClient, token: Callable[[], str], api: str = API) -> None:
        self._http = http
        self._token = token
        self._api = api.rstrip("/")

    def submit(self, property_url: str, feed_url: str) -> HttpResponse:
        url = f"{self._api}/sites/{quote(property_url, safe='')}/sitemaps/{quote(feed_url, safe='')}"
        return self._http.request("PUT", url, headers={"Authorization": f"Bearer {self._token()}"})
