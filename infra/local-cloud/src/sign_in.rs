//! The development sign-in at `/_local/sign-in`: a page where a developer names a user (and
//! ticks `admin` for an operator) and gets a token the local JWT authorizer accepts, minted
//! with the runner's local secret exactly as `make token` does. In the cloud, people sign in
//! through Cognito's managed login; nothing here exists there.
//!
//! `GET` answers the form. `POST` takes the form (`user=ann&admin=on`) or JSON
//! (`{"user": "ann", "admin": true}`) and answers JSON `{token, sub, groups, expiresInSeconds}`
//! to a JSON request, or a page showing the token to the form. A user name is what the API
//! takes as a user id: 1 to 128 of `A-Z a-z 0-9 - _ .`; anything else is a 400 that says so.
//!
//! The shop's pages send people here with `?return=/shop/...`: the form carries it, and a
//! sign-in through it answers `303` to that page with the token in the URL's fragment
//! (`#token=...`), which never reaches a server or a log. Only same-origin paths under
//! `/shop/` are taken, so the sign-in cannot be made to hand a token to another site. The
//! page also sends `&state=<nonce>`, a random value it keeps in the tab, and gets it back
//! beside the token (`#token=...&state=...`): the page takes a token only with the nonce of
//! the sign-in it started, so a link carrying someone else's token signs no one in.
//!
//! It answers only requests made to the runner itself ([`crate::guard`]): a `Host` that is not
//! the runner's own address or `localhost` with its port (another name resolved to 127.0.0.1:
//! DNS rebinding) and a `POST` from another site's page (signing the developer in as someone
//! of its choosing) are a 403 that says why.

use crate::dashboard::local_answer;
use app::layout::escape;
use bytes::Bytes;
use http::HeaderValue;
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use serde_json::json;
use std::time::Duration;

/// The page's path.
pub(crate) const PATH: &str = "/_local/sign-in";
/// How long a token minted here is accepted: as long as `make token`'s.
const TTL: Duration = Duration::from_secs(3600);
/// The longest body read: a user name and a checkbox.
pub(crate) const MAX_BODY: usize = 4 * 1024;
const MAX_USER: usize = 128;

/// A sign-in request, as the form or JSON says it.
#[derive(Debug, PartialEq, Eq)]
struct SignIn {
    user: String,
    admin: bool,
    /// The page to go back to with the token ([`valid_return`]).
    back_to: Option<String>,
    /// The page's nonce, handed back beside the token ([`valid_state`]).
    state: Option<String>,
}

/// The only pages a token is handed back to.
const RETURN_PREFIX: &str = "/shop/";

/// `path` if it is a page of the shop on this origin: `/shop/...`, no scheme, host, `..`,
/// backslash, fragment or control character.
fn valid_return(path: &str) -> Result<String, String> {
    let fits = path.starts_with(RETURN_PREFIX)
        && path.len() <= 512
        && !path.contains("//")
        && !path.contains("..")
        && !path.contains('\\')
        && !path.contains('#')
        && !path.chars().any(|c| c.is_control() || c == ' ');
    match fits {
        true => Ok(path.to_owned()),
        false => Err(format!(
            "return must be a page of this site under {RETURN_PREFIX}, such as /shop/ops.html"
        )),
    }
}

/// `state` if it is a nonce as the pages make them: 16 to 128 of `A-Z a-z 0-9 - _`.
fn valid_state(state: &str) -> Result<String, String> {
    let fits = (16..=128).contains(&state.len())
        && state
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
    match fits {
        true => Ok(state.to_owned()),
        false => Err("state must be 16 to 128 of A-Z, a-z, 0-9, '-' and '_'".to_owned()),
    }
}

/// The `return` and `state` of a query string, checked.
fn return_of(query: Option<&str>) -> Result<(Option<String>, Option<String>), String> {
    let (mut back_to, mut state) = (None, None);
    for pair in query.unwrap_or_default().split('&') {
        if let Some(value) = pair.strip_prefix("return=") {
            back_to = Some(valid_return(&decode(value))?);
        } else if let Some(value) = pair.strip_prefix("state=") {
            state = Some(valid_state(&decode(value))?);
        }
    }
    Ok((back_to, state))
}

