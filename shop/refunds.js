// Operations, refunds due (a section of its own on the ops page): GET /admin/refunds, oldest
// first, a page at a time; each row's Refund button settles it,
// POST /admin/refunds/{paymentId}/{orderId}/settle, and the row shows the state it reached.
"use strict";

(() => {
  const rows = document.getElementById("refunds-rows");
  const more = document.getElementById("refunds-more");
  let cursor = null;

  function cell(row, text) {
    const td = document.createElement("td");
    td.textContent = text;
    row.append(td);
    return td;
  }

  function show(refund) {
    const row = document.createElement("tr");
    row.dataset.payment = refund.paymentId;
    row.dataset.order = refund.orderId;
    cell(row, refund.recordedAt);
    cell(row, refund.orderId);
    cell(row, refund.paymentId);
    cell(row, refund.userId);
    cell(row, `${shop.money(refund.amountCents)} ${refund.currency}`);
    cell(row, refund.reason);
    const state = cell(row, refund.state);
    state.className = "refund-state";
    const action = cell(row, "");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "refund-settle";
    button.textContent = "Refund";
    button.disabled = refund.state !== "DUE";
    button.addEventListener("click", () => settle(refund, button, state));
    action.append(button);
    rows.append(row);
  }

  async function settle(refund, button, state) {
    button.disabled = true;
    const path = `/admin/refunds/${encodeURIComponent(refund.paymentId)}/${encodeURIComponent(refund.orderId)}/settle`;
    const answer = await shop.api("POST", path);
    if (answer.status === 200) {
      state.textContent = answer.body.state;
      shop.say("refunds-message", `Refunded ${shop.money(answer.body.amountCents)} ${answer.body.currency} of order ${answer.body.orderId}.`, "ok");
      return;
    }
    shop.say("refunds-message", shop.problem(answer), "error");
    button.disabled = false;
  }

  async function load(next) {
    const query = next ? `?cursor=${encodeURIComponent(next)}` : "";
    const answer = await shop.api("GET", `/admin/refunds${query}`);
    if (answer.status !== 200) {
      shop.say("refunds-message", shop.problem(answer), "error");
      return;
    }
    if (!next) rows.textContent = "";
    answer.body.items.forEach(show);
    cursor = answer.body.nextCursor;
    more.hidden = !cursor;
    if (!next) {
      shop.say("refunds-message", answer.body.items.length ? "" : "No refund is due.");
    }
  }

  document.getElementById("refunds-load").addEventListener("click", () => load(null));
  more.addEventListener("click", () => load(cursor));
})();
