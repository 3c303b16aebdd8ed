"""The tested package is the deployed package: built as `sam build` builds it, run with nothing else importable.

The package is ``functions/requirements.txt`` installed with its hashes into an empty folder plus the
``sitemap_updater`` sources. Each handler then runs in a fresh base interpreter (``-I -S``: no site-packages),
as a cold Lambda container would, against moto and local HTTP receivers: ingest, shard rebuild, index
rebuild, notify (IndexNow, and Search Console with a token minted by google-auth), the sweep, news expiry,
the webhook endpoint and the bootstrap's worker (every step of its state machine).
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from moto.server import ThreadedMotoServer
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sitemap_updater.local.bootstrap import LocalStateMachine
from sitemap_updater.local.runner import _sqs_record
from sitemap_updater.local.stack import REGION, LocalStack, create_stack, session
from sitemap_updater.local.webhooks import Sample, function_url_event
from tests.package.runtimes import LAMBDA_VERSION, MISSING, Runtime, lambda_python, this_python, version_of

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "functions" / "requirements.txt"
DRIVER = Path(__file__).with_name("driver.py")
KEY = "package-test-key-0001"
TOKEN = "package-test-access-token"
CLIENT_EMAIL = "sitemaps@package-test.iam.gserviceaccount.com"
SCHEDULED = {  # the hourly EventBridge schedule's event
    "version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602", "detail-type": "Scheduled Event",
    "source": "aws.events", "account": "123456789012", "time": "2026-11-20T11:00:00Z", "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/package-test-hourly"], "detail": {},
}  # fmt: skip


def locked() -> dict[str, str]:
    """Package name -> pinned version, from the lock."""
    pins = re.findall(r"^([A-Za-z0-9._-]+)==([^\s;]+)", REQUIREMENTS.read_text(encoding="utf-8"), re.MULTILINE)
    return {canonicalize_name(name): version for name, version in pins}


@dataclass(frozen=True, slots=True)
class Package:
    """A built function package and the interpreter it was built for and runs on."""

    path: Path
    python: Path
    version: tuple[int, int]

    @property
    def tag(self) -> str:
        """Names this package's stack apart from another Python's on the same moto server."""
        return f"py{self.version[0]}{self.version[1]}"


@pytest.fixture(scope="module", params=["this-python", "lambda-python3.12"])
def runtime(request: pytest.FixtureRequest) -> Runtime:
    """This machine's Python, then Lambda's (3.12) where one is installed; a clear skip where none is."""
    if request.param == "lambda-python3.12":
        found = lambda_python()
        if found is None:
            pytest.skip(MISSING)
        return Runtime("python3.12", found)
    python = this_python()
    if version_of(python) == LAMBDA_VERSION:
        pytest.skip("this machine's Python is Lambda's 3.12: the package runs once, as lambda-python3.12")
    return Runtime(python.name, python)


@pytest.fixture(scope="module")
def package(runtime: Runtime, tmp_path_factory: pytest.TempPathFactory) -> Package:
    """The function package as `sam build` makes it with ``runtime``'s pip: the locked wheels for that Python
    (hashes checked, no resolver, no dev extras) and the sources."""
    target = tmp_path_factory.mktemp(f"package-{runtime.label}")
    pip = [str(runtime.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--require-hashes",
           "--no-deps", "--only-binary=:all:"]  # fmt: skip
    done = subprocess.run(
        [*pip, "--no-compile", "--target", str(target), "-r", str(REQUIREMENTS)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    shutil.copytree(ROOT / "functions" / "sitemap_updater", target / "sitemap_updater",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copy(ROOT / "functions" / "webhook-mapping.json", target)  # sam build copies all of functions/
    version = version_of(runtime.python)
    assert version is not None, f"{runtime.python} does not run"
    return Package(target, runtime.python, version)


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def site() -> Iterator[HTTPServer]:
    """The site (robots.txt), the IndexNow endpoint, Google's token endpoint and the Search Console API."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


