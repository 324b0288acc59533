//! Shared memory: statically sized arrays ([`shared_array!`](crate::shared_array)) and the
//! dynamically sized window ([`dynamic_shared_array!`](crate::dynamic_shared_array)), accessed
//! through the `.shared` state space.
//!
//! An array is a 32-bit shared-window address plus a length. Loads and stores are `unsafe`:
//! the caller guarantees the index is in bounds and that a barrier orders the access against
//! other threads' writes to the same element. Builds with debug assertions (the checked profile
//! of `nvptx-builder`) check every index and trap when it is out of bounds.

use core::arch::asm;
use core::marker::PhantomData;

/// A scalar that `ld.shared`/`st.shared` move in one instruction of its width: `f32`, `u32`,
/// `i32` (`.f32`, `.u32`, `.s32`) and `f64`, `u64`, `i64` (`.f64`, `.u64`, `.s64`).
///
/// ```ignore
/// let bins = nvptx_std::shared_array!(BINS: [u64; 256]); // any SharedScalar element
/// ```
pub trait SharedScalar: Copy {
    /// `ld.shared.<type>`: reads the value at a shared-window address.
    ///
    /// # Safety
    /// `addr` is a shared-window address of this type's alignment inside a declared array.
    ///
    /// ```ignore
    /// let v = unsafe { f32::load_shared(tile.shared_address() + 4 * i) };
    /// ```
    unsafe fn load_shared(addr: u32) -> Self;
    /// `st.shared.<type>`: writes the value at a shared-window address.
    ///
    /// # Safety
    /// As for [`SharedScalar::load_shared`].
    ///
    /// ```ignore
    /// unsafe { u32::store_shared(bins.address_of(i), 0) };
    /// ```
    unsafe fn store_shared(addr: u32, value: Self);
}

/// `st.shared.v2.f32 [addr], {a, b};`: writes two `f32` at an 8-byte aligned shared-window
/// address in one access.
///
/// # Safety
/// `addr` is an 8-byte aligned shared-window address with 8 bytes inside a declared array.
///
/// ```ignore
/// unsafe { nvptx_std::shared::store_v2_f32(tile.shared_address() + 8 * pair, [x, y]) };
/// ```
#[inline(always)]
pub unsafe fn store_v2_f32(addr: u32, v: [f32; 2]) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("st.shared.v2.f32 [{a}], {{{x}, {y}}};", a = in(reg32) addr, x = in(reg32) v[0], y = in(reg32) v[1],
             options(nostack, preserves_flags))
    };
}

/// `st.shared.v4.u32 [addr], {a, b, c, d};`: writes 16 bytes at a 16-byte aligned
/// shared-window address in one access.
///
/// # Safety
/// `addr` is a 16-byte aligned shared-window address with 16 bytes inside a declared array.
///
/// ```ignore
/// unsafe { nvptx_std::shared::store_v4_u32(stage + 16 * chunk, words) };
/// ```
#[inline(always)]
pub unsafe fn store_v4_u32(addr: u32, v: [u32; 4]) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("st.shared.v4.u32 [{a}], {{{x}, {y}, {z}, {w}}};", a = in(reg32) addr, x = in(reg32) v[0],
             y = in(reg32) v[1], z = in(reg32) v[2], w = in(reg32) v[3], options(nostack, preserves_flags))
    };
}

