//! Histograms over bin edges (`numpy.histogram(bins=edges)`): checked edges ([`BinEdges`]), the
//! lookup table the kernels search through ([`EdgeTable`], built here from the pure functions of
//! `kernels::histogram::edges`), planner, launch and CPU reference.
//!
//! One tier: the counters, the edges and the table live in one block's shared memory (up to
//! [`max_bins`], 24,831 bins on an H100 or H200). More edges are refused with that limit;
//! the sorted tier's keys could carry them (a pass that turns values into bin indices, then the
//! integer histogram), which this module does not do yet.

use super::device_values::{DeviceValues, check_aligned, check_count, check_output, upload_values};
use super::tuning::{KernelLaunch, LaunchRequest, MAX_COPIES, Occupancy, choose_shape};
use super::weighted::type_index;
use super::{HistogramLimits, InputType, Values};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::histogram::BucketScratch;
use crate::histogram::stream::ChunkKernel;
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, PushKernelArg};
use kernels::histogram::edges::{self as kernel, EdgeValue};
use std::sync::Arc;

/// Sorted, strictly increasing, finite `f32` bin edges, at least two: `edges.len() - 1` bins.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Values, edges::{BinEdges, edges_histogram_cpu}};
/// // numpy.histogram(values, bins=[0, 1, 2.5, 4]): the last bin holds its right edge.
/// let edges = BinEdges::new(vec![0.0, 1.0, 2.5, 4.0])?;
/// assert_eq!(edges.bins(), 3);
/// assert_eq!(edges_histogram_cpu(Values::F32(&[0.0, 1.0, 2.4, 4.0, 4.5]), &edges), [1, 2, 1]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BinEdges {
    edges: Vec<f32>,
}

impl BinEdges {
    /// Checks `edges`: at least two, every one finite, each above the one before (numpy's rule);
    /// every refusal names the first edge at fault.
    ///
    /// ```
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// assert_eq!(BinEdges::new(vec![0.0, 0.5, 2.0]).unwrap().bins(), 2);
    /// let err = BinEdges::new(vec![0.0, 1.0, 1.0]).unwrap_err().to_string();
    /// assert!(err.contains("edge 2 (1) is not above edge 1 (1)"));
    /// ```
    pub fn new(edges: Vec<f32>) -> Result<Self> {
        if edges.len() < 2 {
            return Err(Error::InvalidArgument(format!(
                "{} bin edge(s): a histogram needs at least two edges (one bin)",
                edges.len()
            )));
        }
        if edges.len() - 1 > i32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{} edges: at most {} bins", edges.len(), i32::MAX)));
        }
        if let Some(i) = edges.iter().position(|e| !e.is_finite()) {
            return Err(Error::InvalidArgument(format!("edge {i} is {}: bin edges must be finite", edges[i])));
        }
        if let Some(i) = (1..edges.len()).find(|&i| edges[i] <= edges[i - 1]) {
            return Err(Error::InvalidArgument(format!(
                "edge {i} ({}) is not above edge {} ({}): bin edges must increase strictly",
                edges[i],
                i - 1,
                edges[i - 1]
            )));
        }
        Ok(Self { edges })
    }

    /// Edges given as `f64` (numpy's default dtype), each of which must be an `f32` exactly: the
    /// kernels compare with `f32` edges, and a rounded edge would move values between bins.
    ///
    /// ```
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// assert_eq!(BinEdges::from_f64(&[0.0, 0.5, 0.75]).unwrap().edges(), [0.0, 0.5, 0.75]);
    /// // 0.1 has no exact float32: the nearest would move values between bins.
    /// let err = BinEdges::from_f64(&[0.0, 0.1]).unwrap_err().to_string();
    /// assert!(err.contains("edge 1 (0.1) is not exactly a float32 (the nearest is 0.1)"), "{err}");
    /// ```
    pub fn from_f64(edges: &[f64]) -> Result<Self> {
        let mut out = Vec::with_capacity(edges.len());
        for (i, &e) in edges.iter().enumerate() {
            let f = e as f32;
            if f as f64 != e && !e.is_nan() {
                return Err(Error::InvalidArgument(format!(
                    "edge {i} ({e}) is not exactly a float32 (the nearest is {f}): the kernels compare with float32 edges; give them as float32 (numpy: edges.astype(np.float32))"
                )));
            }
            out.push(f);
        }
        Self::new(out)
    }

    /// Parses edges written `0,0.5,1.5` (at least two).
    ///
    /// ```
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// assert_eq!(BinEdges::parse(" -1, 0.5 ,2").unwrap().edges(), [-1.0, 0.5, 2.0]);
    /// assert!(BinEdges::parse("0,x").unwrap_err().to_string().contains("edge 'x' in '0,x'"));
    /// assert!(BinEdges::parse("3").unwrap_err().to_string().contains("at least two edges"));
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let edges = text
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<f32>()
                    .map_err(|e| Error::InvalidArgument(format!("edge '{}' in '{text}': {e}", s.trim())))
            })
            .collect::<Result<Vec<_>>>()?;
        Self::new(edges)
    }

    /// Bins: one fewer than the edges.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// assert_eq!(BinEdges::parse("0,1,10,100")?.bins(), 3);
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> u32 {
        self.edges.len() as u32 - 1
    }

    /// The edges.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// // Edges are float32: 16,777,217 has none, and rounds to 16,777,216.
    /// let edges = BinEdges::parse("0,16777217,3e9")?;
    /// assert_eq!(edges.edges(), [0.0, 16_777_216.0, 3e9]);
    /// # Ok(()) }
    /// ```
    pub fn edges(&self) -> &[f32] {
        &self.edges
    }

    /// The first edge.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// assert_eq!(BinEdges::parse("-1,0,1")?.lo(), -1.0);
    /// # Ok(()) }
    /// ```
    pub fn lo(&self) -> f32 {
        self.edges[0]
    }

    /// The last edge (in the last bin).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// let edges = BinEdges::parse("-1,0,1")?;
    /// assert_eq!(edges.hi(), 1.0);
    /// assert_eq!(edges.bin_of(edges.hi()), Some(1)); // in the last bin
    /// # Ok(()) }
    /// ```
    pub fn hi(&self) -> f32 {
        self.edges[self.edges.len() - 1]
    }

    /// `numpy.histogram`'s bin of a value of type `T`: `None` outside `[lo, hi]` and for NaN.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::edges::BinEdges;
    /// let edges = BinEdges::new(vec![0.0, 1.0, 2.5, 4.0])?;
    /// assert_eq!(edges.bin_of(2.5f32), Some(2));
    /// assert_eq!(edges.bin_of(4.0f32), Some(2)); // the last edge closes the last bin
    /// assert_eq!((edges.bin_of(4.0001f32), edges.bin_of(f32::NAN), edges.bin_of(-0.0f32)), (None, None, Some(0)));
    /// assert_eq!((edges.bin_of(1u8), edges.bin_of(5u16), edges.bin_of(-1i32)), (Some(1), None, None));
    /// // i32 values compare with the edges exactly, not rounded to f32.
    /// let wide = BinEdges::new(vec![0.0, 16_777_216.0, 3e9])?;
    /// assert_eq!((wide.bin_of(16_777_215i32), wide.bin_of(16_777_216i32)), (Some(0), Some(1)));
    /// # Ok(()) }
    /// ```
    pub fn bin_of<T: EdgeValue>(&self, v: T) -> Option<u32> {
        kernel::edge_bin(v, &self.edges)
    }
}

