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

/// `ld.relaxed.cta.shared.u32`: reads the `u32` at a shared-window address of this block while
/// other threads of the block may update it with atomics (a relaxed atomic load: it returns a
/// value the word held, never a torn one, and is no data race with those atomics).
///
/// # Safety
/// `addr` is a 4-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// let key = unsafe { nvptx_std::atomic::shared_load_relaxed_u32(slot_address) };
/// ```
#[inline(always)]
pub unsafe fn shared_load_relaxed_u32(addr: u32) -> u32 {
    let value: u32;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("ld.relaxed.cta.shared.u32 {v}, [{a}];", v = out(reg32) value, a = in(reg32) addr,
             options(nostack, preserves_flags))
    };
    value
}

/// `atom.shared.cas.b32`: if the `u32` at a shared-window address of this block equals
/// `current`, replaces it with `new`; returns the value it held before either way (`atomicCAS` on
/// shared memory): the swap happened exactly when the result equals `current`.
///
/// # Safety
/// `addr` is a 4-byte-aligned address inside a shared array of this block.
///
/// ```ignore
/// let claimed = unsafe { nvptx_std::atomic::shared_compare_exchange_u32(slot_address, 0, key) } == 0;
/// ```
#[inline(always)]
pub unsafe fn shared_compare_exchange_u32(addr: u32, current: u32, new: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address.
    unsafe {
        asm!("atom.shared.cas.b32 {o}, [{a}], {c}, {n};", o = out(reg32) old, a = in(reg32) addr,
             c = in(reg32) current, n = in(reg32) new, options(nostack, preserves_flags))
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

/// Four `f32` adds into shared memory, each where its predicate holds: one optimistic round of
/// `ld.shared.b32`, `add.rn.f32` and `atom.shared.cas.b32` for all four, then, for each add
/// whose swap found the word changed since its load, [`shared_add_f32`]'s
/// `red.shared.add.f32`:
///
/// ```text
/// setp.ne.u32 p0, when0, 0; ...; @p0 ld.shared.b32 o0, [addr0]; ...
/// @p0 add.rn.f32 n0, o0, value0; ...; @p0 atom.shared.cas.b32 g0, [addr0], o0, n0; ...
/// @p0 setp.ne.b32 p0, g0, o0; ...; or.pred q, p0, p1; or.pred q, q, p2; or.pred q, q, p3;
/// @!q bra DONE; @p0 red.shared.add.f32 [addr0], value0; ...; DONE:
/// ```
///
/// Hopper has no shared-memory float add: `red.shared.add.f32` compiles to a compare-and-swap
/// loop for one value, whose load and swap each wait out a shared-memory round trip before the
/// next value's. Here the four loads, then the four swaps, are in flight together. Where adds
/// collide (several lanes on one word) the later ones take the one-value loop, whose swap
/// ptxas emits as `ATOMS.CAST.SPIN`: a loop of four `atom.cas` retrying together ran 9-12x
/// slower than it on colliding inputs (H200, skewed bins). Each add is rounded to nearest even;
/// the four happen in some order, each atomically.
///
/// # Safety
/// Where `when[k]` holds, `addr[k]` is a 4-byte-aligned address inside a shared array of this
/// block.
///
/// ```ignore
/// unsafe { nvptx_std::atomic::shared_add4_f32_if(counted, addresses, weights) };
/// ```
// The label is named (PTX has no numeric local labels), and each inlined copy of it is its own:
// PTX scopes a label to its `{ }` block, as CUTLASS's barrier waits rely on.
#[allow(named_asm_labels)]
#[inline(always)]
pub unsafe fn shared_add4_f32_if(when: [bool; 4], addr: [u32; 4], value: [f32; 4]) {
    // SAFETY: the caller guarantees the addresses wherever the loads, swaps and adds run.
    unsafe {
        asm!(
            "{{",
            ".reg .pred p0, p1, p2, p3, q;",
            ".reg .b32 o0, o1, o2, o3, n0, n1, n2, n3, g0, g1, g2, g3;",
            "setp.ne.u32 p0, {w0}, 0; setp.ne.u32 p1, {w1}, 0; setp.ne.u32 p2, {w2}, 0; setp.ne.u32 p3, {w3}, 0;",
            "@p0 ld.shared.b32 o0, [{a0}]; @p1 ld.shared.b32 o1, [{a1}]; @p2 ld.shared.b32 o2, [{a2}]; @p3 ld.shared.b32 o3, [{a3}];",
            "@p0 add.rn.f32 n0, o0, {v0}; @p1 add.rn.f32 n1, o1, {v1}; @p2 add.rn.f32 n2, o2, {v2}; @p3 add.rn.f32 n3, o3, {v3};",
            "@p0 atom.shared.cas.b32 g0, [{a0}], o0, n0; @p1 atom.shared.cas.b32 g1, [{a1}], o1, n1;",
            "@p2 atom.shared.cas.b32 g2, [{a2}], o2, n2; @p3 atom.shared.cas.b32 g3, [{a3}], o3, n3;",
            "@p0 setp.ne.b32 p0, g0, o0; @p1 setp.ne.b32 p1, g1, o1; @p2 setp.ne.b32 p2, g2, o2; @p3 setp.ne.b32 p3, g3, o3;",
            "or.pred q, p0, p1; or.pred q, q, p2; or.pred q, q, p3;",
            "@!q bra DONE;",
            "@p0 red.shared.add.f32 [{a0}], {v0}; @p1 red.shared.add.f32 [{a1}], {v1};",
            "@p2 red.shared.add.f32 [{a2}], {v2}; @p3 red.shared.add.f32 [{a3}], {v3};",
            "DONE:",
            "}}",
            w0 = in(reg32) when[0] as u32, w1 = in(reg32) when[1] as u32,
            w2 = in(reg32) when[2] as u32, w3 = in(reg32) when[3] as u32,
            a0 = in(reg32) addr[0], a1 = in(reg32) addr[1], a2 = in(reg32) addr[2], a3 = in(reg32) addr[3],
            v0 = in(reg32) value[0], v1 = in(reg32) value[1], v2 = in(reg32) value[2], v3 = in(reg32) value[3],
            options(nostack, preserves_flags)
        )
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
