//! Edge-guarded 4-float row accesses shared by the register-tiled kernels (`sgemm`,
//! `sgemm_warp_tiled`): one vector access on the vector path (16 bytes of `f32`, 8 of BF16 or
//! F16), four guarded element accesses otherwise.

use super::element::Element;
use crate::device::mem;

/// Whether the bases allow the vector path of the kernels that load rows of `A` and `B` four
/// elements at a time and store `C` four `f32` at a time: `a` and `b` aligned to
/// [`Element::VECTOR_BYTES`] (16 bytes of `f32`, 8 of BF16 or F16) and `c` to 16 bytes. (The
/// rows' lengths are each kernel's own condition.)
#[inline(always)]
pub fn bases_aligned<T: Element>(a: *const T, b: *const T, c: *mut f32) -> bool {
    (a as usize | b as usize).is_multiple_of(T::VECTOR_BYTES) && (c as usize).is_multiple_of(16)
}

/// Four consecutive elements of a row as [`load4_raw`] loaded them, widened where they are used
/// ([`Loaded4::widen`]): a kernel that prefetches holds these, so that no widening waits for its
/// load before the next load issues (the [`Element`] documentation has the measurement).
#[derive(Clone, Copy)]
pub struct Loaded4<T: Element> {
    /// The vector load's bits (the vector path).
    vector: T::Raw4,
    /// The element loads' bits (off the vector path).
    scalars: [u32; 4],
}

impl<T: Element> Loaded4<T> {
    /// Four zeros.
    pub const ZERO: Self = Self { vector: T::RAW4_ZERO, scalars: [0; 4] };

    /// The bits of four element loads ([`Element::load_raw_nc`]), to widen with `VEC = false`.
    #[inline(always)]
    pub fn of_scalars(scalars: [u32; 4]) -> Self {
        Self { vector: T::RAW4_ZERO, scalars }
    }

    /// The bits of one vector load ([`Element::load4_raw_nc`]), to widen with `VEC = true`.
    #[inline(always)]
    pub fn of_vector(vector: T::Raw4) -> Self {
        Self { vector, scalars: [0; 4] }
    }

    /// The four values, widened exactly; `VEC` as in the [`load4_raw`] that made them.
    #[inline(always)]
    pub fn widen<const VEC: bool>(self) -> [f32; 4] {
        if VEC { T::widen4(self.vector) } else { self.scalars.map(T::widen_raw) }
    }
}

/// Four consecutive elements of a row from `p`, not yet widened: elements `first + i < limit`
/// (and only when `inside`), zero elsewhere. With `VEC`, the four are one vector load, all or
/// nothing.
///
/// # Safety
/// Every element the guards admit lies inside a global allocation nothing writes during the
/// kernel; with `VEC`, `first % 4 == 0`, `limit % 4 == 0` (so the four are all inside or all
/// outside) and `p` is `T::VECTOR_BYTES`-aligned whenever they are inside.
#[inline(always)]
pub unsafe fn load4_raw<T: Element, const VEC: bool>(p: *const T, inside: bool, first: u32, limit: u32) -> Loaded4<T> {
    let mut v = Loaded4::ZERO;
    if VEC {
        if inside && first < limit {
            // SAFETY: inside by the guard, aligned by the caller's contract.
            v.vector = unsafe { T::load4_raw_nc(p) };
        }
    } else {
        unroll!(i in [0, 1, 2, 3] {
            if inside && first + (i as u32) < limit {
                // SAFETY: element i is inside by the guard.
                v.scalars[i] = unsafe { T::load_raw_nc(p.add(i)) };
            }
        });
    }
    v
}

/// [`load4_raw`]'s elements, each widened beside its load (the register-tiled kernels sit at
/// their 128-register cap, where deferred widening spilled `sgemm`'s 16-bit 512 x 32 tiles).
///
/// # Safety
/// As [`load4_raw`].
#[inline(always)]
pub unsafe fn load4<T: Element, const VEC: bool>(p: *const T, inside: bool, first: u32, limit: u32) -> [f32; 4] {
    if VEC {
        if inside && first < limit {
            // SAFETY: inside by the guard, aligned by the caller's contract.
            unsafe { T::load4_nc(p) }
        } else {
            [0.0; 4]
        }
    } else {
        let mut v = [0.0; 4];
        unroll!(i in [0, 1, 2, 3] {
            if inside && first + (i as u32) < limit {
                // SAFETY: element i is inside by the guard.
                v[i] = unsafe { T::load_nc(p.add(i)) };
            }
        });
        v
    }
}

/// Writes `v` to the four floats from `p`: elements `first + i < limit`. With `VEC`, one
/// 16-byte store, all or nothing.
///
/// # Safety
/// As [`load4`], for a writable allocation whose admitted elements no other thread writes.
#[inline(always)]
pub unsafe fn store4<const VEC: bool>(p: *mut f32, v: [f32; 4], first: u32, limit: u32) {
    if VEC {
        if first < limit {
            // SAFETY: inside by the guard, 16-byte aligned by the caller's contract.
            unsafe { mem::store_global_v4_f32(p, v) };
        }
    } else {
        unroll!(i in [0, 1, 2, 3] {
            if first + (i as u32) < limit {
                // SAFETY: element i is inside by the guard.
                unsafe { mem::store_global_f32(p.add(i), v[i]) };
            }
        });
    }
}
