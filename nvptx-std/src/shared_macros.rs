//! The shared-memory declaration macros, defined on every target (so that their documentation
//! and paths exist on the host too); their expansions use `shared`, which exists only for
//! `nvptx64`, and are compiled only inside kernel bodies.

/// Declares a statically sized shared array and returns its `shared::SharedArray` handle
/// (`cuda_std::shared_array!`): `shared_array!(TILE_A: [f32; 256])`.
///
/// Emits `.shared .align 16 .b8 NAME[BYTES];` at module scope and `mov.u32 r, NAME;` for its
/// shared-window address. The name is the PTX symbol and must be unique in the crate; every
/// thread of the block sees the same array.
///
/// ```ignore
/// use nvptx_std::{shared_array, thread};
/// let tile = shared_array!(TILE: [f32; 16 * 16]);
/// let t = (thread::thread_idx_y() * 16 + thread::thread_idx_x()) as usize;
/// unsafe { tile.store(t, value) };
/// thread::sync_threads();
/// ```
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
        unsafe { $crate::shared::SharedArray::<$t, { $n }>::from_shared_address(base) }
    }};
}

/// Declares the block's dynamic shared memory and returns a `shared::DynamicSharedArray` of `len`
/// elements: `dynamic_shared_array!(BINS: u32, len)`.
///
/// Emits `.extern .shared .align 16 .b8 NAME[];`. The launch must provide at least
/// `len * size_of::<T>()` bytes of dynamic shared memory, which makes the macro `unsafe` to use.
/// Above 48 KiB the function needs its dynamic shared memory limit raised before the launch
/// (`nvptx-launch` does it from the launch configuration).
///
/// ```ignore
/// // SAFETY: the launch provides nbins * 4 bytes of dynamic shared memory.
/// let bins = unsafe { nvptx_std::dynamic_shared_array!(BINS: u32, nbins as usize) };
/// ```
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
        $crate::shared::DynamicSharedArray::<$t>::from_shared_address(base, $len)
    }};
}
