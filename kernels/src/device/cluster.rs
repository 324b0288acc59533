//! Thread-block clusters and distributed shared memory (sm_90), after `cooperative_groups`'
//! `cluster_group` and `cuda_std::cluster`.
//!
//! A cluster's blocks run at once on one GPC and can read, write and atomically update each
//! other's shared memory through `shared::cluster` addresses that [`map_shared_rank`] computes.

use core::arch::asm;

/// `%cluster_ctarank`: this block's rank in its cluster, `0..dim_blocks()`.
#[inline(always)]
pub fn block_rank() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {}, %cluster_ctarank;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `%cluster_nctarank`: the number of blocks in this block's cluster.
#[inline(always)]
pub fn dim_blocks() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {}, %cluster_nctarank;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;`: waits until every thread of
/// every block in the cluster arrives (`cluster.sync()`). The arrive releases and the wait
/// acquires, so shared-memory writes before it, local or remote, are visible after it.
///
/// Every thread of every block in the cluster must reach the same call (`.aligned`).
#[inline(always)]
pub fn sync() {
    // SAFETY: a barrier; touches no memory itself and orders memory (no `nomem`).
    unsafe { asm!("barrier.cluster.arrive.aligned;", "barrier.cluster.wait.aligned;", options(nostack)) };
}

/// `mapa.shared::cluster.u32`: the `shared::cluster` address of the same offset in block
/// `rank`'s shared memory (`cluster.map_shared_rank`).
///
/// `local` is a shared-window address of this block (from a shared array). Computing the address
/// is safe; accessing it needs `rank < dim_blocks()` and the target block still running, which
/// [`sync`] before and after the accesses guarantees.
#[inline(always)]
pub fn map_shared_rank(local: u32, rank: u32) -> u32 {
    let remote: u32;
    // SAFETY: address arithmetic only; touches no memory.
    unsafe {
        asm!("mapa.shared::cluster.u32 {d}, {a}, {r};", d = out(reg32) remote, a = in(reg32) local,
             r = in(reg32) rank, options(pure, nomem, nostack))
    };
    remote
}
