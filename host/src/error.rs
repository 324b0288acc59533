//! Every way the host can fail, each with a message that names the problem and the fix.

use cudarc::driver::DriverError;

/// Errors of the host library.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// `libcuda.so` could not be loaded.
    #[error("no NVIDIA driver: libcuda.so was not found (install the NVIDIA driver, or run on a machine with a GPU)")]
    NoDriver,
    /// The driver loaded but reports no device.
    #[error("no CUDA device: the NVIDIA driver reports {0} devices")]
    NoDevice(i32),
    /// The requested device index is out of range.
    #[error("no CUDA device {ordinal}: the driver reports {count}")]
    NoSuchDevice {
        /// Requested index.
        ordinal: usize,
        /// Devices present.
        count: i32,
    },
    /// The device cannot run PTX built for the embedded architecture.
    #[error("the PTX targets {ptx_arch}, but {device} has compute capability {major}.{minor}")]
    DeviceTooOld {
        /// The device's name.
        device: String,
        /// Its compute capability, major part.
        major: i32,
        /// Its compute capability, minor part.
        minor: i32,
        /// The PTX `.target`.
        ptx_arch: String,
    },
    /// The embedded PTX is missing or stale (the build script's message).
    #[error("kernels unavailable: {0}")]
    PtxUnavailable(String),
    /// The driver refused the PTX module.
    #[error("the driver could not load the PTX module: {0}")]
    PtxLoad(DriverError),
    /// The PTX lacks a kernel the host needs.
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
    /// Arguments that describe no valid problem (zero sizes, inconsistent lengths, too large).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The buffers would not fit in the device memory that is free now.
    #[error("{what} needs {needed} of device memory, but only {free} of {total} is free")]
    OutOfDeviceMemory {
        /// What needed the memory.
        what: String,
        /// Bytes needed, formatted.
        needed: String,
        /// Bytes free, formatted.
        free: String,
        /// Device memory, formatted.
        total: String,
    },
    /// An input or output file is missing, unreadable or malformed.
    #[error("{}: {problem}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
    /// A typed launch (`nvptx-launch`) refused its configuration or failed.
    #[error("{0}")]
    Launch(#[from] nvptx_launch::LaunchError),
    /// cuBLAS is missing or failed.
    #[error("cuBLAS: {0}")]
    Cublas(String),
}

/// `Result` of the host library.
pub type Result<T, E = HostError> = std::result::Result<T, E>;

/// Formats a byte count with a binary unit (`1.50 GiB`).
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
    use super::format_bytes;

    #[test]
    fn format_bytes_uses_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(80 * 1024 * 1024 * 1024), "80.00 GiB");
    }
}
