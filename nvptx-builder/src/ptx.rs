//! What the builder does to and checks in the PTX rustc writes: `.maxntid` per kernel, the
//! `.target`, the expected `.entry` points, and no call out of the module.

use crate::Error;

/// Adds `.maxntid threads, 1, 1` to each named `.entry`: with it, ptxas (here and in the
/// driver's JIT) caps registers so that a block of `threads` fits an SM, instead of taking up to
/// 255 and failing the launch with "too many resources requested" (seen with the driver's JIT
/// of a 288-thread `wgmma` kernel: warps are given registers in groups of four, so 288 threads
/// count as 384, which allows at most 168 registers). rustc has no attribute for it.
///
/// Fails unless every named kernel is found.
///
/// ```
/// let ptx = ".visible .entry k(\n\t.param .u64 p\n)\n{\n\tret;\n}\n";
/// let out = nvptx_builder::ptx::add_maxntid(ptx, &[("k", 256)])?;
/// assert!(out.contains(")\n.maxntid 256, 1, 1\n{"));
/// # Ok::<(), nvptx_builder::Error>(())
/// ```
pub fn add_maxntid(ptx: &str, kernels: &[(&str, u32)]) -> Result<String, Error> {
    let mut out = String::with_capacity(ptx.len() + 64);
    let mut pending: Option<u32> = None;
    let mut added = Vec::new();
    let mut current = String::new();
    for line in ptx.lines() {
        out.push_str(line);
        out.push('\n');
        let name = line.trim_start().strip_prefix(".visible .entry ").map(|r| r.split('(').next().unwrap_or("").trim());
        if let Some(name) = name {
            pending = kernels.iter().find(|(k, _)| *k == name).map(|(_, t)| *t);
            current = name.to_string();
            // rustc closes a parameter list on its own line, or on the entry's line when the
            // kernel takes no parameters.
            if !line.trim_end().ends_with(')') {
                continue;
            }
        } else if line.trim() != ")" {
            continue;
        }
        if let Some(threads) = pending.take() {
            out.push_str(&format!(".maxntid {threads}, 1, 1\n"));
            added.push(std::mem::take(&mut current));
        }
    }
    if let Some((missing, _)) = kernels.iter().find(|(k, _)| !added.iter().any(|a| a == k)) {
        return Err(Error::MissingEntry { kernel: missing.to_string() });
    }
    Ok(out)
}

/// Checks what a host relies on: the `.target`, every named kernel's `.entry`, and no call to a
/// function outside the module (such a module fails to load: with `-Cpanic=immediate-abort`
/// there is none unless a kernel calls code that cannot be inlined). Returns every `.entry`.
///
/// ```
/// let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(\n";
/// assert_eq!(nvptx_builder::ptx::check_ptx(ptx, "sm_90a", &["k"])?, ["k"]);
/// assert!(nvptx_builder::ptx::check_ptx(ptx, "sm_90", &[]).is_err());
/// # Ok::<(), nvptx_builder::Error>(())
/// ```
pub fn check_ptx(ptx: &str, arch: &str, kernels: &[&str]) -> Result<Vec<String>, Error> {
    if !ptx.lines().any(|l| l.trim() == format!(".target {arch}")) {
        let found = ptx.lines().find_map(|l| l.trim().strip_prefix(".target ")).unwrap_or("none").to_string();
        return Err(Error::WrongTarget { arch: arch.to_string(), found });
    }
    let entries: Vec<String> = ptx
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap_or(rest).trim().to_string())
        .collect();
    if let Some(name) = kernels.iter().find(|name| !entries.iter().any(|e| e == *name)) {
        return Err(Error::MissingEntry { kernel: name.to_string() });
    }
    if let Some(ext) = ptx.lines().find(|l| l.trim_start().starts_with(".extern .func")) {
        return Err(Error::ExternalCall { declaration: ext.trim().to_string() });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxntid_goes_between_each_entrys_parameters_and_body() {
        let ptx = ".visible .entry k(\n\t.param .u64 p\n)\n{\n\tret;\n}\n.visible .entry j()\n{\n}\n\
                   .visible .entry other(\n\t.param .u64 p\n)\n{\n}\n";
        // Kernels not named are left alone.
        let out = add_maxntid(ptx, &[("k", 288), ("j", 384)]).unwrap();
        assert_eq!(out.matches(".maxntid").count(), 2);
        assert!(out.contains(".entry j()\n.maxntid 384, 1, 1\n{"), "{out}");
        assert!(out.contains(")\n.maxntid 288, 1, 1\n{\n\tret;"), "{out}");
    }

    #[test]
    fn maxntid_for_a_kernel_the_module_lacks_is_an_error_naming_it() {
        let err = add_maxntid(".version 8.0\n", &[("k", 288)]).unwrap_err();
        assert!(matches!(&err, Error::MissingEntry { kernel } if kernel == "k"), "{err}");
    }

    /// A module header with an `.entry` for every kernel named.
    fn module(kernels: &[&str]) -> String {
        let entries: String = kernels.iter().map(|k| format!(".visible .entry {k}(\n")).collect();
        format!(".version 7.8\n.target sm_90\n.address_size 64\n{entries}")
    }

    #[test]
    fn check_ptx_lists_entries_of_a_complete_module() {
        let names = ["saxpy", "histogram_cluster_i32"];
        assert_eq!(check_ptx(&module(&names), "sm_90", &names).unwrap(), names);
    }

    #[test]
    fn check_ptx_rejects_wrong_target_missing_entry_and_extern_calls() {
        let good = module(&["a", "b"]);
        let err = check_ptx(&good, "sm_80", &["a"]).unwrap_err().to_string();
        assert!(err.contains("targets sm_90, not sm_80"), "{err}");
        let err = check_ptx(&good, "sm_90", &["a", "c"]).unwrap_err().to_string();
        assert!(err.contains("no .entry c"), "{err}");
        let external = format!("{good}.extern .func panic_bounds_check()\n");
        let err = check_ptx(&external, "sm_90", &["a"]).unwrap_err().to_string();
        assert!(err.contains("does not define"), "{err}");
    }
}
