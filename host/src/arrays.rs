//! Small arrays the histogram features read whole from files: weights (`float32`), bin edges
//! (`float32`, or `float64` that are exactly `float32`), segment offsets (`int64`, `uint64`, `int32` or `uint32`,
//! none negative), and 2-D pairs (`float32`). `.npy` files of any shape in C order (read as their
//! flat values), or raw little-endian `float32` files for weights and pairs. Every refusal names
//! the file and the problem, as [`crate::io`]'s do.
//!
//! ```
//! # fn main() -> hopper_kernels::Result<()> {
//! use hopper_kernels::arrays::{read_edges, read_f32_values};
//! use hopper_kernels::histogram::{Binning, Values, weighted::weighted_histogram_cpu};
//! use hopper_kernels::io::write_npy;
//! let dir = tempfile::tempdir().unwrap();
//! let weights = dir.path().join("weights.npy");
//! write_npy(&weights, &[3], &[0.5f32, 2.0, -1.0])?;
//! let r = weighted_histogram_cpu(Values::U8(&[0, 1, 1]), &read_f32_values(&weights)?, &Binning::integers(2));
//! assert_eq!(r.sums, [0.5, 1.0]);
//! // Edges from a file, or written out.
//! assert_eq!(read_edges("0,1,10")?.bins(), 2);
//! # Ok(()) }
//! ```

use crate::error::{Error, Result};
use crate::histogram::edges::BinEdges;
use crate::histogram::{InputType, ValuesBuf};
use crate::io::{DataFile, ElementType};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

fn file_error(path: &Path, problem: impl Into<String>) -> Error {
    Error::File { path: path.to_path_buf(), problem: problem.into() }
}

/// Whether the file starts with the `.npy` magic.
fn is_npy(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 6];
    let mut file = File::open(path).map_err(|e| file_error(path, format!("cannot open it: {e}")))?;
    Ok(file.read_exact(&mut magic).is_ok() && &magic == b"\x93NUMPY")
}

/// Every `f32` of a `.npy` `float32` file or a raw little-endian `f32` file.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{arrays::read_f32_values, io::write_npy};
/// let dir = tempfile::tempdir().unwrap();
/// // A .npy file of any shape gives its values in C order.
/// let npy = dir.path().join("w.npy");
/// write_npy(&npy, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
/// assert_eq!(read_f32_values(&npy)?, [1.0, 2.0, 3.0, 4.0]);
/// // Any other file is raw little-endian f32.
/// let raw = dir.path().join("w.f32");
/// std::fs::write(&raw, [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
/// assert_eq!(read_f32_values(&raw)?, [1.5, -2.0]);
/// let ints = dir.path().join("i.npy");
/// write_npy(&ints, &[1], &[7i32])?;
/// let err = read_f32_values(&ints).unwrap_err().to_string();
/// assert!(err.contains("i.npy") && err.contains("holds i32 values: give float32 ('<f4')"), "{err}");
/// # Ok(()) }
/// ```
pub fn read_f32_values(path: &Path) -> Result<Vec<f32>> {
    let file = if is_npy(path)? { DataFile::open_npy(path)? } else { DataFile::open_raw(path, ElementType::F32)? };
    if file.element() != ElementType::F32 {
        return Err(file_error(path, format!("holds {} values: give float32 ('<f4')", file.element().name())));
    }
    let len = usize::try_from(file.len()).map_err(|_| file_error(path, "too many values for this machine's memory"))?;
    let mut values = vec![0f32; len];
    file.read_bytes_at(&file.reopen()?, 0, bytemuck::cast_slice_mut(&mut values))?;
    Ok(values)
}

/// A `.npy` file's header and a reader at its data.
fn open_npy(path: &Path) -> Result<npyz::NpyFile<BufReader<File>>> {
    let file = File::open(path).map_err(|e| file_error(path, format!("cannot open it: {e}")))?;
    let npy =
        npyz::NpyFile::new(BufReader::new(file)).map_err(|e| file_error(path, format!("not a .npy file: {e}")))?;
    if npy.order() == npyz::Order::Fortran && npy.shape().iter().filter(|&&d| d > 1).count() > 1 {
        return Err(file_error(path, "Fortran order: save it in C order (numpy: np.ascontiguousarray)"));
    }
    Ok(npy)
}

/// The dtype string of a `.npy` header, e.g. `<f4`.
fn descr(npy: &npyz::NpyFile<BufReader<File>>) -> String {
    match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    }
}

