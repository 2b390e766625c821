// Processor of seckill.yml: an operator creates and publishes a sale, a crowd reads its
// detail page and places orders of one or more units with an address and a payment method;
// buyers who chose to pay online pay through the provider's sandbox, whose notice reaches the
// signed callback, and the others keep cash on delivery. Afterwards the run checks that
// exactly `stock` units were accepted and materialized: sold out, no oversell, no undersell,
// none beyond the per-user limit, every online order PAID and every other one COD.
//
// Settings (environment; defaults in brackets):
//   SECKILL_STOCK [100]          units on sale
//   SECKILL_BUYERS [4 x stock]   buyers the crowd is drawn from (their order lists are read
//                                afterwards; with Cognito each is a user in the pool)
//   SECKILL_PER_USER_LIMIT [2]   the sale's perUserLimit, in units
//   SECKILL_MAX_QUANTITY [2]     each order asks for 1 to this many units (at most the limit)
//   SECKILL_ONLINE_SHARE [0.5]   the share of orders paid online (the rest: cash on delivery)
//   VERIFY_TIMEOUT [60]          seconds the after hook waits for the orders to materialize
//   SECKILL_CHECK_FILE           where the after hook writes its verdict as JSON (optional)
//   THINK_TIME [0]               seconds between reading the detail page and ordering
//   AUTH_MODE, LOCAL_JWT_SECRET, COGNITO_*: see lib/auth.js
//
// The check assumes that the payment window (the template's PaymentWindowSeconds, 900 s by
// default) outlasts the run: an online order is paid within seconds of its confirmation, so
// one cancelled meanwhile would give its units back and the sale would rightly no longer be
// sold out. Paying online needs the sandbox provider (stacks with EnablePaymentSandbox=true).
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const auth = require('./lib/auth');
const { envNumber, randomInt, checkStatus, call, forEachLimited, sleep, newRunId } = require('./lib/common');

const STOCK = Math.max(1, Math.floor(envNumber('SECKILL_STOCK', 100)));
const BUYERS = Math.max(1, Math.floor(envNumber('SECKILL_BUYERS', 4 * STOCK)));
const PER_USER_LIMIT = Math.max(1, Math.floor(envNumber('SECKILL_PER_USER_LIMIT', 2)));
const MAX_QUANTITY = Math.max(1, Math.min(PER_USER_LIMIT, Math.floor(envNumber('SECKILL_MAX_QUANTITY', 2))));
const ONLINE_SHARE = Math.min(1, Math.max(0, envNumber('SECKILL_ONLINE_SHARE', 0.5)));
const VERIFY_TIMEOUT_MS = envNumber('VERIFY_TIMEOUT', 60) * 1000;
const THINK_TIME = envNumber('THINK_TIME', 0);

const buyerKey = (runId, i) => `buyer-${runId}-${i}`;

// before hook, once, in Artillery's main process: the operator (admin group; with Cognito
// the run's only admin, with TOTP set up) creates the sale, open since a minute ago for an
// hour, and publishes it (which preheats Redis). The variables set here reach every virtual
// user and the after hook. If this fails, the run's Cognito users are deleted at once.
async function setupSale(context) {
  const runId = newRunId();
  const operator = `ops-${runId}`;
  const buyers = Array.from({ length: BUYERS }, (_, i) => buyerKey(runId, i));
  const { ids, sessions, usernames } = await auth.prepareUsers(buyers, [operator]);
  try {
    await openSale(context, { runId, operator, buyers, ids, sessions });
  } catch (err) {
    await auth.deleteUsers(usernames);
    throw err;
  }
  if (sessions) context.vars.cognitoSessions = sessions;
  if (usernames) context.vars.cognitoUsers = usernames;
}

async function openSale(context, { runId, operator, buyers, ids, sessions }) {
  const target = context.vars.target;
  const { token } = await auth.session(operator, { admin: true, sessions });

  const now = Date.now();
  const sale = await call(target, 'POST', '/seckill/activities', {
    token,
    expect: [201],
    body: {
      productId: `loadtest-${runId}`,
      title: `Artillery flash sale ${runId}`,
      priceCents: 1999,
      stock: STOCK,
      perUserLimit: PER_USER_LIMIT,
      startsAt: new Date(now - 60_000).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
    },
  });
  await call(target, 'POST', `/seckill/activities/${sale.id}/publish`, { token });
  const detail = await call(target, 'GET', `/seckill/activities/${sale.id}`);
  if (detail.state !== 'ONGOING' || detail.stockRemaining !== STOCK) {
    throw new Error(`the new sale should be ONGOING with ${STOCK} units, it is ${JSON.stringify(detail)}`);
  }
  context.vars.runId = runId;
  context.vars.saleId = sale.id;
  context.vars.stock = STOCK;
  context.vars.buyerIds = buyers.map((k) => ids[k]);
  console.log(`seckill: run ${runId}, sale ${sale.id} published: ${STOCK} units, ${PER_USER_LIMIT} per buyer, ${BUYERS} buyers`);
}