class Functions:
    """The stack's functions, each invoked in its own interpreter with only the package importable."""

    def __init__(self, package: Package, stack: LocalStack, env: dict[str, str], work: Path) -> None:
        self._package, self._stack, self._env, self._work = package, stack, env, work
        self._sqs = session().client("sqs", endpoint_url=stack.endpoint_url)
        self.invoked: list[str] = []
        self.modules: dict[str, set[str]] = {}

    def invoke(self, handler: str, event: dict[str, Any]) -> Any:
        event_file, result_file = self._work / "event.json", self._work / "result.json"
        event_file.write_text(json.dumps(event), encoding="utf-8")
        result_file.unlink(missing_ok=True)
        command = [str(self._package.python), "-I", "-S", "-B", str(DRIVER), str(self._package.path), handler]
        done = subprocess.run([*command, str(event_file), str(result_file)], env=self._env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, f"{handler} failed in the built package:\n{done.stderr[-6000:]}"
        result = json.loads(result_file.read_text(encoding="utf-8"))
        assert result["foreign_modules"] == [], f"{handler} loaded modules from outside the package"
        assert tuple(result["python"]) == self._package.version, f"{handler} ran on Python {result['python']}"
        self.invoked.append(handler.split(".")[-2])
        self.modules[handler.split(".")[-2]] = set(result["modules"])
        return result["response"]

    def drain(self) -> None:
        """Feed each SQS-triggered function from its queue, in the template's batch sizes, until all are empty."""
        for _ in range(10):
            progressed = False
            for source in self._stack.sources:
                received = self._sqs.receive_message(
                    QueueUrl=source.queue_url, MaxNumberOfMessages=min(source.batch_size, 10),
                    AttributeNames=["All"], MessageAttributeNames=["All"], WaitTimeSeconds=0,
                ).get("Messages", [])  # fmt: skip
                if not received:
                    continue
                arn = self._sqs.get_queue_attributes(QueueUrl=source.queue_url, AttributeNames=["QueueArn"])
                records = [_sqs_record(m, arn["Attributes"]["QueueArn"]) for m in received]
                response = self.invoke(source.handler, {"Records": records})
                assert response.get("batchItemFailures") == [], f"{source.function}: {response}"
                entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)]
                self._sqs.delete_message_batch(QueueUrl=source.queue_url, Entries=entries)  # type: ignore[arg-type]
                progressed = True
            if not progressed:
                return
        raise AssertionError("the queues did not drain")


