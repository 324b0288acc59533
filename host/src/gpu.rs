//! The opened GPU: context, stream, the loaded PTX module, and what the planners need to know
//! about the device.

use crate::error::{Error, Result};
use crate::ptx;
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits, sys};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The compute capability whose devices run `sm_90a` code (the `wgmma` kernels): 9.0 exactly,
/// since architecture-specific (`a`) code runs on no other.
///
/// ```
/// use hopper_kernels::gpu::{DeviceModel, HOPPER_CAPABILITY};
/// use hopper_kernels::ptx::arch_capability;
/// assert_eq!(arch_capability("sm_90a"), Some(HOPPER_CAPABILITY));
/// assert!(DeviceModel::ALL.iter().all(|m| m.info().compute_capability == HOPPER_CAPABILITY));
/// ```
pub const HOPPER_CAPABILITY: (i32, i32) = (9, 0);

/// What the host reports and plans with about a device.
///
/// ```
/// use hopper_kernels::{error::format_bytes, gpu::DeviceModel};
/// let info = DeviceModel::H100.info();
/// assert_eq!((info.sm_count, info.compute_capability), (132, (9, 0)));
/// assert_eq!(format_bytes(info.total_memory), "79.19 GiB");
/// // Serializable: `host bench --json` records the device with its measurements.
/// assert!(serde_json::to_string(&info).unwrap().contains(r#""sm_count":132"#));
/// ```
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    /// Device index.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Device memory, bytes.
    pub total_memory: u64,
    /// Device memory free when the device was opened, bytes.
    pub free_memory: u64,
    /// L2 cache, bytes.
    pub l2_bytes: u64,
    /// Shared memory a block may opt in to, bytes.
    pub max_shared_per_block_optin: u32,
    /// Shared memory per multiprocessor, bytes.
    pub max_shared_per_sm: u32,
    /// Largest thread block.
    pub max_threads_per_block: u32,
    /// Peak SM clock, kHz.
    pub clock_khz: u32,
    /// Driver version as the driver reports it (e.g. 13000 for CUDA 13.0).
    pub driver_cuda_version: i32,
    /// CUDA version the host library was compiled against (cudarc's headers).
    pub build_cuda_version: String,
}

/// A GPU the planners know without one: `--plan --device-model h200` plans for it on any
/// machine, as the planners are pure functions of the device's properties.
///
/// ```
/// use hopper_kernels::gpu::DeviceModel;
/// let h200: DeviceModel = "h200".parse().unwrap();
/// assert_eq!(h200.info().sm_count, 132);
/// assert!("a100".parse::<DeviceModel>().unwrap_err().contains("h100, h200"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceModel {
    /// NVIDIA H100 SXM, 80 GB HBM3.
    H100,
    /// NVIDIA H200 SXM, 141 GB HBM3e: the H100's SMs and clocks with more and faster memory.
    H200,
}

impl DeviceModel {
    /// Every model.
    pub const ALL: [Self; 2] = [Self::H100, Self::H200];

    /// The name the CLI takes.
    ///
    /// ```
    /// use hopper_kernels::gpu::DeviceModel;
    /// assert_eq!(DeviceModel::H200.name(), "h200");
    /// assert_eq!(DeviceModel::H200.name().parse::<DeviceModel>(), Ok(DeviceModel::H200));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::H100 => "h100",
            Self::H200 => "h200",
        }
    }

    /// The model's properties as its driver reports them (580.159, CUDA 13.0), with all of its
    /// memory free.
    ///
    /// ```
    /// use hopper_kernels::gpu::DeviceModel;
    /// let (h100, h200) = (DeviceModel::H100.info(), DeviceModel::H200.info());
    /// // The same SMs and clocks; more memory, all of it free.
    /// assert_eq!((h100.sm_count, h100.clock_khz), (h200.sm_count, h200.clock_khz));
    /// assert!(h200.total_memory > h100.total_memory && h200.free_memory == h200.total_memory);
    /// ```
    pub fn info(self) -> DeviceInfo {
        let (name, total_memory) = match self {
            Self::H100 => ("NVIDIA H100 80GB HBM3 (model)", 85_029_158_912),
            Self::H200 => ("NVIDIA H200 (model)", 150_754_820_096),
        };
        DeviceInfo {
            ordinal: 0,
            name: name.into(),
            compute_capability: HOPPER_CAPABILITY,
            sm_count: 132,
            total_memory,
            free_memory: total_memory,
            l2_bytes: 52_428_800,
            max_shared_per_block_optin: 232_448,
            max_shared_per_sm: 233_472,
            max_threads_per_block: 1024,
            clock_khz: 1_980_000,
            driver_cuda_version: 13000,
            build_cuda_version: "13.0".into(),
        }
    }
}