/// The lookup table of [`kernels::histogram::edges`] for one input type: entry `c` is the bin of
/// the smallest value of the type in cell `c` or later.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{InputType, edges::{BinEdges, EdgeTable}};
/// let edges = BinEdges::new(vec![0.0, 1.0, 2.5, 4.0])?;
/// // 8 cells of width 0.5 over [0, 4]: a value in cell c lies in bins entries[c] to entries[c + 1].
/// let table = EdgeTable::new(&edges, InputType::F32, 8);
/// assert_eq!(table.entries(), [0, 0, 1, 1, 1, 2, 2, 2, 2]);
/// let (v, c) = (2.7f32, (2.7f32 * table.scale()) as usize);
/// let bin = edges.bin_of(v).unwrap();
/// assert!(table.entries()[c] <= bin && bin <= table.entries()[c + 1]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeTable {
    table: Vec<u32>,
    cell_entries: Vec<u32>,
    scale: f32,
}

impl EdgeTable {
    /// The table of `cells` cells over `edges` for `element` values.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{InputType, edges::{BinEdges, EdgeTable}};
    /// let edges = BinEdges::new(vec![0.0, 1.0, 2.5, 4.0])?;
    /// // Cell 1 is [0.5, 1): its smallest f32 is 0.5 (bin 0), its smallest u8 is 1 (bin 1).
    /// assert_eq!(EdgeTable::new(&edges, InputType::F32, 8).entries()[1], 0);
    /// assert_eq!(EdgeTable::new(&edges, InputType::U8, 8).entries(), [0, 1, 1, 1, 1, 2, 2, 2, 2]);
    /// # Ok(()) }
    /// ```
    pub fn new(edges: &BinEdges, element: InputType, cells: u32) -> Self {
        fn build<T: EdgeValue>(edges: &BinEdges, cells: u32) -> EdgeTable {
            let (lo, hi, last) = (edges.lo(), edges.hi(), edges.bins() - 1);
            let scale = kernel::cell_scale(lo, hi, cells);
            let orders = kernel::order_range::<T>(lo, hi);
            let firsts: Vec<Option<T>> =
                (0..cells).map(|c| orders.and_then(|o| kernel::first_in_cell::<T>(c, o, lo, scale, cells))).collect();
            let bin = |v: T| edges.bin_of(v).unwrap_or(last);
            let mut table: Vec<u32> = firsts.iter().map(|f| f.map_or(last, bin)).collect();
            table.push(last);
            // A cell's entry flags the edges between its smallest and its largest value of the
            // type (the one before the next cell's smallest): none in a cell narrower than the
            // type's spacing, so integers make no comparison there.
            let mut cell_entries: Vec<u32> = (0..cells as usize)
                .map(|c| {
                    let a = table[c];
                    let first = firsts[c].filter(|f| kernel::cell_of(f.key(), lo, scale, cells) == c as u32);
                    let z = match (first, orders) {
                        (Some(_), Some((_, top))) => {
                            let past = firsts.get(c + 1).copied().flatten().map(|n| n.order() - 1);
                            bin(T::from_order(past.unwrap_or(top)))
                        }
                        _ => a,
                    };
                    kernel::cell_entry(a, z)
                })
                .collect();
            cell_entries.push(kernel::cell_entry(last, last));
            EdgeTable { table, cell_entries, scale }
        }
        match element {
            InputType::U8 => build::<u8>(edges, cells),
            InputType::U16 => build::<u16>(edges, cells),
            InputType::I32 => build::<i32>(edges, cells),
            InputType::F32 => build::<f32>(edges, cells),
        }
    }

