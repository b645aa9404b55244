//! Bounded primitive readers and writers for the Kafka wire format.
//!
//! Every length or count read from the wire is checked against the bytes that remain before
//! anything is allocated, so a hostile or confused peer cannot make us reserve memory it never
//! sent. Byte fields are returned as zero-copy slices of the frame.

use bytes::{BufMut, Bytes, BytesMut};

/// A field that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {what} at byte {at}: {reason}")]
pub struct WireError {
    /// Which field.
    pub what: &'static str,
    /// Position in the frame.
    pub at: usize,
    /// What was wrong.
    pub reason: String,
}

/// A cursor over one response frame.
#[derive(Debug, Clone)]
pub struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    /// Reads from `buf`, starting at its first byte.
    pub fn new(buf: Bytes) -> Reader {
        Reader { buf, pos: 0 }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Current position.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn err(&self, what: &'static str, reason: impl Into<String>) -> WireError {
        WireError {
            what,
            at: self.pos,
            reason: reason.into(),
        }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8], WireError> {
        if self.remaining() < n {
            return Err(self.err(what, format!("needs {n} bytes, {} left", self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next `n` bytes as a shared slice (zero-copy).
    pub fn take_bytes(&mut self, n: usize, what: &'static str) -> Result<Bytes, WireError> {
        if self.remaining() < n {
            return Err(self.err(what, format!("needs {n} bytes, {} left", self.remaining())));
        }
        let out = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(out)
    }

    /// int8.
    pub fn i8(&mut self, what: &'static str) -> Result<i8, WireError> {
        Ok(self.take(1, what)?[0] as i8)
    }
    /// boolean.
    pub fn bool(&mut self, what: &'static str) -> Result<bool, WireError> {
        Ok(self.i8(what)? != 0)
    }
    /// int16.
    pub fn i16(&mut self, what: &'static str) -> Result<i16, WireError> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    /// int32.
    pub fn i32(&mut self, what: &'static str) -> Result<i32, WireError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// int64.
    pub fn i64(&mut self, what: &'static str) -> Result<i64, WireError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    /// uuid (16 bytes).
    pub fn uuid(&mut self, what: &'static str) -> Result<[u8; 16], WireError> {
        let b = self.take(16, what)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        Ok(a)
    }
    /// Unsigned varint (up to 32 bits), as used by compact fields.
    pub fn uvarint(&mut self, what: &'static str) -> Result<u32, WireError> {
        let mut v: u64 = 0;
        for i in 0..5 {
            let b = self.take(1, what)?[0];
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| self.err(what, "varint overflows 32 bits"));
            }
        }
        Err(self.err(what, "varint longer than 5 bytes"))
    }

    /// Checks that `n` elements of at least `min_size` bytes each can still be present.
    fn check_count(&self, n: usize, min_size: usize, what: &'static str) -> Result<(), WireError> {
        if n.saturating_mul(min_size.max(1)) > self.remaining() {
            return Err(self.err(
                what,
                format!(
                    "declares {n} elements but only {} bytes remain",
                    self.remaining()
                ),
            ));
        }
        Ok(())
    }

    /// A nullable length prefix: `short` (int16) or int32, or compact (uvarint - 1). `None`
    /// for -1 (null); other negative values are errors.
    fn nullable_len(
        &mut self,
        compact: bool,
        short: bool,
        what: &'static str,
    ) -> Result<Option<usize>, WireError> {
        let n: i64 = if compact {
            i64::from(self.uvarint(what)?) - 1
        } else if short {
            i64::from(self.i16(what)?)
        } else {
            i64::from(self.i32(what)?)
        };
        match n {
            -1 => Ok(None),
            n if n < 0 => Err(self.err(what, format!("negative length {n}"))),
            n => Ok(Some(n as usize)),
        }
    }

    /// Array length: int32 (or compact uvarint-1 when `compact`). `None` for a null array.
    /// `min_elem` is the smallest encoded size of one element, used to bound the count.
    pub fn array_len(
        &mut self,
        compact: bool,
        min_elem: usize,
        what: &'static str,
    ) -> Result<Option<usize>, WireError> {
        let Some(n) = self.nullable_len(compact, false, what)? else {
            return Ok(None);
        };
        self.check_count(n, min_elem, what)?;
        Ok(Some(n))
    }

    /// Non-null array length; a null array reads as empty.
    pub fn array(
        &mut self,
        compact: bool,
        min_elem: usize,
        what: &'static str,
    ) -> Result<usize, WireError> {
        Ok(self.array_len(compact, min_elem, what)?.unwrap_or(0))
    }

    /// Nullable bytes: int32 length (or compact uvarint-1), zero-copy.
    pub fn nullable_bytes(
        &mut self,
        compact: bool,
        what: &'static str,
    ) -> Result<Option<Bytes>, WireError> {
        let Some(n) = self.nullable_len(compact, false, what)? else {
            return Ok(None);
        };
        if n > self.remaining() {
            return Err(self.err(
                what,
                format!("length {n} beyond the {} bytes left", self.remaining()),
            ));
        }
        let out = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(Some(out))
    }

    /// Nullable string (int16 length, or compact).
    pub fn nullable_string(
        &mut self,
        compact: bool,
        what: &'static str,
    ) -> Result<Option<String>, WireError> {
        let Some(n) = self.nullable_len(compact, true, what)? else {
            return Ok(None);
        };
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec())
            .map(Some)
            .map_err(|_| self.err(what, "not UTF-8"))
    }

    /// Non-null string; null reads as empty.
    pub fn string(&mut self, compact: bool, what: &'static str) -> Result<String, WireError> {
        Ok(self.nullable_string(compact, what)?.unwrap_or_default())
    }

    /// Skips a tagged-field section (flexible versions).
    pub fn skip_tagged_fields(&mut self) -> Result<(), WireError> {
        let n = self.uvarint("tagged fields")? as usize;
        self.check_count(n, 2, "tagged fields")?;
        for _ in 0..n {
            self.uvarint("tag")?;
            let len = self.uvarint("tag length")? as usize;
            self.take(len, "tag value")?;
        }
        Ok(())
    }

    /// The unread bytes, consuming them (zero-copy).
    pub fn rest(&mut self) -> Bytes {
        let out = self.buf.slice(self.pos..);
        self.pos = self.buf.len();
        out
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self, what: &'static str) -> Result<(), WireError> {
        if self.remaining() != 0 {
            return Err(self.err(
                what,
                format!("{} unread bytes at the end", self.remaining()),
            ));
        }
        Ok(())
    }
}

/// Writes an unsigned varint.
pub fn put_uvarint(buf: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Writes a string (int16 length, or compact).
pub(crate) fn put_string(buf: &mut BytesMut, s: &str, compact: bool) {
    if compact {
        put_uvarint(buf, s.len() as u32 + 1);
    } else {
        buf.put_i16(s.len() as i16);
    }
    buf.put_slice(s.as_bytes());
}

/// Writes a nullable string.
pub(crate) fn put_nullable_string(buf: &mut BytesMut, s: Option<&str>, compact: bool) {
    match s {
        Some(s) => put_string(buf, s, compact),
        None if compact => put_uvarint(buf, 0),
        None => buf.put_i16(-1),
    }
}

/// Writes an array length (int32, or compact uvarint+1).
pub(crate) fn put_array_len(buf: &mut BytesMut, n: usize, compact: bool) {
    if compact {
        put_uvarint(buf, n as u32 + 1);
    } else {
        buf.put_i32(n as i32);
    }
}

/// Writes a bytes length prefix (int32, or compact uvarint+1) for `n` bytes that follow.
pub(crate) fn put_bytes_len(buf: &mut BytesMut, n: usize, compact: bool) {
    if compact {
        put_uvarint(buf, n as u32 + 1);
    } else {
        buf.put_i32(n as i32);
    }
}

/// Writes an empty tagged-field section.
pub(crate) fn put_empty_tags(buf: &mut BytesMut) {
    buf.put_u8(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_counts_are_refused_before_allocation() {
        let mut r = Reader::new(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]));
        assert!(r.array_len(false, 4, "topics").is_err());
        let mut r = Reader::new(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]));
        assert!(r.nullable_bytes(false, "records").is_err());
        let mut r = Reader::new(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f]));
        assert!(r.array_len(true, 1, "compact").is_err());
    }

    #[test]
    fn uvarint_round_trip() {
        for v in [0u32, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut b = BytesMut::new();
            put_uvarint(&mut b, v);
            let mut r = Reader::new(b.freeze());
            assert_eq!(r.uvarint("v").unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
    }
}