impl std::str::FromStr for DeviceModel {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == text.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown device model `{text}`: choose from h100, h200"))
    }
}

impl DeviceInfo {
    /// `13.0` from the driver's `13000`.
    ///
    /// ```
    /// use hopper_kernels::gpu::DeviceModel;
    /// let mut info = DeviceModel::H100.info();
    /// assert_eq!(info.driver_cuda_version_string(), "13.0");
    /// info.driver_cuda_version = 12080;
    /// assert_eq!(info.driver_cuda_version_string(), "12.8");
    /// ```
    pub fn driver_cuda_version_string(&self) -> String {
        format!("{}.{}", self.driver_cuda_version / 1000, (self.driver_cuda_version % 1000) / 10)
    }
}

/// Whether `CUDA_FORCE_PTX_JIT=1` asks for the PTX over the build's cubins, as it asks CUDA's
/// own loader for the PTX of a fat binary: for the driver's newer compiler, or to compare the two.
fn force_ptx_jit() -> bool {
    std::env::var_os("CUDA_FORCE_PTX_JIT").is_some_and(|v| v == "1")
}

/// Loads a module from its cubin where there is one (assembled for this device) and the driver
/// takes it, else from its PTX, which the driver compiles (about 90 s for the main module when
/// its cache does not hold it).
fn load_module(
    ctx: &Arc<CudaContext>,
    ptx_text: &str,
    cubin: Option<&'static [u8]>,
) -> std::result::Result<(Arc<CudaModule>, ptx::ModuleCode), cudarc::driver::DriverError> {
    // A driver older than the ptxas that assembled the cubin refuses it; the PTX then still loads.
    if let Some(Ok(module)) = cubin.map(|image| ctx.load_module(Ptx::from_binary(image.to_vec()))) {
        return Ok((module, ptx::ModuleCode::Cubin));
    }
    Ok((ctx.load_module(Ptx::from_src(ptx_text))?, ptx::ModuleCode::Ptx))
}

/// The kernels' modules loaded into one context, and the functions looked up so far.
struct Modules {
    main: Arc<CudaModule>,
    /// The `sm_90a` module, or why it is not loaded (another compute capability, or no PTX).
    hopper: std::result::Result<Arc<CudaModule>, String>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
}

/// A GPU to run the kernels on: a CUDA context with the kernels' PTX loaded, and the stream
/// every operation through it is enqueued on (non-blocking, never the legacy default stream).
/// It opens its own context ([`Gpu::open`]) or works in the caller's ([`Gpu::from_stream`]);
/// [`Gpu::with_stream`] gives the same modules on another stream, cheaply. Nothing it does
/// synchronizes the stream unless its documentation says so, so work through it can be captured
/// in a CUDA graph.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// // Your own cudarc context and stream:
/// let ctx = cudarc::driver::CudaContext::new(0)?;
/// let stream = ctx.new_stream()?;
/// let gpu = hopper_kernels::Gpu::from_stream(stream.clone())?;
/// assert!(std::sync::Arc::ptr_eq(gpu.stream(), &stream));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    modules: Arc<Modules>,
    info: Arc<DeviceInfo>,
    ptx_info: ptx::PtxInfo,
    /// Zeroed per-tile counters of the tensor-core kernels' split of `k`
    /// ([`Gpu::split_counters`]): one buffer per stream, shared by this handle's clones, with its
    /// address.
    split_counters: Arc<Mutex<Option<Counters>>>,
}

/// The split counters' buffer and its device address.
type Counters = (CudaSlice<u32>, u64);

impl Gpu {
    /// Opens device `ordinal` in a context of its own, loads the embedded PTX and makes a
    /// non-blocking stream. Fails with a clear error when there is no driver, no such device, a
    /// device older than the PTX's target, or no usable PTX.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu};
    /// match Gpu::open(0) {
    ///     Ok(gpu) => println!("{} ({} SMs)", gpu.info().name, gpu.info().sm_count),
    ///     Err(Error::NoDriver | Error::NoDevice) => println!("no GPU on this machine"),
    ///     Err(e) => return Err(e), // a device too old for the PTX, unusable PTX, ...
    /// }
    /// # Ok(()) }
    /// ```
    pub fn open(ordinal: usize) -> Result<Self> {
        let ctx = open_context(ordinal)?;
        let stream = ctx.new_stream()?;
        Self::from_stream(stream)
    }