def service_account(token_uri: str) -> tuple[dict[str, str], rsa.RSAPublicKey]:
    """A service-account JSON key as Google issues it, with a fresh RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()  # fmt: skip
    info = {"type": "service_account", "project_id": "package-test", "private_key_id": "key-1", "private_key": pem,
            "client_email": CLIENT_EMAIL, "client_id": "1", "token_uri": token_uri}  # fmt: skip
    return info, key.public_key()


def jwt_claims(assertion: str, public_key: rsa.RSAPublicKey) -> dict[str, Any]:
    """The claims of an RS256 JWT, after checking its signature."""

    def decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    header, claims, signature = assertion.split(".")
    public_key.verify(decode(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return dict(json.loads(decode(claims)))


def test_every_function_runs_from_the_built_package(
    package: Package, moto_endpoint: str, site: HTTPServer, tmp_path: Path
) -> None:
    # Given a stack from template.yaml, a Search Console secret, and the site and search engines on 127.0.0.1
    base = f"http://127.0.0.1:{site.port}"
    info, public_key = service_account(f"{base}/token")
    secrets = session().client("secretsmanager", endpoint_url=moto_endpoint)
    secret_arn = secrets.create_secret(
        Name=f"package-test-search-console-{package.tag}", SecretString=json.dumps(info)
    )["ARN"]
    webhooks = secrets.create_secret(
        Name=f"package-test-webhooks-{package.tag}", SecretString=json.dumps({"generic": KEY})
    )["ARN"]
    parameters = {"SiteUrl": base, "IndexNowKey": KEY, "SearchConsoleSecretArn": secret_arn, "RobotsCheck": "true"}
    parameters["WebhookSecretArn"] = webhooks
    parameters["Sections"] = "blog"  # a setting other than the default, read from the environment as deployed
    parameters["CdnMaxAgeSeconds"] = "0"  # no CDN here: the index queue need not wait out a cache lifetime
    stack = create_stack(ROOT / "template.yaml", moto_endpoint, parameters, f"package-test-{package.tag}")
    env = {
        **_against_moto(stack.environment, moto_endpoint, tmp_path),
        "INDEXNOW_ENDPOINT": f"{base}/indexnow",
        "SEARCH_CONSOLE_API": f"{base}/webmasters/v3",
    }
    token_requests: list[dict[str, list[str]]] = []
    indexnow: list[Any] = []
    submitted: list[str] = []

    def mint(request: Request) -> Response:
        token_requests.append(parse_qs(request.get_data(as_text=True)))
        body = {"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"}
        return Response(json.dumps(body), status=200, content_type="application/json")

    def accept(request: Request) -> Response:
        indexnow.append(json.loads(request.data))
        return Response(status=202)

    def submit(request: Request) -> Response:
        submitted.append(request.headers["Authorization"])
        return Response(status=204)

    site.expect_request("/token", method="POST").respond_with_handler(mint)
    site.expect_request("/indexnow", method="POST").respond_with_handler(accept)
    feed = f"/webmasters/v3/sites/{base}//sitemaps/{base}/sitemap.xml"  # as the receiver decodes the path
    site.expect_request(feed, method="PUT").respond_with_handler(submit)
    site.expect_request("/robots.txt", method="GET").respond_with_data(f"Sitemap: {base}/sitemap.xml\n")
    page = f"{base}/blog/hello"
    event = {"type": "upsert", "url": page, "occurred_at": "2026-11-20T10:00:00Z", "version": 1}
    sqs = session().client("sqs", endpoint_url=moto_endpoint)
    sqs.send_message(QueueUrl=stack.queue_url("IngestQueue"), MessageBody=json.dumps(event))

    # When each function runs from the package: the webhook endpoint (a CMS publishes a second page), the
    # SQS-triggered ones until their queues are empty, then the sweep
    functions = Functions(package, stack, env, tmp_path)
    hooked = Functions(package, stack, {**env, "INGEST_QUEUE_URL": stack.queue_url("IngestQueue"),
                                        "WEBHOOK_SECRET_ID": webhooks}, tmp_path)  # fmt: skip
    sample = Sample.load(ROOT / "events" / "webhooks" / "generic" / "publish.json")
    request = function_url_event("POST", sample.path, sample.signed(KEY), sample.body)
    answer = hooked.invoke("sitemap_updater.handlers.webhook.handler", request)
    assert answer["statusCode"] == 202, answer
    hooked_page = f"{base}/blog/from-any-cms"
    functions.drain()
    swept = functions.invoke("sitemap_updater.handlers.sweep.handler", SCHEDULED)
    expired = functions.invoke("sitemap_updater.handlers.upkeep.handler", SCHEDULED)

    # Then every function ran, and the site has its sitemap file and index
    assert set(functions.invoked) == {"ingest", "rebuild_shard", "rebuild_index", "notify", "sweep", "upkeep"}
    assert hooked.invoked == ["webhook"]
    s3 = session().client("s3", endpoint_url=moto_endpoint)
    bucket = stack.physical["SitemapBucket"]
    names = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))
    files = [n for n in names if n.startswith("sitemap-blog-") and n.endswith(".xml.gz")]
    snapshots = [n for n in names if n.startswith("_state/")]
    # the file, and the objects of snapshots its rebuilds put (the last one holds what its next rebuild reads)
    assert (
        len(files) == 1
        and snapshots
        and all(re.fullmatch(r"_state/sitemap-blog/\w+-\d+-0\.states", n) for n in snapshots)
    )
    assert [n for n in names if not n.startswith("_state/")] == sorted([f"{KEY}.txt", "sitemap.xml", *files])
    text = gzip.decompress(s3.get_object(Bucket=bucket, Key=files[0])["Body"].read()).decode()
    assert f"<loc>{page}</loc>" in text and f"<loc>{hooked_page}</loc>" in text
    index = s3.get_object(Bucket=bucket, Key="sitemap.xml")["Body"].read().decode()
    assert f"<loc>{base}/{files[0]}</loc>" in index
    # and IndexNow got exactly the changed URLs
    host = f"127.0.0.1:{site.port}"
    changed = sorted([page, hooked_page])
    assert indexnow == [{"host": host, "key": KEY, "keyLocation": f"{base}/{KEY}.txt", "urlList": changed}]
    # and Google's token endpoint got a JWT signed with the service account's key, whose token Search Console got
    assert token_requests, "no access token was requested"
    for form in token_requests:
        assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
        claims = jwt_claims(form["assertion"][0], public_key)
        assert claims["iss"] == CLIENT_EMAIL
        assert claims["scope"] == "https://www.googleapis.com/auth/webmasters"
    assert submitted == [f"Bearer {TOKEN}"]
    # and the sweep read robots.txt and found nothing to do
    assert swept == {"requeued": 0, "sites": 1, "sites_left": 0, "unmarked": 0}
    assert expired == {"news_expired": 0, "cleanups": 0, "sites": 1, "sites_left": 0}
    assert [r.path for r, _ in site.log if r.path == "/robots.txt"] == ["/robots.txt"]
    # without reading the Search Console secret (its role may not), which leaves google-auth unloaded
    assert "google.oauth2.service_account" not in functions.modules["sweep"]
    site.check_assertions()


class PackageBackend:
    """The bootstrap state machine's worker, invoked from the built package; its bucket on moto."""

    def __init__(self, functions: Functions, stack: LocalStack) -> None:
        self._functions, self._s3 = functions, session().client("s3", endpoint_url=stack.endpoint_url)
        self._bucket = stack.physical["SitemapBucket"]

    def invoke(self, payload: dict[str, Any]) -> dict[str, Any]:
        return dict(self._functions.invoke("sitemap_updater.handlers.bootstrap.handler", payload))

    def list_objects(self, prefix: str) -> list[dict[str, Any]]:
        found = self._s3.list_objects_v2(Bucket=self._bucket, Prefix=prefix).get("Contents", [])
        return [{"Key": o["Key"], "Size": o["Size"]} for o in found]

    def get_object(self, key: str) -> bytes:
        return bytes(self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read())

    def put_object(self, key: str, body: bytes) -> None:
        self._s3.put_object(Bucket=self._bucket, Key=key, Body=body)