/// The answer to `method` on [`PATH`] with `query` and `body` (none when it was over
/// [`MAX_BODY`] or could not be read; `json`: the request's content type is JSON).
pub(crate) fn respond(
    secret: &[u8],
    method: &Method,
    query: Option<&str>,
    json: bool,
    body: Option<&[u8]>,
) -> Response<Full<Bytes>> {
    match *method {
        Method::GET | Method::HEAD => match return_of(query) {
            Ok((back_to, state)) => {
                page(StatusCode::OK, form(back_to.as_deref(), state.as_deref()))
            }
            Err(problem) => page(StatusCode::BAD_REQUEST, refused(&problem)),
        },
        Method::POST => {
            let asked = match body {
                None => Err(format!("the body is over {MAX_BODY} bytes")),
                Some(body) if json => from_json(body),
                Some(body) => from_form(body),
            };
            match asked {
                Ok(sign_in) => signed_in(secret, &sign_in, json),
                Err(problem) if json => {
                    json_answer(StatusCode::BAD_REQUEST, json!({ "message": problem }))
                }
                Err(problem) => page(StatusCode::BAD_REQUEST, refused(&problem)),
            }
        }
        _ => {
            let mut response = json_answer(
                StatusCode::METHOD_NOT_ALLOWED,
                json!({ "message": "Method Not Allowed: the sign-in answers GET and POST" }),
            );
            response.headers_mut().insert(
                http::header::ALLOW,
                HeaderValue::from_static("GET, HEAD, POST"),
            );
            response
        }
    }
}

fn signed_in(secret: &[u8], sign_in: &SignIn, json: bool) -> Response<Full<Bytes>> {
    let groups: Vec<String> = if sign_in.admin {
        vec!["admin".to_owned()]
    } else {
        Vec::new()
    };
    let token = match crate::jwt::local_token(secret, &sign_in.user, &groups, TTL) {
        Ok(token) => token,
        // The runner's secret is never empty (an empty LOCAL_JWT_SECRET is the default one),
        // but a runner embedded with one answers why rather than panicking.
        Err(err) if json => {
            return json_answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "message": err.to_string() }),
            );
        }
        Err(err) => return page(StatusCode::INTERNAL_SERVER_ERROR, refused(&err.to_string())),
    };
    if let Some(back_to) = &sign_in.back_to {
        let mut response = page(StatusCode::SEE_OTHER, String::new());
        let location = match &sign_in.state {
            Some(state) => format!("{back_to}#token={token}&state={state}"),
            None => format!("{back_to}#token={token}"),
        };
        response.headers_mut().insert(
            http::header::LOCATION,
            HeaderValue::from_str(&location)
                .expect("a checked path, a JWT and a checked nonce are header-safe"),
        );
        return response;
    }
    if json {
        return json_answer(
            StatusCode::OK,
            json!({
                "token": token,
                "sub": sign_in.user,
                "groups": groups,
                "expiresInSeconds": TTL.as_secs(),
            }),
        );
    }
    let who = match sign_in.admin {
        true => format!("{} (admin)", escape(&sign_in.user)),
        false => escape(&sign_in.user),
    };
    page(
        StatusCode::OK,
        format!(
            "{HEAD}<h1>Signed in as {who}</h1>\n<p>Send this token as <code>Authorization: \
             Bearer &lt;token&gt;</code>; it is accepted for {} minutes by this runner only.</p>\n\
             <label for=\"token\">Token</label>\n<textarea id=\"token\" readonly rows=\"6\">{}</textarea>\n\
             <p><a href=\"{PATH}\">Sign in as someone else</a></p>\n</main></body></html>\n",
            TTL.as_secs() / 60,
            escape(&token),
        ),
    )
}

fn refused(problem: &str) -> String {
    format!(
        "{HEAD}<h1>Sign-in refused</h1>\n<p role=\"alert\">{}</p>\n<p><a href=\"{PATH}\">Try again</a></p>\n</main></body></html>\n",
        escape(problem)
    )
}

fn from_json(body: &[u8]) -> Result<SignIn, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Asked {
        user: String,
        #[serde(default)]
        admin: bool,
    }
    let asked: Asked = serde_json::from_slice(body)
        .map_err(|err| format!("expected {{\"user\": \"<name>\", \"admin\": false}}: {err}"))?;
    Ok(SignIn {
        user: valid_user(asked.user.trim())?,
        admin: asked.admin,
        back_to: None,
        state: None,
    })
}

