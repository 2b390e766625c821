// The sale's page: the countdown on the server's clock, the live stock and state polled
// from GET /seckill/activities/{id} about once a second, and the buy button, enabled only
// while the sale is ONGOING, stock remains, the signed-in buyer is under the limit and, on a
// sale that requires a reservation (预约), holds one. Before such a sale starts the page
// offers "Reserve" (then "Reserved", with a way to cancel) and shows how many reserved.
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
  let reserved = null; // whether the buyer reserved this sale, null when not known
  const reserve = document.getElementById("reserve");
  const unreserve = document.getElementById("unreserve");

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
    } else if (enabled && detail.reservationRequired && reserved !== true) {
      enabled = false;
      why = "Only buyers who reserved this sale before it started may buy.";
    }
    buy.disabled = !enabled;
    document.getElementById("why").textContent = why;
    renderReservation(s);
  }

  function renderReservation(s) {
    const section = document.getElementById("reservation");
    section.hidden = !(detail && detail.reservationRequired);
    if (section.hidden) return;
    document.getElementById("reservation-count").textContent = String(detail.reservationCount);
    const opensAt = Date.parse(detail.reservationOpensAt);
    const t = now();
    let note = "";
    let canReserve = false;
    if (s !== "UPCOMING") {
      reserve.textContent = reserved ? "Reserved" : "Reservations closed";
    } else if (reserved) {
      reserve.textContent = "Reserved";
    } else {
      reserve.textContent = "Reserve";
      if (t < opensAt) note = `Reservations open in ${span(opensAt - t)}.`;
      else if (!shop.claims()) note = "Sign in to reserve.";
      else canReserve = true;
    }
    reserve.disabled = !canReserve;
    unreserve.hidden = !(reserved && s === "UPCOMING");
    const shown = document.getElementById("reservation-note");
    if (note || !shown.dataset.sticky) shown.textContent = note;
  }

  // Whether the signed-in buyer holds a reservation, and the live count.
  async function loadReserved() {
    if (!shop.claims() || !(detail && detail.reservationRequired)) {
      reserved = null;
      return;
    }
    const answer = await shop.api("GET", `/seckill/activities/${encodeURIComponent(id)}/reservation`);
    if (answer.status === 200) reserved = answer.body.reserved;
  }

  async function setReservation(method) {
    reserve.disabled = true;
    const shown = document.getElementById("reservation-note");
    const answer = await shop.api(method, `/seckill/activities/${encodeURIComponent(id)}/reservation`);
    if (answer.status === 200) {
      reserved = answer.body.reserved;
      detail.reservationCount = answer.body.reservationCount;
      shown.dataset.sticky = "1";
      shown.textContent = reserved ? "You reserved this sale." : "Your reservation is cancelled.";
    } else {
      shown.dataset.sticky = "1";
      shown.textContent = shop.problem(answer);
    }
    render();
  }

  reserve.addEventListener("click", () => setReservation("PUT"));
  unreserve.addEventListener("click", () => setReservation("DELETE"));

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
    await loadReserved().catch(() => {});
    render();
    setInterval(poll, 1000);
    setInterval(render, 250);
    setInterval(() => loadBought().catch(() => {}), 10000);
    setInterval(() => loadReserved().catch(() => {}), 10000);
  });
})();
