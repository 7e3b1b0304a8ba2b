//! SHA-1 and HMAC-SHA-1, which some wire formats Flux speaks still use: Nexus' and GitHub's
//! legacy webhook signatures, Matrix transaction ids and Bitbucket status keys. The digest is
//! `sha1dc` (already built for gix), which refuses input crafted to collide: such input gets
//! no digest, so a forged signature built on a collision never verifies.

use sha1dc::Hasher;

/// SHA-1's block size, which HMAC pads its key to.
const BLOCK: usize = 64;

/// The SHA-1 digest of `data`, or `None` for input crafted to collide.
pub fn sha1(data: &[u8]) -> Option<[u8; 20]> {
    let mut hasher = Hasher::new();
    hasher.update(data);
    hasher.finalize().ok().map(Into::into)
}

/// Lower-case hex SHA-1 of `data` (empty for input crafted to collide).
pub fn sha1_hex(data: &[u8]) -> String {
    sha1(data)
        .map(|d| crate::payload::hex(&d))
        .unwrap_or_default()
}

/// HMAC-SHA-1 (RFC 2104) of `message` under `key`.
pub fn hmac_sha1(key: &[u8], message: &[u8]) -> Option<[u8; 20]> {
    let mut padded = [0u8; BLOCK];
    if key.len() > BLOCK {
        padded[..20].copy_from_slice(&sha1(key)?);
    } else {
        padded[..key.len()].copy_from_slice(key);
    }
    let mut inner = Hasher::new();
    inner.update(&padded.map(|b| b ^ 0x36));
    inner.update(message);
    let inner: [u8; 20] = inner.finalize().ok()?.into();
    let mut outer = Hasher::new();
    outer.update(&padded.map(|b| b ^ 0x5c));
    outer.update(&inner);
    outer.finalize().ok().map(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::hex;

    #[test]
    fn rfc_2202_vectors() {
        let mac = |k: &[u8], m: &[u8]| hex(&hmac_sha1(k, m).unwrap());
        assert_eq!(
            mac(&[0x0b; 20], b"Hi There"),
            "b617318655057264e28bc0b6fb378c8ef146be00"
        );
        assert_eq!(
            mac(b"Jefe", b"what do ya want for nothing?"),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        // A key longer than the block is hashed first.
        assert_eq!(
            mac(
                &[0xaa; 80],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "aa4ae5e15272d00e95705637ce8a3b55ed402112"
        );
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }
}