/// Bin edges from a `.npy` file (`float32`, or `float64` values that are all exactly `float32`)
/// or from a list written `0,0.5,1`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{arrays::read_edges, io::write_npy};
/// assert_eq!(read_edges("0,0.5,2")?.edges(), [0.0, 0.5, 2.0]);
/// let dir = tempfile::tempdir().unwrap();
/// let (f4, f8) = (dir.path().join("e4.npy"), dir.path().join("e8.npy"));
/// write_npy(&f4, &[3], &[0.0f32, 0.5, 2.0])?;
/// assert_eq!(read_edges(f4.to_str().unwrap())?.bins(), 2);
/// // numpy's default float64 edges are taken where each is exactly a float32.
/// write_npy(&f8, &[3], &[0.0f64, 0.25, 1.0])?;
/// assert_eq!(read_edges(f8.to_str().unwrap())?.edges(), [0.0, 0.25, 1.0]);
/// write_npy(&f8, &[2], &[0.0f64, 0.1])?;
/// let err = read_edges(f8.to_str().unwrap()).unwrap_err().to_string();
/// assert!(err.contains("e8.npy") && err.contains("edge 1 (0.1) is not exactly a float32"), "{err}");
/// # Ok(()) }
/// ```
pub fn read_edges(source: &str) -> Result<BinEdges> {
    let path = Path::new(source);
    if !path.exists() && source.contains(',') {
        return BinEdges::parse(source);
    }
    let npy = open_npy(path)?;
    let d = descr(&npy);
    let in_file = |e: Error| file_error(path, e.to_string().trim_start_matches("invalid argument: ").to_string());
    match d.as_str() {
        "<f4" => BinEdges::new(npy.into_vec::<f32>().map_err(|e| file_error(path, format!("read failed: {e}")))?)
            .map_err(in_file),
        "<f8" => BinEdges::from_f64(&npy.into_vec::<f64>().map_err(|e| file_error(path, format!("read failed: {e}")))?)
            .map_err(in_file),
        other => Err(file_error(path, format!("dtype {other}: bin edges are float32 ('<f4') or float64 ('<f8')"))),
    }
}

/// Segment offsets from a `.npy` file of `int64` (numpy's default), `uint64`, `int32` or `uint32`, none
/// negative.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{arrays::read_offsets, io::write_npy};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("offsets.npy");
/// write_npy(&path, &[4], &[0i64, 3, 3, 6])?; // numpy.save of np.array([0, 3, 3, 6])
/// assert_eq!(read_offsets(&path)?, [0, 3, 3, 6]);
/// write_npy(&path, &[2], &[0u32, 7])?;
/// assert_eq!(read_offsets(&path)?, [0, 7]);
/// write_npy(&path, &[2], &[0i64, -1])?;
/// assert!(read_offsets(&path).unwrap_err().to_string().contains("offset 1 is -1: offsets cannot be negative"));
/// write_npy(&path, &[1], &[0.5f32])?;
/// let err = read_offsets(&path).unwrap_err().to_string();
/// assert!(err.contains("dtype <f4: offsets are int64, uint64, int32 or uint32"), "{err}");
/// # Ok(()) }
/// ```
pub fn read_offsets(path: &Path) -> Result<Vec<u64>> {
    let npy = open_npy(path)?;
    let d = descr(&npy);
    let read_failed = |e: std::io::Error| file_error(path, format!("read failed: {e}"));
    let signed = |v: Vec<i64>| -> Result<Vec<u64>> {
        match v.iter().position(|&x| x < 0) {
            Some(i) => Err(file_error(path, format!("offset {i} is {}: offsets cannot be negative", v[i]))),
            None => Ok(v.into_iter().map(|x| x as u64).collect()),
        }
    };
    match d.as_str() {
        "<i8" => signed(npy.into_vec::<i64>().map_err(read_failed)?),
        "<i4" => signed(npy.into_vec::<i32>().map_err(read_failed)?.into_iter().map(i64::from).collect()),
        "<u8" => npy.into_vec::<u64>().map_err(read_failed),
        "<u4" => Ok(npy.into_vec::<u32>().map_err(read_failed)?.into_iter().map(u64::from).collect()),
        other => Err(file_error(path, format!("dtype {other}: offsets are int64, uint64, int32 or uint32"))),
    }
}