    /// The entries: `cells + 1` bins.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{InputType, edges::{BinEdges, EdgeTable}};
    /// let edges = BinEdges::new((0..=256).map(|i| (i as f32 / 256.0).powi(2)).collect())?;
    /// let table = EdgeTable::new(&edges, InputType::F32, 1024);
    /// let entries = table.entries();
    /// assert_eq!(entries.len(), 1025);
    /// assert!(entries.windows(2).all(|w| w[0] <= w[1]));
    /// assert_eq!((entries[0], entries[1024]), (0, 255));
    /// # Ok(()) }
    /// ```
    pub fn entries(&self) -> &[u32] {
        &self.table
    }

    /// The kernel's entries: per cell, its first bin with the flags of the edges between its
    /// smallest and its largest value of the type ([`kernel::cell_entry`]), and a last entry of
    /// the last bin; `cells + 1` in all.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{InputType, edges::{BinEdges, EdgeTable}};
    /// use kernels::histogram::edges::cell_entry;
    /// let edges = BinEdges::new(vec![0.0, 1.0, 2.5, 4.0])?;
    /// // Four cells of width 1: cell 2, [2, 3), holds the edge 2.5 for f32 values; for u8 it
    /// // holds the value 2 alone, with no edge between it and itself.
    /// let f = EdgeTable::new(&edges, InputType::F32, 4);
    /// assert_eq!(f.cell_entries(), [cell_entry(0, 0), cell_entry(1, 1), cell_entry(1, 2), 2, 2]);
    /// let u = EdgeTable::new(&edges, InputType::U8, 4);
    /// assert_eq!(u.cell_entries(), [0, 1, 1, 2, 2]);
    /// # Ok(()) }
    /// ```
    pub fn cell_entries(&self) -> &[u32] {
        &self.cell_entries
    }

    /// The cells' `f32` scale.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{InputType, edges::{BinEdges, EdgeTable}};
    /// // 8 cells over [0, 4]: 2 cells per unit.
    /// let table = EdgeTable::new(&BinEdges::new(vec![0.0, 1.0, 4.0])?, InputType::F32, 8);
    /// assert_eq!(table.scale(), 2.0);
    /// # Ok(()) }
    /// ```
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Cells.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::{InputType, edges::{BinEdges, EdgeTable}};
    /// let table = EdgeTable::new(&BinEdges::new(vec![0.0, 1.0, 4.0])?, InputType::I32, 64);
    /// assert_eq!((table.cells(), table.entries().len()), (64, 65));
    /// # Ok(()) }
    /// ```
    pub fn cells(&self) -> u32 {
        self.table.len() as u32 - 1
    }
}

/// The most bins the edges kernel holds in one block's shared memory (one copy of the counters,
/// the edges and the table).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::{max_bins, plan_edges_for}};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// assert_eq!(max_bins(&limits), 24_831);
/// assert!(plan_edges_for(&limits, &model, InputType::F32, 24_831, &LaunchRequest::default()).is_ok());
/// assert!(plan_edges_for(&limits, &model, InputType::F32, 24_832, &LaunchRequest::default()).is_err());
/// # Ok(()) }
/// ```
pub fn max_bins(limits: &HistogramLimits) -> u32 {
    let fits = |b: u32| kernel::shared_bytes(b, kernel::cells_for(b), 1) <= limits.max_shared_per_block_optin as u64;
    let (mut lo, mut hi) = (1u32, limits.max_shared_per_block_optin / 4);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    lo
}

