//! Thread, block and grid indices, and block barriers (`cuda_std::thread`).
//!
//! Every index is a special register read (`mov.u32 r, %tid.x;` and kin); none touches memory.

use core::arch::asm;
use core::arch::nvptx;

/// `%tid.x`: this thread's index in its block along x (`threadIdx.x`).
///
/// ```ignore
/// let lane_in_block = nvptx_std::thread::thread_idx_x();
/// ```
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reads a special register; no memory is touched.
    unsafe { nvptx::_thread_idx_x() as u32 }
}

/// `%tid.y`: this thread's index in its block along y (`threadIdx.y`).
///
/// ```ignore
/// let row_in_tile = nvptx_std::thread::thread_idx_y();
/// ```
#[inline(always)]
pub fn thread_idx_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_thread_idx_y() as u32 }
}

/// `%tid.z`: this thread's index in its block along z (`threadIdx.z`).
///
/// ```ignore
/// let slice = nvptx_std::thread::thread_idx_z();
/// ```
#[inline(always)]
pub fn thread_idx_z() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_thread_idx_z() as u32 }
}

/// `%ctaid.x`: this block's index in the grid along x (`blockIdx.x`).
///
/// ```ignore
/// let row = nvptx_std::thread::block_idx_x(); // one block per row
/// ```
#[inline(always)]
pub fn block_idx_x() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// `%ctaid.y`: this block's index in the grid along y (`blockIdx.y`).
///
/// ```ignore
/// let tile_row = nvptx_std::thread::block_idx_y();
/// ```
#[inline(always)]
pub fn block_idx_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_y() as u32 }
}

/// `%ctaid.z`: this block's index in the grid along z (`blockIdx.z`).
///
/// ```ignore
/// let batch = nvptx_std::thread::block_idx_z();
/// ```
#[inline(always)]
pub fn block_idx_z() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_z() as u32 }
}

/// `%ntid.x`: threads per block along x (`blockDim.x`).
///
/// ```ignore
/// let threads = nvptx_std::thread::block_dim_x();
/// ```
#[inline(always)]
pub fn block_dim_x() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_dim_x() as u32 }
}

/// `%ntid.y`: threads per block along y (`blockDim.y`).
///
/// ```ignore
/// let rows = nvptx_std::thread::block_dim_y();
/// ```
#[inline(always)]
pub fn block_dim_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_dim_y() as u32 }
}

/// `%ntid.z`: threads per block along z (`blockDim.z`).
///
/// ```ignore
/// let depth = nvptx_std::thread::block_dim_z();
/// ```
#[inline(always)]
pub fn block_dim_z() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_dim_z() as u32 }
}

/// `%nctaid.x`: blocks in the grid along x (`gridDim.x`).
///
/// ```ignore
/// let blocks = nvptx_std::thread::grid_dim_x();
/// ```
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// `%nctaid.y`: blocks in the grid along y (`gridDim.y`).
///
/// ```ignore
/// let tile_rows = nvptx_std::thread::grid_dim_y();
/// ```
#[inline(always)]
pub fn grid_dim_y() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_grid_dim_y() as u32 }
}

/// `%nctaid.z`: blocks in the grid along z (`gridDim.z`).
///
/// ```ignore
/// let batches = nvptx_std::thread::grid_dim_z();
/// ```
#[inline(always)]
pub fn grid_dim_z() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_grid_dim_z() as u32 }
}

/// This thread's index in a one-dimensional grid: `block_idx_x * block_dim_x + thread_idx_x`,
/// computed in 64 bits so grids of more than 2^32 threads index correctly (`mul.wide.u32`,
/// `add.s64`).
///
/// ```ignore
/// let i = nvptx_std::thread::index_1d();
/// if i < n {
///     unsafe { *out.add(i as usize) = 0.0 };
/// }
/// ```
#[inline(always)]
pub fn index_1d() -> u64 {
    block_idx_x() as u64 * block_dim_x() as u64 + thread_idx_x() as u64
}

/// This thread's `(x, y)` in a two-dimensional grid: `block_idx * block_dim + thread_idx` along
/// each axis (`cuda_std::thread::index_2d`), e.g. `(column, row)` of a matrix element.
///
/// ```ignore
/// let (col, row) = nvptx_std::thread::index_2d();
/// ```
#[inline(always)]
pub fn index_2d() -> (u32, u32) {
    (block_idx_x() * block_dim_x() + thread_idx_x(), block_idx_y() * block_dim_y() + thread_idx_y())
}

