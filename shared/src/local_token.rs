//! Local bearer tokens: HS256 tokens signed with a secret that the local cloud runner, `make
//! token` and (under `sam local` only) the functions share, standing in for the issuer's RSA
//! keys.
//!
//! This is for local development only. In the cloud, Cognito signs the tokens and API
//! Gateway's JWT authorizer verifies them against the issuer's published keys; the functions
//! read the claims it verified ([`crate::auth`]). The runner's authorizer
//! (`infra/local-cloud`) verifies these tokens the same way for `make dev`, and the functions
//! verify them themselves only where SAM CLI runs them, since it runs no JWT authorizer.
//!
//! The signing and the signature check are `jsonwebtoken`'s, on aws-lc-rs (the crypto the
//! SDK's TLS already builds); this module chooses what is accepted (HS256 only, `exp`
//! required, no leeway, the caller's clock) and says why a token is refused.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Map, Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The secret the runner uses when `LOCAL_JWT_SECRET` is not set. It is **not a secret**: it
/// is written here so that anyone can mint tokens for their own local API, which is the point.
pub const DEFAULT_LOCAL_SECRET: &str = "local-cloud-dev-secret";

/// The issuer of tokens made by [`local_token`].
pub const LOCAL_ISSUER: &str = "local-cloud";

/// Why a token was refused. The `Display` texts are the `error_description`s that the gateway
/// puts in its `www-authenticate` header, in API Gateway's wording where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token has an invalid signature")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token's signing algorithm is not supported (HS256 only)")]
    UnsupportedAlgorithm,
}

/// Why a token could not be signed: an empty secret (HMAC keys of no bytes are refused), or
/// the JWT library's own reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot sign a local token: {0}")]
pub struct SignError(String);

/// Signs `claims` (a JSON object) into a compact HS256 token (RFC 7519: unpadded base64url
/// parts, the header `{"typ":"JWT","alg":"HS256"}`).
pub fn sign(secret: &[u8], claims: &Value) -> Result<String, SignError> {
    if secret.is_empty() {
        return Err(SignError("the secret is empty".to_owned()));
    }
    let key = EncodingKey::from_secret(secret).map_err(|err| SignError(err.to_string()))?;
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key)
        .map_err(|err| SignError(err.to_string()))
}

/// Verifies an HS256 token and answers its claims. `exp` is required, `nbf` honoured when
/// present; both are compared with `now_unix` (seconds) without leeway, here rather than by
/// the library (which reads the system clock and allows a minute), so that a caller and its
/// tests decide what "now" is. `aud` is not checked: local tokens have none.
pub fn verify(secret: &[u8], token: &str, now_unix: i64) -> Result<Map<String, Value>, JwtError> {
    // No token carries a valid signature under an empty secret.
    let key = DecodingKey::from_secret(secret).map_err(|_| JwtError::BadSignature)?;
    // Only HS256 is accepted, checked before the signature, so that `alg: none` (or RS256
    // signed with the secret as a "public key") can never be accepted.
    let mut validation = Validation::new(Algorithm::HS256);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
        .map_err(|err| match err.kind() {
            ErrorKind::InvalidSignature => JwtError::BadSignature,
            ErrorKind::InvalidAlgorithm => JwtError::UnsupportedAlgorithm,
            _ if names_another_algorithm(token) => JwtError::UnsupportedAlgorithm,
            _ => JwtError::Malformed,
        })?
        .claims;

    let exp = numeric_date(claims.get("exp"))?.ok_or(JwtError::Malformed)?;
    if now_unix as f64 >= exp {
        return Err(JwtError::Expired);
    }
    if let Some(nbf) = numeric_date(claims.get("nbf"))?
        && (now_unix as f64) < nbf
    {
        return Err(JwtError::NotYetValid);
    }
    Ok(claims)
}

/// Whether a token the library could not read has a header naming an algorithm other than
/// HS256 (`none`, which the library has no name for): refused as unsupported, not malformed,
/// so that the gateway's `error_description` says why.
fn names_another_algorithm(token: &str) -> bool {
    use base64::Engine as _;
    #[derive(serde::Deserialize)]
    struct Header {
        alg: String,
    }
    let header = token.split('.').next().unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|json| serde_json::from_slice::<Header>(&json).ok())
        .is_some_and(|header| header.alg != "HS256")
}

/// A token for a local user: `sub`, `cognito:groups` (as Cognito puts it, when non-empty),
/// `iat`, `exp`, `iss` and `token_use` like a Cognito access token.
pub fn local_token(
    secret: &[u8],
    sub: &str,
    groups: &[String],
    ttl: Duration,
) -> Result<String, SignError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut claims = json!({
        "sub": sub,
        "iat": now,
        "exp": now.saturating_add(ttl.as_secs()),
        "iss": LOCAL_ISSUER,
        "token_use": "access",
    });
    if !groups.is_empty() {
        claims["cognito:groups"] = json!(groups);
    }
    sign(secret, &claims)
}

