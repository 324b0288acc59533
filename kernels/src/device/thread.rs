//! Thread, block and grid indices, and the block barrier (`cuda_std::thread`).

use core::arch::nvptx;

/// `%tid.x`: this thread's index in its block along x.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reads a special register; no memory is touched.
    unsafe { nvptx::_thread_idx_x() as u32 }
}

/// `%tid.y`: this thread's index in its block along y.
#[inline(always)]
pub fn thread_idx_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_thread_idx_y() as u32 }
}

/// `%ctaid.x`: this block's index in the grid along x.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// `%ctaid.y`: this block's index in the grid along y.
#[inline(always)]
pub fn block_idx_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_y() as u32 }
}

/// `%ctaid.z`: this block's index in the grid along z.
#[inline(always)]
pub fn block_idx_z() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_z() as u32 }
}

/// `%ntid.x`: threads per block along x.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_dim_x() as u32 }
}

/// `%ntid.y`: threads per block along y.
#[inline(always)]
pub fn block_dim_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_dim_y() as u32 }
}

/// `%nctaid.x`: blocks in the grid along x.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// `%nctaid.y`: blocks in the grid along y.
#[inline(always)]
pub fn grid_dim_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_grid_dim_y() as u32 }
}

/// This thread's index in a one-dimensional grid: `block_idx_x * block_dim_x + thread_idx_x`,
/// computed in 64 bits so grids of more than 2^32 threads index correctly.
#[inline(always)]
pub fn index_1d() -> u64 {
    block_idx_x() as u64 * block_dim_x() as u64 + thread_idx_x() as u64
}

/// Threads in a one-dimensional grid: `grid_dim_x * block_dim_x`, the stride of a grid-stride loop.
#[inline(always)]
pub fn grid_size_1d() -> u64 {
    grid_dim_x() as u64 * block_dim_x() as u64
}

/// `bar.sync 0`: waits until every thread of the block arrives, and orders their shared and
/// global memory accesses before the barrier against those after it (`__syncthreads`).
///
/// Every thread of the block must reach the same call; a barrier inside a branch that only some
/// threads take hangs or corrupts the block.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: `barrier0` has no preconditions beyond uniform arrival, documented above.
    unsafe { nvptx::_syncthreads() }
}

/// `bar.sync id, threads;`: waits until `threads` threads (a multiple of 32: whole warps) have
/// arrived at named barrier `id` (1..16; 0 is [`sync_threads`]'s), ordering their shared and
/// global memory accesses as [`sync_threads`] does: a barrier for a part of the block, such as
/// one warpgroup.
///
/// Exactly `threads` threads, the same each time, must use barrier `id`.
#[inline(always)]
pub fn sync_named(id: u32, threads: u32) {
    // SAFETY: a barrier; touches no memory itself and orders memory (no `nomem`).
    unsafe { core::arch::asm!("bar.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}

/// `fence.acq_rel.gpu` (`__threadfence()`): orders this thread's memory accesses before the
/// fence against those after it, as seen by every thread of the GPU; the "last block" of a
/// grid-wide reduction uses it between its atomics and the counter that elects it.
///
/// ```ignore
/// nvptx_std::thread::thread_fence();
/// ```
#[inline(always)]
pub fn thread_fence() {
    // SAFETY: a fence; touches no memory itself.
    unsafe { core::arch::asm!("fence.acq_rel.gpu;", options(nostack, preserves_flags)) };
}
