//! cuBLAS and cuBLASLt through cudarc: the in-process baselines every matmul kernel is compared
//! with, in the kernel's precision. `cublasGemmEx`: SGEMM (FP32, no TF32), BF16 inputs with FP32
//! compute, `f32` inputs with `CUBLAS_COMPUTE_32F_FAST_TF32`. cuBLASLt (what PyTorch calls, and
//! the strongest NVIDIA number): the same three, each with the heuristic's best algorithm for the
//! shape, found once and reused, and a workspace of [`LT_WORKSPACE_BYTES`].

use anyhow::{Context, Result, bail};
use cudarc::cublas::sys::{self as blas_sys, cublasComputeType_t, cublasMath_t, cublasOperation_t, cudaDataType};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::cublaslt::{result as lt, sys as lt_sys};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use hopper_kernels::Gpu;
use hopper_kernels::matmul::{DeviceMatrices, MatmulShape, Precision};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;

/// The cuBLASLt workspace: NVIDIA's recommendation for Hopper, and PyTorch's default there.
pub const LT_WORKSPACE_BYTES: usize = 32 << 20;

/// cuBLAS and cuBLASLt handles on the GPU's stream; cuBLAS in plain FP32 math (no TF32 tensor
/// cores) unless a precision asks for TF32.
pub struct Sgemm {
    blas: CudaBlas,
    lt: Option<Lt>,
}

/// The cuBLASLt handle, its workspace and the plans made so far.
struct Lt {
    handle: lt_sys::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    plans: RefCell<HashMap<(Precision, MatmulShape), LtPlan>>,
}

impl Drop for Lt {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasLtCreate and is destroyed once.
        let _ = unsafe { lt::destroy_handle(self.handle) };
    }
}

/// One cuBLASLt product: its descriptors and the heuristic's best algorithm.
struct LtPlan {
    desc: lt_sys::cublasLtMatmulDesc_t,
    layouts: [lt_sys::cublasLtMatrixLayout_t; 3],
    algo: lt_sys::cublasLtMatmulAlgo_t,
}

impl Drop for LtPlan {
    fn drop(&mut self) {
        // SAFETY: created by this plan and destroyed once.
        unsafe {
            let _ = lt::destroy_matmul_desc(self.desc);
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
        }
    }
}