// A buyer from the pool (a pool rather than a new user each time, so the after hook can read
// every buyer's orders).
async function pickBuyer(context) {
  const key = buyerKey(context.vars.runId, randomInt(BUYERS));
  const { token } = await auth.session(key, { sessions: context.vars.cognitoSessions });
  context.vars.token = token;
  context.vars.thinkTime = THINK_TIME;
  // One order attempt, one Idempotency-Key (as the shop's checkout does).
  context.vars.orderKey = crypto.randomUUID();
  context.vars.orderBody = {
    quantity: 1 + randomInt(MAX_QUANTITY),
    paymentMethod: Math.random() < ONLINE_SHARE ? 'ONLINE' : 'COD',
    address: {
      recipient: `Buyer ${key}`,
      line1: `${1 + randomInt(200)} Load Test Street`,
      city: 'Springfield',
      postalCode: String(10000 + randomInt(89999)),
      country: 'US',
    },
  };
}

// The order's body: what pickBuyer chose.
function setOrderBody(requestParams, context, events, next) {
  requestParams.json = context.vars.orderBody;
  return next();
}

// After an accepted online order: wait for its confirmation, open the payment, have the
// sandbox sign its notice (the secret never leaves the stack) and deliver it to the callback,
// as the provider would; the order must then read PAID. Counted as seckill.payments.*.
async function payOnline(context, events) {
  const { target, orderId, token, orderBody } = context.vars;
  if (!orderId || orderBody.paymentMethod !== 'ONLINE') return;
  const deadline = Date.now() + VERIFY_TIMEOUT_MS;
  let order = null;
  while (!order || order.status === 'PENDING') {
    if (Date.now() > deadline) throw new Error(`order ${orderId} was not confirmed in time`);
    order = await call(target, 'GET', `/orders/${orderId}`, { token });
    if (order.status === 'PENDING') await sleep(200);
  }
  if (order.status !== 'CONFIRMED') {
    events.emit('counter', `seckill.payments.skipped_${order.status.toLowerCase()}`, 1);
    return;
  }
  const opened = await call(target, 'POST', `/orders/${orderId}/pay`, { token, body: { method: 'ONLINE' } });
  // As the buyer: the sandbox signs only for the caller's own order, with its amount.
  const signed = await call(target, 'POST', `/sandbox/payments/${opened.payment.paymentId}`, {
    token,
    body: { outcome: 'PAY', orderId },
  });
  const started = Date.now();
  const settled = await call(target, 'POST', signed.callbackUrl, {
    raw: signed.body,
    headers: { 'payment-signature': signed.signature },
  });
  events.emit('histogram', 'seckill.payments.callback_ms', Date.now() - started);
  if (settled.outcome !== 'PAID') throw new Error(`the callback answered ${settled.outcome} for ${orderId}`);
  events.emit('counter', 'seckill.payments.paid', 1);
}

// Order outcomes as counters, which Artillery sums over its workers into the report:
// seckill.orders.accepted (202) and seckill.orders.<code> for the refusals the contract names.
const REFUSALS = {
  409: ['SOLD_OUT', 'NOT_ENOUGH_STOCK', 'LIMIT_REACHED', 'NOT_STARTED', 'ENDED'],
  429: ['RATE_LIMITED'],
};

function countOrder(req, res, context, events, next) {
  if (res.statusCode === 202) {
    events.emit('counter', 'seckill.orders.accepted', 1);
    events.emit('counter', 'seckill.units.accepted', context.vars.orderBody.quantity);
    return next();
  }
  let code = '';
  try {
    code = JSON.parse(res.body).error.code;
  } catch {
    // not the contract's error shape: checkStatus below reports it
  }
  if ((REFUSALS[res.statusCode] || []).includes(code)) {
    events.emit('counter', `seckill.orders.${code.toLowerCase()}`, 1);
    return next();
  }
  return checkStatus({ ...req, okStatus: [] }, res, context, events, next);
}

