//! GPU kernels written in Rust and compiled to PTX by rustc's `nvptx64-nvidia-cuda` backend.
//!
//! One kernel family per file (matmul families under [`matmul`], the histogram tiers under
//! [`histogram`], its sorted and bucketed tiers in [`histogram::sorted`] and
//! [`histogram::bucketed`]); the file name names the kernel
//! and its PTX symbol. Each family
//! exports the constants of its launch contract (block shape, tile size, shared bytes) so the host
//! plans launches from the same numbers the kernel was compiled with.
//!
//! On the host this crate builds as an ordinary `no_std` rlib holding only those constants and
//! pure helpers; the kernels themselves and the [`device`] API exist only for `nvptx64`.
#![no_std]
#![deny(missing_docs)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_intrinsics, stmt_expr_attributes)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
// The sm_90a module (feature `hopper`) compiles only the Hopper kernels: the helpers of the
// others are unused there.
#![cfg_attr(feature = "hopper", allow(dead_code, unused_imports, unused_macros))]

pub mod device;

pub mod histogram;
pub mod matmul;
pub mod saxpy;

/// The PTX symbol of every kernel this crate emits, in the order the host lists them.
pub const KERNEL_NAMES: &[&str] = &[
    matmul::naive::KERNEL,
    matmul::tiled::KERNEL_TILE16,
    matmul::tiled::KERNEL_TILE32,
    matmul::sgemm::KERNEL,
    matmul::sgemm_warp_tiled::KERNEL,
    matmul::skinny::FEW_ROWS_KERNELS[0].1,
    matmul::skinny::FEW_ROWS_KERNELS[1].1,
    matmul::skinny::FEW_ROWS_KERNELS[2].1,
    matmul::skinny::FEW_ROWS_KERNELS[3].1,
    matmul::skinny::FEW_ROWS_KERNELS[4].1,
    matmul::skinny::FEW_COLS_KERNELS[0].1,
    matmul::skinny::FEW_COLS_KERNELS[1].1,
    matmul::skinny::FEW_COLS_KERNELS[2].1,
    matmul::skinny::FEW_COLS_KERNELS[3].1,
    matmul::skinny::FEW_COLS_KERNELS[4].1,
    matmul::split_k::KERNEL,
    histogram::TYPED_KERNELS[0].shared,
    histogram::TYPED_KERNELS[0].cluster,
    histogram::TYPED_KERNELS[0].global,
    histogram::TYPED_KERNELS[0].scatter,
    histogram::TYPED_KERNELS[0].tile_sort,
    histogram::TYPED_KERNELS[1].shared,
    histogram::TYPED_KERNELS[1].cluster,
    histogram::TYPED_KERNELS[1].global,
    histogram::TYPED_KERNELS[1].scatter,
    histogram::TYPED_KERNELS[1].tile_sort,
    histogram::TYPED_KERNELS[2].shared,
    histogram::TYPED_KERNELS[2].cluster,
    histogram::TYPED_KERNELS[2].global,
    histogram::TYPED_KERNELS[2].scatter,
    histogram::TYPED_KERNELS[2].tile_sort,
    histogram::TYPED_KERNELS[3].shared,
    histogram::TYPED_KERNELS[3].cluster,
    histogram::TYPED_KERNELS[3].global,
    histogram::TYPED_KERNELS[3].scatter,
    histogram::TYPED_KERNELS[3].tile_sort,
    histogram::bucketed::KERNEL_BUCKET_BINS,
    histogram::sorted::KERNEL_SORTED_BINS,
    histogram::channels::KERNELS[0][0],
    histogram::channels::KERNELS[0][1],
    histogram::channels::KERNELS[0][2],
    histogram::channels::KERNELS[0][3],
    histogram::channels::KERNELS[1][0],
    histogram::channels::KERNELS[1][1],
    histogram::channels::KERNELS[1][2],
    histogram::channels::KERNELS[1][3],
    histogram::channels::KERNELS[2][0],
    histogram::channels::KERNELS[2][1],
    histogram::channels::KERNELS[2][2],
    histogram::channels::KERNELS[2][3],
    histogram::channels::KERNELS[3][0],
    histogram::channels::KERNELS[3][1],
    histogram::channels::KERNELS[3][2],
    histogram::channels::KERNELS[3][3],
    histogram::channels::PACKED_KERNELS[0],
    histogram::channels::PACKED_KERNELS[1],
    histogram::channels::PACKED_KERNELS[2],
    histogram::channels::PACKED_KERNELS[3],
    histogram::edges::KERNELS[0],
    histogram::edges::KERNELS[1],
    histogram::edges::KERNELS[2],
    histogram::edges::KERNELS[3],
    histogram::weighted::KERNELS[0],
    histogram::weighted::KERNELS[1],
    histogram::weighted::KERNELS[2],
    histogram::weighted::KERNELS[3],
    histogram::segmented::KERNELS[0],
    histogram::segmented::KERNELS[1],
    histogram::segmented::KERNELS[2],
    histogram::segmented::KERNELS[3],
    histogram::hist2d::KERNEL,
    histogram::hist2d::KERNEL_WEIGHTED,
    saxpy::KERNEL,
    matmul::operands::KERNEL_TO_BF16,
    matmul::operands::KERNEL_TRANSPOSE,
    matmul::operands::KERNEL_PAD,
    matmul::tf32x3::KERNEL_SPLIT,
];

/// The PTX symbol of every kernel of the second module, built for `sm_90a` with the `hopper`
/// feature (`wgmma` exists only there); the first module, [`KERNEL_NAMES`], stays `sm_90`.
pub const HOPPER_KERNEL_NAMES: &[&str] = matmul::wgmma::KERNEL_NAMES;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // With `-Cpanic=immediate-abort` no panic reaches here; this satisfies `no_std` linking.
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}
