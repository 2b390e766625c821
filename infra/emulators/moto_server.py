"""moto's standalone server, with DynamoDB requests serialized and AWS's transaction
conflicts modelled.

Same as the ``moto_server`` command (every service on one port, routed by the request's
signature and ``X-Amz-Target``, so one ``AWS_ENDPOINT_URL`` serves them all), with two
differences: requests whose ``X-Amz-Target`` starts with ``DynamoDB`` (both
``DynamoDB_20120810.*`` and ``DynamoDBStreams_20120810.*``) are handled one at a time, and
DynamoDB writes conflict with the transactions in flight as they do in AWS.

Serialization. moto's DynamoDB backend is not safe under concurrent requests. Its own
``TransactWriteItems`` deep-copies every table it touches as a rollback backup (and puts
that copy back when a condition fails); a request that changes the table while the copy
runs makes the transaction fail with HTTP 500, and a rollback can undo another request's
write. Real DynamoDB has no such limit, so product code must not retry around it: the
emulator serializes instead. Streams requests share the lock because their records are
produced by the same table code.

The same requests also empty moto's instance registry for DynamoDB models once they
finish. moto records every model object it ever creates (``BaseModel.instances_tracked``,
read only by the ``/moto-api/data.json`` dashboard), deep copies included, so each
transaction leaks a full copy of the tables it touched: measured with 16 clients, 800
two-item transactions left 460 MB resident, and 3 GB on a table with a stream. Emptying
it costs the dashboard its DynamoDB view and nothing else.

moto's ``TransactWriteItems`` is also replaced (``moto_transactions.py``) by one that checks
every condition before writing anything, as DynamoDB does: moto's own version writes, then
swaps a copy of the table back in on a failed condition, which leaves DynamoDB Streams
readers with phantom records and deaf to every later write.

Everything else (SQS in particular, whose ``ReceiveMessage`` long polls with
``WaitTimeSeconds`` hold a request open for up to 20 s) stays concurrent on werkzeug's
threaded server, exactly as in ``moto_server``.

Transaction conflicts. The lock above means two requests never overlap inside moto, so
without help nothing would ever conflict locally, while in AWS concurrent writers of one
item do, and code that works here would meet its first ``TransactionConflict`` in the
cloud. ``TransactionConflicts`` therefore applies AWS's rules ("Transaction conflict
handling" in the DynamoDB developer guide) in front of the lock:

* A ``TransactWriteItems`` holds every item it includes (``Put``, ``Update``, ``Delete``
  and ``ConditionCheck`` alike) from its arrival at this server until its answer has been
  produced, its wait for the lock included. An item is (account, region, table, primary
  key); the key is the ``Key`` map, or for a ``Put`` the key attributes of ``Item`` by the
  table's key schema, compared canonically (numbers by value).
* A transaction that arrives while another one holds one of its items is cancelled at
  once: HTTP 400 ``TransactionCanceledException`` with one cancellation reason per item in
  request order, ``TransactionConflict`` for each held item and ``None`` for the others.
* A ``PutItem``, ``UpdateItem`` or ``DeleteItem`` that arrives while a transaction holds its
  item is refused at once with HTTP 400 ``TransactionConflictException``. A single-item
  write holds nothing, so it never makes a later transaction conflict.
* A request refused this way never reaches moto, never takes the lock and holds nothing.
  A request this model cannot place (malformed, a table moto does not know, one item
  twice in a transaction) is passed on untouched and moto gives its own answer.

Where this is stricter than AWS: a request's in-flight window includes its wait behind
the emulator's lock, which every DynamoDB request shares whatever its table, so under
load an item stays held for as long as the whole queue is long (hundreds of milliseconds
here, tens in AWS), and conflicts are MORE frequent locally than in the cloud.
Where it is looser: ``BatchWriteItem`` and ``TransactGetItems`` are not modelled (this
project uses neither), nor are ``ClientRequestToken`` idempotency and its
``TransactionInProgressException`` (moto ignores the token).

Switch: ``--conflicts on`` (the default) or ``off``; ``start.sh`` passes
``DYNAMODB_CONFLICTS``. Load tests that want the emulator's raw throughput turn it off.

Endpoints served here, never forwarded to moto:
    GET  /_local/conflicts[?table=NAME]
         {"enabled": true, "tables": {"NAME": {"transactionConflicts": n,
                                                "writeConflicts": m}}}
         per table: transactions cancelled with TransactionConflict (counted once per
         table holding a conflicting item) and single-item writes refused with
         TransactionConflictException; with ?table=, that table's entry only (zeros when
         none).
    POST /_local/hold-dynamodb?ms=N   (1 <= N <= 5000)
         takes the DynamoDB lock, holds it N ms, then answers {"heldMs": N}: DynamoDB
         requests that arrive meanwhile wait behind it, so a transaction among them stays
         in flight for a known time. For tests.

Run with the Python of the moto venv (``infra/python/ensure-venv.sh moto``):
    python moto_server.py --host 127.0.0.1 --port 5000 [--conflicts on|off]
"""

