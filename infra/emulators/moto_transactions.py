"""An all-or-nothing ``TransactWriteItems`` for moto 5.2.5's DynamoDB backend.

moto applies a transaction's items one by one and, when a later condition fails, swaps a
deep copy of each table (taken before the transaction) back in. Two things break on that:

* DynamoDB Streams: a stream reader keeps its shard of the old table object, so it sees
  the records of the cancelled items (a phantom event) and then none of the records written
  to the swapped-in table afterwards: after one cancelled transaction, the outbox relay
  never hears of anything again. Measured here: the old reader saw the phantom outbox
  record, a new reader saw only the real ones.
* cost: every transaction deep-copies its whole tables, stream history included, so
  transactions slow down as tables grow (and leak the copies; see moto_server.py).

Real DynamoDB checks every condition first and writes nothing if one fails. This does the
same: phase 1 evaluates all conditions without writing; only if all hold, phase 2 writes.
A write can still fail in phase 2 (an invalid update expression); then the items already
written are put back as they were, in place, and their stream records are removed, so
readers never see them. Nothing is copied but the few items the transaction touches.
"""

import copy

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend

OPERATIONS = {"ConditionCheck", "Put", "Delete", "Update"}


def _key_of(backend, op_type, op):
    if op_type != "Put":
        return op["Key"]
    table = backend.get_table(op["TableName"])
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _check(backend, transact_items):
    """Phase 1: the planned writes, or TransactionCanceledException with one reason per item."""
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    seen = set()
    reasons = []
    planned = []
    for item in transact_items:
        if len(item) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(item.items()))
        if op_type not in OPERATIONS:
            raise ValueError("Unsupported transaction operation")
        table_name = op["TableName"]
        key = _key_of(backend, op_type, op)
        identity = (str(table_name), str(dict(sorted(key.items()))))
        if identity in seen:
            raise MultipleTransactionsException()
        seen.add(identity)

        current = backend.get_item(table_name, key)
        condition = op.get("ConditionExpression")
        if condition is not None:
            holds = get_filter_expression(
                condition,
                op.get("ExpressionAttributeNames"),
                op.get("ExpressionAttributeValues"),
            ).expr(current)
            if not holds:
                old = None
                if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                    old = current.to_json()["Attributes"]
                reasons.append(("ConditionalCheckFailed", ConditionalCheckFailed().message, old))
                continue
        reasons.append((None, None, None))
        if op_type != "ConditionCheck":
            planned.append((op_type, op, table_name, key))
    if any(code is not None for code, _, _ in reasons):
        raise TransactionCanceledException(reasons)
    return planned


def _restore(backend, table_name, key, before, stream_length):
    table = backend.get_table(table_name)
    hash_value, range_value = backend.get_keys_value(table, key)
    if range_value is not None:
        group = table.items[hash_value]
        if before is None:
            group.pop(range_value, None)
        else:
            group[range_value] = before
    elif before is None:
        table.items.pop(hash_value, None)
    else:
        table.items[hash_value] = before
    if table.stream_shard is not None and stream_length is not None:
        del table.stream_shard.items[stream_length:]


def transact_write_items(self, transact_items):
    planned = _check(self, transact_items)
    undo = []
    try:
        for op_type, op, table_name, key in planned:
            table = self.get_table(table_name)
            before = copy.deepcopy(self.get_item(table_name, key))
            stream = table.stream_shard
            undo.append((table_name, key, before, len(stream.items) if stream else None))
            names = op.get("ExpressionAttributeNames")
            values = op.get("ExpressionAttributeValues")
            # Conditions were checked in phase 1 and nothing has changed since: the
            # emulator serializes DynamoDB requests.
            if op_type == "Put":
                self.put_item(table_name, op["Item"], expression_attribute_names=names,
                              expression_attribute_values=values)
            elif op_type == "Delete":
                self.delete_item(table_name, key, expression_attribute_names=names,
                                 expression_attribute_values=values)
            else:
                self.update_item(table_name, key, update_expression=op["UpdateExpression"],
                                 expression_attribute_names=names,
                                 expression_attribute_values=values)
    except Exception:
        for table_name, key, before, stream_length in reversed(undo):
            _restore(self, table_name, key, before, stream_length)
        raise


def install():
    """Replaces moto's TransactWriteItems with the all-or-nothing one above."""
    DynamoDBBackend.transact_write_items = transact_write_items
