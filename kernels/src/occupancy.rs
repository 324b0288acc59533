//! The occupancy calculator's arithmetic, shared by the host's launch planning (the histogram
//! tiers' model of a device before it is opened) and `cargo xtask build-ptx`'s check that the
//! planner's tables fit the registers ptxas allocated: the blocks of one kernel an SM holds,
//! bounded by its threads, its shared memory and its registers.

/// What one SM offers the blocks resident on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmResources {
    /// Threads an SM holds at once.
    pub max_threads: u32,
    /// Shared memory per SM, bytes.
    pub max_shared: u32,
    /// Shared memory the driver reserves per resident block, bytes.
    pub reserved_shared_per_block: u32,
}

impl SmResources {
    /// An SM of compute capability 9.0 (H100, H200): 2,048 threads, 228 KiB of shared memory,
    /// 1 KiB of it reserved per block.
    pub const SM_90: Self = Self { max_threads: 2048, max_shared: 233_472, reserved_shared_per_block: 1024 };
}

/// Blocks of `threads` threads, `registers` registers a thread and `shared` bytes of shared
/// memory that one SM with `sm` holds: the least of what its threads, its shared memory and its
/// 64 Ki registers (allocated per warp in units of 256) allow, at most 32; 0 for a block of no
/// threads or of more than the SM holds.
///
/// ```
/// use kernels::occupancy::{SmResources, blocks_per_sm};
/// // 32 registers: the SM's 2,048 threads as 16 blocks of 128; one more register rounds a warp
/// // up to 40 and leaves 12.
/// assert_eq!(blocks_per_sm(SmResources::SM_90, 32, 0, 128), 16);
/// assert_eq!(blocks_per_sm(SmResources::SM_90, 33, 0, 128), 12);
/// assert_eq!(blocks_per_sm(SmResources::SM_90, 144, 32_768, 128), 3);
/// // Shared memory bounds it too: 64 KiB blocks, three to an SM.
/// assert_eq!(blocks_per_sm(SmResources::SM_90, 32, 65_536, 128), 3);
/// ```
pub const fn blocks_per_sm(sm: SmResources, registers: u32, shared: u32, threads: u32) -> u32 {
    if threads == 0 || threads > sm.max_threads {
        return 0;
    }
    let by_threads = sm.max_threads / threads;
    let by_shared = sm.max_shared / (shared + sm.reserved_shared_per_block);
    let warp_registers = (registers * 32).div_ceil(256) * 256;
    let by_registers = 65_536 / max(warp_registers * threads.div_ceil(32), 1);
    min(min(min(by_threads, by_shared), by_registers), 32)
}

const fn min(a: u32, b: u32) -> u32 {
    if a < b { a } else { b }
}

const fn max(a: u32, b: u32) -> u32 {
    if a > b { a } else { b }
}
