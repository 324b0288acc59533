//! Typed launches of kernels declared with [`nvptx_std::kernel!`], through
//! [`cudarc`](https://crates.io/crates/cudarc) (the role of `cust::launch!`).
//!
//! A kernel's signature, declared once in the kernels crate, gives the host the kernel's name
//! and parameter types ([`Kernel`]). [`TypedKernel::launch`] takes exactly those parameters: a
//! device buffer the kernel reads (`*const T`) as `&CudaSlice<T>` or `&CudaView<T>`, one it
//! writes (`*mut T`) as `&mut CudaSlice<T>` or `&mut CudaViewMut<T>`, a scalar as a value of
//! its exact type. A wrong type, a read-only buffer where the kernel writes, or a missing
//! argument does not compile:
//!
//! ```compile_fail
//! # nvptx_std::kernel! { pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {} }
//! # let (kernel, stream, config): (nvptx_launch::TypedKernel<saxpy>, cudarc::driver::CudaStream, nvptx_launch::LaunchConfig) = unimplemented!();
//! # let (x, y): (cudarc::driver::CudaSlice<f32>, cudarc::driver::CudaSlice<f32>) = unimplemented!();
//! // `y` is written by the kernel: `&y` does not compile, `&mut y` does.
//! unsafe { kernel.launch(&stream, &config, (2.0f32, &x, &y, 1000u64)) };
//! ```
//!
//! A [`LaunchConfig`] (grid, block, dynamic shared memory, cluster shape) is built only by
//! checked constructors, and checked again against the device and the kernel before a launch is
//! enqueued; every failure is an error value ([`ConfigError`], [`LaunchError`]), never a panic.
//! Launches go to the stream the caller gives, through `cuLaunchKernelEx` (which also launches
//! clusters), ordered against other work on the buffers as cudarc's own launches are.
//!
//! The PTX comes from `nvptx-builder` in the host crate's `build.rs`; [`include_ptx!`] embeds it.
//!
//! ```no_run
//! use nvptx_launch::{LaunchConfig, TypedKernel};
//! # mod my_kernels { nvptx_std::kernel! { pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {} } }
//!
//! let ctx = nvptx_launch::open_device(0)?; // a clear error without a driver or a GPU
//! let module = nvptx_launch::load_module(&ctx, "...nvptx_launch::include_ptx!(\"my_kernels\")...")?;
//! let saxpy = TypedKernel::<my_kernels::saxpy>::load(&module)?;
//! let stream = ctx.new_stream()?;
//! let x = stream.clone_htod(&vec![1.0f32; 1 << 20])?;
//! let mut y = stream.clone_htod(&vec![2.0f32; 1 << 20])?;
//! let config = LaunchConfig::for_elements(1 << 20, 256)?;
//! // SAFETY: x and y hold n values each and do not overlap (saxpy's contract).
//! unsafe { saxpy.launch(&stream, &config, (3.0f32, &x, &mut y, 1u64 << 20)) }?;
//! assert_eq!(stream.clone_dtoh(&y)?[0], 5.0);
//! # Ok::<(), nvptx_launch::LaunchError>(())
//! ```
#![deny(missing_docs)]

mod args;
mod config;
mod kernel;

pub use args::{KernelArg, KernelArgs};
pub use config::{
    ConfigError, DEFAULT_DYNAMIC_SHARED_BYTES, DeviceLimits, Dim3, LaunchConfig, MAX_BLOCK_DIM, MAX_BLOCK_THREADS,
    MAX_CLUSTER_SIZE, MAX_GRID_DIM, PORTABLE_CLUSTER_SIZE,
};
pub use kernel::TypedKernel;
pub use nvptx_std::launch::{ConstPtr, Kernel, KernelParam, MutPtr};

use cudarc::driver::{CudaContext, CudaModule, DriverError, sys};
use std::sync::Arc;

/// Why a device could not be opened or a kernel launched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The launch configuration exceeds what the device or the kernel allows.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `libcuda.so` could not be loaded.
    #[error("no NVIDIA driver: libcuda.so was not found (install the NVIDIA driver, or run on a machine with a GPU)")]
    NoDriver,
    /// The driver reports fewer devices than the ordinal asked for.
    #[error("no CUDA device {ordinal}: the driver reports {count}")]
    NoDevice {
        /// The device asked for.
        ordinal: usize,
        /// Devices present.
        count: i32,
    },
    /// The driver refused the PTX module.
    #[error("the driver could not load the PTX module: {0}")]
    ModuleLoad(DriverError),
    /// The module has no kernel of that name.
    #[error("the PTX has no kernel `{name}`: {source}")]
    KernelMissing {
        /// The kernel's name.
        name: &'static str,
        /// The driver's error.
        source: DriverError,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
}

/// Opens device `ordinal`: a [`LaunchError::NoDriver`] or [`LaunchError::NoDevice`] where
/// there is no driver or no such GPU, instead of the panic of loading a missing `libcuda.so`.
///
/// ```
/// match nvptx_launch::open_device(0) {
///     Ok(ctx) => println!("{}", ctx.name().unwrap_or_default()),
///     Err(e) => println!("no GPU here: {e}"),
/// }
/// ```
pub fn open_device(ordinal: usize) -> Result<Arc<CudaContext>, LaunchError> {
    // SAFETY: only probes whether the driver library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        return Err(LaunchError::NoDriver);
    }
    let count = CudaContext::device_count()?;
    if ordinal >= count.max(0) as usize {
        return Err(LaunchError::NoDevice { ordinal, count });
    }
    Ok(CudaContext::new(ordinal)?)
}

/// Loads a PTX module (the text `nvptx-builder` wrote, e.g. through [`include_ptx!`]) into the
/// context; the driver compiles it for the device.
///
/// ```no_run
/// let ctx = nvptx_launch::open_device(0)?;
/// let module = nvptx_launch::load_module(&ctx, "//\n.version 8.0\n.target sm_90\n.address_size 64\n")?;
/// # Ok::<(), nvptx_launch::LaunchError>(())
/// ```
pub fn load_module(ctx: &Arc<CudaContext>, ptx: &str) -> Result<Arc<CudaModule>, LaunchError> {
    ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(LaunchError::ModuleLoad)
}

/// The PTX module `name` that `nvptx-builder` wrote into this crate's `OUT_DIR` (from its
/// `build.rs`), as a `&'static str` embedded in the binary: `include_ptx!("my_kernels")` is
/// `include_str!(concat!(env!("OUT_DIR"), "/my_kernels.ptx"))`.
///
/// ```ignore
/// const PTX: &str = nvptx_launch::include_ptx!("my_kernels");
/// ```
#[macro_export]
macro_rules! include_ptx {
    ($name:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/", $name, ".ptx"))
    };
}
