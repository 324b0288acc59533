//! A loaded kernel that knows its parameter types, and its launch.

use crate::args::KernelArgs;
use crate::config::{DEFAULT_DYNAMIC_SHARED_BYTES, DeviceLimits, LaunchConfig, PORTABLE_CLUSTER_SIZE};
use crate::{ConfigError, LaunchError};
use cudarc::driver::sys::{self, CUfunction_attribute as FnAttr};
use cudarc::driver::{CudaFunction, CudaModule, CudaStream};
use nvptx_std::launch::Kernel;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

/// What the launcher checks a launch against, read from the driver once per kernel.
#[derive(Debug, Clone, Copy)]
struct Limits {
    device: DeviceLimits,
    /// Threads per block the kernel can run (its registers, its `.maxntid`).
    max_threads: u32,
    /// The kernel's static shared memory, bytes.
    static_shared: u32,
}

/// Kernel `K` of a loaded module: launches take exactly `K`'s parameter types, checked by the
/// compiler ([`KernelArgs`]), and a [`LaunchConfig`] checked against the device and the kernel
/// before anything is enqueued.
///
/// ```no_run
/// use nvptx_launch::{LaunchConfig, TypedKernel};
///
/// nvptx_std::kernel! {
///     /// `y = a * x + y` over `n` values.
///     pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {}
/// }
///
/// let ctx = nvptx_launch::open_device(0)?;
/// let module = nvptx_launch::load_module(&ctx, "...PTX built from the kernels crate...")?;
/// let stream = ctx.new_stream()?;
/// let kernel = TypedKernel::<saxpy>::load(&module)?;
/// let x = stream.clone_htod(&[1.0f32; 1000])?;
/// let mut y = stream.alloc_zeros::<f32>(1000)?;
/// let config = LaunchConfig::for_elements(1000, 256)?;
/// // SAFETY: x and y hold 1000 values each, as saxpy's contract asks.
/// unsafe { kernel.launch(&stream, &config, (2.0f32, &x, &mut y, 1000u64)) }?;
/// # Ok::<(), nvptx_launch::LaunchError>(())
/// ```
pub struct TypedKernel<K: Kernel> {
    function: CudaFunction,
    limits: OnceLock<Limits>,
    /// The largest dynamic shared memory limit set on the function so far (0: the driver's
    /// default, 48 KiB with the static shared memory).
    dynamic_shared_limit: AtomicU32,
    non_portable_clusters: AtomicBool,
    kernel: PhantomData<fn() -> K>,
}

impl<K: Kernel> TypedKernel<K> {
    /// Kernel `K` (by its name, `K::NAME`) from a module loaded from the PTX of the crate that
    /// declares `K`.
    ///
    /// ```no_run
    /// # nvptx_std::kernel! { pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {} }
    /// # let module: std::sync::Arc<cudarc::driver::CudaModule> = unimplemented!();
    /// let kernel = nvptx_launch::TypedKernel::<saxpy>::load(&module)?;
    /// # Ok::<(), nvptx_launch::LaunchError>(())
    /// ```
    pub fn load(module: &Arc<CudaModule>) -> Result<Self, LaunchError> {
        let function =
            module.load_function(K::NAME).map_err(|source| LaunchError::KernelMissing { name: K::NAME, source })?;
        Ok(Self::from_function(function))
    }

    /// Kernel `K` as an already loaded function (e.g. from a cache of functions); it must be the
    /// function named `K::NAME` in a module built from the crate that declares `K` (see
    /// [`TypedKernel::launch`]).
    ///
    /// ```no_run
    /// # nvptx_std::kernel! { pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {} }
    /// # let module: std::sync::Arc<cudarc::driver::CudaModule> = unimplemented!();
    /// let function = module.load_function("saxpy")?;
    /// let kernel = nvptx_launch::TypedKernel::<saxpy>::from_function(function);
    /// # Ok::<(), cudarc::driver::DriverError>(())
    /// ```
    pub fn from_function(function: CudaFunction) -> Self {
        Self {
            function,
            limits: OnceLock::new(),
            dynamic_shared_limit: AtomicU32::new(0),
            non_portable_clusters: AtomicBool::new(false),
            kernel: PhantomData,
        }
    }

    /// The cudarc function, for what this type does not wrap (occupancy queries, attributes).
    ///
    /// ```no_run
    /// # nvptx_std::kernel! { pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {} }
    /// # let kernel: nvptx_launch::TypedKernel<saxpy> = unimplemented!();
    /// let blocks_per_sm = kernel.function().occupancy_max_active_blocks_per_multiprocessor(256, 0, None)?;
    /// # Ok::<(), cudarc::driver::DriverError>(())
    /// ```
    pub fn function(&self) -> &CudaFunction {
        &self.function
    }

