//! Shamir secret sharing over GF(2^8) (the AES field, polynomial x^8+x^4+x^3+x+1), in the share
//! layout sops uses for key groups: each share is the y-bytes followed by one x-coordinate byte.

fn mul(a: u8, b: u8) -> u8 {
    let mut acc = 0u8;
    for i in (0..8).rev() {
        // Multiply the accumulator by x (reducing by the AES polynomial), then add `a` if the
        // current bit of `b` is set. Constant-time shape, as share bytes are secret.
        let carry = 0u8.wrapping_sub(acc >> 7) & 0x1b;
        acc = (acc << 1) ^ carry;
        acc ^= 0u8.wrapping_sub((b >> i) & 1) & a;
    }
    acc
}

/// a^254 = a^-1 in GF(2^8) (0 stays 0).
fn inv(a: u8) -> u8 {
    let mut result = 1u8;
    let mut base = a;
    let mut exp = 254u8;
    while exp > 0 {
        if exp & 1 == 1 {
            result = mul(result, base);
        }
        base = mul(base, base);
        exp >>= 1;
    }
    result
}

/// Splits `secret` into `parts` shares, any `threshold` of which recover it.
pub(crate) fn split(secret: &[u8], parts: usize, threshold: usize) -> Result<Vec<Vec<u8>>, String> {
    if threshold < 2 || threshold > parts || parts > 255 {
        return Err(format!(
            "cannot split a key into {parts} parts with threshold {threshold} (need 2 <= threshold <= parts <= 255)"
        ));
    }
    let mut out: Vec<Vec<u8>> = (0..parts)
        .map(|i| {
            let mut share = vec![0u8; secret.len() + 1];
            share[secret.len()] = (i + 1) as u8;
            share
        })
        .collect();
    let mut coefficients = vec![0u8; threshold];
    for (idx, &byte) in secret.iter().enumerate() {
        coefficients[0] = byte;
        getrandom::fill(&mut coefficients[1..]).map_err(|e| format!("no randomness: {e}"))?;
        for (i, share) in out.iter_mut().enumerate() {
            let x = (i + 1) as u8;
            // Horner's rule from the highest coefficient down.
            let mut y = 0u8;
            for &c in coefficients.iter().rev() {
                y = mul(y, x) ^ c;
            }
            share[idx] = y;
        }
    }
    Ok(out)
}

/// Recovers the secret from shares (Lagrange interpolation at x = 0).
pub(crate) fn combine(parts: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    if parts.len() < 2 {
        return Err("fewer than two key group parts cannot be combined".into());
    }
    let len = parts[0].len();
    if len < 2 || parts.iter().any(|p| p.len() != len) {
        return Err("key group parts have different or too short lengths".into());
    }
    let xs: Vec<u8> = parts.iter().map(|p| p[len - 1]).collect();
    for (i, x) in xs.iter().enumerate() {
        if xs[..i].contains(x) {
            return Err("two key group parts have the same share index".into());
        }
    }
    let mut secret = vec![0u8; len - 1];
    for (idx, out) in secret.iter_mut().enumerate() {
        let mut acc = 0u8;
        for (i, part) in parts.iter().enumerate() {
            let mut basis = 1u8;
            for (j, &xj) in xs.iter().enumerate() {
                if i != j {
                    basis = mul(basis, mul(xj, inv(xs[i] ^ xj)));
                }
            }
            acc ^= mul(part[idx], basis);
        }
        *out = acc;
    }
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_inverse() {
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1, "{a}");
        }
    }

    #[test]
    fn any_threshold_subset_recovers() {
        let secret: Vec<u8> = (0..32).collect();
        let shares = split(&secret, 3, 2).unwrap();
        assert_eq!(combine(&shares[0..2]).unwrap(), secret);
        assert_eq!(combine(&shares[1..3]).unwrap(), secret);
        assert_eq!(
            combine(&[shares[0].clone(), shares[2].clone()]).unwrap(),
            secret
        );
        assert_eq!(combine(&shares).unwrap(), secret);
        assert!(combine(&shares[0..1]).is_err());
    }
}
