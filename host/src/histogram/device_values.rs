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
#[derive(Debug)]
pub struct DeviceValues<'a> {
    bytes: CudaView<'a, u8>,
    element: InputType,
    len: u64,
}

impl<'a> DeviceValues<'a> {
    /// Every `u8` of `values`.
    pub fn u8(values: &CudaView<'a, u8>) -> Self {
        Self { bytes: values.slice(..), element: InputType::U8, len: values.len() as u64 }
    }

    /// Every `u16` of `values`.
    pub fn u16(values: &CudaView<'a, u16>) -> Self {
        // SAFETY: every byte pattern is a valid u8; the view covers the same allocation.
        let bytes =
            unsafe { values.transmute::<u8>(2 * values.len()) }.expect("a u16 view holds twice its length in bytes");
        Self { bytes, element: InputType::U16, len: values.len() as u64 }
    }

    /// Every `i32` of `values`.
    pub fn i32(values: &CudaView<'a, i32>) -> Self {
        // SAFETY: as for u16.
        let bytes =
            unsafe { values.transmute::<u8>(4 * values.len()) }.expect("an i32 view holds 4x its length in bytes");
        Self { bytes, element: InputType::I32, len: values.len() as u64 }
    }

    /// Every `f32` of `values`.
    pub fn f32(values: &CudaView<'a, f32>) -> Self {
        // SAFETY: as for u16.
        let bytes =
            unsafe { values.transmute::<u8>(4 * values.len()) }.expect("an f32 view holds 4x its length in bytes");
        Self { bytes, element: InputType::F32, len: values.len() as u64 }
    }

    /// The first `len` values of type `element` held in `bytes`; fails unless the bytes hold them.
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
    pub fn element(&self) -> InputType {
        self.element
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer's bytes.
    pub fn bytes(&self) -> &CudaView<'a, u8> {
        &self.bytes
    }
}

/// Fails unless the view starts on a 16-byte boundary, as every kernel's vector loads need
/// (`cuMemAlloc` returns such addresses; a view that starts inside a buffer may not).
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
pub fn check_count(n: u64) -> Result<()> {
    if n > MAX_VALUES_PER_LAUNCH {
        return Err(Error::InvalidArgument(format!(
            "{n} values in one launch: counts are u32, so at most {MAX_VALUES_PER_LAUNCH} values"
        )));
    }
    Ok(())
}

/// Fails unless an output of `got` elements is the `want` the plan fills.
pub fn check_output(got: usize, want: u64, what: &str) -> Result<()> {
    if got as u64 != want {
        return Err(Error::InvalidArgument(format!("{what}: the plan fills {want}, the output holds {got}")));
    }
    Ok(())
}

/// `values` copied to a new device buffer (16 bytes for an empty input, so that the buffer is
/// never null), after checking free memory for it and `extra` more bytes.
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