    fn limits(&self, stream: &CudaStream) -> Result<Limits, LaunchError> {
        if let Some(limits) = self.limits.get() {
            return Ok(*limits);
        }
        let attribute = |a| self.function.get_attribute(a).map(|v| v.max(0) as u32);
        let limits = Limits {
            device: DeviceLimits::query(stream.context())?,
            max_threads: attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            static_shared: attribute(FnAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        };
        Ok(*self.limits.get_or_init(|| limits))
    }

    /// Checks `config` against the device and the kernel: the errors [`TypedKernel::launch`]
    /// returns before enqueuing anything.
    ///
    /// ```no_run
    /// # nvptx_std::kernel! { pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {} }
    /// # let (kernel, stream): (nvptx_launch::TypedKernel<saxpy>, cudarc::driver::CudaStream) = unimplemented!();
    /// let config = nvptx_launch::LaunchConfig::new(1, 1024)?;
    /// kernel.check(&stream, &config)?;
    /// # Ok::<(), nvptx_launch::LaunchError>(())
    /// ```
    pub fn check(&self, stream: &CudaStream, config: &LaunchConfig) -> Result<(), LaunchError> {
        self.checked_limits(stream, config).map(|_| ())
    }

    fn checked_limits(&self, stream: &CudaStream, config: &LaunchConfig) -> Result<Limits, LaunchError> {
        let limits = self.limits(stream)?;
        config.check_device(&limits.device, limits.static_shared)?;
        let threads = config.block().product();
        if threads > limits.max_threads as u64 {
            return Err(ConfigError::KernelBlockTooLarge { kernel: K::NAME, threads, limit: limits.max_threads }.into());
        }
        Ok(limits)
    }

    /// Enqueues kernel `K` on `stream` with `config` and `args`, one argument per parameter in
    /// order ([`KernelArgs`]: a wrong type, a missing argument or a `&` buffer where the kernel
    /// writes is a compile error). Raises the kernel's dynamic shared memory limit above 48 KiB
    /// and opts it in to non-portable cluster sizes when `config` needs it; fails before
    /// enqueuing anything when `config` exceeds what the device or the kernel allows
    /// ([`TypedKernel::check`]). Returns once the launch is enqueued; a fault inside the kernel
    /// is reported by a later synchronisation of the stream.
    ///
    /// # Safety
    /// What neither the compiler nor the launcher can check, as for any CUDA launch:
    /// - this kernel is `K`: the function named `K::NAME` in a module built from the same
    ///   declaration of `K` (not a stale PTX of another signature);
    /// - `args` and `config` meet `K`'s documented contract: buffers hold as many elements as
    ///   the kernel reads or writes for these sizes, the block and shared memory are what the
    ///   kernel expects, buffers the kernel writes do not overlap others it accesses;
    /// - the kernel itself is free of data races and out-of-bounds accesses for those inputs.
    ///
    /// ```no_run
    /// # nvptx_std::kernel! { pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {} }
    /// # let (kernel, stream): (nvptx_launch::TypedKernel<saxpy>, std::sync::Arc<cudarc::driver::CudaStream>) = unimplemented!();
    /// let x = stream.clone_htod(&[1.0f32; 4096])?;
    /// let mut y = stream.clone_htod(&[2.0f32; 4096])?;
    /// let config = nvptx_launch::LaunchConfig::for_elements(4096, 256)?;
    /// // SAFETY: x and y hold n = 4096 values each and do not overlap (saxpy's contract).
    /// unsafe { kernel.launch(&stream, &config, (0.5f32, &x, &mut y, 4096u64)) }?;
    /// let y = stream.clone_dtoh(&y)?;
    /// # Ok::<(), nvptx_launch::LaunchError>(())
    /// ```
    pub unsafe fn launch<A: KernelArgs<K::Params>>(
        &self,
        stream: &CudaStream,
        config: &LaunchConfig,
        args: A,
    ) -> Result<(), LaunchError> {
        let limits = self.checked_limits(stream, config)?;
        stream.context().bind_to_thread()?;
        let dynamic = config.dynamic_shared_bytes();
        // By default a block may use 48 KiB of shared memory, static and dynamic together.
        let over_default = dynamic as u64 + limits.static_shared as u64 > DEFAULT_DYNAMIC_SHARED_BYTES as u64;
        if over_default && dynamic > self.dynamic_shared_limit.load(Ordering::Relaxed) {
            self.function.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic as i32)?;
            self.dynamic_shared_limit.fetch_max(dynamic, Ordering::Relaxed);
        }
        let mut attributes = Vec::new();
        if let Some(cluster) = config.cluster() {
            if cluster.product() > PORTABLE_CLUSTER_SIZE as u64 && !self.non_portable_clusters.load(Ordering::Relaxed) {
                self.function.set_attribute(FnAttr::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)?;
                self.non_portable_clusters.store(true, Ordering::Relaxed);
            }
            // SAFETY: an all-zero launch attribute is a valid value of this plain C union.
            let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attr.value.clusterDim.x = cluster.x;
            attr.value.clusterDim.y = cluster.y;
            attr.value.clusterDim.z = cluster.z;
            attributes.push(attr);
        }
        // The parameters' bytes and buffer guards live until after the launch is enqueued; the
        // guards then record the launch's accesses on the buffers' events.
        let mut params = args.into_params(stream);
        let mut pointers: Vec<*mut std::ffi::c_void> = params.iter_mut().map(|p| p.as_kernel_param()).collect();
        let (grid, block) = (config.grid(), config.block());
        let launch = sys::CUlaunchConfig {
            gridDimX: grid.x,
            gridDimY: grid.y,
            gridDimZ: grid.z,
            blockDimX: block.x,
            blockDimY: block.y,
            blockDimZ: block.z,
            sharedMemBytes: dynamic,
            hStream: stream.cu_stream(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: attributes.len() as u32,
        };
        // SAFETY: `pointers` holds one pointer per parameter of `K` (the compiler checked the
        // arguments against K::Params), each to its value's bytes in `params`, alive until after
        // this call; `attributes` outlives it too; the kernel's own contract is the caller's.
        unsafe {
            sys::cuLaunchKernelEx(&launch, self.function.cu_function(), pointers.as_mut_ptr(), std::ptr::null_mut())
                .result()?
        };
        drop(params);
        Ok(())
    }
}
