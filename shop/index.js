// The shop's home: the signed-in buyer's orders, each linking to its page.
"use strict";

document.addEventListener("DOMContentLoaded", async () => {
  if (!shop.claims()) return;
  const list = document.getElementById("orders");
  const answer = await shop.api("GET", "/orders?limit=20");
  list.textContent = "";
  if (answer.status !== 200) {
    list.append(Object.assign(document.createElement("li"), { textContent: shop.problem(answer) }));
    return;
  }
  if (!answer.body.items.length) {
    list.append(Object.assign(document.createElement("li"), { textContent: "No orders yet." }));
  }
  for (const order of answer.body.items) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = `/shop/order.html?id=${encodeURIComponent(order.orderId)}`;
    link.textContent = `${order.orderId}: ${order.status}`;
    item.append(link);
    list.append(item);
  }
});
