//! Every way the library can fail: one [`Error`] enum whose variants carry what a caller matches
//! on (the dimension, the limit, the buffer, the device), and whose `Display` is the message the
//! `host` command line prints.
//!
//! ```
//! use hopper_kernels::{Error, matmul::MatmulShape};
//! match MatmulShape::new(4, 0, 4) {
//!     Err(Error::ZeroDimension { name }) => assert_eq!(name, "k"),
//!     other => panic!("{other:?}"),
//! }
//! let err = MatmulShape::new(4, 0, 4).unwrap_err();
//! assert_eq!(err.to_string(), "k is 0: every dimension must be at least 1");
//! ```

use crate::matmul::DType;
use cudarc::driver::DriverError;
use std::path::PathBuf;

/// Errors of the library.
///
/// ```
/// use hopper_kernels::{Error, io::read_matrix};
/// let err = read_matrix(std::path::Path::new("no/such.npy")).unwrap_err();
/// // Variants carry what a caller matches on; Display is the message the CLI prints.
/// match &err {
///     Error::File { path, problem } => {
///         assert_eq!((path.to_str(), problem.as_str()), (Some("no/such.npy"), "no such file"))
///     }
///     other => panic!("unexpected: {other}"),
/// }
/// assert_eq!(err.to_string(), "no/such.npy: no such file");
/// let what = "a 4096x4096x4096 matmul".to_string();
/// let e = Error::OutOfDeviceMemory { what, needed: 192 << 20, free: 100 << 20, total: 80 << 30 };
/// let message = "a 4096x4096x4096 matmul needs 192.00 MiB of device memory, but only 100.00 MiB of 80.00 GiB is free";
/// assert_eq!(e.to_string(), message);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `libcuda.so` could not be loaded.
    #[error("no NVIDIA driver: libcuda.so was not found (install the NVIDIA driver, or run on a machine with a GPU)")]
    NoDriver,
    /// The driver loaded but reports no device.
    #[error("no CUDA device: the NVIDIA driver reports none")]
    NoDevice,
    /// The requested device index is out of range.
    #[error("no CUDA device {ordinal}: the driver reports {count}")]
    NoSuchDevice {
        /// Requested index.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// The device cannot run PTX built for the embedded architecture.
    #[error("the PTX targets {ptx_arch}, but {device} has compute capability {}.{}", capability.0, capability.1)]
    DeviceTooOld {
        /// The device's name.
        device: String,
        /// Its compute capability `(major, minor)`.
        capability: (i32, i32),
        /// The PTX `.target`.
        ptx_arch: String,
    },
    /// The embedded PTX of a module is missing or unusable (the build script's reason).
    #[error("kernels unavailable: {module}: {reason}")]
    PtxUnavailable {
        /// The module: `kernels` (sm_90) or `kernels_sm90a`.
        module: &'static str,
        /// Why.
        reason: String,
    },
    /// The driver refused the PTX module.
    #[error("the driver could not load the PTX module {module}: {source}")]
    PtxLoad {
        /// The module.
        module: &'static str,
        /// The driver's error.
        source: DriverError,
    },
    /// The PTX lacks a kernel the library needs.
    #[error("the PTX has no kernel `{name}`: {source}")]
    KernelMissing {
        /// The kernel's symbol.
        name: &'static str,
        /// The driver's error.
        source: DriverError,
    },
    /// A Hopper (`sm_90a`) kernel on a device or build that cannot run it; other kernels still
    /// run.
    #[error("{kernel} cannot run here: {reason}")]
    HopperUnavailable {
        /// The kernel's symbol.
        kernel: &'static str,
        /// Why the sm_90a module is not loaded.
        reason: String,
    },
    /// A matrix or histogram dimension of zero.
    #[error("{name} is 0: every dimension must be at least 1")]
    ZeroDimension {
        /// The dimension (`m`, `k`, `n`, `batch`, `bins`, `rows`, ...).
        name: &'static str,
    },
    /// A size beyond what a kernel, CUDA or the counters take.
    #[error("{what} = {value} exceeds the limit of {limit}")]
    LimitExceeded {
        /// What is too large, in words.
        what: String,
        /// Its value.
        value: u64,
        /// The largest value taken.
        limit: u64,
    },
    /// Matrices whose inner dimensions differ.
    #[error("A is {}x{} and B is {}x{}: A's columns ({}) must equal B's rows ({})", a.0, a.1, b.0, b.1, a.1, b.0)]
    ShapeMismatch {
        /// `A`'s rows and columns.
        a: (usize, usize),
        /// `B`'s rows and columns.
        b: (usize, usize),
    },
    /// A leading dimension shorter than the rows (column-major) or columns (row-major) it strides.
    #[error("{operand}: leading dimension {ld} is less than {min}")]
    LeadingDimension {
        /// The operand (`A`, `B`, `C`, `D`).
        operand: &'static str,
        /// Its leading dimension, elements.
        ld: usize,
        /// The least it may be.
        min: usize,
    },
    /// A device buffer shorter than the layout it is given for.
    #[error("{buffer} holds {len} elements, its layout needs {needed}")]
    BufferTooSmall {
        /// The buffer (`A`, `B`, `C`, `D`, `workspace`, `values`, `counts`).
        buffer: &'static str,
        /// Its length, elements.
        len: usize,
        /// The least it must hold.
        needed: usize,
    },
    /// Two buffers that overlap where a kernel writes one while it reads the other.
    #[error("{written} overlaps {read}: a kernel writes the one while it reads the other")]
    Overlap {
        /// The buffer written.
        written: &'static str,
        /// The buffer read.
        read: &'static str,
    },
    /// A buffer's element type is not the one its descriptor names.
    #[error("{operand} holds {got} elements, its descriptor says {expected}")]
    DTypeMismatch {
        /// The operand.
        operand: &'static str,
        /// The descriptor's type.
        expected: DType,
        /// The buffer's type.
        got: DType,
    },
    /// An input value the operands' element type cannot hold: `f32` inputs rounded to F16 for
    /// `wgmma_f16` (F16's largest finite value is 65504; from 65520 on the rounding gives an
    /// infinity, which would silently turn the products into infinities or NaN).
    #[error("{operand}[{index}] = {value} is outside {dtype}'s finite range: rounded to {dtype} it would be infinite")]
    OutOfRange {
        /// The operand (`A` or `B`).
        operand: &'static str,
        /// The first such element's index, row-major.
        index: usize,
        /// Its value.
        value: f32,
        /// The element type it was to be rounded to.
        dtype: DType,
    },
    /// A combination of arguments no kernel takes, and why (a planner's refusal).
    #[error("{0}")]
    Unsupported(String),
    /// An argument outside its domain, with the reason.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The buffers would not fit in the device memory that is free now.
    #[error("{what} needs {} of device memory, but only {} of {} is free", format_bytes(*needed), format_bytes(*free), format_bytes(*total))]
    OutOfDeviceMemory {
        /// What needed the memory.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes free.
        free: u64,
        /// Device memory, bytes.
        total: u64,
    },
    /// A launch that must allocate device memory (its first with these buffers, or a larger one)
    /// was enqueued while its stream is being captured into a CUDA graph.
    #[error(
        "{what} allocates device memory on its first launch, which a stream capture cannot record: launch it once before the capture begins"
    )]
    NeedsLaunchBeforeCapture {
        /// What would have allocated.
        what: &'static str,
    },
    /// An input or output file is missing, unreadable or malformed.
    #[error("{}: {problem}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
    /// A typed launch (`nvptx-launch`) refused its configuration or failed.
    #[error("{0}")]
    Launch(#[from] nvptx_launch::LaunchError),
}

