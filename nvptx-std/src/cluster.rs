//! Thread-block clusters and distributed shared memory (sm_90), after `cooperative_groups`'
//! `cluster_group` and `cuda_std::cluster`.
//!
//! A cluster's blocks run at once on one GPC and can read, write and atomically update each
//! other's shared memory through `shared::cluster` addresses that [`map_shared_rank`] computes.

use core::arch::asm;

/// `%cluster_ctarank`: this block's rank in its cluster, `0..dim_blocks()`.
///
/// ```ignore
/// let first_bin = nvptx_std::cluster::block_rank() * bins_per_block;
/// ```
#[inline(always)]
pub fn block_rank() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {}, %cluster_ctarank;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `%cluster_nctarank`: the number of blocks in this block's cluster.
///
/// ```ignore
/// let bins_held = nvptx_std::cluster::dim_blocks() * bins_per_block;
/// ```
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
///
/// ```ignore
/// zero_local_bins();
/// nvptx_std::cluster::sync(); // every block's bins exist and are zeroed before remote adds
/// ```
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
///
/// ```ignore
/// let remote = nvptx_std::cluster::map_shared_rank(bins.address_of(i), owner_rank);
/// unsafe { nvptx_std::atomic::cluster_shared_add_u32(remote, 1) };
/// ```
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

/// `%clusterid.x`: this block's cluster's index in the grid along x (`clusterIdx.x`).
///
/// ```ignore
/// let cluster = nvptx_std::cluster::cluster_idx_x();
/// ```
#[inline(always)]
pub fn cluster_idx_x() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {}, %clusterid.x;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `%nclusterid.x`: clusters in the grid along x (`gridDim.x / clusterDim.x`).
///
/// ```ignore
/// let clusters = nvptx_std::cluster::grid_dim_clusters_x();
/// ```
#[inline(always)]
pub fn grid_dim_clusters_x() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {}, %nclusterid.x;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `barrier.cluster.arrive.aligned;` (release semantics, the default): the first half of
/// [`sync`]: marks this thread's arrival (releasing its earlier memory accesses) without
/// waiting, so that work independent of the other blocks can overlap the barrier; [`wait`]
/// completes it.
///
/// Every thread of every block in the cluster must reach the same call, then [`wait`].
///
/// ```ignore
/// nvptx_std::cluster::arrive();
/// let partial = local_work(); // touches no other block's shared memory
/// nvptx_std::cluster::wait();
/// ```
#[inline(always)]
pub fn arrive() {
    // SAFETY: a barrier arrival; orders memory (no `nomem`).
    unsafe { asm!("barrier.cluster.arrive.aligned;", options(nostack)) };
}

/// `barrier.cluster.wait.aligned;` (acquire semantics, the default): waits until every thread
/// of the cluster has [`arrive`]d, acquiring their earlier memory accesses.
///
/// Every thread of every block in the cluster must reach the same call, after [`arrive`].
///
/// ```ignore
/// nvptx_std::cluster::wait();
/// ```
#[inline(always)]
pub fn wait() {
    // SAFETY: a barrier wait; orders memory (no `nomem`).
    unsafe { asm!("barrier.cluster.wait.aligned;", options(nostack)) };
}

/// `ld.shared::cluster.u32`: reads the `u32` at a `shared::cluster` address ([`map_shared_rank`]),
/// which may be in another block of the cluster (distributed shared memory).
///
/// # Safety
/// `addr` maps a 4-byte-aligned in-bounds shared address of a block of this cluster that has not
/// exited, and a cluster barrier orders this read after the write it should see.
///
/// ```ignore
/// let theirs = unsafe { nvptx_std::cluster::load_u32(map_shared_rank(sums.address_of(0), 0)) };
/// ```
#[inline(always)]
pub unsafe fn load_u32(addr: u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees the address and the target block's lifetime.
    unsafe {
        asm!("ld.shared::cluster.u32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr,
             options(readonly, nostack, preserves_flags))
    };
    v
}

/// `ld.shared::cluster.f32`: [`load_u32`] for an `f32`.
///
/// # Safety
/// As for [`load_u32`].
///
/// ```ignore
/// let partial = unsafe { nvptx_std::cluster::load_f32(map_shared_rank(sums.address_of(0), rank)) };
/// ```
#[inline(always)]
pub unsafe fn load_f32(addr: u32) -> f32 {
    let v: f32;
    // SAFETY: the caller guarantees the address and the target block's lifetime.
    unsafe {
        asm!("ld.shared::cluster.f32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr,
             options(readonly, nostack, preserves_flags))
    };
    v
}

/// `ld.shared::cluster.v4.f32`: four `f32` in one 16-byte read at a `shared::cluster` address
/// ([`map_shared_rank`]), which may be in another block of the cluster: how a cluster's blocks
/// add up each other's tiles without a trip through global memory.
///
/// # Safety
/// As for [`load_u32`], with `addr` 16-byte aligned.
///
/// ```ignore
/// let [x0, x1, x2, x3] = unsafe { nvptx_std::cluster::load_v4_f32(map_shared_rank(tile + 16 * i, rank)) };
/// ```
#[inline(always)]
pub unsafe fn load_v4_f32(addr: u32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees the address, its alignment and the target block's lifetime.
    unsafe {
        asm!("ld.shared::cluster.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
             c = out(reg32) c, d = out(reg32) d, p = in(reg32) addr, options(readonly, nostack, preserves_flags))
    };
    [a, b, c, d]
}

/// `st.shared::cluster.u32`: writes the `u32` at a `shared::cluster` address
/// ([`map_shared_rank`]), which may be in another block of the cluster.
///
/// # Safety
/// `addr` maps a 4-byte-aligned in-bounds shared address of a block of this cluster that has not
/// exited, no other thread accesses it until a cluster barrier, and one orders the readers after.
///
/// ```ignore
/// unsafe { nvptx_std::cluster::store_u32(map_shared_rank(inbox.address_of(my_rank as usize), 0), count) };
/// ```
#[inline(always)]
pub unsafe fn store_u32(addr: u32, value: u32) {
    // SAFETY: the caller guarantees the address, exclusivity and the target block's lifetime.
    unsafe {
        asm!("st.shared::cluster.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `st.shared::cluster.f32`: [`store_u32`] for an `f32`.
///
/// # Safety
/// As for [`store_u32`].
///
/// ```ignore
/// unsafe { nvptx_std::cluster::store_f32(map_shared_rank(partials.address_of(my_rank as usize), 0), sum) };
/// ```
#[inline(always)]
pub unsafe fn store_f32(addr: u32, value: f32) {
    // SAFETY: the caller guarantees the address, exclusivity and the target block's lifetime.
    unsafe {
        asm!("st.shared::cluster.f32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}
