// The cashier: the order's amount and a Pay button, POST /orders/{id}/pay {"method":
// "ONLINE"}; the provider's page when the answer names one, else the answer's status.
"use strict";

(() => {
  const id = shop.param("order");
  const pay = document.getElementById("pay");

  async function load() {
    document.getElementById("order-id").textContent = id || "";
    document.getElementById("back").href = `/shop/order.html?id=${encodeURIComponent(id || "")}`;
    const answer = await shop.api("GET", `/orders/${encodeURIComponent(id || "")}`);
    if (answer.status !== 200) {
      shop.say("message", answer.status === 401 ? "Sign in to pay." : shop.problem(answer), "error");
      return;
    }
    const order = answer.body;
    const cents = order.totalCents ?? order.priceCents * (order.quantity ?? 1);
    document.getElementById("amount").textContent = shop.money(cents);
    document.getElementById("status").textContent = order.status;
    pay.disabled = order.status !== "CONFIRMED";
    if (order.status !== "CONFIRMED") shop.say("message", `This order is ${order.status}: nothing to pay.`);
  }

  pay.addEventListener("click", async () => {
    pay.disabled = true;
    shop.say("message", "Paying…");
    const answer = await shop.api("POST", `/orders/${encodeURIComponent(id)}/pay`, { method: "ONLINE" });
    if (answer.status === 200) {
      const redirect = answer.body.payment && answer.body.payment.redirectUrl;
      if (redirect) {
        location.assign(redirect);
        return;
      }
      document.getElementById("status").textContent = answer.body.status;
      shop.say("message", `The order is ${answer.body.status}.`, "ok");
      return;
    }
    shop.say("message", shop.problem(answer), "error");
    pay.disabled = false;
  });

  document.addEventListener("DOMContentLoaded", load);
})();
