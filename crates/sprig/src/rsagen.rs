//! RSA key generation for `genCA`, `genSignedCert`, `genSelfSignedCert` and `genPrivateKey`:
//! the prime search, on the `rsa` crate's big integers (`num-bigint-dig`).
//!
//! Why not `rsa::RsaPrivateKey::new`: it draws a fresh random number for every candidate, sieves
//! only by the primes up to 53, and proves each prime with 20 Miller-Rabin rounds and a Lucas
//! test, which made a 2048-bit key ~2.7× slower than Go's (issue 14's benchmark). Here, as in
//! most libraries: one random odd start, its residues modulo every prime below 2^14 computed
//! once, then a walk by steps of 2 that only tests (by modular exponentiation) the candidates no
//! small prime divides; Miller-Rabin with the round counts of FIPS 186-5 appendix B.3.1 that
//! Go uses (5 for 1024-bit primes), base 2 first so that a composite costs one exponentiation.
//! The two primes of a key are searched on two threads.

use rand::RngCore;
use rsa::BigUint;
use rsa::traits::PublicKeyParts;

/// Primes below this are sieved out before any exponentiation.
const SIEVE_LIMIT: u32 = 1 << 14;

/// How far the walk from one random start goes before drawing a new start (the density of
/// primes makes reaching it vanishingly rare at RSA sizes).
const MAX_WALK: u32 = 1 << 20;

/// The odd primes below [`SIEVE_LIMIT`].
fn small_primes() -> &'static [u32] {
    static PRIMES: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    PRIMES.get_or_init(|| {
        let n = SIEVE_LIMIT as usize;
        let mut composite = vec![false; n];
        let mut out = Vec::new();
        for i in 2..n {
            if composite[i] {
                continue;
            }
            if i > 2 {
                out.push(i as u32);
            }
            let mut j = i * i;
            while j < n {
                composite[j] = true;
                j += i;
            }
        }
        out
    })
}

/// The Miller-Rabin round count for a prime of `bits` bits (FIPS 186-5, appendix B.3.1).
fn rounds(bits: usize) -> usize {
    match bits {
        b if b >= 3747 => 3,
        b if b >= 1345 => 4,
        b if b >= 476 => 5,
        b if b >= 400 => 6,
        b if b >= 347 => 7,
        b if b >= 308 => 8,
        b if b >= 55 => 27,
        _ => 34,
    }
}

/// A random prime of exactly `bits` bits with its top two bits set (so that the product of
/// two has exactly twice the bits), and `p - 1` coprime to `e`.
pub fn prime(rng: &mut dyn RngCore, bits: usize, e: u32) -> BigUint {
    let primes = small_primes();
    let bytes_len = bits.div_ceil(8);
    let top = bits - (bytes_len - 1) * 8;
    let mut bytes = vec![0u8; bytes_len];
    loop {
        rng.fill_bytes(&mut bytes);
        bytes[0] &= ((1u32 << top) - 1) as u8;
        if top >= 2 {
            bytes[0] |= 3 << (top - 2);
        } else {
            bytes[0] |= 1;
            bytes[1] |= 0x80;
        }
        bytes[bytes_len - 1] |= 1;
        let start = BigUint::from_bytes_be(&bytes);
        let residues: Vec<u32> = primes.iter().map(|&p| residue(&bytes, p)).collect();
        let e_residue = residue(&bytes, e);
        let mut delta = 0u32;
        while delta < MAX_WALK {
            let divisible = primes
                .iter()
                .zip(&residues)
                .any(|(&p, &r)| (r + delta % p).is_multiple_of(p));
            if !divisible {
                let candidate = &start + BigUint::from(delta);
                if candidate.bits() != bits {
                    break;
                }
                // p - 1 must be coprime to e (a prime): p mod e != 1.
                let p_mod_e = (u64::from(e_residue) + u64::from(delta)) % u64::from(e);
                if p_mod_e != 1 && miller_rabin(&candidate, rounds(bits), rng) {
                    return candidate;
                }
            }
            delta += 2;
        }
    }
}

