//! RSA key generation for `genCA`, `genSignedCert`, `genSelfSignedCert` and `genPrivateKey`:
//! the prime search, with the `rsa` crate's big integers (`num-bigint-dig`) for everything but
//! the hot loop.
//!
//! Why not `rsa::RsaPrivateKey::new`: it draws a fresh random number for every candidate, sieves
//! only by the primes up to 53, and proves each prime with 20 Miller-Rabin rounds and a Lucas
//! test, which made a 2048-bit key ~2.7× slower than Go's (issue 14's benchmark). Here, as in
//! most libraries: one random odd start, then a segmented sieve over the odd numbers after it
//! that strikes out every multiple of the odd primes below 2^17 (one residue of the start per
//! pair of primes, then a stride through a bitmap per prime), so that only ~1 candidate in 10
//! costs a modular exponentiation; Miller-Rabin with the round counts of FIPS 186-5 appendix
//! B.3.1 that Go uses (5 for 1024-bit primes), base 2 first so that a composite costs one
//! exponentiation. The exponentiations run on fixed-width Montgomery arithmetic ([`Monty`]: 64-bit
//! limbs, the width rounded up to 8/16/32/64 limbs so each size is its own unrolled code), where
//! base 2 needs no multiplications, only squarings and doublings; `num-bigint-dig`'s general
//! `modpow` was the cost of a key. The two primes of a key are searched on two threads.

use rand::RngCore;
use rsa::BigUint;
use rsa::traits::PublicKeyParts;

/// Primes below this are sieved out before any exponentiation.
const SIEVE_LIMIT: u32 = 1 << 17;

/// Odd candidates per sieve window.
const WINDOW: usize = 4096;

/// How far the walk from one random start goes (in odd candidates) before drawing a new start
/// (the density of primes makes reaching it vanishingly rare at RSA sizes).
const MAX_WALK: usize = 1 << 20;

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
    let mut sieve = vec![false; WINDOW];
    'draw: loop {
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
        // residues[i] = start mod primes[i], kept for the window's first candidate.
        let mut residues = residues(&bytes, primes);
        let e_residue = residue(&bytes, e);
        let mut base = 0usize; // candidates are start + 2 * (base + k)
        while base < MAX_WALK {
            sieve.fill(true);
            for (&p, &r) in primes.iter().zip(&residues) {
                // The first k with start + 2(base + k) ≡ 0 (mod p): k ≡ -r / 2.
                let neg = (p - r) % p;
                let mut k = (if neg % 2 == 0 { neg } else { neg + p } / 2) as usize;
                while k < WINDOW {
                    sieve[k] = false;
                    k += p as usize;
                }
            }
            for (k, _) in sieve.iter().enumerate().filter(|(_, alive)| **alive) {
                let delta = 2 * (base + k) as u64;
                // p - 1 must be coprime to e (a prime): p mod e != 1.
                if (u64::from(e_residue) + delta) % u64::from(e) == 1 {
                    continue;
                }
                let candidate = &start + BigUint::from(delta);
                if candidate.bits() != bits {
                    continue 'draw;
                }
                if probably_prime(&candidate, rounds(bits), rng) {
                    return candidate;
                }
            }
            base += WINDOW;
            let step = 2 * WINDOW as u64;
            for (r, &p) in residues.iter_mut().zip(primes) {
                *r = ((u64::from(*r) + step) % u64::from(p)) as u32;
            }
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

/// The big-endian number `bytes` modulo each of `primes` (all below 2^16 … 2^17): one pass over
/// the number per pair of primes, whose product stays below 2^34, folding 16 bits at a time
/// so that every step fits in a u64.
fn residues(bytes: &[u8], primes: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(primes.len());
    for pair in primes.chunks(2) {
        let m: u64 = pair.iter().map(|&p| u64::from(p)).product();
        let mut r = 0u64;
        let mut chunks = bytes.rchunks(2).rev();
        for c in &mut chunks {
            let v = c.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b));
            r = ((r << (8 * c.len())) | v) % m;
        }
        out.extend(pair.iter().map(|&p| (r % u64::from(p)) as u32));
    }
    out
}

/// Miller-Rabin with base 2 and then `rounds - 1` random bases in [2, n-2], on fixed-width
/// Montgomery arithmetic when `n` fits 4,096 bits (every RSA size Sprig makes), else on
/// `num-bigint-dig`'s `modpow`.
fn probably_prime(n: &BigUint, rounds: usize, rng: &mut dyn RngCore) -> bool {
    match n.bits().div_ceil(64) {
        0..=8 => miller_rabin_fixed::<8>(n, rounds, rng),
        9..=16 => miller_rabin_fixed::<16>(n, rounds, rng),
        17..=32 => miller_rabin_fixed::<32>(n, rounds, rng),
        33..=64 => miller_rabin_fixed::<64>(n, rounds, rng),
        _ => miller_rabin(n, rounds, rng),
    }
}

