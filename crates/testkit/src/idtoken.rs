//! ID tokens as Google signs them for a Pub/Sub push subscription (RS256 JWTs), made with a
//! key generated for these tests only, and the JWK set that verifies them: a GCR Receiver is
//! tested end to end without Google's network, its key set served from a local endpoint.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair, RsaPublicKeyComponents};
use serde_json::{Value, json};

/// A 2048-bit RSA key made with `openssl genpkey` for these tests; it signs nothing else.
const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCTW3o119SOfMMY
8RSDq7M9oIUe0eVaD4BeDWn/hIWi6dtJIUPhKG/8qOzJzd5R4f46XKlrmSPXKS6o
ybRe15MSvMOArJEWFmANzGxsTUskvpkaPBRItovP0RW6/u5VaL0Tv5GZpk5UBiz8
C/HHV25awgEdraVl6pyEsgE9fuakxkOuC02qg7ea8JPMIqhG5P+Oae4bkvvrkAIC
pkgzJHFPcG4+VbT599q7PDb5tDUBFXhgJ1uWo28p4cqjuHF+64dFaDEqHc2GaS02
xnQbMgagarV5vdw/CHE8a62bQ6OIp9kFcbxR/OC2P5QW5hgsKRoyrefVDRifMhZv
80BJ1SC1AgMBAAECggEACVxrbPk383dOIFfMUR/UUQsEYE4lAkdWBP0k9mQxf+ul
EEYkA3oBdAagYdXv4VOSEwLcIzQ4ZSY+F998bSjHtI4eSbg5g7KXMB+dsagCKPFP
7sbRr3U9RRq7HsTfWIV0IXy739ic3qFnzfkz4LexEH3rlG2TQmBL+75tISSrIhBH
mZ6j7DKXpYSxMaBBxWbuvWmsfadWUcAy/1rcDVMEp8Fcl/EuELfEq2Jj6OxsGuv9
lbh0hEVdpadqOt31ZTrlGSqN5SSwvCycO/hWv+QdwPGpyvbbcGWDIHViA1waCffR
6Mnpv4u7PT1NPETm/xv4eBH6tNiQEIVMARzxfm4nLwKBgQDIIzPrzb7QDKJQcB0e
P8PjSPVBNbre8ZVH6PlbdNvqGYB8PG4e1kyKas3SCXer0fWRceiJ6js8CZBHEeYR
15erxJFyoG+prErIMdY6uQTaL1LOI2nHjJ89rnQJIcm6AJKR+HlxqReXDChYS2rP
Po5pCVlLUadCk65v7/4iUx5D4wKBgQC8fN/iOdU3Cv37P9gMnbLrGGB4OvAjjOuP
hYGl3XkDl/mzZGs8RbUzuXIe9MdQ+tPxhk6SBh2LQhjXAyEoEuReZhTZ61hekhlm
r9abOVsGEYmQqOARbCAFZWPEhsaI2/6VRWqBpwo4KPwINoOslwQ6ZdPGAtfcp/iS
TMOvYEuchwKBgC7gP+r9F7I3I1VfzRImsUTs87TAVvKc9vAO20jWiCO+sV9n8Ar8
+pR5C5gka4ks9i2I1oRm/lTDkK10vcR0EKxEsCR++2hsWF+nfJvodgB8kRKDLOV2
RF34HGl/JnaQZ8QUxK0gg8v3JwP3Nh8wcb6cV/PSPjDT0kmZlpaHjVEtAoGBAKAh
/xr1Qz1WK1zPar+dIqo0tZCvkeDCEkaGiBTgSbVR4iQURj6Ygk+FV30RPFyCHJnv
HsVUSLlM2EmjMQIYusewNjrFhPgja00gSlTpr3lCYPrzXhmvIK007EPEtNsE/A7Z
QJkRzs7TkvtvRQLV8hOi+v4Y4EdotPemHAHc75/1AoGAN5g8B46eB1YPi9zGoeyO
fDh9nwN62YK79fK6eOoSW3pMp1oDORcZnKzhF4Hsph2RiVKQQC/Tg3vx1UBO/j/x
jWHuHvWlpkEp8UuT8kpH0nY2vfTLPbzI75hxhTmEu3Wodi8ROrRDVdAv6dfUJDnv
ZUgsXYVd02NDioEq4gl/7qw=
-----END PRIVATE KEY-----
";

/// Signs ID tokens with the test key, under key id `test-key`.
pub struct GoogleSigner {
    key: RsaKeyPair,
}

impl Default for GoogleSigner {
    fn default() -> Self {
        Self::new()
    }
}

impl GoogleSigner {
    /// The signer of the test key.
    pub fn new() -> GoogleSigner {
        let body: String = TEST_KEY
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let der = STANDARD.decode(body).expect("the test key is base64");
        GoogleSigner {
            key: RsaKeyPair::from_pkcs8(&der).expect("the test key is PKCS#8 RSA"),
        }
    }

    /// The JWK set with the test key's public half, as Google publishes its keys.
    pub fn keys(&self) -> Value {
        let public: RsaPublicKeyComponents<Vec<u8>> = self.key.public().into();
        json!({"keys": [{
            "kid": "test-key", "kty": "RSA", "alg": "RS256", "use": "sig",
            "n": URL_SAFE_NO_PAD.encode(&public.n),
            "e": URL_SAFE_NO_PAD.encode(&public.e),
        }]})
    }

    /// An RS256 JWT with these claims.
    pub fn token(&self, claims: &Value) -> String {
        let header = json!({"alg": "RS256", "kid": "test-key", "typ": "JWT"});
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                signed.as_bytes(),
                &mut signature,
            )
            .expect("RSA signing");
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}
