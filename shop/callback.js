// Cognito's managed login comes back here with ?code=&state=: the code is exchanged for
// tokens with the PKCE verifier kept at sign-in, then the user goes back to their page.
"use strict";

(async () => {
  const query = new URLSearchParams(location.search);
  const saved = JSON.parse(sessionStorage.getItem("shop.pkce") || "null");
  sessionStorage.removeItem("shop.pkce");
  if (query.get("error")) {
    shop.say("message", `Sign-in failed: ${query.get("error_description") || query.get("error")}`, "error");
    return;
  }
  if (!saved || query.get("state") !== saved.state || !query.get("code")) {
    shop.say("message", "This sign-in was not started here, or has expired: sign in again.", "error");
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
  // The access token: it carries cognito:groups, and the API's authorizer accepts it.
  location.replace(`${saved.back.startsWith("/shop/") ? saved.back : "/shop/"}#token=${tokens.access_token}`);
})();
