//! JSON Web Tokens: HS256, signed with a shared secret, expiring, carrying the player id,
//! name and whether the player is a guest.
//!
//! **Key rotation.** Verification takes a set of keys, each with an id (`kid`); tokens are
//! signed with the newest (the last listed) and carry its id in their header. A token is
//! checked with the key its `kid` names, and refused when no key has that id (a removed
//! key's tokens); a token without `kid` (issued before key ids, or by `--jwt-secret` alone
//! before a rotation) is checked against every key. So a rotation is: add the new key at
//! the end (new tokens use it, old ones keep working until they expire), then, one token
//! lifetime later, remove the old one.

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
    /// A fair-play moderator (the moderation API is open to them only). Absent from
    /// tokens of other players and from tokens issued before the role existed, which
    /// still verify: it defaults to false. Set from the account at sign-in, so a grant or
    /// revocation takes effect at the player's next sign-in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub moderator: bool,
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

/// The key id of a secret given alone (`--jwt-secret`, `frontier dev`).
pub const DEFAULT_KID: &str = "default";

/// The signing key and every verifying key, and how long new tokens live.
#[derive(Clone)]
pub struct JwtKeys {
    /// The newest key's id, written into every token issued.
    kid: String,
    encoding: EncodingKey,
    /// Every accepted key by id, the signing one included.
    decoding: Vec<(String, DecodingKey)>,
    ttl: Duration,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.decoding.iter().map(|(id, _)| id.as_str()).collect();
        write!(
            f,
            "JwtKeys(signs with {}, accepts {ids:?}, <secrets>, ttl {:?})",
            self.kid, self.ttl
        )
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl JwtKeys {
    /// Keys from one shared secret of at least 32 bytes, with the id [`DEFAULT_KID`].
    pub fn new(secret: &[u8], ttl: Duration) -> Result<JwtKeys, String> {
        JwtKeys::rotating(&[(DEFAULT_KID, secret)], ttl)
    }

    /// Keys from `(id, secret)` pairs, oldest first: the last signs, every one verifies.
    /// Each secret is at least 32 bytes; ids are 1–64 of `A-Za-z0-9._-` and distinct.
    pub fn rotating(keys: &[(&str, &[u8])], ttl: Duration) -> Result<JwtKeys, String> {
        let Some((newest, newest_secret)) = keys.last() else {
            return Err("at least one JWT key is needed".into());
        };
        let mut decoding: Vec<(String, DecodingKey)> = Vec::with_capacity(keys.len());
        for (id, secret) in keys {
            let good_id = !id.is_empty()
                && id.len() <= 64
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !good_id {
                return Err(format!(
                    "JWT key id `{id}`: 1 to 64 letters, digits, `.`, `_` or `-`"
                ));
            }
            if secret.len() < 32 {
                return Err(format!(
                    "the JWT secret of key `{id}` must be at least 32 bytes"
                ));
            }
            if decoding.iter().any(|(seen, _)| seen == id) {
                return Err(format!("JWT key id `{id}` is given twice"));
            }
            decoding.push((
                (*id).to_owned(),
                DecodingKey::from_secret(secret).map_err(|e| e.to_string())?,
            ));
        }
        Ok(JwtKeys {
            kid: (*newest).to_owned(),
            encoding: EncodingKey::from_secret(newest_secret).map_err(|e| e.to_string())?,
            decoding,
            ttl,
        })
    }

    /// The id of the key new tokens are signed with.
    pub fn signing_kid(&self) -> &str {
        &self.kid
    }

    /// A signed token for this player (not a moderator).
    pub fn issue(&self, player: PlayerId, name: &str, guest: bool) -> Result<String, AuthError> {
        self.issue_with_role(player, name, guest, false)
    }

    /// A signed token for this player, saying whether it is a fair-play moderator.
    pub fn issue_with_role(
        &self,
        player: PlayerId,
        name: &str,
        guest: bool,
        moderator: bool,
    ) -> Result<String, AuthError> {
        let iat = now_secs();
        let claims = Claims {
            sub: player,
            name: name.to_owned(),
            guest,
            iat,
            exp: iat + self.ttl.as_secs(),
            iss: ISSUER.to_owned(),
            moderator,
        };
        self.sign(&claims)
    }

    /// Signs arbitrary claims (tests make expired tokens with it).
    pub fn sign(&self, claims: &Claims) -> Result<String, AuthError> {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(|_| AuthError::Malformed)
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
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Malformed)?;
        let check = |key: &DecodingKey| {
            jsonwebtoken::decode::<Claims>(token, key, &validation)
                .map(|data| data.claims)
                .map_err(|e| match e.kind() {
                    ErrorKind::ExpiredSignature => AuthError::Expired,
                    ErrorKind::InvalidSignature => AuthError::BadSignature,
                    ErrorKind::InvalidIssuer | ErrorKind::InvalidAlgorithm => {
                        AuthError::WrongIssuer
                    }
                    _ => AuthError::Malformed,
                })
        };
        match header.kid {
            // Its key, or none: a removed key's tokens are refused.
            Some(kid) => match self.decoding.iter().find(|(id, _)| *id == kid) {
                Some((_, key)) => check(key),
                None => Err(AuthError::BadSignature),
            },
            // From before key ids: whichever key signed it.
            None => {
                let mut outcome = Err(AuthError::BadSignature);
                for (_, key) in &self.decoding {
                    outcome = check(key);
                    if !matches!(outcome, Err(AuthError::BadSignature)) {
                        break;
                    }
                }
                outcome
            }
        }
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

    const A: &[u8] = b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &[u8] = b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const HOUR: Duration = Duration::from_secs(3600);

    fn kid_of(token: &str) -> Option<String> {
        jsonwebtoken::decode_header(token).expect("a header").kid
    }

    #[test]
    fn a_rotation_keeps_old_tokens_signs_new_ones_with_the_new_key_and_refuses_removed_keys() {
        let before = JwtKeys::rotating(&[("k1", A)], HOUR).expect("keys");
        let old = before.issue(PlayerId::new(), "ann", false).expect("sign");
        assert_eq!(kid_of(&old).as_deref(), Some("k1"));
        // Rotation: the new key is added last.
        let during = JwtKeys::rotating(&[("k1", A), ("k2", B)], HOUR).expect("keys");
        assert_eq!(during.verify(&old).map(|c| c.name), Ok("ann".to_owned()));
        let new = during.issue(PlayerId::new(), "bob", false).expect("sign");
        assert_eq!(kid_of(&new).as_deref(), Some("k2"));
        assert_eq!(during.signing_kid(), "k2");
        // Signed with B: a verifier with only A refuses it.
        assert_eq!(before.verify(&new), Err(AuthError::BadSignature));
        // The old key removed: its tokens are refused, the new ones are not.
        let after = JwtKeys::rotating(&[("k2", B)], HOUR).expect("keys");
        assert_eq!(after.verify(&old), Err(AuthError::BadSignature));
        assert!(after.verify(&new).is_ok());
        // An old token still expires as it did.
        let expired = Claims {
            iat: 1,
            exp: 2,
            ..during.verify(&old).expect("valid")
        };
        let expired = before.sign(&expired).expect("sign");
        assert_eq!(during.verify(&expired), Err(AuthError::Expired));
    }

    #[test]
    fn a_token_without_key_id_is_checked_against_every_key_and_a_forged_kid_gains_nothing() {
        // A token from before key ids: no `kid` in its header.
        let claims = Claims {
            sub: PlayerId::new(),
            name: "old".into(),
            guest: true,
            iat: now_secs(),
            exp: now_secs() + 60,
            iss: ISSUER.into(),
            moderator: false,
        };
        let legacy = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(A).expect("a key"),
        )
        .expect("sign");
        let keys = JwtKeys::rotating(&[(DEFAULT_KID, A), ("k2", B)], HOUR).expect("keys");
        assert_eq!(keys.verify(&legacy), Ok(claims.clone()));
        // Signed with A but claiming B's id: checked with B, refused.
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k2".into());
        let forged = jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_secret(A).expect("a key"),
        )
        .expect("sign");
        assert_eq!(keys.verify(&forged), Err(AuthError::BadSignature));
    }

    #[test]
    fn the_moderator_claim_round_trips_and_older_tokens_default_to_none() {
        let k = keys("0123456789abcdef0123456789abcdef");
        let player = PlayerId::new();
        let token = k.issue_with_role(player, "mod", false, true).expect("sign");
        assert!(k.verify(&token).expect("valid").moderator);
        let plain = k.issue(player, "ann", false).expect("sign");
        assert!(!k.verify(&plain).expect("valid").moderator);
        // A token from before the claim existed: no `moderator` field at all.
        #[derive(Serialize)]
        struct Old<'a> {
            sub: PlayerId,
            name: &'a str,
            guest: bool,
            iat: u64,
            exp: u64,
            iss: &'a str,
        }
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(DEFAULT_KID.into());
        let old = jsonwebtoken::encode(
            &header,
            &Old {
                sub: player,
                name: "old",
                guest: false,
                iat: now_secs(),
                exp: now_secs() + 60,
                iss: ISSUER,
            },
            &EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef").expect("a key"),
        )
        .expect("sign");
        let claims = k.verify(&old).expect("older tokens still verify");
        assert!(!claims.moderator);
    }

    #[test]
    fn key_sets_are_checked() {
        assert!(JwtKeys::rotating(&[], HOUR).is_err());
        assert!(JwtKeys::rotating(&[("k1", A), ("k1", B)], HOUR).is_err());
        assert!(JwtKeys::rotating(&[("bad id", A)], HOUR).is_err());
        assert!(JwtKeys::rotating(&[("k1", b"short")], HOUR).is_err());
    }
}
