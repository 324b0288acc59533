//! Values on the device as the weighted, edges, channels and segmented kernels take them: a view
//! of a device buffer of one input type ([`DeviceValues`]), and the checks every launch makes on
//! device buffers (16-byte alignment, lengths, the `u32` counters' limit).

use super::{InputType, Values};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, DevicePtr};

/// The most values one launch counts: the counters are `u32`.
pub const MAX_VALUES_PER_LAUNCH: u64 = u32::MAX as u64;

/// `len` values of one input type in a device buffer, from its first byte.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
/// let gpu = Gpu::open(0)?;
/// let pixels = gpu.upload(&[0u8, 255, 7, 7])?;
/// let values = DeviceValues::u8(&pixels.as_view());
/// assert_eq!((values.element(), values.len()), (InputType::U8, 4));
/// // A view of part of a buffer counts only those values.
/// let first_two = DeviceValues::u8(&pixels.slice(0..2));
/// assert_eq!(first_two.len(), 2);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DeviceValues<'a> {
    bytes: CudaView<'a, u8>,
    element: InputType,
    len: u64,
}

impl<'a> DeviceValues<'a> {
    /// Every `u8` of `values`.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let bytes = gpu.upload(&[1u8, 2, 3])?;
    /// let values = DeviceValues::u8(&bytes.as_view());
    /// assert_eq!((values.element(), values.bytes().len()), (InputType::U8, 3));
    /// # Ok(()) }
    /// ```
    pub fn u8(values: &CudaView<'a, u8>) -> Self {
        Self { bytes: values.slice(..), element: InputType::U8, len: values.len() as u64 }
    }

    /// Every `u16` of `values`.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let samples = gpu.upload(&[1u16, 2, 3])?;
    /// let values = DeviceValues::u16(&samples.as_view());
    /// assert_eq!((values.element(), values.len(), values.bytes().len()), (InputType::U16, 3, 6));
    /// # Ok(()) }
    /// ```
    pub fn u16(values: &CudaView<'a, u16>) -> Self {
        // SAFETY: every byte pattern is a valid u8; the view covers the same allocation.
        let bytes =
            unsafe { values.transmute::<u8>(2 * values.len()) }.expect("a u16 view holds twice its length in bytes");
        Self { bytes, element: InputType::U16, len: values.len() as u64 }
    }

    /// Every `i32` of `values`.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let ids = gpu.upload(&[-1i32, 0, 40])?;
    /// let values = DeviceValues::i32(&ids.as_view());
    /// assert_eq!((values.element(), values.bytes().len()), (InputType::I32, 12));
    /// # Ok(()) }
    /// ```
    pub fn i32(values: &CudaView<'a, i32>) -> Self {
        // SAFETY: as for u16.
        let bytes =
            unsafe { values.transmute::<u8>(4 * values.len()) }.expect("an i32 view holds 4x its length in bytes");
        Self { bytes, element: InputType::I32, len: values.len() as u64 }
    }

    /// Every `f32` of `values`.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let x = gpu.upload(&[0.5f32, f32::NAN])?;
    /// let values = DeviceValues::f32(&x.as_view());
    /// assert_eq!((values.element(), values.len()), (InputType::F32, 2));
    /// # Ok(()) }
    /// ```
    pub fn f32(values: &CudaView<'a, f32>) -> Self {
        // SAFETY: as for u16.
        let bytes =
            unsafe { values.transmute::<u8>(4 * values.len()) }.expect("an f32 view holds 4x its length in bytes");
        Self { bytes, element: InputType::F32, len: values.len() as u64 }
    }

    /// The first `len` values of type `element` held in `bytes`; fails unless the bytes hold them.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// // A chunk buffer of raw bytes (a streamed file's) that holds 2 i32 values and 2 more bytes.
    /// let chunk = gpu.zeros::<u8>(10)?;
    /// let values = DeviceValues::from_bytes(chunk.as_view(), InputType::I32, 2)?;
    /// assert_eq!(values.len(), 2);
    /// let err = DeviceValues::from_bytes(chunk.as_view(), InputType::I32, 3).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid argument: 3 i32 values asked of a device buffer of 10 bytes");
    /// # Ok(()) }
    /// ```
    pub fn from_bytes(bytes: CudaView<'a, u8>, element: InputType, len: u64) -> Result<Self> {
        let need = len.checked_mul(element.size() as u64);
        if need.is_none_or(|need| need > bytes.len() as u64) {
            return Err(Error::InvalidArgument(format!(
                "{len} {} values asked of a device buffer of {} bytes",
                element.name(),
                bytes.len()
            )));
        }
        Ok(Self { bytes, element, len })
    }

    /// The values' type.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let x = gpu.upload(&[1u16])?;
    /// assert_eq!(DeviceValues::u16(&x.as_view()).element(), InputType::U16);
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> InputType {
        self.element
    }

