//! cuBLAS SGEMM through cudarc: the in-process baseline every matmul kernel is compared with.

use crate::error::{HostError, Result};
use crate::gpu::Gpu;
use crate::matmul::DeviceMatrices;
use cudarc::cublas::sys::{cublasMath_t, cublasOperation_t};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};

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
        let s = mats.shape;
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
        // SAFETY: B is k x n (ld n), A is m x k (ld k), C is m x n (ld n), all on this stream.
        unsafe { self.blas.gemm(cfg, &mats.b, &mats.a, &mut mats.c) }.map_err(|e| HostError::Cublas(format!("{e:?}")))
    }

    /// Runs `C = A * B` once on NaN-poisoned `C` and returns `C`, like `matmul::run`.
    pub fn run(&self, gpu: &Gpu, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
        mats.poison_c(gpu)?;
        self.launch(mats)?;
        gpu.synchronize()?;
        gpu.download(&mats.c)
    }
}
