// Checkout: quantity, address and payment method, sent as the order's body to
// POST /seckill/activities/{id}/orders; on 202 the order page follows the order.
"use strict";

(() => {
  const saleId = shop.param("sale");
  const form = document.getElementById("checkout");
  const quantity = document.getElementById("quantity");

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
    try {
      const path = `/seckill/activities/${encodeURIComponent(saleId)}/orders`;
      const answer = await shop.api("POST", path, body());
      if (answer.status === 202) {
        location.assign(`/shop/order.html?id=${encodeURIComponent(answer.body.orderId)}`);
        return;
      }
      shop.say("message", shop.problem(answer), "error");
    } catch {
      shop.say("message", "The order could not be sent; check the connection and retry.", "error");
    }
    place.disabled = false;
  });

  document.addEventListener("DOMContentLoaded", load);
})();
