// Operations, the back office (the admin group): every sale newest first, drafts included
// (GET /seckill/activities, by state, paged), a draft edited (PATCH), a draft published and a
// live sale ended early (POST .../publish, .../end), and one sale's figures (GET
// .../figures). Self-contained: its own section of ops.html, its own messages.
"use strict";

(() => {
  let cursor = null;
  let editing = null;

  function cents(text) {
    const [units, fraction = ""] = text.trim().split(".");
    return Number(units) * 100 + Number(fraction.padEnd(2, "0"));
  }

  function when(iso) {
    return new Date(iso).toLocaleString();
  }

  function button(text, action, sale) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.dataset.action = action;
    b.addEventListener("click", () => act(action, sale));
    return b;
  }

  function row(sale) {
    const tr = document.createElement("tr");
    tr.dataset.saleId = sale.id;
    tr.dataset.state = sale.state;
    for (const text of [sale.title, sale.state, shop.money(sale.priceCents),
      `${sale.stockRemaining} / ${sale.stock}`, when(sale.startsAt), when(sale.endsAt)]) {
      tr.append(Object.assign(document.createElement("td"), { textContent: text }));
    }
    const actions = document.createElement("td");
    if (sale.state === "DRAFT") actions.append(button("Edit", "edit", sale), " ", button("Publish", "publish", sale));
    if (sale.state === "PUBLISHED" && Date.parse(sale.endsAt) > Date.now()) actions.append(button("End now", "end", sale));
    actions.append(" ", button("Figures", "figures", sale));
    if (sale.state !== "DRAFT") {
      const link = Object.assign(document.createElement("a"), { textContent: "page", href: `/shop/sales/${encodeURIComponent(sale.id)}` });
      actions.append(" ", link);
    }
    tr.append(actions);
    return tr;
  }

  async function load(more) {
    const rows = document.getElementById("sales-rows");
    const state = document.getElementById("sales-state").value;
    const query = new URLSearchParams({ limit: "20" });
    if (state) query.set("state", state);
    if (more && cursor) query.set("cursor", cursor);
    const answer = await shop.api("GET", `/seckill/activities?${query}`);
    if (answer.status !== 200) {
      shop.say("sales-message", shop.problem(answer), "error");
      return;
    }
    if (!more) rows.textContent = "";
    for (const sale of answer.body.items) rows.append(row(sale));
    cursor = answer.body.nextCursor;
    document.getElementById("sales-more").hidden = !cursor;
  }

  function showFigures(figures) {
    const text = (id, value) => { document.getElementById(id).textContent = value; };
    document.getElementById("figures").dataset.saleId = figures.saleId;
    text("figures-sale", `"${figures.title}" (${figures.state})`);
    text("figures-sold", String(figures.unitsSold));
    text("figures-revenue", shop.money(figures.revenueCents));
    text("figures-paid", shop.money(figures.paidCents));
    text("figures-awaiting", String(figures.unitsAwaitingPayment));
    text("figures-dynamo", `${figures.dynamo.stockRemaining} / ${figures.dynamo.stock}`);
    text("figures-redis", figures.redis
      ? `${figures.redis.stock}, ${figures.redis.pendingOrders} pending (${figures.redis.pendingUnits} units)`
      : "not in Redis");
    text("figures-refunds", `${figures.refundsDue.count} (${shop.money(figures.refundsDue.amountCents)})`);
    const reservations = figures.reservations;
    text("figures-reservations", reservations
      ? `${reservations.count} (${reservations.orders} orders, ${reservations.conversionPercent}%)`
      : "not required");
    const rows = document.getElementById("figures-rows");
    rows.textContent = "";
    for (const [status, tally] of Object.entries(figures.orders)) {
      const tr = document.createElement("tr");
      tr.dataset.status = status;
      for (const value of [status, String(tally.orders), String(tally.units), shop.money(tally.amountCents)]) {
        tr.append(Object.assign(document.createElement("td"), { textContent: value }));
      }
      rows.append(tr);
    }
    const section = document.getElementById("figures");
    section.hidden = false;
    section.scrollIntoView({ block: "nearest" });
  }

  async function act(action, sale) {
    const path = `/seckill/activities/${encodeURIComponent(sale.id)}`;
    if (action === "figures") {
      const answer = await shop.api("GET", `${path}/figures`);
      if (answer.status === 200) showFigures(answer.body);
      else shop.say("sales-message", shop.problem(answer), "error");
      return;
    }
    if (action === "edit") {
      editing = sale;
      const form = document.getElementById("edit-sale");
      document.getElementById("edit-id").textContent = sale.title;
      form.elements.title.value = sale.title;
      form.elements.price.value = shop.money(sale.priceCents);
      form.elements.stock.value = sale.stock;
      form.elements.perUserLimit.value = sale.perUserLimit;
      form.hidden = false;
      return;
    }
    const answer = await shop.api("POST", `${path}/${action}`);
    if (answer.status === 200) {
      shop.say("sales-message", `${action === "end" ? "Ended" : "Published"} "${answer.body.title}".`, "ok");
      load(false);
    } else {
      shop.say("sales-message", shop.problem(answer), "error");
    }
  }

  document.getElementById("edit-sale").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const body = {
      title: form.elements.title.value.trim(),
      priceCents: cents(form.elements.price.value),
      stock: Number(form.elements.stock.value),
      perUserLimit: Number(form.elements.perUserLimit.value),
    };
    const answer = await shop.api("PATCH", `/seckill/activities/${encodeURIComponent(editing.id)}`, body);
    if (answer.status === 200) {
      form.hidden = true;
      shop.say("sales-message", `Saved the draft "${answer.body.title}".`, "ok");
      load(false);
    } else {
      shop.say("sales-message", shop.problem(answer), "error");
    }
  });

  document.getElementById("edit-cancel").addEventListener("click", () => {
    document.getElementById("edit-sale").hidden = true;
  });
  document.getElementById("sales-refresh").addEventListener("click", () => load(false));
  document.getElementById("sales-state").addEventListener("change", () => load(false));
  document.getElementById("sales-more").addEventListener("click", () => load(true));
  document.addEventListener("DOMContentLoaded", () => {
    if (shop.claims() && shop.groups(shop.claims()).includes("admin")) load(false);
  });
})();
