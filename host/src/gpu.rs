//! The opened GPU: context, stream, the loaded PTX module, and what the planners need to know
//! about the device.

use crate::error::{HostError, Result, format_bytes};
use crate::ptx;
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits, sys};
use cudarc::nvrtc::Ptx;
use std::sync::Arc;

/// The compute capability whose devices run `sm_90a` code (the `wgmma` kernels): 9.0 exactly,
/// since architecture-specific (`a`) code runs on no other.
pub const HOPPER_CAPABILITY: (i32, i32) = (9, 0);

/// What the host reports and plans with about a device.
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
/// use host::gpu::DeviceModel;
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
    pub fn name(self) -> &'static str {
        match self {
            Self::H100 => "h100",
            Self::H200 => "h200",
        }
    }

    /// The model's properties as its driver reports them (580.159, CUDA 13.0), with all of its
    /// memory free.
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
    pub fn driver_cuda_version_string(&self) -> String {
        format!("{}.{}", self.driver_cuda_version / 1000, (self.driver_cuda_version % 1000) / 10)
    }
}

/// An opened GPU with the kernels' PTX module loaded.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    /// The `sm_90a` module, or why it is not loaded (another compute capability, or no PTX).
    hopper: std::result::Result<Arc<CudaModule>, String>,
    info: DeviceInfo,
    ptx_info: ptx::PtxInfo,
}

impl Gpu {
    /// Opens device `ordinal` and loads the embedded PTX. Fails with a clear error when there is
    /// no driver, no such device, a device older than the PTX's target, or no usable PTX.
    pub fn open(ordinal: usize) -> Result<Self> {
        let ctx = open_context(ordinal)?;
        let info = describe(&ctx)?;
        let ptx_text = ptx::embedded()?;
        let ptx_info = ptx::info()?;
        if let Some(needed) = ptx::arch_capability(&ptx_info.arch)
            && info.compute_capability < needed
        {
            return Err(HostError::DeviceTooOld {
                device: info.name.clone(),
                major: info.compute_capability.0,
                minor: info.compute_capability.1,
                ptx_arch: ptx_info.arch.clone(),
            });
        }
        let module = ctx.load_module(Ptx::from_src(ptx_text)).map_err(HostError::PtxLoad)?;
        let hopper = if info.compute_capability != HOPPER_CAPABILITY {
            Err(format!(
                "its kernels use wgmma, which exists only on compute capability 9.0 (sm_90a), and {} has {}.{}",
                info.name, info.compute_capability.0, info.compute_capability.1
            ))
        } else {
            match ptx::embedded_hopper() {
                Ok(text) => ctx.load_module(Ptx::from_src(text)).map_err(|e| format!("the driver refused it: {e}")),
                Err(e) => Err(e.to_string()),
            }
        };
        let stream = ctx.default_stream();
        Ok(Self { ctx, stream, module, hopper, info, ptx_info })
    }

    /// Description of the device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// What the build recorded about the loaded PTX.
    pub fn ptx_info(&self) -> &ptx::PtxInfo {
        &self.ptx_info
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch of this host goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A kernel of the loaded modules, by its PTX symbol; a Hopper kernel
    /// (`kernels::HOPPER_KERNEL_NAMES`) on a device that cannot load the `sm_90a` module is an
    /// [`HostError::HopperUnavailable`] that says why.
    pub fn function(&self, name: &'static str) -> Result<CudaFunction> {
        if kernels::HOPPER_KERNEL_NAMES.contains(&name) {
            let module = self
                .hopper
                .as_ref()
                .map_err(|why| HostError::HopperUnavailable { kernel: name, reason: why.clone() })?;
            return module.load_function(name).map_err(|source| HostError::KernelMissing { name, source });
        }
        self.module.load_function(name).map_err(|source| HostError::KernelMissing { name, source })
    }

    /// Whether the `sm_90a` module (the `wgmma` kernels) is loaded, or why not.
    pub fn hopper_status(&self) -> std::result::Result<(), &str> {
        self.hopper.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// Fails with [`HostError::OutOfDeviceMemory`] unless `bytes` fit in the memory free now.
    pub fn ensure_fits(&self, what: &str, bytes: u64) -> Result<()> {
        let (free, total) = self.ctx.mem_get_info()?;
        // Leave room for the context's own allocations and fragmentation.
        let usable = (free as u64).saturating_sub(64 << 20);
        if bytes > usable {
            return Err(HostError::OutOfDeviceMemory {
                what: what.to_string(),
                needed: format_bytes(bytes),
                free: format_bytes(free as u64),
                total: format_bytes(total as u64),
            });
        }
        Ok(())
    }

    /// Copies a host slice to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        Ok(self.stream.clone_htod(data)?)
    }

    /// Copies a device buffer back to the host.
    pub fn download<T: DeviceRepr + Default + Clone>(&self, data: &CudaSlice<T>) -> Result<Vec<T>> {
        Ok(self.stream.clone_dtoh(data)?)
    }

    /// A new zeroed device buffer of `len` elements.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        Ok(self.stream.alloc_zeros(len)?)
    }

    /// Fills a 4-byte-element buffer with one bit pattern (`cuMemsetD32Async`), e.g. NaN to
    /// poison an output so that an element no thread wrote fails the check.
    pub fn fill_u32_pattern<T: DeviceRepr>(&self, buf: &mut CudaSlice<T>, pattern: u32) -> Result<()> {
        assert_eq!(size_of::<T>(), 4, "fill_u32_pattern takes 4-byte elements");
        let len = buf.len();
        let (ptr, _sync) = cudarc::driver::DevicePtrMut::device_ptr_mut(buf, &self.stream);
        // SAFETY: `ptr` addresses `len` 4-byte elements of a live allocation on this stream.
        unsafe { sys::cuMemsetD32Async(ptr, pattern, len, self.stream.cu_stream()).result()? };
        Ok(())
    }

    /// Waits for all work on the stream, returning the first asynchronous error (a kernel fault).
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }
}

fn open_context(ordinal: usize) -> Result<Arc<CudaContext>> {
    // SAFETY: only probes whether the driver library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        return Err(HostError::NoDriver);
    }
    let count = CudaContext::device_count()?;
    if count <= 0 {
        return Err(HostError::NoDevice(count));
    }
    if ordinal >= count as usize {
        return Err(HostError::NoSuchDevice { ordinal, count });
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
pub fn device_info(ordinal: usize) -> Result<DeviceInfo> {
    describe(&open_context(ordinal)?)
}