    /// Works in `stream`'s context and enqueues on `stream`: the caller's cudarc context and
    /// stream, shared with the rest of their program.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{GemmDesc, GemmPlan}};
    /// let ctx = hopper_kernels::gpu::open_context(0)?;
    /// let stream = ctx.new_stream()?; // shared with the rest of the program
    /// let gpu = Gpu::from_stream(stream.clone())?;
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(256, 256, 256))?; // its launches go on `stream`
    /// # Ok(()) }
    /// ```
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Self> {
        let ctx = stream.context().clone();
        let info = describe(&ctx)?;
        let ptx_text = ptx::embedded()?;
        let ptx_info = ptx::info()?;
        if let Some(needed) = ptx::arch_capability(&ptx_info.arch)
            && info.compute_capability < needed
        {
            return Err(Error::DeviceTooOld {
                device: info.name.clone(),
                capability: info.compute_capability,
                ptx_arch: ptx_info.arch.clone(),
            });
        }
        let cubin = |code: Option<&'static [u8]>, arch: &str| {
            code.filter(|_| ptx::arch_capability(arch) == Some(info.compute_capability) && !force_ptx_jit())
        };
        let (main, code) = load_module(&ctx, ptx_text, cubin(ptx::embedded_cubin(), &ptx_info.arch))
            .map_err(|source| Error::PtxLoad { module: ptx::MAIN_MODULE, source })?;
        let hopper = if info.compute_capability != HOPPER_CAPABILITY {
            Err(format!(
                "its kernels use wgmma, which exists only on compute capability 9.0 (sm_90a), and {} has {}.{}",
                info.name, info.compute_capability.0, info.compute_capability.1
            ))
        } else {
            match ptx::embedded_hopper() {
                Ok(text) => load_module(&ctx, text, cubin(ptx::embedded_hopper_cubin(), "sm_90a"))
                    .map(|(module, _)| module)
                    .map_err(|e| format!("the driver refused it: {e}")),
                Err(e) => Err(e.to_string()),
            }
        };
        let modules = Arc::new(Modules { main, hopper, functions: Mutex::new(HashMap::new()) });
        let ptx_info = ptx::PtxInfo { code: Some(code), ..ptx_info };
        Ok(Self { ctx, stream, modules, info: Arc::new(info), ptx_info, split_counters: Arc::default() })
    }

    /// The same context and modules, enqueueing on `stream` instead; fails unless `stream`
    /// belongs to this GPU's context.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu};
    /// let gpu = Gpu::open(0)?;
    /// // A second stream of the same context: the loaded modules are shared, not reloaded.
    /// let other = gpu.with_stream(gpu.context().new_stream()?)?;
    /// assert!(!std::sync::Arc::ptr_eq(other.stream(), gpu.stream()));
    /// // A stream of another context is refused.
    /// let foreign = hopper_kernels::gpu::open_context(0)?.new_stream()?;
    /// assert!(matches!(gpu.with_stream(foreign), Err(Error::InvalidArgument(_))));
    /// # Ok(()) }
    /// ```
    pub fn with_stream(&self, stream: Arc<CudaStream>) -> Result<Self> {
        if !Arc::ptr_eq(stream.context(), &self.ctx) {
            return Err(Error::InvalidArgument(
                "the stream belongs to another CUDA context than this GPU's modules".into(),
            ));
        }
        // Counters belong to a stream: launches on another may run at the same time.
        Ok(Self { stream, split_counters: Arc::default(), ..self.clone() })
    }

    /// Description of the device.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let info = gpu.info();
    /// let (major, minor) = info.compute_capability;
    /// println!("{}: compute capability {major}.{minor}, {} SMs", info.name, info.sm_count);
    /// # Ok(()) }
    /// ```
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// What the build recorded about the loaded PTX, and how the main module was loaded
    /// ([`ptx::PtxInfo::code`]: the build's cubin on a GPU of its compute capability, else the
    /// PTX).
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// assert_eq!(gpu.ptx_info().arch, "sm_90");
    /// println!("{} PTX, {} kernels", gpu.ptx_info().profile, gpu.ptx_info().entries.len());
    /// if let Some(code) = gpu.ptx_info().code {
    ///     println!("loaded as the {code}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn ptx_info(&self) -> &ptx::PtxInfo {
        &self.ptx_info
    }

    /// The CUDA context.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let (free, total) = gpu.context().mem_get_info()?;
    /// assert!(free <= total);
    /// # Ok(()) }
    /// ```
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every operation through this GPU is enqueued on.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let x = gpu.stream().clone_htod(&[1.0f32, 2.0])?; // ordered with the library's launches
    /// assert_eq!(gpu.stream().clone_dtoh(&x)?, [1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A kernel of the loaded modules, by its PTX symbol, looked up once per context; a Hopper
    /// kernel (`kernels::HOPPER_KERNEL_NAMES`) on a device that cannot load the `sm_90a` module
    /// is an [`Error::HopperUnavailable`] that says why.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu};
    /// let gpu = Gpu::open(0)?;
    /// let saxpy = gpu.function("saxpy")?;
    /// // On a GPU other than compute capability 9.0, the wgmma kernels say why they cannot run.
    /// if gpu.hopper_status().is_err() {
    ///     assert!(matches!(gpu.function("wgmma_bf16"), Err(Error::HopperUnavailable { .. })));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn function(&self, name: &'static str) -> Result<CudaFunction> {
        let mut functions = self.modules.functions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(f) = functions.get(name) {
            return Ok(f.clone());
        }
        let module = if kernels::HOPPER_KERNEL_NAMES.contains(&name) {
            self.modules
                .hopper
                .as_ref()
                .map_err(|why| Error::HopperUnavailable { kernel: name, reason: why.clone() })?
        } else {
            &self.modules.main
        };
        let f = module.load_function(name).map_err(|source| Error::KernelMissing { name, source })?;
        functions.insert(name, f.clone());
        Ok(f)
    }

    /// Whether the `sm_90a` module (the `wgmma` kernels) is loaded, or why not.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// match gpu.hopper_status() {
    ///     Ok(()) => println!("wgmma kernels loaded"),
    ///     Err(why) => println!("FP32 kernels only: {why}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn hopper_status(&self) -> std::result::Result<(), &str> {
        self.modules.hopper.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// Fails with [`Error::OutOfDeviceMemory`] unless `bytes` fit in the memory free now.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Error, Gpu};
    /// let gpu = Gpu::open(0)?;
    /// gpu.ensure_fits("a small buffer", 1 << 20)?;
    /// let err = gpu.ensure_fits("a petabyte", 1 << 50).unwrap_err();
    /// assert!(matches!(err, Error::OutOfDeviceMemory { needed, .. } if needed == 1 << 50));
    /// # Ok(()) }
    /// ```
    pub fn ensure_fits(&self, what: &str, bytes: u64) -> Result<()> {
        let (free, total) = self.ctx.mem_get_info()?;
        // Leave room for the context's own allocations and fragmentation.
        let usable = (free as u64).saturating_sub(64 << 20);
        if bytes > usable {
            return Err(Error::OutOfDeviceMemory {
                what: what.to_string(),
                needed: bytes,
                free: free as u64,
                total: total as u64,
            });
        }
        Ok(())
    }

    /// Copies a host slice to a new device buffer.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let x = gpu.upload(&[1i32, 2, 3])?;
    /// assert_eq!(x.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        Ok(self.stream.clone_htod(data)?)
    }

    /// Copies a device buffer back to the host.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let x = gpu.upload(&[1i32, 2, 3])?;
    /// assert_eq!(gpu.download(&x)?, [1, 2, 3]); // waits for the copy
    /// # Ok(()) }
    /// ```
    pub fn download<T: DeviceRepr + Default + Clone>(&self, data: &CudaSlice<T>) -> Result<Vec<T>> {
        Ok(self.stream.clone_dtoh(data)?)
    }

    /// A new zeroed device buffer of `len` elements.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let counts = gpu.zeros::<u64>(256)?;
    /// assert_eq!(gpu.download(&counts)?, [0; 256]);
    /// # Ok(()) }
    /// ```
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        Ok(self.stream.alloc_zeros(len)?)
    }

    /// Fills a 4-byte-element buffer with one bit pattern (`cuMemsetD32Async`), e.g. NaN to
    /// poison an output so that an element no thread wrote fails the check.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let mut c = gpu.zeros::<f32>(1024)?;
    /// gpu.fill_u32_pattern(&mut c, f32::NAN.to_bits())?;
    /// assert!(gpu.download(&c)?.iter().all(|x| x.is_nan()));
    /// // Only for 4-byte elements.
    /// assert!(gpu.fill_u32_pattern(&mut gpu.zeros::<u16>(8)?, 0).is_err());
    /// # Ok(()) }
    /// ```
    pub fn fill_u32_pattern<T: DeviceRepr>(&self, buf: &mut CudaSlice<T>, pattern: u32) -> Result<()> {
        if size_of::<T>() != 4 {
            return Err(Error::InvalidArgument(format!(
                "fill_u32_pattern fills 4-byte elements, the buffer's are {} bytes",
                size_of::<T>()
            )));
        }
        let len = buf.len();
        let (ptr, _sync) = cudarc::driver::DevicePtrMut::device_ptr_mut(buf, &self.stream);
        // SAFETY: `ptr` addresses `len` 4-byte elements of a live allocation on this stream.
        unsafe { sys::cuMemsetD32Async(ptr, pattern, len, self.stream.cu_stream()).result()? };
        Ok(())
    }

    /// The device address of at least `len` `u32` counters, zero between launches, for the
    /// tensor-core kernels' split of `k` (each launch counts its work items per tile and sets the
    /// counters back to zero before it ends; `kernels::matmul::wgmma`). One buffer per stream:
    /// launches on one stream run one after another, so they can share it. Grows (allocating
    /// zeroed memory on this stream) when `len` exceeds it, which a stream capture cannot record:
    /// [`Error::NeedsLaunchBeforeCapture`] then, so launch such a plan once before capturing it.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// let gpu = hopper_kernels::Gpu::open(0)?;
    /// let first = gpu.split_counters(100)?;
    /// // Fewer counters than the buffer holds: the same buffer.
    /// assert_eq!(gpu.split_counters(10)?, first);
    /// # Ok(()) }
    /// ```
    pub fn split_counters(&self, len: usize) -> Result<u64> {
        use cudarc::driver::DevicePtr;
        let mut counters = self
            .split_counters
            .lock()
            .map_err(|_| Error::InvalidArgument("a thread panicked while it held this GPU's split counters".into()))?;
        if counters.as_ref().is_none_or(|(c, _)| c.len() < len) {
            self.ensure_not_capturing("the split-K tile counters")?;
            // A few spare, so that a slightly larger plan does not allocate again; freed after the
            // launches already on the stream (cudarc frees on the stream).
            let buffer = self.stream.alloc_zeros::<u32>(len.max(1024))?;
            let ptr = buffer.device_ptr(&self.stream).0;
            *counters = Some((buffer, ptr));
        }
        // The address kept at allocation rather than cudarc's `device_ptr` at every launch (an
        // event wait and an event record each, a microsecond of the host's time): the buffer is
        // this stream's alone, so stream order is all its uses need.
        Ok(counters.as_ref().expect("allocated above").1)
    }

    /// The address of this stream's split counters ([`Gpu::split_counters`]), 0 before the first
    /// plan that needs them: what a captured launch that counts on them depends on.
    pub(crate) fn split_counters_address(&self) -> u64 {
        let counters = self.split_counters.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        counters.as_ref().map_or(0, |(_, ptr)| *ptr)
    }

    /// Whether the stream is being captured into a CUDA graph (by the caller).
    pub(crate) fn is_capturing(&self) -> Result<bool> {
        use sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        Ok(self.stream.capture_status()? != CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Fails with [`Error::NeedsLaunchBeforeCapture`] while the stream is being captured into a
    /// CUDA graph: called before a launch allocates (scratch, tensor maps), which a capture
    /// cannot record.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::cudarc::driver::sys::CUstreamCaptureMode;
    /// use hopper_kernels::{Error, Gpu};
    /// let gpu = Gpu::open(0)?;
    /// gpu.ensure_not_capturing("a scratch buffer")?;
    /// gpu.stream().begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    /// let err = gpu.ensure_not_capturing("a scratch buffer").unwrap_err();
    /// assert!(matches!(err, Error::NeedsLaunchBeforeCapture { what: "a scratch buffer" }));
    /// # Ok(()) }
    /// ```
    pub fn ensure_not_capturing(&self, what: &'static str) -> Result<()> {
        if self.is_capturing()? {
            return Err(Error::NeedsLaunchBeforeCapture { what });
        }
        Ok(())
    }

    /// Waits for all work on the stream, returning the first asynchronous error (a kernel fault):
    /// the one call here that blocks the host.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::{Gpu, matmul::{GemmDesc, GemmPlan}};
    /// let gpu = Gpu::open(0)?;
    /// let plan = GemmPlan::new(&gpu, GemmDesc::new(1024, 1024, 1024))?;
    /// let (a, b) = (gpu.upload(&vec![1.0f32; 1 << 20])?, gpu.upload(&vec![1.0f32; 1 << 20])?);
    /// let mut d = gpu.zeros::<f32>(1 << 20)?;
    /// let mut workspace = gpu.zeros::<u8>(plan.workspace_bytes().max(1))?;
    /// plan.launch(&gpu, &a, &b, &mut d, &mut workspace)?;
    /// gpu.synchronize()?; // a kernel fault would surface here
    /// # Ok(()) }
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }
}

