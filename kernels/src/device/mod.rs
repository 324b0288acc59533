//! The device API: every intrinsic and every line of inline PTX the kernels use, and nothing else.
//!
//! Names and shapes follow Rust-CUDA's `cuda_std` (`thread::thread_idx_x`,
//! `thread::sync_threads`, shared arrays, `cluster::map_shared_rank`, atomics) so that kernels
//! read like the Rust-CUDA book and could move to that backend with few changes. Kernels never
//! write `asm!`: each wrapper here documents the PTX instruction it emits.
//!
//! Shared memory is addressed through the `.shared` state space (32-bit shared-window addresses
//! and `ld.shared`/`st.shared`), never through generic pointers: generic accesses cost an address
//! conversion on every use and were 1.27x-1.34x slower in the tiled matmul (DESIGN.md).

pub mod atomic;
pub mod cluster;
pub mod math;
pub mod mem;
pub mod shared;
pub mod thread;
pub mod warp;

/// Declares GPU kernels: `#[unsafe(no_mangle)] pub unsafe extern "ptx-kernel" fn`.
///
/// The kernel ABI is unstable and may be renamed (`"gpu-kernel"`); this macro is the one place
/// that names it. Like `cuda_std`'s `#[kernel]`, kernels are `unsafe` to launch: their
/// preconditions are documented under each kernel's `# Safety`.
#[macro_export]
macro_rules! gpu_kernel {
    ($($(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block)*) => {
        $(
            $(#[$attr])*
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
        )*
    };
}