// after hook, once all virtual users are done: the sale must be sold out, and the buyers'
// order lists must hold exactly `stock` units in orders of this sale that are not REJECTED,
// none of the buyers beyond the per-user limit, every online order PAID and every other COD. A failure sets Artillery's exit code and says why. Then,
// whatever the verdict, the run's Cognito users (buyers and the operator) are deleted.
async function verifySale(context) {
  const { target, saleId, runId, cognitoSessions } = context.vars;
  const deadline = Date.now() + VERIFY_TIMEOUT_MS;
  const verdict = { saleId, stock: STOCK, perUserLimit: PER_USER_LIMIT, buyers: BUYERS };
  const fail = (message) => {
    verdict.ok = false;
    verdict.message = message;
    console.error(`\nSECKILL CHECK FAILED: ${message}`);
    global.artillery.suggestedExitCode = 1;
  };
  try {
    // Redis's live stock: every unit reserved once the crowd is gone.
    const detail = await call(target, 'GET', `/seckill/activities/${saleId}`);
    verdict.finalState = detail.state;
    verdict.stockRemaining = detail.stockRemaining;
    if (detail.state !== 'SOLD_OUT' || detail.stockRemaining !== 0) {
      fail(
        `the sale is ${detail.state} with ${detail.stockRemaining} of ${STOCK} units left after the crowd: ` +
          'too few order attempts for the stock (raise ARRIVAL_RATE or DURATION, or lower SECKILL_STOCK)'
      );
      return;
    }
    // The orders as DynamoDB holds them (list-orders reads the table, so an order shows once
    // the order consumer materialized it): poll until all `stock` are there.
    let byStatus = {};
    let overLimit = 0;
    let unsettled = 0;
    for (let pass = 1; ; pass += 1) {
      byStatus = {};
      overLimit = 0;
      unsettled = 0;
      let units = 0;
      await forEachLimited([...Array(BUYERS).keys()], 8, async (i) => {
        const { token } = await auth.session(buyerKey(runId, i), { sessions: cognitoSessions });
        let mine = 0;
        let cursor = null;
        do {
          const qs = new URLSearchParams({ limit: '100' });
          if (cursor) qs.set('cursor', cursor);
          const page = await call(target, 'GET', `/orders?${qs}`, { token });
          for (const order of page.items.filter((o) => o.saleId === saleId)) {
            byStatus[order.status] = (byStatus[order.status] || 0) + 1;
            if (order.status === 'REJECTED') continue;
            mine += order.quantity || 1;
            const expected = order.paymentMethod === 'COD' ? 'COD' : 'PAID';
            if (order.status !== expected) unsettled += 1;
          }
          cursor = page.nextCursor;
        } while (cursor);
        if (mine > PER_USER_LIMIT) overLimit += 1;
        units += mine;
      });
      const kept = units;
      verdict.units = kept;
      verdict.byStatus = byStatus;
      verdict.passes = pass;
      if (overLimit > 0) return fail(`${overLimit} buyers hold more than ${PER_USER_LIMIT} units`);
      if (kept > STOCK) return fail(`oversold: ${kept} units for a stock of ${STOCK} (${JSON.stringify(byStatus)})`);
      if (kept === STOCK && unsettled === 0) break;
      if (Date.now() > deadline) {
        return fail(
          `${kept} of ${STOCK} units materialized and ${unsettled} orders neither PAID online nor ` +
            `kept for COD after ${VERIFY_TIMEOUT_MS / 1000} s (${JSON.stringify(byStatus)}); ` +
            'is the order consumer running?'
        );
      }
      await sleep(1000);
    }
    verdict.ok = true;
    console.log(
      `\nseckill check ok: sold out, ${STOCK} units in ${JSON.stringify(byStatus)} orders, ` +
        `none beyond ${PER_USER_LIMIT} per buyer, online orders PAID by signed callbacks, the rest COD`
    );
  } catch (err) {
    fail(`could not verify the sale: ${err.message}`);
  } finally {
    if (process.env.SECKILL_CHECK_FILE) {
      fs.writeFileSync(process.env.SECKILL_CHECK_FILE, `${JSON.stringify(verdict, null, 2)}\n`);
    }
    await auth.deleteUsers(context.vars.cognitoUsers);
  }
}

module.exports = { setupSale, pickBuyer, setOrderBody, payOnline, countOrder, verifySale, checkStatus };
