//! The library's front door for other crates: open a GPU, multiply two matrices, histogram a
//! slice or a file. Errors are [`Error`]s whose messages are the ones the `host` CLI prints.

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::histogram::stream::{self, StreamOptions};
use crate::histogram::{self, DeviceHistogram, PlanRequest, Values};
use crate::io::{DataFile, ElementType, Matrix};
use crate::matmul::{self, DeviceMatrices, MatmulShape, MatmulVariant};
use std::path::Path;

/// `A * B` on the GPU with the planner's choice of kernel ([`MatmulVariant::Auto`]).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let a = hopper_kernels::Matrix::new(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let b = hopper_kernels::Matrix::new(3, 1, vec![1.0, 0.0, -1.0])?;
/// let c = hopper_kernels::matmul(&gpu, &a, &b)?;
/// assert_eq!((c.rows, c.cols, c.data), (2, 1, vec![-2.0, -2.0]));
/// # Ok(()) }
/// ```
pub fn matmul(gpu: &Gpu, a: &Matrix, b: &Matrix) -> Result<Matrix> {
    matmul_with(gpu, a, b, MatmulVariant::Auto)
}

/// `A * B` on the GPU with a chosen kernel variant.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, Matrix, matmul::MatmulVariant};
/// let gpu = Gpu::open(0)?;
/// let a = Matrix::new(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let b = Matrix::new(3, 1, vec![1.0, 0.0, -1.0])?;
/// let c = hopper_kernels::matmul_with(&gpu, &a, &b, MatmulVariant::Naive)?;
/// assert_eq!(c.data, [-2.0, -2.0]);
/// # Ok(()) }
/// ```
pub fn matmul_with(gpu: &Gpu, a: &Matrix, b: &Matrix, variant: MatmulVariant) -> Result<Matrix> {
    let shape = matmul_shape(a, b)?;
    let mut mats = DeviceMatrices::upload(gpu, shape, &a.data, &b.data)?;
    let c = matmul::run(gpu, variant, &mut mats)?;
    Matrix::new(shape.m, shape.n, c)
}

/// The shape of `A * B`; fails unless `A`'s columns equal `B`'s rows and no side is 0.
///
/// ```
/// use hopper_kernels::Matrix;
/// let a = Matrix::new(2, 3, vec![0.0; 6]).unwrap();
/// let b = Matrix::new(4, 2, vec![0.0; 8]).unwrap();
/// let err = hopper_kernels::matmul_shape(&a, &b).unwrap_err().to_string();
/// assert_eq!(err, "A is 2x3 and B is 4x2: A's columns (3) must equal B's rows (4)");
/// ```
pub fn matmul_shape(a: &Matrix, b: &Matrix) -> Result<MatmulShape> {
    if a.cols != b.rows {
        return Err(Error::ShapeMismatch { a: (a.rows, a.cols), b: (b.rows, b.cols) });
    }
    MatmulShape::new(a.rows, a.cols, b.cols)
}

/// The histogram of `values` in `bins` bins on the GPU, exactly as the CPU counts it: values
/// below 0 count in bin 0, values at or above `bins` in the last bin. The whole slice is uploaded
/// at once; for inputs larger than the GPU's memory use [`histogram_file`].
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let counts = hopper_kernels::histogram(&gpu, &[0, 1, 1, 7, -3], 4)?;
/// assert_eq!(counts, [2, 2, 0, 1]);
/// # Ok(()) }
/// ```
pub fn histogram(gpu: &Gpu, values: &[i32], bins: usize) -> Result<Vec<u32>> {
    let plan = histogram::plan_with(gpu, bins, PlanRequest::default())?;
    let mut h = DeviceHistogram::upload(gpu, values, bins)?;
    histogram::run(gpu, &plan, &mut h)
}

/// The histogram of typed `values` ([`Values::U8`], `U16`, `I32`, `F32`) in `bins` bins on the
/// GPU, exactly as the CPU counts it: integers count value `v` in bin `v` (clamped into the edge
/// bins); `f32` values count in even bins over `range` (`numpy.histogram`'s bins: `HI` in the
/// last bin, values outside the range and NaN left out), which they need and integers refuse.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::Values;
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// assert_eq!(hopper_kernels::histogram_of(&gpu, Values::U8(&[0, 1, 1, 255]), 4, None)?, [1, 2, 0, 1]);
/// let floats = [0.0, 0.5, 1.0, 2.0, f32::NAN];
/// assert_eq!(hopper_kernels::histogram_of(&gpu, Values::F32(&floats), 2, Some((0.0, 1.0)))?, [1, 2]);
/// # Ok(()) }
/// ```
pub fn histogram_of(gpu: &Gpu, values: Values<'_>, bins: usize, range: Option<(f32, f32)>) -> Result<Vec<u32>> {
    let binning = histogram::binning_for(values.element(), bins, range)?;
    let request = PlanRequest { element: Some(values.element()), ..PlanRequest::default() };
    let plan = histogram::plan_with(gpu, bins, request)?;
    let mut h = DeviceHistogram::upload_values(gpu, values, binning)?;
    histogram::run(gpu, &plan, &mut h)
}