/// A planned edges launch, built only by [`plan_edges_for`] / [`plan_edges`].
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// // 256 bins of f32 values: 4096 cells (4225 padded entry slots), 32 copies of the counters
/// // and 257 edges.
/// let plan = plan_edges_for(&limits, &model, InputType::F32, 256, &LaunchRequest::default())?;
/// assert_eq!((plan.bins(), plan.cells(), plan.launch().copies()), (256, 4096, 32));
/// assert_eq!(plan.launch().shared_bytes(), 4 * (4225 + 256 * 32 + 257));
/// assert!(plan.to_string().starts_with("edges tier (256 bins, a table of 4096 cells), histogram_edges_f32"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgesPlan {
    launch: KernelLaunch,
    element: InputType,
    bins: u32,
    cells: u32,
    blocks_per_sm: u32,
}

impl EdgesPlan {
    /// The kernel launch.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan = plan_edges_for(&limits, &model, InputType::I32, 1000, &LaunchRequest::default())?;
    /// assert_eq!(plan.launch().kernel(), "histogram_edges_i32");
    /// # Ok(()) }
    /// ```
    pub fn launch(&self) -> &KernelLaunch {
        &self.launch
    }

    /// The values' type.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan = plan_edges_for(&limits, &model, InputType::U16, 10, &LaunchRequest::default())?;
    /// assert_eq!(plan.element(), InputType::U16);
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> InputType {
        self.element
    }

    /// Bins.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::{BinEdges, plan_edges_for}};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let edges = BinEdges::parse("0,1,2,4,8")?;
    /// let plan = plan_edges_for(&limits, &model, InputType::F32, edges.bins(), &LaunchRequest::default())?;
    /// assert_eq!(plan.bins(), 4); // the counts buffer holds 4 u32
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> u32 {
        self.bins
    }

    /// Cells of the lookup table.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// // Sixteen cells per bin, from 64 to 8,192.
    /// let cells = |bins| plan_edges_for(&limits, &model, InputType::F32, bins, &LaunchRequest::default()).map(|p| p.cells());
    /// assert_eq!((cells(2)?, cells(256)?, cells(10_000)?), (64, 4096, 8192));
    /// # Ok(()) }
    /// ```
    pub fn cells(&self) -> u32 {
        self.cells
    }

    /// Why this plan, in words (for `--plan`).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
    /// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
    /// let limits = HistogramLimits::H100;
    /// let model = model_before_device(limits);
    /// let plan = plan_edges_for(&limits, &model, InputType::F32, 256, &LaunchRequest::default())?;
    /// let reason = plan.reason(&limits);
    /// assert!(reason.starts_with("257 edges: counters (32 copies), edges and a table of 4096 cells fit"), "{reason}");
    /// assert!(reason.contains("(up to 24831 bins)"), "{reason}");
    /// # Ok(()) }
    /// ```
    pub fn reason(&self, limits: &HistogramLimits) -> String {
        format!(
            "{} edges: counters ({} copies), edges and a table of {} cells fit in one block's shared memory (up to {} bins); {}; {} blocks of {} threads per SM ({} resident threads) is the occupancy query's best shape",
            self.bins + 1,
            self.launch.copies(),
            self.cells,
            max_bins(limits),
            "16 cells per bin, each a word in shared memory with the cell's first bin and whether an edge lies between its values: one load per value and one comparison in the cells that hold an edge, a search only in cells that hold several",
            self.blocks_per_sm,
            self.launch.threads(),
            self.blocks_per_sm * self.launch.threads()
        )
    }
}

impl std::fmt::Display for EdgesPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "edges tier ({} bins, a table of {} cells), {}", self.bins, self.cells, self.launch)
    }
}