import argparse
import io
import json
import os
import signal
import sys
import threading
import time
import uuid
import zlib
from decimal import Decimal, InvalidOperation
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.core.model_instances import model_data
from moto.core.responses import BaseResponse
from moto.dynamodb.exceptions import ResourceNotFoundException
from moto.dynamodb.models import dynamodb_backends
from moto.iam.models import get_account_id_from
from werkzeug.serving import run_simple

import moto_transactions

DYNAMODB_MODEL_SERVICES = ("dynamodb", "dynamodbstreams")


class SerializeDynamoDB:
    """WSGI middleware: one DynamoDB or DynamoDB Streams request at a time."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        with self.lock:
            try:
                # Drain the body inside the lock: a WSGI app may do its work lazily
                # while the server iterates the response, which would escape the lock.
                result = self.app(environ, start_response)
                try:
                    return [b"".join(result)]
                finally:
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
            finally:
                forget_dynamodb_instances()


def forget_dynamodb_instances():
    """Drop moto's dashboard-only references to DynamoDB model objects (see above)."""
    for service in DYNAMODB_MODEL_SERVICES:
        for model in list(model_data.get(service, {}).values()):
            model.instances_tracked.clear()


DYNAMODB_TARGET = "DynamoDB_20120810."
SINGLE_ITEM_WRITES = {"PutItem", "UpdateItem", "DeleteItem"}
TRANSACTION_OPERATIONS = {"ConditionCheck", "Put", "Delete", "Update"}
ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
ONGOING = "Transaction is ongoing for the item"
CANCELLED = (
    "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]"
)
MAX_HOLD_MS = 5000