/// Opens a cudarc context on device `ordinal` (what [`Gpu::open`] runs in), failing with
/// [`Error::NoDriver`], [`Error::NoDevice`] or [`Error::NoSuchDevice`] where
/// `CudaContext::new` would panic or return a bare driver error: for callers who make their own
/// streams and hand one to [`Gpu::from_stream`].
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// let ctx = hopper_kernels::gpu::open_context(0)?;
/// let gpu = hopper_kernels::Gpu::from_stream(ctx.new_stream()?)?;
/// # Ok(()) }
/// ```
pub fn open_context(ordinal: usize) -> Result<Arc<CudaContext>> {
    // SAFETY: only probes whether the driver library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::NoDriver);
    }
    let count = CudaContext::device_count()?.max(0) as usize;
    if count == 0 {
        return Err(Error::NoDevice);
    }
    if ordinal >= count {
        return Err(Error::NoSuchDevice { ordinal, count });
    }
    Ok(CudaContext::new(ordinal)?)
}

fn describe(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let attr = |a: Attr| ctx.attribute(a).map(|v| v as u32);
    let (free, total) = ctx.mem_get_info()?;
    let mut driver_version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut driver_version).result()? };
    Ok(DeviceInfo {
        ordinal: ctx.ordinal(),
        name: ctx.name()?,
        compute_capability: ctx.compute_capability()?,
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        total_memory: total as u64,
        free_memory: free as u64,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        max_shared_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        max_shared_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        driver_cuda_version: driver_version,
        build_cuda_version: "13.0".into(),
    })
}

