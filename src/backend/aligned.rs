//! Buffers whose first element starts a 64-byte cache line.
//!
//! The vector kernels read their panels with unaligned loads, and a 64-byte load that straddles
//! two cache lines costs two: a panel that starts 16 bytes into a line made the screen's f32
//! pass 40 % slower than the same panel on a line boundary (0.160 against 0.113 ns per kernel
//! value, measured on AVX-512). A `Vec` gives only the element's alignment, and glibc puts
//! every large block (it maps them) 16 bytes into a page, so every large panel was misaligned.
//!
//! The buffer is a `Vec` a cache line longer than asked, viewed from its first element on a
//! line boundary. Allocated with `vec![0; n]`, a large one is a calloc whose pages cost nothing
//! until written (an over-aligned allocation would be zeroed by hand, touching every page).

use std::ops::{Deref, DerefMut};

/// Element types for which every bit pattern is a value and all-zero bytes are zero.
pub trait Plain: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The zero value (all bits zero).
    const ZERO: Self;
}
impl Plain for f32 {
    const ZERO: Self = 0.0;
}
impl Plain for f64 {
    const ZERO: Self = 0.0;
}
impl Plain for u64 {
    const ZERO: Self = 0;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for u64 {}
}

/// Bytes of a cache line.
const LINE: usize = 64;

/// A slice of `T` whose first element starts a 64-byte cache line, zero-initialised.
pub struct Aligned<T: Plain> {
    buf: Vec<T>,
    /// Elements of `buf` before the first line boundary.
    off: usize,
    len: usize,
}

impl<T: Plain> Aligned<T> {
    /// `len` zeros.
    pub fn zeroed(len: usize) -> Self {
        let buf = vec![
            T::ZERO;
            len.checked_add(Self::slack())
                .expect("buffer size overflows")
        ];
        let off = Self::offset(&buf);
        Aligned { buf, off, len }
    }

    /// Grows or shrinks to `len`; new elements are zero.
    pub fn resize_zeroed(&mut self, len: usize) {
        if len < self.len {
            // Zero what is cut off, so that growing again yields zeros.
            let (from, to) = (self.off + len, self.off + self.len);
            self.buf[from..to].fill(T::ZERO);
        }
        self.buf.resize(len + Self::slack(), T::ZERO);
        let off = Self::offset(&self.buf);
        if off != self.off {
            // Moved to an allocation with another offset to the line: move the data with it.
            let keep = self.len.min(len);
            self.buf.copy_within(self.off..self.off + keep, off);
            let stale = if off < self.off {
                off + keep..self.off + keep
            } else {
                self.off..off
            };
            self.buf[stale].fill(T::ZERO);
            self.off = off;
        }
        self.len = len;
    }

    /// Elements that may lie before the first boundary.
    fn slack() -> usize {
        LINE / size_of::<T>()
    }

    /// Elements of `buf` before its first element on a line boundary.
    fn offset(buf: &[T]) -> usize {
        let addr = buf.as_ptr() as usize;
        (addr.next_multiple_of(LINE) - addr) / size_of::<T>()
    }
}

impl<T: Plain> Clone for Aligned<T> {
    fn clone(&self) -> Self {
        Aligned::from(&self[..])
    }
}

impl<T: Plain> Default for Aligned<T> {
    fn default() -> Self {
        Aligned::zeroed(0)
    }
}

impl<T: Plain> From<&[T]> for Aligned<T> {
    fn from(v: &[T]) -> Self {
        let mut a = Aligned::zeroed(v.len());
        a.copy_from_slice(v);
        a
    }
}

impl<T: Plain> Deref for Aligned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[self.off..self.off + self.len]
    }
}

impl<T: Plain> DerefMut for Aligned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.off..self.off + self.len]
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for Aligned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_a_cache_line_and_holds_zeros() {
        for len in [0, 1, 15, 16, 17, 1000, 100_000] {
            let mut a = Aligned::<f32>::zeroed(len);
            assert_eq!(a.len(), len);
            assert_eq!(a.as_ptr() as usize % 64, 0);
            assert!(a.iter().all(|&v| v == 0.0));
            for (i, v) in a.iter_mut().enumerate() {
                *v = i as f32;
            }
            assert!(a.iter().enumerate().all(|(i, &v)| v == i as f32));
            let b = Aligned::<f64>::zeroed(len);
            assert_eq!(b.as_ptr() as usize % 64, 0);
            assert_eq!(b.len(), len);
            let c = a.clone();
            assert_eq!(c.as_ptr() as usize % 64, 0);
            assert_eq!(&c[..], &a[..]);
            // Shrunk and grown (reallocated) again: the data stays, the rest comes back zero.
            a.resize_zeroed(len / 2);
            a.resize_zeroed(3 * len + 40);
            assert_eq!(a.as_ptr() as usize % 64, 0);
            assert!(a[..len / 2].iter().enumerate().all(|(i, &v)| v == i as f32));
            assert!(a[len / 2..].iter().all(|&v| v == 0.0));
        }
        // Grown a row at a time, as the bit rows are.
        let mut g = Aligned::<u64>::default();
        for k in 0..200 {
            g.resize_zeroed(16 * (k + 1));
            assert_eq!(g.as_ptr() as usize % 64, 0);
            assert!(g[16 * k..].iter().all(|&v| v == 0));
            g[16 * k] = k as u64;
            assert!((0..=k).all(|i| g[16 * i] == i as u64));
        }
    }
}
