// Cognito's managed login comes back here with ?code=&state= (or ?error=&state=): the code is
// exchanged for tokens with the PKCE verifier kept at sign-in, then the user goes back to
// their page. Only the answer to the sign-in this tab started is taken: a callback whose state
// is not the pending one is refused and leaves that sign-in pending, so a link cannot cancel
// it. The query's own text (error_description) is never shown: anyone can write a link with
// it, and it would read as the shop's words.
"use strict";

(async () => {
  const query = new URLSearchParams(location.search);
  let saved = null;
  try {
    saved = JSON.parse(sessionStorage.getItem("shop.pkce") || "null");
  } catch {
    saved = null;
  }
  if (!saved || typeof saved.state !== "string" || query.get("state") !== saved.state) {
    shop.say("message", "This sign-in was not started here, or has expired: sign in again.", "error");
    return;
  }
  // The answer to this sign-in: it is used up, whatever it says.
  sessionStorage.removeItem("shop.pkce");
  if (query.has("error") || !query.get("code")) {
    shop.say("message", "Sign-in failed or was cancelled: sign in again.", "error");
    return;
  }
  const cfg = await shop.config();
  const response = await fetch(`https://${cfg.domain}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: cfg.clientId,
      code: query.get("code"),
      redirect_uri: `${location.origin}/shop/callback.html`,
      code_verifier: saved.verifier,
    }),
  });
  if (!response.ok) {
    shop.say("message", `Sign-in failed: the token endpoint answered ${response.status}.`, "error");
    return;
  }
  const tokens = await response.json();
  // The access token: it carries cognito:groups, and the API's authorizer accepts it. Kept
  // here, in this tab, rather than handed on in a URL.
  shop.signedIn(tokens.access_token);
  const back = typeof saved.back === "string" && saved.back.startsWith("/shop/") && !saved.back.startsWith("/shop//")
    ? saved.back
    : "/shop/";
  location.replace(back);
})();