impl Sgemm {
    /// Loads cuBLAS (`libcublas.so`, found at run time) and creates a handle, and cuBLASLt's when
    /// `libcublasLt.so` is there too; a clear error when cuBLAS is not installed.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only probes whether the library can be loaded.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            bail!("libcublas.so was not found (install the CUDA toolkit's cuBLAS or add it to LD_LIBRARY_PATH)");
        }
        let blas = CudaBlas::new(gpu.stream().clone()).map_err(|e| anyhow::anyhow!("cuBLAS: {e:?}"))?;
        // SAFETY: the handle is valid; DEFAULT_MATH keeps SGEMM in IEEE FP32.
        unsafe { cudarc::cublas::sys::cublasSetMathMode(*blas.handle(), cublasMath_t::CUBLAS_DEFAULT_MATH) }
            .result()
            .map_err(|e| anyhow::anyhow!("cuBLAS: {e:?}"))?;
        // SAFETY: only probes whether the library can be loaded.
        let lt = if unsafe { lt_sys::is_culib_present() } {
            let handle = lt::create_handle().map_err(|e| anyhow::anyhow!("cuBLASLt: {e:?}"))?;
            let workspace = gpu.stream().alloc_zeros::<u8>(LT_WORKSPACE_BYTES)?;
            Some(Lt { handle, workspace, plans: RefCell::new(HashMap::new()) })
        } else {
            None
        };
        Ok(Self { blas, lt })
    }

    /// Whether cuBLASLt is loaded.
    pub fn has_lt(&self) -> bool {
        self.lt.is_some()
    }

    /// Enqueues `C = A * B` for the row-major matrices in FP32: cuBLAS is column-major, so it
    /// computes `C^T = B^T * A^T`, which reads the same memory.
    pub fn launch(&self, mats: &mut DeviceMatrices) -> Result<()> {
        let s = mats.shape();
        let (m, k, n) = dims(s)?;
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
        unsafe { self.blas.gemm(cfg, b, a, c) }.map_err(|e| anyhow::anyhow!("cuBLAS: {e:?}"))
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
        Ok(gpu.download(mats.c())?)
    }

    /// Enqueues `C = A * B` in `precision` with `cublasGemmEx`: FP32 is [`Sgemm::launch`]; BF16
    /// (FP16) multiplies the matrices' BF16 (F16) copies (those `wgmma_bf16` and `wgmma_f16` run
    /// on), FP32 compute; TF32
    /// multiplies `A` and `B` with `CUBLAS_COMPUTE_32F_FAST_TF32`; split-TF32, which cuBLAS does
    /// not offer, is FP32 (its baseline).
    pub fn launch_in(&self, gpu: &Gpu, precision: Precision, mats: &mut DeviceMatrices) -> Result<()> {
        let s = mats.shape();
        let (m, k, n) = dims(s)?;
        let stream = gpu.stream();
        if matches!(precision, Precision::Fp32 | Precision::Tf32x3) {
            return self.launch(mats);
        }
        let (a, b, in_type, compute) = operands(gpu, precision, mats)?;
        let (_, _, c) = mats.operands_and_c();
        let (c, _) = c.device_ptr_mut(stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: B is k x n (ld n), A is m x k (ld k), C is m x n (ld n), in the element types
        // named, live on this handle's stream; alpha and beta are f32 as the FP32 compute types
        // take.
        unsafe {
            blas_sys::cublasGemmEx(
                *self.blas.handle(),
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                (&alpha as *const f32).cast(),
                b as *const c_void,
                in_type,
                n,
                a as *const c_void,
                in_type,
                k,
                (&beta as *const f32).cast(),
                c as *mut c_void,
                cudaDataType::CUDA_R_32F,
                n,
                compute,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .result()
        .map_err(|e| anyhow::anyhow!("cublasGemmEx: {e:?}"))
    }

    /// [`Sgemm::run_in`] through cuBLASLt.
    pub fn run_lt(&self, gpu: &Gpu, precision: Precision, mats: &mut DeviceMatrices) -> Result<Vec<f32>> {
        mats.poison_c(gpu)?;
        self.launch_lt(gpu, precision, mats)?;
        gpu.synchronize()?;
        Ok(gpu.download(mats.c())?)
    }

    /// Enqueues `C = A * B` in `precision` through cuBLASLt with the heuristic's best algorithm
    /// for the shape (found on the first launch of a precision and shape, then reused): FP32
    /// (`CUBLAS_COMPUTE_32F`, `f32` operands), TF32 (`CUBLAS_COMPUTE_32F_FAST_TF32`), BF16 and
    /// FP16 (the BF16 or F16 copies, `CUDA_R_16BF` or `CUDA_R_16F`, `CUBLAS_COMPUTE_32F`); `f32` `C`.
    pub fn launch_lt(&self, gpu: &Gpu, precision: Precision, mats: &mut DeviceMatrices) -> Result<()> {
        let lt = self.lt.as_ref().context("libcublasLt.so was not found")?;
        let s = mats.shape();
        let precision = if precision == Precision::Tf32x3 { Precision::Fp32 } else { precision };
        let stream = gpu.stream();
        let (a, b, _, _) = operands(gpu, precision, mats)?;
        let mut plans = lt.plans.borrow_mut();
        let plan = match plans.entry((precision, s)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(LtPlan::new(lt, s, precision)?),
        };
        let (_, _, c) = mats.operands_and_c();
        let (c, _) = c.device_ptr_mut(stream);
        let (w, _) = lt.workspace.device_ptr(stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the descriptors describe C^T = B^T A^T over these buffers (B k x n, A m x k, C
        // m x n, row-major, read column-major), in the element types named, on this stream; the
        // workspace holds LT_WORKSPACE_BYTES, the size the heuristic was given.
        unsafe {
            lt::matmul(
                lt.handle,
                plan.desc,
                (&alpha as *const f32).cast(),
                (&beta as *const f32).cast(),
                b as *const c_void,
                plan.layouts[0],
                a as *const c_void,
                plan.layouts[1],
                c as *const c_void,
                plan.layouts[2],
                c as *mut c_void,
                plan.layouts[2],
                &plan.algo,
                w as *mut c_void,
                LT_WORKSPACE_BYTES,
                stream.cu_stream() as _,
            )
        }
        .map_err(|e| anyhow::anyhow!("cublasLtMatmul: {e:?}"))
    }
}

impl LtPlan {
    /// Descriptors of `C^T (n x m) = B^T (n x k) A^T (k x m)`, column-major, and the heuristic's
    /// best algorithm for them.
    fn new(lt: &Lt, s: MatmulShape, precision: Precision) -> Result<Self> {
        use lt_sys::{cublasComputeType_t as Compute, cudaDataType_t as Type};
        let err = |what: &'static str| move |e: lt::CublasError| anyhow::anyhow!("cuBLASLt {what}: {e:?}");
        let (in_type, compute) = match precision {
            Precision::Bf16 => (Type::CUDA_R_16BF, Compute::CUBLAS_COMPUTE_32F),
            Precision::Fp16 => (Type::CUDA_R_16F, Compute::CUBLAS_COMPUTE_32F),
            Precision::Tf32 => (Type::CUDA_R_32F, Compute::CUBLAS_COMPUTE_32F_FAST_TF32),
            Precision::Fp32 | Precision::Tf32x3 => (Type::CUDA_R_32F, Compute::CUBLAS_COMPUTE_32F),
        };
        let (m, k, n) = (s.m as u64, s.k as u64, s.n as u64);
        let desc = lt::create_matmul_desc(compute, Type::CUDA_R_32F).map_err(err("descriptor"))?;
        let layouts = [
            lt::create_matrix_layout(in_type, n, k, n as i64).map_err(err("layout"))?,
            lt::create_matrix_layout(in_type, k, m, k as i64).map_err(err("layout"))?,
            lt::create_matrix_layout(Type::CUDA_R_32F, n, m, n as i64).map_err(err("layout"))?,
        ];
        let pref = lt::create_matmul_pref().map_err(err("preference"))?;
        let bytes = LT_WORKSPACE_BYTES as u64;
        // SAFETY: a valid preference and an attribute of the type the attribute takes (u64).
        let heuristic = unsafe {
            lt::set_matmul_pref_attribute(
                pref,
                lt_sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&bytes as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
            .map_err(err("preference"))?;
            let h =
                lt::get_matmul_algo_heuristic(lt.handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref);
            let _ = lt::destroy_matmul_pref(pref);
            h.map_err(err("heuristic"))?
        };
        Ok(Self { desc, layouts, algo: heuristic.algo })
    }
}

/// `A` and `B` of `mats` in `precision`'s input type, with the type and compute type cuBLAS takes.
fn operands(
    gpu: &Gpu,
    precision: Precision,
    mats: &mut DeviceMatrices,
) -> Result<(u64, u64, cudaDataType, cublasComputeType_t)> {
    let stream = gpu.stream();
    Ok(match precision {
        Precision::Bf16 => {
            let (a, b) = mats.bf16_operands(gpu)?;
            (
                a.device_ptr(stream).0,
                b.device_ptr(stream).0,
                cudaDataType::CUDA_R_16BF,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            )
        }
        Precision::Fp16 => {
            let (a, b) = mats.f16_operands(gpu)?;
            (
                a.device_ptr(stream).0,
                b.device_ptr(stream).0,
                cudaDataType::CUDA_R_16F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            )
        }
        Precision::Tf32 => (
            mats.a().device_ptr(stream).0,
            mats.b().device_ptr(stream).0,
            cudaDataType::CUDA_R_32F,
            cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
        ),
        Precision::Fp32 | Precision::Tf32x3 => (
            mats.a().device_ptr(stream).0,
            mats.b().device_ptr(stream).0,
            cudaDataType::CUDA_R_32F,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
    })
}

/// `(m, k, n)` as cuBLAS's `int`s.
fn dims(s: MatmulShape) -> Result<(i32, i32, i32)> {
    let dim = |v: usize| i32::try_from(v).with_context(|| format!("{s} exceeds cuBLAS's int dimensions"));
    Ok((dim(s.m)?, dim(s.k)?, dim(s.n)?))
}
