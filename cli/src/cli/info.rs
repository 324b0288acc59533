//! `host info`: the device, the driver, and the embedded PTX.

use crate::error::format_bytes;
use crate::gpu::{DeviceInfo, device_info};
use crate::ptx;

/// Prints the device description (or why there is none: no driver, no device) and the status of
/// both embedded PTX modules; needs no GPU.
pub fn run(device: usize) -> anyhow::Result<()> {
    match device_info(device) {
        Ok(info) => print!("{}", render(&info)),
        Err(e) => println!("device {device}:            none: {e}"),
    }
    match ptx::info() {
        Ok(p) => println!("PTX:                 {} ({} build), kernels: {}", p.arch, p.profile, p.entries.join(", ")),
        Err(e) => println!("PTX:                 unavailable: {e}"),
    }
    match ptx::hopper_info() {
        Ok(p) => println!("PTX (Hopper):        {} ({} build), kernels: {}", p.arch, p.profile, p.entries.join(", ")),
        Err(e) => println!("PTX (Hopper):        unavailable: {e}"),
    }
    let cubin = |image: Option<&[u8]>| match image {
        Some(bytes) => {
            format!("assembled at build time ({}), loaded on compute capability 9.0", format_bytes(bytes.len() as u64))
        }
        None => "none (the build found no ptxas): the driver compiles the PTX".to_string(),
    };
    println!("cubin:               {}", cubin(ptx::embedded_cubin()));
    println!("cubin (Hopper):      {}", cubin(ptx::embedded_hopper_cubin()));
    Ok(())
}

/// The device description, one `label: value` line each.
pub fn render(info: &DeviceInfo) -> String {
    let (major, minor) = info.compute_capability;
    [
        format!("device {}:            {}", info.ordinal, info.name),
        format!("compute capability:  {major}.{minor} (sm_{major}{minor})"),
        format!("multiprocessors:     {}", info.sm_count),
        format!("memory:              {} ({} free)", format_bytes(info.total_memory), format_bytes(info.free_memory)),
        format!("L2 cache:            {}", format_bytes(info.l2_bytes)),
        format!(
            "shared memory:       {} per block (opt-in), {} per SM",
            format_bytes(info.max_shared_per_block_optin as u64),
            format_bytes(info.max_shared_per_sm as u64)
        ),
        format!("SM clock:            {} MHz", info.clock_khz / 1000),
        format!("driver CUDA version: {}", info.driver_cuda_version_string()),
        format!("host built for CUDA: {}", info.build_cuda_version),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_lists_name_capability_sms_memory_and_versions() {
        let info = DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            total_memory: 80 << 30,
            free_memory: 79 << 30,
            l2_bytes: 50 << 20,
            max_shared_per_block_optin: 232_448,
            max_shared_per_sm: 233_472,
            max_threads_per_block: 1024,
            clock_khz: 1_980_000,
            driver_cuda_version: 13000,
            build_cuda_version: "13.0".into(),
        };
        let text = render(&info);
        for needle in
            ["NVIDIA H100 80GB HBM3", "9.0 (sm_90)", "132", "80.00 GiB", "driver CUDA version: 13.0", "1980 MHz"]
        {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
    }
}
