//! The local stand-in for the HTTP API's JWT authorizer: HS256 tokens signed with a secret
//! the runner and `local-cloud token` share, instead of the issuer's RSA keys. The tokens
//! themselves are the library's ([`app::local_token`]), so that a function under `sam local`
//! verifies exactly what the runner's authorizer does.

pub use app::local_token::{
    DEFAULT_LOCAL_SECRET, JwtError, LOCAL_ISSUER, SignError, local_token, sign, verify,
};

/// `LOCAL_JWT_SECRET`, or the public development secret when it is unset or empty (as the
/// Artillery scenarios read it: an empty HMAC key signs nothing).
pub fn secret_from_env() -> Vec<u8> {
    std::env::var("LOCAL_JWT_SECRET")
        .ok()
        .filter(|secret| !secret.is_empty())
        .unwrap_or_else(|| DEFAULT_LOCAL_SECRET.to_owned())
        .into_bytes()
}