/// Plans a histogram of `element` values over `bins` bins of edges on a device with `limits`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Error;
/// use hopper_kernels::histogram::tuning::{LaunchRequest, model_before_device};
/// use hopper_kernels::histogram::{HistogramLimits, InputType, edges::plan_edges_for};
/// let limits = HistogramLimits::H100;
/// let model = model_before_device(limits);
/// let open = LaunchRequest::default();
/// let plan = plan_edges_for(&limits, &model, InputType::F32, 256, &open)?;
/// assert_eq!((plan.launch().kernel(), plan.cells()), ("histogram_edges_f32", 4096));
/// // More bins than one block holds, and options of other kernels, are refused.
/// let err = plan_edges_for(&limits, &model, InputType::F32, 30_000, &open).unwrap_err().to_string();
/// assert!(err.contains("at most 24831 bins on this device"), "{err}");
/// let global = LaunchRequest { global: Some(true), ..open };
/// assert!(plan_edges_for(&limits, &model, InputType::F32, 256, &global).is_err());
/// assert!(matches!(plan_edges_for(&limits, &model, InputType::F32, 0, &open), Err(Error::ZeroDimension { .. })));
/// # Ok(()) }
/// ```
pub fn plan_edges_for(
    limits: &HistogramLimits,
    occupancy: &dyn Occupancy,
    element: InputType,
    bins: u32,
    request: &LaunchRequest,
) -> Result<EdgesPlan> {
    super::check_bins(bins as usize)?;
    if request.packing.is_some() || request.global.is_some() || request.aggregate.is_some() {
        return Err(Error::InvalidArgument(
            "--packing, the global tier and --aggregate do not apply to edges: their counters are u32 in shared memory"
                .into(),
        ));
    }
    let most = max_bins(limits);
    if bins > most {
        return Err(Error::InvalidArgument(format!(
            "{bins} bins of edges: the edges kernel keeps the counters, the {} edges and a lookup table in one block's shared memory, which holds at most {most} bins on this device",
            bins + 1
        )));
    }
    let cells = kernel::cells_for(bins);
    let shape = choose_shape(
        occupancy,
        limits,
        &|c| kernel::shared_bytes(bins, cells, c),
        MAX_COPIES,
        request,
        &format!("a histogram over {} edges", bins + 1),
    )?;
    Ok(EdgesPlan {
        launch: KernelLaunch::new(kernel::KERNELS[type_index(element)], shape, limits.sm_count),
        element,
        bins,
        cells,
        blocks_per_sm: shape.blocks_per_sm,
    })
}

/// [`plan_edges_for`] on the opened device, with its occupancy query for the kernel.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{InputType, edges::{BinEdges, plan_edges}};
/// let gpu = Gpu::open(0)?;
/// let edges = BinEdges::parse("0,0.5,2,10")?;
/// let plan = plan_edges(&gpu, InputType::F32, edges.bins(), &LaunchRequest::default())?;
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub fn plan_edges(gpu: &Gpu, element: InputType, bins: u32, request: &LaunchRequest) -> Result<EdgesPlan> {
    let limits = HistogramLimits::of(gpu)?;
    let occupancy = super::tuning::DriverOccupancy::new(gpu, kernel::KERNELS[type_index(element)])?;
    plan_edges_for(&limits, &occupancy, element, bins, request)
}

/// Edges and their lookup table on the device, for one input type and table size; built only by
/// [`DeviceEdges::new`], so that the table always belongs to the edges.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{InputType, edges::{BinEdges, DeviceEdges, plan_edges}};
/// let gpu = Gpu::open(0)?;
/// let edges = BinEdges::parse("0,0.5,2,10")?;
/// let plan = plan_edges(&gpu, InputType::F32, edges.bins(), &LaunchRequest::default())?;
/// // Uploaded once, with the table the plan's cells need; used by every launch of the plan.
/// let device_edges = DeviceEdges::new(&gpu, &edges, plan.element(), plan.cells())?;
/// assert_eq!(device_edges.bins(), 3);
/// # Ok(()) }
/// ```
pub struct DeviceEdges {
    edges: CudaSlice<f32>,
    table: CudaSlice<u32>,
    element: InputType,
    bins: u32,
    cells: u32,
    lo: f32,
    hi: f32,
    scale: f32,
}

impl DeviceEdges {
    /// Builds the table of `cells` cells for `element` values over `edges` and uploads both.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, edges::{BinEdges, DeviceEdges}};
    /// let gpu = Gpu::open(0)?;
    /// let edges = BinEdges::parse("0,1,2.5,4")?;
    /// let table_for_u8 = DeviceEdges::new(&gpu, &edges, InputType::U8, 64)?;
    /// assert_eq!(table_for_u8.bins(), 3);
    /// // 1 to 8192 cells.
    /// assert!(DeviceEdges::new(&gpu, &edges, InputType::U8, 0).is_err());
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: &Gpu, edges: &BinEdges, element: InputType, cells: u32) -> Result<Self> {
        if cells == 0 || cells > kernel::MAX_CELLS {
            return Err(Error::InvalidArgument(format!("{cells} cells: use 1 to {}", kernel::MAX_CELLS)));
        }
        let table = EdgeTable::new(edges, element, cells);
        Ok(Self {
            edges: gpu.upload(edges.edges())?,
            table: gpu.upload(table.cell_entries())?,
            element,
            bins: edges.bins(),
            cells,
            lo: edges.lo(),
            hi: edges.hi(),
            scale: table.scale(),
        })
    }

    /// Bins.
    ///
    /// ```no_run
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::Gpu;
    /// use hopper_kernels::histogram::{InputType, edges::{BinEdges, DeviceEdges}};
    /// let gpu = Gpu::open(0)?;
    /// let device_edges = DeviceEdges::new(&gpu, &BinEdges::parse("0,1,2.5,4")?, InputType::F32, 64)?;
    /// let counts = gpu.zeros::<u32>(device_edges.bins() as usize)?; // what launch_edges fills
    /// assert_eq!(counts.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn bins(&self) -> u32 {
        self.bins
    }
}