/// The histogram of every value in a file, streamed through the GPU in chunks (so the file may
/// be far larger than the GPU's memory): a `.npy` file of a supported dtype, or a raw
/// little-endian file of `raw` values. Counts are `u64`, so no input size can overflow them.
/// An `f32` file needs [`histogram_file_over`] and its range.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, io::ElementType};
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// // A .npy file's dtype picks the values' type; a raw file's is given.
/// let counts = hopper_kernels::histogram_file(&gpu, Path::new("values.npy"), None, 256)?;
/// let raw = hopper_kernels::histogram_file(&gpu, Path::new("bytes.bin"), Some(ElementType::U8), 256)?;
/// println!("{} + {} values", counts.iter().sum::<u64>(), raw.iter().sum::<u64>());
/// # Ok(()) }
/// ```
pub fn histogram_file(gpu: &Gpu, path: &Path, raw: Option<ElementType>, bins: usize) -> Result<Vec<u64>> {
    histogram_file_over(gpu, path, raw, bins, None)
}

/// [`histogram_file`] with a `range` for `f32` files (even bins over it, as [`histogram_of`]).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// // 100 even bins over [-1, 1] of a float32 .npy file, as numpy.histogram(v, 100, (-1, 1)).
/// let counts = hopper_kernels::histogram_file_over(&gpu, Path::new("v.npy"), None, 100, Some((-1.0, 1.0)))?;
/// assert_eq!(counts.len(), 100);
/// # Ok(()) }
/// ```
pub fn histogram_file_over(
    gpu: &Gpu,
    path: &Path,
    raw: Option<ElementType>,
    bins: usize,
    range: Option<(f32, f32)>,
) -> Result<Vec<u64>> {
    let file = DataFile::open(path, raw)?;
    let element = file.element().input_type();
    let binning = histogram::binning_for(element, bins, range)?;
    let plan = histogram::plan_with(gpu, bins, PlanRequest { element: Some(element), ..PlanRequest::default() })?;
    // Chunks sized to the device's free memory, as `host histogram --input` sizes them.
    let defaults = StreamOptions::default();
    let options =
        StreamOptions { chunk_bytes: stream::chunk_bytes_for(gpu.info().free_memory, defaults.streams), ..defaults };
    Ok(stream::histogram_file(gpu, &plan, &file, binning, options)?.counts)
}

/// The histogram of every value in a file over bin `edges` (`numpy.histogram(bins=edges)`'s
/// counts), streamed through the GPU in chunks like [`histogram_file`], so the file may be far
/// larger than the GPU's memory; `u64` counts.
pub fn histogram_file_edges(
    gpu: &Gpu,
    path: &Path,
    raw: Option<ElementType>,
    edges: &crate::histogram::edges::BinEdges,
) -> Result<Vec<u64>> {
    use crate::histogram::edges::{DeviceEdges, EdgesChunks, plan_edges};
    let file = DataFile::open(path, raw)?;
    let element = file.element().input_type();
    let plan = plan_edges(gpu, element, edges.bins(), &crate::histogram::tuning::LaunchRequest::default())?;
    let device_edges = DeviceEdges::new(gpu, edges, element, plan.cells())?;
    let kernel = EdgesChunks { plan: &plan, edges: &device_edges };
    Ok(stream::histogram_file_with(gpu, &kernel, &file, streamed_defaults(gpu), &mut |_| {})?.counts)
}

/// One histogram per active channel of a file of interleaved values (whole pixels), streamed
/// through the GPU like [`histogram_file`]: `active * bins` `u64` counts, channel after channel.
/// `range` for `f32` values, as [`histogram_of`].
pub fn histogram_file_channels(
    gpu: &Gpu,
    path: &Path,
    raw: Option<ElementType>,
    bins: usize,
    range: Option<(f32, f32)>,
    layout: crate::histogram::channels::ChannelLayout,
) -> Result<Vec<u64>> {
    use crate::histogram::channels::{ChannelsChunks, check_whole_pixels, plan_channels};
    let file = DataFile::open(path, raw)?;
    let element = file.element().input_type();
    check_whole_pixels(file.len(), layout)?;
    let binning = histogram::binning_for(element, bins, range)?;
    let plan = plan_channels(gpu, element, binning, layout, &crate::histogram::tuning::LaunchRequest::default())?;
    Ok(stream::histogram_file_with(gpu, &ChannelsChunks { plan: &plan }, &file, streamed_defaults(gpu), &mut |_| {})?
        .counts)
}

/// The default streaming options with chunks sized to the device's free memory.
fn streamed_defaults(gpu: &Gpu) -> StreamOptions {
    let defaults = StreamOptions::default();
    StreamOptions { chunk_bytes: stream::chunk_bytes_for(gpu.info().free_memory, defaults.streams), ..defaults }
}