/// Describes device `ordinal` without loading any PTX, so `host info` works even when the
/// kernels are unavailable.
///
/// ```
/// use hopper_kernels::gpu::device_info;
/// // Runs anywhere: without a GPU it is an error that says why, never a panic.
/// match device_info(0) {
///     Ok(info) => println!("{}: {} SMs, {} MiB", info.name, info.sm_count, info.total_memory >> 20),
///     Err(e) => println!("no GPU: {e}"),
/// }
/// ```
pub fn device_info(ordinal: usize) -> Result<DeviceInfo> {
    describe(&open_context(ordinal)?)
}

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` of `size x 1 x 1` blocks.
pub(crate) fn cluster_attribute(size: u32) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero launch attribute is a valid value of this plain C union.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = size;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    attr
}

/// `cfg` on `stream` as a `cuLaunchKernelEx` configuration with the one attribute `attr` (a
/// cluster shape, [`cluster_attribute`]), which must outlive it.
pub(crate) fn launch_config_ex(
    cfg: cudarc::driver::LaunchConfig,
    stream: &CudaStream,
    attr: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attr,
        numAttrs: 1,
    }
}

/// Launches `function` on `stream` with `cfg`, its blocks in clusters of `cluster` along x
/// (`cuLaunchKernelEx`, which cudarc's launch builder does not cover); `params` point at the
/// kernel's parameters, in order.
///
/// # Safety
/// `params` match the kernel's signature, each pointing at a live value of its parameter's type,
/// and the kernel's launch contract holds for `cfg` in such clusters (the grid a multiple of
/// `cluster`, the dynamic shared memory allowed for `function`).
pub(crate) unsafe fn launch_in_clusters(
    function: &CudaFunction,
    cfg: cudarc::driver::LaunchConfig,
    stream: &CudaStream,
    cluster: u32,
    params: &mut [*mut std::ffi::c_void],
) -> Result<()> {
    let mut attr = cluster_attribute(cluster);
    let config = launch_config_ex(cfg, stream, &mut attr);
    // SAFETY: the caller guarantees the parameters and the contract; `attr` outlives the call.
    unsafe {
        sys::cuLaunchKernelEx(&config, function.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()).result()?
    };
    Ok(())
}