/// Enqueues the planned kernel on `stream`: counts `values` over the `edges` into `counts` (`bins`
/// `u32`), without zeroing them first. Values must start 16-byte aligned; nothing is launched for
/// no values.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::device_values::DeviceValues;
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::{InputType, edges::{BinEdges, DeviceEdges, launch_edges, plan_edges}};
/// let gpu = Gpu::open(0)?;
/// let edges = BinEdges::parse("0,0.5,2,10")?;
/// let plan = plan_edges(&gpu, InputType::F32, edges.bins(), &LaunchRequest::default())?;
/// let device_edges = DeviceEdges::new(&gpu, &edges, plan.element(), plan.cells())?;
/// let values = gpu.upload(&[0.5f32, 0.49, 10.0, 11.0, f32::NAN])?;
/// let mut counts = gpu.zeros::<u32>(edges.bins() as usize)?;
/// let input = DeviceValues::f32(&values.as_view());
/// launch_edges(&gpu, &plan, gpu.stream(), &input, &device_edges, &mut counts.as_view_mut())?;
/// assert_eq!(gpu.download(&counts)?, [1, 1, 1]);
/// # Ok(()) }
/// ```
pub fn launch_edges(
    gpu: &Gpu,
    plan: &EdgesPlan,
    stream: &Arc<CudaStream>,
    values: &DeviceValues<'_>,
    edges: &DeviceEdges,
    counts: &mut CudaViewMut<'_, u32>,
) -> Result<()> {
    if values.element() != plan.element || edges.element != plan.element {
        return Err(Error::InvalidArgument(format!(
            "the plan is for {} values; the values are {} and the edges' table is for {}",
            plan.element.name(),
            values.element().name(),
            edges.element.name()
        )));
    }
    if edges.bins != plan.bins || edges.cells != plan.cells {
        return Err(Error::InvalidArgument(format!(
            "the plan is for {} bins and {} cells, the edges have {} and {}",
            plan.bins, plan.cells, edges.bins, edges.cells
        )));
    }
    check_output(counts.len(), plan.bins as u64, "counts")?;
    let n = values.len();
    check_count(n)?;
    if n == 0 {
        return Ok(());
    }
    check_aligned(values.bytes(), stream, "the values")?;
    let func = plan.launch.prepared(gpu)?;
    let (nbins, cells, copies) = (plan.bins, plan.cells, plan.launch.copies());
    let mut launch = stream.launch_builder(&func);
    launch.arg(values.bytes()).arg(&n).arg(counts).arg(&nbins).arg(&edges.edges).arg(&edges.table).arg(&cells);
    launch.arg(&edges.lo).arg(&edges.hi).arg(&edges.scale).arg(&copies);
    // SAFETY: kernel contract (kernels::histogram::edges): n <= u32::MAX values, 16-byte aligned;
    // counts holds nbins u32; the edges and their table (cells + 1 entries) were built together
    // by DeviceEdges::new for this type; copies is a power of two up to 32 and the launch provides
    // shared_bytes(nbins, cells, copies) (the plan).
    unsafe { launch.launch(plan.launch.config()) }?;
    Ok(())
}

/// The histogram of `values` over `edges` on the GPU (`numpy.histogram(values, bins=edges)`'s
/// counts), on the GPU's stream.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Values, edges::{BinEdges, edges_histogram}};
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let edges = BinEdges::new(vec![0.0, 0.5, 2.0, 10.0])?;
/// assert_eq!(edges_histogram(&gpu, Values::F32(&[0.5, 0.49, 10.0, 11.0, f32::NAN]), &edges)?, [1, 1, 1]);
/// # Ok(()) }
/// ```
pub fn edges_histogram(gpu: &Gpu, values: Values<'_>, edges: &BinEdges) -> Result<Vec<u32>> {
    let plan = plan_edges(gpu, values.element(), edges.bins(), &LaunchRequest::default())?;
    let input = upload_values(gpu, values, 4 * edges.bins() as u64, "a histogram over edges")?;
    let device_edges = DeviceEdges::new(gpu, edges, values.element(), plan.cells)?;
    let mut counts = gpu.zeros::<u32>(edges.bins() as usize)?;
    let values = DeviceValues::from_bytes(input.as_view(), plan.element, values.len() as u64)?;
    launch_edges(gpu, &plan, gpu.stream(), &values, &device_edges, &mut counts.as_view_mut())?;
    gpu.synchronize()?;
    gpu.download(&counts)
}

