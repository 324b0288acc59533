//! Launch configurations: grid, block, dynamic shared memory and cluster shape, as a value whose
//! limits are checked when it is built (the CUDA limits of every device of compute capability
//! 9.0 and later) and, against the device and the kernel, before a launch is enqueued.

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, DriverError};
use std::fmt;

/// Most threads in one block.
pub const MAX_BLOCK_THREADS: u32 = 1024;
/// Most threads along each axis of a block.
pub const MAX_BLOCK_DIM: Dim3 = Dim3 { x: 1024, y: 1024, z: 64 };
/// Most blocks along each axis of a grid.
pub const MAX_GRID_DIM: Dim3 = Dim3 { x: i32::MAX as u32, y: 65_535, z: 65_535 };
/// Most blocks in a cluster that every device with clusters runs.
pub const PORTABLE_CLUSTER_SIZE: u32 = 8;
/// Most blocks in a cluster on any device (a non-portable size: the launcher opts the kernel in,
/// and the device may still refuse it for the kernel's resources).
pub const MAX_CLUSTER_SIZE: u32 = 16;
/// Dynamic shared memory a kernel may use without opting in to more.
pub const DEFAULT_DYNAMIC_SHARED_BYTES: u32 = 48 * 1024;

/// Three dimensions of a grid, block or cluster; `From` a `u32` (x), `(x, y)` or `(x, y, z)`.
///
/// ```
/// use nvptx_launch::Dim3;
/// assert_eq!(Dim3::from((16, 8)), Dim3 { x: 16, y: 8, z: 1 });
/// assert_eq!(Dim3::from(256).product(), 256);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Along x.
    pub x: u32,
    /// Along y.
    pub y: u32,
    /// Along z.
    pub z: u32,
}

impl Dim3 {
    /// `x * y * z`, without overflow.
    ///
    /// ```
    /// assert_eq!(nvptx_launch::Dim3::from((65_535, 65_535, 65_535)).product(), 65_535u64.pow(3));
    /// ```
    pub fn product(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    fn axes(self) -> [(char, u32); 3] {
        [('x', self.x), ('y', self.y), ('z', self.z)]
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self { x, y, z }
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x {} x {}", self.x, self.y, self.z)
    }
}

/// A launch configuration that breaks a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A grid, block or cluster with a zero dimension.
    #[error("the {what} is {dims}: every dimension must be at least 1")]
    ZeroDimension {
        /// `grid`, `block` or `cluster`.
        what: &'static str,
        /// Its dimensions.
        dims: Dim3,
    },
    /// A block of more than [`MAX_BLOCK_THREADS`] threads.
    #[error("a block of {dims} is {threads} threads: at most {MAX_BLOCK_THREADS}")]
    BlockTooLarge {
        /// The block.
        dims: Dim3,
        /// Its threads.
        threads: u64,
    },
    /// A block, grid or cluster dimension over its limit.
    #[error("the {what}'s {axis} is {value}: at most {limit}")]
    DimensionTooLarge {
        /// `grid` or `block`.
        what: &'static str,
        /// The axis.
        axis: char,
        /// The value given.
        value: u32,
        /// The limit.
        limit: u32,
    },
    /// A cluster of more than [`MAX_CLUSTER_SIZE`] blocks.
    #[error("a cluster of {dims} is {blocks} blocks: at most {MAX_CLUSTER_SIZE} ({PORTABLE_CLUSTER_SIZE} portably)")]
    ClusterTooLarge {
        /// The cluster.
        dims: Dim3,
        /// Its blocks.
        blocks: u64,
    },
    /// A grid that is not a whole number of clusters.
    #[error("the grid ({grid}) is not a whole number of clusters of {cluster} along {axis}")]
    ClusterDoesNotDivideGrid {
        /// The grid.
        grid: Dim3,
        /// The cluster.
        cluster: Dim3,
        /// The first axis where it does not divide.
        axis: char,
    },
    /// More shared memory per block than the device allows.
    #[error(
        "{dynamic_bytes} bytes of dynamic shared memory per block, with the kernel's {static_bytes} bytes of static \
         shared memory, exceed the {limit} bytes a block may use on this device"
    )]
    SharedMemoryTooLarge {
        /// Dynamic shared memory asked for.
        dynamic_bytes: u32,
        /// The kernel's static shared memory.
        static_bytes: u32,
        /// The device's per-block opt-in limit.
        limit: u32,
    },
    /// A block larger than the kernel can run (its registers per thread, or its `.maxntid`).
    #[error("{kernel} runs at most {limit} threads per block (its registers or .maxntid); the launch asks {threads}")]
    KernelBlockTooLarge {
        /// The kernel.
        kernel: &'static str,
        /// Threads per block asked for.
        threads: u64,
        /// The kernel's limit.
        limit: u32,
    },
    /// A cluster launch on a device without clusters.
    #[error("the launch asks for clusters, which compute capability {}.{} does not have (9.0 and later do)", .capability.0, .capability.1)]
    ClustersUnsupported {
        /// The device's compute capability.
        capability: (i32, i32),
    },
}

