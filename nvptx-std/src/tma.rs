//! The tensor memory accelerator (TMA, sm_90): bulk tensor copies from global into shared
//! memory, described by a tensor map that the host encodes (`cuTensorMapEncodeTiled`), completing
//! on an [`mbarrier`](crate::mbarrier).
//!
//! A tensor map is 128 opaque bytes that must live in parameter, constant or global memory,
//! never in a thread's local copy. Rust's kernel ABI does not promise to leave a by-value
//! parameter in parameter space (taking its address may copy it to the stack), so our kernels
//! take a pointer to tensor maps in global memory, [`TENSOR_MAP_ALIGN`]-byte aligned.
//!
//! The instructions need PTX ISA 8.0: an `sm_90a` module has it; for `sm_90`, whose default is
//! 7.8, build with `nvptx_builder::PtxBuilder::ptx_isa(8, 0)`.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// Bytes of one tensor map (`CUtensorMap`).
///
/// ```
/// assert_eq!(nvptx_std::tma::TENSOR_MAP_BYTES, 128); // size_of::<CUtensorMap>()
/// ```
pub const TENSOR_MAP_BYTES: usize = 128;
/// Alignment a tensor map needs in memory.
///
/// ```
/// use nvptx_std::tma::{TENSOR_MAP_ALIGN, TENSOR_MAP_BYTES};
/// // Two maps back to back in one buffer keep both aligned.
/// assert_eq!(TENSOR_MAP_BYTES % TENSOR_MAP_ALIGN, 0);
/// ```
pub const TENSOR_MAP_ALIGN: usize = 64;
/// Global strides (every dimension but the innermost) must be multiples of this many bytes.
///
/// ```
/// use nvptx_std::tma::STRIDE_GRANULE;
/// let row_bytes = 1000 * 4;
/// assert!((row_bytes % STRIDE_GRANULE) == 0); // 1000 f32 per row: a valid TMA stride
/// ```
pub const STRIDE_GRANULE: usize = 16;
/// With 128-byte swizzling, the inner box dimension may span at most this many bytes.
///
/// ```
/// use nvptx_std::tma::SWIZZLE_128B_MAX_INNER_BYTES;
/// assert_eq!(SWIZZLE_128B_MAX_INNER_BYTES / 2, 64); // BF16 boxes at most 64 wide
/// ```
pub const SWIZZLE_128B_MAX_INNER_BYTES: usize = 128;
/// A box dimension holds at most this many elements.
///
/// ```
/// assert!(128 <= nvptx_std::tma::MAX_BOX_DIM); // a 128-row box is valid
/// ```
pub const MAX_BOX_DIM: usize = 256;

/// The smallest row length (in elements of `elem_bytes`) at or above `cols` whose byte stride
/// is a multiple of [`STRIDE_GRANULE`]: the leading dimension a row-major matrix needs to be a
/// TMA source.
///
/// ```
/// use nvptx_std::tma::padded_row_len;
/// assert_eq!(padded_row_len(1000, 4), 1000); // 4000 bytes: already a multiple of 16
/// assert_eq!(padded_row_len(1001, 2), 1008); // BF16 rows padded to 16 bytes
/// ```
pub const fn padded_row_len(cols: usize, elem_bytes: usize) -> usize {
    let per_granule = STRIDE_GRANULE / elem_bytes;
    cols.div_ceil(per_granule) * per_granule
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst],
/// [map, {x, y}], [bar];`: copies the box at element coordinates `(x, y)` (`x` innermost) of the
/// tensor `map` describes into shared memory at `dst`, and completes the box's bytes on the
/// barrier `bar`. Elements outside the tensor read as zero and still count as bytes.
///
/// # Safety
/// `map` is the generic address of a valid tensor map in global (or constant or parameter)
/// memory; `dst` is a shared-window address with the box's bytes free, aligned as the map's
/// swizzle needs (1024 bytes for 128-byte swizzling); `bar` is an initialised barrier whose
/// current phase expects these bytes; nothing reads `dst` before that phase completes.
///
/// ```ignore
/// unsafe { nvptx_std::mbarrier::arrive_expect_tx(full, BOX_BYTES) };
/// unsafe { nvptx_std::tma::load_2d(stage_address, map, k0 as i32, row0 as i32, full) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_2d(dst: u32, map: *const u8, x: i32, y: i32, bar: u32) {
    // SAFETY: the caller guarantees the map, the destination and the barrier.
    unsafe {
        asm!("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
             d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar,
             options(nostack))
    };
}

