// The order's page: GET /orders/{id} polled until the order's status is final, so the
// buyer sees PENDING turn CONFIRMED, then PAID, COD, CANCELLED or REJECTED.
"use strict";

(() => {
  const id = shop.param("id");
  const FINAL = ["PAID", "COD", "CANCELLED", "REJECTED"];
  const SAID = {
    PENDING: "Received: waiting for confirmation…",
    CONFIRMED: "Confirmed",
    PAID: "Paid. Thank you!",
    COD: "Confirmed: kept for delivery, to be paid in cash on delivery.",
    CANCELLED: "Cancelled: it was not paid in time, and its units went back on sale.",
    REJECTED: "Rejected: the last units were gone.",
  };
  let timer = null;

  function show(order) {
    document.getElementById("status").textContent = order.status;
    document.getElementById("status").dataset.status = order.status;
    const cents = order.totalCents ?? (order.priceCents != null ? order.priceCents * (order.quantity ?? 1) : null);
    document.getElementById("amount").textContent = cents != null ? shop.money(cents) : "–";
    document.getElementById("quantity").textContent = order.quantity != null ? String(order.quantity) : "–";
    const address = order.address;
    document.getElementById("address").textContent = address
      ? [address.recipient, address.line1, address.line2, `${address.postalCode} ${address.city}`, address.country]
          .filter(Boolean)
          .join(", ")
      : "–";
    document.getElementById("payment-method").textContent =
      order.paymentMethod === "COD" ? "Cash on delivery" : order.paymentMethod === "ONLINE" ? "Online" : "–";
    const said = order.status === "CONFIRMED" && order.paymentMethod === "COD"
      ? "Confirmed: kept for delivery, to be paid in cash on delivery."
      : SAID[order.status] || order.status;
    shop.say("message", said,
      ["CANCELLED", "REJECTED"].includes(order.status) ? "error" : order.status === "PENDING" ? "" : "ok");
    const next = document.getElementById("next");
    next.textContent = "";
    if (order.status === "CONFIRMED" && order.paymentMethod !== "COD") {
      const link = document.createElement("a");
      link.id = "to-cashier";
      link.href = `/shop/cashier.html?order=${encodeURIComponent(order.orderId)}`;
      link.textContent = "Pay now at the cashier";
      next.append(link);
    }
  }

  async function poll() {
    const answer = await shop.api("GET", `/orders/${encodeURIComponent(id)}`);
    if (answer.status === 200) {
      show(answer.body);
      if (FINAL.includes(answer.body.status)) clearInterval(timer);
    } else if (answer.status === 401) {
      clearInterval(timer);
      shop.say("message", "Sign in to follow your order.", "error");
    } else {
      shop.say("message", shop.problem(answer), "error");
      if (answer.status === 404) clearInterval(timer);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (!id) {
      shop.say("message", "No order named.", "error");
      return;
    }
    document.getElementById("order-id").textContent = id;
    poll();
    timer = setInterval(poll, 1000);
  });
})();
