"""moto's standalone server, with DynamoDB requests serialized.

Same as the ``moto_server`` command (every service on one port, routed by the request's
signature and ``X-Amz-Target``, so one ``AWS_ENDPOINT_URL`` serves them all), with one
difference: requests whose ``X-Amz-Target`` starts with ``DynamoDB`` (both
``DynamoDB_20120810.*`` and ``DynamoDBStreams_20120810.*``) are handled one at a time.

Why: moto's DynamoDB backend is not safe under concurrent requests. Its own
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

Run with the Python of the moto venv (``infra/python/ensure-venv.sh moto``):
    python moto_server.py --host 127.0.0.1 --port 5000
"""

import argparse
import os
import signal
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.core.model_instances import model_data
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


def _exit_now(*_):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    # moto builds some URLs it hands back from MOTO_PORT; the port we serve on wins.
    os.environ["MOTO_PORT"] = str(args.port)

    # Exit at once on TERM/INT: all state is in memory and meant to go, and a normal
    # interpreter shutdown first garbage-collects every object, which took over 10 s
    # for a backend a load test had grown to a few gigabytes.
    signal.signal(signal.SIGTERM, _exit_now)
    signal.signal(signal.SIGINT, _exit_now)

    moto_transactions.install()
    app = SerializeDynamoDB(DomainDispatcherApplication(create_backend_app))
    run_simple(
        args.host,
        args.port,
        app,
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