class TransactionConflicts:
    """WSGI middleware in front of ``SerializeDynamoDB``: AWS's transaction conflicts.

    It sees every request at its arrival, before the lock, which is where an item starts
    being in flight (see the module docstring for the model), and it serves the
    ``/_local/`` endpoints. ``held`` is the set of items that transactions hold now; one
    item is held by at most one transaction, because a second one is cancelled.
    """

    def __init__(self, serialized, enabled):
        self.serialized = serialized
        self.enabled = enabled
        self.mutex = threading.Lock()  # guards held and counters; never waits on moto
        self.held = set()
        self.counters = {}  # table name -> {"transactionConflicts": n, "writeConflicts": m}

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/_local/"):
            return self.local(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        operation = ""
        if target.startswith(DYNAMODB_TARGET):
            operation = target.removeprefix(DYNAMODB_TARGET)
        if not self.enabled or (
            operation != "TransactWriteItems" and operation not in SINGLE_ITEM_WRITES
        ):
            return self.serialized(environ, start_response)

        request = read_json_body(environ)
        backend = dynamodb_backend(environ)
        if operation == "TransactWriteItems":
            items = transaction_items(backend, request)
            if items is None:
                return self.serialized(environ, start_response)
            with self.mutex:
                conflicting = [item in self.held for item in items]
                if not any(conflicting):
                    self.held.update(items)
                else:
                    for table in {item[2] for item, hit in zip(items, conflicting) if hit}:
                        self.count(table, "transactionConflicts")
            if any(conflicting):
                return transaction_cancelled(start_response, conflicting)
            try:
                # The inner app drains its answer inside the lock: once it returns, the
                # answer exists and the items are no longer in flight.
                return self.serialized(environ, start_response)
            finally:
                with self.mutex:
                    self.held.difference_update(items)

        item = None
        if isinstance(request, dict):
            item = item_identity(backend, request.get("TableName"),
                                 request.get("Item" if operation == "PutItem" else "Key"))
        if item is not None:
            with self.mutex:
                refused = item in self.held
                if refused:
                    self.count(item[2], "writeConflicts")
            if refused:
                return json_error(start_response, "TransactionConflictException",
                                  {"message": ONGOING})
        return self.serialized(environ, start_response)

    def count(self, table, counter):
        """Called with ``mutex`` held."""
        self.counters.setdefault(table, zero_counters())[counter] += 1

    def local(self, environ, start_response):
        """The ``/_local/`` endpoints (module docstring)."""
        path = environ["PATH_INFO"]
        method = environ.get("REQUEST_METHOD", "GET")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        routes = {"/_local/conflicts": "GET", "/_local/hold-dynamodb": "POST"}
        if path not in routes:
            return json_answer(start_response, "404 Not Found",
                               {"message": f"no endpoint {path}"})
        if method != routes[path]:
            return json_answer(start_response, "405 Method Not Allowed",
                               {"message": f"{path} takes {routes[path]}"},
                               [("Allow", routes[path])])
        if path == "/_local/conflicts":
            with self.mutex:
                if "table" in query:
                    names = query["table"][-1:]
                    tables = {name: dict(self.counters.get(name, zero_counters()))
                              for name in names}
                else:
                    tables = {name: dict(entry) for name, entry in self.counters.items()}
            return json_answer(start_response, "200 OK",
                               {"enabled": self.enabled, "tables": tables})

        raw = query.get("ms", [""])[-1]
        ms = int(raw) if raw.isascii() and raw.isdigit() else 0
        if not 1 <= ms <= MAX_HOLD_MS:
            message = f"ms must be an integer from 1 to {MAX_HOLD_MS}, got {raw!r}"
            return json_answer(start_response, "400 Bad Request", {"message": message})
        with self.serialized.lock:
            time.sleep(ms / 1000)
        return json_answer(start_response, "200 OK", {"heldMs": ms})


def zero_counters():
    return {"transactionConflicts": 0, "writeConflicts": 0}


def read_json_body(environ):
    """The request's JSON body, or None; the bytes are put back for the inner app."""
    length = environ.get("CONTENT_LENGTH", "")
    stream = environ["wsgi.input"]
    if length.isdigit():
        body = stream.read(int(length))
    elif environ.get("wsgi.input_terminated"):
        body = stream.read()  # chunked: werkzeug's input ends where the body does
    else:
        return None
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def transaction_items(backend, request):
    """The items a TransactWriteItems includes, in request order, or None: not placeable."""
    if not isinstance(request, dict) or not isinstance(request.get("TransactItems"), list):
        return None
    items = []
    for entry in request["TransactItems"]:
        if not isinstance(entry, dict) or len(entry) != 1:
            return None
        op_type, op = next(iter(entry.items()))
        if op_type not in TRANSACTION_OPERATIONS or not isinstance(op, dict):
            return None
        item = item_identity(backend, op.get("TableName"),
                             op.get("Item" if op_type == "Put" else "Key"))
        if item is None:
            return None
        items.append(item)
    if len(set(items)) != len(items):
        return None  # moto's ValidationException, as AWS validates before it executes
    return items


def dynamodb_backend(environ):
    """moto's DynamoDB backend for this request's account and region, or None.

    Account and region are resolved as moto resolves them, and the backend is only looked
    up, never created: a region or table moto does not know has nothing to conflict with,
    and moto answers the request with its own error.
    """
    backends = dict.get(dynamodb_backends, request_account(environ))
    return dict.get(backends, request_region(environ)) if backends is not None else None


def item_identity(backend, table_name, attributes):
    """(account, region, table name, canonical key) of the item, or None."""
    if backend is None or not isinstance(table_name, str) or not isinstance(attributes, dict):
        return None
    try:
        table = backend.get_table(table_name)  # by name or ARN
    except ResourceNotFoundException:
        return None
    key = {}
    for name in (table.hash_key_attr, table.range_key_attr):
        if name is None:
            continue
        value = attributes.get(name)
        if not isinstance(value, dict):
            return None
        key[name] = canonical_value(value)
    canonical_key = json.dumps(key, sort_keys=True)
    return (backend.account_id, backend.region_name, table.name, canonical_key)


def canonical_value(value):
    """A key attribute value in one spelling: numbers compare by value, as DynamoDB's do."""
    number = value.get("N")
    if len(value) == 1 and isinstance(number, str):
        try:
            decimal = Decimal(number)
        except InvalidOperation:
            return value
        return {"N": "0" if decimal.is_zero() else str(decimal.normalize())}
    return value


def request_region(environ):
    """The region moto reads for this request (``BaseResponse.get_region_from_url``)."""
    url = environ.get("HTTP_HOST", "") + environ.get("PATH_INFO", "")
    if match := BaseResponse.region_regex.search(url):
        return match.group(1)
    user_agent = environ.get("HTTP_USER_AGENT", "")
    if match := BaseResponse.region_from_useragent_regex.search(user_agent):
        return match.group(1)
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    if "AWS4" in authorization:
        scope = authorization.split(",")[0].split("/")
        if len(scope) > 2:
            return scope[2]
    return BaseResponse.default_region


def request_account(environ):
    """The account moto reads for this request (``BaseResponse.get_current_account``):
    the default one, 123456789012, for the dummy credentials."""
    if "MOTO_ACCOUNT_ID" in os.environ:
        return os.environ["MOTO_ACCOUNT_ID"]
    if "HTTP_X_MOTO_ACCOUNT_ID" in environ:
        return environ["HTTP_X_MOTO_ACCOUNT_ID"]
    match = BaseResponse.access_key_regex.search(environ.get("HTTP_AUTHORIZATION", ""))
    return get_account_id_from(match.group(1) if match else "AKIAEXAMPLE")


def transaction_cancelled(start_response, conflicting):
    """TransactionCanceledException as AWS and moto spell it (``Message`` capitalized)."""
    codes = ["TransactionConflict" if hit else "None" for hit in conflicting]
    reasons = [
        {"Code": code, "Message": ONGOING} if code != "None" else {"Code": "None"}
        for code in codes
    ]
    return json_error(start_response, "TransactionCanceledException", {
        "CancellationReasons": reasons,
        "Message": CANCELLED.format(", ".join(codes)),
    })


def json_error(start_response, error, fields):
    """An AWS JSON 1.0 error answer: what the SDKs read is ``__type`` (or the
    ``X-Amzn-ErrorType`` header) and ``message``/``Message``; botocore also checks
    ``x-amz-crc32`` on DynamoDB answers."""
    document = {"__type": ERROR_PREFIX + error, **fields}
    return json_answer(start_response, "400 Bad Request", document,
                       [("X-Amzn-ErrorType", error)], "application/x-amz-json-1.0")


def json_answer(start_response, status, document, headers=(), content_type="application/json"):
    body = json.dumps(document).encode()
    start_response(status, [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("x-amzn-RequestId", uuid.uuid4().hex),
        ("x-amz-crc32", str(zlib.crc32(body))),
        *headers,
    ])
    return [body]


def _exit_now(*_):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--conflicts", choices=("on", "off"), default="on",
                        help="model DynamoDB transaction conflicts (default on)")
    args = parser.parse_args()

    # moto builds some URLs it hands back from MOTO_PORT; the port we serve on wins.
    os.environ["MOTO_PORT"] = str(args.port)

    # Exit at once on TERM/INT: all state is in memory and meant to go, and a normal
    # interpreter shutdown first garbage-collects every object, which took over 10 s
    # for a backend a load test had grown to a few gigabytes.
    signal.signal(signal.SIGTERM, _exit_now)
    signal.signal(signal.SIGINT, _exit_now)

    moto_transactions.install()
    serialized = SerializeDynamoDB(DomainDispatcherApplication(create_backend_app))
    app = TransactionConflicts(serialized, enabled=args.conflicts == "on")
    run_simple(
        args.host,
        args.port,
        app,
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