macro_rules! shared_scalar {
    ($t:ty, $ptx:literal) => {
        impl SharedScalar for $t {
            #[inline(always)]
            unsafe fn load_shared(addr: u32) -> Self {
                let value: $t;
                // SAFETY: the caller guarantees `addr` is an in-bounds shared address. `readonly`
                // lets LLVM reuse a load but not move it across barriers or stores.
                unsafe {
                    asm!(concat!("ld.shared.", $ptx, " {v}, [{a}];"), v = out(reg32) value,
                         a = in(reg32) addr, options(readonly, nostack, preserves_flags));
                }
                value
            }
            #[inline(always)]
            unsafe fn store_shared(addr: u32, value: Self) {
                // SAFETY: the caller guarantees `addr` is an in-bounds shared address.
                unsafe {
                    asm!(concat!("st.shared.", $ptx, " [{a}], {v};"), a = in(reg32) addr,
                         v = in(reg32) value, options(nostack, preserves_flags));
                }
            }
        }
    };
}
shared_scalar!(f32, "f32");
shared_scalar!(u32, "u32");
shared_scalar!(i32, "s32");

macro_rules! shared_scalar_64 {
    ($t:ty, $ptx:literal) => {
        impl SharedScalar for $t {
            #[inline(always)]
            unsafe fn load_shared(addr: u32) -> Self {
                let value: $t;
                // SAFETY: the caller guarantees `addr` is an in-bounds, 8-byte aligned shared address.
                unsafe {
                    asm!(concat!("ld.shared.", $ptx, " {v}, [{a}];"), v = out(reg64) value,
                         a = in(reg32) addr, options(readonly, nostack, preserves_flags));
                }
                value
            }
            #[inline(always)]
            unsafe fn store_shared(addr: u32, value: Self) {
                // SAFETY: the caller guarantees `addr` is an in-bounds, 8-byte aligned shared address.
                unsafe {
                    asm!(concat!("st.shared.", $ptx, " [{a}], {v};"), a = in(reg32) addr,
                         v = in(reg64) value, options(nostack, preserves_flags));
                }
            }
        }
    };
}
shared_scalar_64!(f64, "f64");
shared_scalar_64!(u64, "u64");
shared_scalar_64!(i64, "s64");

/// A statically sized array of `N` values of `T` in the block's shared memory; the handle
/// [`shared_array!`](crate::shared_array) returns (`cuda_std::shared_array!`).
///
/// ```ignore
/// let partial: SharedArray<f32, 8> = nvptx_std::shared_array!(PARTIAL: [f32; 8]);
/// ```
#[derive(Clone, Copy)]
pub struct SharedArray<T, const N: usize> {
    base: u32,
    _element: PhantomData<T>,
}

impl<T: SharedScalar, const N: usize> SharedArray<T, N> {
    /// Number of elements.
    ///
    /// ```ignore
    /// assert!(SharedArray::<f32, 256>::LEN == 256);
    /// ```
    pub const LEN: usize = N;

    /// Wraps the shared-window address of a declared array; used by [`shared_array!`].
    ///
    /// # Safety
    /// `base` is the address of a `.shared` declaration of at least `N * size_of::<T>()` bytes,
    /// 16-byte aligned.
    #[doc(hidden)]
    #[inline(always)]
    pub const unsafe fn from_shared_address(base: u32) -> Self {
        Self { base, _element: PhantomData }
    }

    /// The array's shared-window address (the operand `mapa` and `ld.shared` take).
    ///
    /// ```ignore
    /// let remote = nvptx_std::cluster::map_shared_rank(bins.shared_address(), 0);
    /// ```
    #[inline(always)]
    pub fn shared_address(&self) -> u32 {
        self.base
    }

    /// Reads element `i` (`ld.shared`).
    ///
    /// # Safety
    /// `i < N`, and no other thread writes element `i` between the last barrier and this read.
    ///
    /// ```ignore
    /// let v = unsafe { tile.load(row * 16 + col) };
    /// ```
    #[inline(always)]
    pub unsafe fn load(&self, i: usize) -> T {
        debug_assert!(i < N);
        // SAFETY: in bounds by the caller's contract.
        unsafe { T::load_shared(self.base + (i * size_of::<T>()) as u32) }
    }

