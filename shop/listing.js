// The home page's listing (GET /seckill/listing, public, cached a few seconds at the edge):
// upcoming sales with a countdown on the server's clock, live ones linking to their page,
// sold-out and ended ones marked. Polled every 5 s; the countdowns tick every second.
"use strict";

(() => {
  let listing = null;
  // Server time minus local time when the listing was read.
  let skew = 0;

  function countdown(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const pad = (n) => String(n).padStart(2, "0");
    const h = Math.floor(s / 3600);
    return `${h ? `${h}:` : ""}${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
  }

  // The state as of now on the server's clock: the listing's, moved on by the window.
  function state(sale, now) {
    if (sale.state === "ENDED" || now >= Date.parse(sale.endsAt)) return "ENDED";
    if (now < Date.parse(sale.startsAt)) return "UPCOMING";
    return sale.state === "UPCOMING" ? "ONGOING" : sale.state;
  }

  function render() {
    const list = document.getElementById("sales");
    list.textContent = "";
    if (!listing) return;
    if (!listing.length) {
      list.append(Object.assign(document.createElement("li"), { className: "note", textContent: "No sale right now: come back soon." }));
      return;
    }
    const now = Date.now() + skew;
    for (const sale of listing) {
      const s = state(sale, now);
      const item = document.createElement("li");
      item.className = `sale ${s.toLowerCase()}`;
      item.dataset.saleId = sale.id;
      item.dataset.state = s;
      const title = document.createElement(s === "ENDED" ? "span" : "a");
      title.textContent = sale.title;
      if (s !== "ENDED") title.href = `/shop/sales/${encodeURIComponent(sale.id)}`;
      const text = {
        UPCOMING: `starts in ${countdown(Date.parse(sale.startsAt) - now)}`,
        ONGOING: "on sale now",
        SOLD_OUT: "sold out",
        ENDED: "ended",
      }[s];
      const detail = document.createElement("span");
      detail.className = "state";
      detail.textContent = ` · ${shop.money(sale.priceCents)} · ${text}`;
      item.append(title, detail);
      list.append(item);
    }
  }

  async function load() {
    const answer = await shop.api("GET", "/seckill/listing", undefined, { anonymous: true });
    if (answer.status === 200) {
      listing = answer.body.items;
      skew = Date.parse(answer.body.serverTime) - Date.now();
      render();
    } else if (!listing) {
      shop.say("sales", shop.problem(answer), "error");
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    load();
    setInterval(load, 5000);
    setInterval(render, 1000);
  });
})();