/// Grid, block, dynamic shared memory and cluster shape of a launch, built only by checked
/// constructors: every value of this type is within the limits of every device of compute
/// capability 9.0 and later. What depends on the device or the kernel (shared memory, threads a
/// kernel's registers allow) is checked again by the launcher, before anything is enqueued.
///
/// ```
/// use nvptx_launch::{ConfigError, LaunchConfig};
/// let config = LaunchConfig::new(1024, 256)?.with_dynamic_shared_bytes(64 * 1024);
/// assert_eq!(config.threads_per_block(), 256);
/// assert!(matches!(LaunchConfig::new(1, (32, 64)), Err(ConfigError::BlockTooLarge { .. })));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    grid: Dim3,
    block: Dim3,
    dynamic_shared_bytes: u32,
    cluster: Option<Dim3>,
}

impl LaunchConfig {
    /// A grid of `grid` blocks of `block` threads each, without dynamic shared memory or
    /// clusters. Fails on a zero dimension, a block over [`MAX_BLOCK_THREADS`] threads or
    /// [`MAX_BLOCK_DIM`], or a grid over [`MAX_GRID_DIM`].
    ///
    /// ```
    /// use nvptx_launch::{ConfigError, LaunchConfig};
    /// let rows = LaunchConfig::new((1, 70_000), 256);
    /// assert!(matches!(rows, Err(ConfigError::DimensionTooLarge { what: "grid", axis: 'y', .. })));
    /// ```
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Result<Self, ConfigError> {
        let (grid, block) = (grid.into(), block.into());
        for (what, dims, limit) in [("grid", grid, MAX_GRID_DIM), ("block", block, MAX_BLOCK_DIM)] {
            if dims.product() == 0 {
                return Err(ConfigError::ZeroDimension { what, dims });
            }
            for ((axis, value), (_, limit)) in dims.axes().into_iter().zip(limit.axes()) {
                if value > limit {
                    return Err(ConfigError::DimensionTooLarge { what, axis, value, limit });
                }
            }
        }
        if block.product() > MAX_BLOCK_THREADS as u64 {
            return Err(ConfigError::BlockTooLarge { dims: block, threads: block.product() });
        }
        Ok(Self { grid, block, dynamic_shared_bytes: 0, cluster: None })
    }

    /// One thread per element of `n` in blocks of `block` threads: `ceil(n / block)` blocks
    /// along x (for kernels that guard `index_1d() < n`).
    ///
    /// ```
    /// let config = nvptx_launch::LaunchConfig::for_elements(1000, 256)?;
    /// assert_eq!(config.grid().x, 4);
    /// # Ok::<(), nvptx_launch::ConfigError>(())
    /// ```
    pub fn for_elements(n: u64, block: u32) -> Result<Self, ConfigError> {
        let blocks = n.div_ceil(block.max(1) as u64).max(1);
        let grid = u32::try_from(blocks).unwrap_or(u32::MAX);
        Self::new(grid, block)
    }

    /// The same launch with `bytes` of dynamic shared memory per block (what
    /// `dynamic_shared_array!` sees). Above [`DEFAULT_DYNAMIC_SHARED_BYTES`] the launcher raises
    /// the kernel's limit; the device's own limit is checked at launch.
    ///
    /// ```
    /// let config = nvptx_launch::LaunchConfig::new(8, 256)?.with_dynamic_shared_bytes(100_000);
    /// assert_eq!(config.dynamic_shared_bytes(), 100_000);
    /// # Ok::<(), nvptx_launch::ConfigError>(())
    /// ```
    pub fn with_dynamic_shared_bytes(self, bytes: u32) -> Self {
        Self { dynamic_shared_bytes: bytes, ..self }
    }