/// Little-endian 64-bit limbs of `x`, which must fit `S` limbs.
fn limbs<const S: usize>(x: &BigUint) -> [u64; S] {
    let mut out = [0u64; S];
    for (i, chunk) in x.to_bytes_le().chunks(8).enumerate().take(S) {
        out[i] = chunk
            .iter()
            .rev()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b));
    }
    out
}

/// Arithmetic modulo an odd `n` of at most `S` limbs in Montgomery form (`x·R mod n`,
/// `R = 2^(64·S)`).
struct Monty<const S: usize> {
    n: [u64; S],
    /// `-n⁻¹ mod 2^64`.
    n0inv: u64,
}

impl<const S: usize> Monty<S> {
    fn new(n: &[u64; S]) -> Self {
        // Newton's iteration doubles the correct low bits of n⁻¹ each step: 1 → 64 in 6.
        let mut inv: u64 = 1;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(n[0].wrapping_mul(inv)));
        }
        Monty {
            n: *n,
            n0inv: inv.wrapping_neg(),
        }
    }

    /// `a·b·R⁻¹ mod n` for `a, b < n` (CIOS: the reduction interleaved with the product).
    fn mul(&self, a: &[u64; S], b: &[u64; S]) -> [u64; S] {
        let n = &self.n;
        let mut t = [0u64; S];
        let mut t_hi = 0u64;
        for &bi in b.iter() {
            let bi = u128::from(bi);
            let x = u128::from(t[0]) + u128::from(a[0]) * bi;
            let mut c1 = (x >> 64) as u64;
            let t0 = x as u64;
            let m = u128::from(t0.wrapping_mul(self.n0inv));
            let y = u128::from(t0) + m * u128::from(n[0]);
            let mut c2 = (y >> 64) as u64;
            for j in 1..S {
                let x = u128::from(t[j]) + u128::from(a[j]) * bi + u128::from(c1);
                c1 = (x >> 64) as u64;
                let y = u128::from(x as u64) + m * u128::from(n[j]) + u128::from(c2);
                c2 = (y >> 64) as u64;
                t[j - 1] = y as u64;
            }
            let x = u128::from(t_hi) + u128::from(c1) + u128::from(c2);
            t[S - 1] = x as u64;
            t_hi = (x >> 64) as u64;
        }
        // t < 2n: one conditional subtraction.
        if t_hi != 0 || !less(&t, n) {
            sub_assign(&mut t, n);
        }
        t
    }

    /// `a²·R⁻¹ mod n` for `a < n`, the same as `mul(a, a)` with ~3/4 of its multiplications:
    /// each cross product `a[i]·a[j]` is computed once and doubled, then the 2S-limb square
    /// is reduced (Montgomery's REDC).
    fn sqr(&self, a: &[u64; S]) -> [u64; S] {
        // 2·S ≤ 128 limbs: S is at most 64 (see probably_prime).
        let mut t = [0u64; 128];
        for i in 0..S {
            let ai = u128::from(a[i]);
            let mut c = 0u64;
            for j in i + 1..S {
                let x = u128::from(t[i + j]) + ai * u128::from(a[j]) + u128::from(c);
                t[i + j] = x as u64;
                c = (x >> 64) as u64;
            }
            t[i + S] = c;
        }
        // Double the cross products, then add the squares on the diagonal.
        let mut top = 0u64;
        for limb in t.iter_mut().take(2 * S) {
            let v = *limb;
            *limb = (v << 1) | top;
            top = v >> 63;
        }
        let mut c = 0u64;
        for i in 0..S {
            let sq = u128::from(a[i]) * u128::from(a[i]);
            let x = u128::from(t[2 * i]) + (sq & u128::from(u64::MAX)) + u128::from(c);
            t[2 * i] = x as u64;
            let y = u128::from(t[2 * i + 1]) + (sq >> 64) + (x >> 64);
            t[2 * i + 1] = y as u64;
            c = (y >> 64) as u64;
        }
        // REDC: clear the low S limbs one at a time; `hi` is the carry out of the top limb.
        let n = &self.n;
        let mut hi = 0u64;
        for i in 0..S {
            let m = u128::from(t[i].wrapping_mul(self.n0inv));
            let mut c = 0u64;
            for j in 0..S {
                let x = u128::from(t[i + j]) + m * u128::from(n[j]) + u128::from(c);
                t[i + j] = x as u64;
                c = (x >> 64) as u64;
            }
            let x = u128::from(t[i + S]) + u128::from(c) + u128::from(hi);
            t[i + S] = x as u64;
            hi = (x >> 64) as u64;
        }
        let mut out = [0u64; S];
        out.copy_from_slice(&t[S..2 * S]);
        if hi != 0 || !less(&out, n) {
            sub_assign(&mut out, n);
        }
        out
    }

    /// `2x mod n` for `x < n`.
    fn double(&self, x: &mut [u64; S]) {
        let mut carry = 0u64;
        for limb in x.iter_mut() {
            let v = *limb;
            *limb = (v << 1) | carry;
            carry = v >> 63;
        }
        if carry != 0 || !less(x, &self.n) {
            sub_assign(x, &self.n);
        }
    }
}