/// The histogram of `values` over `edges` on the CPU, by numpy's rule ([`BinEdges::bin_of`]).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::histogram::{Values, edges::{BinEdges, edges_histogram_cpu}};
/// let edges = BinEdges::new(vec![0.0, 1.0, 2.5, 4.0])?;
/// let v = [0.0, 0.999, 1.0, 2.5, 4.0, 4.0001, -0.0, -1e-30, f32::NAN, f32::INFINITY];
/// assert_eq!(edges_histogram_cpu(Values::F32(&v), &edges), [3, 1, 2]);
/// assert_eq!(edges_histogram_cpu(Values::U8(&[0, 1, 2, 3, 4, 5]), &edges), [1, 2, 2]);
/// # Ok(()) }
/// ```
pub fn edges_histogram_cpu(values: Values<'_>, edges: &BinEdges) -> Vec<u32> {
    fn count<T: EdgeValue>(values: &[T], edges: &BinEdges) -> Vec<u32> {
        let mut counts = vec![0u32; edges.bins() as usize];
        for &v in values {
            if let Some(b) = edges.bin_of(v) {
                counts[b as usize] += 1;
            }
        }
        counts
    }
    match values {
        Values::U8(v) => count(v, edges),
        Values::U16(v) => count(v, edges),
        Values::I32(v) => count(v, edges),
        Values::F32(v) => count(v, edges),
    }
}

/// Counting over edges as a [`ChunkKernel`]: the chunks of a streamed file
/// ([`crate::histogram::stream::histogram_file_with`]).
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Gpu;
/// use hopper_kernels::histogram::stream::{StreamOptions, file_counts_cpu, histogram_file_with};
/// use hopper_kernels::histogram::tuning::LaunchRequest;
/// use hopper_kernels::histogram::edges::{BinEdges, DeviceEdges, EdgesChunks, edges_histogram_cpu, plan_edges};
/// use hopper_kernels::io::DataFile;
/// use std::path::Path;
/// let gpu = Gpu::open(0)?;
/// let file = DataFile::open(Path::new("values.npy"), None)?; // float32, any size
/// let edges = BinEdges::parse("0,0.5,2,10")?;
/// let plan = plan_edges(&gpu, file.element().input_type(), edges.bins(), &LaunchRequest::default())?;
/// let device_edges = DeviceEdges::new(&gpu, &edges, plan.element(), plan.cells())?;
/// let kernel = EdgesChunks { plan: &plan, edges: &device_edges };
/// let report = histogram_file_with(&gpu, &kernel, &file, StreamOptions::default(), &mut |_| {})?;
/// let cpu = file_counts_cpu(&file, edges.bins() as usize, |_, values| edges_histogram_cpu(values, &edges))?;
/// assert_eq!(report.counts, cpu);
/// # Ok(()) }
/// ```
pub struct EdgesChunks<'a> {
    /// The plan.
    pub plan: &'a EdgesPlan,
    /// The edges and their table on the device.
    pub edges: &'a DeviceEdges,
}