/// `Result` of the library.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Result, matmul::MatmulShape};
/// fn cube(n: usize) -> Result<MatmulShape> {
///     MatmulShape::new(n, n, n)
/// }
/// assert_eq!(cube(4)?.flops(), 128.0);
/// assert!(cube(0).is_err());
/// # Ok(()) }
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Formats a byte count with a binary unit (`1.50 GiB`).
///
/// ```
/// assert_eq!(hopper_kernels::error::format_bytes(1536), "1.50 KiB");
/// ```
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.2} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_bytes_uses_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(80 * 1024 * 1024 * 1024), "80.00 GiB");
    }

    #[test]
    fn messages_name_the_problem_and_its_numbers() {
        let e = Error::LimitExceeded { what: "m * n for the split-K reduction".into(), value: 5, limit: 4 };
        assert_eq!(e.to_string(), "m * n for the split-K reduction = 5 exceeds the limit of 4");
        let e = Error::OutOfDeviceMemory { what: "A".into(), needed: 2048, free: 1024, total: 4096 };
        assert_eq!(e.to_string(), "A needs 2.00 KiB of device memory, but only 1.00 KiB of 4.00 KiB is free");
        let e = Error::ShapeMismatch { a: (2, 3), b: (4, 2) };
        assert_eq!(e.to_string(), "A is 2x3 and B is 4x2: A's columns (3) must equal B's rows (4)");
    }
}