    /// Writes element `i` (`st.shared`).
    ///
    /// # Safety
    /// `i < N`, and no other thread reads or writes element `i` between the surrounding barriers.
    ///
    /// ```ignore
    /// unsafe { tile.store(row * 16 + col, value) };
    /// nvptx_std::thread::sync_threads();
    /// ```
    #[inline(always)]
    pub unsafe fn store(&self, i: usize, value: T) {
        debug_assert!(i < N);
        // SAFETY: in bounds by the caller's contract.
        unsafe { T::store_shared(self.base + (i * size_of::<T>()) as u32, value) }
    }
}

impl<const N: usize> SharedArray<f32, N> {
    /// Reads elements `i..i + 4` in one 16-byte access (`ld.shared.v4.f32`).
    ///
    /// # Safety
    /// `i + 4 <= N`, `i` is a multiple of 4 (16-byte alignment), and no other thread writes those
    /// elements between the last barrier and this read.
    ///
    /// ```ignore
    /// let [a, b, c, d] = unsafe { tile.load4(4 * t) };
    /// ```
    #[inline(always)]
    pub unsafe fn load4(&self, i: usize) -> [f32; 4] {
        debug_assert!(i + 4 <= N && i.is_multiple_of(4));
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: in bounds and 16-byte aligned by the caller's contract (arrays are `.align 16`).
        unsafe {
            asm!("ld.shared.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a,
                 b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                 p = in(reg32) self.base + (i * 4) as u32, options(readonly, nostack, preserves_flags));
        }
        [a, b, c, d]
    }

    /// Writes elements `i..i + 4` in one 16-byte access (`st.shared.v4.f32`).
    ///
    /// # Safety
    /// As for [`SharedArray::load4`], for writes.
    ///
    /// ```ignore
    /// unsafe { tile.store4(4 * t, [a, b, c, d]) };
    /// ```
    #[inline(always)]
    pub unsafe fn store4(&self, i: usize, v: [f32; 4]) {
        debug_assert!(i + 4 <= N && i.is_multiple_of(4));
        // SAFETY: in bounds and 16-byte aligned by the caller's contract.
        unsafe {
            asm!("st.shared.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg32) self.base + (i * 4) as u32,
                 a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
                 options(nostack, preserves_flags));
        }
    }
}

