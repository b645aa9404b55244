//! CRC-32C arithmetic for batch headers.
//!
//! CRC-32C is linear over GF(2): for equal-length messages `crc(a ^ b ^ c) = crc(a) ^ crc(b) ^
//! crc(c)`. A header rewrite changes only a prefix of the CRC-covered region, so the new CRC is
//! the old one XOR the CRC contribution of the changed prefix shifted past the unchanged tail,
//! which `crc32c_combine` computes in O(log n) without reading the tail.

/// The CRC of `new_prefix ++ tail`, given the CRC of `old_prefix ++ tail`, both prefixes of the
/// same length, and the tail's length only.
pub fn update_prefix(old_crc: u32, old_prefix: &[u8], new_prefix: &[u8], tail_len: usize) -> u32 {
    debug_assert_eq!(old_prefix.len(), new_prefix.len());
    // crc(old ++ t) ^ crc(new ++ t) = crc((old ^ new) ++ 0^t) ^ crc(0^(p+t))
    //                               = shift(crc(old) ^ crc(new), t)
    let delta = crc32c::crc32c(old_prefix) ^ crc32c::crc32c(new_prefix);
    old_crc ^ shift(delta, tail_len)
}

/// Advances a CRC difference over `len` zero bytes (multiplication by x^(8·len) mod P).
fn shift(delta: u32, len: usize) -> u32 {
    // combine(c1, c2, len) = shift(c1, len) ^ c2 for the pre/post-conditioned CRC; with c2 = 0
    // it is the bare shift.
    crc32c::crc32c_combine(delta, 0, len)
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
    }
}
