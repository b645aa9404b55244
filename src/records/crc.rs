//! CRC-32C arithmetic for batch headers.
//!
//! CRC-32C is linear over GF(2): for equal-length messages `crc(a ^ b ^ c) = crc(a) ^ crc(b) ^
//! crc(c)`. A header rewrite changes only a prefix of the CRC-covered region, so the new CRC is
//! the old one XOR the CRC contribution of the changed prefix shifted past the unchanged tail,
//! which [`shift`] computes in O(log n) without reading the tail.

/// The CRC of `new_prefix ++ tail`, given the CRC of `old_prefix ++ tail`, both prefixes of the
/// same length, and the tail's length only.
pub(crate) fn update_prefix(
    old_crc: u32,
    old_prefix: &[u8],
    new_prefix: &[u8],
    tail_len: usize,
) -> u32 {
    debug_assert_eq!(old_prefix.len(), new_prefix.len());
    // crc(old ++ t) ^ crc(new ++ t) = crc((old ^ new) ++ 0^t) ^ crc(0^(p+t))
    //                               = shift(crc(old) ^ crc(new), t)
    let delta = crc32c::crc32c(old_prefix) ^ crc32c::crc32c(new_prefix);
    old_crc ^ shift(delta, tail_len)
}

/// CRC-32C polynomial, bit-reflected.
const POLY: u32 = 0x82F6_3B78;

/// `a(x) * b(x) mod P(x)` over GF(2), both in the reflected representation (bit 31 is x^0).
const fn mult_mod_p(a: u32, mut b: u32) -> u32 {
    let mut m: u32 = 1 << 31;
    let mut p: u32 = 0;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                break;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `X2N[k] = x^(2^k) mod P` for every k a 64-bit length can need, built at compile time.
const X2N: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut p: u32 = 1 << 30; // x^1
    let mut k = 0;
    while k < 64 {
        t[k] = p;
        p = mult_mod_p(p, p);
        k += 1;
    }
    t
};

/// `x^(8 * len) mod P`: the factor that moves a CRC past `len` zero bytes.
fn x8n_mod_p(len: usize) -> u32 {
    let mut p: u32 = 1 << 31; // x^0
    let mut n = len as u64;
    let mut k = 3; // 8 = 2^3
    while n != 0 {
        if n & 1 != 0 {
            p = mult_mod_p(X2N[k], p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

/// Advances a CRC difference over `len` zero bytes (multiplication by x^(8·len) mod P): about
/// log2(len) table multiplications, independent of the data.
pub fn shift(delta: u32, len: usize) -> u32 {
    mult_mod_p(x8n_mod_p(len), delta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn prefix_update_matches_full_recompute(
            old in proptest::collection::vec(any::<u8>(), 40),
            new in proptest::collection::vec(any::<u8>(), 40),
            tail in proptest::collection::vec(any::<u8>(), 0..3000),
        ) {
            let mut a = old.clone();
            a.extend_from_slice(&tail);
            let mut b = new.clone();
            b.extend_from_slice(&tail);
            let updated = update_prefix(crc32c::crc32c(&a), &old, &new, tail.len());
            prop_assert_eq!(updated, crc32c::crc32c(&b));
        }

        #[test]
        fn shift_matches_the_crc32c_crates_combine(delta in any::<u32>(), len in 0usize..(1 << 30)) {
            prop_assert_eq!(shift(delta, len), crc32c::crc32c_combine(delta, 0, len));
        }
    }
}