    /// Number of values.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let chunk = gpu.zeros::<u8>(1 << 20)?;
    /// // The first 1000 f32 of a 1 MiB buffer.
    /// assert_eq!(DeviceValues::from_bytes(chunk.as_view(), InputType::F32, 1000)?.len(), 1000);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let chunk = gpu.zeros::<u8>(16)?;
    /// assert!(DeviceValues::from_bytes(chunk.as_view(), InputType::U8, 0)?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer's bytes.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, device_values::DeviceValues};
    /// let gpu = Gpu::open(0)?;
    /// let chunk = gpu.zeros::<u8>(64)?;
    /// // All of the buffer's bytes, whatever the count.
    /// assert_eq!(DeviceValues::from_bytes(chunk.as_view(), InputType::I32, 3)?.bytes().len(), 64);
    /// # Ok(()) }
    /// ```
    pub fn bytes(&self) -> &CudaView<'a, u8> {
        &self.bytes
    }
}

/// Fails unless the view starts on a 16-byte boundary, as every kernel's vector loads need
/// (`cuMemAlloc` returns such addresses; a view that starts inside a buffer may not).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, histogram::device_values::check_aligned};
/// let gpu = Gpu::open(0)?;
/// let x = gpu.zeros::<f32>(64)?;
/// assert!(check_aligned(&x.as_view(), gpu.stream(), "x").is_ok());
/// assert!(check_aligned(&x.slice(4..), gpu.stream(), "x").is_ok()); // 16 bytes in
/// let err = check_aligned(&x.slice(1..), gpu.stream(), "x").unwrap_err().to_string();
/// assert!(err.contains("which is not 16-byte aligned"), "{err}");
/// # Ok(()) }
/// ```
pub fn check_aligned<T>(view: &CudaView<'_, T>, stream: &CudaStream, what: &str) -> Result<()> {
    let (ptr, _sync) = view.device_ptr(stream);
    if ptr % 16 != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what} start at device address {ptr:#x}, which is not 16-byte aligned: the kernels read 16 bytes at a time (slice device buffers at multiples of 16 bytes)"
        )));
    }
    Ok(())
}

/// Fails when `n` values exceed what one launch's `u32` counters take.
///
/// ```
/// use hopper_kernels::histogram::device_values::{MAX_VALUES_PER_LAUNCH, check_count};
/// assert!(check_count(MAX_VALUES_PER_LAUNCH).is_ok());
/// let err = check_count(MAX_VALUES_PER_LAUNCH + 1).unwrap_err().to_string();
/// assert_eq!(err, "invalid argument: 4294967296 values in one launch: counts are u32, so at most 4294967295 values");
/// ```
pub fn check_count(n: u64) -> Result<()> {
    if n > MAX_VALUES_PER_LAUNCH {
        return Err(Error::InvalidArgument(format!(
            "{n} values in one launch: counts are u32, so at most {MAX_VALUES_PER_LAUNCH} values"
        )));
    }
    Ok(())
}

/// Fails unless an output of `got` elements is the `want` the plan fills.
///
/// ```
/// use hopper_kernels::histogram::device_values::check_output;
/// assert!(check_output(256, 256, "counts").is_ok());
/// let err = check_output(3, 4, "weighted sums").unwrap_err().to_string();
/// assert_eq!(err, "invalid argument: weighted sums: the plan fills 4, the output holds 3");
/// ```
pub fn check_output(got: usize, want: u64, what: &str) -> Result<()> {
    if got as u64 != want {
        return Err(Error::InvalidArgument(format!("{what}: the plan fills {want}, the output holds {got}")));
    }
    Ok(())
}

/// `values` copied to a new device buffer (16 bytes for an empty input, so that the buffer is
/// never null), after checking free memory for it and `extra` more bytes.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::{InputType, Values, device_values::{DeviceValues, upload_values}};
/// let gpu = Gpu::open(0)?;
/// let v = [0.5f32, 1.5, 2.5];
/// // Room for the values and 1024 u32 counters, or an error naming what did not fit.
/// let bytes = upload_values(&gpu, Values::F32(&v), 4 * 1024, "a histogram of 1024 bins")?;
/// assert_eq!(bytes.len(), 12);
/// let values = DeviceValues::from_bytes(bytes.as_view(), InputType::F32, v.len() as u64)?;
/// assert_eq!(values.len(), 3);
/// // No values still make a buffer (of 16 bytes), so that no launch sees a null pointer.
/// assert_eq!(upload_values(&gpu, Values::I32(&[]), 0, "nothing")?.len(), 16);
/// # Ok(()) }
/// ```
pub fn upload_values(gpu: &Gpu, values: Values<'_>, extra: u64, what: &str) -> Result<CudaSlice<u8>> {
    check_count(values.len() as u64)?;
    gpu.ensure_fits(what, values.bytes().len().max(16) as u64 + extra)?;
    if values.is_empty() { gpu.zeros(16) } else { gpu.upload(values.bytes()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_past_u32_are_refused() {
        assert!(check_count(u32::MAX as u64).is_ok());
        assert!(check_count(u32::MAX as u64 + 1).unwrap_err().to_string().contains("counts are u32"));
        assert!(check_output(3, 4, "sums").unwrap_err().to_string().contains("the plan fills 4, the output holds 3"));
    }
}
