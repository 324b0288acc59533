//! Compiles the kernels crate to PTX (`$OUT_DIR/my_kernels.ptx`, embedded by `src/lib.rs`).
//! Release PTX unless `NVPTX_PROFILE=checked` asks for overflow checks and debug assertions.

fn main() {
    let built = nvptx_builder::PtxBuilder::new("../kernels").arch("sm_90").expect_kernels(["row_softmax"]).build();
    if let Err(e) = built {
        // Cargo prints a failed build script's output: the message names the problem and the fix.
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