/// The big-endian number `bytes` modulo `p`.
fn residue(bytes: &[u8], p: u32) -> u32 {
    let p = u64::from(p);
    bytes
        .iter()
        .fold(0u64, |r, &b| ((r << 8) | u64::from(b)) % p) as u32
}

/// Miller-Rabin with base 2 and then `rounds - 1` random bases in [2, n-2].
fn miller_rabin(n: &BigUint, rounds: usize, rng: &mut dyn RngCore) -> bool {
    let one = BigUint::from(1u32);
    let n_minus_1 = n - &one;
    let s = n_minus_1.trailing_zeros().unwrap_or(0);
    let d = &n_minus_1 >> s;
    let witness_passes = |a: &BigUint| -> bool {
        let mut x = a.modpow(&d, n);
        if x == one || x == n_minus_1 {
            return true;
        }
        for _ in 1..s {
            x = (&x * &x) % n;
            if x == n_minus_1 {
                return true;
            }
            if x == one {
                return false;
            }
        }
        false
    };
    if !witness_passes(&BigUint::from(2u32)) {
        return false;
    }
    let mut buf = vec![0u8; n.to_bytes_be().len() + 8];
    let three = BigUint::from(3u32);
    let range = n - &three;
    for _ in 1..rounds {
        rng.fill_bytes(&mut buf);
        let a = BigUint::from_bytes_be(&buf) % &range + 2u32;
        if !witness_passes(&a) {
            return false;
        }
    }
    true
}

/// A new two-prime RSA key of `bits` bits with public exponent 65537, as Go's
/// `rsa.GenerateKey`; p and q are searched in parallel.
pub fn generate(bits: usize) -> Result<rsa::RsaPrivateKey, String> {
    const E: u32 = 65537;
    if bits < 64 {
        return Err(format!("crypto/rsa: {bits}-bit keys are too small"));
    }
    let half = bits / 2;
    loop {
        let (p, q) = std::thread::scope(|s| {
            let q = s.spawn(|| prime(&mut rand::rngs::OsRng, bits - half, E));
            let p = prime(&mut rand::rngs::OsRng, half, E);
            (p, q.join())
        });
        let q = q.map_err(|_| "crypto/rsa: prime search failed".to_string())?;
        if p == q {
            continue;
        }
        let mut key =
            rsa::RsaPrivateKey::from_p_q(p, q, BigUint::from(E)).map_err(|e| e.to_string())?;
        if key.n().bits() != bits {
            continue;
        }
        key.precompute().map_err(|e| e.to_string())?;
        return Ok(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::traits::PrivateKeyParts;

    #[test]
    fn small_primes_are_the_odd_primes_below_the_limit() {
        let p = small_primes();
        assert_eq!(&p[..6], &[3, 5, 7, 11, 13, 17]);
        assert_eq!(p.len(), 1899); // π(16384) = 1900, without 2
    }

    #[test]
    fn miller_rabin_tells_known_primes_from_composites() {
        let mut rng = rand::rngs::OsRng;
        // 2^127 - 1 is prime; 2^128 + 1 (a Fermat number) is not; a Carmichael number is not.
        let m127 = (BigUint::from(1u32) << 127usize) - 1u32;
        assert!(miller_rabin(&m127, 20, &mut rng));
        let f7 = (BigUint::from(1u32) << 128usize) + 1u32;
        assert!(!miller_rabin(&f7, 20, &mut rng));
        assert!(!miller_rabin(&BigUint::from(561u32), 20, &mut rng));
        assert!(!miller_rabin(
            &BigUint::from(3_215_031_751u64),
            20,
            &mut rng
        ));
    }

    #[test]
    fn generated_keys_have_the_size_and_are_valid() {
        for bits in [512, 1024] {
            let key = generate(bits).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(key.n().bits(), bits);
            key.validate().unwrap_or_else(|e| panic!("{e}"));
            let primes = key.primes();
            assert_eq!(primes.len(), 2);
            for p in primes {
                assert_eq!(p.bits(), bits / 2);
            }
        }
    }
}