/// `a < b`.
fn less<const S: usize>(a: &[u64; S], b: &[u64; S]) -> bool {
    for j in (0..S).rev() {
        if a[j] != b[j] {
            return a[j] < b[j];
        }
    }
    false
}

/// `a -= b` modulo 2^(64·S).
fn sub_assign<const S: usize>(a: &mut [u64; S], b: &[u64; S]) {
    let mut borrow = false;
    for j in 0..S {
        let (d1, b1) = a[j].overflowing_sub(b[j]);
        let (d2, b2) = d1.overflowing_sub(u64::from(borrow));
        a[j] = d2;
        borrow = b1 | b2;
    }
}

/// [`miller_rabin`] on [`Monty`]: the same bases, the same answer.
fn miller_rabin_fixed<const S: usize>(n: &BigUint, rounds: usize, rng: &mut dyn RngCore) -> bool {
    let one = BigUint::from(1u32);
    let n_minus_1 = n - &one;
    let s = n_minus_1.trailing_zeros().unwrap_or(0);
    let d = &n_minus_1 >> s;
    let d_bits = d.bits();
    let d_limbs = limbs::<S>(&d);
    let bit = |i: usize| (d_limbs[i / 64] >> (i % 64)) & 1 == 1;
    let mont = Monty::new(&limbs::<S>(n));
    let r = (BigUint::from(1u32) << (64 * S)) % n;
    let one_m = limbs::<S>(&r);
    let mut minus_one_m = mont.n;
    sub_assign(&mut minus_one_m, &one_m);
    // x = a^d, then up to s - 1 squarings looking for n - 1 (Montgomery forms compared).
    let passes = |mut x: [u64; S]| -> bool {
        if x == one_m || x == minus_one_m {
            return true;
        }
        for _ in 1..s {
            x = mont.sqr(&x);
            if x == minus_one_m {
                return true;
            }
            if x == one_m {
                return false;
            }
        }
        false
    };
    // Base 2: square, and double where d has a 1 bit.
    let mut x = one_m;
    for i in (0..d_bits).rev() {
        x = mont.sqr(&x);
        if bit(i) {
            mont.double(&mut x);
        }
    }
    if !passes(x) {
        return false;
    }
    if rounds <= 1 {
        return true;
    }
    let rr = limbs::<S>(&((&r * &r) % n));
    let mut buf = vec![0u8; n.to_bytes_be().len() + 8];
    let range = n - BigUint::from(3u32);
    for _ in 1..rounds {
        rng.fill_bytes(&mut buf);
        let a = BigUint::from_bytes_be(&buf) % &range + 2u32;
        // A fixed 4-bit window: 4 squarings and one multiplication per 4 bits of d.
        let mut table = [one_m; 16];
        table[1] = mont.mul(&limbs::<S>(&a), &rr);
        for i in 2..16 {
            table[i] = mont.mul(&table[i - 1], &table[1]);
        }
        let mut x = one_m;
        for w in (0..d_bits.div_ceil(4)).rev() {
            for _ in 0..4 {
                x = mont.sqr(&x);
            }
            let idx = (0..4).fold(0usize, |v, b| v | (usize::from(bit(4 * w + b)) << b));
            if idx != 0 {
                x = mont.mul(&x, &table[idx]);
            }
        }
        if !passes(x) {
            return false;
        }
    }
    true
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
        assert_eq!(p.len(), 12_250); // π(131072) = 12251, without 2
    }

    #[test]
    fn residues_by_pairs_match_one_by_one() {
        let mut rng = rand::rngs::OsRng;
        for len in [1, 2, 3, 128, 129, 256] {
            let mut bytes = vec![0u8; len];
            rng.fill_bytes(&mut bytes);
            let primes = small_primes();
            let want: Vec<u32> = primes.iter().map(|&p| residue(&bytes, p)).collect();
            assert_eq!(residues(&bytes, primes), want, "{len} bytes");
        }
    }

    #[test]
    fn montgomery_matches_modpow() {
        let mut rng = rand::rngs::OsRng;
        for bytes in [8usize, 64, 100, 128, 256, 512] {
            for _ in 0..4 {
                let mut b = vec![0u8; bytes];
                rng.fill_bytes(&mut b);
                b[0] |= 0x80;
                b[bytes - 1] |= 1;
                let n = BigUint::from_bytes_be(&b);
                rng.fill_bytes(&mut b);
                let a = BigUint::from_bytes_be(&b) % &n;
                rng.fill_bytes(&mut b);
                let e = BigUint::from_bytes_be(&b);
                let want = a.modpow(&e, &n);
                let got = match bytes.div_ceil(8) {
                    0..=8 => pow_fixed::<8>(&a, &e, &n),
                    9..=16 => pow_fixed::<16>(&a, &e, &n),
                    17..=32 => pow_fixed::<32>(&a, &e, &n),
                    _ => pow_fixed::<64>(&a, &e, &n),
                };
                assert_eq!(got, want, "{bytes} bytes");
            }
        }
    }

    /// `a^e mod n` by [`Monty`] square-and-multiply, out of Montgomery form at the end.
    fn pow_fixed<const S: usize>(a: &BigUint, e: &BigUint, n: &BigUint) -> BigUint {
        let mont = Monty::new(&limbs::<S>(n));
        let r = (BigUint::from(1u32) << (64 * S)) % n;
        let rr = limbs::<S>(&((&r * &r) % n));
        let am = mont.mul(&limbs::<S>(a), &rr);
        let mut x = limbs::<S>(&r);
        for i in (0..e.bits()).rev() {
            x = mont.mul(&x, &x);
            if (e >> i) & BigUint::from(1u32) == BigUint::from(1u32) {
                x = mont.mul(&x, &am);
            }
        }
        let mut unit = [0u64; S];
        unit[0] = 1;
        let out = mont.mul(&x, &unit);
        let le: Vec<u8> = out.iter().flat_map(|l| l.to_le_bytes()).collect();
        BigUint::from_bytes_le(&le)
    }

    #[test]
    fn montgomery_squaring_is_multiplication_by_itself() {
        let mut rng = rand::rngs::OsRng;
        fn check<const S: usize>(rng: &mut dyn RngCore, bytes: usize) {
            let mut b = vec![0u8; bytes];
            rng.fill_bytes(&mut b);
            b[0] |= 0x80;
            b[bytes - 1] |= 1;
            let n = BigUint::from_bytes_be(&b);
            let mont = Monty::new(&limbs::<S>(&n));
            for fill in [None, Some(0u8), Some(0xff)] {
                match fill {
                    Some(v) => b.fill(v),
                    None => rng.fill_bytes(&mut b),
                }
                // n - 1 (all ones below n) and 0 are the edges of the carries.
                let a = (BigUint::from_bytes_be(&b) % &n).min(&n - 1u32);
                let a = limbs::<S>(&a);
                assert_eq!(mont.sqr(&a), mont.mul(&a, &a), "{bytes} bytes, {fill:?}");
            }
        }
        for _ in 0..8 {
            check::<8>(&mut rng, 8);
            check::<8>(&mut rng, 64);
            check::<16>(&mut rng, 100);
            check::<16>(&mut rng, 128);
            check::<32>(&mut rng, 256);
            check::<64>(&mut rng, 512);
        }
    }

    #[test]
    fn both_miller_rabins_agree() {
        let mut rng = rand::rngs::OsRng;
        let m127 = (BigUint::from(1u32) << 127usize) - 1u32;
        let m521 = (BigUint::from(1u32) << 521usize) - 1u32;
        let f7 = (BigUint::from(1u32) << 128usize) + 1u32;
        for (n, prime) in [
            (m127, true),
            (m521, true),
            (f7, false),
            (BigUint::from(561u32), false),
            (BigUint::from(3_215_031_751u64), false),
            (BigUint::from(2_147_483_647u64), true),
        ] {
            assert_eq!(probably_prime(&n, 20, &mut rng), prime, "{n}");
            assert_eq!(miller_rabin(&n, 20, &mut rng), prime, "{n}");
        }
        // A product of two primes found by the search is composite to both.
        let p = prime(&mut rng, 512, 65537);
        let q = prime(&mut rng, 512, 65537);
        assert!(probably_prime(&p, 5, &mut rng) && miller_rabin(&p, 5, &mut rng));
        let pq = &p * &q;
        assert!(!probably_prime(&pq, 5, &mut rng) && !miller_rabin(&pq, 5, &mut rng));
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