/// Threads in a one-dimensional grid: `grid_dim_x * block_dim_x`, the stride of a grid-stride
/// loop.
///
/// ```ignore
/// let mut i = nvptx_std::thread::index_1d();
/// while i < n {
///     // ... element i ...
///     i += nvptx_std::thread::grid_size_1d();
/// }
/// ```
#[inline(always)]
pub fn grid_size_1d() -> u64 {
    grid_dim_x() as u64 * block_dim_x() as u64
}

/// `bar.sync 0`: waits until every thread of the block arrives, and orders their shared and
/// global memory accesses before the barrier against those after it (`__syncthreads`).
///
/// Every thread of the block must reach the same call; a barrier inside a branch that only some
/// threads take hangs or corrupts the block.
///
/// ```ignore
/// unsafe { tile.store(t, value) };
/// nvptx_std::thread::sync_threads(); // every store above is visible below
/// let left = unsafe { tile.load(t ^ 1) };
/// ```
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: `barrier0` has no preconditions beyond uniform arrival, documented above.
    unsafe { nvptx::_syncthreads() }
}

/// `bar.red.popc.u32 d, 0, p;`: [`sync_threads`] that also returns how many threads of the block
/// passed `pred = true` (`__syncthreads_count`).
///
/// Every thread of the block must reach the same call.
///
/// ```ignore
/// let survivors = nvptx_std::thread::sync_threads_count(value > threshold);
/// ```
#[inline(always)]
pub fn sync_threads_count(pred: bool) -> u32 {
    let count: u32;
    // SAFETY: a block barrier with a reduction; orders memory as `bar.sync` (no `nomem`).
    unsafe {
        asm!("{{ .reg .pred p; setp.ne.u32 p, {v}, 0; bar.red.popc.u32 {c}, 0, p; }}", v = in(reg32) pred as u32,
             c = out(reg32) count, options(nostack))
    };
    count
}

/// `bar.red.and.pred`: [`sync_threads`] that also returns whether every thread of the block
/// passed `pred = true` (`__syncthreads_and`).
///
/// Every thread of the block must reach the same call.
///
/// ```ignore
/// let converged = nvptx_std::thread::sync_threads_and(error < tolerance);
/// ```
#[inline(always)]
pub fn sync_threads_and(pred: bool) -> bool {
    let all: u32;
    // SAFETY: a block barrier with a reduction; orders memory as `bar.sync`.
    unsafe {
        asm!("{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; bar.red.and.pred q, 0, p; selp.u32 {r}, 1, 0, q; }}",
             v = in(reg32) pred as u32, r = out(reg32) all, options(nostack))
    };
    all != 0
}

/// `bar.red.or.pred`: [`sync_threads`] that also returns whether any thread of the block passed
/// `pred = true` (`__syncthreads_or`).
///
/// Every thread of the block must reach the same call.
///
/// ```ignore
/// let any_found = nvptx_std::thread::sync_threads_or(key == wanted);
/// ```
#[inline(always)]
pub fn sync_threads_or(pred: bool) -> bool {
    let any: u32;
    // SAFETY: a block barrier with a reduction; orders memory as `bar.sync`.
    unsafe {
        asm!("{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; bar.red.or.pred q, 0, p; selp.u32 {r}, 1, 0, q; }}",
             v = in(reg32) pred as u32, r = out(reg32) any, options(nostack))
    };
    any != 0
}

/// `bar.sync id, threads;`: waits until `threads` threads (a multiple of 32: whole warps) have
/// arrived at named barrier `id` (1..16; 0 is [`sync_threads`]'s), ordering their shared and
/// global memory accesses as [`sync_threads`] does: a barrier for a part of the block, such as
/// one warpgroup.
///
/// Exactly `threads` threads, the same each time, must use barrier `id`.
///
/// ```ignore
/// // The 128 threads of warpgroup 1 wait for each other, not for the rest of the block.
/// nvptx_std::thread::sync_named(1, 128);
/// ```
#[inline(always)]
pub fn sync_named(id: u32, threads: u32) {
    // SAFETY: a barrier; touches no memory itself and orders memory (no `nomem`).
    unsafe { asm!("bar.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads, options(nostack)) };
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
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack, preserves_flags)) };
}
