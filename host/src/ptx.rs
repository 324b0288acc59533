//! The PTX modules embedded at build time (see `host/build.rs`) and their manifests: the main
//! module (`sm_90`) and the Hopper module (`sm_90a`, the `wgmma` kernels), which the driver
//! loads only on devices of compute capability 9.0; and, where the build found ptxas, each one
//! assembled for its architecture (a cubin), which a `Gpu` of that compute capability loads
//! instead of having the driver compile the PTX.

use crate::error::{Error, Result};

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
const MANIFEST: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.json"));
const PROBLEM: Option<&str> = include!(concat!(env!("OUT_DIR"), "/kernels_problem.rs"));
const HOPPER_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm90a.ptx"));
const HOPPER_MANIFEST: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm90a.json"));
const HOPPER_PROBLEM: Option<&str> = include!(concat!(env!("OUT_DIR"), "/kernels_sm90a_problem.rs"));
// Empty where the build found no ptxas.
const CUBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.cubin"));
const HOPPER_CUBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels_sm90a.cubin"));

/// The name of the main module (`sm_90`).
///
/// ```
/// use hopper_kernels::{Error, ptx};
/// // The module, or an error that names it and why it is missing.
/// match ptx::embedded() {
///     Ok(text) => assert!(text.contains(".visible .entry saxpy(")),
///     Err(Error::PtxUnavailable { module, .. }) => assert_eq!(module, ptx::MAIN_MODULE),
///     Err(e) => panic!("{e}"),
/// }
/// ```
pub const MAIN_MODULE: &str = "kernels";
/// The name of the Hopper module (`sm_90a`, the `wgmma` kernels).
///
/// ```
/// use hopper_kernels::{Error, ptx};
/// match ptx::embedded_hopper() {
///     Ok(text) => assert!(text.lines().any(|l| l.trim() == ".target sm_90a")),
///     Err(Error::PtxUnavailable { module, .. }) => assert_eq!(module, ptx::HOPPER_MODULE),
///     Err(e) => panic!("{e}"),
/// }
/// ```
pub const HOPPER_MODULE: &str = "kernels_sm90a";

/// The embedded PTX text, or why there is none (the build script could not build it: the reason
/// it printed as a build warning).
///
/// ```
/// use hopper_kernels::ptx;
/// // Built by the library's build script; where that could not run, the reason instead.
/// match ptx::embedded() {
///     Ok(text) => assert!(text.lines().any(|l| l.trim() == ".target sm_90")),
///     Err(e) => assert!(e.to_string().starts_with("kernels unavailable: kernels: "), "{e}"),
/// }
/// ```
pub fn embedded() -> Result<&'static str> {
    match PROBLEM {
        Some(problem) => Err(Error::PtxUnavailable { module: MAIN_MODULE, reason: problem.to_string() }),
        None => Ok(PTX),
    }
}

/// The main module assembled by ptxas at build time for the manifest's architecture (`sm_90`),
/// where the build found ptxas; `None` otherwise, or where the PTX itself is missing.
///
/// ```
/// use hopper_kernels::ptx;
/// if let Some(cubin) = ptx::embedded_cubin() {
///     // An ELF image the driver loads as it is, with no PTX to compile.
///     assert_eq!(&cubin[..4], b"\x7fELF");
///     assert!(ptx::embedded().is_ok());
/// }
/// ```
pub fn embedded_cubin() -> Option<&'static [u8]> {
    (PROBLEM.is_none() && !CUBIN.is_empty()).then_some(CUBIN)
}

/// The Hopper module assembled by ptxas at build time (`sm_90a`), where the build found ptxas.
///
/// ```
/// use hopper_kernels::ptx;
/// if let Some(cubin) = ptx::embedded_hopper_cubin() {
///     assert_eq!(&cubin[..4], b"\x7fELF");
/// }
/// ```
pub fn embedded_hopper_cubin() -> Option<&'static [u8]> {
    (HOPPER_PROBLEM.is_none() && !HOPPER_CUBIN.is_empty()).then_some(HOPPER_CUBIN)
}

/// What the driver was given for a module's machine code ([`PtxInfo::code`] of a `Gpu`'s modules).
///
/// ```
/// use hopper_kernels::ptx::ModuleCode;
/// assert_eq!(ModuleCode::Cubin.to_string(), "cubin assembled at build time");
/// assert_eq!(ModuleCode::Ptx.to_string(), "PTX compiled by the driver");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleCode {
    /// The cubin ptxas assembled from the PTX when the library was built
    /// ([`embedded_cubin`]): loaded as it is, on a GPU of the compute capability it was
    /// assembled for.
    Cubin,
    /// The PTX, compiled by the driver when the module is loaded (and kept in its cache,
    /// `CUDA_CACHE_PATH`, for later loads): on other GPUs, where the build had no ptxas, where
    /// the driver refused the cubin, or where `CUDA_FORCE_PTX_JIT=1` asks for it.
    Ptx,
}

