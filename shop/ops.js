// Operations (the admin group): create a sale (POST /seckill/activities) and publish it
// (POST /seckill/activities/{id}/publish), which has its page written; the API's messages
// shown, and the page's link once the page writer stored it.
"use strict";

(() => {
  const form = document.getElementById("create");
  const saleId = document.getElementById("sale-id");

  function localInput(date) {
    const pad = (n) => String(n).padStart(2, "0");
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T` +
      `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  }

  function checkAccess() {
    const claims = shop.claims();
    if (!claims) shop.say("access", "Sign in as an operator to create and publish sales.");
    else if (!shop.groups(claims).includes("admin")) {
      shop.say("access", `${claims.sub} is not in the admin group: the API will refuse.`, "error");
    }
  }

  function cents(text) {
    const [units, fraction = ""] = text.trim().split(".");
    return Number(units) * 100 + Number(fraction.padEnd(2, "0"));
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!form.checkValidity()) {
      const invalid = form.querySelector(":invalid");
      shop.say("message", `Check ${form.querySelector(`label[for="${invalid.id}"]`).textContent}.`, "error");
      invalid.focus();
      return;
    }
    const v = (name) => form.elements[name].value.trim();
    const body = {
      productId: v("productId"),
      title: v("title"),
      priceCents: cents(v("price")),
      stock: Number(v("stock")),
      perUserLimit: Number(v("perUserLimit")),
      startsAt: new Date(v("startsAt")).toISOString(),
      endsAt: new Date(v("endsAt")).toISOString(),
    };
    if (form.elements.reservationRequired.checked) {
      body.reservationRequired = true;
      body.reservationOpensAt = v("reservationOpensAt") ? new Date(v("reservationOpensAt")).toISOString() : "";
    }
    const answer = await shop.api("POST", "/seckill/activities", body);
    if (answer.status === 201) {
      saleId.value = answer.body.id;
      shop.say("message", `Created sale ${answer.body.id} (${answer.body.state}): publish it to open its page.`, "ok");
    } else {
      shop.say("message", shop.problem(answer), "error");
    }
  });

  document.getElementById("publish").addEventListener("click", async () => {
    const id = saleId.value.trim();
    const published = document.getElementById("published");
    published.textContent = "";
    const answer = await shop.api("POST", `/seckill/activities/${encodeURIComponent(id)}/publish`);
    if (answer.status !== 200) {
      shop.say("message", shop.problem(answer), "error");
      return;
    }
    // The page is stored by the page writer a moment later: the link once it is there.
    const href = `/shop/sales/${encodeURIComponent(answer.body.id)}`;
    shop.say("message", `Published sale ${answer.body.id}; its page is being written…`, "ok");
    const deadline = Date.now() + 30_000;
    while ((await fetch(href, { method: "HEAD", cache: "no-store" })).status !== 200) {
      if (Date.now() > deadline) {
        shop.say("message", `Published sale ${answer.body.id}, but its page is not there yet: publish it again.`, "error");
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    shop.say("message", `Published sale ${answer.body.id}.`, "ok");
    const link = document.createElement("a");
    link.id = "sale-page";
    link.href = href;
    link.textContent = `Open the sale's page: ${answer.body.title}`;
    published.append(link);
  });

  document.addEventListener("DOMContentLoaded", () => {
    checkAccess();
    const start = new Date(Date.now() + 60_000);
    form.elements.startsAt.value = localInput(start);
    form.elements.endsAt.value = localInput(new Date(start.getTime() + 3_600_000));
  });
})();
