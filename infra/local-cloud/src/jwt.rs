//! The local stand-in for the HTTP API's JWT authorizer: HS256 tokens signed with a secret
//! the runner and `local-cloud token` share, instead of the issuer's RSA keys. The tokens
//! themselves are the library's ([`app::local_token`]), so that a function under `sam local`
//! verifies exactly what the runner's authorizer does.

pub use app::local_token::{
    DEFAULT_LOCAL_SECRET, JwtError, LOCAL_ISSUER, local_token, sign, verify,
};