    /// The same launch in thread-block clusters of `cluster` blocks (compute capability 9.0 and
    /// later). Fails unless the grid is a whole number of clusters and a cluster holds at most
    /// [`MAX_CLUSTER_SIZE`] blocks; above [`PORTABLE_CLUSTER_SIZE`] the launcher opts the
    /// kernel in to non-portable sizes.
    ///
    /// ```
    /// use nvptx_launch::{ConfigError, LaunchConfig};
    /// assert!(LaunchConfig::new(64, 256)?.with_cluster(8).is_ok());
    /// assert!(matches!(LaunchConfig::new(60, 256)?.with_cluster(8), Err(ConfigError::ClusterDoesNotDivideGrid { .. })));
    /// assert!(matches!(LaunchConfig::new(64, 256)?.with_cluster(32), Err(ConfigError::ClusterTooLarge { .. })));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn with_cluster(self, cluster: impl Into<Dim3>) -> Result<Self, ConfigError> {
        let cluster = cluster.into();
        if cluster.product() == 0 {
            return Err(ConfigError::ZeroDimension { what: "cluster", dims: cluster });
        }
        if cluster.product() > MAX_CLUSTER_SIZE as u64 {
            return Err(ConfigError::ClusterTooLarge { dims: cluster, blocks: cluster.product() });
        }
        for ((axis, g), (_, c)) in self.grid.axes().into_iter().zip(cluster.axes()) {
            if !g.is_multiple_of(c) {
                return Err(ConfigError::ClusterDoesNotDivideGrid { grid: self.grid, cluster, axis });
            }
        }
        Ok(Self { cluster: Some(cluster), ..self })
    }

    /// Blocks in the grid.
    ///
    /// ```
    /// assert_eq!(nvptx_launch::LaunchConfig::new((4, 2), 32)?.grid().y, 2);
    /// # Ok::<(), nvptx_launch::ConfigError>(())
    /// ```
    pub fn grid(&self) -> Dim3 {
        self.grid
    }

    /// Threads in a block.
    ///
    /// ```
    /// assert_eq!(nvptx_launch::LaunchConfig::new(1, (16, 16))?.block().x, 16);
    /// # Ok::<(), nvptx_launch::ConfigError>(())
    /// ```
    pub fn block(&self) -> Dim3 {
        self.block
    }

    /// Threads in a block, all axes together.
    ///
    /// ```
    /// assert_eq!(nvptx_launch::LaunchConfig::new(1, (16, 16))?.threads_per_block(), 256);
    /// # Ok::<(), nvptx_launch::ConfigError>(())
    /// ```
    pub fn threads_per_block(&self) -> u32 {
        self.block.product() as u32
    }

    /// Dynamic shared memory per block, in bytes.
    ///
    /// ```
    /// assert_eq!(nvptx_launch::LaunchConfig::new(1, 32)?.dynamic_shared_bytes(), 0);
    /// # Ok::<(), nvptx_launch::ConfigError>(())
    /// ```
    pub fn dynamic_shared_bytes(&self) -> u32 {
        self.dynamic_shared_bytes
    }

    /// Blocks per cluster, when the launch uses clusters.
    ///
    /// ```
    /// assert_eq!(nvptx_launch::LaunchConfig::new(8, 32)?.cluster(), None);
    /// # Ok::<(), nvptx_launch::ConfigError>(())
    /// ```
    pub fn cluster(&self) -> Option<Dim3> {
        self.cluster
    }

    /// Checks what depends on the device: the shared memory a block may use (with the
    /// kernel's `static_shared_bytes`) and clusters.
    ///
    /// ```
    /// use nvptx_launch::{ConfigError, DeviceLimits, LaunchConfig};
    /// let h100 = DeviceLimits { compute_capability: (9, 0), max_shared_bytes_per_block: 232_448 };
    /// let config = LaunchConfig::new(1, 256)?.with_dynamic_shared_bytes(230_000);
    /// assert!(matches!(config.check_device(&h100, 4096), Err(ConfigError::SharedMemoryTooLarge { .. })));
    /// assert!(config.check_device(&h100, 0).is_ok());
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn check_device(&self, device: &DeviceLimits, static_shared_bytes: u32) -> Result<(), ConfigError> {
        let total = self.dynamic_shared_bytes as u64 + static_shared_bytes as u64;
        if total > device.max_shared_bytes_per_block as u64 {
            return Err(ConfigError::SharedMemoryTooLarge {
                dynamic_bytes: self.dynamic_shared_bytes,
                static_bytes: static_shared_bytes,
                limit: device.max_shared_bytes_per_block,
            });
        }
        if self.cluster.is_some() && device.compute_capability < (9, 0) {
            return Err(ConfigError::ClustersUnsupported { capability: device.compute_capability });
        }
        Ok(())
    }
}

/// What a device allows a launch: read once per kernel by the launcher, or by
/// [`DeviceLimits::query`].
///
/// ```
/// let h200 = nvptx_launch::DeviceLimits { compute_capability: (9, 0), max_shared_bytes_per_block: 232_448 };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    /// `(major, minor)`.
    pub compute_capability: (i32, i32),
    /// Shared memory a block may opt in to (static and dynamic together), bytes.
    pub max_shared_bytes_per_block: u32,
}

