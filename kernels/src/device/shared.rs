//! Shared memory: statically sized arrays ([`shared_array!`]) and the dynamically sized window
//! ([`dynamic_shared_array!`]), accessed through the `.shared` state space.
//!
//! An array is a 32-bit shared-window address plus a length. Loads and stores are `unsafe`:
//! the caller guarantees the index is in bounds and that a barrier orders the access against
//! other threads' writes to the same element. Builds with debug assertions (`cargo xtask
//! build-ptx` without `--release`) check every index and trap when it is out of bounds.

use core::arch::asm;
use core::marker::PhantomData;

/// A scalar that `ld.shared`/`st.shared` move in one instruction of its width.
pub trait SharedScalar: Copy {
    /// `ld.shared.<type>`: reads the value at a shared-window address.
    ///
    /// # Safety
    /// `addr` is a shared-window address of this type's alignment inside a declared array.
    unsafe fn load_shared(addr: u32) -> Self;
    /// `st.shared.<type>`: writes the value at a shared-window address.
    ///
    /// # Safety
    /// As for [`SharedScalar::load_shared`].
    unsafe fn store_shared(addr: u32, value: Self);
}

/// `st.shared.v2.f32 [addr], {a, b};`: writes two `f32` at an 8-byte aligned shared-window
/// address in one access.
///
/// # Safety
/// `addr` is an 8-byte aligned shared-window address with 8 bytes inside a declared array.
#[inline(always)]
pub unsafe fn store_v2_f32(addr: u32, v: [f32; 2]) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("st.shared.v2.f32 [{a}], {{{x}, {y}}};", a = in(reg32) addr, x = in(reg32) v[0], y = in(reg32) v[1],
             options(nostack, preserves_flags))
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

/// `ld.shared.f64` / `st.shared.f64`: one 8-byte access (`addr` 8-byte aligned).
impl SharedScalar for f64 {
    #[inline(always)]
    unsafe fn load_shared(addr: u32) -> Self {
        let value: f64;
        // SAFETY: the caller guarantees `addr` is an in-bounds, 8-byte aligned shared address.
        unsafe {
            asm!("ld.shared.f64 {v}, [{a}];", v = out(reg64) value, a = in(reg32) addr,
                 options(readonly, nostack, preserves_flags));
        }
        value
    }
    #[inline(always)]
    unsafe fn store_shared(addr: u32, value: Self) {
        // SAFETY: the caller guarantees `addr` is an in-bounds, 8-byte aligned shared address.
        unsafe {
            asm!("st.shared.f64 [{a}], {v};", a = in(reg32) addr, v = in(reg64) value,
                 options(nostack, preserves_flags));
        }
    }
}

/// A statically sized array of `N` values of `T` in the block's shared memory; the handle
/// `shared_array!` returns (`cuda_std::shared_array!`).
#[derive(Clone, Copy)]
pub struct SharedArray<T, const N: usize> {
    base: u32,
    _element: PhantomData<T>,
}

impl<T: SharedScalar, const N: usize> SharedArray<T, N> {
    /// Number of elements.
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
    #[inline(always)]
    pub fn shared_address(&self) -> u32 {
        self.base
    }

    /// Reads element `i` (`ld.shared`).
    ///
    /// # Safety
    /// `i < N`, and no other thread writes element `i` between the last barrier and this read.
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
/// `T`; the handle [`dynamic_shared_array!`] returns. Its size is set at launch.
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
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the launch provided no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shared-window address of element `i` (for atomics and [`crate::device::cluster`]).
    ///
    /// Computing an address is safe; using it is where bounds matter.
    #[inline(always)]
    pub fn address_of(&self, i: usize) -> u32 {
        self.base + (i * size_of::<T>()) as u32
    }

    /// Reads element `i` (`ld.shared`).
    ///
    /// # Safety
    /// `i < len`, and no other thread writes element `i` between the last barrier and this read.
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

/// Declares a statically sized shared array and returns its [`SharedArray`] handle
/// (`cuda_std::shared_array!`): `shared_array!(TILE_A: [f32; 256])`.
///
/// Emits `.shared .align 16 .b8 NAME[BYTES];` at module scope and `mov.u32 r, NAME;` for its
/// shared-window address. The name is the PTX symbol and must be unique in the crate; every
/// thread of the block sees the same array.
#[macro_export]
macro_rules! shared_array {
    ($name:ident: [$t:ty; $n:expr]) => {{
        // `global_asm!` is a module-level item: a module in this block holds it, and sees the
        // caller module's constants for `$n`.
        #[allow(non_snake_case, unused_imports)]
        mod $name {
            use super::*;
            ::core::arch::global_asm!(
                concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
                bytes = const ($n) * ::core::mem::size_of::<$t>(),
            );
        }
        let base: u32;
        // SAFETY: reads the address of the symbol declared just above; touches no memory.
        unsafe {
            ::core::arch::asm!(concat!("mov.u32 {}, ", stringify!($name), ";"), out(reg32) base,
                               options(pure, nomem, nostack, preserves_flags));
        }
        // SAFETY: `base` is that declaration, sized for `$n` values and 16-byte aligned.
        unsafe { $crate::device::shared::SharedArray::<$t, { $n }>::from_shared_address(base) }
    }};
}

/// Declares the block's dynamic shared memory and returns a [`DynamicSharedArray`] of `len`
/// elements: `dynamic_shared_array!(BINS: u32, len)`.
///
/// Emits `.extern .shared .align 16 .b8 NAME[];`. The launch must provide at least
/// `len * size_of::<T>()` bytes of dynamic shared memory, which makes the macro `unsafe` to use.
#[macro_export]
macro_rules! dynamic_shared_array {
    ($name:ident: $t:ty, $len:expr) => {{
        #[allow(non_snake_case)]
        mod $name {
            ::core::arch::global_asm!(concat!(".extern .shared .align 16 .b8 ", stringify!($name), "[];"));
        }
        let base: u32;
        // SAFETY: reads the address of the symbol declared just above; touches no memory.
        #[allow(unused_unsafe)]
        unsafe {
            ::core::arch::asm!(concat!("mov.u32 {}, ", stringify!($name), ";"), out(reg32) base,
                               options(pure, nomem, nostack, preserves_flags));
        }
        $crate::device::shared::DynamicSharedArray::<$t>::from_shared_address(base, $len)
    }};
}