impl std::fmt::Display for ModuleCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModuleCode::Cubin => "cubin assembled at build time",
            ModuleCode::Ptx => "PTX compiled by the driver",
        })
    }
}

/// What the build script's nvptx-builder recorded about the embedded PTX (its manifest).
///
/// ```
/// use hopper_kernels::{Error, ptx};
/// match ptx::info() {
///     Ok(info) => {
///         assert_eq!(info.arch, "sm_90");
///         assert!(info.profile == "release" || info.profile == "ptx-checked");
///         assert!(info.entries.iter().any(|e| e == "sgemm"));
///     }
///     Err(e) => assert!(matches!(e, Error::PtxUnavailable { .. }), "{e}"),
/// }
/// ```
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct PtxInfo {
    /// `.target`, e.g. `sm_90`.
    pub arch: String,
    /// `release`, or `ptx-checked` (bounds and overflow checks compiled in).
    pub profile: String,
    /// Every `.entry` point.
    pub entries: Vec<String>,
    /// How a `Gpu` loaded the module (`Gpu::ptx_info`); `None` in the manifest itself
    /// ([`info`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ModuleCode>,
}

impl PtxInfo {
    /// The module's architecture, build profile and, for a loaded module, how it was loaded: what
    /// the CLI and `host bench` print about the code that ran.
    ///
    /// ```
    /// use hopper_kernels::ptx::{ModuleCode, PtxInfo};
    /// let info = PtxInfo { arch: "sm_90".into(), profile: "release".into(), entries: vec![], code: None };
    /// assert_eq!(info.summary(), "sm_90 (release build)");
    /// let loaded = PtxInfo { code: Some(ModuleCode::Cubin), ..info };
    /// assert_eq!(loaded.summary(), "sm_90 (release build, cubin assembled at build time)");
    /// ```
    pub fn summary(&self) -> String {
        match self.code {
            Some(code) => format!("{} ({} build, {code})", self.arch, self.profile),
            None => format!("{} ({} build)", self.arch, self.profile),
        }
    }
}

/// The manifest of the embedded PTX.
///
/// ```
/// use hopper_kernels::ptx;
/// match ptx::info() {
///     Ok(info) => assert_eq!(ptx::arch_capability(&info.arch), Some((9, 0))),
///     Err(e) => assert!(ptx::embedded().is_err(), "a manifest error with PTX embedded: {e}"),
/// }
/// ```
pub fn info() -> Result<PtxInfo> {
    embedded()?;
    serde_json::from_str(MANIFEST)
        .map_err(|e| Error::PtxUnavailable { module: MAIN_MODULE, reason: format!("unreadable PTX manifest: {e}") })
}

/// The embedded Hopper (`sm_90a`) PTX text, or why there is none.
///
/// ```
/// use hopper_kernels::{Error, ptx};
/// match ptx::embedded_hopper() {
///     // The wgmma kernels, which only compute capability 9.0 runs.
///     Ok(text) => assert!(text.contains(".visible .entry wgmma_bf16(")),
///     Err(Error::PtxUnavailable { module, .. }) => assert_eq!(module, ptx::HOPPER_MODULE),
///     Err(e) => panic!("{e}"),
/// }
/// ```
pub fn embedded_hopper() -> Result<&'static str> {
    match HOPPER_PROBLEM {
        Some(problem) => Err(Error::PtxUnavailable { module: HOPPER_MODULE, reason: problem.to_string() }),
        None => Ok(HOPPER_PTX),
    }
}

/// The manifest of the embedded Hopper PTX.
///
/// ```
/// use hopper_kernels::{Error, ptx};
/// match ptx::hopper_info() {
///     Ok(info) => {
///         assert_eq!(info.arch, "sm_90a");
///         // The tensor-core kernels: the wgmma tiles and the m <= 16 BF16/F16 kernels.
///         assert!(info.entries.iter().all(|e| e.starts_with("wgmma_") || e.starts_with("matmul_decode_")));
///     }
///     Err(e) => assert!(matches!(e, Error::PtxUnavailable { .. }), "{e}"),
/// }
/// ```
pub fn hopper_info() -> Result<PtxInfo> {
    embedded_hopper()?;
    serde_json::from_str(HOPPER_MANIFEST)
        .map_err(|e| Error::PtxUnavailable { module: HOPPER_MODULE, reason: format!("unreadable PTX manifest: {e}") })
}