/// A NumericDate claim (seconds, possibly fractional); absent is `None`, anything else that is
/// not a number makes the token malformed.
fn numeric_date(value: Option<&Value>) -> Result<Option<f64>, JwtError> {
    match value {
        None => Ok(None),
        Some(value) => value.as_f64().map(Some).ok_or(JwtError::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    const SECRET: &[u8] = b"test-secret";
    const NOW: i64 = 1_700_000_000;

    /// `header.payload.signature` with the signature computed here, not by the library.
    fn signed_by_hand(header: &str, payload: &[u8]) -> String {
        use hmac::{KeyInit, Mac};
        let signed = format!("{header}.{}", B64.encode(payload));
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET).unwrap();
        mac.update(signed.as_bytes());
        format!("{signed}.{}", B64.encode(mac.finalize().into_bytes()))
    }

    fn claims(exp: i64) -> Value {
        json!({"sub": "alice", "exp": exp, "cognito:groups": ["admin", "ops"]})
    }

    #[test]
    fn round_trip() {
        let token = sign(SECRET, &claims(NOW + 60)).unwrap();
        let verified = verify(SECRET, &token, NOW).unwrap();
        assert_eq!(verified["sub"], "alice");
        assert_eq!(verified["cognito:groups"], json!(["admin", "ops"]));
    }

    #[test]
    fn local_token_round_trip() {
        let token = local_token(
            SECRET,
            "bob",
            &["admin".to_owned()],
            Duration::from_secs(60),
        )
        .unwrap();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let verified = verify(SECRET, &token, now).unwrap();
        assert_eq!(verified["sub"], "bob");
        assert_eq!(verified["cognito:groups"], json!(["admin"]));
        assert_eq!(verified["iss"], LOCAL_ISSUER);
        assert_eq!(verified["token_use"], "access");

        let no_groups = local_token(SECRET, "bob", &[], Duration::from_secs(60)).unwrap();
        let verified = verify(SECRET, &no_groups, now).unwrap();
        assert!(!verified.contains_key("cognito:groups"));
    }

    #[test]
    fn tampered_payload_is_refused() {
        let token = sign(SECRET, &claims(NOW + 60)).unwrap();
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = B64.encode(br#"{"sub":"mallory","exp":99999999999}"#);
        parts[1] = &forged;
        assert_eq!(
            verify(SECRET, &parts.join("."), NOW),
            Err(JwtError::BadSignature)
        );
    }

    #[test]
    fn wrong_secret_is_refused() {
        let token = sign(b"another-secret", &claims(NOW + 60)).unwrap();
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::BadSignature));
    }

    #[test]
    fn expired_is_refused() {
        let token = sign(SECRET, &claims(NOW)).unwrap();
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Expired));
        assert!(verify(SECRET, &token, NOW - 1).is_ok());
    }

    #[test]
    fn missing_exp_is_refused() {
        let token = sign(SECRET, &json!({"sub": "alice"})).unwrap();
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
        let token = sign(SECRET, &json!({"sub": "alice", "exp": "tomorrow"})).unwrap();
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
    }

    #[test]
    fn not_before_is_honoured() {
        let token = sign(SECRET, &json!({"exp": NOW + 60, "nbf": NOW + 10})).unwrap();
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::NotYetValid));
        assert!(verify(SECRET, &token, NOW + 10).is_ok());
    }

    #[test]
    fn alg_none_is_refused() {
        let header = B64.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = B64.encode(claims(NOW + 60).to_string());
        let unsigned = format!("{header}.{payload}.");
        assert_eq!(
            verify(SECRET, &unsigned, NOW),
            Err(JwtError::UnsupportedAlgorithm)
        );
        let header = B64.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        let token = format!("{header}.{payload}.c2ln");
        assert_eq!(
            verify(SECRET, &token, NOW),
            Err(JwtError::UnsupportedAlgorithm)
        );
    }

    #[test]
    fn garbage_is_malformed() {
        for garbage in [
            "",
            "abc",
            "a.b",
            "a.b.c.d",
            "!!!.???.***",
            "bm90IGpzb24.e30.c2ln",
        ] {
            assert_eq!(
                verify(SECRET, garbage, NOW),
                Err(JwtError::Malformed),
                "{garbage:?}"
            );
        }
        // A valid signature over a payload that is not an object, or not JSON.
        let token = sign(SECRET, &json!([1, 2])).unwrap();
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
        let header = B64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let token = signed_by_hand(&header, b"not json");
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
    }

    #[test]
    fn a_token_is_three_unpadded_base64url_parts_with_the_hs256_header() {
        let token = sign(SECRET, &claims(NOW + 60)).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        assert!(!token.contains(['=', '+', '/']), "{token}");
        let header: Value = serde_json::from_slice(&B64.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "HS256", "typ": "JWT"}));
        let payload: Value = serde_json::from_slice(&B64.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(payload, claims(NOW + 60));
    }

    #[test]
    fn a_token_signed_elsewhere_by_hand_is_accepted() {
        // As the Artillery scenarios' auth.js makes them: its own header bytes, HMAC-SHA256
        // over `header.payload`.
        let header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";
        let token = signed_by_hand(header, claims(NOW + 60).to_string().as_bytes());
        assert_eq!(verify(SECRET, &token, NOW).unwrap()["sub"], "alice");
    }

    #[test]
    fn an_empty_secret_signs_nothing_and_verifies_nothing() {
        assert!(sign(b"", &claims(NOW + 60)).is_err());
        let token = sign(SECRET, &claims(NOW + 60)).unwrap();
        assert_eq!(verify(b"", &token, NOW), Err(JwtError::BadSignature));
    }
}
