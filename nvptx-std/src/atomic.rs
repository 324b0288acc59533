//! Atomic read-modify-writes per state space (`cuda_std::atomic`): `red` where the old value
//! is not needed (one instruction, no result to wait for), `atom` where it is.
//!
//! All are relaxed: results are read only after a barrier (block, cluster or kernel boundary)
//! that orders them.

use core::arch::asm;

/// `red.shared.add.u32`: adds `value` to the `u32` at a shared-window address of this block.
///
/// # Safety
/// `addr` is a 4-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::shared_add_u32(bins.address_of(bin), 1) };
/// ```
#[inline(always)]
pub unsafe fn shared_add_u32(addr: u32, value: u32) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `red.shared.add.u32` under a predicate (`setp.ne.u32 p, when, 0; @p red.shared.add.u32 [addr],
/// value`): [`shared_add_u32`] where `when` holds, no memory access elsewhere. The predicate
/// stays inside the instruction, so a kernel that counts only some values does not branch
/// around each add (a branch per value also keeps the compiler from interleaving the loads of
/// neighbouring values).
///
/// # Safety
/// Where `when` holds, `addr` is a 4-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::shared_add_u32_if(v >= lo && v <= hi, bins.address_of(bin), 1) };
/// ```
#[inline(always)]
pub unsafe fn shared_add_u32_if(when: bool, addr: u32, value: u32) {
    // SAFETY: the caller guarantees the address wherever the add runs.
    unsafe {
        asm!("{{ .reg .pred p; setp.ne.u32 p, {w}, 0; @p red.shared.add.u32 [{a}], {v}; }}",
             w = in(reg32) when as u32, a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `red.relaxed.cluster.shared::cluster.add.u32`: adds `value` to the `u32` at a
/// `shared::cluster` address ([`crate::cluster::map_shared_rank`]), which may be in
/// another block of the cluster.
///
/// # Safety
/// `addr` maps a 4-byte-aligned in-bounds shared address of a block of this cluster that has not
/// exited (a cluster barrier after the last access guarantees that).
///
/// ```ignore
/// let owner = bin / bins_per_block;
/// let remote = nvptx_std::cluster::map_shared_rank(bins.address_of(bin % bins_per_block), owner);
/// unsafe { nvptx_std::atomic::cluster_shared_add_u32(remote, 1) };
/// ```
#[inline(always)]
pub unsafe fn cluster_shared_add_u32(addr: u32, value: u32) {
    // SAFETY: the caller guarantees the address and the target block's lifetime.
    unsafe {
        asm!("red.relaxed.cluster.shared::cluster.add.u32 [{a}], {v};", a = in(reg32) addr,
             v = in(reg32) value, options(nostack, preserves_flags))
    };
}

/// `red.global.add.u32`: adds `value` to the `u32` at `ptr` in global memory, atomically with
/// respect to every thread of the GPU.
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::global_add_u32(counts.add(bin), local_count) };
/// ```
#[inline(always)]
pub unsafe fn global_add_u32(ptr: *mut u32, value: u32) {
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("red.global.add.u32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `atom.shared.add.u32`: adds `value` to the `u32` at a shared-window address of this block and
/// returns the value it held before: a slot reservation, unique among all concurrent callers.
///
/// # Safety
/// `addr` is a 4-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// let slot = unsafe { nvptx_std::atomic::shared_fetch_add_u32(cursor.shared_address(), 1) };
/// ```
#[inline(always)]
pub unsafe fn shared_fetch_add_u32(addr: u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("atom.shared.add.u32 {o}, [{a}], {v};", o = out(reg32) old, a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.shared.add.u32` under a predicate (`mov.u32 d, 0; setp.ne.u32 p, when, 0; @p atom.shared.add.u32
/// d, [addr], value`): [`shared_fetch_add_u32`] where `when` holds, else 0 and no memory access. The
/// predicate stays inside the instruction, so code around it (warp shuffles) does not branch.
///
/// # Safety
/// Where `when` holds, `addr` is a 4-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// let leader = peers.trailing_zeros() == lane;
/// let base = unsafe { nvptx_std::atomic::shared_fetch_add_u32_if(leader, addr, peers.count_ones()) };
/// ```
#[inline(always)]
pub unsafe fn shared_fetch_add_u32_if(when: bool, addr: u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address wherever the atomic runs.
    unsafe {
        asm!("{{ .reg .pred p; mov.u32 {o}, 0; setp.ne.u32 p, {w}, 0; @p atom.shared.add.u32 {o}, [{a}], {v}; }}",
             o = out(reg32) old, w = in(reg32) when as u32, a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.global.add.u32`: adds `value` to the `u32` at `ptr` and returns the value it held
/// before, atomically with respect to every thread of the GPU.
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// let ticket = unsafe { nvptx_std::atomic::global_fetch_add_u32(next_tile, 1) };
/// ```
#[inline(always)]
pub unsafe fn global_fetch_add_u32(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("atom.global.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `red.global.add.u64`: adds `value` to the `u64` at `ptr` in global memory, atomically with
/// respect to every thread of the GPU.
///
/// # Safety
/// `ptr` is a valid, 8-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::global_add_u64(total, block_count as u64) };
/// ```
#[inline(always)]
pub unsafe fn global_add_u64(ptr: *mut u64, value: u64) {
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("red.global.add.u64 [{p}], {v};", p = in(reg64) ptr, v = in(reg64) value,
             options(nostack, preserves_flags))
    };
}

/// `red.shared.add.f32`: adds `value` to the `f32` at a shared-window address of this block
/// (rounded to nearest even; the order of concurrent additions, and so the rounding of the sum,
/// is unspecified).
///
/// # Safety
/// `addr` is a 4-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::shared_add_f32(sums.address_of(column), x) };
/// ```
#[inline(always)]
pub unsafe fn shared_add_f32(addr: u32, value: f32) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("red.shared.add.f32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `red.global.add.f32`: adds `value` to the `f32` at `ptr` in global memory (`atomicAdd` with
/// the result unused; rounded to nearest even, in an unspecified order).
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::global_add_f32(total, block_sum) };
/// ```
#[inline(always)]
pub unsafe fn global_add_f32(ptr: *mut f32, value: f32) {
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("red.global.add.f32 [{p}], {v};", p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
}

/// `atom.global.add.f32`: [`global_add_f32`] that returns the value the `f32` held before.
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// let before = unsafe { nvptx_std::atomic::global_fetch_add_f32(total, x) };
/// ```
#[inline(always)]
pub unsafe fn global_fetch_add_f32(ptr: *mut f32, value: f32) -> f32 {
    let old: f32;
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("atom.global.add.f32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.global.max.u32`: sets the `u32` at `ptr` to the larger of it and `value`; returns the
/// value it held before (`atomicMax`).
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::global_fetch_max_u32(longest, run_length) };
/// ```
#[inline(always)]
pub unsafe fn global_fetch_max_u32(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("atom.global.max.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.global.min.u32`: sets the `u32` at `ptr` to the smaller of it and `value`; returns the
/// value it held before (`atomicMin`).
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::global_fetch_min_u32(first_match, i as u32) };
/// ```
#[inline(always)]
pub unsafe fn global_fetch_min_u32(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("atom.global.min.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) ptr, v = in(reg32) value,
             options(nostack, preserves_flags))
    };
    old
}

/// `atom.global.cas.b32`: if the `u32` at `ptr` equals `current`, replaces it with `new`;
/// returns the value it held before either way (`atomicCAS`): the swap happened exactly when the
/// result equals `current`.
///
/// # Safety
/// `ptr` is a valid, 4-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// let won = unsafe { nvptx_std::atomic::global_compare_exchange_u32(lock, 0, 1) } == 0;
/// ```
#[inline(always)]
pub unsafe fn global_compare_exchange_u32(ptr: *mut u32, current: u32, new: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("atom.global.cas.b32 {o}, [{p}], {c}, {n};", o = out(reg32) old, p = in(reg64) ptr,
             c = in(reg32) current, n = in(reg32) new, options(nostack, preserves_flags))
    };
    old
}

/// `red.shared.add.f64`: adds `value` to the `f64` at a shared-window address of this block.
///
/// Hopper has no native shared-memory floating-point add: ptxas lowers this to a load and an
/// `ATOMS.CAST.SPIN.64` compare-and-store loop (seen in the SASS of `sm_90`), which retries while
/// another lane of the same bank wins. Lanes that add into distinct banks succeed at once; lanes
/// that add into one address serialize, one per iteration. The order of the additions is not
/// fixed, so a sum is deterministic only where every partial sum is exact in `f64`.
///
/// # Safety
/// `addr` is an 8-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::shared_add_f64(sums.addr(bin), weight as f64) };
/// ```
#[inline(always)]
pub unsafe fn shared_add_f64(addr: u32, value: f64) {
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("red.shared.add.f64 [{a}], {v};", a = in(reg32) addr, v = in(reg64) value,
             options(nostack, preserves_flags))
    };
}

/// `red.global.add.f64`: adds `value` to the `f64` at `ptr` in global memory, atomically with
/// respect to every thread of the GPU (native since compute capability 6.0).
///
/// # Safety
/// `ptr` is a valid, 8-byte-aligned pointer into a global allocation.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::global_add_f64(totals.add(bin), partial) };
/// ```
#[inline(always)]
pub unsafe fn global_add_f64(ptr: *mut f64, value: f64) {
    // SAFETY: the caller guarantees the pointer.
    unsafe {
        asm!("red.global.add.f64 [{p}], {v};", p = in(reg64) ptr, v = in(reg64) value,
             options(nostack, preserves_flags))
    };
}