/// `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [map, {x, y}], [src];`: copies a
/// box from shared memory at `src` (laid out as the map's box and swizzle) to the tensor `map`
/// describes at element coordinates `(x, y)`, skipping elements outside the tensor; the copy
/// joins this thread's current bulk group ([`bulk_commit_group`]).
///
/// # Safety
/// `map` is the generic address of a valid tensor map in global (or constant or parameter)
/// memory; `src` is a shared-window address holding the box, aligned as the map's swizzle needs
/// (128 bytes without swizzle, 1024 with 128-byte swizzling), written by the generic proxy only
/// before a [`fence_proxy_async_shared`] and a barrier that this call follows, and left
/// unchanged until a [`bulk_wait_group_read`] covers the copy; nothing else accesses the
/// destination elements meanwhile.
///
/// ```ignore
/// nvptx_std::tma::fence_proxy_async_shared();
/// nvptx_std::thread::sync_threads();
/// if thread_idx_x() == 0 {
///     unsafe { nvptx_std::tma::store_2d(map, col0, row0, tile_address) };
///     nvptx_std::tma::bulk_commit_group();
///     nvptx_std::tma::bulk_wait_group_read::<0>();
/// }
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn store_2d(map: *const u8, x: i32, y: i32, src: u32) {
    // SAFETY: the caller guarantees the map, the source and the ordering.
    unsafe {
        asm!("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
             m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src, options(nostack))
    };
}

/// `cp.async.bulk.commit_group;`: closes this thread's bulk group of the copies issued since
/// the last commit ([`store_2d`]), for [`bulk_wait_group_read`] and [`bulk_wait_group`].
///
/// ```ignore
/// nvptx_std::tma::bulk_commit_group();
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn bulk_commit_group() {
    // SAFETY: no operands; orders memory.
    unsafe { asm!("cp.async.bulk.commit_group;", options(nostack)) };
}

/// `cp.async.bulk.wait_group.read N;`: waits until at most `N` of this thread's committed bulk
/// groups still read their shared-memory sources, so the sources of the others can be reused.
///
/// ```ignore
/// nvptx_std::tma::bulk_wait_group_read::<0>(); // the tile may be overwritten
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn bulk_wait_group_read<const N: u32>() {
    // SAFETY: a wait; orders memory (no `nomem`).
    unsafe { asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack)) };
}

/// `cp.async.bulk.wait_group N;`: waits until at most `N` of this thread's committed bulk
/// groups are incomplete (their writes to global memory performed).
///
/// ```ignore
/// nvptx_std::tma::bulk_wait_group::<0>(); // every store has reached global memory
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn bulk_wait_group<const N: u32>() {
    // SAFETY: a wait; orders memory (no `nomem`).
    unsafe { asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack)) };
}

/// `prefetch.tensormap [map];`: brings a tensor map into the cache ahead of its first copy.
///
/// # Safety
/// `map` is the generic address of a tensor map in global, constant or parameter memory.
///
/// ```ignore
/// unsafe { nvptx_std::tma::prefetch_tensormap(maps) };
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn prefetch_tensormap(map: *const u8) {
    // SAFETY: a prefetch; the caller guarantees the address.
    unsafe { asm!("prefetch.tensormap [{m}];", m = in(reg64) map, options(nostack, readonly)) };
}

/// `fence.proxy.async.shared::cta;`: orders this thread's earlier shared-memory accesses by
/// ordinary instructions (the generic proxy: `mbarrier.init`, `st.shared`) before later accesses
/// by the copy engine and the tensor cores (the async proxy).
///
/// ```ignore
/// unsafe { nvptx_std::mbarrier::init(full, 1) };
/// nvptx_std::tma::fence_proxy_async_shared(); // the copy engine sees the initialised barrier
/// ```
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence; orders memory (no `nomem`), no operands.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_row_len_rounds_rows_to_16_bytes() {
        assert_eq!(padded_row_len(1, 2), 8);
        assert_eq!(padded_row_len(8, 2), 8);
        assert_eq!(padded_row_len(129, 2), 136);
        assert_eq!(padded_row_len(1, 4), 4);
        assert_eq!(padded_row_len(4097, 4), 4100);
        assert_eq!(padded_row_len(4096, 4), 4096);
        for cols in 1..100 {
            for eb in [2, 4] {
                let p = padded_row_len(cols, eb);
                assert!(p >= cols && (p * eb).is_multiple_of(STRIDE_GRANULE) && p - cols < STRIDE_GRANULE / eb);
            }
        }
    }
}
