//! Example kernels for rustc's `nvptx64-nvidia-cuda` backend, on the `nvptx-std` device API.
//!
//! One kernel per file; each exports the constants of its launch contract so that the host
//! plans launches from the numbers the kernel was compiled with.
#![no_std]
// What `nvptx_std::kernel!` (the kernel ABI) and the shared-memory macros (`asm!` for nvptx)
// need, only when compiling for the GPU: on the host this crate builds on any toolchain.
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]

pub mod softmax;