fn from_form(body: &[u8]) -> Result<SignIn, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the form is not UTF-8".to_owned())?;
    let mut user = None;
    let mut admin = false;
    let mut back_to = None;
    let mut state = None;
    for pair in text.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value);
        match name {
            "user" => user = Some(value),
            "admin" => admin = matches!(value.as_str(), "on" | "true" | "1"),
            "return" if !value.is_empty() => back_to = Some(valid_return(&value)?),
            "return" => {}
            "state" if !value.is_empty() => state = Some(valid_state(&value)?),
            "state" => {}
            other => return Err(format!("unknown field {:?}", decode(other))),
        }
    }
    let user = user.ok_or_else(|| "name a user".to_owned())?;
    Ok(SignIn {
        user: valid_user(user.trim())?,
        admin,
        back_to,
        state,
    })
}

/// A form value: `+` is a space, then percent-decoded.
fn decode(value: &str) -> String {
    let spaced = value.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

fn valid_user(user: &str) -> Result<String, String> {
    let fits = !user.is_empty()
        && user.len() <= MAX_USER
        && user
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    match fits {
        true => Ok(user.to_owned()),
        false => Err(format!(
            "a user name is 1 to {MAX_USER} of A-Z, a-z, 0-9, '-', '_' and '.' (the API's user ids)"
        )),
    }
}

fn page(status: StatusCode, html: String) -> Response<Full<Bytes>> {
    local_answer(status, "text/html; charset=utf-8", Bytes::from(html))
}

fn json_answer(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
    local_answer(status, "application/json", Bytes::from(body.to_string()))
}

const HEAD: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>Local sign-in</title></head><body><main>\n";

/// The form, carrying `back_to` and the page's `state` when a page sent the user here.
fn form(back_to: Option<&str>, state: Option<&str>) -> String {
    let hidden: String = [("return", back_to), ("state", state)]
        .into_iter()
        .filter_map(|(name, value)| {
            value.map(|value| {
                format!(
                    "<input type=\"hidden\" name=\"{name}\" value=\"{}\">\n",
                    escape(value)
                )
            })
        })
        .collect();
    FORM.replace("<!-- return -->", &hidden)
}

const FORM: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>Local sign-in</title></head><body><main>\n\
<h1>Local sign-in</h1>\n\
<p>For <code>make dev</code> only: a token for any user name, signed with the runner's local \
secret, as <code>make token</code> mints. In the cloud, sign-in is Cognito's.</p>\n\
<form method=\"post\" action=\"/_local/sign-in\">\n\
<p><label for=\"user\">User name</label>\n\
<input id=\"user\" name=\"user\" required maxlength=\"128\" pattern=\"[A-Za-z0-9._\\-]+\" autocomplete=\"username\"></p>\n\
<p><input id=\"admin\" name=\"admin\" type=\"checkbox\"> <label for=\"admin\">Operator (the \
<code>admin</code> group)</label></p>\n\
<!-- return --><p><button type=\"submit\">Sign in</button></p>\n\
</form>\n</main></body></html>\n";

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    async fn text(response: Response<Full<Bytes>>) -> (StatusCode, String, String) {
        let status = response.status();
        let kind = response.headers()[http::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, kind, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn the_form_mints_a_token_the_authorizer_accepts_for_that_user() {
        let secret = b"test-secret";
        let (status, kind, form) =
            text(respond(secret, &Method::GET, None, false, Some(b""))).await;
        assert_eq!(
            (status, kind.as_str()),
            (StatusCode::OK, "text/html; charset=utf-8")
        );
        assert!(form.contains("<form method=\"post\""), "{form}");

        let (status, _, page) = text(respond(
            secret,
            &Method::POST,
            None,
            false,
            Some(b"user=ann+lee"),
        ))
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
        assert!(page.contains("1 to 128 of"), "{page}");

        let (status, _, page) = text(respond(
            secret,
            &Method::POST,
            None,
            false,
            Some(b"user=ann%2Eo&admin=on"),
        ))
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(page.contains("Signed in as ann.o (admin)"), "{page}");
        let token = page
            .split("readonly rows=\"6\">")
            .nth(1)
            .and_then(|rest| rest.split("</textarea>").next())
            .unwrap();
        let claims = crate::jwt::verify(secret, token, now()).expect("the authorizer accepts it");
        assert_eq!(claims["sub"], "ann.o");
        assert_eq!(claims["cognito:groups"], json!(["admin"]));
    }

    #[tokio::test]
    async fn json_asks_and_is_answered_in_json_and_bad_input_is_a_400_that_says_why() {
        let secret = b"test-secret";
        let (status, kind, body) = text(respond(
            secret,
            &Method::POST,
            None,
            true,
            Some(br#"{"user": "bob"}"#),
        ))
        .await;
        assert_eq!(
            (status, kind.as_str()),
            (StatusCode::OK, "application/json")
        );
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["sub"], "bob");
        assert_eq!(body["groups"], json!([]));
        assert_eq!(body["expiresInSeconds"], 3600);
        let claims = crate::jwt::verify(secret, body["token"].as_str().unwrap(), now()).unwrap();
        assert_eq!(claims["sub"], "bob");
        assert!(claims.get("cognito:groups").is_none(), "{claims:?}");

        for (bad, says) in [
            (&br#"{"user": ""}"#[..], "1 to 128 of"),
            (br#"{"user": "<script>"}"#, "1 to 128 of"),
            (br#"{"name": "bob"}"#, "expected"),
            (b"not json", "expected"),
        ] {
            let (status, _, body) =
                text(respond(secret, &Method::POST, None, true, Some(bad))).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert!(body.contains(says), "{body}");
        }
        let (status, _, body) = text(respond(
            secret,
            &Method::POST,
            None,
            false,
            Some(b"user=bob&role=root"),
        ))
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.contains("unknown field"), "{body}");
        let (status, _, body) = text(respond(secret, &Method::POST, None, false, None)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.contains("over 4096 bytes"), "{body}");
        let (status, _, _) = text(respond(secret, &Method::DELETE, None, false, Some(b""))).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn a_page_of_the_shop_gets_the_token_back_in_the_fragment_and_no_other_place_does() {
        let secret = b"test-secret";
        let query = Some("return=%2Fshop%2Fops.html");
        let (status, _, form) = text(respond(secret, &Method::GET, query, false, None)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            form.contains("name=\"return\" value=\"/shop/ops.html\""),
            "{form}"
        );
        let response = respond(
            secret,
            &Method::POST,
            None,
            false,
            Some(b"user=ops&admin=on&return=%2Fshop%2Fops.html"),
        );
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let location = response.headers()[http::header::LOCATION].to_str().unwrap();
        let token = location.strip_prefix("/shop/ops.html#token=").unwrap();
        let claims = crate::jwt::verify(secret, token, now()).unwrap();
        assert_eq!(claims["sub"], "ops");

        // The page's nonce goes through the form and comes back beside the token.
        let nonce = "Zm9yLXRoaXMtdGFiLW9ubHk";
        let query = format!("return=%2Fshop%2F&state={nonce}");
        let (status, _, form) =
            text(respond(secret, &Method::GET, Some(&query), false, None)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            form.contains(&format!("name=\"state\" value=\"{nonce}\"")),
            "{form}"
        );
        let body = format!("user=ann&return=%2Fshop%2F&state={nonce}");
        let response = respond(secret, &Method::POST, None, false, Some(body.as_bytes()));
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let location = response.headers()[http::header::LOCATION].to_str().unwrap();
        let (token, state) = location
            .strip_prefix("/shop/#token=")
            .and_then(|rest| rest.split_once("&state="))
            .unwrap();
        assert_eq!(state, nonce);
        assert_eq!(
            crate::jwt::verify(secret, token, now()).unwrap()["sub"],
            "ann"
        );
        for bad in [
            "short",
            "not%20a%20nonce%20at%20all",
            "a%26token%3Dx%26state%3Dyyyyyyyyyyy",
        ] {
            let query = format!("return=%2Fshop%2F&state={bad}");
            let (status, _, page) =
                text(respond(secret, &Method::GET, Some(&query), false, None)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
            assert!(page.contains("state must be"), "{page}");
            let body = format!("user=ann&return=%2Fshop%2F&state={bad}");
            let (status, _, _) = text(respond(
                secret,
                &Method::POST,
                None,
                false,
                Some(body.as_bytes()),
            ))
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        }

        for elsewhere in [
            "https://evil.example/shop/",
            "//evil.example/shop/",
            "/shop//evil.example",
            "/shop/../_local/sign-in",
            "/users/me",
            "/shop/\\evil",
        ] {
            let encoded = percent_encoding::utf8_percent_encode(
                elsewhere,
                percent_encoding::NON_ALPHANUMERIC,
            );
            let query = format!("return={encoded}");
            let (status, _, page) =
                text(respond(secret, &Method::GET, Some(&query), false, None)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{elsewhere}");
            assert!(page.contains("a page of this site under /shop/"), "{page}");
            let body = format!("user=ops&{query}");
            let (status, _, _) = text(respond(
                secret,
                &Method::POST,
                None,
                false,
                Some(body.as_bytes()),
            ))
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{elsewhere}");
        }
    }
}
