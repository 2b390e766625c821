// The sale's page: the countdown on the server's clock, the live stock and state polled
// from GET /seckill/activities/{id} about once a second, and the buy button, enabled only
// while the sale is ONGOING, stock remains and the signed-in buyer is under the limit.
"use strict";

(() => {
  const main = document.getElementById("sale");
  const id = main.dataset.saleId;
  const startsAt = Date.parse(main.dataset.startsAt);
  const endsAt = Date.parse(main.dataset.endsAt);
  const limit = Number(main.dataset.perUserLimit);
  const buy = document.getElementById("buy");
  const FINAL = ["CANCELLED", "REJECTED"];

  // Server time minus this browser's, from the answer with the shortest round trip.
  let offset = 0;
  let bestRoundTrip = Infinity;
  let detail = null;
  let bought = null; // the buyer's units of this sale, null when not signed in

  const now = () => Date.now() + offset;

  function span(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const d = Math.floor(s / 86400);
    const hh = String(Math.floor((s % 86400) / 3600)).padStart(2, "0");
    const mm = String(Math.floor((s % 3600) / 60)).padStart(2, "0");
    const ss = String(s % 60).padStart(2, "0");
    return `${d ? `${d}d ` : ""}${hh}:${mm}:${ss}`;
  }

  // The state as of the server's clock now: the last answer's, moved on by the window.
  function state() {
    if (!detail) return null;
    const t = now();
    if (t >= endsAt) return "ENDED";
    if (t < startsAt) return "UPCOMING";
    if (detail.stockRemaining <= 0) return "SOLD_OUT";
    return detail.state === "UPCOMING" ? "ONGOING" : detail.state;
  }

  function render() {
    const s = state();
    const countdown = document.getElementById("countdown");
    const t = now();
    if (s === "UPCOMING") countdown.textContent = `Starts in ${span(startsAt - t)}`;
    else if (s === "ONGOING") countdown.textContent = `Ends in ${span(endsAt - t)}`;
    else countdown.textContent = "";
    const text = {
      UPCOMING: "Not started yet",
      ONGOING: "On sale now",
      SOLD_OUT: "Sold out",
      ENDED: "This sale has ended",
    };
    document.getElementById("state").textContent = s ? text[s] : "Loading the live state…";
    if (detail) {
      document.getElementById("stock-remaining").textContent = String(detail.stockRemaining);
    }
    let why = "";
    let enabled = s === "ONGOING";
    if (s === "SOLD_OUT") {
      buy.textContent = "Sold out";
    } else {
      buy.textContent = "Buy now";
    }
    if (enabled && bought === null) {
      enabled = false;
      why = "Sign in to buy.";
    } else if (enabled && bought >= limit) {
      enabled = false;
      why = `You already hold ${bought} of the ${limit} allowed per buyer.`;
    }
    buy.disabled = !enabled;
    document.getElementById("why").textContent = why;
  }

  async function poll() {
    const sent = Date.now();
    try {
      const answer = await shop.api("GET", `/seckill/activities/${encodeURIComponent(id)}`, undefined, {
        anonymous: true,
      });
      const received = Date.now();
      if (answer.status === 200) {
        detail = answer.body;
        const roundTrip = received - sent;
        const server = Date.parse(detail.serverTime);
        if (!Number.isNaN(server) && roundTrip <= bestRoundTrip) {
          bestRoundTrip = roundTrip;
          offset = server + roundTrip / 2 - received;
        }
      } else {
        document.getElementById("why").textContent = shop.problem(answer);
      }
    } catch (err) {
      document.getElementById("why").textContent = "The sale's live state could not be read; retrying.";
    }
    render();
  }

  // The buyer's units of this sale: their orders of it that still hold units.
  async function loadBought() {
    if (!shop.claims()) {
      bought = null;
      return;
    }
    let units = 0;
    let cursor = null;
    for (let page = 0; page < 10; page++) {
      const query = new URLSearchParams({ limit: "100" });
      if (cursor) query.set("cursor", cursor);
      const answer = await shop.api("GET", `/orders?${query}`);
      if (answer.status !== 200) break;
      for (const order of answer.body.items || []) {
        if (order.saleId === id && !FINAL.includes(order.status)) units += order.quantity ?? 1;
      }
      cursor = answer.body.nextCursor;
      if (!cursor) break;
    }
    bought = units;
  }

  buy.addEventListener("click", () => {
    location.assign(`/shop/checkout.html?sale=${encodeURIComponent(id)}`);
  });

  document.addEventListener("DOMContentLoaded", async () => {
    // The window in the reader's own time zone (the page carries UTC).
    for (const time of document.querySelectorAll("time[datetime]")) {
      time.textContent = new Date(time.dateTime).toLocaleString(undefined, {
        dateStyle: "medium",
        timeStyle: "medium",
      });
    }
    await Promise.all([poll(), loadBought().catch(() => {})]);
    setInterval(poll, 1000);
    setInterval(render, 250);
    setInterval(() => loadBought().catch(() => {}), 10000);
  });
})();