impl DeviceLimits {
    /// Reads the limits of the context's device.
    ///
    /// ```no_run
    /// let ctx = nvptx_launch::open_device(0)?;
    /// let limits = nvptx_launch::DeviceLimits::query(&ctx)?;
    /// # Ok::<(), nvptx_launch::LaunchError>(())
    /// ```
    pub fn query(ctx: &CudaContext) -> Result<Self, DriverError> {
        let shared = ctx.attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        Ok(Self { compute_capability: ctx.compute_capability()?, max_shared_bytes_per_block: shared.max(0) as u32 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_limited_per_axis_and_in_total() {
        assert!(LaunchConfig::new(1, 1024).is_ok());
        assert!(LaunchConfig::new(1, (1, 1024)).is_ok());
        assert!(LaunchConfig::new(1, (16, 1, 64)).is_ok());
        assert_eq!(
            LaunchConfig::new(1, 1025),
            Err(ConfigError::DimensionTooLarge { what: "block", axis: 'x', value: 1025, limit: 1024 })
        );
        assert_eq!(
            LaunchConfig::new(1, (1, 1, 65)),
            Err(ConfigError::DimensionTooLarge { what: "block", axis: 'z', value: 65, limit: 64 })
        );
        assert_eq!(
            LaunchConfig::new(1, (64, 32)),
            Err(ConfigError::BlockTooLarge { dims: Dim3 { x: 64, y: 32, z: 1 }, threads: 2048 })
        );
    }

    #[test]
    fn grids_take_2_pow_31_minus_1_along_x_and_65535_along_y_and_z() {
        assert!(LaunchConfig::new(i32::MAX as u32, 32).is_ok());
        assert!(LaunchConfig::new((1, 65_535, 65_535), 32).is_ok());
        assert!(matches!(
            LaunchConfig::new(1u32 << 31, 32),
            Err(ConfigError::DimensionTooLarge { what: "grid", axis: 'x', .. })
        ));
        assert!(matches!(
            LaunchConfig::new((1, 1, 65_536), 32),
            Err(ConfigError::DimensionTooLarge { what: "grid", axis: 'z', .. })
        ));
    }

    #[test]
    fn zero_dimensions_are_refused_with_what_they_belong_to() {
        let err = LaunchConfig::new((4, 0), 32).unwrap_err();
        assert_eq!(err, ConfigError::ZeroDimension { what: "grid", dims: Dim3 { x: 4, y: 0, z: 1 } });
        assert!(err.to_string().contains("grid is 4 x 0 x 1"), "{err}");
        assert!(matches!(LaunchConfig::new(4, 0), Err(ConfigError::ZeroDimension { what: "block", .. })));
        let config = LaunchConfig::new(4, 32).unwrap();
        assert!(matches!(config.with_cluster((2, 0)), Err(ConfigError::ZeroDimension { what: "cluster", .. })));
    }

    #[test]
    fn for_elements_covers_every_element_and_refuses_what_no_grid_can() {
        assert_eq!(LaunchConfig::for_elements(0, 256).unwrap().grid().x, 1);
        assert_eq!(LaunchConfig::for_elements(257, 256).unwrap().grid().x, 2);
        assert!(LaunchConfig::for_elements(u64::MAX, 32).is_err());
    }

    #[test]
    fn clusters_divide_the_grid_and_hold_at_most_16_blocks() {
        let config = LaunchConfig::new((32, 4), 128).unwrap();
        assert_eq!(config.with_cluster((16, 1)).unwrap().cluster(), Some(Dim3 { x: 16, y: 1, z: 1 }));
        assert_eq!(config.with_cluster((4, 4)).unwrap().cluster(), Some(Dim3 { x: 4, y: 4, z: 1 }));
        assert!(matches!(config.with_cluster((4, 8)), Err(ConfigError::ClusterTooLarge { blocks: 32, .. })));
        assert_eq!(
            config.with_cluster((1, 3)),
            Err(ConfigError::ClusterDoesNotDivideGrid {
                grid: Dim3 { x: 32, y: 4, z: 1 },
                cluster: Dim3 { x: 1, y: 3, z: 1 },
                axis: 'y'
            })
        );
    }

    #[test]
    fn the_device_check_counts_static_and_dynamic_shared_memory_and_needs_9_0_for_clusters() {
        let hopper = DeviceLimits { compute_capability: (9, 0), max_shared_bytes_per_block: 232_448 };
        let ampere = DeviceLimits { compute_capability: (8, 0), max_shared_bytes_per_block: 166_912 };
        let config = LaunchConfig::new(8, 256).unwrap().with_dynamic_shared_bytes(200_000);
        assert!(config.check_device(&hopper, 32_448).is_ok());
        assert_eq!(
            config.check_device(&hopper, 32_449),
            Err(ConfigError::SharedMemoryTooLarge { dynamic_bytes: 200_000, static_bytes: 32_449, limit: 232_448 })
        );
        let clustered = LaunchConfig::new(8, 256).unwrap().with_cluster(2).unwrap();
        assert!(clustered.check_device(&hopper, 0).is_ok());
        assert_eq!(clustered.check_device(&ampere, 0), Err(ConfigError::ClustersUnsupported { capability: (8, 0) }));
    }
}
