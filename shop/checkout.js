// Checkout: quantity, address and payment method, sent as the order's body to
// POST /seckill/activities/{id}/orders with an Idempotency-Key per checkout attempt; on 202
// the order page follows the order.
"use strict";

(() => {
  const saleId = shop.param("sale");
  const form = document.getElementById("checkout");
  const quantity = document.getElementById("quantity");
  // The checkout attempt under way: its Idempotency-Key and the order it was made for.
  let attempt = null;

  async function load() {
    if (!saleId) {
      shop.say("sale-title", "No sale named: open checkout from a sale's page.", "error");
      return;
    }
    const answer = await shop.api("GET", `/seckill/activities/${encodeURIComponent(saleId)}`, undefined, {
      anonymous: true,
    });
    if (answer.status !== 200) {
      shop.say("sale-title", shop.problem(answer), "error");
      return;
    }
    const sale = answer.body;
    document.getElementById("sale-title").textContent =
      `${sale.title}: ${shop.money(sale.priceCents)} each, at most ${sale.perUserLimit} per buyer`;
    quantity.max = String(sale.perUserLimit);
    if (!shop.claims()) shop.say("message", "Sign in to place an order.");
  }

  function value(name) {
    return form.elements[name].value.trim();
  }

  function body() {
    const address = {
      recipient: value("recipient"),
      line1: value("line1"),
      city: value("city"),
      postalCode: value("postalCode"),
      country: value("country").toUpperCase(),
    };
    if (value("line2")) address.line2 = value("line2");
    if (value("phone")) address.phone = value("phone");
    return {
      quantity: Number(quantity.value),
      address,
      paymentMethod: form.elements.paymentMethod.value,
    };
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!shop.claims()) {
      shop.signIn();
      return;
    }
    if (!form.checkValidity()) {
      const invalid = form.querySelector(":invalid");
      const label = form.querySelector(`label[for="${invalid.id}"]`);
      shop.say("message", `Check ${label ? label.textContent : invalid.name}.`, "error");
      invalid.focus();
      return;
    }
    const place = document.getElementById("place");
    place.disabled = true;
    shop.say("message", "Placing the order…");
    // One Idempotency-Key per checkout attempt: a retry of the same order (after a lost
    // answer, a 5xx or a 429) sends the same key, so the server answers the order it may
    // already have taken instead of reserving again; a changed order, or one the server
    // answered for good, gets a new key.
    const order = body();
    const request = JSON.stringify(order);
    if (!attempt || attempt.request !== request) attempt = { key: crypto.randomUUID(), request };
    try {
      const path = `/seckill/activities/${encodeURIComponent(saleId)}/orders`;
      const answer = await shop.api("POST", path, order, {
        extra: { "idempotency-key": attempt.key },
      });
      if (answer.status === 202) {
        location.assign(`/shop/order.html?id=${encodeURIComponent(answer.body.orderId)}`);
        return;
      }
      if (answer.status < 500 && answer.status !== 429) attempt = null;
      shop.say("message", shop.problem(answer), "error");
    } catch {
      shop.say("message", "The order could not be sent; check the connection and retry.", "error");
    }
    place.disabled = false;
  });

  document.addEventListener("DOMContentLoaded", load);
})();
