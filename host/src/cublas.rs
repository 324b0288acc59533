//! cuBLAS through cudarc: the in-process baseline every matmul kernel is compared with, in the
//! kernel's precision: SGEMM (FP32), and `cublasGemmEx` on BF16 inputs with FP32 compute, and on
//! `f32` inputs with `CUBLAS_COMPUTE_32F_FAST_TF32`.

use crate::error::{HostError, Result};
use crate::gpu::Gpu;
use crate::matmul::{DeviceMatrices, Precision};
use cudarc::cublas::sys::{self as blas_sys, cublasComputeType_t, cublasMath_t, cublasOperation_t, cudaDataType};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{DevicePtr, DevicePtrMut};

/// A cuBLAS handle on the GPU's stream, in plain FP32 math (no TF32 tensor cores), so that it
/// computes what our kernels compute.
pub struct Sgemm {
    blas: CudaBlas,
}

impl Sgemm {
    /// Loads cuBLAS (`libcublas.so`, found at run time) and creates a handle; a clear error when
    /// the library is not installed.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only probes whether the library can be loaded.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(HostError::Cublas(
                "libcublas.so was not found (install the CUDA toolkit's cuBLAS or add it to LD_LIBRARY_PATH)".into(),
            ));
        }
        let blas = CudaBlas::new(gpu.stream().clone()).map_err(|e| HostError::Cublas(format!("{e:?}")))?;
        // SAFETY: the handle is valid; DEFAULT_MATH keeps SGEMM in IEEE FP32.
        unsafe { cudarc::cublas::sys::cublasSetMathMode(*blas.handle(), cublasMath_t::CUBLAS_DEFAULT_MATH) }
            .result()
            .map_err(|e| HostError::Cublas(format!("{e:?}")))?;
        Ok(Self { blas })
    }

    /// Enqueues `C = A * B` for the row-major matrices: cuBLAS is column-major, so it computes
    /// `C^T = B^T * A^T`, which reads the same memory.
    pub fn launch(&self, mats: &mut DeviceMatrices) -> Result<()> {
        let s = mats.shape();
        let dim = |v: usize| {
            i32::try_from(v).map_err(|_| HostError::InvalidInput(format!("{s} exceeds cuBLAS's int dimensions")))
        };
        let (m, k, n) = (dim(s.m)?, dim(s.k)?, dim(s.n)?);
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: n,
            n: m,
            k,
            alpha: 1.0f32,
            lda: n,
            ldb: k,
            beta: 0.0f32,
            ldc: n,
        };
        let (a, b, c) = mats.operands_and_c();
        // SAFETY: B is k x n (ld n), A is m x k (ld k), C is m x n (ld n), all on this stream.
        unsafe { self.blas.gemm(cfg, b, a, c) }.map_err(|e| HostError::Cublas(format!("{e:?}")))
    }

    /// Runs `C = A * B` once on NaN-poisoned `C` and returns `C`, like `matmul::run`.
    pub fn run(&self, gpu: &Gpu, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
        self.run_in(gpu, Precision::Fp32, mats)
    }

    /// [`Sgemm::run`] in `precision`.
    pub fn run_in(&self, gpu: &Gpu, precision: Precision, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
        mats.poison_c(gpu)?;
        self.launch_in(gpu, precision, mats)?;
        gpu.synchronize()?;
        gpu.download(mats.c())
    }

    /// Enqueues `C = A * B` in `precision`: FP32 is [`Sgemm::launch`]; BF16 multiplies the same
    /// BF16 copies of `A` and `B` that `wgmma_bf16` does (made on first use, see
    /// `matmul::wgmma`), FP32 compute; TF32 multiplies `A` and `B` with
    /// `CUBLAS_COMPUTE_32F_FAST_TF32`; split-TF32, which cuBLAS does not offer, is FP32 (its
    /// baseline). Row-major through the column-major transposition, as in [`Sgemm::launch`].
    pub fn launch_in(&self, gpu: &Gpu, precision: Precision, mats: &mut DeviceMatrices) -> Result<()> {
        let s = mats.shape();
        let dim = |v: usize| {
            i32::try_from(v).map_err(|_| HostError::InvalidInput(format!("{s} exceeds cuBLAS's int dimensions")))
        };
        let (m, k, n) = (dim(s.m)?, dim(s.k)?, dim(s.n)?);
        let stream = gpu.stream();
        let (a, lda, b, ldb, in_type, compute) = match precision {
            Precision::Fp32 | Precision::Tf32x3 => return self.launch(mats),
            Precision::Bf16 => {
                let ops = crate::matmul::wgmma::bf16_operands(gpu, mats)?;
                let (a, _) = ops.a.device_ptr(stream);
                let (b, _) = ops.b.device_ptr(stream);
                (a, dim(ops.lda)?, b, dim(ops.ldb)?, cudaDataType::CUDA_R_16BF, cublasComputeType_t::CUBLAS_COMPUTE_32F)
            }
            Precision::Tf32 => {
                let (a, _) = mats.a().device_ptr(stream);
                let (b, _) = mats.b().device_ptr(stream);
                (a, k, b, n, cudaDataType::CUDA_R_32F, cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32)
            }
        };
        let (_, _, c) = mats.operands_and_c();
        let (c, _) = c.device_ptr_mut(stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: B is k x n (ld ldb >= n), A is m x k (ld lda >= k), C is m x n (ld n), in the
        // element types named, live on this handle's stream; alpha and beta are f32 as the FP32
        // compute types take.
        unsafe {
            blas_sys::cublasGemmEx(
                *self.blas.handle(),
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                (&alpha as *const f32).cast(),
                b as *const std::ffi::c_void,
                in_type,
                ldb,
                a as *const std::ffi::c_void,
                in_type,
                lda,
                (&beta as *const f32).cast(),
                c as *mut std::ffi::c_void,
                cudaDataType::CUDA_R_32F,
                n,
                compute,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .result()
        .map_err(|e| HostError::Cublas(format!("{e:?}")))
    }
}
