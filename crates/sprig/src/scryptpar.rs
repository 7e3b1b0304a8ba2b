//! scrypt (RFC 7914) for `derivePassword`, with its `p` lanes on threads of their own.
//!
//! Why not only the `scrypt` crate: it mixes the lanes one after the other, and Master
//! Password's parameters (N = 2^15, r = 8, p = 2: 32 MiB and ~80 ms of CPU a lane) made
//! `derivePassword` the slowest function of a chart render (issue 14's benchmark). The lanes
//! are independent by design, so they run side by side here; PBKDF2-HMAC-SHA256 around them
//! is ring's. The result is the same bytes (tested against the `scrypt` crate).

use std::num::NonZeroU32;

/// `scrypt(password, salt, N = 2^log_n, r, p)` into `out`. `Err` names a parameter out of
/// range (as Go's `scrypt.Key` refuses it).
pub fn scrypt(
    password: &[u8],
    salt: &[u8],
    log_n: u8,
    r: usize,
    p: usize,
    out: &mut [u8],
) -> Result<(), String> {
    if log_n == 0 || log_n >= 32 || r == 0 || p == 0 || r.saturating_mul(p) >= 1 << 30 {
        return Err("scrypt: parameters are too large".into());
    }
    let one = NonZeroU32::MIN;
    let mut b = vec![0u8; p * 128 * r];
    ring::pbkdf2::derive(
        ring::pbkdf2::PBKDF2_HMAC_SHA256,
        one,
        salt,
        password,
        &mut b,
    );
    let n = 1usize << log_n;
    std::thread::scope(|s| {
        let mut lanes = b.chunks_mut(128 * r);
        // The first lane stays on this thread.
        let first = lanes.next();
        for lane in lanes {
            s.spawn(move || ro_mix(lane, r, n));
        }
        if let Some(lane) = first {
            ro_mix(lane, r, n);
        }
    });
    ring::pbkdf2::derive(ring::pbkdf2::PBKDF2_HMAC_SHA256, one, &b, password, out);
    Ok(())
}

/// ROMix of one lane (128·r bytes) in place.
fn ro_mix(lane: &mut [u8], r: usize, n: usize) {
    let words = 32 * r;
    let mut x: Vec<u32> = lane
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut v = vec![0u32; words * n];
    let mut y = vec![0u32; words];
    for i in 0..n {
        v[i * words..(i + 1) * words].copy_from_slice(&x);
        block_mix(&x, &mut y, r);
        std::mem::swap(&mut x, &mut y);
    }
    for _ in 0..n {
        // Integerify: the first word of the last 64-byte block, modulo N (a power of two).
        let j = x[words - 16] as usize & (n - 1);
        for (a, b) in x.iter_mut().zip(&v[j * words..(j + 1) * words]) {
            *a ^= b;
        }
        block_mix(&x, &mut y, r);
        std::mem::swap(&mut x, &mut y);
    }
    for (c, w) in lane.chunks_exact_mut(4).zip(&x) {
        c.copy_from_slice(&w.to_le_bytes());
    }
}

/// BlockMix with Salsa20/8: the 2r blocks of `input` chained, even results first, then odd.
fn block_mix(input: &[u32], out: &mut [u32], r: usize) {
    let mut t = [0u32; 16];
    t.copy_from_slice(&input[(2 * r - 1) * 16..]);
    for i in 0..2 * r {
        for (a, b) in t.iter_mut().zip(&input[i * 16..(i + 1) * 16]) {
            *a ^= b;
        }
        salsa20_8(&mut t);
        let at = if i % 2 == 0 { i / 2 } else { r + i / 2 };
        out[at * 16..(at + 1) * 16].copy_from_slice(&t);
    }
}

/// The Salsa20/8 core: four double rounds, then the input added back.
fn salsa20_8(b: &mut [u32; 16]) {
    let mut x = *b;
    let quarter = |x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize| {
        x[b] ^= x[a].wrapping_add(x[d]).rotate_left(7);
        x[c] ^= x[b].wrapping_add(x[a]).rotate_left(9);
        x[d] ^= x[c].wrapping_add(x[b]).rotate_left(13);
        x[a] ^= x[d].wrapping_add(x[c]).rotate_left(18);
    };
    for _ in 0..4 {
        // Columns, then rows.
        quarter(&mut x, 0, 4, 8, 12);
        quarter(&mut x, 5, 9, 13, 1);
        quarter(&mut x, 10, 14, 2, 6);
        quarter(&mut x, 15, 3, 7, 11);
        quarter(&mut x, 0, 1, 2, 3);
        quarter(&mut x, 5, 6, 7, 4);
        quarter(&mut x, 10, 11, 8, 9);
        quarter(&mut x, 15, 12, 13, 14);
    }
    for (a, b) in b.iter_mut().zip(x) {
        *a = a.wrapping_add(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7914's test vector 2 (N = 1024, r = 8, p = 16), lanes in parallel.
    #[test]
    fn rfc7914_vector() {
        let mut out = [0u8; 64];
        scrypt(b"password", b"NaCl", 10, 8, 16, &mut out).unwrap_or_else(|e| panic!("{e}"));
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162\
             2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        );
    }

    /// The same bytes as the `scrypt` crate for Master Password's parameters.
    #[test]
    fn same_as_the_scrypt_crate() {
        let (password, salt) = (
            b"long".as_slice(),
            b"com.lyndir.masterpassword\0\0\0\x04user",
        );
        let mut ours = [0u8; 64];
        scrypt(password, salt, 15, 8, 2, &mut ours).unwrap_or_else(|e| panic!("{e}"));
        let mut theirs = [0u8; 64];
        let params = ::scrypt::Params::new(15, 8, 2, 64).unwrap_or_else(|e| panic!("{e}"));
        ::scrypt::scrypt(password, salt, &params, &mut theirs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ours, theirs);
    }
}
