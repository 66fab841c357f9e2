//! JSON Web Tokens: HS256, signed with a shared secret, expiring, carrying the player id,
//! name and whether the player is a guest.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use serde::{Deserialize, Serialize};

use crate::PlayerId;

/// The issuer written into, and required of, every token.
pub const ISSUER: &str = "frontier";

/// What a token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The player.
    pub sub: PlayerId,
    /// Display name.
    pub name: String,
    /// Guests may not play rated games.
    pub guest: bool,
    /// Issued at (Unix seconds).
    pub iat: u64,
    /// Expires at (Unix seconds).
    pub exp: u64,
    /// Always [`ISSUER`].
    pub iss: String,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No token where one is required.
    #[error("no token")]
    Missing,
    /// Not a JWT at all, or fields missing or of the wrong type.
    #[error("malformed token")]
    Malformed,
    /// Signed with another key, or tampered with.
    #[error("token signature is invalid")]
    BadSignature,
    /// Past its expiry.
    #[error("token has expired")]
    Expired,
    /// Signed with an algorithm other than HS256, or from another issuer.
    #[error("token was not issued by this platform")]
    WrongIssuer,
}

/// The signing and verifying keys, and how long new tokens live.
#[derive(Clone)]
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    ttl: Duration,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JwtKeys(<secret>, ttl {:?})", self.ttl)
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl JwtKeys {
    /// Keys from a shared secret of at least 32 bytes.
    pub fn new(secret: &[u8], ttl: Duration) -> Result<JwtKeys, String> {
        if secret.len() < 32 {
            return Err("the JWT secret must be at least 32 bytes".into());
        }
        Ok(JwtKeys {
            encoding: EncodingKey::from_secret(secret).map_err(|e| e.to_string())?,
            decoding: DecodingKey::from_secret(secret).map_err(|e| e.to_string())?,
            ttl,
        })
    }

    /// A signed token for this player.
    pub fn issue(&self, player: PlayerId, name: &str, guest: bool) -> Result<String, AuthError> {
        let iat = now_secs();
        let claims = Claims {
            sub: player,
            name: name.to_owned(),
            guest,
            iat,
            exp: iat + self.ttl.as_secs(),
            iss: ISSUER.to_owned(),
        };
        self.sign(&claims)
    }

    /// Signs arbitrary claims (tests make expired tokens with it).
    pub fn sign(&self, claims: &Claims) -> Result<String, AuthError> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|_| AuthError::Malformed)
    }

    /// Checks a token: signature, algorithm, issuer and expiry (no leeway).
    pub fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        if token.len() > 4096 {
            return Err(AuthError::Malformed);
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| match e.kind() {
                ErrorKind::ExpiredSignature => AuthError::Expired,
                ErrorKind::InvalidSignature => AuthError::BadSignature,
                ErrorKind::InvalidIssuer | ErrorKind::InvalidAlgorithm => AuthError::WrongIssuer,
                _ => AuthError::Malformed,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(secret: &str) -> JwtKeys {
        JwtKeys::new(secret.as_bytes(), Duration::from_secs(3600)).expect("long enough")
    }

    #[test]
    fn issued_tokens_verify_and_forgeries_do_not() {
        let k = keys("0123456789abcdef0123456789abcdef");
        let player = PlayerId::new();
        let token = k.issue(player, "ann", true).expect("sign");
        let claims = k.verify(&token).expect("valid");
        assert_eq!(
            (claims.sub, claims.name.as_str(), claims.guest),
            (player, "ann", true)
        );
        let other = keys("fedcba9876543210fedcba9876543210");
        assert_eq!(other.verify(&token), Err(AuthError::BadSignature));
        assert_eq!(k.verify("not.a.jwt"), Err(AuthError::Malformed));
        assert_eq!(k.verify(""), Err(AuthError::Missing));
        let expired = Claims {
            iat: 1,
            exp: 2,
            ..claims
        };
        assert_eq!(
            k.verify(&k.sign(&expired).expect("sign")),
            Err(AuthError::Expired)
        );
        assert!(JwtKeys::new(b"short", Duration::from_secs(1)).is_err());
    }
}