impl ChunkKernel for EdgesChunks<'_> {
    fn element(&self) -> InputType {
        self.plan.element
    }

    fn counters(&self) -> usize {
        self.plan.bins as usize
    }

    fn count(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        chunk: &CudaSlice<u8>,
        _first: u64,
        n: u64,
        counts: &mut CudaSlice<u32>,
        _scratch: &mut Option<BucketScratch>,
    ) -> Result<()> {
        let values = DeviceValues::from_bytes(chunk.as_view(), self.plan.element, n)?;
        launch_edges(gpu, self.plan, stream, &values, self.edges, &mut counts.as_view_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::tuning::ModelOccupancy;

    const H100: HistogramLimits = HistogramLimits::H100;

    #[test]
    fn edges_are_checked_naming_the_first_bad_one() {
        assert!(BinEdges::new(vec![1.0]).unwrap_err().to_string().contains("at least two edges"));
        assert!(BinEdges::new(vec![0.0, f32::NAN]).unwrap_err().to_string().contains("edge 1 is NaN"));
        assert!(BinEdges::new(vec![0.0, f32::INFINITY]).unwrap_err().to_string().contains("finite"));
        assert!(BinEdges::new(vec![2.0, 1.0]).unwrap_err().to_string().contains("edge 1 (1) is not above edge 0 (2)"));
        assert_eq!(BinEdges::parse(" -1, 0.5 ,2").unwrap().edges(), [-1.0, 0.5, 2.0]);
        assert!(BinEdges::parse("0,x").unwrap_err().to_string().contains("edge 'x'"));
        assert_eq!(BinEdges::from_f64(&[0.0, 0.5, 0.75]).unwrap().bins(), 2);
        let err = BinEdges::from_f64(&[0.0, 0.1]).unwrap_err().to_string();
        assert!(err.contains("edge 1 (0.1) is not exactly a float32"), "{err}");
    }

    #[test]
    fn the_cpu_reference_follows_numpy_on_edges_outside_values_and_nan() {
        let edges = BinEdges::new(vec![0.0, 1.0, 2.5, 4.0]).unwrap();
        let v = [0.0, 0.999, 1.0, 2.5, 4.0, 4.0001, -0.0, -1e-30, f32::NAN, f32::INFINITY];
        assert_eq!(edges_histogram_cpu(Values::F32(&v), &edges), [3, 1, 2]);
        assert_eq!(edges_histogram_cpu(Values::U8(&[0, 1, 2, 3, 4, 5]), &edges), [1, 2, 2]);
        assert_eq!(edges_histogram_cpu(Values::I32(&[-1, 0, 2, 3, 4]), &edges), [1, 1, 2]);
        let wide = BinEdges::new(vec![-2.5, 16_777_217.0, 3e9]).unwrap();
        // 16,777,217 is not an f32 (the edge is 16,777,216): i32 compares exactly in f64.
        assert_eq!(wide.edges()[1], 16_777_216.0);
        assert_eq!(edges_histogram_cpu(Values::I32(&[16_777_215, 16_777_216, 16_777_217, i32::MAX]), &wide), [1, 3]);
    }

    #[test]
    fn tables_narrow_every_value_to_its_own_bin() {
        let edges = BinEdges::new((0..=256).map(|i| (i as f32 / 256.0).powi(2)).collect()).unwrap();
        let table = EdgeTable::new(&edges, InputType::F32, kernel::cells_for(256));
        assert_eq!(table.cells(), 4096);
        assert!(table.entries().windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*table.entries().last().unwrap(), 255);
        let u8_table = EdgeTable::new(&BinEdges::new(vec![300.0, 400.0]).unwrap(), InputType::U8, 64);
        assert!(u8_table.entries().iter().all(|&b| b == 0), "no u8 lies in [300, 400]");
    }

    /// The kernel's lookup on the CPU: cell, its entry, comparison or search.
    fn kernel_bin<T: EdgeValue>(v: T, edges: &BinEdges, table: &EdgeTable) -> Option<u32> {
        let (lo, hi) = (edges.lo(), edges.hi());
        let c = kernel::cell_of(v.key(), lo, table.scale(), table.cells()) as usize;
        let t = table.cell_entries();
        let edge = |e: u32| edges.edges()[e as usize];
        let bin = kernel::entry_bin(v, t[c], edge, || t[c + 1]);
        (v.at_least(lo) && v.at_most(hi)).then_some(bin)
    }

    #[test]
    fn cell_entries_find_numpys_bin_on_and_around_every_edge_with_sixteen_or_one_cells_per_bin() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(22);
        let sets = [
            (0..=256).map(|i| (i as f32 / 256.0).powi(2)).collect::<Vec<_>>(),
            (0..=256).map(|i| i as f32).collect(),
            // Clustered: most edges in one cell of the even grid (a cell of several edges).
            (0..=255).map(|i| 1.0 + i as f32 * 1e-5).chain([1000.0]).collect(),
            vec![-1e38, -1.0, 0.0, 1e-30, 1e38],
        ];
        for edges in sets {
            let edges = BinEdges::new(edges).unwrap();
            for cells in [kernel::cells_for(edges.bins()), edges.bins()] {
                let table = EdgeTable::new(&edges, InputType::F32, cells);
                let mut probes: Vec<f32> = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0];
                for &e in edges.edges() {
                    probes.extend([e, e.next_up(), e.next_down()]);
                }
                probes.extend((0..10_000).map(|_| rng.random_range(edges.lo()..=edges.hi())));
                for v in probes {
                    assert_eq!(kernel_bin(v, &edges, &table), edges.bin_of(v), "{v:e}, {cells} cells");
                }
                // i32 values compare in f64 through the same entries.
                let table = EdgeTable::new(&edges, InputType::I32, cells);
                for v in [-2, -1, 0, 1, 2, 255, 256, 257, 1000, i32::MIN, i32::MAX] {
                    assert_eq!(kernel_bin(v, &edges, &table), edges.bin_of(v), "{v}, {cells} cells");
                }
            }
        }
    }

    #[test]
    fn the_planner_fits_counters_edges_and_table_in_one_block_and_refuses_more() {
        let occupancy = ModelOccupancy { limits: H100, registers: 40 };
        let p = plan_edges_for(&H100, &occupancy, InputType::F32, 256, &LaunchRequest::default()).unwrap();
        assert_eq!((p.cells(), p.launch().copies()), (4096, 32));
        assert_eq!(p.launch().kernel(), "histogram_edges_f32");
        assert!(p.reason(&H100).contains("257 edges"), "{}", p.reason(&H100));
        let most = max_bins(&H100);
        assert!(most > 17_000 && most < 30_000, "{most}");
        assert!(plan_edges_for(&H100, &occupancy, InputType::F32, most, &LaunchRequest::default()).is_ok());
        let err = plan_edges_for(&H100, &occupancy, InputType::F32, most + 1, &LaunchRequest::default()).unwrap_err();
        assert!(err.to_string().contains(&format!("at most {most} bins")), "{err}");
        let global = LaunchRequest { global: Some(true), ..Default::default() };
        assert!(plan_edges_for(&H100, &occupancy, InputType::F32, 256, &global).is_err());
    }
}
