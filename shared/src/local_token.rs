//! Local bearer tokens: HS256 tokens signed with a secret that the local cloud runner, `make
//! token` and (under `sam local` only) the functions share, standing in for the issuer's RSA
//! keys.
//!
//! This is for local development only. In the cloud, Cognito signs the tokens and API
//! Gateway's JWT authorizer verifies them against the issuer's published keys; the functions
//! read the claims it verified ([`crate::auth`]). The runner's authorizer
//! (`infra/local-cloud`) verifies these tokens the same way for `make dev`, and the functions
//! verify them themselves only where SAM CLI runs them, since it runs no JWT authorizer.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;
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

// Tokens are unpadded base64url (RFC 7515), but some tools pad them; accept both.
const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// `{"alg":"HS256","typ":"JWT"}`, encoded once.
const HEADER_B64: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

fn mac(secret: &[u8]) -> Hmac<Sha256> {
    <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes keys of any length")
}

/// Signs `claims` (a JSON object) into a compact HS256 token.
pub fn sign(secret: &[u8], claims: &Value) -> String {
    let payload = serde_json::to_vec(claims).expect("a JSON value always serializes");
    let mut token = String::with_capacity(HEADER_B64.len() + payload.len() * 4 / 3 + 48);
    token.push_str(HEADER_B64);
    token.push('.');
    B64.encode_string(&payload, &mut token);
    let mut mac = mac(secret);
    mac.update(token.as_bytes());
    let signature = mac.finalize().into_bytes();
    token.push('.');
    B64.encode_string(signature.as_slice(), &mut token);
    token
}

/// Verifies an HS256 token and answers its claims. `exp` is required, `nbf` honoured when
/// present; both are compared with `now_unix` (seconds) without leeway.
pub fn verify(secret: &[u8], token: &str, now_unix: i64) -> Result<Map<String, Value>, JwtError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };

    #[derive(serde::Deserialize)]
    struct Header {
        alg: String,
    }
    let decoded: Header = decode_json(header)?;
    // Checked before the signature so that `alg: none` (or RS256 signed with the secret as a
    // "public key") can never be accepted, whatever the signature part holds.
    if decoded.alg != "HS256" {
        return Err(JwtError::UnsupportedAlgorithm);
    }
    let signature = B64.decode(signature).map_err(|_| JwtError::Malformed)?;
    let signed = &token[..header.len() + 1 + payload.len()];
    let mut mac = mac(secret);
    mac.update(signed.as_bytes());
    // `verify_slice` compares in constant time.
    mac.verify_slice(&signature)
        .map_err(|_| JwtError::BadSignature)?;

    let claims: Map<String, Value> = decode_json(payload)?;
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

/// A token for a local user: `sub`, `cognito:groups` (as Cognito puts it, when non-empty),
/// `iat`, `exp`, `iss` and `token_use` like a Cognito access token.
pub fn local_token(secret: &[u8], sub: &str, groups: &[String], ttl: Duration) -> String {
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

fn decode_json<T: serde::de::DeserializeOwned>(part: &str) -> Result<T, JwtError> {
    let bytes = B64.decode(part).map_err(|_| JwtError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed)
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

    const SECRET: &[u8] = b"test-secret";
    const NOW: i64 = 1_700_000_000;

    fn claims(exp: i64) -> Value {
        json!({"sub": "alice", "exp": exp, "cognito:groups": ["admin", "ops"]})
    }

    #[test]
    fn round_trip() {
        let token = sign(SECRET, &claims(NOW + 60));
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
        );
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let verified = verify(SECRET, &token, now).unwrap();
        assert_eq!(verified["sub"], "bob");
        assert_eq!(verified["cognito:groups"], json!(["admin"]));
        assert_eq!(verified["iss"], LOCAL_ISSUER);
        assert_eq!(verified["token_use"], "access");

        let no_groups = local_token(SECRET, "bob", &[], Duration::from_secs(60));
        let verified = verify(SECRET, &no_groups, now).unwrap();
        assert!(!verified.contains_key("cognito:groups"));
    }

    #[test]
    fn tampered_payload_is_refused() {
        let token = sign(SECRET, &claims(NOW + 60));
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
        let token = sign(b"another-secret", &claims(NOW + 60));
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::BadSignature));
    }

    #[test]
    fn expired_is_refused() {
        let token = sign(SECRET, &claims(NOW));
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Expired));
        assert!(verify(SECRET, &token, NOW - 1).is_ok());
    }

    #[test]
    fn missing_exp_is_refused() {
        let token = sign(SECRET, &json!({"sub": "alice"}));
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
        let token = sign(SECRET, &json!({"sub": "alice", "exp": "tomorrow"}));
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
    }

    #[test]
    fn not_before_is_honoured() {
        let token = sign(SECRET, &json!({"exp": NOW + 60, "nbf": NOW + 10}));
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
        let token = sign(SECRET, &json!([1, 2]));
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
        let signed = format!("{HEADER_B64}.{}", B64.encode("not json"));
        let mut mac = mac(SECRET);
        mac.update(signed.as_bytes());
        let token = format!("{signed}.{}", B64.encode(mac.finalize().into_bytes()));
        assert_eq!(verify(SECRET, &token, NOW), Err(JwtError::Malformed));
    }

    #[test]
    fn header_constant_matches_its_json() {
        assert_eq!(
            B64.decode(HEADER_B64).unwrap(),
            br#"{"alg":"HS256","typ":"JWT"}"#
        );
    }
}
