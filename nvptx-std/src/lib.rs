//! The device API for GPU kernels written in Rust and compiled by rustc's own
//! `nvptx64-nvidia-cuda` backend: every intrinsic and every line of inline PTX a kernel needs,
//! so that kernels never write `asm!` themselves (the role of Rust-CUDA's `cuda_std`).
//!
//! Names and shapes follow `cuda_std` (`thread::thread_idx_x`, `thread::sync_threads`,
//! [`shared_array!`], `warp::shuffle_xor_f32`, `atomic`, `cluster::map_shared_rank`) so that
//! kernels read like the Rust-CUDA book and port both ways with few changes. What `cuda_std`
//! lacks is here too: thread-block clusters and distributed shared memory (`cluster`),
//! transaction barriers ([`mbarrier`]), the tensor memory accelerator ([`tma`]) and the Hopper
//! tensor-core instructions ([`wgmma`]). Each wrapper documents the PTX it emits.
//!
//! | module | what it wraps |
//! | --- | --- |
//! | `thread` | `%tid`, `%ctaid`, `%ntid`, `%nctaid`; `bar.sync`, `bar.red` (block barriers) |
//! | `warp` | `%laneid`; `shfl.sync` (xor, idx, up, down), `vote.sync` (ballot, all, any), `activemask`, `bar.warp.sync`; warp sums and maxima |
//! | `shared` | static and dynamic shared arrays: `.shared` declarations, `ld.shared`, `st.shared` |
//! | `atomic` | `red` and `atom` on shared, cluster-shared and global memory |
//! | `cluster` | `%cluster_ctarank`, `barrier.cluster`, `mapa`, `ld`/`st.shared::cluster` |
//! | `mem` | vector and read-only-cache global loads and stores (`ld.global.nc.v4`, `st.global.v4`) |
//! | `mma` | `mma.sync.aligned.m16n8k16` (BF16 inputs, `f32` accumulators): warp-level tensor cores on register fragments |
//! | `math` | `fma.rn`, `sqrt.rn`, `ex2`/`lg2`/`rsqrt.approx`, `cvt.rn.bf16.f32`, `cvt.rzi.u32.f32` |
//! | [`mbarrier`] | `mbarrier.init`, `arrive`, `arrive.expect_tx`, `try_wait.parity` |
//! | [`tma`] | `cp.async.bulk.tensor` loads and stores, bulk groups, `fence.proxy.async` |
//! | [`wgmma`] | `wgmma.mma_async` (BF16, TF32), `fence`, `commit_group`, `wait_group`, `setmaxnreg`; descriptors |
//!
//! Shared memory is addressed through the `.shared` state space (32-bit shared-window addresses
//! and `ld.shared`/`st.shared`), never through generic pointers: generic accesses cost an address
//! conversion on every use and were 1.27x-1.34x slower in a tiled matmul.
//!
//! # A kernels crate
//!
//! A `no_std` library crate that depends on this one; `nvptx-builder` compiles it to PTX from a
//! host crate's `build.rs`. Its `lib.rs` enables the two nightly features the expansions of
//! [`kernel!`] and [`shared_array!`] need (only when compiling for the GPU: on the host the crate
//! builds on any toolchain) and declares its kernels:
//!
//! ```ignore
//! #![no_std]
//! #![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]
//!
//! nvptx_std::kernel! {
//!     /// `y[i] = a * x[i] + y[i]` for every `i < n`.
//!     pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {
//!         let i = nvptx_std::thread::index_1d();
//!         if i < n {
//!             unsafe { *y.add(i as usize) = a * *x.add(i as usize) + *y.add(i as usize) };
//!         }
//!     }
//! }
//! ```
//!
//! For `nvptx64` that is the kernel; for the host it is a type `saxpy` whose
//! [`launch::Kernel`] implementation records the kernel's name and parameter types, from which
//! `nvptx-launch` checks a launch's arguments at compile time.
//!
//! # What builds where
//!
//! The modules of GPU instructions exist only for `nvptx64`; the pure layout helpers of
//! [`mbarrier`], [`tma`] and [`wgmma`] and the [`launch`] types build everywhere, so that host
//! code and CPU tests use the same functions as the kernels. Documentation of the GPU-only
//! modules: `cargo doc --target nvptx64-nvidia-cuda -Zbuild-std=core` with the pinned nightly.
#![no_std]
#![deny(missing_docs)]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx, asm_experimental_arch, core_intrinsics))]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(target_arch = "nvptx64")]
pub mod atomic;
#[cfg(target_arch = "nvptx64")]
pub mod cluster;
pub mod launch;
#[cfg(target_arch = "nvptx64")]
pub mod math;
pub mod mbarrier;
#[cfg(target_arch = "nvptx64")]
pub mod mem;
#[cfg(target_arch = "nvptx64")]
pub mod mma;
#[cfg(target_arch = "nvptx64")]
pub mod shared;
mod shared_macros;
#[cfg(target_arch = "nvptx64")]
pub mod thread;
pub mod tma;
#[cfg(target_arch = "nvptx64")]
pub mod warp;
pub mod wgmma;

/// Declares GPU kernels: for `nvptx64`, `#[unsafe(no_mangle)] pub unsafe extern "ptx-kernel" fn`
/// (a `.visible .entry` of the PTX, named after the function); for the host, a zero-sized type
/// of the same name implementing [`launch::Kernel`] (the name and the parameter types), which
/// typed launches check arguments against. The body is compiled only for `nvptx64`.
///
/// The kernel ABI is unstable and may be renamed (`"gpu-kernel"`); this macro is the one place
/// that names it. Like `cuda_std`'s `#[kernel]`, kernels are `unsafe` to launch: their
/// preconditions belong under each kernel's `# Safety`. Attributes (doc comments, `#[cfg]`)
/// apply to the kernel and to its host-side type.
///
/// Parameters are scalars ([`launch::KernelParam`]'s implementors) and raw pointers to device
/// memory: `*const T` for what the kernel only reads, `*mut T` for what it writes.
///
/// ```
/// nvptx_std::kernel! {
///     /// Adds `value` to each of the `n` values at `data`.
///     pub unsafe fn add_scalar(data: *mut f32, value: f32, n: u32) {
///         let i = nvptx_std::thread::index_1d();
///         if i < n as u64 {
///             unsafe { *data.add(i as usize) += value };
///         }
///     }
/// }
///
/// // On the host: the kernel's name and parameter list, as types.
/// use nvptx_std::launch::{Kernel, MutPtr};
/// assert_eq!(add_scalar::NAME, "add_scalar");
/// let _: fn(<add_scalar as Kernel>::Params) = |_: (MutPtr<f32>, f32, u32)| {};
/// ```
#[macro_export]
macro_rules! kernel {
    ($($(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block)*) => {
        $(
            $(#[$attr])*
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body

            $(#[$attr])*
            #[cfg(not(target_arch = "nvptx64"))]
            #[allow(non_camel_case_types)]
            #[derive(Debug, Clone, Copy, Default)]
            pub struct $name;

            $(#[$attr])*
            #[cfg(not(target_arch = "nvptx64"))]
            impl $crate::launch::Kernel for $name {
                const NAME: &'static str = stringify!($name);
                type Params = ($(<$ty as $crate::launch::KernelParam>::Host,)*);
            }
        )*
    };
}

#[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // With `-Cpanic=immediate-abort` no panic reaches here; this satisfies `no_std` linking.
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}