def _against_moto(environment: dict[str, str], moto_endpoint: str, tmp_path: Path) -> dict[str, str]:
    """A function's environment as the stack sets it, its AWS calls sent to moto and no real AWS configuration,
    credentials or instance metadata read from this machine."""
    return {
        **environment,
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def test_the_bootstrap_worker_runs_from_the_built_package(package: Package, moto_endpoint: str, tmp_path: Path) -> None:
    # Given a stack and an export of 30 pages in two objects, one gzip
    base = "https://www.example.com"
    parameters = {"SiteUrl": base, "Sections": "blog", "CdnMaxAgeSeconds": "0", "MaxUrlsPerFile": "10"}
    stack = create_stack(ROOT / "template.yaml", moto_endpoint, parameters, f"package-bootstrap-{package.tag}")
    env = {**_against_moto(stack.environment, moto_endpoint, tmp_path), "NOTIFY_DRY_RUN": "true"}
    functions = Functions(package, stack, env, tmp_path)
    machine = LocalStateMachine(PackageBackend(functions, stack))
    lines = [json.dumps({"type": "upsert", "url": f"{base}/blog/p{i}", "occurred_at": "2026-11-20T10:00:00Z"})
             for i in range(30)]  # fmt: skip
    machine.upload("package", ["\n".join(lines[:15]).encode(), "\n".join(lines[15:]).encode()], gzipped=[1])
    # When the state machine runs its worker from the package, and the index function names the files
    execution = machine.execute("package")
    functions.drain()
    # Then every step ran there, and the site's 30 pages are in its files and its index names them
    assert execution.states[-1] == "Release" and execution.maps["LoadChunks"].items == 2
    s3 = session().client("s3", endpoint_url=moto_endpoint)
    bucket = stack.physical["SitemapBucket"]
    names = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    files = [n for n in names if n.startswith("sitemap-blog-") and n.endswith(".xml.gz")]
    text = "".join(gzip.decompress(s3.get_object(Bucket=bucket, Key=n)["Body"].read()).decode() for n in files)
    assert sorted(re.findall(r"<loc>([^<]+)</loc>", text)) == sorted(f"{base}/blog/p{i}" for i in range(30))
    index = s3.get_object(Bucket=bucket, Key="sitemap.xml")["Body"].read().decode()
    assert all(f"<loc>{base}/{n}</loc>" in index for n in files) and len(files) >= 3
    assert "bootstrap" in functions.invoked and "rebuild_index" in functions.invoked


def test_the_lock_has_a_lambda_wheel_for_every_package(tmp_path: Path) -> None:
    # Given the lock, when pip fetches what an arm64 Python 3.12 Lambda needs, as `sam build` asks for it
    # (manylinux2014: sam build takes no newer glibc tag for python3.12)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--require-hashes",
         "--platform", "manylinux2014_aarch64", "--python-version", "3.12", "--implementation", "cp",
         "--abi", "cp312", "-r", str(REQUIREMENTS), "-d", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    # Then every locked package has a wheel whose hash is in the lock
    assert done.returncode == 0, done.stderr
    wheels = {parse_wheel_filename(p.name)[0]: str(parse_wheel_filename(p.name)[1]) for p in tmp_path.glob("*.whl")}
    assert wheels == locked()


def test_the_lock_satisfies_requirements_in() -> None:
    # Given what requirements.in asks for and what the lock pins
    wanted = [
        Requirement(line.split("#")[0].strip())
        for line in (ROOT / "functions" / "requirements.in").read_text(encoding="utf-8").splitlines()
        if line.split("#")[0].strip()
    ]
    pins = locked()
    # Then every requirement is pinned at a version it allows (requirements.in edited without `make lock` fails)
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins and requirement.specifier.contains(pins[name]), f"{requirement}: run `make lock`"
    # and pyproject.toml asks for the same (plus boto3, which only the CLI uses)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert sorted(map(str, wanted)) == sorted(str(Requirement(r)) for r in project if not r.startswith("boto3"))
    # and every pin has a hash
    blocks = re.split(r"\n(?=[A-Za-z0-9])", REQUIREMENTS.read_text(encoding="utf-8"))
    assert all("--hash=sha256:" in block for block in blocks if "==" in block)
