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
//!
//! The Hopper modules ([`mbarrier`], [`tma`], [`wgmma`]) also build on the host, holding only
//! their pure layout functions there, so that the CPU tests check them.

#[cfg(target_arch = "nvptx64")]
pub mod atomic;
#[cfg(target_arch = "nvptx64")]
pub mod cluster;
#[cfg(target_arch = "nvptx64")]
pub mod math;
pub mod mbarrier;
#[cfg(target_arch = "nvptx64")]
pub mod mem;
#[cfg(target_arch = "nvptx64")]
pub mod shared;
#[cfg(target_arch = "nvptx64")]
pub mod thread;
pub mod tma;
#[cfg(target_arch = "nvptx64")]
pub mod warp;
pub mod wgmma;

/// Declares GPU kernels: `#[unsafe(no_mangle)] pub unsafe extern "ptx-kernel" fn`.
///
/// The kernel ABI is unstable and may be renamed (`"gpu-kernel"`); this macro is the one place
/// that names it. Like `cuda_std`'s `#[kernel]`, kernels are `unsafe` to launch: their
/// preconditions are documented under each kernel's `# Safety`.
///
/// These kernels exist only in the `sm_90` module: with the `hopper` feature (the `sm_90a`
/// module) this macro emits nothing, so that module holds only the kernels of
/// [`hopper_kernel!`](crate::hopper_kernel).
#[macro_export]
macro_rules! gpu_kernel {
    ($($(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block)*) => {
        $(
            $(#[$attr])*
            #[cfg(not(feature = "hopper"))]
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
        )*
    };
}

/// Declares the kernels of the `sm_90a` module (built with the `hopper` feature), like
/// [`gpu_kernel!`](crate::gpu_kernel); callers gate them with `#[cfg(feature = "hopper")]`.
#[macro_export]
macro_rules! hopper_kernel {
    ($($(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block)*) => {
        $(
            $(#[$attr])*
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
        )*
    };
}