/// The compute capability `sm_XY` names, as `(X, Y)`.
///
/// ```
/// use hopper_kernels::ptx::arch_capability;
/// assert_eq!(arch_capability("sm_90"), Some((9, 0)));
/// assert_eq!(arch_capability("sm_90a"), Some((9, 0)));
/// assert_eq!(arch_capability("sm_120"), Some((12, 0)));
/// assert_eq!(arch_capability("compute_90"), None);
/// ```
pub fn arch_capability(arch: &str) -> Option<(i32, i32)> {
    let digits = arch.strip_prefix("sm_")?.trim_end_matches('a');
    let value: i32 = digits.parse().ok()?;
    Some((value / 10, value % 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_capability_reads_sm_names() {
        assert_eq!(arch_capability("sm_90"), Some((9, 0)));
        assert_eq!(arch_capability("sm_90a"), Some((9, 0)));
        assert_eq!(arch_capability("sm_120"), Some((12, 0)));
        assert_eq!(arch_capability("compute_90"), None);
    }

    #[test]
    fn embedded_ptx_has_every_kernel_and_targets_its_manifest_arch() {
        // The build script builds the PTX; where it could not (no nvptx toolchain), this says why.
        let ptx = embedded().unwrap_or_else(|e| panic!("the library was built without its PTX: {e}"));
        let info = info().unwrap();
        assert!(ptx.lines().any(|l| l.trim() == format!(".target {}", info.arch)));
        for name in kernels::KERNEL_NAMES {
            assert!(ptx.contains(&format!(".visible .entry {name}(")), "no .entry {name}");
            assert!(info.entries.iter().any(|e| e == name));
        }
        assert!(!ptx.contains(".extern .func"), "the PTX calls code outside the module");
    }

    #[test]
    fn embedded_hopper_ptx_targets_sm_90a_and_holds_only_the_hopper_kernels() {
        let ptx = embedded_hopper().unwrap_or_else(|e| panic!("the library was built without its PTX: {e}"));
        let info = hopper_info().unwrap();
        assert_eq!(info.arch, "sm_90a");
        assert!(ptx.lines().any(|l| l.trim() == ".target sm_90a"));
        assert_eq!(info.entries.len(), kernels::HOPPER_KERNEL_NAMES.len());
        for name in kernels::HOPPER_KERNEL_NAMES {
            assert!(ptx.contains(&format!(".visible .entry {name}(")), "no .entry {name}");
            assert!(!embedded().unwrap().contains(&format!(".entry {name}(")), "{name} in the sm_90 module");
        }
    }

    /// The text of kernel `name`'s entry in `ptx`: from its `.entry` to the next one.
    fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
        let start = ptx.find(&format!(".visible .entry {name}(")).unwrap_or_else(|| panic!("no .entry {name}"));
        let rest = &ptx[start + 1..];
        &ptx[start..start + 1 + rest.find(".visible .entry").unwrap_or(rest.len())]
    }

    #[test]
    fn the_16_bit_wgmma_kernels_issue_their_own_types_instruction() {
        let ptx = embedded_hopper().unwrap_or_else(|e| panic!("the library was built without its PTX: {e}"));
        let bf16 = "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16";
        let f16 = "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16";
        use kernels::matmul::wgmma::{KERNEL_BF16, KERNEL_F16};
        for (kernel, own, other) in [(KERNEL_BF16, bf16, f16), (KERNEL_F16, f16, bf16)] {
            let body = entry_body(ptx, kernel);
            // Four k-steps of 16 per 64-element stage, unrolled.
            assert_eq!(body.matches(own).count(), 4, "{kernel}");
            assert!(!body.contains(other), "{kernel} issues {other}");
        }
        // The F16 operands' conversion is in the sm_90 module.
        let main = embedded().unwrap();
        assert!(entry_body(main, "matmul_convert_f32_f16").contains("cvt.rn.f16.f32"));
    }

    #[test]
    fn the_16_bit_few_rows_kernels_load_ragged_columns_of_b_predicated() {
        // A guarded 16-bit load in a branch of its own held the next load back until its
        // widening (kernels::matmul::skinny's load_b_row); every form keeps them predicated.
        let ptx = embedded().unwrap_or_else(|e| panic!("the library was built without its PTX: {e}"));
        for kernel in ["matmul_few_rows_bf16_1", "matmul_few_rows_f16_1", "matmul_few_rows_bf16_4"] {
            let body = entry_body(ptx, kernel);
            assert!(body.contains("@p ld.global.nc.u16"), "{kernel} has no predicated 16-bit load");
        }
        assert!(!entry_body(ptx, "matmul_few_rows_1").contains("@p ld.global.nc"), "f32 keeps its measured loads");
    }
}