/// Every value of a histogram input file, read whole (for the features that do not stream:
/// weights and segments).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::arrays::read_all_values;
/// use hopper_kernels::histogram::ValuesBuf;
/// use hopper_kernels::io::{DataFile, ElementType, write_npy};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("v.npy");
/// write_npy(&path, &[2, 2], &[1u16, 2, 3, 65_535])?;
/// assert_eq!(read_all_values(&DataFile::open(&path, None)?)?, ValuesBuf::U16(vec![1, 2, 3, 65_535]));
/// // Raw files are read as the type they are opened as.
/// let raw = dir.path().join("v.bin");
/// std::fs::write(&raw, [1u8, 0, 0, 0, 255, 255, 255, 255]).unwrap();
/// assert_eq!(read_all_values(&DataFile::open(&raw, Some(ElementType::I32))?)?, ValuesBuf::I32(vec![1, -1]));
/// # Ok(()) }
/// ```
pub fn read_all_values(file: &DataFile) -> Result<ValuesBuf> {
    let len = usize::try_from(file.len())
        .map_err(|_| file_error(file.path(), format!("{} values do not fit in this machine's memory", file.len())))?;
    let mut values = match file.element().input_type() {
        InputType::U8 => ValuesBuf::U8(vec![0; len]),
        InputType::U16 => ValuesBuf::U16(vec![0; len]),
        InputType::I32 => ValuesBuf::I32(vec![0; len]),
        InputType::F32 => ValuesBuf::F32(vec![0.0; len]),
    };
    let bytes: &mut [u8] = match &mut values {
        ValuesBuf::U8(v) => v,
        ValuesBuf::U16(v) => bytemuck::cast_slice_mut(v),
        ValuesBuf::I32(v) => bytemuck::cast_slice_mut(v),
        ValuesBuf::F32(v) => bytemuck::cast_slice_mut(v),
    };
    file.read_bytes_at(&file.reopen()?, 0, bytes)?;
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::write_npy;

    #[test]
    fn edges_come_from_float32_or_exact_float64_files_or_a_list() {
        let dir = tempfile::tempdir().unwrap();
        let (f4, f8, bad) = (dir.path().join("e4.npy"), dir.path().join("e8.npy"), dir.path().join("bad.npy"));
        write_npy(&f4, &[3], &[0.0f32, 0.5, 2.0]).unwrap();
        write_npy(&f8, &[3], &[0.0f64, 0.25, 1.0]).unwrap();
        write_npy(&bad, &[2], &[0.0f64, 0.1]).unwrap();
        assert_eq!(read_edges(f4.to_str().unwrap()).unwrap().edges(), [0.0, 0.5, 2.0]);
        assert_eq!(read_edges(f8.to_str().unwrap()).unwrap().bins(), 2);
        let err = read_edges(bad.to_str().unwrap()).unwrap_err().to_string();
        assert!(err.contains("bad.npy") && err.contains("not exactly a float32"), "{err}");
        assert_eq!(read_edges("1,2,4").unwrap().edges(), [1.0, 2.0, 4.0]);
        let ints = dir.path().join("i.npy");
        write_npy(&ints, &[2], &[1i32, 2]).unwrap();
        assert!(read_edges(ints.to_str().unwrap()).unwrap_err().to_string().contains("dtype <i4"));
        let unsorted = dir.path().join("u.npy");
        write_npy(&unsorted, &[2], &[1.0f32, 0.0]).unwrap();
        let err = read_edges(unsorted.to_str().unwrap()).unwrap_err().to_string();
        assert!(err.contains("u.npy") && err.contains("increase strictly"), "{err}");
    }

    #[test]
    fn offsets_take_any_integer_dtype_but_no_negatives() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.npy");
        write_npy(&p, &[3], &[0i64, 5, 9]).unwrap();
        assert_eq!(read_offsets(&p).unwrap(), [0, 5, 9]);
        write_npy(&p, &[2], &[0u32, 7]).unwrap();
        assert_eq!(read_offsets(&p).unwrap(), [0, 7]);
        write_npy(&p, &[2], &[0i64, -1]).unwrap();
        assert!(read_offsets(&p).unwrap_err().to_string().contains("offset 1 is -1"));
        write_npy(&p, &[1], &[0.5f32]).unwrap();
        assert!(read_offsets(&p).unwrap_err().to_string().contains("dtype <f4"));
    }

    #[test]
    fn weights_come_from_float32_npy_or_raw_files() {
        let dir = tempfile::tempdir().unwrap();
        let (npy, raw) = (dir.path().join("w.npy"), dir.path().join("w.bin"));
        write_npy(&npy, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        std::fs::write(&raw, [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        assert_eq!(read_f32_values(&npy).unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(read_f32_values(&raw).unwrap(), [1.5, -2.0]);
        let ints = dir.path().join("i.npy");
        write_npy(&ints, &[1], &[7i32]).unwrap();
        assert!(read_f32_values(&ints).unwrap_err().to_string().contains("give float32"));
    }
}