/// The block's dynamically sized shared memory (`extern __shared__`), viewed as `len` values of
/// `T`; the handle [`dynamic_shared_array!`](crate::dynamic_shared_array) returns. Its size is set
/// at launch.
///
/// ```ignore
/// let bins: DynamicSharedArray<u32> = unsafe { nvptx_std::dynamic_shared_array!(BINS: u32, nbins as usize) };
/// ```
#[derive(Clone, Copy)]
pub struct DynamicSharedArray<T> {
    base: u32,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: SharedScalar> DynamicSharedArray<T> {
    /// Wraps the dynamic shared window; used by [`dynamic_shared_array!`].
    ///
    /// # Safety
    /// `base` is the address of an `.extern .shared` declaration and the launch provides at least
    /// `len * size_of::<T>()` bytes of dynamic shared memory.
    #[doc(hidden)]
    #[inline(always)]
    pub const unsafe fn from_shared_address(base: u32, len: usize) -> Self {
        Self { base, len, _element: PhantomData }
    }

    /// Number of elements the launch provides.
    ///
    /// ```ignore
    /// let mut i = nvptx_std::thread::thread_idx_x() as usize;
    /// while i < bins.len() { unsafe { bins.store(i, 0) }; i += 256; }
    /// ```
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the launch provided no elements.
    ///
    /// ```ignore
    /// if bins.is_empty() { return; }
    /// ```
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shared-window address of element `i` (for atomics and [`crate::cluster`]).
    ///
    /// Computing an address is safe; using it is where bounds matter. The arithmetic wraps, so
    /// that a lane may compute the address of an element it has none of (a value outside the
    /// bins) for an access that a predicate then skips, without tripping the checked build's
    /// overflow checks.
    ///
    /// ```ignore
    /// unsafe { nvptx_std::atomic::shared_add_u32(bins.address_of(bin), 1) };
    /// ```
    #[inline(always)]
    pub fn address_of(&self, i: usize) -> u32 {
        self.base.wrapping_add((i as u32).wrapping_mul(size_of::<T>() as u32))
    }

    /// Reads element `i` (`ld.shared`).
    ///
    /// # Safety
    /// `i < len`, and no other thread writes element `i` between the last barrier and this read.
    ///
    /// ```ignore
    /// let count = unsafe { bins.load(bin) };
    /// ```
    #[inline(always)]
    pub unsafe fn load(&self, i: usize) -> T {
        debug_assert!(i < self.len);
        // SAFETY: in bounds by the caller's contract.
        unsafe { T::load_shared(self.address_of(i)) }
    }

    /// Writes element `i` (`st.shared`).
    ///
    /// # Safety
    /// `i < len`, and no other thread accesses element `i` between the surrounding barriers.
    ///
    /// ```ignore
    /// unsafe { bins.store(bin, 0) };
    /// ```
    #[inline(always)]
    pub unsafe fn store(&self, i: usize, value: T) {
        debug_assert!(i < self.len);
        // SAFETY: in bounds by the caller's contract.
        unsafe { T::store_shared(self.address_of(i), value) }
    }
}

impl DynamicSharedArray<u32> {
    /// Writes the low 16 bits of `value` into 16-bit element `i`, the low or high half of word
    /// `i / 2` (`st.shared.u16`): for arrays of `u16` keys held in `u32` words.
    ///
    /// # Safety
    /// `i < 2 * len`, and no other thread accesses that half-word between the surrounding
    /// barriers.
    ///
    /// ```ignore
    /// unsafe { keys.store_u16(slot, key) };
    /// ```
    #[inline(always)]
    pub unsafe fn store_u16(&self, i: usize, value: u32) {
        debug_assert!(i < 2 * self.len);
        // SAFETY: in bounds by the caller's contract; 2-byte aligned.
        unsafe {
            asm!("st.shared.u16 [{a}], {v};", a = in(reg32) self.base + (2 * i) as u32, v = in(reg32) value,
                 options(nostack, preserves_flags));
        }
    }

    /// Reads 16-bit element `i`, zero-extended (`ld.shared.u16`).
    ///
    /// # Safety
    /// `i < 2 * len`, and no other thread writes that half-word between the last barrier and
    /// this read.
    ///
    /// ```ignore
    /// let key = unsafe { keys.load_u16(slot) };
    /// ```
    #[inline(always)]
    pub unsafe fn load_u16(&self, i: usize) -> u32 {
        debug_assert!(i < 2 * self.len);
        let value: u32;
        // SAFETY: in bounds by the caller's contract; 2-byte aligned.
        unsafe {
            asm!("ld.shared.u16 {v}, [{a}];", v = out(reg32) value, a = in(reg32) self.base + (2 * i) as u32,
                 options(readonly, nostack, preserves_flags));
        }
        value
    }

    /// Reads words `i..i + 4` in one 16-byte access (`ld.shared.v4.u32`).
    ///
    /// # Safety
    /// `i + 4 <= len`, `i` is a multiple of 4 (the dynamic window is 16-byte aligned), and no other
    /// thread writes those words between the last barrier and this read.
    ///
    /// ```ignore
    /// let words = unsafe { keys.load4_u32(4 * t) };
    /// ```
    #[inline(always)]
    pub unsafe fn load4_u32(&self, i: usize) -> [u32; 4] {
        debug_assert!(i + 4 <= self.len && i.is_multiple_of(4));
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: in bounds and 16-byte aligned by the caller's contract.
        unsafe {
            asm!("ld.shared.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a,
                 b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                 p = in(reg32) self.base + (i * 4) as u32, options(readonly, nostack, preserves_flags));
        }
        [a, b, c, d]
    }
}
