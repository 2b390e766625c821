// The payment sandbox's page (shared/src/seckill/payment/sandbox.html), served by the payment-sandbox
// function: Pay and Fail ask the sandbox for the signed notice, send it to the shop's callback
// and go back to the shop. A file of its own so that the site's Content-Security-Policy needs
// no inline script.
"use strict";

(() => {
  const main = document.getElementById("sandbox");
  const status = document.getElementById("status");
  const buttons = [document.getElementById("pay"), document.getElementById("fail")];
  async function send(outcome) {
    buttons.forEach((b) => { b.disabled = true; });
    status.textContent = outcome === "PAY" ? "Paying..." : "Failing the payment...";
    try {
      // As the buyer (the shop's token in this tab, as the shop's pages keep it): the sandbox
      // signs only for the caller's own order, with the order's amount.
      const token = sessionStorage.getItem("shop.token");
      const signed = await fetch(location.pathname, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ outcome, orderId: main.dataset.order }),
      }).then((r) => r.ok ? r.json() : Promise.reject(new Error("the sandbox answered " + r.status)));
      const delivered = await fetch(signed.callbackUrl, {
        method: "POST",
        headers: { "content-type": "application/json", [main.dataset.header]: signed.signature },
        body: signed.body,
      });
      if (!delivered.ok) throw new Error("the shop refused the callback: " + delivered.status);
      status.textContent = outcome === "PAY" ? "Paid. Taking you back to the shop..." : "Payment failed. Taking you back...";
      location.assign(main.dataset.return);
    } catch (err) {
      status.textContent = String(err.message || err);
      buttons.forEach((b) => { b.disabled = false; });
    }
  }
  document.getElementById("pay").addEventListener("click", () => send("PAY"));
  document.getElementById("fail").addEventListener("click", () => send("FAIL"));
})();
