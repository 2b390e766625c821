// What every page of the shop shares: the signed-in user's token (sessionStorage), sign-in
// through the configured provider (config.json: the runner's development sign-in locally,
// Cognito's managed login with PKCE in the cloud), and calls to the API on this origin.
"use strict";

const shop = (() => {
  const TOKEN = "shop.token";
  // The development sign-in this tab started: {state, back}, state a random nonce.
  const PENDING = "shop.signin";

  // A token handed back in the fragment (#token=...&state=...) by the development sign-in is
  // kept only when it answers the sign-in this tab started: its state is the pending nonce,
  // which is then used up. Any other (a link carrying someone else's token: session fixation)
  // is ignored, and the pending sign-in left as it was. Either way the fragment is removed
  // from the address bar so that it is neither bookmarked nor shared.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.has("token")) {
    history.replaceState(null, "", location.pathname + location.search);
    const pending = pendingSignIn();
    if (pending && fragment.get("token") && fragment.get("state") === pending.state) {
      sessionStorage.removeItem(PENDING);
      sessionStorage.setItem(TOKEN, fragment.get("token"));
    }
  }

  function pendingSignIn() {
    try {
      const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
      return pending && typeof pending.state === "string" && pending.state.length >= 16 ? pending : null;
    } catch {
      return null;
    }
  }

  // Keeps the token of a sign-in this tab completed (the callback page's code exchange).
  function signedIn(token) {
    sessionStorage.setItem(TOKEN, token);
  }

  let configLoaded;
  function config() {
    configLoaded ??= fetch("/shop/config.json", { cache: "no-store" }).then((r) => {
      if (!r.ok) throw new Error("the shop's configuration is missing (/shop/config.json)");
      return r.json();
    });
    return configLoaded;
  }

  function claims() {
    const token = sessionStorage.getItem(TOKEN);
    if (!token) return null;
    try {
      const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const claims = JSON.parse(atob(part));
      if (claims.exp && claims.exp * 1000 < Date.now()) {
        sessionStorage.removeItem(TOKEN);
        return null;
      }
      return claims;
    } catch {
      return null;
    }
  }

  function groups(c) {
    const g = c && c["cognito:groups"];
    if (Array.isArray(g)) return g;
    return typeof g === "string" ? g.replace(/[[\]]/g, "").split(/[ ,]+/) : [];
  }

  function base64url(bytes) {
    return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  // Sends the user to sign in, coming back to this page.
  async function signIn() {
    const cfg = await config();
    const back = location.pathname + location.search;
    // The nonce that the sign-in hands back with its answer, so that only that answer is taken.
    const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
    if (cfg.signIn === "local") {
      sessionStorage.setItem(PENDING, JSON.stringify({ state, back }));
      const query = new URLSearchParams({ return: back, state });
      location.assign(`${cfg.signInUrl}?${query}`);
      return;
    }
    // Authorization code with PKCE (S256): the verifier never leaves this tab.
    const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
    sessionStorage.setItem("shop.pkce", JSON.stringify({ verifier, state, back }));
    const query = new URLSearchParams({
      response_type: "code",
      client_id: cfg.clientId,
      redirect_uri: `${location.origin}/shop/callback.html`,
      scope: "openid email",
      state,
      code_challenge: base64url(new Uint8Array(digest)),
      code_challenge_method: "S256",
    });
    location.assign(`https://${cfg.domain}/oauth2/authorize?${query}`);
  }

  function signOut() {
    sessionStorage.removeItem(TOKEN);
    location.reload();
  }

  // Calls the API; answers {status, body, headers}. The body is the parsed JSON, or null.
  // A public route is called without the token, which it does not need (and which the
  // distribution's cached behaviour would not forward anyway). `extra` adds request headers
  // (e.g. the order route's Idempotency-Key).
  async function api(method, path, body, { anonymous = false, extra = {} } = {}) {
    const headers = { ...extra, accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN);
    if (token && !anonymous) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    let json = null;
    try {
      json = await response.json();
    } catch {
      json = null;
    }
    return { status: response.status, body: json, headers: response.headers };
  }

  // The message of an API error answer, or a description of the status.
  function problem(answer) {
    const b = answer.body;
    if (b && b.error && b.error.message) return b.error.message;
    if (b && b.message) return b.message;
    return `the server answered ${answer.status}`;
  }

  function money(cents) {
    return (cents / 100).toFixed(2);
  }

  // Fills <span id="who"> with the user and a sign-in or sign-out button.
  function showWho() {
    const who = document.getElementById("who");
    if (!who) return;
    who.textContent = "";
    const c = claims();
    const button = document.createElement("button");
    button.type = "button";
    if (c) {
      who.append(`Signed in as ${c.sub}${groups(c).includes("admin") ? " (admin)" : ""} `);
      button.textContent = "Sign out";
      button.addEventListener("click", signOut);
    } else {
      button.textContent = "Sign in";
      button.id = "sign-in";
      button.addEventListener("click", signIn);
    }
    who.append(button);
  }

  function param(name) {
    return new URLSearchParams(location.search).get(name);
  }

  function say(id, text, kind) {
    const el = document.getElementById(id);
    el.textContent = text;
    el.className = kind ? `note ${kind}` : "note";
  }

  document.addEventListener("DOMContentLoaded", showWho);
  return { api, claims, groups, signIn, signedIn, problem, money, param, say, config };
})();
